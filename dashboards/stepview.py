"""The app's step view: one step of a run's main timeline as a Gantt chart, per tensor its
NEGOTIATE / QUEUE / MEMCPY / collective spans and every rank's ready tick, and the steps as a
Chrome trace to download. The step is read from the run's store by the row groups that hold it
(:func:`analyzer.step_tables`), so a step of a multi-GB timeline draws as fast as a small one's.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from dash import dcc, html

from analyzer import AnalysisConfig, Context, HvdAnalyzeError, main_timeline, step_tables, step_window
from analyzer.render import gantt
from dashboards.runs import RunLibrary

CHOICES = [{"label": "the median step", "value": "median"}, {"label": "the slowest step", "value": "slowest"}]


def step_controls(spec: str) -> html.Div:
    """The step picker: median, slowest, or a step number (also set by a click on the step chart)."""
    keyword = spec if spec in ("median", "slowest") else None
    return html.Div(
        [
            html.Label("Step", htmlFor="step-pick"),
            dcc.Dropdown(id="step-pick", options=CHOICES, value=keyword, clearable=True, placeholder="pick..."),
            dcc.Input(
                id="step-number",
                type="number",
                min=0,
                step=1,
                placeholder="or a step number",
                value=None if keyword else _number(spec),
            ),
            html.Button("Show", id="step-go"),
            html.Span("Click a point of the step chart (Steps page) to open that step here.", className="muted"),
        ],
        className="step-controls",
    )


def _number(spec: str) -> int | None:
    head = spec.split(":")[0]
    return int(head) if head.isdigit() else None


def step_view(library: RunLibrary, run_id: str | None, spec: str) -> html.Div:
    """The Gantt chart of step ``spec`` (``median``, ``slowest``, or a number) of the run's main timeline."""
    store = library.store_of(run_id) if run_id else None
    if store is None or run_id is None:
        return html.Div(html.P("Choose a finished run with a Horovod timeline."), className="empty")
    try:
        entry = main_timeline(store, None, "this run")
        ctx = Context(store, AnalysisConfig(memory_budget=library.limits.memory_budget))
        window = step_window(ctx, entry, spec if spec in ("median", "slowest") else f"{_number(spec) or 0}")
        tables = step_tables(store, entry, window)
    except HvdAnalyzeError as exc:
        return html.Div(html.P(str(exc)), className="empty", id="step-error")
    sp = tables.spans.select(["pid", "name", "start_us", "end_us"]).to_pydict()
    tk = tables.ticks.select(["pid", "rank", "ts_us"]).to_pydict()
    spans = list(zip(sp["pid"], sp["name"], sp["start_us"], sp["end_us"], strict=True))
    ticks = list(zip(tk["pid"], tk["rank"], tk["ts_us"], strict=True))
    which = {"median": "the median step", "slowest": "the slowest step"}.get(spec, "step")
    title = f"Step {window.first} ({which}): {len(spans)} spans, {len(ticks)} rank ticks"
    link = f"api/runs/{quote(run_id)}/slice?steps={window.first}:{window.last + 1}"
    parts: list[Any] = [
        dcc.Graph(
            figure=gantt.step_gantt(spans, ticks, tables.names, title),
            id="step-gantt",
            config={"displaylogo": False},
        ),
        html.A(
            f"Download step {window.first} as a Chrome trace (Perfetto, chrome://tracing)",
            href=link,
            id="step-slice",
            download=f"hvd-analyze-{run_id}-step-{window.first}.json",
        ),
    ]
    if not ticks:
        parts.insert(
            1,
            html.P(
                "No rank ticks in this step: the response cache was on (HOROVOD_CACHE_CAPACITY=0 "
                "records them every step).",
                className="note",
            ),
        )
    return html.Div(parts, id="step-view", **{"data-step": str(window.first)})


def step_page(library: RunLibrary, run_id: str | None, spec: str) -> html.Div:
    """The Step view page: the picker and the step's Gantt chart."""
    return html.Div([step_controls(spec), step_view(library, run_id, spec)], id="page-step")


def downloads(run_id: str | None) -> list[Any]:
    """Links to a finished run's reports and its slowest step as a Chrome trace."""
    if not run_id:
        return []
    base = f"api/runs/{quote(run_id)}"
    links = [
        ("report.json", f"{base}/report.json", "dl-json"),
        ("report.html", f"{base}/report.html", "dl-html"),
        ("slowest step (Chrome trace)", f"{base}/slice?steps=slowest", "dl-slice"),
    ]
    return ["Download: ", *[html.A(text, href=href, id=i, download="", className="dl") for text, href, i in links]]


def register(app: Any, library: RunLibrary) -> None:
    """The step view's callbacks: a click on the step chart opens that step; the picker changes it."""
    from dash import Input, Output, State, no_update

    @app.callback(
        Output("step-spec", "data", allow_duplicate=True),
        Output("page", "value", allow_duplicate=True),
        Input("step-series", "clickData"),
        prevent_initial_call=True,
    )
    def _clicked(click: dict[str, Any] | None) -> tuple[Any, ...]:
        points = (click or {}).get("points") or []
        if not points:
            return no_update, no_update
        return str(int(points[0]["x"])), "step"

    @app.callback(
        Output("step-spec", "data", allow_duplicate=True),
        Input("step-go", "n_clicks"),
        Input("step-pick", "value"),
        State("step-number", "value"),
        prevent_initial_call=True,
    )
    def _picked(_: int | None, pick: str | None, number: int | None) -> Any:
        from dash import ctx

        if ctx.triggered_id == "step-pick" and pick:
            return pick
        return str(int(number)) if number is not None else (pick or no_update)

    @app.callback(Output("downloads", "children"), Input("run-list", "value"))
    def _downloads(run_id: str | None) -> list[Any]:
        meta = library.meta(run_id) if run_id else None
        return downloads(run_id) if meta and meta["status"] == "done" else []
