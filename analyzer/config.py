"""Analysis settings: the memory budget and every detector threshold, typed and in one place.

The defaults are the values the detectors were calibrated with on the samples, the captures and
the corpus; the README's "What it detects" table quotes them (``tests/test_docs.py`` checks it).
Each detector reads its own group through ``ctx.config.thresholds``; a caller can analyse with
other values by passing ``AnalysisConfig(thresholds=replace(...))``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIB = 1024 * 1024
#: bytes a timeline's analysis may take before it is analysed through a window (``--memory-budget``)
DEFAULT_MEMORY_BUDGET = 4 << 30


@dataclass(frozen=True, slots=True)
class StragglerThresholds:
    """``timeline.straggler``."""

    min_last_share: float = 0.5  # among the last ready in at least this share of the negotiations
    min_late_us: int = 5_000  # and at least this far behind the median rank ...
    min_late_share: float = 0.05  # ... and this share of the median step
    critical_share: float = 0.25  # critical when the loss per step is at least this share of the step


@dataclass(frozen=True, slots=True)
class NegotiationWaitThresholds:
    """``timeline.negotiation_wait``."""

    min_floor_us: int = 10_000  # the shortest gradient negotiation of a step lasts at least this ...
    min_floor_share: float = 0.2  # ... and this share of the median step, in 90% of the steps
    rerun_steps: int = 300  # steps to rerun with the response cache off


@dataclass(frozen=True, slots=True)
class SlowdownThresholds:
    """``timeline.slowdown`` (the change-point search itself: :mod:`analyzer.timeline.changepoints`)."""

    critical_share: float = 0.25  # time lost per steady step, as a share of the median step
    min_last_share: float = 0.5  # a rank named as late in the slow steps is last in this share of them
    max_listed: int = 12  # stretches listed in the evidence; beyond, the slow ones only


@dataclass(frozen=True, slots=True)
class LongQueueThresholds:
    """``timeline.long_queue``."""

    min_step_share: float = 0.1  # QUEUE per step at least this share of the step ...
    min_comm_share: float = 0.3  # ... and of the communication time


@dataclass(frozen=True, slots=True)
class FusionThresholds:
    """``timeline.fusion_fragmented``."""

    min_tensors: int = 4  # gradient tensors per step
    min_batch_ratio: float = 0.6  # batches per step, as a share of the tensors
    min_singleton_share: float = 0.6  # single-tensor batches, as a share of the batches
    small_threshold: int = MIB  # a fusion threshold below this is "tiny"
    late_cycle_ms: float = 5  # the least cycle time suggested when the threshold is not the cause


@dataclass(frozen=True, slots=True)
class OverThresholdThresholds:
    """``timeline.tensor_over_fusion_threshold``."""

    min_alone_share: float = 0.9  # the tensor runs alone in at least this share of the steady steps
    min_company_share: float = 0.5  # another op of its type was ready in this share of them: likely


@dataclass(frozen=True, slots=True)
class CycleThresholds:
    """``timeline.cycle_time_high``."""

    min_cycle_us: int = 2_000
    min_step_share: float = 0.1  # the cycle is at least this share of the median step
    min_regularity: float = 0.6  # a burst-rhythm estimate must be at least this regular


@dataclass(frozen=True, slots=True)
class StartupThresholds:
    """``timeline.startup_skew`` and ``timeline.init_overhead``."""

    min_skew_us: int = 100_000  # an initial broadcast waited this long for the last rank
    min_init_us: int = 500_000  # INIT_NCCL / INIT_FUSION_BUFFER set-up in all
    slow_nccl_init_us: int = 5_000_000  # one NCCL initialisation this long points at bootstrap networking


@dataclass(frozen=True, slots=True)
class Thresholds:
    straggler: StragglerThresholds = field(default_factory=StragglerThresholds)
    negotiation_wait: NegotiationWaitThresholds = field(default_factory=NegotiationWaitThresholds)
    slowdown: SlowdownThresholds = field(default_factory=SlowdownThresholds)
    long_queue: LongQueueThresholds = field(default_factory=LongQueueThresholds)
    fusion: FusionThresholds = field(default_factory=FusionThresholds)
    over_threshold: OverThresholdThresholds = field(default_factory=OverThresholdThresholds)
    cycle: CycleThresholds = field(default_factory=CycleThresholds)
    startup: StartupThresholds = field(default_factory=StartupThresholds)


@dataclass(frozen=True, slots=True)
class AnalysisConfig:
    """What an analysis may use (``memory_budget``, bytes) and the detectors' thresholds."""

    memory_budget: int = DEFAULT_MEMORY_BUDGET
    thresholds: Thresholds = field(default_factory=Thresholds)
