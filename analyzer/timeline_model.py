"""One timeline input, analysed once and shared by every detector and renderer.

:func:`build_model` reads the input's partitions from the store, segments steps
(:mod:`analyzer.steps`), groups fused batches (:mod:`analyzer.batches`) and builds the
per-step table. :class:`TimelineModel` is immutable; detectors only read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analyzer.batches import find_batches
from analyzer.steps import NO_END, Segmentation, segment, steady_durations, step_table
from analyzer.store import RunStore

SPAN_COLUMNS = ["span_id", "pid", "tensor", "name", "kind", "start_us", "end_us", "closed", "parent_id", "op_id",
                "dtype", "bytes", "start_offset", "end_offset"]


@dataclass(frozen=True)
class TimelineModel:
    """Spans (with ``step``, ``batch`` and, for ops, ``ready_us``), steps, batches and ticks
    of one timeline."""

    input_id: str
    path: str
    facts: dict[str, Any]
    spans: pd.DataFrame
    steps: pd.DataFrame
    batches: pd.DataFrame
    ticks: pd.DataFrame  # + step, negotiation_end_us
    markers_us: np.ndarray
    segmentation: Segmentation
    gradient_pids: pd.Index = field(default_factory=lambda: pd.Index([], dtype="int32"))

    @property
    def steady(self) -> pd.DataFrame:
        return self.steps[self.steps["steady"]]

    @property
    def median_step_us(self) -> float | None:
        d = steady_durations(self.steps)
        return float(np.median(d)) if len(d) else None

    @property
    def ranks(self) -> int:
        """Ranks seen in ticks (0 when the file has none)."""
        return int(self.ticks["rank"].max()) + 1 if len(self.ticks) else 0

    @property
    def cache_on(self) -> bool:
        return self.facts.get("response_cache") == "on"


def build_model(store: RunStore, entry: dict[str, Any]) -> TimelineModel:
    """Analyse the timeline input ``entry`` (a manifest entry) of ``store``."""
    input_id = entry["id"]
    spans = store.input_table("spans", input_id, SPAN_COLUMNS).to_pandas()
    for col in ("name", "kind", "tensor", "dtype"):
        spans[col] = spans[col].astype("object")
    spans["end_us"] = spans["end_us"].fillna(NO_END).astype(np.int64)
    spans["end_offset"] = spans["end_offset"].astype("Float64")
    step_of, starts, seg = segment(spans)
    spans["step"] = step_of
    batch_of, ready_of, batches = find_batches(spans)
    spans["batch"] = batch_of
    spans["ready_us"] = ready_of
    grads = _gradient_pids(spans, seg)
    steps = step_table(spans, starts, grads)
    ticks = _ticks(store, input_id, spans)
    markers = store.input_table("markers", input_id, ["name", "ts_us"]).to_pandas()
    return TimelineModel(
        input_id=input_id,
        path=str(entry["path"]),
        facts=dict(entry.get("timeline") or {}),
        spans=spans,
        steps=steps,
        batches=batches,
        ticks=ticks,
        markers_us=np.sort(markers.loc[markers["name"].astype(str) == "CYCLE_START", "ts_us"].to_numpy()),
        segmentation=seg,
        gradient_pids=grads,
    )


def _gradient_pids(spans: pd.DataFrame, seg: Segmentation) -> pd.Index:
    if seg.method != "recurrence":
        return pd.Index([], dtype="int32")
    src = spans[spans["kind"] == seg.source]
    counts = src.groupby("pid").size()
    return pd.Index(counts.index[counts >= max(2, int(np.ceil(0.5 * counts.max())))])


def _ticks(store: RunStore, input_id: str, spans: pd.DataFrame) -> pd.DataFrame:
    """Ticks with the step and end time of their negotiation."""
    t = store.input_table("ticks", input_id, ["pid", "negotiation_id", "rank", "ts_us", "offset"]).to_pandas()
    neg = spans.loc[spans["kind"] == "negotiate", ["span_id", "step", "end_us", "closed", "name"]]
    neg = neg.set_index("span_id")
    ids = t["negotiation_id"].to_numpy(dtype=float, na_value=-1).astype(np.int64)
    found = neg.reindex(ids)
    t["step"] = found["step"].to_numpy(dtype=float, na_value=-1).astype(np.int64)
    t["negotiation_end_us"] = found["end_us"].where(found["closed"].fillna(False).astype(bool)).to_numpy()
    t["negotiation"] = found["name"].to_numpy()
    t["negotiation_id"] = ids
    return t
