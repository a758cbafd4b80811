"""The tables of NCCL_DEBUG logs and job logs (:mod:`parsers.nccl`), declared as :mod:`parsers.schema` declares the
others (which adds them to ``TABLES``): NCCL's processes, connections, communicators, versions, settings, errors and
collectives, and what the job's framework and launchers said (watchdog timeouts, workers' ends, NCCL's RAS report,
Horovod's stalls and autotune log).
"""

from __future__ import annotations

import pyarrow as pa

from parsers.columns import INPUT as _INPUT
from parsers.columns import TableSpec
from parsers.columns import col as _c

_HOST = _c("host", pa.string(), "host name as NCCL printed it (null when the user stripped the prefix)", null=True)
_PID = _c("pid", pa.int64(), "process id (null when the user stripped the prefix)", null=True)
_LINE = _c("line", pa.int64(), "1-based line number in the input file")
_STRS = pa.list_(pa.string())

#: Tables of NCCL_DEBUG logs and job logs (parsers/nccl/parser.py).
LOG_TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        TableSpec(
            "nccl_processes",
            "One row per NCCL process (host, pid) of a log: what it said about itself at init.",
            (
                _INPUT,
                _HOST,
                _PID,
                _c("first_line", pa.int64(), "line of its first record"),
                _c("last_line", pa.int64(), "line of its last record"),
                _c(
                    "prefix",
                    pa.string(),
                    "launcher prefix in front of its first record (e.g. [1,3]<stdout>:)",
                    null=True,
                ),
                _c("cuda_devs", pa.list_(pa.int32()), "CUDA devices ([DEV], not ranks) it logged from"),
                _c("version", pa.string(), "NCCL version it printed (INFO or bare version line)", null=True),
                _c(
                    "version_source",
                    pa.string(),
                    "info | bare line | job's version line (the one version the file shows) | null",
                    null=True,
                ),
                _c(
                    "cuda",
                    pa.string(),
                    "CUDA version of the NCCL build (+cudaX.Y; hipX.Y, or hip alone, for RCCL's)",
                    null=True,
                ),
                _c("wording_min", pa.string(), "oldest release printing its version-specific wording", null=True),
                _c("wording_max", pa.string(), "newest release printing its version-specific wording", null=True),
                _c("network", pa.string(), "'Using network X' (IB, Socket, IBext_v8, AWS Libfabric, ...)", null=True),
                _c("bootstrap_interface", pa.string(), "bootstrap interface:address", null=True),
                _c("socket_interfaces", _STRS, "NET/Socket interfaces (if:address)"),
                _c("ib_hcas", _STRS, "NET/IB devices (name:port/IB|RoCE)"),
                _c("ib_no_device", pa.bool_(), "printed 'NET/IB : No device found'"),
                _c("verbs_missing", pa.bool_(), "printed 'Failed to open libibverbs.so'"),
                _c("plugin", pa.string(), "net plugin it loaded or probed (IBext, aws-ofi-nccl, ...)", null=True),
                _c("gdr_disabled", pa.bool_(), "printed 'GPU Direct RDMA Disabled'"),
                _c("records", pa.int64(), "NCCL records it wrote"),
                _c("warns", pa.int64(), "NCCL WARN records it wrote"),
            ),
        ),
        TableSpec(
            "nccl_connections",
            "Connection lines (Ring/Channel ... via ...), aggregated per process and transport.",
            (
                _INPUT,
                _HOST,
                _PID,
                _c("kind", pa.string(), "P2P | SHM | NET | COLLNET"),
                _c("detail", pa.string(), "e.g. P2P/IPC/read, NET/IB/GDRDMA, NET/Socket, NET/AWS Libfabric"),
                _c("net", pa.string(), "network name for NET/COLLNET", null=True),
                _c("gdr", pa.bool_(), "GPUDirect RDMA used (/GDRDMA)"),
                _c("connections", pa.int64(), "number of connection lines"),
                _c("first_line", pa.int64(), "line of the first one"),
            ),
        ),
        TableSpec(
            "nccl_comm_ranks",
            "Communicator init lines: one row per comm ... rank ... nranks line (Init START / COMPLETE).",
            (
                _INPUT,
                _HOST,
                _PID,
                _LINE,
                _c("api", pa.string(), "ncclCommInitRank, ncclCommSplit, ... (2.21+)", null=True),
                _c("comm", pa.string(), "communicator pointer (per process)"),
                _c("comm_id", pa.string(), "commId hash shared by every rank of the communicator (2.16+)", null=True),
                _c("rank", pa.int32(), "rank in the communicator"),
                _c("nranks", pa.int32(), "communicator size"),
                _c("cuda_dev", pa.int32(), "CUDA device", null=True),
                _c("bus_id", pa.string(), "PCI bus id (hex)", null=True),
                _c("phase", pa.string(), "START | COMPLETE"),
            ),
        ),
        TableSpec(
            "nccl_versions",
            "Every NCCL version line: INFO records (2.22+, or a debug file) and bare lines (rank 0 only up to "
            "2.21; attributed to a process when its launcher prefix or the file says whose it is).",
            (
                _INPUT,
                _HOST,
                _PID,
                _LINE,
                _c("version", pa.string(), "e.g. 2.18.3"),
                _c(
                    "cuda",
                    pa.string(),
                    "CUDA version of the build (+cudaX.Y; CUDA_MAJOR.CUDA_MINOR in TF builds; hipX.Y for RCCL, hip when its line does not say)",
                ),
                _c(
                    "source",
                    pa.string(),
                    "info | bare line | pytorch (a version PyTorch printed) | vllm (the version vLLM says it loaded) | "
                    "ras (the version NCCL's RAS client reports)",
                ),
            ),
        ),
        TableSpec(
            "nccl_env",
            "NCCL_* variables NCCL reported ('... set by environment to ...').",
            (_INPUT, _HOST, _PID, _LINE, _c("var", pa.string(), "variable"), _c("value", pa.string(), "value")),
        ),
        TableSpec(
            "nccl_errors",
            "NCCL WARN records (with their error chains) and chains without a WARN.",
            (
                _INPUT,
                _HOST,
                _PID,
                _c("tid", pa.int64(), "thread id", null=True),
                _LINE,
                _c(
                    "level",
                    pa.string(),
                    "WARN | chain (error chain seen without its WARN) | framework (PyTorch's report of a failed call)",
                ),
                _c("class", pa.string(), "error class (null: a benign warning)", null=True),
                _c("src", pa.string(), "FILE:LINE NCCL printed", null=True),
                _c("message", pa.string(), "the warning text"),
                _c("chain", _STRS, "error-chain frames that followed (FILE:LINE -> code)"),
                _c("result_code", pa.int32(), "ncclResult_t of the chain's last frame", null=True),
                _c("remediation", pa.string(), "what to do about this class"),
                _c(
                    "time",
                    pa.string(),
                    "timestamp printed with it (NCCL 2.26+ or the log collector), as written",
                    null=True,
                ),
                _c(
                    "consequence",
                    pa.bool_(),
                    "its text reports an earlier error (a result chain, a failed async job or proxy operation, "
                    "a framework's wrapper, shutdown noise after the process's own abort); null in a store "
                    "written before this column",
                    null=True,
                ),
                _c(
                    "unconfirmed",
                    pa.bool_(),
                    "raised while NCCL probed its networks (a plugin's or the verbs wrapper's WARN, a chain without "
                    "a WARN), and nothing after it shows whether the process failed or went on: the log ends "
                    "first; null in a store written before this column",
                    null=True,
                ),
            ),
        ),
        TableSpec(
            "nccl_collectives",
            "COLL trace lines (NCCL_DEBUG_SUBSYS=COLL) aggregated per process, communicator and op.",
            (
                _INPUT,
                _HOST,
                _PID,
                _c("comm", pa.string(), "communicator pointer"),
                _c("op", pa.string(), "AllReduce, Broadcast, ..."),
                _c("nranks", pa.int32(), "communicator size", null=True),
                _c("calls", pa.int64(), "number of lines"),
                _c("first_opcount", pa.int64(), "first opCount"),
                _c("last_opcount", pa.int64(), "last opCount (the rank with the lowest one stopped first)"),
                _c("last_line", pa.int64(), "line of the last one"),
            ),
        ),
        TableSpec(
            "watchdog_timeouts",
            "PyTorch ProcessGroupNCCL watchdog timeouts.",
            (
                _INPUT,
                _LINE,
                _c("rank", pa.int32(), "rank that timed out, within its process group", null=True),
                _c("global_rank", pa.int32(), "the job's rank that timed out, where the log tells", null=True),
                _c("seq", pa.int64(), "SeqNum of the collective (null: PyTorch 1.8-1.10 print none)", null=True),
                _c("op", pa.string(), "OpType"),
                _c("numel_in", pa.int64(), "NumelIn", null=True),
                _c("numel_out", pa.int64(), "NumelOut", null=True),
                _c("timeout_ms", pa.int64(), "Timeout(ms)", unit="ms"),
                _c("ran_ms", pa.int64(), "how long it ran before timing out", unit="ms"),
                _c("pg", pa.string(), "process group, from the watchdog's exception line", null=True),
                _c("last_enqueued", pa.int64(), "last enqueued NCCL work (SeqNum)", null=True),
                _c("last_completed", pa.int64(), "last completed NCCL work (SeqNum)", null=True),
            ),
        ),
        TableSpec(
            "worker_exits",
            "A worker's end as its launcher (horovodrun, mpirun, torchrun and torchelastic, srun and slurmstepd, "
            "DeepSpeed) or its own crash handler reported it.",
            (
                _INPUT,
                _LINE,
                _c("launcher", pa.string(), "the launcher, or the crash handler (ucx, open-mpi, python)"),
                _c(
                    "rank",
                    pa.int32(),
                    "the worker's rank (torchrun: local; torchelastic: the job's; srun: its first task; deepspeed: none)",
                    null=True,
                ),
                _c("host", pa.string(), "the node it ran on, when the launcher names it", null=True),
                _c("pid", pa.int64(), "its process id, when the launcher names it", null=True),
                _c("exit_code", pa.int32(), "exit code as reported (torchrun: -N for signal N)", null=True),
                _c("signal", pa.int32(), "the signal that ended it (named, or exit code 128+N / -N)", null=True),
                _c("text", pa.string(), "the launcher's line"),
            ),
        ),
        TableSpec(
            "horovod_stalls",
            "Horovod stall-inspector warnings: one row per missing rank per warning.",
            (
                _INPUT,
                _LINE,
                _c("rank", pa.int32(), "rank that had not submitted the tensors"),
                _c("shutdown", pa.bool_(), "marked '!': stalled past HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"),
                _c("tensors", _STRS, "tensors it had not submitted (Horovod lists at most six)"),
                _c("more", pa.bool_(), "Horovod cut the list ('...')"),
            ),
        ),
        TableSpec(
            "nccl_ras",
            "Lines of the entries of NCCL's RAS report (ncclras, 2.24+): the processes and ranks it could not reach, "
            "the errors ranks reported, the ranks whose status or operation counts differ.",
            (
                _INPUT,
                _LINE,
                _c("report", pa.int64(), "the line its report starts at (ncclras run again: another report)"),
                _c("section", pa.string(), "errors or warnings"),
                _c(
                    "comm",
                    pa.string(),
                    "the communicator, #GROUP-INDEX as the report names it; null: the job's",
                    null=True,
                ),
                _c("kind", pa.string(), "INCOMPLETE, DEAD, TIMEOUT, ERROR or MISMATCH (comma-joined when several)"),
                _c("what", pa.string(), "the entry's words before the line", null=True),
                _c("coll", pa.string(), "the collective whose operation counts differ", null=True),
                _c("ranks", pa.int64(), "how many ranks a count line counts", null=True),
                _c("rank", pa.int64(), "the rank within the communicator", null=True),
                _c("ops", pa.int64(), "operations the rank(s) launched (0: none)", null=True),
                _c("state", pa.string(), "a status (INIT, RUNNING, FINALIZE, ABORT, NOCOMM) or an error", null=True),
                _c("gpu", pa.string(), "the GPU (CUDA device; NVML's in parentheses when it differs)", null=True),
                _c("pid", pa.int64(), "the process", null=True),
                _c("node", pa.string(), "the node, as RAS names it (an address)", null=True),
            ),
        ),
        TableSpec(
            "autotune",
            "Horovod autotune log rows (HOROVOD_AUTOTUNE_LOG): fusion threshold in MB, cycle in ms, score.",
            (
                _INPUT,
                _LINE,
                _c("layout", pa.string(), "header layout, by first Horovod version writing it"),
                _c("hierarchical_allreduce", pa.bool_(), "hierarchical allreduce on"),
                _c("hierarchical_allgather", pa.bool_(), "hierarchical allgather on"),
                _c("torus_allreduce", pa.bool_(), "torus allreduce on (0.26+)", null=True),
                _c("cache_enabled", pa.bool_(), "response cache on (0.16.2+)", null=True),
                _c("cycle_time_ms", pa.float64(), "HOROVOD_CYCLE_TIME", unit="ms"),
                _c("fusion_threshold_mb", pa.float64(), "fusion threshold (MiB; the env var takes bytes)", unit="MiB"),
                _c("score", pa.float64(), "bytes per microsecond, higher is better"),
            ),
        ),
    )
}
