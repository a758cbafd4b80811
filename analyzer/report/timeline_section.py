"""The report's ``timeline`` section: steps, histogram, phases, per-rank lateness, fusion, cycle.

JSON-ready dicts of the types in :mod:`analyzer.report.types` (documented in
docs/report-schema.md), built from a :class:`~analyzer.timeline.model.TimelineModel`;
renderers and the dashboard draw them.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future

import numpy as np

from analyzer.config import StragglerThresholds
from analyzer.lateness import judge
from analyzer.report.types import (
    CycleDoc,
    FusionDoc,
    RankNoiseDoc,
    RanksDoc,
    StepsDoc,
    TimelineSection,
    WindowDoc,
)
from analyzer.report.views import step_series
from analyzer.timeline.lateness import RankLateness, oversized, rank_summary
from analyzer.timeline.model import TimelineModel
from analyzer.timeline.phases import phase_summary
from analyzer.timeline.steps import steady_durations

MAX_BINS = 30


def timeline_section(
    model: TimelineModel,
    hosts: Mapping[int, str] | None = None,
    straggler: StragglerThresholds | None = None,
    ranks_ahead: Future[list[RankLateness]] | None = None,
) -> TimelineSection:
    """The timeline's section of the report; ``hosts``: rank -> host where the job's NCCL logs say;
    ``straggler``: the thresholds the ranks' noise is judged with (the defaults if None);
    ``ranks_ahead``: the model's :attr:`~analyzer.timeline.model.TimelineModel.steady_ranks` being
    computed on another thread meanwhile (waited for when the ranks' part is reached; its loops and
    numpy's selections release the GIL: 0.19 s of a 1 GB timeline's report)."""
    seg = model.segmentation
    return {
        "input_id": model.input_id,
        "path": model.path,
        "segmentation": {
            "method": seg.method,
            "source": seg.source,
            "gradient_tensors": seg.gradient_tensors,
            "confidence": seg.confidence,
            "note": seg.note,
        },
        "steps": steps_summary(model),
        "series": step_series(model),
        "window": window_summary(model),
        "phases": [
            {
                "phase": p.name,
                "median_ms": p.median_us / 1e3,
                "mean_ms": p.mean_us / 1e3,
                "share_of_step": p.share_of_step,
            }
            for p in phase_summary(model)
        ],
        "ranks": ranks_summary(model, hosts or {}, straggler or StragglerThresholds(), ranks_ahead),
        "fusion": fusion_summary(model),
        "cycle": cycle_summary(model),
    }


def window_summary(model: TimelineModel) -> WindowDoc | None:
    """Which steps the span-level sections read when the timeline did not fit the memory budget."""
    w = model.window
    if w is None:
        return None
    return {
        "steps": w.steps,
        "run_steps": w.run_steps,
        "spans": w.spans,
        "run_spans": w.run_spans,
        "estimate_bytes": w.estimate_bytes,
        "budget_bytes": w.budget_bytes,
        "note": w.note(),
    }


def steps_summary(model: TimelineModel) -> StepsDoc:
    """Step times over every step of the run (a window's model carries the whole run's table)."""
    d = steady_durations(model.all_steps) / 1e6
    out: StepsDoc = {
        "count": len(model.all_steps),
        "steady": len(d),
        "median_s": None,
        "p10_s": None,
        "p90_s": None,
        "mean_s": None,
        "histogram": {"edges_s": [], "counts": []},
    }
    if len(d):
        counts, edges = np.histogram(d, bins=min(MAX_BINS, max(1, len(np.histogram_bin_edges(d, "auto")) - 1)))
        out.update(
            {
                "median_s": float(np.median(d)),
                "p10_s": float(np.percentile(d, 10)),
                "p90_s": float(np.percentile(d, 90)),
                "mean_s": float(d.mean()),
                "histogram": {"edges_s": [float(e) for e in edges], "counts": [int(c) for c in counts]},
            }
        )
    return out


#: the ranks a report lists, those most often last first: more than any Horovod job has run on (a
#: timeline naming a million ranks listed them all in a 129 MB text report, 50 s and 3 GB)
LISTED_RANKS = 4096


def ranks_summary(
    model: TimelineModel,
    hosts: Mapping[int, str],
    straggler: StragglerThresholds,
    ahead: Future[list[RankLateness]] | None = None,
) -> RanksDoc:
    """Per-rank lateness from steady-state ticks, else from first-step ticks (scope says which), and
    the host's noise the straggler verdict was judged against (steady ticks only)."""
    scope, lat = model.rank_scope
    if scope == "steady":
        rows = ahead.result() if ahead is not None else model.steady_ranks
    else:
        rows = rank_summary(lat)
    return {
        "scope": scope,
        "count": len(rows),
        "oversized": oversized(model.lateness),
        "ranks": [
            {
                "rank": r.rank,
                "host": hosts.get(r.rank),
                "negotiations": r.negotiations,
                "last": r.last,
                "median_lateness_ms": r.median_us / 1e3,
                "p90_lateness_ms": r.p90_us / 1e3,
                "vs_median_ms": r.median_vs_median_us / 1e3,
            }
            for r in sorted(rows[:LISTED_RANKS], key=lambda r: r.rank)  # rows: most often last first
        ],
        "noise": _noise(model, straggler) if scope == "steady" else None,
    }


def _noise(model: TimelineModel, straggler: StragglerThresholds) -> RankNoiseDoc | None:
    view = model.step_lateness
    step = model.median_step_us
    if not step or len(view.ranks) < 2:
        return None
    j = judge(view, step, straggler)
    return {
        "steps": view.n_steps,
        "noise_ms": j.noise_us / 1e3,
        "bar_ms": j.bar_us / 1e3,
        "floor_ms": j.floor_us / 1e3,
        "confidence": j.confidence,
    }


def fusion_summary(model: TimelineModel) -> FusionDoc:
    est = model.fusion_estimate
    b = model.steady_batches
    steady = model.steady
    return {
        "batches_per_step": float(steady["batches"].median()) if len(steady) else None,
        "tensors_per_step": float(steady["tensors"].median()) if len(steady) else None,
        "singleton_share": float((b["tensors"] == 1).mean()) if len(b) else None,
        "threshold_lower_bytes": est.lower_bytes,
        "threshold_upper_bytes": est.upper_bytes,
        "threshold_text": est.text(),
    }


def cycle_summary(model: TimelineModel) -> CycleDoc | None:
    c = model.cycle
    if c is None:
        return None
    return {
        "cycle_ms": c.cycle_us / 1e3,
        "method": c.method,
        "samples": c.samples,
        "regularity": c.regularity,
        "low_ms": c.low_us / 1e3,
        "high_ms": c.high_us / 1e3,
        "confidence": c.confidence,
    }
