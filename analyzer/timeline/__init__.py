"""The timeline model: spans, steps, fused batches, rank lateness, cycle, phases and change
points of one timeline, as values built from tables (:mod:`analyzer.timeline.model`);
:mod:`analyzer.timeline.load` is the only part that reads the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.lazy import lazy_names

if TYPE_CHECKING:
    from analyzer.timeline.lateness import Lateness, RankLateness, rank_summary
    from analyzer.timeline.load import analysed_model, build_model
    from analyzer.timeline.model import AnalysisWindow, InputIdentity, TimelineModel, model_from_tables, model_of
    from analyzer.timeline.steps import Segmentation, find_steps, step_table

_FACE = {
    "TimelineModel": "analyzer.timeline.model",
    "InputIdentity": "analyzer.timeline.model",
    "AnalysisWindow": "analyzer.timeline.model",
    "model_from_tables": "analyzer.timeline.model",
    "model_of": "analyzer.timeline.model",
    "analysed_model": "analyzer.timeline.load",
    "build_model": "analyzer.timeline.load",
    "Lateness": "analyzer.timeline.lateness",
    "RankLateness": "analyzer.timeline.lateness",
    "rank_summary": "analyzer.timeline.lateness",
    "Segmentation": "analyzer.timeline.steps",
    "find_steps": "analyzer.timeline.steps",
    "step_table": "analyzer.timeline.steps",
}

__all__ = [
    "TimelineModel",
    "InputIdentity",
    "AnalysisWindow",
    "model_from_tables",
    "model_of",
    "analysed_model",
    "build_model",
    "Lateness",
    "RankLateness",
    "rank_summary",
    "Segmentation",
    "find_steps",
    "step_table",
]

__getattr__ = lazy_names(__name__, _FACE)  # the names above, imported on first use
