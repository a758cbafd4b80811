"""Per-rank lateness from the rank-ready ticks of negotiations.

A tick's ``ts`` is when rank 0's background thread processed that rank's request, so the
resolution is one Horovod cycle, and ranks processed in the same cycle tick in ascending
order a few us apart. For each negotiation with a tick from every rank:

* ``lateness_us`` = tick - the first-ready rank's tick;
* ``last`` = the tick falls within one cycle (:data:`SAME_CYCLE_US`) of the last tick;
* ``vs_median_us`` = tick - the median tick of the ranks that were not last (what the
  job would save if this rank were as early as a typical on-time rank; 0 when every rank
  ticked in the last cycle).

A 1 GB timeline with 64 ranks holds ~13 M ticks, so everything here works on numpy
arrays grouped per negotiation by numba loops (:mod:`analyzer._kernels`), never on a
DataFrame of ticks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from analyzer._kernels import count_ticks, group_lateness, rank_stats, scatter_ticks

SAME_CYCLE_US = 1_000
MIN_TICKED_STEPS = 3  # steady steps with ticks needed to judge ranks (fewer: warm-up only)


@dataclass(frozen=True, slots=True)
class RankLateness:
    rank: int
    negotiations: int
    last: int  # negotiations in which this rank was (among) the last ready
    median_us: float  # lateness behind the first-ready rank
    p90_us: float
    median_vs_median_us: float

    @property
    def last_share(self) -> float:
        return self.last / self.negotiations if self.negotiations else 0.0


@dataclass(frozen=True, eq=False)
class Lateness:
    """Ticks of fully ticked negotiations, contiguous per negotiation.

    Per negotiation (every negotiation of the timeline): ``bounds`` (its ticks are
    ``bounds[g]:bounds[g + 1]``, empty unless fully ticked), ``tick_counts`` (all its ticks,
    fully ticked or not), ``neg_step``, ``neg_end_us`` (NaN while unclosed) and ``keep`` (the negotiations this view covers; selecting makes
    a new view, never a copy of the ticks). Per tick: ``rank``, ``offset`` (of its record
    in the file), ``lateness_us``, ``vs_median_us``, ``last``.
    """

    bounds: np.ndarray
    tick_counts: np.ndarray
    neg_step: np.ndarray
    neg_end_us: np.ndarray
    keep: np.ndarray
    rank: np.ndarray
    offset: np.ndarray
    lateness_us: np.ndarray
    vs_median_us: np.ndarray
    last: np.ndarray

    @property
    def ticked(self) -> np.ndarray:
        """Per negotiation: fully ticked and covered by this view."""
        return self.keep & (self.bounds[1:] > self.bounds[:-1])

    def __len__(self) -> int:
        return int((self.bounds[1:] - self.bounds[:-1])[self.keep].sum())

    @property
    def mask(self) -> np.ndarray:
        """Per tick: covered by this view."""
        return np.repeat(self.keep, np.diff(self.bounds))

    def steps(self) -> np.ndarray:
        """Distinct steps with fully ticked negotiations in this view."""
        return np.unique(self.neg_step[self.ticked])

    def where_negotiations(self, keep: np.ndarray) -> Lateness:
        """The view restricted to the negotiations for which ``keep`` holds."""
        return replace(self, keep=self.keep & keep)

    def first_last_offset(self, rank: int) -> int | None:
        """File offset of the earliest tick in which ``rank`` was (among) the last ready."""
        off = self.offset[self.mask & (self.rank == rank) & self.last]
        return int(off.min()) if len(off) else None


#: ``chunks(with_times)`` yields ``(negotiation_id, rank, ts_us, offset)`` arrays afresh on each call;
#: without ``with_times`` the last two may be None (the counting pass reads only two columns)
Chunks = Callable[[bool], Iterable[tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]]]


def tick_lateness(chunks: Chunks, span_ids: np.ndarray, neg_step: np.ndarray, neg_end_us: np.ndarray) -> Lateness:
    """:class:`Lateness` of ticks given as chunks of ``(negotiation_id, rank, ts_us, offset)``
    arrays (negotiation_id -1: none), for the negotiations whose span ids are ``span_ids``.
    See :data:`Chunks`.

    Two passes over the chunks (count, then copy into per-negotiation slots): no sort, no
    concatenated copy of the ticks and only one chunk of them in memory at a time, which
    matters at ~13 M ticks per GB of timeline.
    """
    n_neg = len(span_ids)
    top = int(span_ids.max(initial=-1))
    lut = np.full(top + 1, -1, np.int64)
    lut[span_ids] = np.arange(n_neg)
    counts = np.zeros(n_neg, np.int64)
    max_rank = -1
    for ids, rank, _, _ in chunks(False):
        max_rank = count_ticks(ids, rank, lut, counts, max_rank)
    full = (counts == max_rank + 1) & (counts > 0)
    bounds = np.zeros(n_neg + 1, np.int64)
    np.cumsum(np.where(full, counts, 0), out=bounds[1:])
    n = int(bounds[-1])
    rank_out, ts_out, off_out = np.empty(n, np.int32), np.empty(n, np.int64), np.empty(n, np.int64)
    fill = bounds[:-1].copy()
    for ids, rank, ts, off in chunks(True):
        scatter_ticks(ids, rank, ts, off, lut, fill, full, rank_out, ts_out, off_out)
    late, vs, last = group_lateness(bounds, ts_out, SAME_CYCLE_US)
    del ts_out
    return Lateness(bounds, counts, np.asarray(neg_step, np.int64), np.asarray(neg_end_us, np.float64), full,
                    rank_out, off_out, late, vs, last)


def rank_summary(lat: Lateness) -> list[RankLateness]:
    """One row per rank, most often last first."""
    if not len(lat):
        return []
    n_ranks = int(lat.rank.max()) + 1
    stats = rank_stats(lat.bounds, lat.keep, lat.rank, lat.lateness_us, lat.vs_median_us, lat.last, n_ranks)
    out = [RankLateness(rank=r, negotiations=int(n), last=int(k), median_us=float(med), p90_us=float(p90),
                        median_vs_median_us=float(vs))
           for r, (n, k, med, p90, vs) in enumerate(stats) if n]
    return sorted(out, key=lambda r: (-r.last, -r.median_us, r.rank))


def loss_per_step(lat: Lateness, ranks: tuple[int, ...]) -> np.ndarray:
    """Per step: how much later than the median rank the given ranks were on the step's
    last-completing negotiation (us, >= 0): the time the step waited for them. An
    unclosed negotiation counts as the last one."""
    negs = np.flatnonzero(lat.ticked)
    if not len(negs) or not ranks:
        return np.empty(0)
    step = lat.neg_step[negs]
    end = np.nan_to_num(lat.neg_end_us[negs], nan=np.inf)
    by = np.lexsort((end, step))
    final = negs[by][np.r_[step[by][1:] != step[by][:-1], True]]
    worst = []
    for g in final:
        a, b = lat.bounds[g], lat.bounds[g + 1]
        v = lat.vs_median_us[a:b][np.isin(lat.rank[a:b], ranks)]
        if len(v):
            worst.append(max(float(v.max()), 0.0))
    return np.asarray(worst)
