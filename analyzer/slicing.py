"""``hvd-analyze slice``: a few steps of a timeline of any size as a Chrome trace that Perfetto and
chrome://tracing open, with every rank's readiness drawn as a track of its own.

The slice is read from the run store, not from the file: the step table gives the steps' time
window, and the spans, rank ticks and markers that start in it are read by row groups whose
statistics can hold them (:meth:`RunStore.input_batches`), so memory follows the slice, not the
file. The records come out in Horovod's own layout and in the file's order (their byte offsets):
the project's parser reads a slice back into the same spans and ticks. The rank tracks follow
them on a process of their own: for each negotiation, one bar per rank from the first rank's
request to this rank's (a long bar is a late rank), named so that a Horovod parser skips them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa

from analyzer.context import Context
from analyzer.errors import UsageError
from analyzer.store.manifest import ManifestEntry
from analyzer.store.run_store import RunStore
from analyzer.timeline.load import analysed_model, step_starts

#: Records one slice may hold: past it, slice fewer steps (memory follows the slice).
MAX_RECORDS = 20_000_000
_SPAN_COLUMNS = [
    "span_id",
    "pid",
    "name",
    "depth",
    "start_us",
    "end_us",
    "dtype",
    "shape",
    "start_offset",
    "end_offset",
]
_STEPS = re.compile(r"^(\d+)?(:(\d+)?)?$")
KEYWORDS = ("slowest", "median")


@dataclass(frozen=True, slots=True)
class StepRange:
    """Steps ``first`` to ``last`` (inclusive) of a run, and the time window their spans start in."""

    first: int
    last: int
    start_us: int
    stop_us: int  # exclusive; the next step's start (or past the end of the file)


def step_range(path: str, starts: np.ndarray, spec: str, steps: pd.DataFrame | None = None) -> StepRange:
    """The steps ``spec`` names: ``A:B`` (B excluded, as in Python), ``A``, ``A:``, ``:B``, or
    ``slowest`` / ``median`` of the steady steps (those need ``steps``, the analysed step table).

    Raises:
        UsageError: a spec that names no step of this run.
    """
    n = len(starts)
    if n == 0:
        raise UsageError(f"{path}: no steps were found in this timeline, so there is nothing to slice by step")
    if spec in KEYWORDS:
        steady = steps[steps["steady"]] if steps is not None else pd.DataFrame()
        if steady.empty:
            raise UsageError(f"{path}: no complete steady step to pick the {spec} one from; give --steps A:B")
        order = steady.sort_values(["duration_us", "step"], kind="stable")
        row = order.iloc[-1] if spec == "slowest" else order.iloc[(len(order) - 1) // 2]
        first = last = int(row["step"])
    else:
        m = _STEPS.match(spec.strip())
        if m is None or spec.strip() in ("", ":"):
            raise UsageError(f"--steps {spec!r}: expected A:B (steps A to B-1), A, A:, :B, slowest or median")
        a = int(m.group(1)) if m.group(1) else 0
        b = (int(m.group(3)) if m.group(3) else n) if m.group(2) else a + 1
        if not 0 <= a < b or a >= n:
            raise UsageError(f"--steps {spec!r}: this run has steps 0 to {n - 1}")
        first, last = a, min(b, n) - 1
    stop = int(starts[last + 1]) if last + 1 < n else int(np.iinfo(np.int64).max)
    return StepRange(first, last, int(starts[first]), stop)


def chrome_trace(
    store: RunStore,
    entry: ManifestEntry,
    window: StepRange,
    hosts_of: Callable[[int], Mapping[int, str]] | None = None,
) -> Iterator[bytes]:
    """The slice as the bytes of a JSON array of trace events, in pieces. ``hosts_of(world)``: the
    host of each rank of a job of ``world`` ranks, for the rank tracks' names."""
    tables = step_tables(store, entry, window)
    spans, ticks, marks, names = tables.spans, tables.ticks, tables.markers, tables.names
    events: list[tuple[int, bytes]] = []
    sp = spans.to_pydict()
    for i in range(spans.num_rows):
        pid = sp["pid"][i]
        events.append(
            (sp["start_offset"][i], _rec({"ph": "B", "name": sp["name"][i], "ts": sp["start_us"][i], "pid": pid}))
        )
        if sp["end_offset"][i] is not None and sp["end_us"][i] is not None:
            e: dict[str, object] = {"ph": "E", "ts": sp["end_us"][i], "pid": pid}
            if sp["dtype"][i] is not None or sp["shape"][i] is not None:
                e["args"] = {"dtype": sp["dtype"][i], "shape": sp["shape"][i]}
            events.append((sp["end_offset"][i], _rec(e)))
    tk = ticks.to_pydict()
    for i in range(ticks.num_rows):
        rec = {"ph": "X", "name": str(tk["rank"][i]), "ts": tk["ts_us"][i], "pid": tk["pid"][i], "dur": 0}
        events.append((tk["offset"][i], _rec(rec)))
    mk = marks.to_pydict()
    for i in range(marks.num_rows):
        events.append((mk["offset"][i], _rec({"ph": "i", "name": mk["name"][i], "ts": mk["ts_us"][i], "s": "g"})))
    pids = sorted(set(sp["pid"]) | set(tk["pid"]))
    world = max(tk["rank"], default=-1) + 1  # every rank ticks in every ticked negotiation
    hosts = hosts_of(world) if hosts_of is not None and world else {}
    events += _rank_tracks(tk, max(pids, default=0) + 1, names, hosts)
    events.sort(key=lambda e: e[0])  # the file's order; a rank's counter right after its tick
    yield b"[\n"
    for meta in _metadata(entry, pids, names):
        yield meta + b",\n"
    for _, event in events:
        yield event + b",\n"
    yield _rec({"name": "hvd-analyze slice", "ph": "M", "pid": 0, "args": {"steps": [window.first, window.last]}})
    yield b"\n]\n"


@dataclass(frozen=True, slots=True)
class StepTables:
    """The records of some steps: spans, rank ticks and markers that start in their window, and
    the names of the tensors (pid -> name)."""

    spans: pa.Table
    ticks: pa.Table
    markers: pa.Table
    names: dict[int, str]


def step_tables(store: RunStore, entry: ManifestEntry, window: StepRange) -> StepTables:
    """The records of ``window``'s steps, read by the row groups that can hold them.

    Raises:
        UsageError: more than :data:`MAX_RECORDS` records.
    """
    input_id, hi = entry["id"], window.stop_us - 1
    spans = _table(store, "spans", input_id, _SPAN_COLUMNS, ("start_us", window.start_us, hi))
    ticks = _table(
        store, "ticks", input_id, ["pid", "negotiation_id", "rank", "ts_us", "offset"], ("ts_us", window.start_us, hi)
    )
    marks = _table(store, "markers", input_id, ["name", "ts_us", "offset"], ("ts_us", window.start_us, hi))
    records = 2 * spans.num_rows + 2 * ticks.num_rows + marks.num_rows
    if records > MAX_RECORDS:
        raise UsageError(
            f"steps {window.first}-{window.last} hold {records:,} records, over the {MAX_RECORDS:,} one slice may "
            "hold: slice fewer steps"
        )
    return StepTables(spans, ticks, marks, _tensor_names(store, input_id))


def main_timeline(store: RunStore, which: str | None = None, where: str | None = None) -> ManifestEntry:
    """The store's timeline named ``which`` (its path or file name), else the one with most spans.

    Raises:
        UsageError: no such timeline.
    """
    timelines = [e for e in store.inputs if e["kind"] == "horovod_timeline"]
    if which is not None:
        timelines = [e for e in timelines if e["path"] == which or Path(e["path"]).name == which]
    if not timelines:
        named = f"named {which} " if which else ""
        raise UsageError(f"no Horovod timeline {named}in {where or store.root}: only a timeline has steps")
    return max(timelines, key=lambda e: e["rows"].get("spans", 0))


def step_window(ctx: Context, entry: ManifestEntry, spec: str) -> StepRange:
    """:func:`step_range` of a store's timeline: ``slowest`` / ``median`` read the analysed step
    table (within the context's memory budget), other specs only the steps' boundaries."""
    if spec in KEYWORDS:  # this timeline's model only, not every timeline of the store
        model = analysed_model(ctx.store, entry, ctx.config.memory_budget, ctx.config.thresholds)
        return step_range(entry["path"], model.all_steps["start_us"].to_numpy(), spec, model.all_steps)
    return step_range(entry["path"], step_starts(ctx.store, entry), spec)


def _table(store: RunStore, name: str, input_id: str, columns: list[str], between: tuple[str, int, int]) -> pa.Table:
    batches = list(store.input_batches(name, input_id, columns, between=between))
    if not batches:
        return pa.table({c: pa.array([], pa.int64()) for c in columns})
    return pa.Table.from_batches(batches).combine_chunks()


def _tensor_names(store: RunStore, input_id: str) -> dict[int, str]:
    t = store.input_table("tensors", input_id).select(["pid", "tensor"]).to_pydict()
    return {p: n for p, n in zip(t["pid"], t["tensor"], strict=True) if n is not None}


def _rec(obj: object) -> bytes:
    return orjson.dumps(obj)


def _metadata(entry: ManifestEntry, pids: list[int], names: dict[int, str]) -> Iterator[bytes]:
    facts: Mapping[str, object] = entry.get("timeline") or {}
    start = facts.get("start_time_since_epoch_us")
    if start is not None:  # Horovod >= 0.20.1: wall clock at ts 0, on pid 0
        yield _rec({"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": start}})
    for pid in pids:
        if pid in names:
            yield _rec({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": names[pid]}})
            yield _rec({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})


def _rank_tracks(
    tk: dict[str, list[int]], pid: int, names: dict[int, str], hosts: Mapping[int, str]
) -> Iterator[tuple[int, bytes]]:
    """Records of one counter track per rank on process ``pid``, each placed at its tick's offset: when
    the rank's request came, how much later than the negotiation's first (us). Counters are not
    Horovod records: a timeline parser skips them."""
    if not tk["rank"]:
        return
    yield -2, _rec({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": "rank readiness (hvd-analyze)"}})
    yield -1, _rec({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": -1}})
    first: dict[int, int] = {}
    for neg, ts in zip(tk["negotiation_id"], tk["ts_us"], strict=True):
        first[neg] = min(ts, first.get(neg, ts))
    rows = zip(tk["pid"], tk["negotiation_id"], tk["rank"], tk["ts_us"], tk["offset"], strict=True)
    for tensor_pid, neg, rank, ts, off in rows:
        label = f"rank {rank}" + (f" ({hosts[rank]})" if rank in hosts else "") + " late (us)"
        args = {names.get(tensor_pid, str(tensor_pid)): ts - first[neg]}
        yield off, _rec({"ph": "C", "name": label, "pid": pid, "ts": ts, "args": args})
