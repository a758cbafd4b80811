"""What makes a text file a job log hvd-analyze reads: the signals the sniffer looks for in its first
bytes, each with the words that name it (:func:`parsers.inputs.sniff`).

The patterns are bytes and restate, as the sniffer needs them, texts the log parsers read
(:mod:`parsers.nccl`): the sniffer runs before any parser is loaded, and the parsers' own tests check the
same lines on both sides.
"""

from __future__ import annotations

import re

_LOG_SIGNALS = (
    (  # ncclras's report (2.24+): its table of communicators, an entry's header, its version line
        re.compile(
            rb"(?m)^\s*Group {5}Comms {5}Nodes {5}Ranks|^#\d+-\d+ \([0-9a-fA-F]+\) (?:MISMATCH|INCOMPLETE|ERROR)\b|"
            rb"^NCCL version \d+\.\d+\.\d+\S* compiled with CUDA \d"
        ),
        "NCCL's RAS report",
    ),
    (
        re.compile(
            # a host starts where the run of host characters starts: linear on a line of them
            rb"(?<![^\s:\[\]])[^\s:\[\]]+:\d+:\d+ (?:\[\d+\] )?(?:\S+:\d+ )?NCCL (?:INFO|WARN|TRACE|CALL)|"
            rb"(?<![\w.-])[\w.-]+ \[\d+\] (?:\S+:\d+ )?NCCL (?:INFO|WARN)|"
            # a header cut down to its device, alone or behind a launcher's or collector's prefix
            rb"(?:^|(?<=[\s:>\]|)]))\[\d+\] (?:[\w./-]+:\d+ )?NCCL (?:INFO|WARN) \S|[NR]CCL version \d+\.\d+\.\d+|"
            # records pasted or collected without HOST:PID:TID [DEV]: at a line's start, after a launcher's tag
            # or a WARN's source location only
            rb"^[^\S\n]*(?:\[[^\]\s]{1,64}\](?:<\w+>)?:?[^\S\n]*|(?:\([^()\n]{0,80}\bpid=\d+[^()\n]{0,80}\)[^\S\n]*)+)?"
            rb"(?:[\w./-]+\.(?:cc|cu|cpp|c|h):\d+ )?"
            rb"NCCL (?:INFO|WARN) \S|"
            # behind a logger's bracketed fields ("[03/16][2025-02-25 15:46:48,389] [misc/socket.cc:602] [h:pid=7]")
            rb"^(?:[\w./-]+\.(?:log|txt|out|err):)?(?:\[[^\[\]\n]{1,80}\][^\S\n]*){1,8}NCCL (?:INFO|WARN) \S",
            re.MULTILINE,
        ),
        "NCCL debug records",
    ),
    (re.compile(rb"Watchdog caught collective operation timeout"), "PyTorch watchdog timeouts"),
    (
        re.compile(
            rb"\bnccl(?:UnhandledCuda|System|Internal|InvalidArgument|InvalidUsage|Remote)Error: (?:System call|"
            rb"Internal check|Call to CUDA|This usually reflects|A call failed|Invalid value)|"
            rb"NCCL error in: \S+?:\d+|"  # PyTorch's report, with or without NCCL's version
            rb"\bnccl[A-Z]\w*(?:\([^()\n]*\))? failed: (?:unhandled (?:cuda|system) error|internal error|invalid (?:argument|usage)|"
            rb"remote process exited|Unable to load NCCL library)|"  # Horovod's, XLA's
            rb"\bNCCL(?: Error [1-7]| error)?: (?:unhandled (?:cuda|system) error|internal error|invalid (?:argument|usage)|remote)|"
            rb"Test NCCL failure \S+:\d+ '|# Out of bounds values : [1-9]\d* FAILED|"  # nccl-tests'
            rb"Heartbeat monitor timed out! Process will be terminated|ProcessGroupNCCL's watchdog got stuck for \d+|"
            rb"is setting up NCCL communicator and retr(?:ie|ei)ving [Nn]cclUniqueId from \[\d+\] via c10d|"
            rb"(?:Process group|NCCL) watchdog thread terminated with exception: (?:CUDA|HIP) error: "
        ),
        "a framework's report of a failed NCCL call",
    ),
    (
        re.compile(
            rb"Process \d+ exit with status code|mpirun noticed that process rank|\(exitcode: -?\d+\) local_rank|"
            rb"srun: error: [^\s:]+: tasks? \d+[-,\d]*: (?:Killed|Exited with exit code|Out Of Memory|Segmentation fault|"
            rb"Aborted|Bus error|Terminated)|slurmstepd: error: Detected \d+ oom[-_]kill event|"
            rb"Root Cause \(first observed failure\):|"  # torchelastic's summary
            rb"detected that one or more processes exited with non-zero status|"  # Open MPI's first non-zero exit
            rb"sigkill_handler\] .* exits with return code = -?\d+|"  # DeepSpeed's launcher
            rb"Caught signal \d+ \([A-Z][\w ]*[:)]|"  # a process's own report of its crash: UCX's,
            rb"\[[^\s:\[\]]+:\d+\] \*\*\* Process received signal \*\*\*|"  # Open MPI's
            rb"Fatal Python error: (?:Segmentation fault|Aborted|Bus error|Floating point exception)"  # faulthandler's
        ),
        "a launcher's report of a worker's exit",
    ),
    (
        re.compile(rb"Missing ranks:|Stalled ranks:|Stalled ops:|One or more tensors were submitted to be"),
        "Horovod stall-inspector warnings",
    ),
    (re.compile(rb"hierarchical_allreduce\s*[,|]\s*hierarchical_allgather"), "a Horovod autotune log"),
    (
        re.compile(  # parsers.nccl.rendezvous's forms, each by its own words
            rb"The client socket has (?:timed out after \S+ while trying to connect to|failed to connect to any network "
            rb"address of) |\bconnect\(\) timed out\. Original timeout was \d+ ms|"
            rb"The connection to (?:the C10d store|etcd) has failed|"
            rb"The server socket has failed to (?:listen on any local network address|(?:bind to|listen on) \S+ \(errno: 98\b)|"
            rb"\b(?:RuntimeError|DistNetworkError): Address already in use\s*$|"
            rb"Timed out after \d+ seconds waiting for (?:clients|workers)\. \d+/\d+ (?:clients|workers) joined|"
            rb"Timed out initializing process group in store based barrier on rank|"
            rb"(?:torch\.distributed\.elastic\.rendezvous\.api\.|\"message\": \")RendezvousTimeoutError\b",
            re.MULTILINE,
        ),
        "PyTorch's report of a rendezvous that failed",
    ),
    (
        re.compile(  # parsers.nccl.horovod_errors's: the coordinator's shutdown and its check of the ranks' tensors
            rb"Horovod has been shut down\b|Horovod background loop uncaught exception: |\bMismatched (?:MPI |[A-Za-z_]+ )?(?:operations|data types|tensor shapes"
            rb"|root ranks|CPU/GPU device selection|prescale and/or postscale factors): One rank\b"
        ),
        "Horovod's report of a stopped job",
    ),
    (
        re.compile(  # parsers.nccl.gpu_errors's: PyTorch's, TensorFlow's and XLA's
            rb"\b(?:CUDA|HIP) out of memory\. Tried to allocate|\bOOM when allocating tensor with shape"
            rb"|\bRESOURCE_EXHAUSTED: Out of memory while trying to allocate \d+ bytes"
            rb"|(?:\b[\w.]{0,100}(?:Error|Exception): |\bwhat\(\):\s*)(?:CUDA|HIP) error: \S"
        ),
        "a framework's report of a GPU out of memory or faulting",
    ),
    (
        re.compile(rb"\bDataLoader worker \(pid(?:\(s\))? [\d, ]+\) (?:is killed by signal|exited unexpectedly)"),
        "PyTorch's report of a DataLoader worker that died",
    ),
    (
        re.compile(  # parsers.nccl.gloo_errors's: behind Gloo's source location, or in its own words
            rb"\bgloo/(?:[\w-]+/){0,3}[\w-]+\.cc:\d+\] (?:ifa != nullptr\. |rp != nullptr\. )?(?:Connection closed by peer|"
            rb"Read error|writev|Socket (?:unexpectedly )?closed|(?:Read|Write|Connect) timeout|Timed out waiting \d+ms|"
            rb"op\.preamble\.length <= op\.nbytes|Received data size doesn't match|Unable to find (?:address|interface) "
            rb"for|timed out connecting|no error)|\bGloo connectFullMesh failed with\b|"
            rb"(?:RuntimeError|IoException|what\(\)): +Unable to find (?:address|interface) for: ?\S"
        ),
        "Gloo's report of a failed operation",
    ),
)


def log_signal(head: bytes) -> str | None:
    """What makes ``head`` a job log, if anything."""
    for rx, what in _LOG_SIGNALS:
        if rx.search(head):
            return what
    return None
