"""Markdown report (for PR comments and wikis). User strings are escaped."""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.render import nccl_rows, trace_rows
from analyzer.render.base import (
    env_lines,
    finding_groups,
    impact_text,
    input_line,
    job_lines,
    jobs_note,
    one_line,
    verdict_lines,
)
from analyzer.render.sections import (
    fusion_line,
    histogram_lines,
    noise_line,
    phase_rows,
    rank_rows,
    steps_line,
    unlisted_line,
    window_line,
)
from analyzer.report.model import AnalysisReport
from analyzer.report.types import NcclSection, TimelineSection


def _md(text: object) -> str:
    s = one_line(str(text))
    for ch in ("\\", "`", "*", "_", "[", "]", "<", ">", "|", "#"):
        s = s.replace(ch, "\\" + ch)
    return s


class MarkdownRenderer:
    name = "md"
    extension = ".md"

    def render(self, report: AnalysisReport) -> str:
        out = ["# hvd-analyze report", "", f"_hvd-analyze {report.tool_version}_", "", "## Verdict", ""]
        first, *rest = verdict_lines(report.verdict())
        out += [f"**{_md(first)}**", "", *[f"- {_md(line)}" for line in rest], ""]
        if (note := jobs_note(report)) is not None:
            out += [_md(note), ""]
        out += ["", "## Findings", ""]
        if not report.findings:
            out.append("No findings.")
        for heading, group in finding_groups(report):
            if heading:
                out += [f"## {_md(heading)}", ""]
            for f in group:
                out += [
                    f"### {f.severity.label.upper()} `{f.code}`: {_md(f.title)}",
                    "",
                    _md(f.summary),
                    "",
                    f"**Impact:** {_md(impact_text(f))}",
                    "",
                ]
                if f.ranks:
                    out += [f"**Ranks:** {', '.join(map(str, f.ranks))}", ""]
                for e in f.evidence:
                    where = "; ".join(_md(s) for s in e.sources)
                    out.append(f"- {_md(e.summary)}" + (f" ({where})" if where else ""))
                out.append("")
                for s in f.suggestions:
                    out.append(f"- **Try:** {_md(s.action)}")
                lines = env_lines(f)
                if lines:
                    out += ["", "```sh", *lines, "```"]
                out.append("")
        out += ["", "## Inputs", ""]
        out += [f"- {_md(input_line(e))}" for e in report.inputs] or ["(none)"]
        if jobs := job_lines(report):
            out += ["", "## Jobs", "", *[f"- {_md(line)}" for line in jobs]]
        for section in report.timelines:
            out += _timeline(section)
        if report.nccl:
            out += _nccl(report.nccl)
        for ranks in report.rank_traces:
            out += ["", "## Per-rank traces", "", _md(trace_rows.summary_line(ranks)), ""]
            out += ["| " + " | ".join(trace_rows.HEADER) + " |", "|" + "---|" * len(trace_rows.HEADER)]
            out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in trace_rows.rows(ranks)]
            out += [f"- {_md(line)}" for line in trace_rows.notes(ranks)]
        out.append("")
        if report.skipped_files:
            out += [f"## Files that are not inputs ({len(report.skipped_files)}, left out)", ""]
            out += [f"- {_md(s['path'])}: {_md(s['reason'])}" for s in report.skipped_files] + [""]
        if report.skipped:
            out += ["## Skipped detectors", ""] + [f"- `{s.detector}`: {_md(s.reason)}" for s in report.skipped] + [""]
        if report.parse_issues:
            out += ["## Parse issues", "", "| severity | code | count | file | byte |", "|---|---|---|---|---|"]
            out += [
                f"| {i['severity']} | `{i['code']}` | {i['count']} | {_md(i['file'])} | {i['byte_offset'] or ''} |"
                for i in report.parse_issues
            ]
        return "\n".join(out) + "\n"


def _timeline(section: TimelineSection) -> list[str]:
    out = ["", f"## Timeline {_md(section['path'])}", "", _md(steps_line(section)), ""]
    if (window := window_line(section)) is not None:
        out += [f"> {_md(window)}", ""]
    hist = histogram_lines(section)
    if hist:
        out += ["Step-time histogram (steady steps):", "", "```text", *hist, "```", ""]
    if section["phases"]:
        out += ["| phase | median ms/step | share of step |", "|---|---|---|"]
        out += [f"| {_md(n)} | {m} | {s} |" for n, m, s in phase_rows(section)] + [""]
    if section["ranks"]["ranks"]:
        out += [
            f"Rank lateness behind the first-ready rank ({section['ranks']['scope']}):",
            "",
            "| rank | last | median ms | p90 ms |",
            "|---|---|---|---|",
        ]
        out += [f"| {r} | {last} | {med} | {p90} |" for r, last, med, p90 in rank_rows(section)] + [""]
        if (noise := noise_line(section)) is not None:
            out += [_md(noise[0].upper() + noise[1:]) + ".", ""]
    if (unlisted := unlisted_line(section)) is not None:
        out += [_md("Ranks: " + unlisted) + ".", ""]
    out.append(f"Fusion: {_md(fusion_line(section))}")
    return out


def _md_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    return (
        ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        + ["| " + " | ".join(_md(c) for c in r) + " |" for r in rows]
        + [""]
    )


def _nccl(section: NcclSection) -> list[str]:
    out = ["", "## NCCL and job logs", "", _md(nccl_rows.summary_line(section)), ""]
    if section["processes"]:
        out += _md_table(nccl_rows.HOST_HEADER, nccl_rows.host_rows(section))
    out += [f"- {_md(line)}" for line in nccl_rows.comm_lines(section)]
    if section["errors"]:
        out += ["", "Errors:", ""] + _md_table(nccl_rows.ERROR_HEADER, nccl_rows.error_rows(section))
    if section["watchdog_timeouts"]:
        out += ["", "Watchdog timeouts:", ""] + _md_table(nccl_rows.WATCHDOG_HEADER, nccl_rows.watchdog_rows(section))
    return out
