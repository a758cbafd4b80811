"""The Step view's chart: one step of a timeline as a Gantt chart, a row per tensor (the app's Step
view, :mod:`dashboards.stepview`). A plotly figure, as those of :mod:`analyzer.render.figures`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import plotly.graph_objects as go

from analyzer.render.figures import LAYOUT

#: Span names grouped into the phases a step view colours (the rest: "other").
_PHASE_COLOURS = (
    ("NEGOTIATE", "#e67e22"),
    ("QUEUE", "#95a5a6"),
    ("MEMCPY", "#8e44ad"),
    ("WAIT_FOR", "#bdc3c7"),
    ("NCCL_", "#3b6ea5"),
    ("GLOO_", "#3b6ea5"),
    ("MPI_", "#3b6ea5"),
    ("ALLREDUCE", "#1f3f66"),
    ("BROADCAST", "#1f3f66"),
    ("ALLGATHER", "#1f3f66"),
)


def step_gantt(
    spans: Sequence[tuple[int, str, int, int | None]],
    ticks: Sequence[tuple[int, int, int]],
    names: Mapping[int, str],
    title: str,
) -> go.Figure:
    """One row per tensor: its spans ``(pid, name, start_us, end_us)`` as bars from the step's start,
    coloured by phase, and the rank ticks ``(pid, rank, ts_us)`` as marks labelled with the rank."""
    t0 = min((s[2] for s in spans), default=0)
    order = sorted(
        {s[0] for s in spans} | {t[0] for t in ticks}, key=lambda p: min((s[2] for s in spans if s[0] == p), default=0)
    )
    # tensor and span names come from the input: Plotly reads its own pseudo-HTML in labels and hover
    # text (<a href> becomes a working link), so they are escaped as text
    label = {p: f"{escape(str(names.get(p, p)))} [{p}]" for p in order}
    groups: dict[str, list[tuple[int, str, int, int]]] = {}
    for pid, name, start, end in spans:
        if end is None:
            continue
        phase = next((prefix.rstrip("_") for prefix, _ in _PHASE_COLOURS if name.startswith(prefix)), "other")
        groups.setdefault(phase, []).append((pid, name, start, end))
    colour = dict((prefix.rstrip("_"), c) for prefix, c in _PHASE_COLOURS) | {"other": "#7f8c8d"}
    traces: list[Any] = [
        go.Bar(
            y=[label[p] for p, *_ in rows],
            x=[(e - s) / 1e3 for _, _, s, e in rows],
            base=[(s - t0) / 1e3 for _, _, s, _ in rows],
            orientation="h",
            name=phase,
            marker_color=colour[phase],
            customdata=[escape(n) for _, n, _, _ in rows],
            hovertemplate="%{customdata}: %{base:.2f} ms + %{x:.2f} ms<extra>%{y}</extra>",
        )
        for phase, rows in groups.items()
    ]
    if ticks:
        traces.append(
            go.Scatter(
                y=[label[p] for p, _, _ in ticks],
                x=[(ts - t0) / 1e3 for _, _, ts in ticks],
                mode="markers+text",
                text=[str(r) for _, r, _ in ticks],
                textposition="top center",
                textfont={"size": 9},
                marker={"symbol": "line-ns-open", "size": 12, "color": "#c0392b"},
                name="rank ready",
                hovertemplate="rank %{text} ready at %{x:.2f} ms<extra>%{y}</extra>",
            )
        )
    fig = go.Figure(traces)
    fig.update_layout(
        title=title,
        barmode="overlay",
        xaxis_title="ms from the step's first span",
        yaxis={"autorange": "reversed", "automargin": True},
        **{**LAYOUT, "height": max(320, 60 + 22 * len(order))},
    )
    return fig
