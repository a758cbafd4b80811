"""The app's figures of per-rank profiler traces (plotly), drawn from the report's ``rank_traces`` section."""

from __future__ import annotations

import plotly.graph_objects as go

from analyzer.render.figures import LAYOUT, _title
from analyzer.report.rank_types import RankTracesDoc


def rank_trace_bars(section: RankTracesDoc) -> go.Figure:
    """Per rank: its median step and how late it joined the collectives (a straggler stands out red)."""
    rows = section["ranks"]
    x = [f"{r['rank']}" + (f" ({r['host']})" if r["host"] else "") for r in rows]
    fig = go.Figure(
        [
            go.Bar(x=x, y=[r["median_step_ms"] for r in rows], name="median step (ms)", marker_color="#9db4cf"),
            go.Bar(
                x=x,
                y=[r["lateness_ms"] or 0.0 for r in rows],
                name="late by (ms, median)",
                marker_color=["#c0392b" if r["named"] else "#3b6ea5" for r in rows],
            ),
        ]
    )
    fig.update_layout(
        title=_title("Per-rank traces: step time and lateness per rank", section["source"]),
        xaxis_title="rank",
        yaxis_title="ms",
        barmode="group",
        **LAYOUT,
    )
    return fig
