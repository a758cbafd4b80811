"""Aggregated views of one timeline for interactive display (the dashboard's figures and tables).

Each view is a small JSON-ready dict computed once from a :class:`TimelineModel`, bounded in size
whatever the timeline's: step series are reduced to per-bucket min/max (outliers stay visible),
the rank x step matrix is binned, boxes are per-rank quantiles, the tensor table is capped. A view
that reduced its data says so in ``note``; the figure shows the note.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzer.report.view_types import (
    BatchSizesView,
    CadenceView,
    HeatmapView,
    RankBox,
    RankBoxView,
    SlowStretch,
    StepSeriesView,
    TensorRow,
    TensorTableView,
    TimelineViews,
)
from analyzer.timeline.cycles import cadence_gaps
from analyzer.timeline.lateness import Lateness
from analyzer.timeline.model import TimelineModel

MAX_SERIES_POINTS = 2_000
MAX_HEAT_STEPS = 300
MAX_HEAT_RANKS = 256
MAX_BOX_RANKS = 128
MAX_TENSORS = 5_000
HIST_BINS = 40


def timeline_views(model: TimelineModel) -> TimelineViews:
    _, lat = model.rank_scope  # the ticks the report's rank section reads
    return {
        "input_id": model.input_id,
        "step_series": step_series(model),
        "rank_box": rank_box(lat),
        "heatmap": rank_step_heatmap(lat),
        "tensors": tensor_table(model),
        "batch_sizes": batch_sizes(model),
        "cadence": cadence(model),
    }


def step_series(model: TimelineModel) -> StepSeriesView:
    """Step time over the run: every complete step, or per bucket of steps its fastest and slowest;
    ``slow``: the stretches ``timeline.slowdown`` reports (first and last step, median ms), and
    ``baseline_ms``, the median before them (:attr:`TimelineModel.slowdown`)."""
    steps = model.all_steps
    s = steps[steps["duration_us"].notna()]
    step = s["step"].to_numpy(np.int64)
    ms = s["duration_us"].to_numpy(np.float64) / 1e3
    steady = s["steady"].to_numpy(bool)
    note = None
    if len(step) > MAX_SERIES_POINTS:
        k = -(-len(step) // (MAX_SERIES_POINTS // 2))
        groups = np.arange(len(step)) // k
        frame = pd.DataFrame({"g": groups, "i": np.arange(len(step)), "ms": ms})
        keep = np.unique(
            np.r_[frame.loc[frame.groupby("g")["ms"].idxmin(), "i"], frame.loc[frame.groupby("g")["ms"].idxmax(), "i"]]
        )
        step, ms, steady = step[keep], ms[keep], steady[keep]
        note = f"{len(s)} steps shown as the fastest and slowest of each run of {k} steps"
    found = model.slowdown
    slow: list[SlowStretch] = (
        []
        if found is None
        else [{"first": g.first_step, "last": g.last_step, "ms": round(g.median_us / 1e3, 4)} for g in found.slow]
    )
    return {
        "step": step.tolist(),
        "ms": [round(v, 4) for v in ms.tolist()],
        "steady": steady.tolist(),
        "note": note,
        "slow": slow,
        "baseline_ms": None if found is None else round(found.baseline.median_us / 1e3, 4),
    }


def rank_box(lat: Lateness) -> RankBoxView:
    """Per rank: quantiles of its lateness behind the first-ready rank (ms), for a box plot
    (whiskers p5/p95). Beyond :data:`MAX_BOX_RANKS` ranks, the latest ranks by p75."""
    if not len(lat):
        return {"ranks": [], "note": None}
    mask = lat.mask
    rank = lat.rank[mask].astype(np.int64)
    late = lat.lateness_us[mask] / 1e3
    order = np.lexsort((late, rank))
    rank, late = rank[order], late[order]
    counts = np.bincount(rank)
    present = np.flatnonzero(counts)
    starts = np.r_[0, np.cumsum(counts)][present]
    n = counts[present]

    def q(p: float) -> np.ndarray:
        out: np.ndarray = late[starts + np.floor(p * (n - 1)).astype(np.int64)]
        return out

    qs = {name: q(p) for name, p in (("p5", 0.05), ("q1", 0.25), ("median", 0.5), ("q3", 0.75), ("p95", 0.95))}
    pick = np.arange(len(present))
    note = None
    if len(present) > MAX_BOX_RANKS:
        pick = np.sort(np.argsort(-qs["q3"], kind="stable")[:MAX_BOX_RANKS])
        note = f"the {MAX_BOX_RANKS} latest ranks (by p75) of {len(present)}"

    def box(i: int) -> RankBox:
        def at(name: str) -> float:
            return round(float(qs[name][i]), 4)

        return {
            "rank": int(present[i]),
            "ticks": int(n[i]),
            "p5": at("p5"),
            "q1": at("q1"),
            "median": at("median"),
            "q3": at("q3"),
            "p95": at("p95"),
        }

    return {"ranks": [box(int(i)) for i in pick], "note": note}


def rank_step_heatmap(lat: Lateness) -> HeatmapView:
    """Mean lateness (ms) per rank and step over the steps with rank ticks, binned to at most
    :data:`MAX_HEAT_RANKS` x :data:`MAX_HEAT_STEPS` cells."""
    if not len(lat):
        return {"steps": [], "ranks": [], "z": [], "note": None}
    mask = lat.mask
    step = np.repeat(lat.neg_step, np.diff(lat.bounds))[mask]
    rank = lat.rank[mask].astype(np.int64)
    late = lat.lateness_us[mask] / 1e3
    steps, col = np.unique(step, return_inverse=True)
    n_ranks = int(rank.max()) + 1
    sbin = max(1, -(-len(steps) // MAX_HEAT_STEPS))
    rbin = max(1, -(-n_ranks // MAX_HEAT_RANKS))
    col //= sbin
    row = rank // rbin
    shape = (int(row.max()) + 1, int(col.max()) + 1)
    flat = row * shape[1] + col
    total = np.bincount(flat, late, minlength=shape[0] * shape[1])
    count = np.bincount(flat, minlength=shape[0] * shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(count > 0, total / np.maximum(count, 1), np.nan).reshape(shape)
    notes = []
    if sbin > 1:
        notes.append(f"{len(steps)} steps binned by {sbin}")
    if rbin > 1:
        notes.append(f"{n_ranks} ranks binned by {rbin}")
    return {
        "steps": [int(v) for v in steps[::sbin]],
        "ranks": list(range(0, n_ranks, rbin)),
        "z": [[None if np.isnan(v) else round(float(v), 4) for v in r] for r in z],
        "rank_bin": rbin,
        "step_bin": sbin,
        "note": "; ".join(notes) or None,
    }


def tensor_table(model: TimelineModel) -> TensorTableView:
    """One row per tensor: operation, dtype, bytes, operations run, median op and negotiation time."""
    sp = model.spans
    ops = sp[(sp["kind"] == "op") & sp["closed"]]
    neg = sp[(sp["kind"] == "negotiate") & sp["closed"]]
    if ops.empty:
        return {"rows": [], "note": None}
    og = ops.assign(d=ops["end_us"] - ops["start_us"]).groupby("tensor", sort=False)
    ng = neg.assign(d=neg["end_us"] - neg["start_us"]).groupby("tensor", sort=False)["d"].median()
    table = pd.DataFrame(
        {
            "op": og["name"].first().astype(str),
            "dtype": og["dtype"].first(),
            "bytes": og["bytes"].max(),
            "ops": og.size(),
            "median_op_ms": og["d"].median() / 1e3,
            "median_negotiate_ms": ng.reindex(og.size().index) / 1e3,
        }
    )
    table = table.sort_values("median_op_ms", ascending=False, kind="stable")
    note = None
    if len(table) > MAX_TENSORS:
        note = f"the {MAX_TENSORS} slowest tensors of {len(table)}"
        table = table.head(MAX_TENSORS)
    rows: list[TensorRow] = [
        {
            "tensor": str(name),
            "op": r.op,
            "dtype": None if pd.isna(r.dtype) else str(r.dtype),
            "bytes": None if pd.isna(r.bytes) else int(r.bytes),
            "ops": int(r.ops),
            "median_op_ms": round(float(r.median_op_ms), 4),
            "median_negotiate_ms": None if pd.isna(r.median_negotiate_ms) else round(float(r.median_negotiate_ms), 4),
        }
        for name, r in zip(table.index, table.itertuples(index=False), strict=True)
    ]
    return {"rows": rows, "note": note}


def batch_sizes(model: TimelineModel) -> BatchSizesView:
    """Histogram of the steady fused batches' bytes (log-spaced bins) and the threshold estimate."""
    b = model.steady_batches["bytes"].dropna().to_numpy(np.float64)
    est = model.fusion_estimate
    out: BatchSizesView = {
        "edges_bytes": [],
        "counts": [],
        "batches": len(b),
        "threshold_lower_bytes": est.lower_bytes,
        "threshold_upper_bytes": est.upper_bytes,
        "threshold_text": est.text(),
    }
    b = b[b > 0]
    if len(b):
        lo, hi = np.log10(b.min()), np.log10(b.max())
        counts, edges = np.histogram(np.log10(b), bins=HIST_BINS if hi > lo else 1, range=(lo, max(hi, lo + 1e-9)))
        out.update({"edges_bytes": [float(10**e) for e in edges], "counts": [int(c) for c in counts]})
    return out


def cadence(model: TimelineModel) -> CadenceView:
    """Histogram of the gaps (ms) the cycle estimate reads: between ``CYCLE_START`` markers, or
    between bursts of negotiation and operation starts."""
    method, gaps = cadence_gaps(model.markers_us, model.spans, model.thresholds.cycle)
    c = model.cycle
    out: CadenceView = {
        "method": method,
        "gaps": len(gaps),
        "edges_ms": [],
        "counts": [],
        "cycle_ms": c.cycle_us / 1e3 if c and c.confident else None,  # a burst estimate is no cycle time
        "regularity": c.regularity if c else None,
    }
    if len(gaps):
        ms = np.asarray(gaps, np.float64) / 1e3
        top = float(np.percentile(ms, 99)) if len(ms) > 100 else float(ms.max())
        counts, edges = np.histogram(np.clip(ms, None, top), bins=HIST_BINS)
        out.update({"edges_ms": [float(e) for e in edges], "counts": [int(x) for x in counts]})
    return out
