"""``hvd-analyze slice`` of per-rank traces: some steps of every rank as one Chrome trace, each rank a
process, on one clock.

Each rank's ``ProfilerStep#N`` spans and its collectives of those steps are drawn on its own process
(``rank R (host)``), moved onto the first host's clock by each host's offset (measured from the ends
of matched collectives: :meth:`RankTraceSet.clock_offsets_us`), so that a collective lines up across
ranks and the late rank's short bar stands out. Every collective says how much later than the
first-ready rank its rank came (``late_by_us``). Read from the run store's tables, not from the
traces: memory follows the set's collectives, not the traces' size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import orjson

from analyzer.errors import UsageError
from analyzer.ranktraces.model import RankTraceSet

_SPEC = re.compile(r"^(\d+)?(:(\d+)?)?$")


def pick_steps(s: RankTraceSet, spec: str) -> tuple[int, int]:
    """The profiled steps (``ProfilerStep`` numbers, inclusive) ``spec`` names: ``A:B`` (B excluded), ``A``,
    ``A:``, ``:B``, ``slowest`` or ``median`` (by the slowest rank's time in each step).

    Raises:
        UsageError: no profiled step, or none in that range.
    """
    if not len(s.steps):
        raise UsageError("the per-rank traces hold no ProfilerStep#N step: nothing to slice")
    if spec in ("slowest", "median"):
        with np.errstate(all="ignore"):
            per_step = np.nanmax(s.step_us, axis=1)
        order = np.argsort(per_step, kind="stable")
        at = order[-1] if spec == "slowest" else order[(len(order) - 1) // 2]
        step = int(s.steps[at])
        return step, step
    m = _SPEC.match(spec)
    if m is None or spec == "":
        raise UsageError(f"--steps {spec!r}: expected A:B, A, A:, :B, slowest or median")
    lo = int(m.group(1)) if m.group(1) else int(s.steps[0])
    if m.group(2) is None:
        hi = lo
    else:
        hi = int(m.group(3)) - 1 if m.group(3) else int(s.steps[-1])
    inside = s.steps[(s.steps >= lo) & (s.steps <= hi)]
    if not len(inside):
        raise UsageError(f"--steps {spec!r}: the traces' profiled steps are {int(s.steps[0])}-{int(s.steps[-1])}")
    return int(inside[0]), int(inside[-1])


def rank_chrome_trace(s: RankTraceSet, first: int, last: int) -> Iterator[bytes]:
    """Steps ``first..last`` of every rank of ``s`` as the bytes of one Chrome trace (module docstring)."""
    offsets = s.clock_offsets_us()
    c = s.collectives
    most = np.zeros(int(c.key.max()) + 1 if len(c.key) else 0, np.int64)
    if len(c.key):
        np.maximum.at(most, c.key, c.dur_us)
    rows = [i for i, step in enumerate(s.steps) if first <= step <= last]
    yield b'{"displayTimeUnit": "ms", "traceEvents": [\n'
    sep = b""
    for trace in sorted(s.traces, key=lambda t: t.rank):
        col = int(np.searchsorted(s.ranks, trace.rank))
        shift = trace.base_us - offsets.get(trace.host or f"rank {trace.rank}", 0.0)
        label = f"rank {trace.rank}" + (f" ({trace.host})" if trace.host else "")
        for record in (
            {"ph": "M", "name": "process_name", "pid": trace.rank, "args": {"name": label}},
            {"ph": "M", "name": "process_sort_index", "pid": trace.rank, "args": {"sort_index": trace.rank}},
            {"ph": "M", "name": "thread_name", "pid": trace.rank, "tid": 0, "args": {"name": "steps"}},
            {"ph": "M", "name": "thread_name", "pid": trace.rank, "tid": 1, "args": {"name": "collectives"}},
        ):
            yield sep + orjson.dumps(record)
            sep = b",\n"
        for i in rows:
            start, dur = s.start_us[i, col], s.step_us[i, col]
            if np.isnan(start):
                continue
            yield sep + orjson.dumps(
                {
                    "ph": "X",
                    "name": f"ProfilerStep#{int(s.steps[i])}",
                    "pid": trace.rank,
                    "tid": 0,
                    "ts": float(start + shift),
                    "dur": float(dur),
                }
            )
        mine = np.flatnonzero((c.rank == trace.rank) & (c.step >= first) & (c.step <= last))
        for j in mine:
            late = int(most[c.key[j]] - c.dur_us[j]) if c.waits else None
            yield sep + orjson.dumps(
                {
                    "ph": "X",
                    "name": str(c.op[j]),
                    "pid": trace.rank,
                    "tid": 1,
                    "ts": float(c.start_us[j] + shift),
                    "dur": int(c.dur_us[j]),
                    "args": {"step": int(c.step[j]), "late_by_us": late},
                }
            )
    yield b"\n]}\n"
