"""Plotly figures of a report, shared by the HTML report and the dashboard.

Pure functions: a ``timeline`` section dict (:mod:`analyzer.report.timeline_section`), a view
(:mod:`analyzer.report.views`) or the ``nccl`` section in, a ``plotly.graph_objects.Figure`` out,
so the two cannot disagree. Figures draw numbers the analyzer computed; they compute none.
A view's ``note`` (what was reduced to keep the figure small) is shown under the title.
"""

from __future__ import annotations

from collections import Counter
from html import escape
from itertools import pairwise

import plotly.graph_objects as go

from analyzer.compare.types import StepShiftDoc
from analyzer.report.types import NcclSection, TimelineSection
from analyzer.report.view_types import (
    BatchSizesView,
    CadenceView,
    HeatmapView,
    RankBoxView,
    StepSeriesView,
)

LAYOUT = {"template": "plotly_white", "height": 320, "margin": {"l": 60, "r": 20, "t": 50, "b": 50}}


def step_histogram(section: TimelineSection) -> go.Figure:
    """Steady-state step times (ms), with the median marked."""
    steps = section["steps"]
    edges = [e * 1e3 for e in steps["histogram"]["edges_s"]]
    counts = steps["histogram"]["counts"]
    fig = go.Figure(
        go.Bar(
            x=[(a + b) / 2 for a, b in pairwise(edges)],
            y=counts,
            width=[b - a for a, b in pairwise(edges)],
            marker_color="#3b6ea5",
            name="steps",
            hovertemplate="%{x:.1f} ms: %{y} steps<extra></extra>",
        )
    )
    if steps["median_s"] is not None:
        fig.add_vline(
            x=steps["median_s"] * 1e3,
            line_dash="dash",
            line_color="#c0392b",
            annotation_text=f"median {steps['median_s'] * 1e3:.1f} ms",
        )
    fig.update_layout(
        title=f"Step time ({steps['steady']} steady steps of {steps['count']})",
        xaxis_title="step time (ms)",
        yaxis_title="steps",
        bargap=0.05,
        **LAYOUT,
    )
    return fig


def compare_overlay(steps: StepShiftDoc) -> go.Figure:
    """Both runs' step-time distributions over the same bins (% of each run's steps), medians marked."""
    edges = steps["overlay"]["edges_ms"]
    fig = go.Figure()
    for name, shares, colour in (
        ("before", steps["overlay"]["before_share"], "#3b6ea5"),
        ("after", steps["overlay"]["after_share"], "#c0392b"),
    ):
        fig.add_bar(
            x=[(a + b) / 2 for a, b in pairwise(edges)],
            y=[v * 100 for v in shares],
            width=[b - a for a, b in pairwise(edges)],
            name=name,
            marker_color=colour,
            opacity=0.55,
            hovertemplate=name + " %{x:.1f} ms: %{y:.0f}% of steps<extra></extra>",
        )
    if (m := steps["median"]) is not None:
        for x, colour in ((m["before_ms"], "#3b6ea5"), (m["after_ms"], "#c0392b")):
            fig.add_vline(x=x, line_dash="dash", line_color=colour)
    fig.update_layout(
        title="Step time: before and after",
        xaxis_title="step time (ms)",
        yaxis_title="% of steps",
        barmode="overlay",
        **LAYOUT,
    )
    return fig


def rank_lateness(section: TimelineSection) -> go.Figure:
    """Median and p90 lateness behind the first-ready rank, per rank."""
    ranks = section["ranks"]["ranks"]
    x = [str(r["rank"]) for r in ranks]
    fig = go.Figure(
        [
            go.Bar(x=x, y=[r["median_lateness_ms"] for r in ranks], name="median", marker_color="#3b6ea5"),
            go.Bar(x=x, y=[r["p90_lateness_ms"] for r in ranks], name="p90", marker_color="#9db7d5"),
        ]
    )
    scope = {
        "steady": "steady-state negotiations",
        "first_negotiations": "first negotiations only (warm-up)",
        "none": "no rank ticks in this file",
    }[section["ranks"]["scope"]]
    fig.update_layout(
        title=f"Rank lateness behind the first-ready rank ({scope})",
        xaxis_title="rank",
        yaxis_title="ms",
        barmode="group",
        **LAYOUT,
    )
    return fig


def phase_breakdown(section: TimelineSection) -> go.Figure:
    """Median time per steady step of each phase (union across tensors)."""
    phases = list(reversed(section["phases"]))
    fig = go.Figure(
        go.Bar(
            y=[escape(p["phase"]) for p in phases],  # activity names come from the input
            x=[p["median_ms"] for p in phases],
            orientation="h",
            marker_color="#3b6ea5",
            text=[f"{p['share_of_step']:.0%}" for p in phases],
            textposition="auto",
            hovertemplate="%{y}: %{x:.2f} ms per step<extra></extra>",
        )
    )
    fig.update_layout(
        title="Where a step goes (median per step; phases overlap)",
        xaxis_title="ms per step",
        **{**LAYOUT, "height": max(240, 40 + 26 * len(phases))},
    )
    return fig


def _title(text: str, note: str | None) -> dict[str, str]:
    return {"text": text + (f"<br><sup>{escape(note)}</sup>" if note else "")}


def step_series(view: StepSeriesView, median_s: float | None = None, p90_s: float | None = None) -> go.Figure:
    """Step time over the run; warm-up and incomplete-window steps in grey, median and p90 marked,
    the slow stretches of ``timeline.slowdown`` shaded with their rise over the steps before."""
    steady = view["steady"]
    fig = go.Figure(
        go.Scattergl(
            x=view["step"],
            y=view["ms"],
            mode="markers",
            name="steps",
            marker={"size": 5, "color": ["#3b6ea5" if s else "#aab" for s in steady]},
            hovertemplate="step %{x}: %{y:.1f} ms<extra></extra>",
        )
    )
    for value, label, dash in ((median_s, "median", "dash"), (p90_s, "p90", "dot")):
        if value is not None:
            fig.add_hline(
                y=value * 1e3, line_dash=dash, line_color="#c0392b", annotation_text=f"{label} {value * 1e3:.1f} ms"
            )
    baseline = view.get("baseline_ms") or 0.0  # set whenever there are slow stretches
    for g in view.get("slow", []) if baseline else []:
        fig.add_vrect(
            x0=g["first"] - 0.5,
            x1=g["last"] + 0.5,
            fillcolor="#e67e22",
            opacity=0.15,
            line_width=0,
            annotation_text=f"slow: {g['ms']:.1f} ms (+{g['ms'] / baseline - 1:.0%})",
            annotation_position="top left",
        )
    fig.update_layout(
        title=_title("Step time over the run", view["note"]),
        xaxis_title="step",
        yaxis_title="step time (ms)",
        **LAYOUT,
    )
    return fig


def lateness_box(view: RankBoxView) -> go.Figure:
    """Per-rank lateness behind the first-ready rank: box q1-q3, median, whiskers p5/p95."""
    rows = view["ranks"]
    fig = go.Figure(
        go.Box(
            x=[str(r["rank"]) for r in rows],
            q1=[r["q1"] for r in rows],
            median=[r["median"] for r in rows],
            q3=[r["q3"] for r in rows],
            lowerfence=[r["p5"] for r in rows],
            upperfence=[r["p95"] for r in rows],
            marker_color="#3b6ea5",
            name="lateness",
            boxpoints=False,
        )
    )
    fig.update_layout(
        title=_title("Lateness per rank (box q1-q3, whiskers p5/p95)", view["note"]),
        xaxis_title="rank",
        yaxis_title="ms behind the first-ready rank",
        **LAYOUT,
    )
    return fig


def rank_heatmap(view: HeatmapView, step_ms: float | None = None) -> go.Figure:
    """Mean lateness per rank (rows) and step (columns). The colours start at 0 and reach full red
    at a quarter of the median step ``step_ms`` (or the largest lateness, if more): a healthy run's
    0.1-0.3 ms is pale, not solid red as a scale fitted to the data made it."""
    top = max((v for row in view["z"] for v in row if v is not None), default=0.0)
    fig = go.Figure(
        go.Heatmap(
            z=view["z"],
            x=[str(s) for s in view["steps"]],
            y=[str(r) for r in view["ranks"]],
            colorscale="Reds",
            zmin=0,
            zmax=max(top, 0.25 * step_ms if step_ms else 0.0, 1e-3),
            colorbar={"title": "ms"},
            hovertemplate="rank %{y}, step %{x}: %{z:.1f} ms<extra></extra>",
        )
    )
    fig.update_layout(
        title=_title("Lateness per rank and step", view["note"]),
        xaxis_title="step",
        yaxis_title="rank",
        xaxis_type="category",
        yaxis_type="category",
        **{**LAYOUT, "height": max(320, min(900, 60 + 14 * len(view["ranks"])))},
    )
    return fig


def batch_size_histogram(view: BatchSizesView) -> go.Figure:
    """Fused batch sizes (log bins) against the fusion threshold estimate."""
    edges = view["edges_bytes"]
    fig = go.Figure(
        go.Bar(
            x=[(a * b) ** 0.5 for a, b in pairwise(edges)],
            y=view["counts"],
            width=[b - a for a, b in pairwise(edges)],
            marker_color="#3b6ea5",
            name="batches",
            hovertemplate="%{x:.3s}B: %{y} batches<extra></extra>",
        )
    )
    for value, label in (
        (view["threshold_lower_bytes"], "threshold >="),
        (view["threshold_upper_bytes"], "threshold <="),
    ):
        if value:
            fig.add_vline(
                x=value, line_dash="dash", line_color="#c0392b", annotation_text=f"{label} {value / 2**20:.1f} MiB"
            )
    fig.update_layout(
        title=_title(f"Fused batch sizes ({view['batches']} steady batches)", view["threshold_text"]),
        xaxis_title="bytes per batch",
        yaxis_title="batches",
        xaxis_type="log",
        **LAYOUT,
    )
    return fig


def cadence_histogram(view: CadenceView) -> go.Figure:
    """Gaps between cycles (markers) or activity bursts, with the cycle estimate."""
    edges = view["edges_ms"]
    fig = go.Figure(
        go.Bar(
            x=[(a + b) / 2 for a, b in pairwise(edges)],
            y=view["counts"],
            width=[b - a for a, b in pairwise(edges)],
            marker_color="#3b6ea5",
            name="gaps",
            hovertemplate="%{x:.2f} ms: %{y} gaps<extra></extra>",
        )
    )
    if view["cycle_ms"] is not None:
        fig.add_vline(
            x=view["cycle_ms"],
            line_dash="dash",
            line_color="#c0392b",
            annotation_text=f"cycle {view['cycle_ms']:.2f} ms",
        )
    what = "CYCLE_START markers" if view["method"] == "markers" else "activity bursts"
    fig.update_layout(
        title=f"Cycle cadence: gaps between {what} ({view['gaps']})",
        xaxis_title="gap (ms)",
        yaxis_title="gaps",
        **LAYOUT,
    )
    return fig


#: Transports that are a problem where RDMA was expected: the socket fallback's network
PROBLEM_TRANSPORTS = ("network Socket",)


def transport_matrix(nccl: NcclSection) -> go.Figure:
    """Processes per host (rows) and transport (columns), from NCCL's connection lines and the network
    each process chose. The socket network is drawn in red, the others in blue, so the problem is
    the loudest cell, not the palest."""
    uses = Counter(
        (p["host"] or "?", t)
        for p in nccl["processes"]
        for t in {*p["transports"], *([f"network {p['network']}"] if p["network"] else [])}
    )
    hosts = sorted({h for h, _ in uses} | {p["host"] or "?" for p in nccl["processes"]})
    transports = sorted({t for _, t in uses})
    z = [[uses[h, t] for t in transports] for h in hosts]  # one pass over the processes, not one per cell
    traces = []
    for problem, scale in ((False, "Blues"), (True, "Reds")):
        masked = [
            [v if (t in PROBLEM_TRANSPORTS) == problem and v else None for v, t in zip(row, transports, strict=True)]
            for row in z
        ]
        traces.append(
            go.Heatmap(
                z=masked,
                x=transports,
                y=[escape(h) for h in hosts],
                colorscale=scale,
                zmin=0,
                zmax=max((v for row in z for v in row), default=1),
                showscale=False,
                text=[["" if v is None else str(v) for v in row] for row in masked],  # an empty cell, not "null"
                texttemplate="%{text}",
                hovertemplate="%{y}: %{z} processes use %{x}<extra></extra>",
            )
        )
    fig = go.Figure(traces)
    fig.update_layout(
        title="NCCL transports per host (processes; the socket network in red)",
        xaxis_type="category",
        yaxis_type="category",
        **{**LAYOUT, "height": max(240, min(900, 90 + 28 * len(hosts)))},
    )
    return fig
