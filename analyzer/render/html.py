"""One self-contained HTML file (inline CSS and SVG charts, no script, no external resource): small
enough to attach to a ticket, and it opens offline. Every user string is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from analyzer.findings import Finding
from analyzer.render import nccl_rows, trace_rows
from analyzer.render.base import (
    env_lines,
    finding_groups,
    impact_text,
    input_line,
    job_lines,
    jobs_note,
    verdict_text,
)
from analyzer.render.sections import (
    fusion_line,
    noise_line,
    phase_rows,
    rank_rows,
    steps_line,
    unlisted_line,
    window_line,
)
from analyzer.render.svg_charts import charts, trace_charts
from analyzer.report.model import AnalysisReport
from analyzer.report.types import NcclSection, TimelineSection, VerdictDoc

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1d2330;padding:0 1rem}
h1{font-size:1.6rem}h2{border-bottom:1px solid #dde;padding-bottom:.2rem;margin-top:2rem}
.f{border:1px solid #dde;border-left:6px solid #888;border-radius:6px;padding:.6rem 1rem;margin:1rem 0}
.critical{border-left-color:#c0392b}.warning{border-left-color:#e67e22}.info{border-left-color:#2980b9}
.sev{font-weight:700;text-transform:uppercase;font-size:.8rem;margin-right:.5rem}
code,pre{background:#f4f5f8;border-radius:4px;padding:.1rem .3rem}pre{padding:.6rem;overflow-x:auto}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #dde;padding:.25rem .5rem;text-align:left;font-size:.9rem}
.muted{color:#667}
.note{background:#fff8e1;border-left:4px solid #e6a700;padding:.4rem .8rem}
figure{margin:1rem 0}svg.chart{width:100%;height:auto;background:#fff}
.verdict{border:2px solid #888;border-radius:8px;padding:.2rem 1rem;margin:1rem 0}.verdict h2{border:0;margin-top:.6rem}
.verdict.healthy{border-color:#2e8b57;background:#f1faf4}.verdict.degraded{border-color:#e67e22;background:#fff7ef}
.verdict.failed{border-color:#c0392b;background:#fdf1f0}
.verdict.inconclusive{border-color:#888;background:#f4f4f4}
"""


def _verdict(v: VerdictDoc) -> str:
    """The verdict box: status, headline, numbers, the one thing to do, the checks passed."""
    t = verdict_text(v)
    items = [f"<p>{_e(line)}</p>" for line in (t.numbers, t.action) if line]
    items += [f"<pre>{_e(line)}</pre>" for line in t.exports]
    if t.passed:
        items.append(f"<p>{_e(t.passed_head)}:</p><ul>" + "".join(f"<li>{_e(c)}</li>" for c in t.passed) + "</ul>")
    return (
        f"<section class='verdict {v['status']}' id='verdict'><h2>{_e(t.headline)}</h2>" + "".join(items) + "</section>"
    )


def _e(text: object) -> str:
    return escape(str(text), quote=True)


class HtmlRenderer:
    name = "html"
    extension = ".html"

    def render(self, report: AnalysisReport) -> str:
        parts = [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width,initial-scale=1'>",
            f"<title>hvd-analyze report</title><style>{CSS}</style></head><body>",
            f"<h1>hvd-analyze report</h1><p class='muted'>hvd-analyze {_e(report.tool_version)}</p>",
            _verdict(report.verdict()),
            *([f"<p class='note'>{_e(note)}</p>"] if (note := jobs_note(report)) is not None else []),
            f"<h2>Findings ({len(report.findings)})</h2>",
        ]
        if not report.findings:
            parts.append("<p>No findings.</p>")
        for heading, group in finding_groups(report):
            parts += [f"<h3>{_e(heading)}</h3>"] if heading else []
            parts += [self._finding(f) for f in group]
        parts += ["<h2>Inputs</h2><ul>", *[f"<li>{_e(input_line(e))}</li>" for e in report.inputs], "</ul>"]
        if jobs := job_lines(report):
            parts += ["<h2>Jobs</h2><ul>", *[f"<li>{_e(line)}</li>" for line in jobs], "</ul>"]
        parts += [self._timeline(t) for t in report.timelines]
        if report.nccl:
            parts += _nccl(report.nccl)
        for ranks in report.rank_traces:
            parts += ["<h2>Per-rank traces</h2>", f"<p>{_e(trace_rows.summary_line(ranks))}</p>"]
            parts += [f"<figure>{chart}</figure>" for chart in trace_charts(ranks)]
            parts.append(_html_table(trace_rows.HEADER, trace_rows.rows(ranks)))
            if notes := trace_rows.notes(ranks):
                parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
        if report.skipped_files:
            parts.append(f"<h2>Files that are not inputs ({len(report.skipped_files)}, left out)</h2><ul>")
            parts += [f"<li>{_e(s['path'])}: {_e(s['reason'])}</li>" for s in report.skipped_files]
            parts.append("</ul>")
        if report.skipped:
            parts.append("<h2>Skipped detectors</h2><ul>")
            parts += [f"<li><code>{_e(s.detector)}</code>: {_e(s.reason)}</li>" for s in report.skipped]
            parts.append("</ul>")
        if report.parse_issues:
            parts.append(
                "<h2>Parse issues</h2><table><tr><th>severity</th><th>code</th><th>count</th>"
                "<th>file</th><th>byte</th><th>message</th></tr>"
            )
            parts += [
                f"<tr><td>{_e(i['severity'])}</td><td><code>{_e(i['code'])}</code></td><td>{i['count']}</td>"
                f"<td>{_e(i['file'])}</td><td>{_e(i['byte_offset'] if i['byte_offset'] is not None else '')}</td>"
                f"<td>{_e(i['message'])}</td></tr>"
                for i in report.parse_issues
            ]
            parts.append("</table>")
        parts.append("</body></html>\n")
        return "\n".join(parts)

    @staticmethod
    def _timeline(section: TimelineSection) -> str:
        rows = [f"<h2>Timeline {_e(section['path'])}</h2><p>{_e(steps_line(section))}</p>"]
        if (window := window_line(section)) is not None:
            rows.append(f"<p class='note'>{_e(window)}</p>")
        rows.append(f"<p>Fusion: {_e(fusion_line(section))}</p>")
        rows += [f"<figure>{chart}</figure>" for chart in charts(section) if chart]
        if section["phases"]:
            rows.append("<table><tr><th>phase</th><th>median ms/step</th><th>share of step</th></tr>")
            rows += [f"<tr><td>{_e(n)}</td><td>{m}</td><td>{s}</td></tr>" for n, m, s in phase_rows(section)]
            rows.append("</table>")
        if section["ranks"]["ranks"]:
            rows.append(
                f"<p>Rank lateness ({_e(section['ranks']['scope'])}):</p><table><tr><th>rank</th>"
                "<th>last ready</th><th>median ms</th><th>p90 ms</th></tr>"
            )
            rows += [
                f"<tr><td>{r}</td><td>{last}</td><td>{med}</td><td>{p90}</td></tr>"
                for r, last, med, p90 in rank_rows(section)
            ]
            rows.append("</table>")
            if (noise := noise_line(section)) is not None:
                rows.append(f"<p>{_e(noise[0].upper() + noise[1:])}.</p>")
        if (unlisted := unlisted_line(section)) is not None:
            rows.append(f"<p>Ranks: {_e(unlisted)}.</p>")
        return "".join(rows)

    @staticmethod
    def _finding(f: Finding) -> str:
        sev = f.severity.label
        rows = [
            f"<div class='f {sev}'><div><span class='sev'>{sev}</span><code>{_e(f.code)}</code> "
            f"<strong>{_e(f.title)}</strong></div><p>{_e(f.summary)}</p>",
            f"<p><strong>Impact:</strong> {_e(impact_text(f))}</p>",
        ]
        if f.ranks:
            rows.append(f"<p><strong>Ranks:</strong> {_e(', '.join(map(str, f.ranks)))}</p>")
        if f.evidence:
            rows.append("<ul>")
            for e in f.evidence:
                where = "; ".join(str(s) for s in e.sources)
                rows.append(
                    f"<li>{_e(e.summary)}" + (f" <span class='muted'>[{_e(where)}]</span>" if where else "") + "</li>"
                )
            rows.append("</ul>")
        for s in f.suggestions:
            rows.append(f"<p><strong>Try:</strong> {_e(s.action)}</p>")
        lines = env_lines(f)
        if lines:
            rows.append(f"<pre>{_e(chr(10).join(lines))}</pre>")
        rows.append("</div>")
        return "".join(rows)


def _html_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _nccl(section: NcclSection) -> list[str]:
    out = ["<h2>NCCL and job logs</h2>", f"<p>{_e(nccl_rows.summary_line(section))}</p>"]
    if section["processes"]:
        out.append(_html_table(nccl_rows.HOST_HEADER, nccl_rows.host_rows(section)))
    lines = nccl_rows.comm_lines(section)
    if lines:
        out.append("<ul>" + "".join(f"<li>{_e(line)}</li>" for line in lines) + "</ul>")
    if section["errors"]:
        out += ["<p>Errors:</p>", _html_table(nccl_rows.ERROR_HEADER, nccl_rows.error_rows(section))]
    if section["watchdog_timeouts"]:
        out += ["<p>Watchdog timeouts:</p>", _html_table(nccl_rows.WATCHDOG_HEADER, nccl_rows.watchdog_rows(section))]
    return out
