"""A report document narrowed to one job of the run: what the app shows when a job is selected.

The analysis already keeps jobs apart (every finding rests on its own job's inputs and names it);
this view keeps what belongs to one job: its findings, its inputs, its timelines (the one with the
most steps first), its per-rank traces and the NCCL facts of its logs.
"""

from __future__ import annotations

from typing import cast

from analyzer.report.types import JobDoc, NcclSection, ReportDocument
from analyzer.report.verdict import verdict_of


def job_of(doc: ReportDocument, job_id: str | None) -> JobDoc | None:
    """The job ``job_id`` of ``doc`` (None: unknown, or no job given)."""
    return next((j for j in doc.get("jobs", []) if j["id"] == job_id), None)


def report_for_job(doc: ReportDocument, job_id: str | None) -> ReportDocument:
    """``doc`` narrowed to the job ``job_id``; ``doc`` itself for a run of one job or an unknown id."""
    job = job_of(doc, job_id)
    if job is None or len(doc.get("jobs", [])) < 2:
        return doc
    files = set(job["timelines"]) | set(job["traces"]) | set(job["logs"])
    timelines = [t for t in [doc["timeline"], *doc["other_timelines"]] if t is not None and t["path"] in files]
    out = dict(doc)
    out["inputs"] = [e for e in doc["inputs"] if e["path"] in files]
    out["findings"] = [f for f in doc["findings"] if f["job"] == job_id]
    out["timeline"] = timelines[0] if timelines else None
    out["other_timelines"] = timelines[1:]
    out["nccl"] = _nccl(doc["nccl"], set(job["logs"]))
    out["rank_traces"] = [t for t in doc["rank_traces"] if t["job"] == job_id]
    out["parse_issues"] = [i for i in doc["parse_issues"] if i["file"] in files]
    out["verdict"] = verdict_of(out)  # the job's own: its findings, its evidence
    return cast(ReportDocument, out)


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
