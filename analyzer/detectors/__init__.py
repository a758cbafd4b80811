"""Every detector, in the order they run. Add new detectors here (one module each)."""

from __future__ import annotations

from analyzer.detectors.base import Context, Detector
from analyzer.detectors.truncated import TruncatedTimeline

ALL_DETECTORS: tuple[Detector, ...] = (TruncatedTimeline(),)

__all__ = ["ALL_DETECTORS", "Context", "Detector"]
