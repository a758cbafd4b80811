"""Analysis settings: the memory budget, the cores to use and every detector threshold, typed and in
one place.

The defaults are the values the detectors were calibrated with on the samples, the captures and
the corpus; docs/detectors.md quotes them, generated from here (``tests/test_docs.py`` checks it).
Each detector reads its own group through ``ctx.config.thresholds``; a caller can analyse with
other values by passing ``AnalysisConfig(thresholds=replace(...))``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

MIB = 1024 * 1024
#: bytes a timeline's analysis may take before it is analysed through a window (``--memory-budget``)
DEFAULT_MEMORY_BUDGET = 4 << 30


def available_cores() -> int:
    """The cores this process may run on (its affinity where the system has one): the default
    number of workers of an ingest, and of the analysis's threaded loops."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _t(default: Any, doc: str) -> Any:
    """A threshold: its default and what it means (docs/detectors.md's threshold tables are made of these)."""
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True, slots=True)
class StragglerThresholds:
    """``timeline.straggler`` (the lateness model: :mod:`analyzer.lateness.judging`)."""

    noise_z: float = _t(
        3.0,
        "a rank is late in a step when its lateness beyond its peers' median is at least this many noise "
        "sigmas (the larger of the peers' spread in the same steps and the rank's own step-to-step jitter) ...",
    )
    min_late_us: int = _t(5_000, "... and at least this (us) ...")
    min_late_share: float = _t(0.05, "... and at least this share of the median step")
    per_step_false_rate: float = _t(
        0.05, "under noise alone a healthy rank is taken to be late in at most this share of the steps ..."
    )
    alpha: float = _t(
        0.01,
        "... and a rank is named when the binomial chance of being late as often by noise is below this "
        "(divided by the ranks compared) ...",
    )
    min_late_steps: int = _t(3, "... and it was late in at least this many steps")
    min_stretch_steps: int = _t(
        10,
        "a rank is also named when its running median over 5 steps stands noise_z x 0.6 sigmas (and the floor) "
        "above its usual level for at least this many steps in a row: a straggler that began or ended mid-run "
        "(a loaded host's scheduler holds a rank back for a few steps at a time)",
    )
    every_step_share: float = _t(
        0.9, "late 'every step' (or throughout a stretch of steps, or at a regular period) in at least this share"
    )
    periodic_share: float = _t(
        0.75,
        "late 'every K-th step' when at least this share of the late steps sit on one period's grid and fill "
        "at least this share of its places",
    )
    noisy_share: float = _t(
        0.25, "the verdict's confidence is low when the bar a rank must clear is at least this share of the median step"
    )
    critical_share: float = _t(0.25, "critical when the time lost per step is at least this share of the median step")
    min_steps: int = _t(
        3,
        "steady steps with per-rank readings (a timeline's ticks, the per-rank traces' collectives) needed to "
        "judge ranks at all; with fewer, a timeline's ranks are read from its warm-up ticks only",
    )
    cause_share: float = _t(
        0.5,
        "traces.straggler names data loading (or host-to-device copies) as the cause when the late rank spends "
        "more on it than its peers' median by at least this share of its lateness; else compute",
    )


@dataclass(frozen=True, slots=True)
class NegotiationWaitThresholds:
    """``timeline.negotiation_wait``."""

    min_floor_us: int = _t(
        10_000, "in 90% of the steps even the shortest gradient negotiation lasts at least this (us) ..."
    )
    min_floor_share: float = _t(0.2, "... and at least this share of the median step")
    rerun_steps: int = _t(300, "steps the advice reruns with the response cache off")


@dataclass(frozen=True, slots=True)
class SlowdownThresholds:
    """``timeline.slowdown`` (the change-point search itself: :mod:`analyzer.timeline.changepoints`)."""

    critical_share: float = _t(
        0.25, "critical when the slow steps cost at least this share of the median step, spread over the run"
    )
    min_last_share: float = _t(
        0.5, "a rank named as late in the slow steps is last ready in at least this share of their negotiations"
    )
    max_listed: int = _t(12, "stretches listed in the evidence; beyond this, the slow ones only")
    min_steps: int = _t(30, "steady steps needed to look for a slowdown at all")
    min_segment_steps: int = _t(10, "a slow stretch lasts at least this many steady steps ...")
    min_segment_share: float = _t(0.05, "... and at least this share of them (as does the baseline before it)")
    min_ratio: float = _t(1.10, "a stretch is slow when its median step is at least this many times the baseline's ...")
    max_p: float = _t(1e-3, "... and a one-sided Mann-Whitney U test puts it above the baseline at this p-value")
    merge_ratio: float = _t(1.05, "neighbouring stretches whose medians differ by less than this ratio are one")
    penalty: float = _t(6.0, "the change-point search's (PELT) penalty, in units of the noise variance x log(blocks)")
    noise_floor: float = _t(
        0.01, "the noise is taken to be at least this share of the median step: smaller shifts are not looked for"
    )
    batch_change: float = _t(
        1.25, "fused batches per step changed when the slow steps' count differs from the baseline's by this ratio"
    )


@dataclass(frozen=True, slots=True)
class LongQueueThresholds:
    """``timeline.long_queue``."""

    min_step_share: float = _t(0.1, "QUEUE per step is at least this share of the median step ...")
    min_comm_share: float = _t(0.3, "... and at least this share of the communication time")


@dataclass(frozen=True, slots=True)
class FusionThresholds:
    """``timeline.fusion_fragmented``."""

    min_tensors: int = _t(4, "at least this many gradient tensors per step")
    min_batch_ratio: float = _t(0.6, "fused batches per step are at least this share of the tensors ...")
    min_singleton_share: float = _t(0.6, "... and at least this share of the batches hold one tensor")
    small_threshold: int = _t(MIB, "a fusion threshold below this (bytes) is too small: the advice raises it")
    late_cycle_ms: float = _t(5, "otherwise the advice is a cycle time of at least this (ms)")


@dataclass(frozen=True, slots=True)
class OverThresholdThresholds:
    """``timeline.tensor_over_fusion_threshold``."""

    min_alone_share: float = _t(
        0.9, "a gradient over the threshold runs alone in at least this share of the steady steps"
    )
    min_company_share: float = _t(
        0.5, "below the upper bound, it counts when another gradient was ready but ran apart in this share"
    )
    bound_slack: float = _t(
        0.01,
        "a gradient within this share of its size below the threshold's upper bound counts as over it (the bound "
        "is a batch that refused a small gradient ready in time: only a threshold in that sliver would hold it)",
    )


@dataclass(frozen=True, slots=True)
class CycleThresholds:
    """``timeline.cycle_time_high``."""

    min_cycle_us: int = _t(2_000, "the cycle time is at least this (us) ...")
    min_step_share: float = _t(0.1, "... and at least this share of the median step")
    min_regularity: float = _t(0.6, "a CYCLE_START markers estimate is used when at least this regular")
    marker_regularity: float = _t(
        0.5, "markers at least this regular time the loop itself (the cycle read with high confidence)"
    )
    burst_gap_us: int = _t(200, "without markers, the coordinator's events closer than this (us) are one burst")
    min_gaps: int = _t(20, "gaps between markers or bursts needed to estimate the cycle at all")
    floor_share: float = _t(
        0.8, "the bursts' gaps show the loop's period when their 5th percentile is at least this share of the 10th ..."
    )
    min_floor_us: int = _t(
        1_500, "... and that floor is at least this (us): sub-ms gaps are an op's end and the next start"
    )


@dataclass(frozen=True, slots=True)
class StartupThresholds:
    """``timeline.startup_skew`` and ``timeline.init_overhead``."""

    min_skew_us: int = _t(100_000, "an initial broadcast waited at least this (us) for the last rank")
    min_init_us: int = _t(500_000, "INIT_NCCL / INIT_FUSION_BUFFER set-up of at least this (us) in all")
    slow_nccl_init_us: int = _t(5_000_000, "one NCCL initialisation this long (us) points at bootstrap networking")
    share_to_name: float = _t(
        0.5, "startup_skew names the last rank when its median lateness is at least this share of the skew"
    )


@dataclass(frozen=True, slots=True)
class NcclThresholds:
    """``nccl.socket_fallback``."""

    socket_speedup: float = _t(
        4.0,
        "RDMA (IB/RoCE/EFA) moves the same bytes at least this many times faster than TCP over the same class of "
        "link, conservatively: the estimate of what leaving sockets wins",
    )


@dataclass(frozen=True, slots=True)
class CompareThresholds:
    """``hvd-analyze compare``: when a change of the step time is more than noise, and a fix check's verdict."""

    alpha: float = _t(0.01, "a change is significant when the Mann-Whitney p-value is below this ...")
    min_effect: float = _t(
        0.474,
        "... and Cliff's delta is at least this far from 0 (a large effect: runs on shared machines drift, so a "
        "small consistent shift is not called a regression; compare --min-effect) ...",
    )
    min_steps: int = _t(5, "... with at least this many steady steps on each side")
    as_predicted: float = _t(0.5, "a fix saved 'as predicted' when it saved at least this share of the prediction")
    bootstrap: int = _t(1000, "bootstrap resamples of the median and p90 intervals")
    max_sample: int = _t(4000, "steps per side the tests read (evenly spaced beyond this)")


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
    nccl: NcclThresholds = field(default_factory=NcclThresholds)
    compare: CompareThresholds = field(default_factory=CompareThresholds)


@dataclass(frozen=True, slots=True)
class AnalysisConfig:
    """What an analysis may use (``memory_budget``, bytes) and the detectors' thresholds."""

    memory_budget: int = DEFAULT_MEMORY_BUDGET
    thresholds: Thresholds = field(default_factory=Thresholds)


def parse_size(text: str, option: str) -> int:
    """Bytes of a size such as ``500M``, ``2G`` or ``2GiB`` given to ``option``.

    Raises:
        UsageError: not a positive size below an exabyte (``inf`` and ``nan`` are not sizes).
    """
    from analyzer.errors import UsageError

    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in "KMG" else ""
    try:
        value = float(t[: len(t) - len(unit)])
    except ValueError:
        value = -1
    if not 0 < value < float(1 << 60) / units[unit]:
        raise UsageError(f"{option} {text!r}: expected a size such as 500M or 2G")
    return int(value * units[unit])
