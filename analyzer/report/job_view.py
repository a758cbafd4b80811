"""A report narrowed to one job of the run: what the app shows when a job is selected.

The analysis already keeps jobs apart (every finding rests on its own job's inputs and names it);
this view keeps what belongs to one job: its findings, its inputs, its timelines (the one with the
most steps first), its per-rank traces and the NCCL facts of its logs.
"""

from __future__ import annotations

from dataclasses import replace

from analyzer.report.model import AnalysisReport
from analyzer.report.types import JobDoc, NcclSection


def job_of(report: AnalysisReport, job_id: str | None) -> JobDoc | None:
    """The job ``job_id`` of ``report`` (None: unknown, or no job given)."""
    return next((j for j in report.jobs if j["id"] == job_id), None)


def report_for_job(report: AnalysisReport, job_id: str | None) -> AnalysisReport:
    """``report`` narrowed to the job ``job_id`` (its verdict is the job's own: its findings, its
    evidence); ``report`` itself for a run of one job or an unknown id."""
    job = job_of(report, job_id)
    if job is None or len(report.jobs) < 2:
        return report
    files = set(job["timelines"]) | set(job["traces"]) | set(job["logs"])
    return replace(
        report,
        inputs=tuple(e for e in report.inputs if e["path"] in files),
        findings=tuple(f for f in report.findings if f.job == job_id),
        timelines=tuple(t for t in report.timelines if t["path"] in files),
        nccl=_nccl(report.nccl, set(job["logs"])),
        rank_traces=tuple(t for t in report.rank_traces if t["job"] == job_id),
        parse_issues=tuple(i for i in report.parse_issues if i["file"] in files),
    )


def _nccl(section: NcclSection | None, logs: set[str]) -> NcclSection | None:
    if section is None or not logs:
        return None
    procs = [p for p in section["processes"] if p["file"] in logs]
    return {
        "hosts": sorted({p["host"] for p in procs if p["host"]}),
        "processes": procs,
        "versions": [v for v in section["versions"] if v["file"] in logs],
        "communicators": [c for c in section["communicators"] if set(c["files"]) & logs],
        "errors": [e for e in section["errors"] if e["file"] in logs],
        "watchdog_timeouts": [w for w in section["watchdog_timeouts"] if w["file"] in logs],
        "horovod_stalls": [s for s in section["horovod_stalls"] if s["file"] in logs],
        "autotune": section["autotune"] if section["autotune"] and section["autotune"]["file"] in logs else None,
    }
