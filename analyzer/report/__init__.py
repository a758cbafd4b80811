"""The report: running the detectors (:func:`analyze`), the timeline, NCCL and per-rank trace sections, the
app's views, and the JSON shape as types (:mod:`analyzer.report.types`) with its generated
JSON Schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.lazy import lazy_names

if TYPE_CHECKING:
    from analyzer.report.assembly import analyze, analyze_in
    from analyzer.report.job_view import report_for_job
    from analyzer.report.rank_types import RankTracesDoc
    from analyzer.report.types import FindingDoc, InputDoc, JobDoc, NcclSection, ReportDocument, TimelineSection
    from analyzer.report.verdict import verdict_of
    from analyzer.report.view_types import TimelineViews
    from analyzer.report.views import timeline_views

_FACE = {
    "analyze": "analyzer.report.assembly",
    "analyze_in": "analyzer.report.assembly",
    "timeline_views": "analyzer.report.views",
    "report_for_job": "analyzer.report.job_view",
    "verdict_of": "analyzer.report.verdict",
    "TimelineViews": "analyzer.report.view_types",
    "ReportDocument": "analyzer.report.types",
    "TimelineSection": "analyzer.report.types",
    "NcclSection": "analyzer.report.types",
    "FindingDoc": "analyzer.report.types",
    "InputDoc": "analyzer.report.types",
    "JobDoc": "analyzer.report.types",
    "RankTracesDoc": "analyzer.report.rank_types",
}

__all__ = [
    "analyze",
    "analyze_in",
    "timeline_views",
    "report_for_job",
    "verdict_of",
    "TimelineViews",
    "ReportDocument",
    "TimelineSection",
    "NcclSection",
    "FindingDoc",
    "InputDoc",
    "JobDoc",
    "RankTracesDoc",
]

__getattr__ = lazy_names(__name__, _FACE)  # the names above, imported on first use
