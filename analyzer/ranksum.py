"""The Mann-Whitney U (Wilcoxon rank-sum) test on two samples of step times.

Both the slowdown search (:mod:`analyzer.timeline.changepoints`: is a stretch of steps slower than
every step before it?) and the comparison of two runs (:mod:`analyzer.compare.stats`) ask it. The
p-values are scipy's (``scipy.stats.mannwhitneyu``, ``method="auto"``): the exact distribution of
U when a sample has at most 8 values and no value is tied, else the normal approximation with
the tie and continuity corrections. Written here so that a report does not import scipy for it
(0.5 s of start-up in a process that uses nothing else of scipy); ``tests/analyzer/test_ranksum.py``
checks it against scipy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EXACT_UP_TO = 8  # scipy's rule: the exact distribution when a sample has at most this many values (and no ties)


@dataclass(frozen=True, slots=True)
class RankSum:
    """U of the second sample (pairs where it is larger, ties counted half), with the sizes and
    the tie term of the pooled ranks."""

    u: float
    n1: int
    n2: int
    ties: float  # sum of t^3 - t over the groups of tied values

    @property
    def mean(self) -> float:
        return self.n1 * self.n2 / 2.0

    @property
    def var(self) -> float:
        n = self.n1 + self.n2
        return self.n1 * self.n2 / 12.0 * ((n + 1) - self.ties / (n * (n - 1)))

    @property
    def delta(self) -> float:
        """Cliff's delta: P(second > first) - P(second < first)."""
        return 2.0 * self.u / (self.n1 * self.n2) - 1.0


def rank_sum(first: np.ndarray, second: np.ndarray) -> RankSum:
    """The U statistic of ``second`` against ``first`` (both non-empty)."""
    n1, n2 = len(first), len(second)
    both = np.concatenate([np.asarray(first, np.float64), np.asarray(second, np.float64)])
    _values, inverse, counts = np.unique(both, return_inverse=True, return_counts=True)
    mid_rank = np.cumsum(counts) - (counts - 1) / 2.0  # the average rank of each distinct value (1-based)
    u = float(mid_rank[inverse[n1:]].sum()) - n2 * (n2 + 1) / 2.0
    return RankSum(u, n1, n2, float((counts.astype(np.float64) ** 3 - counts).sum()))


def p_greater(first: np.ndarray, second: np.ndarray) -> float:
    """One-sided p-value that ``second`` tends to be larger than ``first``
    (``mannwhitneyu(second, first, alternative="greater")``)."""
    r = rank_sum(first, second)
    if _exact(r):
        return _exact_sf(r.n2, r.n1, round(r.u))
    if r.var <= 0:
        return 1.0
    z = (r.u - r.mean - 0.5) / math.sqrt(r.var)
    return min(1.0, 0.5 * math.erfc(z / math.sqrt(2.0)))


def p_two_sided(first: np.ndarray, second: np.ndarray, method: str = "auto") -> tuple[float, float]:
    """Two-sided p-value (``mannwhitneyu(second, first, method=method)``, ``auto`` or
    ``asymptotic``) and Cliff's delta of ``second`` over ``first``."""
    r = rank_sum(first, second)
    if method == "auto" and _exact(r):
        u = round(max(r.u, r.n1 * r.n2 - r.u))
        return min(1.0, 2.0 * _exact_sf(r.n2, r.n1, u)), r.delta
    if r.var <= 0:  # every value the same on both sides
        return 1.0, r.delta
    z = (abs(r.u - r.mean) - 0.5) / math.sqrt(r.var)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))), r.delta


def _exact(r: RankSum) -> bool:
    return min(r.n1, r.n2) <= EXACT_UP_TO and r.ties == 0


def _exact_sf(m: int, n: int, u: int) -> float:
    """P(U >= u) for a sample of ``m`` against one of ``n``, no ties: the counts of each U are the
    coefficients of the Gaussian binomial product of (1 - q^(n+i)) / (1 - q^i), i = 1..m."""
    counts = np.zeros(m * n + 1, np.float64)
    counts[0] = 1.0
    for i in range(1, m + 1):
        counts[n + i :] -= counts[: m * n + 1 - (n + i)].copy()  # times (1 - q^(n+i))
        for r in range(i):  # divided by (1 - q^i): a running sum with step i
            counts[r::i] = np.cumsum(counts[r::i])
    return float(counts[max(u, 0) :].sum() / counts.sum())
