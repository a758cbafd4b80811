"""Per-rank profiler traces for tests: Kineto's layout, and DDP/Gloo ranks with a chosen lateness."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def kineto_text(header: dict[str, Any], events: list[dict[str, Any]], trailer: dict[str, Any] | None = None) -> str:
    """A trace laid out as Kineto writes it: the header keys, one event to a few lines, the trailer."""
    head = "{\n" + "".join(f'  "{k}": {json.dumps(v)},\n' for k, v in header.items()) + '  "traceEvents": [\n'
    body = ",\n".join(
        "  {\n    "
        + ", ".join(f'"{k}": {json.dumps(v)}' for k, v in e.items() if k != "args")
        + (
            ',\n    "args": {\n      ' + ", ".join(f'"{k}": {json.dumps(v)}' for k, v in e["args"].items()) + "\n    }"
            if "args" in e
            else ""
        )
        + "\n  }"
        for e in events
    )
    tail = "".join(f',\n  "{k}": {json.dumps(v)}' for k, v in (trailer or {}).items())
    return head + body + "\n]" + tail + "\n}\n"


def gloo_rank(
    rank: int, steps: int = 6, late_us: int = 0, world: int = 4, step_us: int = 50_000, first: int = 0
) -> dict[str, Any]:
    """Header and events of a DDP/Gloo rank: each step two allreduces on Gloo's threads, whose duration
        is the wait for the latest rank (``late_us`` late itself: it waits least); ``first``: the first step's index
    (``ProfilerStep#<first + 5>``), for a run the profiler's ``repeat`` split into several files."""
    events: list[dict[str, Any]] = []
    for s in range(first, first + steps):
        t0 = 1_000_000 + s * step_us
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{s + 5}",
                "pid": 10 + rank,
                "tid": 10 + rank,
                "ts": t0,
                "dur": step_us - 10,
                "args": {"External id": s},
            }
        )
        for k in range(2):
            events.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": "gloo:all_reduce",
                    "pid": 10 + rank,
                    "tid": 100 + k,
                    "ts": t0 + 10_000 + k + late_us + _jitter(rank, s, k),
                    "dur": 30_000 - late_us - _jitter(rank, s, k),
                    "args": {"External id": 1000 + s * 2 + k},
                }
            )
            events.append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": "c10d::allreduce_",
                    "pid": 10 + rank,
                    "tid": 10 + rank,
                    "ts": t0 + 9_000 + k,
                    "dur": 50,
                    "args": {},
                }
            )
    header = {
        "schemaVersion": 1,
        "deviceProperties": [],
        "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": world},
        "host_name": f"node{rank // 2}",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }
    return {"header": header, "events": events}


def write_job(folder: Path, late: dict[int, int], world: int = 4, steps: int = 12, **kw: Any) -> list[Path]:
    """One job's traces in ``folder``: rank ``r`` is ``late[r]`` us late in every step (0 when absent)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for r in range(world):
        g = gloo_rank(r, steps=steps, late_us=late.get(r, 0), world=world, **kw)
        path = folder / f"host_{10 + r}.{1795831457178876761 + r}.pt.trace.json"
        path.write_text(kineto_text(g["header"], g["events"]))
        out.append(path)
    return out


def _jitter(rank: int, step: int, k: int) -> int:
    """A fixed, irregular few-ms noise per rank, step and collective (no random state)."""
    return (step * 7919 + rank * 104729 + k * 31337) % 3000
