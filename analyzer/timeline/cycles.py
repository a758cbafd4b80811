"""The Horovod cycle time in effect, from ``CYCLE_START`` markers or from the file's rhythm.

Horovod's background loop runs once per cycle (``HOROVOD_CYCLE_TIME``, 1 ms by default
since 0.21, 5 ms before): negotiations end and batches start only at cycle boundaries.
With markers (``HOROVOD_TIMELINE_MARK_CYCLES=1``) the cycle is their median spacing.
Without them, the coordinator's own events (negotiation B/E, op B) are grouped into
bursts (events less than ``burst_gap_us`` apart) and the cycle is the 10th
percentile of the gaps between bursts: busy cycles are stretched by their work, idle
ones are not observed, and the short gaps are the loop's period. ``regularity`` is the
share of gaps within 0.15 cycle of a whole number of cycles: near 1 when the loop's
period dominates the file's rhythm, low when the bursts come from something else (few
events, ops of varying length).

How far an estimate is the cycle in effect (:attr:`CycleEstimate.confidence`):

* ``high``: regular ``CYCLE_START`` markers, which time the loop itself;
* ``medium``: bursts whose short gaps pile up at a floor (the 5th percentile at least
  ``floor_share`` of the 10th, the floor at least ``min_floor_us``). The loop answers
  at most once per cycle, so when the coordinator's responses are never closer than a floor,
  and many sit right at it, the floor is the cycle: a 20 ms cycle reads 13-16 ms at the 5th and
  16-17 ms at the 10th percentile. At Horovod's 1 ms default the short gaps are the work's
  own spacing and spread out (5th/10th 0.35-0.6 on 40 real runs);
* ``low``: anything else; the report calls it unknown and no advice rests on it.

The range (:attr:`CycleEstimate.low_us`, :attr:`CycleEstimate.high_us`) is the markers' middle
half, or the bursts' 5th to 25th percentile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from analyzer.config import CycleThresholds

DEFAULT_CYCLE_US = 1_000.0  # HOROVOD_CYCLE_TIME default since 0.21, used when no estimate exists

Confidence = Literal["high", "medium", "low"]


@dataclass(frozen=True, slots=True)
class CycleEstimate:
    cycle_us: float
    method: Literal["markers", "bursts"]
    samples: int
    regularity: float
    low_us: float = 0.0  # the range the cycle in effect is read to lie in
    high_us: float = 0.0
    floor_share: float = 0.0  # bursts: their 5th percentile over their 10th
    confidence: Confidence = "low"  # how far the estimate is the cycle time in effect (the module's docstring)

    @property
    def confident(self) -> bool:
        """Whether the estimate is the cycle time in effect (confidence high or medium): a setting
        may be advised from it. A burst rhythm without a floor is not: the loop idles between
        bursts only when it has nothing to do, and on a busy loop their gaps are the ops' lengths
        (real runs at the 1 ms default read 0.25-11 ms)."""
        return self.confidence != "low"


def cadence_gaps(markers_us: np.ndarray, spans: pd.DataFrame, t: CycleThresholds) -> tuple[str, np.ndarray]:
    """The gaps (us) the cycle is read from, and how: ``markers`` (between ``CYCLE_START``
    markers, when there are enough) or ``bursts`` (between distinct negotiation and operation
    start times and negotiation ends, gaps under ``t.burst_gap_us`` dropped)."""
    if len(markers_us) > t.min_gaps:
        return "markers", np.diff(markers_us)
    # masks over three columns, not a filtered copy of the frame (1.7 M spans per GB of timeline)
    in_step = spans["step"].to_numpy() >= 0
    neg = in_step & (spans["kind"] == "negotiate").to_numpy()
    start, end = spans["start_us"].to_numpy(), spans["end_us"].to_numpy()
    times = np.concatenate(
        [
            start[neg],
            end[neg & spans["closed"].to_numpy()],
            start[in_step & (spans["kind"] == "op").to_numpy()],
        ]
    )
    # the gaps between distinct times: those between sorted times, ties (0) dropped below; a sort,
    # not np.unique, whose hashing took 0.5 s for the 0.6 M times of a 1 GB timeline (numpy 2.4)
    gaps = np.diff(np.sort(times)) if len(times) >= 2 else np.empty(0, np.int64)
    return "bursts", gaps[gaps >= t.burst_gap_us]


def estimate_cycle(markers_us: np.ndarray, spans: pd.DataFrame, t: CycleThresholds) -> CycleEstimate | None:
    """The cycle time from the ``CYCLE_START`` markers or the spans (with their ``step``), or
    ``None`` with too few samples to tell."""
    method, gaps = cadence_gaps(markers_us, spans, t)
    if method == "markers":
        cycle = float(np.median(gaps))
        q1, q3 = (float(x) for x in np.percentile(gaps, [25, 75]))
        regularity = _regularity(gaps, cycle)
        confidence: Confidence = "high" if regularity >= t.marker_regularity else "low"
        return CycleEstimate(cycle, "markers", len(gaps), regularity, q1, q3, confidence=confidence)
    if len(gaps) < t.min_gaps:
        return None
    p5, cycle, p25 = (float(x) for x in np.percentile(gaps, [5, 10, 25]))
    floor = p5 / cycle if cycle > 0 else 0.0
    confidence = "medium" if floor >= t.floor_share and p5 >= t.min_floor_us else "low"
    return CycleEstimate(cycle, "bursts", len(gaps), _regularity(gaps, cycle), p5, p25, floor, confidence)


def _regularity(gaps: np.ndarray, cycle: float) -> float:
    if cycle <= 0:
        return 0.0
    ratio = gaps / cycle
    whole = np.round(ratio)
    return float(np.mean((whole >= 1) & (np.abs(ratio - whole) <= 0.15)))
