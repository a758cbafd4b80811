"""The Dash app: ``create_app(store_dir, ...)`` builds it; nothing happens at import time.

Callbacks are thin: each calls one function below (:func:`poll_job`, :func:`run_options`, ...)
or :func:`dashboards.pages.render_page`, which the unit tests call without a browser. The page
uploads through the app's HTTP API (``assets/upload.js`` posts to ``/api/runs``,
:mod:`dashboards.api`): files stream to disk, never through a callback. Runs are made by worker
processes (:class:`dashboards.runs.RunLibrary`); the page polls every half second and shows the
stage and the share of bytes read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from dash import Dash, Input, Output, State, dcc, html, no_update

from analyzer import HvdAnalyzeError
from dashboards import api, compareview, stepview
from dashboards.api import Access
from dashboards.pages import PAGES, job_options, render_page
from dashboards.runs import RunLibrary, run_labels
from dashboards.uploads import Limits
from dashboards.worker import Budget

ASSETS = Path(__file__).parent / "assets"
STAGE_TEXT = {
    "queued": "Queued",
    "unpacking": "Unpacking the upload",
    "ingesting": "Ingesting",
    "analysing": "Analysing",
    "done": "Done",
    "failed": "Failed",
}


def poll_job(library: RunLibrary, run_id: str | None) -> dict[str, Any]:
    """What the status area shows for the job of ``run_id``: text, progress 0-1, finished, failed."""
    job = library.job(run_id) if run_id else None
    if job is None:
        return {"text": "", "progress": 0.0, "finished": True, "failed": False}
    stage = job["stage"]
    text = STAGE_TEXT.get(stage, stage)
    if stage == "ingesting" and job["progress"]:
        text += f" ({job['progress']:.0%})"
    if stage == "failed":
        text = f"Failed: {job['error']}"
    elif stage == "done":
        text = "Done: the run is ready."
    return {
        "text": text,
        "progress": 1.0 if stage == "done" else job["progress"],
        "finished": stage in ("done", "failed"),
        "failed": stage == "failed",
    }


def run_options(library: RunLibrary) -> list[dict[str, str]]:
    out = []
    runs = library.runs()
    labels = run_labels(runs)
    for meta in runs:
        status = meta["status"]
        suffix = "" if status == "done" else f" ({status})"
        out.append({"label": f"{labels[meta['id']]}{suffix}", "value": meta["id"]})
    return out


def rename_run(library: RunLibrary, run_id: str | None, name: str) -> tuple[list[dict[str, str]], str]:
    """Rename the selected run: the new run list and what the status line says."""
    if run_id is None:
        return run_options(library), "Choose a run first."
    try:
        new = library.rename(run_id, name)
    except (KeyError, HvdAnalyzeError) as exc:
        return run_options(library), f"Not renamed: {exc if isinstance(exc, HvdAnalyzeError) else 'no such run'}"
    return run_options(library), f"Renamed to {new}."


def delete_run(library: RunLibrary, run_id: str | None) -> tuple[list[dict[str, str]], str | None, str]:
    """Delete the selected run: the new run list, the run shown next, and the status line."""
    if run_id is None:
        return run_options(library), None, "Choose a run first."
    name = (library.meta(run_id) or {}).get("name", run_id)
    try:
        library.delete(run_id)
    except (KeyError, HvdAnalyzeError) as exc:
        return (
            run_options(library),
            run_id,
            f"Not deleted: {exc if isinstance(exc, HvdAnalyzeError) else 'no such run'}",
        )
    options = run_options(library)
    return options, options[0]["value"] if options else None, f"Deleted {name}."


def too_large(limits: Limits) -> str:
    """What an upload far over the limit is answered (the request body is refused unread)."""
    return (
        f"This upload is far over the limit of {limits.max_upload / 2**20:,.1f} MiB per file and was not read. Ingest "
        "it with `hvd-analyze ingest FILE -o STORE` and open the store with `hvd-analyze serve STORE`, or "
        "start the app with a larger --max-upload."
    )


def run_error(library: RunLibrary, run_id: str | None) -> str | None:
    meta = library.meta(run_id) if run_id else None
    return meta.get("error") if meta and meta["status"] == "failed" else None


def deep_link(args: Mapping[str, str], options: list[dict[str, str]]) -> dict[str, str | None]:
    """The run, page and job a URL's query (``?run=ID&page=steps&job=job2``) opens; unknown values
    fall back to the newest run and the overview."""
    runs = {o["value"] for o in options}
    run = args.get("run") if args.get("run") in runs else (options[0]["value"] if options else None)
    page = args.get("page") if args.get("page") in dict(PAGES) else "overview"
    return {"run": run, "page": page, "job": args.get("job") if run == args.get("run") else None}


def layout(library: RunLibrary) -> html.Div:
    options = run_options(library)
    limit = library.limits.max_upload
    return html.Div(
        [
            html.Header(
                [
                    html.H1("hvd-analyze"),
                    html.Span(
                        "Horovod timelines, NCCL and job logs: what is slow and what to change", className="muted"
                    ),
                ]
            ),
            html.Div(
                [
                    html.Aside(
                        [
                            html.Div(
                                [
                                    "Drop a timeline.json, .json.gz, NCCL/job logs or a .zip / .tar.gz of a run folder here, or ",
                                    html.A("choose files", id="upload-choose", role="button", tabIndex="0"),
                                    html.Br(),
                                    html.Span(
                                        f"up to {limit / 2**30:.1f} GiB per file"
                                        if limit >= 2**30
                                        else f"up to {limit / 2**20:.1f} MiB per file",
                                        className="muted",
                                    ),
                                ],
                                id="upload",
                                className="upload",
                                title="Click to choose files, or drop them here",
                            ),
                            html.Progress(id="progress", value="0", max="1", className="progress"),
                            html.Div(id="upload-status", role="status"),
                            html.H3("Runs"),
                            dcc.RadioItems(
                                id="run-list",
                                options=options,
                                value=options[0]["value"] if options else None,
                                className="runs",
                                labelStyle={"display": "block"},
                            ),
                            html.Div(
                                [
                                    dcc.Input(id="run-name", type="text", placeholder="new name", maxLength=120),
                                    html.Button("Rename", id="rename"),
                                    html.Button("Delete", id="delete", className="danger"),
                                ],
                                className="run-actions",
                            ),
                            dcc.ConfirmDialog(id="confirm-delete", message="Delete this run and what the app stored?"),
                            html.Div(id="run-action-status", role="status"),
                        ],
                        className="side",
                    ),
                    html.Main(
                        [
                            html.Div(
                                [
                                    html.Label("Job", htmlFor="job-select"),
                                    dcc.Dropdown(id="job-select", clearable=False, searchable=True),
                                    html.Span(
                                        "This run holds several jobs: each page shows the selected job only.",
                                        className="muted",
                                    ),
                                ],
                                id="job-bar",
                                className="job-bar",
                                style={"display": "none"},
                            ),
                            dcc.Tabs(
                                id="page", value="overview", children=[dcc.Tab(label=t, value=v) for v, t in PAGES]
                            ),
                            html.Div(id="downloads", className="downloads"),
                            html.Div(id="run-error", className="error", role="alert"),
                            dcc.Loading(html.Div(id="page-content"), type="dot"),
                        ]
                    ),
                ],
                className="layout",
            ),
            dcc.Interval(id="poll", interval=500, disabled=True),
            dcc.Store(id="job"),
            dcc.Store(id="step-spec", data="median"),
            dcc.Store(id="opened"),
            dcc.Store(id="linked"),
            dcc.Location(id="url", refresh=False),
        ]
    )


def create_app(
    store_dir: str | Path,
    stores: list[str] | None = None,
    paths: list[str] | None = None,
    limits: Limits | None = None,
    hosts: tuple[str, ...] = (),
    access: Access | None = None,
    budget: Budget | None = None,
) -> Dash:
    """The app over the runs in ``store_dir``; ``stores`` are existing run stores to show and
    ``paths`` files or folders to ingest as a new run (both in the background). The app answers
    only to the loopback names and ``hosts``, and to those ``access`` lets in (:mod:`dashboards.api`);
    ``budget`` bounds the worker processes that make runs."""
    library = RunLibrary(store_dir, limits, budget)
    for s in stores or []:
        library.register_store(s)
    if paths:
        library.submit_paths(paths)
    app = Dash(
        __name__, assets_folder=str(ASSETS), title="hvd-analyze", update_title="", suppress_callback_exceptions=True
    )
    # one request: several files (each within max_upload) or an archive; the body streams to disk
    app.server.config["MAX_CONTENT_LENGTH"] = library.limits.max_total + (1 << 20)
    app.server.register_error_handler(413, lambda _: (too_large(library.limits), 413, {"Content-Type": "text/plain"}))
    access = access or Access()
    api.install(
        app.server,
        library,
        Access(api.LOOPBACK | access.hosts | {h.lower() for h in hosts}, access.token, access.proxy_header),
    )

    app.layout = lambda: layout(library)
    app.library = library  # for tests and the CLI

    @app.callback(
        Output("upload-status", "children"),
        Output("progress", "value"),
        Output("poll", "disabled"),
        Output("run-list", "options"),
        Output("run-list", "value"),
        Output("upload-status", "className", allow_duplicate=True),
        Input("poll", "n_intervals"),
        State("job", "data"),
        prevent_initial_call=True,
    )
    def _poll(_: int, run_id: str | None) -> tuple[Any, ...]:
        st = poll_job(library, run_id)
        if not st["finished"]:
            return st["text"], str(st["progress"]), False, no_update, no_update, "ok"
        return (
            st["text"],
            str(st["progress"]),
            True,
            run_options(library),
            run_id or no_update,
            "error" if st["failed"] else "ok",
        )

    @app.callback(
        Output("job-select", "options"),
        Output("job-select", "value"),
        Output("job-bar", "style"),
        Input("run-list", "value"),
        State("opened", "data"),
    )
    def _jobs(run_id: str | None, opened: dict[str, Any] | None) -> tuple[Any, ...]:
        doc = library.document(run_id) if run_id and not run_error(library, run_id) else None
        options, first = job_options(doc)
        if opened and opened.get("run") == run_id and opened.get("job") in {o["value"] for o in options}:
            first = opened["job"]  # the job a deep link names
        return options, first, {"display": "flex"} if options else {"display": "none"}

    @app.callback(
        Output("run-list", "options", allow_duplicate=True),
        Output("run-list", "value", allow_duplicate=True),
        Output("page", "value"),
        Output("opened", "data"),
        Output("job", "data"),
        Output("poll", "disabled", allow_duplicate=True),
        Input("url", "search"),
        prevent_initial_call="initial_duplicate",
    )
    def _open(search: str | None) -> tuple[Any, ...]:
        # a link, or the page's upload (assets/upload.js points the address at the new run)
        args = {k: v[0] for k, v in parse_qs((search or "").lstrip("?")).items()}
        options = run_options(library)
        opened = deep_link(args, options)
        run = opened["run"]
        # a run still being made, or the page's own upload (which may have finished, or failed, already)
        watch = run is not None and (args.get("uploaded") == run or not poll_job(library, run)["finished"])
        pending = run if watch else None
        return options, opened["run"], opened["page"], opened, pending, pending is None

    # the address bar follows the run, page and job shown, so that it can be copied as a link
    app.clientside_callback(
        """(run, page, job) => {
            const q = new URLSearchParams();
            if (run) q.set("run", run);
            if (page) q.set("page", page);
            if (job) q.set("job", job);
            const search = q.toString() ? "?" + q.toString() : "";
            if (window.location.search !== search) {
                window.history.replaceState(null, "", window.location.pathname + search);
            }
            return search;
        }""",
        Output("linked", "data"),
        Input("run-list", "value"),
        Input("page", "value"),
        Input("job-select", "value"),
    )

    @app.callback(
        Output("run-list", "options", allow_duplicate=True),
        Output("run-action-status", "children"),
        Input("rename", "n_clicks"),
        State("run-list", "value"),
        State("run-name", "value"),
        prevent_initial_call=True,
    )
    def _rename(_: int, run_id: str | None, name: str | None) -> tuple[Any, ...]:
        return rename_run(library, run_id, name or "")

    @app.callback(
        Output("confirm-delete", "displayed"),
        Input("delete", "n_clicks"),
        State("run-list", "value"),
        prevent_initial_call=True,
    )
    def _ask_delete(_: int, run_id: str | None) -> bool:
        return run_id is not None

    @app.callback(
        Output("run-list", "options", allow_duplicate=True),
        Output("run-list", "value", allow_duplicate=True),
        Output("run-action-status", "children", allow_duplicate=True),
        Input("confirm-delete", "submit_n_clicks"),
        State("run-list", "value"),
        prevent_initial_call=True,
    )
    def _delete(_: int, run_id: str | None) -> tuple[Any, ...]:
        return delete_run(library, run_id)

    @app.callback(
        Output("page-content", "children"),
        Output("run-error", "children"),
        Input("run-list", "value"),
        Input("page", "value"),
        Input("job-select", "value"),
        Input("step-spec", "data"),
    )
    def _page(run_id: str | None, page: str, job: str | None, spec: str | None) -> tuple[Any, ...]:
        err = run_error(library, run_id)
        if err:
            return html.Div(), f"This run failed: {err}"
        if page == "step":
            return stepview.step_page(library, run_id, spec or "median"), None
        if page == "compare":
            return compareview.compare_page(library, run_id), None
        return render_page(page, library.document(run_id) if run_id else None, job), None

    stepview.register(app, library)
    compareview.register(app, library)

    return app
