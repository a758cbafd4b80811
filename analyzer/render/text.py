"""Plain-text report for terminals and CI logs."""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.findings import Finding
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


class TextRenderer:
    name = "text"
    extension = ".txt"

    def render(self, report: AnalysisReport) -> str:
        out = [f"hvd-analyze {report.tool_version} report", "", *verdict_lines(report.verdict()), ""]
        if (note := jobs_note(report)) is not None:
            out += [note, ""]
        if not report.findings:
            out.append("No findings.")
        else:
            out.append(f"Findings ({len(report.findings)}, most severe and costly first):")
        n = 0
        for heading, group in finding_groups(report):
            if heading:
                out += ["", f"== {heading} =="]
            for f in group:
                n += 1
                out += _finding(n, f)
        out += ["", f"Inputs ({len(report.inputs)}):"]
        out += [f"  - {input_line(e)}" for e in report.inputs] or ["  (none)"]
        out.append("")
        if jobs := job_lines(report):
            out += [f"Jobs ({len(jobs)}):", *[f"  - {line}" for line in jobs], ""]
        for section in report.timelines:
            out += _timeline(section)
        if report.nccl:
            out += _nccl(report.nccl)
        for ranks in report.rank_traces:
            out += [
                f"Per-rank traces: {trace_rows.summary_line(ranks)}",
                *_table(trace_rows.HEADER, trace_rows.rows(ranks)),
            ]
            out += [f"  {line}" for line in trace_rows.notes(ranks)] + [""]
        if report.skipped:
            out += ["", "Detectors skipped:"] + [f"  - {s.detector}: {s.reason}" for s in report.skipped]
        if report.parse_issues:
            out += ["", "Parse issues:"]
            out += [
                f"  - [{i['severity']}] {i['code']} x{i['count']} in {i['file']}"
                + (f" @byte {i['byte_offset']}" if i["byte_offset"] is not None else "")
                for i in report.parse_issues
            ]
        if report.skipped_files:
            out += ["", f"Files that are not inputs ({len(report.skipped_files)}, left out):"]
            out += [f"  - {s['path']}: {s['reason']}" for s in report.skipped_files]
        return "\n".join(map(one_line, out)) + "\n"


def _finding(n: int, f: Finding) -> list[str]:
    out = ["", f"{n}. [{f.severity.label.upper()}] {f.code}: {f.title}", f"   {f.summary}"]
    if f.ranks:
        out.append(f"   ranks: {', '.join(map(str, f.ranks))}")
    if f.hosts:
        out.append(f"   hosts: {', '.join(f.hosts)}")
    out.append(f"   impact: {impact_text(f)}")
    for e in f.evidence:
        where = "; ".join(str(s) for s in e.sources)
        out.append(f"   evidence: {e.summary}" + (f" [{where}]" if where else ""))
    for s in f.suggestions:
        out.append(f"   try: {s.action}")
    return out + [f"     {line}" for line in env_lines(f)]


def _timeline(section: TimelineSection) -> list[str]:
    out = [f"Timeline {section['path']}:", f"  steps: {steps_line(section)}"]
    if (window := window_line(section)) is not None:
        out.append(f"  {window}")
    hist = histogram_lines(section)
    if hist:
        out += ["  step-time histogram (steady steps):"] + [f"    {line}" for line in hist]
    if section["phases"]:
        out.append("  phases (median per step, union across tensors; they overlap):")
        out += [f"    {name:<28} {ms_:>10} ms  {share:>5} of the step" for name, ms_, share in phase_rows(section)]
    if section["ranks"]["ranks"]:
        out.append(f"  rank lateness behind the first-ready rank ({section['ranks']['scope']}):")
        rows = rank_rows(section)
        w = max(4, *(len(r) for r, *_ in rows))  # a rank reads "5 (host)" where the NCCL logs say
        out.append(f"    {'rank':>{w}}   last     median ms    p90 ms")
        out += [f"    {r:>{w}}   {last:<8} {med:>9} {p90:>9}" for r, last, med, p90 in rows]
        if (noise := noise_line(section)) is not None:
            out.append(f"  {noise}")
    if (unlisted := unlisted_line(section)) is not None:
        out.append(f"  ranks: {unlisted}")
    out += [f"  fusion: {fusion_line(section)}", ""]
    return out


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]], indent: str = "  ") -> list[str]:
    widths = [max(len(str(r[i])) if i < len(r) else 0 for r in [header, *rows]) for i in range(len(header))]
    return [
        indent + "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in [header, *rows]
    ]


def _nccl(section: NcclSection) -> list[str]:
    out = [f"NCCL and job logs: {nccl_rows.summary_line(section)}"]
    if section["processes"]:
        out += _table(nccl_rows.HOST_HEADER, nccl_rows.host_rows(section))
    out += [f"  {line}" for line in nccl_rows.comm_lines(section)]
    if section["errors"]:
        out += ["  errors:"] + _table(nccl_rows.ERROR_HEADER, nccl_rows.error_rows(section), "    ")
    if section["watchdog_timeouts"]:
        out += ["  watchdog timeouts:"] + _table(nccl_rows.WATCHDOG_HEADER, nccl_rows.watchdog_rows(section), "    ")
    return [*out, ""]
