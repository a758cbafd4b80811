"""The content of each page of a run, from its analysis document (pure: no I/O, no callbacks).

Every number comes from the analyzer (the report document and :mod:`analyzer.report.views`); every
figure is built by :mod:`analyzer.render.figures`, the functions the HTML report uses. User strings
(file and tensor names, hosts, log lines) only ever go into component children or table
cells, which Dash renders as text, never as HTML. Uploaded files already carry the user's names
in the document (:func:`dashboards.work.relabel`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dash import dash_table, dcc, html

from analyzer import AnalysisReport, Finding
from analyzer.render import figures, nccl_rows
from analyzer.render.base import export_lines, fixed, impact_text, verdict_text
from analyzer.render.sections import fusion_line, noise_line, steps_line, unlisted_line, window_line
from analyzer.report import TimelineSection, TimelineViews, report_for_job
from dashboards.traces_page import trace_parts
from dashboards.tuning import tuning
from dashboards.work import OLDER_REPORT, AnalysisDocument, report_of

PAGES = (
    ("overview", "Overview"),
    ("steps", "Steps"),
    ("ranks", "Ranks"),
    ("phases", "Phases & fusion"),
    ("nccl", "NCCL"),
    ("step", "Step view"),
    ("compare", "Compare"),
)
_TABLE_STYLE = {
    "style_table": {"overflowX": "auto"},
    "style_cell": {"fontSize": "13px", "textAlign": "left", "whiteSpace": "normal", "height": "auto"},
    "style_header": {"fontWeight": "bold"},
}


def graph(fig: Any, gid: str) -> dcc.Graph:
    return dcc.Graph(id=gid, figure=fig, config={"displaylogo": False}, className="fig")


def table(tid: str, header: tuple[str, ...], rows: Sequence[tuple[str, ...]], **extra: Any) -> Any:
    """A table with an Export button that downloads it as CSV (every row, not only the page shown)."""
    cols = [{"name": h, "id": f"c{i}"} for i, h in enumerate(header)]
    data = [{f"c{i}": v for i, v in enumerate(r)} for r in rows]
    return dash_table.DataTable(
        id=tid, columns=cols, data=data, export_format="csv", export_headers="display", **_TABLE_STYLE, **extra
    )


@dataclass(frozen=True, slots=True)
class Shown:
    """What a page shows: the report (of the selected job) and the views of its timelines."""

    report: AnalysisReport
    views: dict[str, TimelineViews] = field(default_factory=dict)


def _main(doc: Shown) -> tuple[TimelineSection | None, TimelineViews | None]:
    if not doc.report.timelines:
        return None, None
    section = doc.report.timelines[0]
    return section, doc.views.get(section["input_id"])


def none_page(text: str) -> html.Div:
    return html.Div(html.P(text), className="empty")


# overview -----------------------------------------------------------------------------
def finding_card(f: Finding, i: int) -> html.Div:
    evidence = []
    for e in f.evidence:
        where = "; ".join(str(s) for s in e.sources)
        evidence.append(html.Li([e.summary, html.Span(f" [{where}]", className="muted") if where else None]))
    env = "\n".join(export_lines(s.env for s in f.suggestions))
    body: list[Any] = [
        html.Div([html.Span(f.severity.label, className="sev"), html.Code(f.code), " ", html.Strong(f.title)]),
        html.P(f.summary),
        html.P([html.Strong("Impact: "), impact_text(f)]),
    ]
    if f.ranks:
        body.append(html.P([html.Strong("Ranks: "), ", ".join(map(str, f.ranks))]))
    if f.hosts:
        body.append(html.P([html.Strong("Hosts: "), ", ".join(f.hosts)]))
    if evidence:
        body.append(html.Ul(evidence))
    body += [html.P([html.Strong("Try: "), s.action]) for s in f.suggestions]
    if env:
        body.append(
            html.Div([html.Pre(env, id=f"env-{i}"), dcc.Clipboard(target_id=f"env-{i}", title="copy")], className="env")
        )
    return html.Div(body, className=f"finding {f.severity.label}", **{"data-code": f.code})


def verdict_box(report: AnalysisReport) -> html.Section:
    """What to read first: the status, the key numbers, the one thing to do, the checks passed."""
    v = report.verdict()
    t = verdict_text(v)
    body: list[Any] = [html.H3(t.headline), *(html.P(line) for line in (t.numbers, t.action) if line)]
    if t.passed:
        body += [html.P(t.passed_head + ":"), html.Ul([html.Li(c) for c in t.passed])]
    if t.exports:
        body.append(
            html.Div(
                [
                    html.Pre("\n".join(t.exports), id="verdict-env"),
                    dcc.Clipboard(target_id="verdict-env", title="copy"),
                ],
                className="env",
            )
        )
    return html.Section(body, id="verdict", className=f"verdict {v['status']}", **{"data-status": v["status"]})


def overview(doc: Shown) -> html.Div:
    rep = doc.report
    inputs = [
        html.Li(
            f"{e['path']}: {e['kind']}, {e['size']:,} bytes, "
            f"issues {e['issues'].get('error', 0)} error / {e['issues'].get('data_loss', 0)} data_loss / "
            f"{e['issues'].get('info', 0)} info"
        )
        for e in rep.inputs
    ]
    findings = rep.findings  # in the report's order: critical first, then by time lost per step
    cards = [finding_card(f, i) for i, f in enumerate(findings)] or [html.P("No findings.")]
    parts: list[Any] = [
        verdict_box(rep),
        html.H3(f"Findings ({len(findings)})"),
        html.P("Critical first, then by time lost per step.", className="muted"),
        *cards,
        html.H3("Inputs"),
        html.Ul(inputs),
    ]
    if rep.skipped_files:
        parts += [
            html.H3(f"Files that are not inputs ({len(rep.skipped_files)}, left out)"),
            html.Ul([html.Li(f"{s['path']}: {s['reason']}") for s in rep.skipped_files], id="skipped-files"),
        ]
    if rep.parse_issues:
        rows = [
            (
                i["severity"],
                i["code"],
                str(i["count"]),
                i["file"],
                "" if i["byte_offset"] is None else str(i["byte_offset"]),
                i["message"],
            )
            for i in rep.parse_issues
        ]
        parts += [
            html.H3("Parse issues (records dropped or tolerated)"),
            table("parse-issues", ("severity", "code", "count", "file", "byte", "message"), rows),
        ]
    return html.Div(parts, id="page-overview")


# steps ---------------------------------------------------------------------------------
def steps(doc: Shown) -> html.Div:
    section, view = _main(doc)
    if section is None:
        return none_page("This run has no Horovod timeline: step times come from HOROVOD_TIMELINE.")
    st = section["steps"]
    parts: list[Any] = [html.P(steps_line(section), id="steps-line")]
    if (window := window_line(section)) is not None:
        parts.append(html.P(window, id="window-note", className="note"))
    if st["steady"]:
        parts.append(graph(figures.step_histogram(section), "step-histogram"))
    if view and view["step_series"]["step"]:
        series = view["step_series"]
        parts.append(graph(figures.step_series(series, st["median_s"], st["p90_s"]), "step-series"))
        parts.append(html.P("Click a step to open it in the Step view.", className="muted"))
        rows = [
            (str(s), f"{ms:.3f}", "yes" if ok else "no")
            for s, ms, ok in zip(series["step"], series["ms"], series["steady"], strict=True)
        ]
        parts.append(table("step-table", ("step", "step time ms", "steady"), rows, page_size=15, sort_action="native"))
    if not st["steady"]:
        parts.append(none_page("No complete steady step: the timeline is too short or cut during the first steps."))
    parts += tuning(doc.report.findings)
    return html.Div(parts, id="page-steps")


# ranks ---------------------------------------------------------------------------------
NO_TICKS = (
    "This timeline has no per-rank ready ticks after the first step: Horovod's response cache "
    "(on by default) skips the negotiation that records them. To see which rank is late on every "
    "step, rerun with the cache off:"
)


def ranks(doc: Shown) -> html.Div:
    section, view = _main(doc)
    traces = trace_parts(doc.report.rank_traces, table)
    if section is None:
        if traces:
            return html.Div(traces, id="page-ranks")
        return none_page("This run has no Horovod timeline and no per-rank profiler trace to read lateness from.")
    scope = section["ranks"]["scope"]
    parts: list[Any] = list(traces)
    if scope != "steady":
        parts += [
            html.Div(
                [
                    html.P(NO_TICKS),
                    html.Pre("export HOROVOD_CACHE_CAPACITY=0"),
                    html.P(
                        "Per-rank lateness below covers only the first negotiations (warm-up)."
                        if scope == "first_negotiations"
                        else "This file has no rank ticks at all."
                    ),
                ],
                className="explain",
                id="no-ticks",
            )
        ]
    if view and view["rank_box"]["ranks"]:
        parts.append(graph(figures.lateness_box(view["rank_box"]), "rank-box"))
    if view and view["heatmap"]["z"]:
        step_ms = section["steps"]["median_s"] * 1e3 if section["steps"]["median_s"] else None
        parts.append(graph(figures.rank_heatmap(view["heatmap"], step_ms), "rank-heatmap"))
    if section["ranks"]["ranks"]:
        rows = [
            (
                str(r["rank"]),
                r.get("host") or "",
                str(r["last"]),
                str(r["negotiations"]),
                fixed(r["median_lateness_ms"]),
                fixed(r["p90_lateness_ms"]),
                fixed(r["vs_median_ms"]),
            )
            for r in section["ranks"]["ranks"]
        ]
        parts.append(
            table(
                "rank-table",
                ("rank", "host", "last ready", "negotiations", "median ms", "p90 ms", "vs median rank ms"),
                rows,
                sort_action="native",
                page_size=32,
            )
        )
    if (unlisted := unlisted_line(section)) is not None:
        parts.append(html.P("Ranks: " + unlisted + "."))
    if (noise := noise_line(section)) is not None:
        parts.append(html.P(noise[0].upper() + noise[1:] + ".", className="explain", id="rank-noise"))
    return html.Div(parts, id="page-ranks")


# phases & fusion -------------------------------------------------------------------------
def phases(doc: Shown) -> html.Div:
    section, view = _main(doc)
    if section is None:
        return none_page("This run has no Horovod timeline.")
    parts: list[Any] = [html.P(f"Fusion: {fusion_line(section)}")]
    if section["phases"]:
        parts.append(graph(figures.phase_breakdown(section), "phase-breakdown"))
    if view:
        if view["batch_sizes"]["counts"]:
            parts.append(graph(figures.batch_size_histogram(view["batch_sizes"]), "batch-sizes"))
        if view["cadence"]["counts"]:
            parts.append(graph(figures.cadence_histogram(view["cadence"]), "cadence"))
        t = view["tensors"]
        cols = [
            {"name": n, "id": c, "type": ty}
            for n, c, ty in (
                ("tensor", "tensor", "text"),
                ("op", "op", "text"),
                ("dtype", "dtype", "text"),
                ("bytes", "bytes", "numeric"),
                ("ops", "ops", "numeric"),
                ("median op ms", "median_op_ms", "numeric"),
                ("median negotiate ms", "median_negotiate_ms", "numeric"),
            )
        ]
        parts += [
            html.H3(f"Tensors ({len(t['rows'])})"),
            html.P(t["note"], className="muted") if t["note"] else None,
            dash_table.DataTable(
                id="tensor-table",
                columns=cols,
                data=t["rows"],
                sort_action="native",
                filter_action="native",
                page_size=25,
                export_format="csv",
                export_headers="display",
                **_TABLE_STYLE,
            ),
        ]
    return html.Div(parts, id="page-phases")


# NCCL ----------------------------------------------------------------------------------
def nccl(doc: Shown) -> html.Div:
    n = doc.report.nccl
    if not n or not (n["processes"] or n["errors"] or n["watchdog_timeouts"] or n["horovod_stalls"]):
        return none_page(
            "This run has no NCCL_DEBUG output or job log. Add the job's log (NCCL_DEBUG=INFO) to the "
            "upload to see transports per host, versions and communicators."
        )
    parts: list[Any] = [html.P(nccl_rows.summary_line(n))]
    if n["processes"]:
        parts += [
            graph(figures.transport_matrix(n), "transport-matrix"),
            table("nccl-hosts", nccl_rows.HOST_HEADER, nccl_rows.host_rows(n), sort_action="native"),
        ]
    if n["versions"]:
        by_host: dict[str, set[str]] = {}
        for v in n["versions"]:
            by_host.setdefault(v["host"] or "?", set()).add(v["version"])
        parts += [
            html.H3("NCCL versions per host"),
            table("nccl-versions", ("host", "versions"), [(h, ", ".join(sorted(vs))) for h, vs in by_host.items()]),
        ]
    if n["communicators"]:
        comm_rows = [
            (
                c["comm_id"] or c["id"],
                str(c["nranks"]),
                str(len(c["ranks_complete"])),
                ", ".join(f"{r['rank']} ({r['host'] or '?'}, {r['file']}:{r['line']})" for r in c["ranks_incomplete"])
                or "-",
            )
            for c in n["communicators"][: nccl_rows.MAX_ROWS]
        ]
        parts += [
            html.H3("Communicators"),
            table(
                "nccl-comms",
                ("communicator", "ranks", "Init COMPLETE", "missing (started, never completed)"),
                comm_rows,
            ),
        ]
    if n["errors"]:
        error_rows = [
            (
                e["class"],
                f"{e['host'] or '?'}:{e['pid'] if e['pid'] is not None else '?'}",
                f"{e['file']}:{e['line']}",
                e["message"],
                e.get("remediation") or "",
            )
            for e in n["errors"][: nccl_rows.MAX_ROWS]
        ]
        parts += [
            html.H3("Errors"),
            table("nccl-errors", ("class", "process", "line", "message", "remediation"), error_rows),
        ]
    if n["watchdog_timeouts"]:
        parts += [
            html.H3("Watchdog timeouts"),
            table("nccl-watchdog", nccl_rows.WATCHDOG_HEADER, nccl_rows.watchdog_rows(n)),
        ]
    return html.Div(parts, id="page-nccl")


RENDER = {"overview": overview, "steps": steps, "ranks": ranks, "phases": phases, "nccl": nccl}  # step: stepview.py


def render_page(page: str, doc: AnalysisDocument | None, job: str | None = None) -> html.Div:
    """Page ``page`` of a run, of its job ``job`` when the run holds several."""
    if doc is None:
        return none_page("Choose a run, or upload a timeline.json, a log or a .zip/.tar.gz of a run folder.")
    whole = report_of(doc)
    if whole is None:
        return none_page(OLDER_REPORT)
    return RENDER.get(page, overview)(Shown(report_for_job(whole, job), doc.get("views", {})))


def job_options(doc: AnalysisDocument | None) -> tuple[list[dict[str, str]], str | None]:
    """The job selector of a run of several jobs (``([], None)`` for one job), and the job shown
    first: the one whose finding is the report's most severe."""
    report = report_of(doc) if doc is not None else None
    jobs = report.jobs if report is not None else ()
    if report is None or len(jobs) < 2:
        return [], None
    findings = report.findings
    count = {j["id"]: sum(f.job == j["id"] for f in findings) for j in jobs}
    # an unpacked archive's folder reads as the user named it (work.relabel: "run.zip!runs/a")
    options = [
        {"label": f"{j['folder'] if '!' in j['folder'] else j['name']} ({count[j['id']]} finding(s))", "value": j["id"]}
        for j in jobs
    ]
    first = findings[0].job if findings and findings[0].job in count else jobs[0]["id"]
    return options, first
