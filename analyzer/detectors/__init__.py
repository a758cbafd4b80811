"""Every detector, in the order they run. Add new detectors here (one module each)."""

from __future__ import annotations

from analyzer.detectors.autotune_result import AutotuneResult
from analyzer.detectors.base import Detector
from analyzer.detectors.cycle_time import CycleTimeHigh
from analyzer.detectors.fusion_fragmented import FusionFragmented
from analyzer.detectors.horovod_stall import HorovodStall
from analyzer.detectors.init_overhead import InitOverhead
from analyzer.detectors.long_queue import LongQueue
from analyzer.detectors.nccl_error import NcclError
from analyzer.detectors.nccl_ib_disabled import IbDisabled
from analyzer.detectors.nccl_init_incomplete import InitIncomplete
from analyzer.detectors.nccl_no_gdrdma import NoGdrdma
from analyzer.detectors.nccl_ras import RasReportDetector
from analyzer.detectors.nccl_socket_fallback import SocketFallback
from analyzer.detectors.nccl_version_mismatch import ReleaseWording, VersionMismatch
from analyzer.detectors.nccl_watchdog import WatchdogTimeout
from analyzer.detectors.negotiation_wait import NegotiationWait
from analyzer.detectors.over_threshold import TensorOverFusionThreshold
from analyzer.detectors.rank_coverage import RankCoverage
from analyzer.detectors.rank_straggler import RankStraggler
from analyzer.detectors.slowdown import StepSlowdown
from analyzer.detectors.startup_skew import StartupSkew
from analyzer.detectors.straggler import Straggler
from analyzer.detectors.truncated import TruncatedTimeline
from analyzer.detectors.worker_exit import WorkerExit

ALL_DETECTORS: tuple[Detector, ...] = (
    TruncatedTimeline(),
    Straggler(),
    RankStraggler(),
    RankCoverage(),
    NegotiationWait(),
    StepSlowdown(),
    LongQueue(),
    FusionFragmented(),
    TensorOverFusionThreshold(),
    CycleTimeHigh(),
    StartupSkew(),
    InitOverhead(),
    SocketFallback(),
    IbDisabled(),
    NoGdrdma(),
    VersionMismatch(),
    ReleaseWording(),
    NcclError(),  # before the init it broke: the verdict names the cause first
    InitIncomplete(),
    WatchdogTimeout(),
    RasReportDetector(),
    WorkerExit(),
    HorovodStall(),
    AutotuneResult(),
)

__all__ = ["ALL_DETECTORS", "Detector"]
