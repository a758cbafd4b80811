"""Where the step time shifts within a run, and what the added time is spent on.

:func:`find_slowdown` segments the steady step durations of the whole run (every step, also
when a window's detail is analysed: :attr:`~analyzer.timeline.model.TimelineModel.all_steps`)
with PELT (L2 cost, :func:`pelt`) on the medians of blocks of steps, which ignore single slow
steps (checkpoints, evaluation); each change is then placed at the step of its block that best
splits the raw durations. The onset is the first segment lasting at least ``min_segment_steps``
steps (and ``min_segment_share`` of them) whose median is at least ``min_ratio`` times the median of
every steady step before it (the baseline, itself at least that long), and which is slower than them
by a one-sided Mann-Whitney U test at ``max_p`` (the numbers are
:class:`analyzer.config.SlowdownThresholds`): a run that wanders (a shared machine) has short fast
stretches, and measuring against the fastest would flag its normal speed. The slow segments are the
lasting ones from the onset on at ``min_ratio`` times the baseline. A slow start that gets faster is
warm-up, not a slowdown.

:func:`attribute` splits the added time per step (median of the slow steps minus median of the
baseline's) into three parts, from the step table's columns:

* ``wait``: the step's last negotiation waited longer (``wait_us``). A negotiation lasts from the
  first rank ready with the gradient to the last, cache on or off (``docs/formats/horovod-timeline.md``
  §4, §5), so this is the slowest rank finishing backward later than the fastest: some rank(s) lag.
* ``exposed``: the time from the last negotiation's end to the step's end grew: communication
  that nothing overlaps got slower.
* ``compute``: the rest, up to the first rank ready with the last gradient. Every rank took
  longer, alike.

A step's duration is exactly the sum of the three (previous end to the start of the last
negotiation, its length, then the tail); the split compares medians of each part.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pandas as pd

from analyzer.config import SlowdownThresholds
from analyzer.ranksum import p_greater

MAX_BLOCKS = 200  # PELT costs ~ blocks^2 (3 ms at 200, numpy per end); the refinement restores the step


@dataclass(frozen=True, slots=True)
class Segment:
    """Consecutive steady steps ``[first, stop)`` (indices into the steady steps) of one speed."""

    first: int
    stop: int
    first_step: int  # step numbers of the first and last steady step in it
    last_step: int
    median_us: float

    @property
    def steps(self) -> int:
        return self.stop - self.first


@dataclass(frozen=True, slots=True)
class Slowdown:
    """A run whose step time rose after :attr:`baseline` (every steady step before the onset,
    pooled); :attr:`slow` are the slow segments, the onset first."""

    segments: tuple[Segment, ...]
    baseline: Segment
    slow: tuple[Segment, ...]
    steady_steps: int
    min_steps: int  # a segment this long lasts
    min_ratio: float  # a segment this many times the baseline's median is slow

    @property
    def onset(self) -> Segment:
        return self.slow[0]

    @property
    def worst(self) -> Segment:
        return max(self.slow, key=lambda s: s.median_us)

    @property
    def ratio(self) -> float:
        """The onset's median over the baseline's."""
        return self.onset.median_us / self.baseline.median_us

    @property
    def slow_steps(self) -> int:
        return sum(s.steps for s in self.slow)

    @property
    def lost_us(self) -> float:
        """Time the slow segments took beyond the baseline's speed (their medians)."""
        return float(sum((s.median_us - self.baseline.median_us) * s.steps for s in self.slow))

    @property
    def after(self) -> tuple[Segment, ...]:
        """The lasting segments after the last slow one."""
        return tuple(g for g in self.segments if g.first >= self.slow[-1].stop and g.steps >= self.min_steps)

    @property
    def recovered(self) -> bool:
        """The run went back under :attr:`min_ratio` times the baseline after its last slow stretch
        (short blips aside, as for the slow stretches)."""
        return bool(self.after) and all(g.median_us < self.min_ratio * self.baseline.median_us for g in self.after)


@dataclass(frozen=True, slots=True)
class Attribution:
    """The added median step time of the slow steps, split (us; the parts may be negative)."""

    added_us: float
    wait_us: float
    exposed_us: float
    compute_us: float

    @property
    def cause(self) -> str:
        """``wait``, ``exposed`` or ``compute``: the part that grew most."""
        parts = {"wait": self.wait_us, "exposed": self.exposed_us, "compute": self.compute_us}
        return max(parts, key=parts.__getitem__)


def find_slowdown(steps: pd.DataFrame, t: SlowdownThresholds) -> Slowdown | None:
    """The slowdown in a step table (:data:`analyzer.timeline.steps.STEP_COLUMNS`), None if the run kept its speed."""
    steady = steps[steps["steady"]]
    d = steady["duration_us"].to_numpy(dtype=np.float64)
    n = len(d)
    if n < t.min_steps:
        return None
    numbers = steady["step"].to_numpy(dtype=np.int64)
    segments = _merge(_segments(d, t), d, numbers, t.merge_ratio)
    min_steps = max(t.min_segment_steps, int(np.ceil(t.min_segment_share * n)))
    lasting = [s for s in segments if s.steps >= min_steps]
    for onset in lasting:
        if onset.first < min_steps:
            continue
        ratio, p = stretch_test(d, onset.first, onset.stop)
        if ratio < t.min_ratio or p >= t.max_p:
            continue
        base = float(np.median(d[: onset.first]))
        baseline = Segment(
            first=0,
            stop=onset.first,
            first_step=int(numbers[0]),
            last_step=int(numbers[onset.first - 1]),
            median_us=base,
        )
        slow = tuple(s for s in lasting if s.first >= onset.first and s.median_us >= t.min_ratio * base)
        return Slowdown(tuple(segments), baseline, slow, n, min_steps, t.min_ratio)
    return None


def stretch_test(d: np.ndarray, first: int, stop: int) -> tuple[float, float]:
    """How much slower the durations ``d[first:stop]`` are than every one before them: the ratio
    of the medians, and the p-value of a one-sided Mann-Whitney U test (the onset's criteria)."""
    stretch, before = d[first:stop], d[:first]
    ratio = float(np.median(stretch) / np.median(before))
    return ratio, p_greater(before, stretch)


def attribute(steps: pd.DataFrame, slowdown: Slowdown) -> Attribution:
    """Split the slow steps' added median time into wait, exposed communication and compute."""
    steady = steps[steps["steady"]].reset_index(drop=True)
    base = steady.iloc[slowdown.baseline.first : slowdown.baseline.stop]
    slow = pd.concat([steady.iloc[s.first : s.stop] for s in slowdown.slow])

    def medians(rows: pd.DataFrame) -> tuple[float, float, float]:
        duration = rows["duration_us"].to_numpy(dtype=np.float64)
        tail = (rows["end_us"] - rows["ready_us"]).to_numpy(dtype=np.float64, na_value=np.nan)
        wait = rows["wait_us"].to_numpy(dtype=np.float64, na_value=np.nan)
        return float(np.median(duration)), _median(tail), _median(wait)

    (d0, t0, w0), (d1, t1, w1) = medians(base), medians(slow)
    added, wait, exposed = d1 - d0, w1 - w0, t1 - t0
    return Attribution(added_us=added, wait_us=wait, exposed_us=exposed, compute_us=added - wait - exposed)


def _median(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    return float(np.median(x)) if len(x) else 0.0


def _segments(d: np.ndarray, t: SlowdownThresholds) -> list[tuple[int, int]]:
    """``[first, stop)`` index ranges of the durations ``d`` between change points."""
    n = len(d)
    block = max(1, -(-n // MAX_BLOCKS))
    blocks = n // block
    m = np.median(d[: blocks * block].reshape(blocks, block), axis=1)
    diffs = np.diff(m)
    sigma = 1.4826 * float(np.median(np.abs(diffs - np.median(diffs)))) / np.sqrt(2) if len(diffs) else 0.0
    sigma = max(sigma, t.noise_floor * float(np.median(m)), 1.0)
    min_blocks = max(1, int(np.ceil(max(t.min_segment_steps, t.min_segment_share * n) / block / 2)))
    ends = pelt(m, min_blocks, t.penalty * sigma**2 * np.log(max(blocks, 2)))
    cuts = [_refine(d, e * block, block) for e in ends[:-1]]  # the last end is the number of blocks
    bounds = [0, *cuts, n]
    return [(a, b) for a, b in pairwise(bounds) if b > a]


def pelt(signal: np.ndarray, min_size: int, pen: float) -> list[int]:
    """The ends of the segments of ``signal`` that minimise the sum, over segments, of the squared
    deviations from the segment's mean plus ``pen``, none shorter than ``min_size``; the last end is
    ``len(signal)``. PELT (Killick, Fearnhead and Eckley, 2012): the optimal cost of every prefix,
    each from the candidate starts that can still win, exact. The candidates and the ties (the
    earliest start wins) are those of ruptures' ``Pelt(model="l2", jump=1)``, which this replaces
    (importing it took 0.5 s with scipy); ``tests/analyzer/detectors/test_slowdown.py`` checks they agree."""
    n = len(signal)
    if n < min_size or n == 0:
        return [n]
    s1 = np.concatenate(([0.0], np.cumsum(signal, dtype=np.float64)))
    s2 = np.concatenate(([0.0], np.cumsum(np.square(signal, dtype=np.float64))))
    best = np.zeros(n + 1)  # best[t]: the optimal cost of signal[:t], a penalty per segment
    start = np.zeros(n + 1, np.int64)  # where the last segment of that optimum starts
    candidates = np.zeros(0, np.int64)
    for end in [*range(min_size, n), n]:
        new = end - min_size  # a start that leaves min_size values; it must close a prefix itself
        if new == 0 or new >= min_size:
            candidates = np.append(candidates, new)
        size = end - candidates
        total = best[candidates] + s2[end] - s2[candidates] - (s1[end] - s1[candidates]) ** 2 / size + pen
        k = int(np.argmin(total))
        best[end], start[end] = total[k], candidates[k]
        candidates = candidates[total <= best[end] + pen]  # those that can never win again are dropped
    ends = [n]
    while (prev := int(start[ends[-1]])) > 0:
        ends.append(prev)
    return ends[::-1]


def _refine(d: np.ndarray, cut: int, block: int) -> int:
    """The index near ``cut`` (one block either side) that best splits ``d`` around it (L1 about the medians)."""
    if block == 1:
        return cut
    lo, hi = max(1, cut - block), min(len(d) - 1, cut + block)
    window = d[max(0, cut - 2 * block) : min(len(d), cut + 2 * block)]
    offset = max(0, cut - 2 * block)
    best, best_cost = cut, np.inf
    for c in range(lo, hi + 1):
        left, right = window[: c - offset], window[c - offset :]
        if not len(left) or not len(right):
            continue
        cost = np.abs(left - np.median(left)).sum() + np.abs(right - np.median(right)).sum()
        if cost < best_cost:
            best, best_cost = c, cost
    return best


def _merge(ranges: list[tuple[int, int]], d: np.ndarray, numbers: np.ndarray, merge_ratio: float) -> list[Segment]:
    """Segments of ``ranges``, neighbours whose medians differ by less than ``merge_ratio`` joined."""
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        if out:
            pa_, pb = out[-1]
            m0, m1 = float(np.median(d[pa_:pb])), float(np.median(d[a:b]))
            if max(m0, m1) < merge_ratio * min(m0, m1):
                out[-1] = (pa_, b)
                continue
        out.append((a, b))
    return [
        Segment(
            first=a,
            stop=b,
            first_step=int(numbers[a]),
            last_step=int(numbers[b - 1]),
            median_us=float(np.median(d[a:b])),
        )
        for a, b in out
    ]
