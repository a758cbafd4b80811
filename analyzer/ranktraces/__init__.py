"""Per-rank profiler traces of a job: its ranks' steps and collectives, matched across ranks, and their
lateness for the one lateness model (:mod:`analyzer.lateness`)."""

from __future__ import annotations

from analyzer.ranktraces.model import RankTrace, RankTraceSet

__all__ = ["RankTrace", "RankTraceSet"]
