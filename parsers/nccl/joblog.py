"""Job-log signals that travel with NCCL logs (``docs/formats/nccl-log.md`` §5).

* PyTorch ``ProcessGroupNCCL`` watchdog timeouts, legacy and glog formats, and the
  ``Exception ... detected by watchdog at work: N, last enqueued NCCL work: M, last
  completed NCCL work: K`` line that follows them (``failure detected by watchdog at work
  sequence id: N PG status: …`` in ≈2.4+), each timeout once however often PyTorch restates it.
* Horovod's stall inspector: ``One or more tensors were submitted ... Missing ranks:``
  followed by one ``RANK[!]: [tensor, ...]`` line per missing rank (``!``: past the
  shutdown time; the list stops after six names with `` ...``).
* Horovod autotune CSV logs (three header layouts; threshold in MB; the last row is the
  best one when tuning finished).
* The texts one of which a line must hold to be read as a job-log signal (:data:`SIGNAL_HINTS`), those of
  :mod:`parsers.nccl.exits` (launchers' reports of a worker's end) and the framework's own failures among them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from parsers.nccl import crashes, exits, job_failures, ras
from parsers.nccl.rows import PgMember, WatchdogRow

WATCHDOG = re.compile(
    r"(?:\[PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<guid>\S+))?(?: \((?P<name>[^)]*)\))? Rank (?P<pgrank>\d+)\] "
    r"|\[Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout: WorkNCCL\((?:SeqNum=(?P<seq>\d+), )?"
    r"OpType=(?P<op>\w+)(?:, TensorShape=\[[^\]]{0,200}\])?(?:, NumelIn=(?P<nin>-?\d+), NumelOut=(?P<nout>-?\d+))?, "
    r"Timeout\(ms\)=(?P<timeout>\d+)\)"
    r" ran for (?P<ran>\d+) milliseconds"
)
_RANK_TAG = re.compile(r"\[rank(?P<rank>\d+)\]:")
#: ``[PG ID 1 PG GUID 5 Rank 1] ProcessGroupNCCL initialization options: size: 4, global rank: 3, …``
#: (``[PG 1 Rank 1]`` before PyTorch 2.3; logged at TORCH_CPP_LOG_LEVEL=INFO)
PG_OPTIONS = re.compile(
    r"\[PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<guid>[^\s(\]]+)(?:\([^)]*\))?)?(?: \([^)]*\))? Rank (?P<rank>\d+)\] "
    r"ProcessGroupNCCL initialization options: .*?\bglobal rank: (?P<global>\d+)"
)
#: The group's progress when its watchdog found a failed work, in each release's words: ``Exception (either an
#: error or timeout) detected by watchdog at work: N, last enqueued NCCL work: E, last completed NCCL work: C.`` and
#: ``Timeout at NCCL work: N, …`` (≈2.2-2.3), `` failure detected by watchdog at work sequence id: N PG status: last
#: enqueued work: E, last completed work: C`` (≈2.4+)
WATCHDOG_WORK = re.compile(
    r"\[PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<guid>\S+))?(?: \((?P<name>[^)]*)\))? Rank (?P<rank>\d+)\] +(?:"
    r"Exception \(either an error or timeout\) detected by watchdog at work: |Timeout at NCCL work: |"
    r"failure detected by watchdog at work sequence id: )(?P<work>\d+),? (?:PG status: )?last enqueued (?:NCCL )?"
    r"work: (?P<enq>-?\d+), last completed (?:NCCL )?work: (?P<done>-?\d+)"
)
#: The headers of the stall inspector's lists: per rank (0.19+ ``Missing ranks:``; ``Stalled ranks:``
#: before) or per tensor (``Stalled ops:``, up to 0.15).
STALL_HEADS = ("Missing ranks:", "Stalled ranks:", "Stalled ops:")
STALL_WARNING = "One or more tensors were submitted to be"
#: ``3!: [grad_a, grad_b ...]``; a list cut before its ``]`` is read as far as it goes.
STALL_RANK = re.compile(r"(?:^|[\s>:])(?P<rank>\d+)(?P<bang>!?): \[(?P<tensors>[^\]]*)(?P<end>\])?\s*$")
#: ``grad_a [missing ranks: 1, 3]`` (one per tensor, the older per-op list).
STALL_OP = re.compile(r"(?P<tensor>[^\s,\[\]]+) \[missing ranks: (?P<ranks>\d+(?:, *\d+)*)")

#: Autotune CSV headers by Horovod version (``docs/formats/horovod-timeline.md`` §10).
AUTOTUNE_LAYOUTS = {
    "hierarchical_allreduce,hierarchical_allgather,cycle_time_ms,tensor_fusion_threshold,score": "0.16.0",
    "hierarchical_allreduce,hierarchical_allgather,cache_enabled,cycle_time_ms,tensor_fusion_threshold,score": "0.16.2",
    "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,cycle_time_ms,"
    "tensor_fusion_threshold,score": "0.26.0",
}


OUT_OF_BOUNDS_HINT = "Out of bounds values : "  # nccl-tests' check of the results (reports.parse_out_of_bounds)
#: what a line holds when it is part of a framework's report of a failed NCCL call (jobtexts)
VERSION_HINT, RESULT_HINT, LAST_ERROR_HINT = "NCCL version", "Error", "Last error:"
#: RCCL's bare version line, the one record without ``NCCL`` in it (read by the records' path)
RCCL_VERSION_HINT = "RCCL version"
#: vLLM's log of the NCCL its communicator loaded (``INFO 09-24 20:46:10 [pynccl.py:70] vLLM is using nccl==2.27.3``)
VLLM_VERSION = re.compile(r"\bvLLM is using nccl==(?P<ver>\d+\.\d+\.\d+)")
VLLM_VERSION_HINT = "vLLM is using nccl=="
#: PyTorch's heartbeat monitor ending a process whose watchdog was stuck (:func:`parsers.nccl.reports.parse_heartbeat`)
HEARTBEAT_HINTS = ("Heartbeat monitor timed out!", "watchdog got stuck for ")
#: PyTorch's watchdog ended by an error (:func:`parsers.nccl.reports.parse_watchdog_exception`)
WATCHDOG_EXCEPTION_HINT = "watchdog thread terminated with exception: "
CALL_FAILED_HINT = " failed: "  # Horovod's report: ``ncclAllReduce failed: unhandled system error``
WATCHDOG_HINT = "Watchdog caught"  # a watchdog timeout's line
PG_OPTIONS_HINT = "ProcessGroupNCCL initialization options"  # a process group's membership
WORK_HINTS = ("detected by watchdog at work", "Timeout at NCCL work:")  # the work a timed-out collective was
#: every text one of which a line must hold to be read as a job-log signal (unless a signal of the lines
#: before it goes on: a report's Last error, a wrapped timeout, a stall's rank list), or else an autotune
#: header's or row's separators (:data:`HEADER_SEPARATORS`): the compiled reader passes the other lines by
SIGNAL_HINTS = (
    VERSION_HINT,
    RCCL_VERSION_HINT,
    VLLM_VERSION_HINT,
    RESULT_HINT,
    LAST_ERROR_HINT,
    CALL_FAILED_HINT,
    WATCHDOG_HINT,
    PG_OPTIONS_HINT,
    *WORK_HINTS,
    *exits.EXIT_HINTS,
    exits.ELASTIC_ROOT,
    exits.ELASTIC_OTHERS,
    exits.MPI_FIRST_EXIT,
    OUT_OF_BOUNDS_HINT,
    *(*HEARTBEAT_HINTS, WATCHDOG_EXCEPTION_HINT, *crashes.CRASH_HINTS),  # the ends of a watchdog, of a process
    *job_failures.HINTS,  # a job that never formed, Horovod's stop, a GPU out of memory
    *STALL_HEADS,
    STALL_WARNING,
    *ras.RAS_HINTS,  # NCCL's RAS report, or one of its entries pasted alone
)

#: the fewest field separators (``,`` or a Markdown table's ``|``) of an autotune header or row: fewer, neither
HEADER_SEPARATORS = min(h.count(",") for h in AUTOTUNE_LAYOUTS)


def parse_watchdog(line: str, lineno: int) -> WatchdogRow | None:
    """The ``watchdog_timeouts`` row of a timeout line (``lineno``); the work line that follows completes
    it (:meth:`OpenTimeouts.attach`)."""
    m = WATCHDOG.search(line)
    if not m:
        return None
    # the launcher's "[rankN]:" is the global rank; the message's "[Rank N]" is the rank within the
    # process group that timed out, the global one only in the default group
    tag = _RANK_TAG.search(line, 0, m.start())
    within = m["rank"] or m["pgrank"]
    rank = within if within is not None else tag["rank"] if tag else None
    return WatchdogRow(
        line=lineno,
        rank=int(rank) if rank is not None else None,
        global_rank=int(tag["rank"]) if tag else None,  # else known at the end (resolve_global_ranks)
        seq=int(m["seq"]) if m["seq"] else None,  # PyTorch 1.8-1.10 print none (1.9 the tensor's shape instead)
        op=m["op"],
        numel_in=int(m["nin"]) if m["nin"] else None,
        numel_out=int(m["nout"]) if m["nout"] else None,
        timeout_ms=int(m["timeout"]),
        ran_ms=int(m["ran"]),
        pg=_pg(m) if m["pg"] is not None else None,  # 2.3+ names the group on the timeout line itself
        last_enqueued=None,
        last_completed=None,
    )


@dataclass(frozen=True, slots=True)
class WatchdogWork:
    rank: int  # within the process group
    pg: str  # "1", or "0 (default_pg)"
    work: int
    last_enqueued: int
    last_completed: int
    global_rank: int | None = None  # the launcher's ``[rankN]:`` on the same line


def parse_watchdog_work(line: str) -> WatchdogWork | None:
    m = WATCHDOG_WORK.search(line)
    if not m:
        return None
    tag = _RANK_TAG.search(line, 0, m.start())
    return WatchdogWork(
        int(m["rank"]), _pg(m), int(m["work"]), int(m["enq"]), int(m["done"]), int(tag["rank"]) if tag else None
    )


def parse_pg_member(line: str, lineno: int) -> PgMember | None:
    """A process's place in a process group, from PyTorch's initialization options line."""
    m = PG_OPTIONS.search(line)
    if not m:
        return None
    return PgMember(lineno, m["pg"], m["guid"], int(m["rank"]), int(m["global"]))


def pg_key(pg: str) -> tuple[str, str | None]:
    """The id and GUID of a process group as :func:`_pg` printed it (``1``, ``0 (default_pg)``, ``11 119``,
    ``0 0(default_pg)``)."""
    words = pg.replace("(", " (").split()
    guid = next((w for w in words[1:] if not w.startswith("(")), None)
    return words[0], guid


def fold_restated(watchdog: list[WatchdogRow]) -> list[WatchdogRow]:
    """The timeouts, each once: PyTorch states a timeout again when its watchdog thread ends (``Process group
    watchdog thread terminated with exception: [Rank 3] Watchdog caught …``) and in the error the program then
    raises (``NCCL communicator was aborted on rank 3. Original reason for failure was: …``). A row with the
    same rank, collective, timeout and run time to the millisecond as an earlier one (and no other process
    group or job rank) is that timeout again: what it adds (the job's rank, the group) goes to the first."""
    first: dict[tuple[int | None, int | None, str, int, int], list[WatchdogRow]] = {}
    kept: list[WatchdogRow] = []
    for w in watchdog:
        same = first.setdefault((w.rank, w.seq, w.op, w.timeout_ms, w.ran_ms), [])
        earlier = next((e for e in same if _compatible(e, w)), None)
        if earlier is None:
            same.append(w)
            kept.append(w)
            continue
        for key in ("global_rank", "pg", "numel_in", "numel_out", "last_enqueued", "last_completed"):
            if getattr(earlier, key) is None:
                setattr(earlier, key, getattr(w, key))
    return kept


def _compatible(a: WatchdogRow, b: WatchdogRow) -> bool:
    return all(
        x is None or y is None or x == y
        for x, y in ((a.global_rank, b.global_rank), (a.pg, b.pg), (a.numel_in, b.numel_in), (a.numel_out, b.numel_out))
    )


def resolve_global_ranks(watchdog: list[WatchdogRow], members: list[PgMember]) -> None:
    """Each timeout's rank in the job, where its own line does not say it: the default group's ranks are
    the job's; another group's rank maps through the membership the log shows, when it names one rank."""
    places: dict[tuple[str, int], set[tuple[str | None, int]]] = {}
    for m in members:
        places.setdefault((m.pg, m.rank), set()).add((m.guid, m.global_rank))
    for w in watchdog:
        if w.global_rank is not None or w.rank is None or not w.pg:
            continue
        pg, guid = pg_key(w.pg)
        if pg == "0":
            w.global_rank = w.rank
            continue
        found = {g for gd, g in places.get((pg, w.rank), set()) if guid is None or gd is None or gd == guid}
        if len(found) == 1:
            w.global_rank = found.pop()


def _pg(m: re.Match[str]) -> str:
    """``1``, ``0 (default_pg)`` or ``0 0(default_pg)``: a process group's id, name and GUID as printed."""
    return m["pg"] + (f" ({m['name']})" if m["name"] else "") + (f" {m['guid']}" if m["guid"] else "")


@dataclass(frozen=True, slots=True)
class StallRank:
    rank: int
    shutdown: bool  # past HOROVOD_STALL_SHUTDOWN_TIME_SECONDS
    tensors: tuple[str, ...]
    more: bool  # Horovod listed six names and cut the rest


def parse_stall_rank(line: str) -> StallRank | None:
    m = STALL_RANK.search(line)
    if not m:
        return None
    body = m["tensors"].strip()
    more = body.endswith(" ...") or m["end"] is None  # Horovod cut the list, or the log was cut
    body = body.removesuffix(" ...")
    tensors = [t.strip() for t in body.split(", ") if t.strip()]
    if m["end"] is None and tensors:  # the last name may be cut too
        tensors.pop()
    return StallRank(int(m["rank"]), m["bang"] == "!", tuple(tensors), more)


def parse_stall_ops(line: str) -> list[StallRank]:
    """The ranks of the older per-tensor list (``grad_a [missing ranks: 1, 3]``), one per rank."""
    by_rank: dict[int, list[str]] = {}
    for m in STALL_OP.finditer(line):
        for rank in m["ranks"].split(","):
            by_rank.setdefault(int(rank), []).append(m["tensor"])
    return [StallRank(rank, False, tuple(tensors), False) for rank, tensors in sorted(by_rank.items())]


@dataclass(frozen=True, slots=True)
class AutotuneRow:
    line: int
    hierarchical_allreduce: bool
    hierarchical_allgather: bool
    torus_allreduce: bool | None
    cache_enabled: bool | None
    cycle_time_ms: float
    fusion_threshold_mb: float
    score: float


def autotune_header(line: str) -> str | None:
    """The first Horovod version writing this autotune header, if ``line`` is one."""
    return AUTOTUNE_LAYOUTS.get(_csv_body(line).replace(" ", ""))


def parse_autotune_row(line: str, layout: str, lineno: int) -> AutotuneRow | None:
    fields = [f.strip() for f in _csv_body(line).split(",")]
    names = next(h for h, v in AUTOTUNE_LAYOUTS.items() if v == layout).split(",")
    if len(fields) != len(names):
        return None
    try:
        row = dict(zip(names, (float(f) for f in fields), strict=True))
    except ValueError:
        return None
    opt = {k: bool(row[k]) if k in row else None for k in ("torus_allreduce", "cache_enabled")}
    return AutotuneRow(
        lineno,
        bool(row["hierarchical_allreduce"]),
        bool(row["hierarchical_allgather"]),
        opt["torus_allreduce"],
        opt["cache_enabled"],
        row["cycle_time_ms"],
        row["tensor_fusion_threshold"],
        row["score"],
    )


_PASTE_NOISE = re.compile(r"^\s*>?\s*(?:\d+\s+(?=[\da-z]))?")  # "> " quote and editor line numbers of pasted logs


def _csv_body(line: str) -> str:
    """The CSV fields of a log line, also when it was pasted as a Markdown table (`` | ``)."""
    return _PASTE_NOISE.sub("", line, count=1).strip().strip("|").replace("|", ",").replace(" ", "")


def _describes(work: WatchdogWork, w: WatchdogRow) -> bool:
    same_rank = w.rank in (work.rank, work.global_rank) or (  # the group's rank, or the launcher's
        w.global_rank is not None and w.global_rank == work.global_rank
    )
    return same_rank and w.seq == work.work and w.pg in (None, work.pg) and w.last_completed is None


class OpenTimeouts:
    """The timeouts of a log's ``watchdog`` rows no work line completed yet, by sequence number and rank: a
    work line is matched among those it can describe (:func:`_describes`), not against every timeout before
    it (a log of a job timing out again and again holds tens of thousands, most of one SeqNum)."""

    def __init__(self) -> None:
        self._seen = 0  # the rows of ``watchdog`` indexed so far (rows are only appended, in line order)
        self._open: dict[tuple[int, bool, int | None], list[WatchdogRow]] = {}  # (SeqNum, the job's rank?, rank)

    def attach(self, watchdog: list[WatchdogRow], work: WatchdogWork) -> bool:
        """Complete the latest timeout of ``watchdog`` that ``work`` (a "detected by watchdog at work" line)
        describes; False when there is none."""
        for k in range(self._seen, len(watchdog)):
            w = watchdog[k]
            if w.last_completed is None and w.seq is not None:  # a work line names its SeqNum: none, no match
                self._open.setdefault((w.seq, False, w.rank), []).append(w)
                if w.global_rank is not None:
                    self._open.setdefault((w.seq, True, w.global_rank), []).append(w)
        self._seen = len(watchdog)
        keys = [(work.work, False, work.rank), (work.work, False, work.global_rank)]
        if work.global_rank is not None:
            keys.append((work.work, True, work.global_rank))
        best: WatchdogRow | None = None
        for key in keys:  # the latest row each key holds that ``work`` describes; the latest of those
            rows = self._open.get(key, [])
            while rows and rows[-1].last_completed is not None:
                rows.pop()  # completed: no later work line describes it
            for w in reversed(rows):
                if best is not None and w.line <= best.line:
                    break
                if _describes(work, w):
                    best = w
                    break
        if best is None:
            return False
        best.pg, best.last_enqueued, best.last_completed = work.pg, work.last_enqueued, work.last_completed
        return True
