"""The views of a timeline that the web app draws (:mod:`analyzer.report.views`), as types.

They are computed once per run, stored in the app's ``analysis.json`` beside the JSON report,
and bounded in size whatever the timeline's (series thinned, heatmaps binned, tables cut), each
with a ``note`` saying how when it was.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class SlowStretch(TypedDict):
    first: int
    last: int
    ms: float


class StepSeriesView(TypedDict):
    step: list[int]
    ms: list[float]
    steady: list[bool]
    note: str | None
    slow: list[SlowStretch]  # the stretches timeline.slowdown reports
    baseline_ms: float | None


class RankBox(TypedDict):
    rank: int
    ticks: int
    p5: float
    q1: float
    median: float
    q3: float
    p95: float


class RankBoxView(TypedDict):
    ranks: list[RankBox]
    note: str | None


class HeatmapView(TypedDict):
    steps: list[int]
    ranks: list[int]
    z: list[list[float | None]]  # mean lateness (ms) per rank bin and step bin
    rank_bin: NotRequired[int]
    step_bin: NotRequired[int]
    note: str | None


class TensorRow(TypedDict):
    tensor: str
    op: str
    dtype: str | None
    bytes: int | None
    ops: int
    median_op_ms: float
    median_negotiate_ms: float | None


class TensorTableView(TypedDict):
    rows: list[TensorRow]
    note: str | None


class BatchSizesView(TypedDict):
    edges_bytes: list[float]
    counts: list[int]
    batches: int
    threshold_lower_bytes: int | None
    threshold_upper_bytes: int | None
    threshold_text: str


class CadenceView(TypedDict):
    method: str  # markers | bursts
    gaps: int
    edges_ms: list[float]
    counts: list[int]
    cycle_ms: float | None
    regularity: float | None


class TimelineViews(TypedDict):
    input_id: str
    step_series: StepSeriesView
    rank_box: RankBoxView
    heatmap: HeatmapView
    tensors: TensorTableView
    batch_sizes: BatchSizesView
    cadence: CadenceView
