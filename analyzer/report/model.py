"""The report as one typed value, from the detectors to every reader.

:class:`AnalysisReport` holds the findings as :class:`~analyzer.findings.Finding` objects and the
sections as the report's own types (:mod:`analyzer.report.types`). :meth:`AnalysisReport.to_document`
is the JSON shape (``report -f json``), built field by field so that mypy checks it against
:class:`~analyzer.report.types.ReportDocument`; :meth:`AnalysisReport.from_document` reads it back
(a stored report, the app's saved runs, ``compare``'s sides), so that every reader works on the
same model: ``from_document(r.to_document()) == r``. The verdict is derived
(:func:`analyzer.report.verdict.verdict_of`), never stored in the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from analyzer.findings import Evidence, Finding, Impact, Severity, Skipped, SourceRef, Suggestion
from analyzer.report.types import (
    FindingDoc,
    InputDoc,
    JobDoc,
    NcclSection,
    ParseIssueDoc,
    RankTracesDoc,
    ReportDocument,
    SkippedFileDoc,
    TimelineSection,
    VerdictDoc,
)
from analyzer.report.verdict import verdict_of

REPORT_SCHEMA_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class AnalysisReport:
    """Everything a renderer needs; :meth:`to_document` is the documented JSON shape."""

    tool_version: str
    store: str
    inputs: tuple[InputDoc, ...]
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    parse_issues: tuple[ParseIssueDoc, ...]
    skipped_files: tuple[SkippedFileDoc, ...] = ()
    timelines: tuple[TimelineSection, ...] = ()  # analyzer.report.timeline_section; the main timeline first
    nccl: NcclSection | None = None  # analyzer.report.nccl_section.nccl_section
    jobs: tuple[JobDoc, ...] = ()  # analyzer.jobs: the run's jobs and their inputs
    rank_traces: tuple[RankTracesDoc, ...] = ()  # analyzer.report.rank_section: per job with per-rank traces

    @property
    def main_timeline(self) -> TimelineSection | None:
        """The timeline with the most steps (the report's ``timeline``)."""
        return self.timelines[0] if self.timelines else None

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def verdict(self) -> VerdictDoc:
        """What to read first (:mod:`analyzer.report.verdict`)."""
        return verdict_of(self)

    def count(self, severity: Severity) -> int:
        return sum(f.severity is severity for f in self.findings)

    def to_document(self) -> ReportDocument:
        """The JSON document, exact (the JSON renderer rounds its floats)."""
        worst = self.worst()
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "tool": "hvd-analyze",
            "tool_version": self.tool_version,
            "store": self.store,
            "verdict": self.verdict(),
            "summary": {
                "findings": len(self.findings),
                "by_severity": {
                    "info": self.count(Severity.INFO),
                    "warning": self.count(Severity.WARNING),
                    "critical": self.count(Severity.CRITICAL),
                },
                "worst": None if worst is None else worst.label,
            },
            "inputs": list(self.inputs),
            "jobs": list(self.jobs),
            "timeline": self.timelines[0] if self.timelines else None,
            "other_timelines": list(self.timelines[1:]),
            "nccl": self.nccl,
            "rank_traces": list(self.rank_traces),
            "findings": [finding_doc(f) for f in self.findings],
            "skipped_detectors": [{"detector": s.detector, "reason": s.reason} for s in self.skipped],
            "parse_issues": list(self.parse_issues),
            "skipped_files": list(self.skipped_files),
        }

    @classmethod
    def from_document(cls, doc: ReportDocument) -> AnalysisReport:
        """The report a document holds (its ``verdict`` and ``summary`` are derived: not read)."""
        main = doc["timeline"]
        timelines = ((main,) if main is not None else ()) + tuple(doc["other_timelines"])
        if any("oversized" not in t["ranks"] for t in timelines):  # stored before the rank list was bounded
            raise KeyError("timeline.ranks.oversized")
        return cls(
            tool_version=doc["tool_version"],
            store=doc["store"],
            inputs=tuple(doc["inputs"]),
            findings=tuple(finding_of(f) for f in doc["findings"]),
            skipped=tuple(Skipped(s["detector"], s["reason"]) for s in doc["skipped_detectors"]),
            parse_issues=tuple(doc["parse_issues"]),
            skipped_files=tuple(doc["skipped_files"]),
            timelines=timelines,
            nccl=doc["nccl"],
            jobs=tuple(doc["jobs"]),
            rank_traces=tuple(doc["rank_traces"]),
        )


def finding_doc(f: Finding) -> FindingDoc:
    """A finding as the JSON report writes it."""
    return {
        "code": f.code,
        "severity": f.severity.label,
        "title": f.title,
        "summary": f.summary,
        "detector": f.detector,
        "job": f.job,
        "ranks": list(f.ranks),
        "hosts": list(f.hosts),
        "labels": dict(f.labels),
        "evidence": [
            {
                "summary": e.summary,
                "sources": [{"file": s.file, "byte_offset": s.byte_offset, "line": s.line} for s in e.sources],
                "metrics": {k: float(v) for k, v in e.metrics.items()},
            }
            for e in f.evidence
        ],
        "impact": None
        if f.impact is None
        else {
            "seconds_per_step": f.impact.seconds_per_step,
            "fraction_of_step": f.impact.fraction_of_step,
            "confidence": f.impact.confidence,
            "assumptions": f.impact.assumptions,
        },
        "suggestions": [{"action": s.action, "env": dict(s.env), "rationale": s.rationale} for s in f.suggestions],
    }


def finding_of(doc: FindingDoc) -> Finding:
    """:func:`finding_doc` read back."""
    impact = doc["impact"]
    return Finding(
        code=doc["code"],
        severity=Severity.of_label(doc["severity"]),
        title=doc["title"],
        summary=doc["summary"],
        detector=doc["detector"],
        evidence=tuple(
            Evidence(
                e["summary"],
                tuple(SourceRef(s["file"], s["byte_offset"], s["line"]) for s in e["sources"]),
                dict(e["metrics"]),
            )
            for e in doc["evidence"]
        ),
        impact=None
        if impact is None
        else Impact(
            impact["seconds_per_step"], impact["fraction_of_step"], impact["confidence"], impact["assumptions"]
        ),
        suggestions=tuple(Suggestion(s["action"], dict(s["env"]), s["rationale"]) for s in doc["suggestions"]),
        ranks=tuple(doc["ranks"]),
        hosts=tuple(doc["hosts"]),
        labels=dict(doc["labels"]),
        job=doc["job"],
    )
