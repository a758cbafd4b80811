"""JSON report: :meth:`AnalysisReport.to_document` with its floats rounded, documented in
docs/report-schema.md.

Named ``jsonreport`` so that it does not shadow the standard library's ``json``.
"""

from __future__ import annotations

from typing import TypeVar

import orjson

from analyzer.report.model import AnalysisReport
from analyzer.report.types import ReportDocument

T = TypeVar("T")


def to_document(report: AnalysisReport) -> ReportDocument:
    """The JSON document (a dict) of a report; floats rounded for stable diffs."""
    return _round(report.to_document())


def _round(value: T) -> T:
    """``value`` with every float in it rounded to 6 decimals (the same shape: a float for a float,
    a dict for a dict, a list for a list)."""
    out: object = value
    if isinstance(value, float):
        out = round(value, 6)
    elif isinstance(value, dict):
        out = {k: _round(v) for k, v in value.items()}
    elif isinstance(value, list):
        out = [_round(v) for v in value]
    return out  # type: ignore[return-value]  # the same shape as value, by construction


class JsonRenderer:
    name = "json"
    extension = ".json"

    def render(self, report: AnalysisReport) -> str:
        return orjson.dumps(to_document(report), option=orjson.OPT_INDENT_2).decode() + "\n"
