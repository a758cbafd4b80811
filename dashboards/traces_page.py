"""The Ranks page's part for per-rank profiler traces: their table, figure and notes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html

from analyzer.render import trace_rows
from analyzer.render.trace_figures import rank_trace_bars
from analyzer.report import RankTracesDoc


def trace_parts(sections: Sequence[RankTracesDoc], table: Any) -> list[Any]:
    """For each job's traces: a summary line, the per-rank figure and table, and what the set leaves out;
    ``table``: the page's table builder (with its CSV export)."""
    parts: list[Any] = []
    for s in sections:
        parts += [
            html.H3("Per-rank profiler traces"),
            html.P(trace_rows.summary_line(s), className="explain", id="trace-summary"),
            dcc.Graph(id="trace-bars", figure=rank_trace_bars(s), config={"displaylogo": False}, className="fig"),
            table("trace-table", trace_rows.HEADER, trace_rows.rows(s), sort_action="native", page_size=32),
        ]
        if notes := trace_rows.notes(s):
            parts.append(html.Ul([html.Li(n) for n in notes], id="trace-notes"))
    return parts
