"""The typed result of an analysis: findings, skipped detectors, and the report.

Every finding has a stable ``code`` (a public contract: CI gates and dashboards key on
it), a severity, evidence that cites source positions, an impact when it can be
estimated, and suggestions with the exact environment settings to try.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

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
from analyzer.report.types import Severity as SeverityLabel


class Severity(enum.IntEnum):
    """Ordered so that ``--fail-on`` and sorting are plain comparisons."""

    INFO = 10
    WARNING = 20
    CRITICAL = 30

    @property
    def label(self) -> SeverityLabel:
        return cast(SeverityLabel, self.name.lower())

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}; use one of: info, warning, critical") from None


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A position in an input: a byte offset (timelines) or a line (logs)."""

    file: str
    byte_offset: int | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}"
        if self.byte_offset is not None:
            return f"{self.file}@byte {self.byte_offset}"
        return self.file


@dataclass(frozen=True, slots=True)
class Evidence:
    summary: str
    sources: tuple[SourceRef, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Impact:
    """Time per step the fix would win, with what the estimate assumes."""

    seconds_per_step: float
    fraction_of_step: float
    confidence: Literal["low", "medium", "high"]
    assumptions: str


@dataclass(frozen=True, slots=True)
class Suggestion:
    action: str
    env: Mapping[str, str] = field(default_factory=dict)  # exact settings to try
    rationale: str = ""


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: Severity
    title: str
    summary: str
    detector: str
    evidence: tuple[Evidence, ...] = ()
    impact: Impact | None = None
    suggestions: tuple[Suggestion, ...] = ()
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)  # e.g. {"class": "ib_completion_error"}
    job: str | None = None  # the id of the job whose evidence it rests on (analyzer.jobs)

    def sort_key(self) -> tuple[int, float]:
        return (-int(self.severity), -(self.impact.seconds_per_step if self.impact else 0.0))


def clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, cut at a word and marked with an ellipsis when it is
    longer: a title never ends mid-word (nor on a dangling word such as "opcode")."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return cut.rstrip(" ,;:(-") + "…"


@dataclass(frozen=True, slots=True)
class Skipped:
    detector: str
    reason: str


REPORT_SCHEMA_VERSION: Literal[1] = 1


@dataclass(frozen=True, slots=True)
class AnalysisReport:
    """Everything a renderer needs; :meth:`to_dict` is the documented JSON shape."""

    tool_version: str
    store: str
    inputs: tuple[InputDoc, ...]
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    parse_issues: tuple[ParseIssueDoc, ...]
    skipped_files: tuple[SkippedFileDoc, ...] = ()
    timelines: tuple[
        TimelineSection, ...
    ] = ()  # analyzer.report.timeline_section.timeline_section, main timeline first
    nccl: NcclSection | None = None  # analyzer.report.nccl_section.nccl_section
    jobs: tuple[JobDoc, ...] = ()  # analyzer.jobs: the run's jobs and their inputs
    rank_traces: tuple[RankTracesDoc, ...] = ()  # analyzer.report.rank_section: per job with per-rank traces

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def verdict(self) -> VerdictDoc:
        """What to read first (:mod:`analyzer.report.verdict`)."""
        return self.to_dict()["verdict"]

    def to_dict(self) -> ReportDocument:
        from analyzer.report.verdict import verdict_of

        worst = self.worst()
        doc: dict[str, Any] = {
            "schema_version": REPORT_SCHEMA_VERSION,
            "tool": "hvd-analyze",
            "tool_version": self.tool_version,
            "store": self.store,
            "verdict": None,
            "summary": {
                "findings": len(self.findings),
                "by_severity": {
                    "info": self._count(Severity.INFO),
                    "warning": self._count(Severity.WARNING),
                    "critical": self._count(Severity.CRITICAL),
                },
                "worst": None if worst is None else worst.label,
            },
            "inputs": list(self.inputs),
            "jobs": list(self.jobs),
            "timeline": self.timelines[0] if self.timelines else None,
            "other_timelines": list(self.timelines[1:]),
            "nccl": self.nccl,
            "rank_traces": list(self.rank_traces),
            "findings": [_finding_dict(f) for f in self.findings],
            "skipped_detectors": [{"detector": s.detector, "reason": s.reason} for s in self.skipped],
            "parse_issues": list(self.parse_issues),
            "skipped_files": list(self.skipped_files),
        }
        doc["verdict"] = verdict_of(doc)
        return cast(ReportDocument, doc)

    def _count(self, severity: Severity) -> int:
        return sum(f.severity is severity for f in self.findings)


def _finding_dict(f: Finding) -> FindingDoc:
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
