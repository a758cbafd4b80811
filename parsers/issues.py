"""Parse problems as data (modelled on perfetto's stats table).

Parsers never print and never drop records silently: every record they cannot use,
and every oddity they tolerate, becomes a :class:`ParseIssue` with a stable ``code``.
Issues of the same code in one file are aggregated (``count``) and keep the position
of the first occurrence, so a file with a million bad records does not produce a
million rows.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypedDict


class IssueCounts(TypedDict):
    """Parse-issue occurrences of an input, per severity."""

    error: int
    data_loss: int
    info: int


class IssueSeverity(enum.StrEnum):
    """How much an issue matters to the analysis."""

    INFO = "info"  # tolerated quirk, nothing lost
    DATA_LOSS = "data_loss"  # some records could not be used; the rest is analysed
    ERROR = "error"  # the file could not be parsed past this point


@dataclass(frozen=True, slots=True)
class ParseIssue:
    """One kind of problem found in one input file."""

    file: str
    byte_offset: int | None
    severity: IssueSeverity
    code: str
    message: str
    count: int = 1


class IssueSink:
    """Collects issues for one file, aggregating repeats of the same code."""

    def __init__(self, file: str) -> None:
        self.file = file
        self._issues: dict[str, ParseIssue] = {}

    def add(
        self,
        severity: IssueSeverity,
        code: str,
        message: str,
        *,
        byte_offset: int | None = None,
        count: int = 1,
    ) -> None:
        """Record ``count`` occurrences; the first call's message and offset are kept."""
        if count <= 0:
            return
        old = self._issues.get(code)
        if old is None:
            self._issues[code] = ParseIssue(self.file, byte_offset, severity, code, message, count)
        else:
            self._issues[code] = ParseIssue(
                old.file, old.byte_offset, old.severity, old.code, old.message, old.count + count
            )

    @property
    def issues(self) -> list[ParseIssue]:
        return list(self._issues.values())

    def counts(self) -> IssueCounts:
        """Number of issue occurrences per severity (all three keys present)."""
        n = dict.fromkeys(IssueSeverity, 0)
        for issue in self._issues.values():
            n[issue.severity] += issue.count
        return {"info": n[IssueSeverity.INFO], "data_loss": n[IssueSeverity.DATA_LOSS], "error": n[IssueSeverity.ERROR]}
