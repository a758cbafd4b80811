"""The Compare page: any two runs of the library side by side (:mod:`analyzer.compare`), with both
step-time distributions overlaid, where the change comes from, and the fix check.

The run selected in the run list is AFTER by default and the run made before it BEFORE; both can be
changed on the page. A run made before the app kept step times reads them from its store.
"""

from __future__ import annotations

from typing import Any

from dash import Dash, Input, Output, dcc, html

from analyzer import Context
from analyzer.compare import Side, compare_sides, step_parts, step_samples
from analyzer.render import figures
from analyzer.render.compare import compare_sections, side_line
from dashboards.pages import graph, none_page, table
from dashboards.runs import RunLibrary, run_labels
from dashboards.work import OLDER_REPORT, report_of


def _side(library: RunLibrary, run_id: str, label: str) -> Side | str:
    """Run ``run_id`` as a side of the comparison, or why it cannot be one."""
    meta = library.meta(run_id)
    if meta is None or meta["status"] != "done":
        return f"{label}: run {run_id} is not analysed (yet)"
    doc = library.document(run_id)
    if doc is None:
        return f"{label}: run {meta['name']} has no analysis"
    report = report_of(doc)
    if report is None:
        return f"{label}: {OLDER_REPORT}"
    steps = doc.get("steps_s")
    if steps is None:  # made by an older version of the app
        store = library.store_of(run_id)
        if store is None:
            return f"{label}: the store of run {meta['name']} is gone"
        steps = step_samples(Context(store))
    parts = doc.get("step_parts")
    if parts is None and (store := library.store_of(run_id)) is not None:
        parts = step_parts(Context(store))
    return Side(label, meta["name"], report, steps, parts=parts or {})


def compare_content(library: RunLibrary, before: str | None, after: str | None) -> html.Div:
    """The comparison of run ``after`` with run ``before``."""
    if not before or not after:
        return none_page("Choose two runs to compare: upload the run before a change and the run after it.")
    sides = [_side(library, before, "BEFORE"), _side(library, after, "AFTER")]
    errors = [s for s in sides if isinstance(s, str)]
    if errors:
        return none_page("; ".join(errors))
    side_b, side_a = sides
    assert isinstance(side_b, Side) and isinstance(side_a, Side)
    doc = compare_sides(side_b, side_a)
    status = {"faster": "healthy", "slower": "degraded"}.get(doc["steps"]["direction"], "")
    parts: list[Any] = [
        html.Ul([html.Li(side_line(doc["before"])), html.Li(side_line(doc["after"]))]),
        html.Div(html.H2(doc["headline"]), className=f"verdict {status}", id="compare-headline"),
        graph(figures.compare_overlay(doc["steps"]), "compare-overlay"),
    ]
    for sec in compare_sections(doc):
        parts.append(html.H3(sec.title))
        tid = sec.slug if sec.slug == "fix-check" else f"compare-{sec.slug}"
        parts.append(table(tid, sec.header, sec.rows) if sec.rows else html.P("(nothing)", id=tid, className="muted"))
        parts += [html.P(n, className="muted") for n in sec.notes]
    return html.Div(parts)


def compare_page(library: RunLibrary, run_id: str | None) -> html.Div:
    """Two run pickers (BEFORE: the run made before ``run_id``; AFTER: ``run_id``) and their comparison."""
    runs = [r for r in library.runs() if r["status"] == "done"]  # newest first
    labels = run_labels(runs)
    options = [{"label": labels[r["id"]], "value": r["id"]} for r in runs]
    ids = [r["id"] for r in runs]
    after = run_id if run_id in ids else (ids[0] if ids else None)
    before = ids[ids.index(after) + 1] if after in ids and ids.index(after) + 1 < len(ids) else None
    pickers = html.Div(
        [
            html.Label("Before", htmlFor="compare-before"),
            dcc.Dropdown(id="compare-before", options=options, value=before, clearable=False),
            html.Label("After", htmlFor="compare-after"),
            dcc.Dropdown(id="compare-after", options=options, value=after, clearable=False),
        ],
        className="compare-pickers",
    )
    return html.Div([pickers, html.Div(compare_content(library, before, after), id="compare-result")])


def register(app: Dash, library: RunLibrary) -> None:
    @app.callback(
        Output("compare-result", "children"),
        Input("compare-before", "value"),
        Input("compare-after", "value"),
        prevent_initial_call=True,
    )
    def _compare(before: str | None, after: str | None) -> html.Div:
        return compare_content(library, before, after)
