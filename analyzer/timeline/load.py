"""Timelines too big for memory: the whole run's step table in windows, the detail from its head.

A timeline's model (:func:`analyzer.timeline.model.build_model`) holds every span and every
rank tick: up to ~0.9 GB per GB of timeline. :func:`analysed_model` builds it whole when its
estimate (:func:`model_bytes`) and the process's own :data:`BASELINE_BYTES` fit the memory
budget, and otherwise:

1. finds the steps from the negotiation spans alone (four columns, ~20 bytes each);
2. counts each step's spans (one column, streamed): steps differ, and a hung step can hold more
   spans than a hundred others;
3. builds the span-level model of the first steps that fit three quarters of the budget,
   start-up included: the window every detector, phase, fusion, cycle and rank statistic
   reads (it holds the start-up, where the response cache leaves the only rank ticks);
4. streams the remaining steps in windows of the last quarter, each read by its time range
   (row groups outside it are skipped), and keeps only their rows of the step table.

A step that no window of the budget holds (two steps of millions of spans) is refused with the
budget that would do (:class:`analyzer.errors.OverBudget`), never read whole past the budget.

Steps are cut by start time, so a window holds exactly the spans of its steps, and each
window's table is computed with the end of the step before it: the step table is the one
the whole model gives, row for row (tests/analyzer/timeline/test_window.py checks it). The report
says which steps the span-level analyses read (:meth:`AnalysisWindow.note`).

This module is the only reader of the store for timeline analyses: the model
(:mod:`analyzer.timeline.model`) is built from what it reads here, and what evidence needs
later (tick offsets, a step's first byte, a later stretch's ticks) is read here too, through
:class:`analyzer.context.Context`.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from analyzer.config import DEFAULT_MEMORY_BUDGET, Thresholds
from analyzer.errors import OverBudget
from analyzer.store.manifest import ManifestEntry
from analyzer.store.run_store import RunStore
from analyzer.timeline.batches import find_batches
from analyzer.timeline.lateness import Chunks, Lateness, first_last_offsets, table_chunks
from analyzer.timeline.model import (
    SPAN_COLUMNS,
    AnalysisWindow,
    InputIdentity,
    TimelineModel,
    model_of,
    negotiation_lateness,
    size_text,
    ticks_counted,
    typed_spans,
)
from analyzer.timeline.steps import NO_END, find_steps, step_of, step_table

#: the analysing process before any model: interpreter, pandas, pyarrow, Arrow's pool
BASELINE_BYTES = 450 << 20
#: peak bytes of the whole analysis per span and per rank tick, over the baseline, fitted to
#: bench/analysis.py's whole-model peaks (1.25 GB at 1.67 M spans and 13.4 M ticks, 4.85 GB at 8.4 M
#: and 67 M, 18.8 GB at 33 M and 268 M, when a tick's lateness took 21 bytes; 13 since: the
#: estimate errs on the safe side), and per span to the span-dense shape: 3 M spans of one tensor in
#: two steps, no ticks, 1.83 GB from a store (458 bytes a span; the fit's 340 underestimated it)
SPAN_BYTES = 460
TICK_BYTES = 24
DETAIL_SHARE = 0.75
MIN_DETAIL_STEPS = 20
#: the fewest steps a streamed window reads: each window is one filtered read of the store, so a
#: window of one step per read made a small budget 25-50x slower than no window (tests/analyzer/timeline/test_window.py)
MIN_WINDOW_STEPS = 64
#: the model bytes up to which a head or a window keeps those minimums of steps, whatever the budget:
#: a smaller window saves nothing measurable and costs reads. Beyond it, the budget decides, and a
#: step over what it leaves is refused (:class:`analyzer.errors.OverBudget`), never read whole
FLOOR_BYTES = 64 << 20
SEGMENT_COLUMNS = ["pid", "kind", "start_us", "start_offset"]


def model_bytes(entry: ManifestEntry) -> int:
    """Estimated peak memory of the whole model of the timeline input ``entry``."""
    rows = entry.get("rows", {})
    return int(rows.get("spans", 0)) * SPAN_BYTES + int(rows.get("ticks", 0)) * TICK_BYTES


def model_room(budget: int, held: int = 0) -> int:
    """The bytes of ``budget`` a model may take beside ``held`` bytes of tables kept in memory (a
    ``report FILE``'s store): what the process's baseline leaves, and at least half of the rest. A
    budget under the baseline (the interpreter and its libraries, which no window shrinks) still
    bounds the model by the input's size, not by a constant that the input never reaches."""
    free = max(budget - held, 1)
    return max(free - BASELINE_BYTES, free // 2)


def budget_for_room(room: int) -> int:
    """The smallest budget whose :func:`model_room` is ``room`` (what a test or a bench asks for)."""
    return room + BASELINE_BYTES if room > BASELINE_BYTES else 2 * room


def analysed_model(
    store: RunStore,
    entry: ManifestEntry,
    budget: int = DEFAULT_MEMORY_BUDGET,
    thresholds: Thresholds | None = None,
    pool: Executor | None = None,
    held: int = 0,
) -> TimelineModel:
    """The model of a timeline input: whole when the analysis fits ``budget`` bytes beside ``held``
    bytes of tables kept in memory, else windowed; its analyses decide by ``thresholds`` (the
    defaults when None); ``pool``: threads its tick passes run on beside the span tables' (None:
    one after the other, here)."""
    model = _sized_model(store, entry, budget, pool, held)
    return model if thresholds is None else replace(model, thresholds=thresholds)


def _sized_model(store: RunStore, entry: ManifestEntry, budget: int, pool: Executor | None, held: int) -> TimelineModel:
    need = model_bytes(entry)
    room = model_room(budget, held)
    if need <= room:
        return build_model(store, entry, pool)
    input_id = entry["id"]
    starts, grads, seg = find_steps(_segment_rows(store, input_id))
    n = len(starts)
    cost = _step_costs(store, input_id, starts, need / max(int(entry["rows"].get("spans", 0)), 1))
    k = _head_steps(cost, room * DETAIL_SHARE)
    if k < 1:
        raise _over_budget(entry, "the first step with the start-up", float(cost[:2].sum()), DETAIL_SHARE, budget, held)
    if k >= n:  # too few steps to leave any out: the head would be the whole timeline
        return build_model(store, entry, pool)
    windows = _windows(cost[1:], k, room * (1 - DETAIL_SHARE))
    if isinstance(windows, int):
        raise _over_budget(entry, f"step {windows:,}", float(cost[1 + windows]), 1 - DETAIL_SHARE, budget, held)
    head = read_spans(store, input_id, pc.field("start_us") < int(starts[k]))
    ids = head.loc[head["kind"] == "negotiate", "span_id"]
    tick_range = _span_range(ids)
    model = model_of(
        _identity(entry),
        head,
        tick_chunks(store, input_id, tick_range),
        _markers(store, input_id),
        starts[:k],
        grads,
        seg,
        tick_range,
        pool=pool,
    )
    tables = [model.steps]
    for a, b in windows:
        where = pc.field("start_us") >= int(starts[a])
        if b < n:
            where &= pc.field("start_us") < int(starts[b])
        tables.append(_window_steps(store, input_id, where, starts[a:b], grads, a, tables[-1]))
    window = AnalysisWindow(
        steps=k,
        run_steps=n,
        spans=len(head),
        run_spans=int(entry["rows"]["spans"]),
        estimate_bytes=need + BASELINE_BYTES + held,
        budget_bytes=budget,
    )
    return replace(model, run_steps=pd.concat(tables, ignore_index=True), window=window)


def _step_costs(store: RunStore, input_id: str, starts: np.ndarray, per_span: float) -> np.ndarray:
    """The model bytes of the start-up (element 0) and of each step (1..n): its spans, counted from
    one column streamed a batch at a time, times the whole model's bytes per span. Steps differ (a
    hung step can hold more spans than a hundred others), so windows are cut by these, not by the
    average."""
    counts = np.zeros(len(starts) + 1, np.int64)
    for batch in store.input_batches("spans", input_id, ["start_us"]):
        at = np.searchsorted(starts, batch.column(0).to_numpy(zero_copy_only=False), side="right")
        counts += np.bincount(at, minlength=len(counts))
    return counts * per_span


def _head_steps(cost: np.ndarray, room: float) -> int:
    """How many whole steps the detail head holds with the start-up (``cost`` as
    :func:`_step_costs`) within ``room``: at least :data:`MIN_DETAIL_STEPS` while they cost no
    more than :data:`FLOOR_BYTES` (below that a window saves nothing worth its reads); 0 when not
    even the first step fits."""
    held = np.cumsum(cost)  # held[j]: the start-up and the first j steps
    n = len(cost) - 1
    k = int(np.searchsorted(held, room, side="right")) - 1
    floor = min(MIN_DETAIL_STEPS, n)
    return max(k, floor) if held[floor] <= FLOOR_BYTES else k


def _windows(cost: np.ndarray, first: int, room: float) -> list[tuple[int, int]] | int:
    """Steps ``first..`` cut into windows ``[a, b)`` of whole steps within ``room`` (``cost``: each
    step's bytes), each at least :data:`MIN_WINDOW_STEPS` steps while they cost no more than
    :data:`FLOOR_BYTES`; a step over the room alone: its number, instead."""
    held = np.concatenate([[0.0], np.cumsum(cost)])
    out: list[tuple[int, int]] = []
    a, n = first, len(cost)
    while a < n:
        b = int(np.searchsorted(held, held[a] + room, side="right")) - 1
        floor = min(a + MIN_WINDOW_STEPS, n)
        if held[floor] - held[a] <= FLOOR_BYTES:
            b = max(b, floor)
        if b <= a:
            return a
        out.append((a, b))
        a = b
    return out


def _over_budget(entry: ManifestEntry, piece: str, cost: float, share: float, budget: int, held: int) -> OverBudget:
    """The error of a timeline whose ``piece`` alone costs ``cost`` bytes of model, more than the
    ``share`` of the budget's room it may take beside ``held`` bytes of tables in memory."""
    spans = int(entry["rows"].get("spans", 0))
    its = int(cost / max(model_bytes(entry), 1) * spans)
    need = budget_for_room(int(cost / share) + 1) + held
    beside = f" beside the {size_text(held)} of tables held in memory" if held else ""
    return OverBudget(
        f"{entry['path']}: {piece} alone holds {its:,} of its {spans:,} spans, about {size_text(cost)} to analyse: "
        f"more than the {size_text(budget)} memory budget leaves for one window of whole steps{beside} "
        f"({size_text(model_room(budget, held) * share)}); analyse it with --memory-budget {-(-need // (1 << 30))}G "
        "or more"
    )


def lateness_of_steps(
    store: RunStore,
    entry: ManifestEntry,
    model: TimelineModel,
    first: int,
    last: int,
    budget: int = DEFAULT_MEMORY_BUDGET,
    held: int = 0,
) -> Lateness:
    """Rank lateness of the negotiations of steps ``first..last`` of the run (numbered as in
    :attr:`TimelineModel.all_steps`), read from the store: what a windowed model's detail lacks
    about a later stretch. At most as many steps as the streaming share of ``budget`` holds."""
    run = model.all_steps
    starts = run["start_us"].to_numpy(dtype=np.int64)
    per_step = model_bytes(entry) / max(len(run), 1)
    room = model_room(budget, held) * (1 - DETAIL_SHARE)
    last = min(last, first + max(MIN_DETAIL_STEPS, int(room / max(per_step, 1.0))) - 1)
    where = (pc.field("kind") == "negotiate") & (pc.field("start_us") >= int(starts[first]))
    if last + 1 < len(starts):
        where &= pc.field("start_us") < int(starts[last + 1])
    neg = read_spans(store, entry["id"], where)
    neg["step"] = step_of(neg["start_us"].to_numpy(), starts)
    ids = neg["span_id"]
    return negotiation_lateness(neg, tick_chunks(store, entry["id"], _span_range(ids)))


def build_model(store: RunStore, entry: ManifestEntry, pool: Executor | None = None) -> TimelineModel:
    """The whole model of the timeline input ``entry`` (a manifest entry) of ``store``
    (:func:`analysed_model` decides when a window must do)."""
    ticks = tick_chunks(store, entry["id"])
    counted = ticks_counted(ticks, pool)
    spans = read_spans(store, entry["id"])
    return model_of(
        _identity(entry), spans, ticks, _markers(store, entry["id"]), *find_steps(spans), counted=counted, pool=pool
    )


def read_spans(store: RunStore, input_id: str, where: pc.Expression | None = None) -> pd.DataFrame:
    """The spans of an input (those matching ``where``), typed for the analyses."""
    return typed_spans(store.input_table("spans", input_id, SPAN_COLUMNS, where).to_pandas(split_blocks=True))


def tick_chunks(store: RunStore, input_id: str, tick_range: tuple[int, int] | None = None) -> Chunks:
    """The input's rank ticks (those of the negotiations whose span ids are within ``tick_range``),
    streamed from the store one record batch at a time on each pass."""
    between = None if tick_range is None else ("negotiation_id", *tick_range)
    return table_chunks(lambda cols: store.input_batches("ticks", input_id, cols, between=between))


def tick_offsets(store: RunStore, model: TimelineModel, lat: Lateness) -> np.ndarray:
    """:func:`analyzer.timeline.lateness.first_last_offsets` of a view of ``model``'s ticks."""
    return first_last_offsets(lat, tick_chunks(store, model.input_id, model.tick_range))


def first_span_offset(store: RunStore, model: TimelineModel, step: int) -> int | None:
    """The file offset of the first span of step ``step`` of the run (the step's first byte)."""
    run = model.all_steps
    starts = run["start_us"].to_numpy(dtype=np.int64)
    k = int(np.searchsorted(run["step"].to_numpy(), step))
    where = pc.field("start_us") >= int(starts[k])
    if k + 1 < len(starts):
        where &= pc.field("start_us") < int(starts[k + 1])
    offsets = store.input_table("spans", model.input_id, ["start_offset"], where).column("start_offset")
    first = pc.min(offsets).as_py() if len(offsets) else None
    return None if first is None else int(first)


def _identity(entry: ManifestEntry) -> InputIdentity:
    return InputIdentity(entry["id"], str(entry["path"]), dict(entry.get("timeline") or {}))


def _span_range(span_ids: pd.Series) -> tuple[int, int]:
    """The range of negotiation span ids whose ticks to read (empty: (0, -1))."""
    return (int(span_ids.min()), int(span_ids.max())) if len(span_ids) else (0, -1)


def _markers(store: RunStore, input_id: str) -> pd.DataFrame:
    return store.input_table("markers", input_id, ["name", "ts_us"]).to_pandas()


def step_starts(store: RunStore, entry: ManifestEntry) -> np.ndarray:
    """Where each step of a timeline starts (us), without analysing it (``hvd-analyze slice``)."""
    starts, _, _ = find_steps(_segment_rows(store, entry["id"]))
    return starts


def _segment_rows(store: RunStore, input_id: str) -> pd.DataFrame:
    """The rows :func:`analyzer.timeline.steps.find_steps` reads: negotiations, else ops."""
    for kind in ("negotiate", "op"):
        rows = store.input_table("spans", input_id, SEGMENT_COLUMNS, pc.field("kind") == kind).to_pandas()
        if len(rows):
            return rows
    return rows


def _window_steps(
    store: RunStore,
    input_id: str,
    where: pc.Expression,
    starts: np.ndarray,
    grads: pd.Index,
    first: int,
    before: pd.DataFrame,
) -> pd.DataFrame:
    """The step-table rows of the steps from ``first`` on that start at ``starts``, from their spans."""
    spans = read_spans(store, input_id, where)
    spans["step"] = step_of(spans["start_us"].to_numpy(), starts)
    spans["batch"] = find_batches(spans)[0]
    last = before.iloc[-1]
    end = NO_END if pd.isna(last["end_us"]) else int(last["end_us"])
    return step_table(spans, starts, grads, first=first, before_end=end, before_complete=bool(last["complete"]))
