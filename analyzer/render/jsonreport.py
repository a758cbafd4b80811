"""JSON report: ``AnalysisReport.to_dict()``, documented in docs/report-schema.md.

Named ``jsonreport`` so that it does not shadow the standard library's ``json``.
"""

from __future__ import annotations

from typing import Any

import orjson

from analyzer.findings import AnalysisReport
from analyzer.report.types import ReportDocument


def to_document(report: AnalysisReport) -> ReportDocument:
    """The JSON document (a dict) of a report; floats rounded for stable diffs."""
    doc: ReportDocument = _round(report.to_dict())
    return doc


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


class JsonRenderer:
    name = "json"
    extension = ".json"

    def render(self, report: AnalysisReport) -> str:
        return orjson.dumps(to_document(report), option=orjson.OPT_INDENT_2).decode() + "\n"
