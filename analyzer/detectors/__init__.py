"""Every detector, in the order they run. Add new detectors here (one module each)."""

from __future__ import annotations

from analyzer.detectors.base import Context, Detector
from analyzer.detectors.cycle_time import CycleTimeHigh
from analyzer.detectors.fusion_fragmented import FusionFragmented
from analyzer.detectors.init_overhead import InitOverhead
from analyzer.detectors.long_queue import LongQueue
from analyzer.detectors.negotiation_wait import NegotiationWait
from analyzer.detectors.over_threshold import TensorOverFusionThreshold
from analyzer.detectors.startup_skew import StartupSkew
from analyzer.detectors.straggler import Straggler
from analyzer.detectors.truncated import TruncatedTimeline

ALL_DETECTORS: tuple[Detector, ...] = (
    TruncatedTimeline(),
    Straggler(),
    NegotiationWait(),
    LongQueue(),
    FusionFragmented(),
    TensorOverFusionThreshold(),
    CycleTimeHigh(),
    StartupSkew(),
    InitOverhead(),
)

__all__ = ["ALL_DETECTORS", "Context", "Detector"]
