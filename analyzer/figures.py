"""Plotly figures of a report's timeline section, shared by the HTML report and the dashboard.

Pure functions: a ``timeline`` section dict (:mod:`analyzer.summary`) in, a
``plotly.graph_objects.Figure`` out, so the two views cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

import plotly.graph_objects as go

_LAYOUT = {"template": "plotly_white", "height": 320, "margin": {"l": 60, "r": 20, "t": 50, "b": 50}}


def step_histogram(section: Mapping[str, Any]) -> go.Figure:
    """Steady-state step times (ms), with the median marked."""
    steps = section["steps"]
    edges = [e * 1e3 for e in steps["histogram"]["edges_s"]]
    counts = steps["histogram"]["counts"]
    fig = go.Figure(go.Bar(x=[(a + b) / 2 for a, b in pairwise(edges)], y=counts,
                           width=[b - a for a, b in pairwise(edges)],
                           marker_color="#3b6ea5", name="steps",
                           hovertemplate="%{x:.1f} ms: %{y} steps<extra></extra>"))
    if steps["median_s"] is not None:
        fig.add_vline(x=steps["median_s"] * 1e3, line_dash="dash", line_color="#c0392b",
                      annotation_text=f"median {steps['median_s'] * 1e3:.1f} ms")
    fig.update_layout(title=f"Step time ({steps['steady']} steady steps of {steps['count']})",
                      xaxis_title="step time (ms)", yaxis_title="steps", bargap=0.05, **_LAYOUT)
    return fig


def rank_lateness(section: Mapping[str, Any]) -> go.Figure:
    """Median and p90 lateness behind the first-ready rank, per rank."""
    ranks = section["ranks"]["ranks"]
    x = [str(r["rank"]) for r in ranks]
    fig = go.Figure([
        go.Bar(x=x, y=[r["median_lateness_ms"] for r in ranks], name="median", marker_color="#3b6ea5"),
        go.Bar(x=x, y=[r["p90_lateness_ms"] for r in ranks], name="p90", marker_color="#9db7d5"),
    ])
    scope = {"steady": "steady-state negotiations", "first_negotiations": "first negotiations only (warm-up)",
             "none": "no rank ticks in this file"}[section["ranks"]["scope"]]
    fig.update_layout(title=f"Rank lateness behind the first-ready rank ({scope})", xaxis_title="rank",
                      yaxis_title="ms", barmode="group", **_LAYOUT)
    return fig


def phase_breakdown(section: Mapping[str, Any]) -> go.Figure:
    """Median time per steady step of each phase (union across tensors)."""
    phases = list(reversed(section["phases"]))
    fig = go.Figure(go.Bar(y=[p["phase"] for p in phases], x=[p["median_ms"] for p in phases], orientation="h",
                           marker_color="#3b6ea5",
                           text=[f"{p['share_of_step']:.0%}" for p in phases], textposition="auto",
                           hovertemplate="%{y}: %{x:.2f} ms per step<extra></extra>"))
    fig.update_layout(title="Where a step goes (median per step; phases overlap)", xaxis_title="ms per step",
                      **{**_LAYOUT, "height": max(240, 40 + 26 * len(phases))})
    return fig


def all_figures(section: Mapping[str, Any]) -> list[go.Figure]:
    figs = []
    if section["steps"]["steady"]:
        figs.append(step_histogram(section))
    if section["phases"]:
        figs.append(phase_breakdown(section))
    if section["ranks"]["ranks"]:
        figs.append(rank_lateness(section))
    return figs
