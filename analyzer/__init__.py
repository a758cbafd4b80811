"""hvd-analyze's analysis: the run store, the timeline and NCCL models, the detectors, the
report and its renderers. ``import analyzer`` is cheap: the names below load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.version import __version__
from parsers.lazy import lazy_names

if TYPE_CHECKING:
    from analyzer.config import DEFAULT_MEMORY_BUDGET, AnalysisConfig, Thresholds
    from analyzer.context import Context
    from analyzer.errors import HvdAnalyzeError, StoreError, UsageError
    from analyzer.findings import Evidence, Finding, Impact, Severity, SourceRef, Suggestion
    from analyzer.render import RENDERERS, renderer_for
    from analyzer.report.assembly import analyze, analyze_in
    from analyzer.report.model import AnalysisReport
    from analyzer.slicing import StepRange, StepTables, chrome_trace, main_timeline, step_tables, step_window
    from analyzer.store.run_store import RunStore, temporary_store

_FACE = {
    "RunStore": "analyzer.store.run_store",
    "temporary_store": "analyzer.store.run_store",
    "analyze": "analyzer.report.assembly",
    "analyze_in": "analyzer.report.assembly",
    "Context": "analyzer.context",
    "AnalysisConfig": "analyzer.config",
    "Thresholds": "analyzer.config",
    "DEFAULT_MEMORY_BUDGET": "analyzer.config",
    "AnalysisReport": "analyzer.report.model",
    "Finding": "analyzer.findings",
    "Severity": "analyzer.findings",
    "Evidence": "analyzer.findings",
    "Impact": "analyzer.findings",
    "Suggestion": "analyzer.findings",
    "SourceRef": "analyzer.findings",
    "HvdAnalyzeError": "analyzer.errors",
    "StoreError": "analyzer.errors",
    "UsageError": "analyzer.errors",
    "RENDERERS": "analyzer.render",
    "renderer_for": "analyzer.render",
    "StepRange": "analyzer.slicing",
    "StepTables": "analyzer.slicing",
    "chrome_trace": "analyzer.slicing",
    "main_timeline": "analyzer.slicing",
    "step_tables": "analyzer.slicing",
    "step_window": "analyzer.slicing",
}

__all__ = [
    "__version__",
    "RunStore",
    "temporary_store",
    "analyze",
    "analyze_in",
    "Context",
    "AnalysisConfig",
    "Thresholds",
    "DEFAULT_MEMORY_BUDGET",
    "AnalysisReport",
    "Finding",
    "Severity",
    "Evidence",
    "Impact",
    "Suggestion",
    "SourceRef",
    "HvdAnalyzeError",
    "StoreError",
    "UsageError",
    "RENDERERS",
    "renderer_for",
    "StepRange",
    "StepTables",
    "chrome_trace",
    "main_timeline",
    "step_tables",
    "step_window",
]

__getattr__ = lazy_names(__name__, _FACE)  # the names above, imported on first use
