"""One timeline, analysed once and shared by every detector and renderer: a value, no I/O.

:func:`model_of` takes the timeline's spans (a DataFrame), a source of its rank ticks and
its markers, segments nothing itself (the steps come from :func:`analyzer.timeline.steps.find_steps`),
groups fused batches (:mod:`analyzer.timeline.batches`), builds the per-step table and the
lateness of the ticks. Who reads those tables from where (the store, whole or through a
window) is :mod:`analyzer.timeline.load`'s business; :func:`model_from_tables` builds a model
from Arrow tables in memory. :class:`TimelineModel` is immutable; detectors only read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from analyzer.config import Thresholds
from analyzer.lateness.model import StepLateness
from analyzer.timeline.batches import FusionEstimate, estimate_threshold, find_batches
from analyzer.timeline.changepoints import Slowdown, find_slowdown
from analyzer.timeline.cycles import CycleEstimate, estimate_cycle
from analyzer.timeline.lateness import (
    Chunks,
    Lateness,
    RankLateness,
    SpanTicks,
    rank_summary,
    span_ticks,
    step_lateness,
    table_chunks,
    tick_lateness,
)
from analyzer.timeline.steps import (
    NO_END,
    Segmentation,
    find_steps,
    steady_durations,
    step_of,
    step_table,
)

#: what the analyses read of the ``spans`` table (not ``parent_id``, ``depth``, ``dur_us``, ``shape``,
#: ``numel``: a report holds only these, :data:`analyzer.report.assembly.HELD_COLUMNS`)
SPAN_COLUMNS = [
    "span_id",
    "pid",
    "tensor",
    "name",
    "kind",
    "start_us",
    "end_us",
    "closed",
    "op_id",
    "dtype",
    "bytes",
    "start_offset",
    "end_offset",
]


#: what the fusion analyses read of the steady steps' ops (:attr:`TimelineModel.steady_ops`)
STEADY_OP_COLUMNS = ("step", "pid", "tensor", "name", "batch", "bytes", "start_us", "ready_us", "start_offset")


@dataclass(frozen=True, slots=True)
class AnalysisWindow:
    """The head of a timeline whose model would not fit the memory budget: span-level
    analyses read its first :attr:`steps` steps (and the start-up before them), while the
    step table (:attr:`TimelineModel.all_steps`) covers every step (:mod:`analyzer.timeline.load`)."""

    steps: int
    run_steps: int
    spans: int
    run_spans: int
    estimate_bytes: int  # what analysing the whole timeline would take (its model and the process)
    budget_bytes: int

    def note(self) -> str:
        return (
            f"span-level findings, phases, fusion, cycle and rank lateness read the first {self.steps:,} of "
            f"{self.run_steps:,} steps ({self.spans:,} of {self.run_spans:,} spans): analysing the whole "
            f"timeline would take about {size_text(self.estimate_bytes)}, over the {size_text(self.budget_bytes)} "
            "memory budget (--memory-budget). Step times and the step histogram cover every step."
        )


def size_text(n: float) -> str:
    """``n`` bytes as a message says it: GiB from 1 GiB up, else MiB."""
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


@dataclass(frozen=True, slots=True)
class InputIdentity:
    """Which input a model is of: its id, its path (for evidence) and the facts its parser read."""

    input_id: str
    path: str
    facts: Mapping[str, Any]


@dataclass(frozen=True)
class TimelineModel:
    """Spans (with ``step``, ``batch`` and, for ops, ``ready_us``), steps, batches and the
    lateness of rank ticks of one timeline.

    When the timeline is analysed through a window (``window`` is set), spans, steps,
    batches and lateness are the window's and ``run_steps`` is the whole run's step table.
    """

    input_id: str
    path: str
    facts: Mapping[str, Any]  # parsers.timeline.facts.TimelineFacts (older stores may lack keys)
    spans: pd.DataFrame
    steps: pd.DataFrame
    batches: pd.DataFrame
    lateness: Lateness  # ticks of fully ticked negotiations
    markers_us: np.ndarray
    segmentation: Segmentation
    gradient_pids: pd.Index = field(default_factory=lambda: pd.Index([], dtype="int32"))
    run_steps: pd.DataFrame | None = None
    window: AnalysisWindow | None = None
    #: the span ids whose ticks the model read (a window's), None: every tick of the input
    tick_range: tuple[int, int] | None = None
    #: the numbers its analyses decide by (the slowdown's search, the cycle's estimate, the ticked
    #: steps that let ranks be judged): the analysis's configuration
    thresholds: Thresholds = field(default_factory=Thresholds)

    @property
    def all_steps(self) -> pd.DataFrame:
        """Every step of the run (:attr:`steps` unless the model is a window's)."""
        return self.steps if self.run_steps is None else self.run_steps

    @property
    def steady(self) -> pd.DataFrame:
        return self.steps[self.steps["steady"]]

    @property
    def median_step_us(self) -> float | None:
        d = steady_durations(self.steps)
        return float(np.median(d)) if len(d) else None

    @cached_property
    def steady_ops(self) -> pd.DataFrame:
        """The op spans of the steady steps, with the columns the fusion analyses read
        (:data:`STEADY_OP_COLUMNS`): one filter for all of them, not one of every column each."""
        sp = self.spans
        keep = (sp["kind"] == "op").to_numpy() & sp["step"].isin(self.steady["step"]).to_numpy()
        return sp.loc[keep, list(STEADY_OP_COLUMNS)]

    @cached_property
    def steady_mask(self) -> np.ndarray:
        """``steady_mask[step + 1]`` is True for steady steps (index 0 stands for step -1)."""
        mask = np.zeros(len(self.steps) + 1, bool)
        mask[self.steady["step"].to_numpy() + 1] = True
        return mask

    @cached_property
    def steady_lateness(self) -> Lateness:
        """:attr:`lateness` restricted to steady steps."""
        return self.lateness.where_negotiations(self.steady_mask[self.lateness.neg_step + 1])

    @cached_property
    def step_lateness(self) -> StepLateness:
        """:attr:`steady_lateness` as the ranks' lateness model, per step and rank
        (:func:`analyzer.timeline.lateness.step_lateness`), computed once."""
        return step_lateness(self.steady_lateness)

    @cached_property
    def steady_ranks(self) -> list[RankLateness]:
        """:func:`analyzer.timeline.lateness.rank_summary` of :attr:`steady_lateness`, computed once
        (the report computes it ahead on its context's executor: :func:`analyzer.report.assembly.analyze_in`)."""
        return rank_summary(self.steady_lateness)

    @cached_property
    def rank_scope(self) -> tuple[Literal["steady", "first_negotiations", "none"], Lateness]:
        """The ticks per-rank statistics read, and what they are: ``steady`` (enough steady steps
        carry ticks), else ``first_negotiations`` (warm-up ticks only, the response cache's
        doing), else ``none``."""
        if len(self.steady_lateness.steps()) >= self.thresholds.straggler.min_steps:
            return "steady", self.steady_lateness
        return ("first_negotiations" if len(self.lateness) else "none"), self.lateness

    @property
    def steady_ticked_steps(self) -> int:
        """How many steady steps have rank ticks (fully ticked negotiations or not)."""
        lat = self.lateness
        return int(self.steady_mask[np.unique(lat.neg_step[lat.tick_counts > 0]) + 1].sum())

    @cached_property
    def steady_batches(self) -> pd.DataFrame:
        """Batches of the steady steps."""
        return self.batches[self.batches["step"].isin(self.steady["step"])]

    @cached_property
    def fusion_estimate(self) -> FusionEstimate:
        """:func:`analyzer.timeline.batches.estimate_threshold` of the steady batches, computed once."""
        return estimate_threshold(self.steady_batches)

    @cached_property
    def slowdown(self) -> Slowdown | None:
        """:func:`analyzer.timeline.changepoints.find_slowdown` of every step of the run, computed once."""
        return find_slowdown(self.all_steps, self.thresholds.slowdown)

    @cached_property
    def cycle(self) -> CycleEstimate | None:
        """:func:`analyzer.timeline.cycles.estimate_cycle`, computed once."""
        return estimate_cycle(self.markers_us, self.spans, self.thresholds.cycle)


def typed_spans(spans: pd.DataFrame) -> pd.DataFrame:
    """The ``spans`` table (:data:`SPAN_COLUMNS`) typed for the analyses."""
    for col in ("tensor", "dtype"):
        spans[col] = spans[col].astype("object")
    # compared and grouped often: codes, not strings (an object column's == took 0.13 s per 1.7 M spans)
    for col in ("name", "kind"):
        spans[col] = spans[col].astype("category")
    spans["end_us"] = spans["end_us"].fillna(NO_END).astype(np.int64)
    # ``end_offset`` stays as Arrow gives it (float64, NaN while unclosed; int64 when every span
    # closed): its one reader takes it as floats (:func:`analyzer.timeline.batches.find_batches`),
    # and a nullable Float64 copy was 17 ms and 15 MB of a 1 GB timeline's analysis
    return spans


def model_of(
    of: InputIdentity,
    spans: pd.DataFrame,
    ticks: Chunks,
    markers: pd.DataFrame,
    starts: np.ndarray,
    grads: pd.Index,
    seg: Segmentation,
    tick_range: tuple[int, int] | None = None,
    counted: Future[SpanTicks] | None = None,
    pool: Executor | None = None,
) -> TimelineModel:
    """The model of ``spans`` (:func:`typed_spans`) of input ``of``, cut into the steps that start
    at ``starts``; ``ticks`` its
    rank ticks (only those of ``tick_range`` when ``spans`` are a window's), ``markers`` its
    ``name``/``ts_us`` markers; ``counted`` the ticks' first pass when the caller started it
    (:func:`ticks_counted`); ``pool``: where the ticks' lateness runs meanwhile (None: here, after).
    ``spans`` itself is left as it was: the model's are a shallow copy with the added columns."""
    spans = spans.copy(deep=False)
    spans["step"] = step_of(spans["start_us"].to_numpy(), starts)
    # the ticks' lateness (reading them, compiled loops without the GIL) on a thread of the pool
    # while this one builds the span tables: on two cores, 0.3 s of a 1 GB timeline's analysis
    first_pass = counted.result if counted is not None else None
    rows = negotiation_rows(spans)
    lateness = pool.submit(tick_lateness, ticks, *rows, first_pass) if pool is not None else None
    batch_of, ready_of, batches = find_batches(spans)
    spans["batch"] = batch_of
    spans["ready_us"] = ready_of
    steps = step_table(spans, starts, grads)
    lat = lateness.result() if lateness is not None else tick_lateness(ticks, *rows, first_pass)
    return TimelineModel(
        input_id=of.input_id,
        path=of.path,
        facts=of.facts,
        spans=spans,
        steps=steps,
        batches=batches,
        lateness=lat,
        markers_us=np.sort(markers.loc[markers["name"].astype(str) == "CYCLE_START", "ts_us"].to_numpy()),
        segmentation=seg,
        gradient_pids=grads,
        tick_range=tick_range,
    )


def ticks_counted(ticks: Chunks, pool: Executor | None) -> Future[SpanTicks]:
    """The ticks' first pass (:func:`analyzer.timeline.lateness.span_ticks`: it needs no span) on a
    thread of ``pool`` from now on, for :func:`model_of`: it runs while the caller reads the spans
    (0.1-0.15 s of a 1 GB timeline's model on two cores); without a pool, here and now."""
    if pool is not None:
        return pool.submit(span_ticks, ticks)
    done: Future[SpanTicks] = Future()
    done.set_result(span_ticks(ticks))
    return done


def negotiation_lateness(spans: pd.DataFrame, ticks: Chunks) -> Lateness:
    """Lateness of the ticks of the negotiations among ``spans`` (with their ``step``)."""
    return tick_lateness(ticks, *negotiation_rows(spans))


def negotiation_rows(spans: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The span ids, steps and end times (NaN: unclosed) of the negotiations among ``spans``."""
    # a filter of these columns only, not of the whole frame (0.03 s per GB of timeline)
    neg = spans.loc[(spans["kind"] == "negotiate").to_numpy(), ["span_id", "step", "closed", "end_us"]]
    neg_end = np.where(neg["closed"].to_numpy(bool), neg["end_us"].to_numpy(np.float64), np.nan)
    return neg["span_id"].to_numpy(np.int64), neg["step"].to_numpy(np.int64), neg_end


def model_from_tables(of: InputIdentity, spans: pa.Table, ticks: pa.Table, markers: pa.Table) -> TimelineModel:
    """The whole model of a timeline from its ``spans``, ``ticks`` and ``markers`` tables in memory
    (as :class:`parsers.timeline.TimelineParser` builds them, or as a test writes them)."""
    chunks = table_chunks(lambda cols: ticks.select(cols).to_batches())
    typed = typed_spans(spans.select(SPAN_COLUMNS).to_pandas())
    return model_of(of, typed, chunks, markers.select(["name", "ts_us"]).to_pandas(), *find_steps(typed))
