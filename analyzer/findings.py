"""What a detector returns: findings (and the reason a detector was skipped).

Every finding has a stable ``code`` (a public contract: CI gates and dashboards key on
it), a severity, evidence that cites source positions, an impact when it can be
estimated, and suggestions with the exact environment settings to try.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from analyzer.report.doc_base import Severity as SeverityLabel


class Severity(enum.IntEnum):
    """Ordered so that ``--fail-on`` and sorting are plain comparisons."""

    INFO = 10
    WARNING = 20
    CRITICAL = 30

    @property
    def label(self) -> SeverityLabel:
        return _LABELS[self]

    @classmethod
    def of_label(cls, label: SeverityLabel) -> Severity:
        return _SEVERITIES[label]

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}; use one of: info, warning, critical") from None


_LABELS: dict[Severity, SeverityLabel] = {
    Severity.INFO: "info",
    Severity.WARNING: "warning",
    Severity.CRITICAL: "critical",
}  # constant
_SEVERITIES: dict[SeverityLabel, Severity] = {v: k for k, v in _LABELS.items()}  # constant


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
