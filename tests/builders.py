"""Tiny deterministic timeline inputs written exactly as Horovod's writer writes them."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

HEADER = (
    '{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros":1700000000000000}},\n'
    '{"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}},\n'
)


def meta(pid: int, name: str) -> str:
    return (
        f'{{"name": "process_name", "ph": "M", "pid": {pid}, "args": {{"name": "{name}"}}}},\n'
        f'{{"name": "process_sort_index", "ph": "M", "pid": {pid}, "args": {{"sort_index": {pid}}}}},\n'
    )


def B(name: str, ts: int, pid: int) -> str:
    return f'{{"ph": "B", "name": "{name}", "ts": {ts}, "pid": {pid}}}'


def E(ts: int, pid: int, dtype: str | None = None, shape: str | None = None) -> str:
    if dtype is None:
        return f'{{"ph": "E", "ts": {ts}, "pid": {pid}}}'
    return f'{{"ph": "E", "ts": {ts}, "pid": {pid}, "args": {{"dtype": "{dtype}", "shape": "{shape}"}}}}'


def X(rank: int, ts: int, pid: int) -> str:
    return f'{{"ph": "X", "name": "{rank}", "ts": {ts}, "pid": {pid}, "dur": 0}}'


def cycle_start(ts: int) -> str:
    return f'{{"ph": "i", "name": "CYCLE_START", "ts": {ts}, "s": "g"}}'


def glued(*parts: str, close: bool = True, header: bool = True) -> str:
    """>=0.20.1 layout: metadata lines end '},\\n', events are joined with ','."""
    out = ["[\n", HEADER if header else ""]
    prev_event = False
    for p in parts:
        if p.endswith(",\n"):  # metadata block
            out.append(("," if prev_event else "") + p)
            prev_event = False
        else:
            out.append(("," if prev_event else "") + p)
            prev_event = True
    if close:
        out.append("]")
    return "".join(out)


def legacy(*parts: str) -> str:
    """<=0.20.0 layout: one record per line, each ending '},\\n', never closed."""
    lines = ["[\n"]
    for p in parts:
        lines.append(p if p.endswith(",\n") else p + ",\n")
    return "".join(lines)


def write(tmp_path: Path, text: str | bytes, name: str = "timeline.json") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def truth_steps(steps_csv: Path) -> pd.DataFrame:
    """A step table (``step``, ``duration_us``, ``steady``) from a capture's ground-truth steps.csv:
    per step the slowest rank's own step time; step 0 (warm-up) is not steady."""
    slowest: dict[int, float] = {}
    with open(steps_csv, newline="") as f:
        for r in csv.DictReader(f):
            k = int(r["step"])
            slowest[k] = max(slowest.get(k, 0.0), float(r["step_time_s"]))
    steps = sorted(slowest)
    return pd.DataFrame(
        {"step": steps, "duration_us": [slowest[k] * 1e6 for k in steps], "steady": [k >= 1 for k in steps]}
    )
