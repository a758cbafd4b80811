"""Per-rank lateness from the rank-ready ticks of negotiations.

A tick's ``ts`` is when rank 0's background thread processed that rank's request, so the
resolution is one Horovod cycle, and ranks processed in the same cycle tick in ascending
order a few us apart. For each negotiation with a tick from every rank:

* ``lateness_us`` = tick - the first-ready rank's tick;
* ``last`` = the tick falls within one cycle (:data:`SAME_CYCLE_US`) of the last tick and more
  than one cycle after the first (ranks that all ticked in one cycle tie: none of them is last);
* ``vs_median_us`` = tick - the median tick of the ranks that were not last (what the
  job would save if this rank were as early as a typical on-time rank; 0 when every rank
  ticked in the last cycle); each negotiation keeps its median tick, and a tick's distance
  from it is computed where it is read.

A 1 GB timeline with 64 ranks holds ~13 M ticks, so everything here works on numpy
arrays grouped per negotiation by compiled loops (:mod:`analyzer.timeline._kernels`,
:mod:`analyzer.timeline._lateness_loops`), never on a DataFrame of ticks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from analyzer.lateness.model import StepLateness, from_readings
from analyzer.timeline._kernels import (
    count_span_ticks,
    scatter_ticks,
)
from analyzer.timeline._kernels import (
    first_last_offsets as first_last_offsets_kernel,
)
from analyzer.timeline._lateness_loops import NO_MEDIAN, group_lateness, rank_stats

SAME_CYCLE_US = 1_000
NO_OFFSET = np.iinfo(np.int64).max


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
    fully ticked or not), ``neg_step``, ``neg_end_us`` (NaN while unclosed), ``keep`` (the
    negotiations this view covers; selecting makes a new view, never a copy of the ticks),
    ``first_us`` (its first tick) and ``twice_median_us`` (twice the median tick of its ranks that
    were not last, :data:`NO_MEDIAN` when all were: :meth:`vs_median_us`). Per tick: ``rank``,
    ``lateness_us``, ``last`` (13 bytes). The file offsets of the ticks' records, which only
    the evidence of a finding needs, are not kept: :func:`first_last_offsets` reads them again
    from the tick source when a finding asks (one pass for every rank of a view).
    """

    bounds: np.ndarray
    tick_counts: np.ndarray
    neg_step: np.ndarray
    neg_end_us: np.ndarray
    keep: np.ndarray
    rank: np.ndarray
    lateness_us: np.ndarray
    first_us: np.ndarray
    twice_median_us: np.ndarray
    last: np.ndarray
    lut: np.ndarray  # negotiation index of a span id (-1: not a negotiation of this view's timeline)

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

    def vs_median_us(self, g: int) -> np.ndarray:
        """Per tick of negotiation ``g``: its distance from the median tick of the ranks that were
        not last (0.0 when all were), as :func:`analyzer.timeline._lateness_loops.rank_stats` computes it."""
        a, b = int(self.bounds[g]), int(self.bounds[g + 1])
        twice = int(self.twice_median_us[g])
        if twice == NO_MEDIAN:
            return np.zeros(b - a)
        vs: np.ndarray = (2 * (self.lateness_us[a:b] + self.first_us[g]) - twice) / 2.0
        return vs

    def where_negotiations(self, keep: np.ndarray) -> Lateness:
        """The view restricted to the negotiations for which ``keep`` holds."""
        return replace(self, keep=self.keep & keep)


#: ``chunks(columns)`` yields, afresh on each call, one array per named column of the ticks table
#: (``negotiation_id`` with -1 for none, ``rank``, ``ts_us``, ``offset``), one record batch at a time:
#: each pass reads only the columns it needs
Chunks = Callable[[tuple[str, ...]], Iterable[tuple[np.ndarray, ...]]]
#: every column of the ticks table that :data:`Chunks` are asked for
TICK_COLUMNS = ("negotiation_id", "rank", "ts_us", "offset")


def table_chunks(batches: Callable[[list[str]], Iterable[pa.RecordBatch]]) -> Chunks:
    """:data:`Chunks` over record batches of the ticks table: ``batches(columns)`` yields them
    (from the store, or from an Arrow table in memory: ``lambda cols: table.select(cols).to_batches()``)."""

    def chunks(columns: tuple[str, ...]) -> Iterator[tuple[np.ndarray, ...]]:
        for b in batches(list(columns)):
            yield tuple(
                # fill_null copies even a column without nulls: 0.1 GB per pass over a 1 GB timeline's ticks
                (pc.fill_null(c, -1) if name == "negotiation_id" and c.null_count else c).to_numpy()
                for name, c in zip(columns, b.columns, strict=True)
            )

    return chunks


def first_last_offsets(lat: Lateness, chunks: Chunks) -> np.ndarray:
    """Per rank, the file offset of the earliest tick of ``lat``'s view in which the rank was
    (among) the last ready (:data:`NO_OFFSET`: none), from one pass over the ticks' offsets."""
    out = np.full(int(lat.rank.max(initial=-1)) + 1, NO_OFFSET, np.int64)
    fill = lat.bounds[:-1].copy()
    full = lat.bounds[1:] > lat.bounds[:-1]
    for ids, ranks, off in chunks(("negotiation_id", "rank", "offset")):
        first_last_offsets_kernel(ids, ranks, off, lat.lut, fill, full, lat.keep, lat.last, out)
    return out


@dataclass(frozen=True, slots=True)
class SpanTicks:
    """The first pass over the ticks: per span id from :attr:`first`, how many ticks name it as
    their negotiation (:attr:`counts`) and the highest rank among them (:attr:`top`, -1: none)."""

    first: int
    counts: np.ndarray
    top: np.ndarray

    def of(self, span_ids: np.ndarray) -> tuple[np.ndarray, int]:
        """The tick count of each of ``span_ids`` and the highest rank of their ticks (-1: none)."""
        at = span_ids - self.first
        inside = (at >= 0) & (at < len(self.counts))
        counts = np.zeros(len(span_ids), np.int64)
        counts[inside] = self.counts[at[inside]]
        return counts, int(self.top[at[inside]].max(initial=-1))


def span_ticks(chunks: Chunks, first: int = 0, last: int | None = None) -> SpanTicks:
    """:class:`SpanTicks` of the ticks read through ``chunks`` that name a span id in
    ``[first, last]`` (``last`` None: any, the arrays grow with the ids met; a run's span ids are
    its spans' numbers, so they stay ~12 bytes per span). Needs no span: it can run while the
    spans are read."""
    size = 0 if last is None else max(last - first + 1, 0)
    counts, top = np.zeros(size, np.int64), np.full(size, -1, np.int64)
    for ids, rank in chunks(("negotiation_id", "rank")):
        need = int(ids.max(initial=-1)) - first + 1
        if last is None and need > len(counts):
            grow = max(need, 2 * len(counts)) - len(counts)
            counts = np.concatenate([counts, np.zeros(grow, np.int64)])
            top = np.concatenate([top, np.full(grow, -1, np.int64)])
        count_span_ticks(ids, rank, first, counts, top)
    return SpanTicks(first, counts, top)


#: the most ranks a negotiation's ticks are read as: 2^20, beyond any Horovod job run (the largest
#: published ran on 27,360 GPUs). A negotiation naming more is left out of the ranks' statistics and
#: counted (:func:`oversized`): at 3 M ranks their rows alone took 24 s and 1.6 GB, and grow linearly
MAX_WORLD = 1 << 20


def tick_lateness(
    chunks: Chunks,
    span_ids: np.ndarray,
    neg_step: np.ndarray,
    neg_end_us: np.ndarray,
    counted: Callable[[], SpanTicks] | None = None,
) -> Lateness:
    """:class:`Lateness` of the ticks read through ``chunks`` (:data:`Chunks`), for the
    negotiations whose span ids are ``span_ids``.

    Two passes over the chunks (count, then copy into per-negotiation slots): no sort, no
    concatenated copy of the ticks and only one chunk of them in memory at a time, which
    matters at ~13 M ticks per GB of timeline. The result holds 13 bytes per tick, which is
    also the peak (the lateness replaces the tick times in place). ``counted`` gives the first
    pass (:func:`span_ticks`) when the caller started it earlier, before the spans were read.
    """
    n_neg = len(span_ids)
    top = int(span_ids.max(initial=-1))
    lut = np.full(top + 1, -1, np.int64)
    lut[span_ids] = np.arange(n_neg)
    first = int(span_ids.min()) if n_neg else 0  # the pass's arrays span these ids only (a window's)
    ticks = counted() if counted is not None else span_ticks(chunks, first, top)
    counts, max_rank = ticks.of(span_ids)
    del ticks
    full = (counts == max_rank + 1) & (counts > 0) & (counts <= MAX_WORLD)
    bounds = np.zeros(n_neg + 1, np.int64)
    np.cumsum(np.where(full, counts, 0), out=bounds[1:])
    n = int(bounds[-1])
    rank_out, ts_out = np.empty(n, np.int32), np.empty(n, np.int64)
    fill = bounds[:-1].copy()
    for ids, rank, ts in chunks(("negotiation_id", "rank", "ts_us")):
        scatter_ticks(ids, rank, ts, lut, fill, full, rank_out, ts_out)
    first_us, twice_median_us, last = group_lateness(bounds, ts_out, SAME_CYCLE_US)  # ts_out now holds the lateness
    # ties: in a negotiation whose ranks all ticked within one cycle, nobody was late, so nobody is
    # "last" (else in a healthy 64-rank run every rank was last in most negotiations)
    last &= ts_out > SAME_CYCLE_US
    return Lateness(
        bounds,
        counts,
        np.asarray(neg_step, np.int64),
        np.asarray(neg_end_us, np.float64),
        full,
        rank_out,
        ts_out,
        first_us,
        twice_median_us,
        last,
        lut,
    )


def oversized(lat: Lateness) -> int:
    """How many negotiations of ``lat`` name more ranks than :data:`MAX_WORLD` (left out)."""
    return int((lat.tick_counts > MAX_WORLD).sum())


def rank_summary(lat: Lateness) -> list[RankLateness]:
    """One row per rank, most often last first."""
    if not len(lat):
        return []
    n_ranks = int(lat.rank.max()) + 1
    stats = rank_stats(
        lat.bounds, lat.keep, lat.rank, lat.lateness_us, lat.first_us, lat.twice_median_us, lat.last, n_ranks
    )
    present = np.flatnonzero(stats[:, 0] > 0)
    order = present[np.lexsort((present, -stats[present, 2], -stats[present, 1]))]  # last, median: high first
    return [
        RankLateness(rank=r, negotiations=int(n), last=int(k), median_us=med, p90_us=p90, median_vs_median_us=vs)
        for r, (n, k, med, p90, vs) in zip(order.tolist(), stats[order].tolist(), strict=True)
    ]


#: Horovod's coordinator: rank 0 stamps its own readiness at once, the others' when their request reaches it
COORDINATOR = 0


def step_lateness(lat: Lateness) -> StepLateness:
    """The view's ticks as the ranks' lateness model (:class:`analyzer.lateness.StepLateness`): per
    step and rank, the median of the rank's lateness over the step's fully ticked negotiations."""
    mask = lat.mask
    return from_readings(
        np.repeat(lat.neg_step, np.diff(lat.bounds))[mask],
        lat.rank[mask],
        lat.lateness_us[mask],
        COORDINATOR,
        "rank-ready ticks of the timeline's negotiations",
    )
