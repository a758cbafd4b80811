"""What each finding code means, for its reader: its severities, the signal it rests on and what to do.

The one source of ``docs/detectors.md`` (``python scripts/docs.py`` writes it, with each code's
thresholds read from :class:`analyzer.config.Thresholds`; a test fails when it is stale) and of the
README's short list. ``tests/test_docs.py`` checks that every detector's code has an entry here and that
each entry's threshold groups exist.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from analyzer.config import Thresholds


@dataclass(frozen=True, slots=True)
class CodeDoc:
    """One finding code: ``severity`` (when each level is given), ``signal`` (what it is read from and
    when it fires), ``action`` (what to do), ``thresholds`` (its groups of
    :class:`analyzer.config.Thresholds`), ``summary`` (one line for the README's list). A number a
    detector decides by is written as its place in the config, ``{group.field:spec}`` (:func:`filled`),
    never by hand."""

    code: str
    summary: str
    severity: str
    signal: str
    action: str
    thresholds: tuple[str, ...] = ()


CODES: tuple[CodeDoc, ...] = (
    CodeDoc(
        "timeline.truncated",
        "the timeline was cut: steps after its end are missing",
        "warning / info (only the last step's spans lost their `E`: every earlier step is complete, what every healthy Horovod 0.28.1 file ends with)",
        "the timeline's content was cut: a record cut by the end of the file, a ≥ 0.20.1 file without its `]`, spans whose `E` never came (Horovod's writer does not drain its queue at exit), orphan `E`, unreadable records — with counts and byte offsets",
        "call `hvd.stop_timeline()` after the last step (it drains the writer queue; `HOROVOD_TIMELINE=DYNAMIC`), or rerun a few steps with the timeline on",
    ),
    CodeDoc(
        "timeline.straggler",
        "a rank is late to the collectives, per the timeline's rank ticks",
        "warning / critical (≥ {straggler.critical_share:%} of the step)",
        "steady-state rank ticks (cache off), read as each rank's lateness per step beyond its peers' median (the coordinator, rank 0, is nobody's peer: it stamps its own readiness first). A rank is named when it is late beyond the host's noise ({straggler.noise_z} sigmas of the peers' spread and its own jitter, and ≥ max({straggler.min_late_us:ms}, {straggler.min_late_share:%} of the step)) in more steps than noise explains (binomial test against the other ranks' rate, {straggler.alpha:%} level), or for a stretch of ≥ {straggler.min_stretch_steps} steps; ranks are judged from {straggler.min_steps} steady steps with ticks on; says when (every step, from step N on, steps N–M then recovered, every K-th step), what it cost the run per step (mean over all steps) and the rank's host and pid when the job's NCCL logs show them; a whole-job slowdown names nobody (see docs/lateness.md)",
        "find what is slow on that rank's host (input pipeline, CPU binding, throttling, a periodic task) or exclude the host",
        ("straggler",),
    ),
    CodeDoc(
        "traces.straggler",
        "a rank is late to the collectives, per every rank's own profiler trace, with the cause",
        "warning / critical (≥ {straggler.critical_share:%} of the step)",
        "per-rank profiler traces: each rank's lateness per step from its waits at the matched collectives (the first-ready rank's duration minus its own: no shared clock needed), judged as `timeline.straggler` is (host noise, binomial test, stretches); with the cause its trace shows (`labels.rank<N>_cause`: `data` when its DataLoader time exceeds its peers' by {straggler.cause_share:%} of its lateness, `h2d` likewise for host-to-device copies, else `compute`); names the host",
        "the cause's fix: the input pipeline (workers, pinning, storage), pinned non-blocking copies, or that host's CPU/GPU",
        ("straggler",),
    ),
    CodeDoc(
        "traces.incomplete",
        "per-rank traces missing, doubled, or a rank that skipped collectives",
        "warning (a rank lacks collectives its peers ran: a hang's signature) / info (ranks without a trace, a rank traced twice, traces with no rank)",
        "the job's per-rank traces against its world size and each other",
        "give every rank's trace once; look at what the named rank did instead",
    ),
    CodeDoc(
        "timeline.negotiation_wait",
        "with the response cache on, every step waits on some rank",
        "warning",
        "response cache on, no steady-state ticks, but in ≥ 90% of the steps even the shortest gradient negotiation lasts ≥ max({negotiation_wait.min_floor_us:ms}, {negotiation_wait.min_floor_share:%} of the step): one rank is late every step; first-step ticks cited as weak evidence",
        "rerun ~{negotiation_wait.rerun_steps} steps with `HOROVOD_CACHE_CAPACITY=0` so the ticks name the rank",
        ("negotiation_wait",),
    ),
    CodeDoc(
        "timeline.slowdown",
        "the step time rose part-way through the run",
        'warning / critical (the slow steps cost ≥ {slowdown.critical_share:%} of the median step, spread over the run); info when the job ran Horovod\'s autotuner (its log in the run): the stretches are its trials, no rank is blamed; warning, "autotune?", when without that log the fused batches fit no single threshold and their sizes changed with the step time (≥ {slowdown.batch_change:x}): no impact, no rank or compute blamed',
        "change points of every steady step's duration (PELT on block medians, so checkpoints do not count), windowed timelines included: a stretch of ≥ {slowdown.min_segment_steps} steps and {slowdown.min_segment_share:%} of the run whose median is ≥ {slowdown.min_ratio:x} that of every step before it and slower by a Mann–Whitney test (p < {slowdown.max_p}), in a run of {slowdown.min_steps} steady steps or more; gives the onset step and its UTC time (≥ 0.20.1 header), the slow stretches and the time they lost, and splits the added time into waiting for a late rank (the length of each step's last negotiation), exposed communication and compute; names the rank(s) that became late when rank ticks cover those steps",
        "per cause: that rank's host at that moment (GPU clocks, temperature, other processes); `HOROVOD_CACHE_CAPACITY=0` past the onset to name the rank; the network and NCCL's transport then (`NCCL_DEBUG=INFO`); the input pipeline",
        ("slowdown",),
    ),
    CodeDoc(
        "timeline.long_queue",
        "collectives queue behind the GPU stream or NCCL",
        "warning",
        "`QUEUE` (GPU stream / NCCL backlog) ≥ {long_queue.min_step_share:%} of the step, ≥ {long_queue.min_comm_share:%} of communication and above `WAIT_FOR_DATA`; steps with `INIT_NCCL`/`INIT_FUSION_BUFFER` left out",
        "check the transport with `NCCL_DEBUG=INFO`; pin `NCCL_SOCKET_IFNAME` / `NCCL_IB_HCA`; more NCCL streams do not help",
        ("long_queue",),
    ),
    CodeDoc(
        "timeline.fusion_fragmented",
        "tensor fusion does not fuse: gradients go out one by one",
        "warning",
        "≥ {fusion.min_tensors} gradients per step, batches ≥ {fusion.min_batch_ratio:%} of the tensors, ≥ {fusion.min_singleton_share:%} single-tensor batches; the threshold in effect is bracketed from the batches",
        "`HOROVOD_FUSION_THRESHOLD=134217728` (bytes, not MB) when the threshold is tiny or 0, else a longer `HOROVOD_CYCLE_TIME` than the one the markers show (without markers: record them first, `HOROVOD_TIMELINE_MARK_CYCLES=1`; no value is guessed); states the expected batches per step",
        ("fusion",),
    ),
    CodeDoc(
        "timeline.tensor_over_fusion_threshold",
        "a gradient larger than the fusion threshold always runs alone",
        "info / warning",
        "a gradient larger than the threshold (from its op's dtype and shape) always runs alone while fusion works for the others; a batch that refused a gradient ready in time bounds the threshold from above (a gradient within 1% under that bound counts as over it); when no batch bounds it, Horovod's default for the file's release range stands in (128 MiB since 0.21, 64 MiB before) and the finding says it assumed so",
        "`HOROVOD_FUSION_THRESHOLD` = a power-of-two MiB holding it twice, in bytes",
        ("over_threshold",),
    ),
    CodeDoc(
        "timeline.cycle_time_high",
        "Horovod's cycle time holds collectives back",
        "warning",
        "the cycle is ≥ {cycle.min_cycle_us:ms} and ≥ {cycle.min_step_share:%} of the step, read from regular `CYCLE_START` markers, or without them from the coordinator's responses when they are never closer than a floor that many sit at (a 20 ms cycle reads 16–18 ms; at the 1 ms default the short gaps spread out and the cycle is reported unknown; the report gives the range)",
        "`HOROVOD_CYCLE_TIME` in ms (2% of the step, 1–5 ms)",
        ("cycle",),
    ),
    CodeDoc(
        "timeline.startup_skew",
        "the ranks started apart",
        "info",
        "an initial broadcast waited ≥ {startup.min_skew_us:ms} for the last rank (named from its ticks only when its lateness explains at least {startup.share_to_name:%} of the wait; ticks that came together say nothing of who arrived last)",
        "look at what that rank does before `broadcast_parameters`",
        ("startup",),
    ),
    CodeDoc(
        "timeline.init_overhead",
        "start-up (NCCL, fusion buffer) takes long",
        "info",
        "`INIT_NCCL` / `INIT_FUSION_BUFFER` set-up ≥ {startup.min_init_us:s} in all; one-off, excluded from step statistics",
        "over {startup.slow_nccl_init_us:s}: check bootstrap networking (`NCCL_SOCKET_IFNAME`)",
        ("startup",),
    ),
    CodeDoc(
        "nccl.socket_fallback",
        "NCCL fell back to TCP sockets between hosts",
        "warning / critical (IB/RoCE or a net plugin present or expected)",
        "inter-node traffic via `NET/Socket` in a multi-host job, with the reason NCCL gave (libibverbs missing, `NET/IB : No device found`); with a timeline in the same store, the exposed communication per step it costs (RDMA taken to be {nccl.socket_speedup:x} faster)",
        "expose `/dev/infiniband` and rdma-core; `NCCL_IB_HCA` = the HCAs NCCL listed; meanwhile `NCCL_SOCKET_IFNAME` = the IPoIB interface (else the one NCCL picked first) with more sockets per peer",
        ("nccl",),
    ),
    CodeDoc(
        "nccl.ib_disabled",
        "InfiniBand disabled by NCCL_IB_DISABLE",
        "info (one host) / warning",
        "`NCCL_IB_DISABLE set by environment to 1`",
        "remove it (`NCCL_IB_DISABLE=0`)",
    ),
    CodeDoc(
        "nccl.no_gdrdma",
        "an RDMA network (InfiniBand, RoCE, EFA) without GPUDirect RDMA",
        "warning",
        "IB/RoCE or EFA (Libfabric) connections without `/GDRDMA`, or `GPU Direct RDMA Disabled`; the title names the fabric",
        "load `nvidia-peermem` (or DMA-BUF); test `NCCL_NET_GDR_LEVEL=PHB`",
    ),
    CodeDoc(
        "nccl.version_mismatch",
        "processes of one job run different NCCL versions",
        "critical",
        "processes of one job print different NCCL versions",
        "one NCCL build everywhere (image, pinned wheel, `LD_LIBRARY_PATH`)",
    ),
    CodeDoc(
        "nccl.release_wording",
        "processes print the wording of different NCCL releases",
        "info (low confidence)",
        "with no differing version lines, processes print the wording of disjoint releases (another build, or another plugin or setting)",
        "none: not a verdict",
    ),
    CodeDoc(
        "nccl.error",
        "an NCCL error, by root cause",
        "critical (warning when its root is only a peer going away and another cause exists, or when it is unconfirmed: "
        "a probe's failure or a chain without a WARN that ends its process's log, with nothing after it showing a failure)",
        "one finding per root-cause class (`labels.class`): `ib_completion_error`, `ibv_setup_failure`, `socket_error`, `cuda_oom`, `cuda_error`, `shm_exhausted`, `shm_permission`, `shm_missing` (a /dev/shm failure by its errno), `topology_error`, `collective_mismatch`, `config_error`, `remote_process_exited`, `system_error`, `internal_error`, `invalid_usage`, `unique_id_exchange` (PyTorch's rank that never got its communicator's unique id from the c10d store), `watchdog_stuck` (PyTorch's heartbeat monitor ended a process whose watchdog was stuck in an NCCL or CUDA call; a consequence when a collective timed out before it), `wrong_results` (nccl-tests found wrong values in the collectives' results: data corrupted on its way), `gpu_fault` (a CUDA error on a process's GPU, raised by the process itself, with its rank and what its text says to change, or met by PyTorch's NCCL watchdog, from whatever kernel faulted there; titled GPU fault), `nccl_crash` (a process's own report of the signal that killed it, UCX's or Open MPI's, whose backtrace has frames in NCCL's code; titled NCCL crashed), `rendezvous_unreachable`, `rendezvous_port_in_use`, `rendezvous_incomplete` (PyTorch's processes never met at their rendezvous store, so NCCL never started: the store unreachable, its port taken, or not every process joined in time; titled Rendezvous store unreachable, Rendezvous port in use, Rendezvous incomplete), `horovod_mismatch` (Horovod's coordinator found the ranks submitted different tensors under one name: shapes, dtypes, operations, root ranks or devices; titled Horovod collective mismatch), `horovod_shutdown` (Horovod shut itself down after a rank raised an exception or left its loop early; the consequence of an error before it, else titled Horovod stopped), `gpu_oom` (a framework's report that a process ran out of GPU memory, PyTorch's, TensorFlow's or XLA's, with the rank its launcher's tag names; the watchdog timeouts after it follow from it; titled GPU out of memory; after a collective already timed out it is no cause), `dataloader_died` (PyTorch's report that a DataLoader worker died, with what its signal says: /dev/shm, host memory, native code; titled DataLoader worker died), `gloo_peer_lost`, `gloo_timeout` (Gloo's report, in PyTorch's gloo groups or Horovod's Gloo controller, that a peer's connection closed or was reset, or that a send or receive waited past its timeout: what a process saw of a peer, which follows from a worker's end the launcher reports, though not from the abort the process's own uncaught Gloo error caused; titled Gloo peer lost, Gloo timeout), `gloo_connect`, `gloo_interface`, `gloo_mismatch` (Gloo's mesh that never connected, with a word when the peer's address is a loopback one; an interface it has no address for, GLOO_SOCKET_IFNAME; more bytes received than the operation expected, ranks that ran different collectives; titled Gloo could not connect, Gloo interface not found, Gloo collective mismatch), each WARN classified by the NCCL or aws-ofi-nccl call site it comes from; names the root (process, rank, `FILE:LINE`) and lists what followed from it (result chains, failed proxy operations, peers' closed sockets, the framework's `NCCL error in: …`) as evidence; probes NCCL goes on from, noise after the process's own `Abort`, and a result chain with no WARN logged after PyTorch's watchdog timed out (its teardown of the communicator) are not errors; "
        "an excerpt cut just after a failure NCCL often goes on from (a network plugin's or the verbs wrapper's WARN while it probed its "
        'networks, a chain without a WARN) shows no failure after it: `labels.unconfirmed`, its advice prefixed "If it did fail", '
        "and first what to read to tell",
        "the class's remediation (MTU/PFC/GID index for RoCE completion errors, ACS/IOMMU for status 4, `--shm-size` for `/dev/shm`, memlock for verbs, …)",
    ),
    CodeDoc(
        "nccl.init_incomplete",
        "communicators that never finished their initialisation",
        "warning / critical",
        "ranks logged `Init START` and never `Init COMPLETE` while others completed or their process logged errors; names ranks and hosts",
        "read those hosts' first WARN; `NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET`",
    ),
    CodeDoc(
        "nccl.watchdog_timeout",
        "PyTorch's watchdog timed a collective out: hang, desync or a rank behind",
        "critical (warning when NCCL logged an error in the same job: the timeouts follow from it, and `nccl.error` cites them)",
        "PyTorch watchdog timeouts; `labels.verdict`: `hang` (same SeqNum and op everywhere), `unknown` (PyTorch 1.8-1.10 print no SeqNum: which collective each rank waits in is not known), `desync` (same SeqNum, different ops), `behind` (the rank with the lowest SeqNum is named: within one process group, and only a rank of the default group, whose ranks are the global ones), `groups` (several process groups timed out, each with its own SeqNum counter: compared within each group only, so two groups in different collectives are no desync)",
        "flight recorder (`TORCH_NCCL_TRACE_BUFFER_SIZE`, `TORCH_NCCL_DUMP_ON_TIMEOUT`); inspect the suspect rank",
    ),
    CodeDoc(
        "nccl.ras",
        "what NCCL's RAS report (ncclras, 2.24+) says of the job's processes and communicators",
        "info / warning / critical",
        "processes RAS could not reach or considers dead and ranks whose data is missing (critical), ranks that reported an initialization or asynchronous error (critical), ranks of a communicator at different operation counts of a collective (a warning naming the ranks behind when they are two operations or more behind, launched none, or are behind in every report of the file; one operation apart in one report is how a running job looks too, said as such), ranks of a communicator with different status (warning), RAS's own queries timing out (info)",
        "read the lost processes' logs and their nodes' kernel logs; run ncclras again to tell a straggler from a sample",
    ),
    CodeDoc(
        "job.worker_exit",
        "a launcher reports a worker's end (a signal, an exit code)",
        "warning / critical",
        "a launcher reports that a worker ended: horovodrun's `Process N exit with status code C`, Open MPI's `mpirun noticed that process rank N … exited on signal S` and its report of the first process to exit with a non-zero code (`Process name: [[J,1],N]`, `Exit code: C`, over lines), torchrun's `failed (exitcode: -S) local_rank: N` and its agent's summary (`Root Cause (first observed failure)`: the job's rank, host and exit code, the first failure though it prints it last), Slurm's `srun: error: NODE: task N: Killed` (and its other words: `tasks 0-3` of a host list, `Exited with exit code C`, a signal's name, `Out Of Memory`) and slurmstepd's `Detected N oom_kill event` (the kernel's out-of-memory killer, named as such, with advice on host memory), DeepSpeed's launcher's `exits with return code = -S` (no rank: the command it prints is the last one it started), and a process's own signal handler reporting its crash (UCX's `Caught signal S (NAME: …)`, Open MPI's `*** Process received signal ***`, with their backtraces, Python's faulthandler's `Fatal Python error: NAME`: one end when two handlers report one crash); the first abnormal end (a signal, or exit code 128+S) is the cause, the ends after it the launcher tearing the job down; an end with the program's own exit code after the NCCL error its log reported first is that error's consequence (a warning that names it)",
        "look at that rank's host at that time: `dmesg` (the OOM killer: SIGKILL, exit 137, no traceback), the scheduler's limits, the worker's last lines",
    ),
    CodeDoc(
        "horovod.stall",
        "Horovod's stall inspector: ranks that did not submit tensors",
        "warning / critical (a rank past the shutdown time)",
        'stall inspector "Missing ranks": which ranks did not submit which tensors',
        "check those ranks are alive and run the same code; `HOROVOD_STALL_SHUTDOWN_TIME_SECONDS`",
    ),
    CodeDoc(
        "horovod.autotune_result",
        "the Horovod autotuner's best setting",
        "info",
        "the autotuner's best row (the last row when tuning finished, else the best score)",
        "a finished tuning: its values as `HOROVOD_FUSION_THRESHOLD` in **bytes** and `HOROVOD_CYCLE_TIME` in ms (never the response cache off); an unfinished one: let it finish first",
    ),
)


class _Number:
    """A threshold as the docs write it: ``{x:%}`` a share, ``{x:ms}`` / ``{x:s}`` microseconds in ms / s,
    ``{x:x}`` a ratio, else the number (thousands separated)."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        v = self.value
        if spec == "%":
            return f"{v * 100:g}%"
        if spec == "ms":
            return f"{v / 1e3:g} ms"
        if spec == "s":
            return f"{v / 1e6:g} s"
        if spec == "x":
            return f"{v:g}×"
        return f"{v:,}" if isinstance(v, int) else f"{v:g}"


class _Group:
    def __init__(self, group: object) -> None:
        self.group = group

    def __getattr__(self, name: str) -> _Number:
        return _Number(getattr(self.group, name))


class _Groups(dict[str, _Group]):
    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__({f.name: _Group(getattr(thresholds, f.name)) for f in fields(thresholds)})


def filled(text: str, thresholds: Thresholds) -> str:
    """``text`` with its ``{group.field:spec}`` places filled from ``thresholds``."""
    return text.format_map(_Groups(thresholds))
