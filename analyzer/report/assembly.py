"""``analyze(store) -> AnalysisReport``: run every detector whose inputs are present."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

from analyzer.config import AnalysisConfig
from analyzer.context import Context
from analyzer.detectors import ALL_DETECTORS, Detector
from analyzer.findings import Finding, Skipped
from analyzer.jobs import Job
from analyzer.report.evidence import require_evidence
from analyzer.report.model import AnalysisReport
from analyzer.report.nccl_section import nccl_section
from analyzer.report.rank_section import rank_section
from analyzer.report.relations import relate
from analyzer.report.skips import skip_reason
from analyzer.report.timeline_section import timeline_section
from analyzer.report.types import InputDoc, JobDoc
from analyzer.store.manifest import ManifestEntry
from analyzer.store.run_store import RunStore
from analyzer.timeline.lateness import TICK_COLUMNS, RankLateness, rank_summary
from analyzer.timeline.model import SPAN_COLUMNS
from analyzer.version import __version__

MAX_ISSUES_IN_REPORT = 200
#: the columns a report reads of the tables it reads only in part: a temporary store held for a
#: report keeps no others (:func:`analyzer.store.held.holding`; 0.2 GB less of a 1 GB timeline)
HELD_COLUMNS: dict[str, tuple[str, ...]] = {"ticks": TICK_COLUMNS, "spans": tuple(SPAN_COLUMNS)}


def analyze(
    store: RunStore, detectors: Sequence[Detector] = ALL_DETECTORS, config: AnalysisConfig | None = None
) -> AnalysisReport:
    return analyze_in(Context(store, config or AnalysisConfig()), detectors)


def analyze_in(ctx: Context, detectors: Sequence[Detector] = ALL_DETECTORS) -> AnalysisReport:
    """:func:`analyze` with the caller's context, whose models stay cached for further views."""
    store = ctx.store
    where = "" if store.temporary else f"the run store {store.root}"
    require_evidence(store.inputs, store.manifest.get("skipped", []), where)
    found: dict[int, list[Finding]] = {}
    skipped_by: dict[int, Skipped] = {}
    ranks_ahead: dict[str, Future[list[RankLateness]]] = {}
    if store.has_table("ticks"):  # the ranks' statistics on a thread while the others run
        for m in ctx.timelines():
            ranks_ahead[m.input_id] = ctx.executor().submit(rank_summary, m.steady_lateness)

    def run(i: int) -> None:
        det = detectors[i]
        reason = skip_reason(tuple(det.requires), store, det.why_required)
        if reason is not None:
            skipped_by[i] = Skipped(det.name, reason)
        elif all(store.has_table(t) for t in det.requires):  # else: its logs had nothing of the kind
            found[i] = det.detect(ctx)

    # the detectors that read the statistics run last, after the timeline sections (whose phases
    # run meanwhile too); the findings keep the detectors' order
    for i in range(len(detectors)):
        if not detectors[i].reads_rank_statistics:
            run(i)
    models = sorted(ctx.timelines(), key=lambda m: -len(m.all_steps))  # the main timeline (most steps) first
    straggler = ctx.config.thresholds.straggler
    sections = tuple(
        timeline_section(m, {r: p.host for r, p in ctx.rank_places(m).items()}, straggler, ranks_ahead.get(m.input_id))
        for m in models
    )
    for i in range(len(detectors)):
        if detectors[i].reads_rank_statistics:
            run(i)
    findings = [f for i in sorted(found) for f in found[i]]
    skipped = [skipped_by[i] for i in sorted(skipped_by)]
    with_logs: set[str | None] = {j.id for j in ctx.jobs().jobs if j.logs}
    findings = relate(findings, with_logs)
    findings.sort(key=Finding.sort_key)
    issues = store.table("parse_issues").slice(0, MAX_ISSUES_IN_REPORT).drop_columns(["input_id"])
    issue_rows = issues.to_pylist()  # nulls come back as None (pandas would give NaN)
    paths = {e["id"]: e["path"] for e in store.inputs}
    return AnalysisReport(
        tool_version=__version__,
        store=str(store.root),
        inputs=tuple(_input_summary(e) for e in store.inputs),
        findings=tuple(findings),
        skipped=tuple(skipped),
        parse_issues=tuple(issue_rows),
        skipped_files=tuple(store.manifest.get("skipped", [])),
        timelines=sections,
        nccl=nccl_section(ctx.nccl()),
        jobs=tuple(_job_doc(j, paths) for j in ctx.jobs().jobs),
        rank_traces=tuple(
            rank_section(j.id, s, d)
            for j in ctx.jobs().jobs
            if (s := ctx.rank_traces(j)) is not None and (d := ctx.traces_judged(j)) is not None
        ),
    )


def _job_doc(job: Job, paths: dict[str, str]) -> JobDoc:
    return {
        "id": job.id,
        "name": job.name,
        "folder": job.folder,
        "timelines": [paths[i] for i in job.timelines],
        "traces": [paths[i] for i in job.traces],
        "logs": [paths[i] for i in job.logs],
        "tied_by": job.tied_by,
    }


def _input_summary(entry: ManifestEntry) -> InputDoc:
    return {
        "id": entry["id"],
        "path": entry["path"],
        "kind": entry["kind"],
        "size": entry["size"],
        "sha256": entry.get("sha256"),
        "blake3": entry.get("blake3"),
        "rows": dict(entry.get("rows", {})),
        "issues": entry["issues"],
        "timeline": entry.get("timeline"),
        "log": entry.get("log"),
        "rank_trace": entry.get("rank_trace"),
    }
