"""One rank's PyTorch profiler (Kineto) trace -> ``rank_traces``, ``rank_steps``, ``rank_collectives``.

What a trace holds of a distributed job, and what is read of it (``docs/formats/rank-traces.md``):

- who: ``distributedInfo`` (rank, world size, backend, process groups, NCCL version), ``host_name``,
  else the file name (``rank3.*``, ``<host>_<pid>.<ns>.pt.trace.json``); the clock base
  (``baseTimeNanoseconds``: ``ts`` is relative to it when present, epoch microseconds when not);
- steps: ``ProfilerStep#N`` annotations;
- collectives, one evidence source per trace, the first present of: NCCL/RCCL kernels on the GPU
  (their duration includes waiting for the last rank); Gloo's ``gloo:<op>`` annotations on its
  worker threads (likewise); Horovod's ``synchronize()``, the outer of two nested
  ``Optimizer.step#`` annotations of a step (the wait for the slowest rank: Horovod's own threads are
  not traced); else the CPU-side ``nccl:<op>`` calls, which say when a collective was asked for but
  not how long it waited;
- per step: data loading (``enumerate(DataLoader)#...``), host-to-device copies (``Memcpy HtoD``).

Times are integer microseconds on the rank's own clock; ranks on different hosts share none.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from parsers.inputs import ByteSource
from parsers.issues import IssueSeverity, IssueSink
from parsers.ranktrace import names
from parsers.ranktrace.collectives import collectives_of, event_args, whole
from parsers.ranktrace.events import EventStream
from parsers.ranktrace.tables import Collective, StepRow, build_tables
from parsers.ranktrace.types import JsonObject, RankGroupDoc, RankTraceFacts, Seen

NO_WAIT_SOURCE = "enqueue"  # a CPU-side NCCL call: when it was asked for, not how long it waited


#: the largest time (us) or step number read: 2**53 us is 285 years, every double still exact; beyond it a
#: number is damage, and would overflow a table's int64 column
LIMIT = float(1 << 53)


class RankTraceParser:
    """Parses one trace. Use :meth:`parse` once; read :attr:`sink` and :attr:`info` after."""

    def __init__(self, path: str | Path, display_name: str | None = None) -> None:
        self.path = Path(path)
        self.sink = IssueSink(display_name or str(path))
        self.info = RankTraceFacts()

    def parse(self, stream: ByteSource) -> dict[str, pa.Table]:
        events = EventStream()
        seen = Seen()
        for e in events.events(stream):
            _take(e, seen)
        seen.launches = _launches_of(seen.kernels, events) if seen.kernels else {}
        if not events.found_events:
            self.sink.add(
                IssueSeverity.ERROR,
                "trace.no_events",
                'no "traceEvents" array: the file is a JSON object but not a profiler trace\'s whole header; '
                "pass the file torch.profiler wrote (<worker>.<time>.pt.trace.json[.gz])",
                byte_offset=0,
            )
        if events.unreadable:
            self.sink.add(
                IssueSeverity.DATA_LOSS,
                "trace.unreadable_event",
                "an event that is not valid JSON was skipped (the rest of the trace is read)",
                byte_offset=events.unreadable_at,
                count=events.unreadable,
            )
        if seen.bad:
            self.sink.add(
                IssueSeverity.DATA_LOSS,
                "trace.bad_number",
                f"an event with a time, duration or step number out of range (negative, not finite or beyond "
                f"2**53; the first: {seen.bad_name!r}) was skipped",
                count=seen.bad,
            )
        if events.cut:
            self.sink.add(
                IssueSeverity.DATA_LOSS,
                "trace.cut",
                f"{events.cut}: the events up to there are analysed, the step it ended in is dropped",
            )
        header = {**events.trailer, **events.header}
        facts = _facts(self.path, header, events.pieces)
        steps, collectives, source = _reduce(seen)
        if events.cut and steps:
            steps = steps[:-1]  # the step the trace was cut in is not whole
            last = steps[-1].step if steps else -1
            collectives = [c for c in collectives if c.step is None or c.step <= last]
        facts.source = source
        facts.steps = len(steps)
        facts.collectives = len(collectives)
        own = max(seen.pids, key=lambda p: seen.pids[p]) if seen.pids else None
        if facts.pid is not None and own is not None and facts.pid != own:
            # the file name looked like <host>_<pid> but names another process: not PyTorch's worker name
            facts.host = header.get("host_name") if isinstance(header.get("host_name"), str) else None
            facts.pid = None
        facts.pid = facts.pid if facts.pid is not None else own
        if events.found_events and not steps:
            self.sink.add(
                IssueSeverity.INFO,
                "trace.no_steps",
                "no ProfilerStep#N annotation: the trace was not recorded with a profiler schedule stepping "
                "(prof.step()), so no step of it can be compared with other ranks",
            )
        if facts.rank is None and events.found_events:
            self.sink.add(
                IssueSeverity.INFO,
                "trace.no_rank",
                "no rank: neither distributedInfo nor the file name (rank<N>, worker<N>) states it; the trace is "
                "read, but not compared with other ranks",
            )
        self.info = facts
        return build_tables(facts, steps, collectives)


def _take(e: JsonObject, seen: Seen) -> None:
    """File one wanted event by kind (events of other phases than complete ``X`` are not timed)."""
    if e.get("ph") != "X":
        return
    name = e.get("name")
    ts, dur = e.get("ts"), e.get("dur")
    if not isinstance(name, str) or not isinstance(ts, int | float) or not isinstance(dur, int | float):
        return
    if not (-LIMIT < ts < LIMIT and 0 <= dur < LIMIT):  # NaN and infinities too
        seen.bad += 1
        seen.bad_name = seen.bad_name or name[:80]
        return
    cat = e.get("cat", "")
    tid = e.get("tid")
    pid = e.get("pid")
    if cat == "kernel":
        if names.is_comm_kernel(name):
            seen.kernels.append(e)
        return
    if cat == "gpu_memcpy":
        if "HtoD" in name:
            seen.h2d.append((float(ts), float(dur)))
        return
    if cat.startswith("gpu_"):
        return  # the GPU's copy of a CPU annotation
    if isinstance(pid, int):
        seen.pids[pid] = seen.pids.get(pid, 0) + 1
    if name.startswith("ProfilerStep#"):
        number = name[len("ProfilerStep#") :]
        if number.isdigit() and len(number) > 15:  # past LIMIT
            seen.bad += 1
            seen.bad_name = seen.bad_name or name[:80]
        elif number.isdigit():
            seen.steps.append((int(number), float(ts), float(dur), tid if isinstance(tid, int) else 0))
    elif name.startswith("gloo:"):
        seen.gloo.append(e)
    elif name.startswith("nccl:"):
        seen.nccl_cpu.append(e)
    elif name.startswith("c10d::"):
        seen.enqueues.append(e)
    elif name.startswith("Optimizer.step#"):
        seen.optimizer.append((float(ts), float(dur), tid if isinstance(tid, int) else 0))
    elif name.startswith("enumerate(DataLoader)"):
        seen.data.append((float(ts), float(dur)))


def _launches_of(kernels: list[JsonObject], events: EventStream) -> dict[int, float]:
    """When each collective kernel was launched: its correlation id's launch, looked up among every
    launch of the trace (kept as two flat arrays, not one object each)."""
    corr = np.frombuffer(events.launch_corr, np.int64) if len(events.launch_corr) else np.empty(0, np.int64)
    if not len(corr):
        return {}
    order = np.argsort(corr, kind="stable")
    ts = np.frombuffer(events.launch_ts, np.float64)[order]
    corr = corr[order]
    wanted = [c for k in kernels if (c := whole(event_args(k).get("correlation"))) is not None]
    at = np.minimum(np.searchsorted(corr, wanted), len(corr) - 1)
    return {
        c: float(ts[i])
        for c, i in zip(wanted, at.tolist(), strict=True)
        if int(corr[i]) == c and -LIMIT < ts[i] < LIMIT
    }


def _facts(path: Path, header: JsonObject, pieces: int) -> RankTraceFacts:
    info = header.get("distributedInfo")
    dist = info if isinstance(info, dict) else {}
    worker = names.worker_of(path.name)
    host_pid = names.host_pid_of(worker) if worker else None
    rank = whole(dist.get("rank"))
    rank_from = "distributedInfo" if rank is not None else None
    if rank is None:
        rank = names.rank_of_name(path.name)
        rank_from = "file name" if rank is not None else None
    host = header.get("host_name") if isinstance(header.get("host_name"), str) else None
    if host is None and host_pid is not None:
        host = host_pid[0]
    base = whole(header.get("baseTimeNanoseconds"))
    devices = header.get("deviceProperties")
    device = devices[0].get("name") if isinstance(devices, list) and devices and isinstance(devices[0], dict) else None
    groups = dist.get("pg_config")
    return RankTraceFacts(
        rank=rank,
        rank_from=rank_from,
        world_size=whole(dist.get("world_size")),
        backend=str(dist["backend"]) if dist.get("backend") else None,
        host=host,
        pid=host_pid[1] if host_pid else None,
        worker=worker,
        trace_id=str(header["trace_id"]) if header.get("trace_id") else None,
        base_ns=base,
        nccl_version=str(dist["nccl_version"]) if dist.get("nccl_version") else None,
        device=str(device) if device else None,
        groups=_groups(groups),
        events=pieces,
    )


def _groups(raw: object) -> list[RankGroupDoc]:
    """Process groups of ``pg_config``: name and global ranks."""
    out: list[RankGroupDoc] = []
    if isinstance(raw, list):
        for g in raw:
            if isinstance(g, dict) and isinstance(g.get("ranks"), list):
                out.append({"name": str(g.get("pg_name", "")), "ranks": [r for r in g["ranks"] if isinstance(r, int)]})
    return out


def _reduce(seen: Seen) -> tuple[list[StepRow], list[Collective], str]:
    """The trace's steps (on the thread that steps) and its collectives of one evidence source (the
    module says which); times stay on the rank's own clock, as written."""
    main = _main_thread(seen.steps)
    windows = sorted({s: (t, d) for s, t, d, tid in seen.steps if tid == main}.items())
    starts = np.array([t for _, (t, _) in windows], np.float64)
    ends = np.array([t + d for _, (t, d) in windows], np.float64)
    numbers = [s for s, _ in windows]

    def step_at(ts: float) -> int | None:
        i = int(np.searchsorted(starts, ts, side="right")) - 1
        return numbers[i] if 0 <= i < len(numbers) and ts < ends[i] else None

    collectives, source = collectives_of(seen, step_at)
    comm: dict[int | None, list[tuple[float, float]]] = {}
    for c in collectives:
        comm.setdefault(c.step, []).append((c.start_us, c.dur_us))
    data, h2d = _per_window(seen.data, starts, ends), _per_window(seen.h2d, starts, ends)
    rows = [
        StepRow(
            step=number,
            start_us=round(ts),
            dur_us=round(dur),
            data_us=round(data[i]),
            h2d_us=round(h2d[i]),
            comm_us=0 if source == NO_WAIT_SOURCE else round(_union(comm.get(number, []))),
        )
        for i, (number, (ts, dur)) in enumerate(windows)
    ]
    return rows, collectives, source


def _main_thread(steps: Sequence[tuple[int, float, float, int]]) -> int:
    """The thread that steps (the one with the most ProfilerStep annotations)."""
    count: dict[int, int] = {}
    for _, _, _, tid in steps:
        count[tid] = count.get(tid, 0) + 1
    return max(count, key=lambda t: count[t]) if count else 0


def _union(spans: Sequence[tuple[float, float]]) -> float:
    """The time covered by ``spans`` (start, duration): concurrent collectives count once."""
    total, reach = 0.0, float("-inf")
    for t, d in sorted(spans):
        end = t + d
        if end > reach:
            total += end - max(t, reach)
            reach = end
    return total


def _per_window(spans: Sequence[tuple[float, float]], starts: np.ndarray, ends: np.ndarray) -> list[float]:
    """Per step window (``starts``/``ends``, ascending, not overlapping): the time ``spans`` (start, duration)
    cover in it. Each span visits only the windows it overlaps (found by bisection), not every window."""
    out = [0.0] * len(starts)
    for t, d in spans:
        i = int(np.searchsorted(ends, t, side="right"))  # the first window ending after the span starts
        while i < len(starts) and starts[i] < t + d:
            out[i] += max(0.0, min(t + d, float(ends[i])) - max(t, float(starts[i])))
            i += 1
    return out
