# cython: infer_types=True, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The loops of the ranks' lateness (:mod:`analyzer.timeline.lateness`), compiled by Cython at install.

Per negotiation, its ticks side by side (:func:`group_lateness`), and per rank, over the
negotiations kept (:func:`rank_stats`). Cython's pure-Python mode, as :mod:`analyzer.timeline._kernels`:
this file, uncompiled, is the reference the tests check the compiled module against.

The distance of a tick from its negotiation's median tick is not kept per tick (8 bytes per tick,
0.1 GB of fresh pages for a 1 GB timeline, which this kind of machine zeroes at 1-1.5 s per GB):
each negotiation keeps its first tick and twice its median tick (an integer: the median of an
even count is a half), from which :func:`rank_stats` and
:meth:`analyzer.timeline.lateness.Lateness.vs_median_us` compute it exactly.

Nor does :func:`rank_stats` copy each rank's values aside to select their medians (another 0.1 GB):
it counts them into histograms (:func:`order_stats`), one pass over the ticks per 6 to 12 bits
of their range (12 with up to 42 ranks).
"""

from __future__ import annotations

import cython
import numpy as np

from analyzer.timeline._kernels import _i32, _i64, _u8

#: the compiled module (False: this file runs as the plain-Python reference)
COMPILED = cython.compiled

I64 = cython.typedef(cython.longlong[::1])
CI64 = cython.typedef(cython.const[cython.longlong][::1])
CI32 = cython.typedef(cython.const[cython.int][::1])
CU8 = cython.typedef(cython.const[cython.uchar][::1])
#: twice the median tick of a negotiation whose ranks were all last: none
NO_MEDIAN = np.iinfo(np.int64).min
_NO_MEDIAN = cython.declare(cython.longlong, NO_MEDIAN)


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _sort(buf: I64, m: cython.Py_ssize_t) -> cython.void:
    """Sort ``buf[:m]`` in place: insertion sort for a few values, else heapsort (no allocation),
    unless they are in order already: a negotiation's ticks are, as Horovod's coordinator writes
    each rank's as it arrives."""
    k: cython.Py_ssize_t = 1
    while k < m and buf[k - 1] <= buf[k]:
        k += 1
    if k >= m:
        return
    if m <= 32:  # buf[:k] is in order already: insert from k on
        for i in range(k, m):
            v = buf[i]
            j = i - 1
            while j >= 0 and buf[j] > v:
                buf[j + 1] = buf[j]
                j -= 1
            buf[j + 1] = v
        return
    start: cython.Py_ssize_t = m // 2 - 1
    while start >= 0:
        _sift(buf, start, m)
        start -= 1
    end: cython.Py_ssize_t = m - 1
    while end > 0:
        buf[0], buf[end] = buf[end], buf[0]
        _sift(buf, 0, end)
        end -= 1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _sift(buf: I64, root: cython.Py_ssize_t, n: cython.Py_ssize_t) -> cython.void:
    """Move ``buf[root]`` down the max-heap ``buf[:n]`` to its place."""
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and buf[child] < buf[child + 1]:
            child += 1
        if buf[root] >= buf[child]:
            return
        buf[root], buf[child] = buf[child], buf[root]
        root = child


def group_lateness(bounds: np.ndarray, ts: np.ndarray, same_cycle_us: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For ticks grouped by negotiation (``bounds``): replaces each tick in ``ts`` by its
    lateness behind the group's first tick, and returns per group its first tick and twice the
    median tick of the ranks that were not last (:data:`NO_MEDIAN` when all were, or the group
    is empty), and per tick whether it was last (within ``same_cycle_us`` of the group's last tick)."""
    bd: CI64 = _i64(bounds)
    t: I64 = ts
    cycle: cython.longlong = same_cycle_us
    n_groups = max(len(bounds) - 1, 0)
    first_a = np.zeros(n_groups, np.int64)
    twice_a = np.full(n_groups, NO_MEDIAN, np.int64)
    last_a = np.empty(len(ts), np.bool_)
    first: I64 = first_a
    twice: I64 = twice_a
    last: cython.uchar[::1] = last_a.view(np.uint8)
    widest: cython.longlong = 0
    for g in range(bd.shape[0] - 1):
        widest = max(widest, bd[g + 1] - bd[g])
    buf: I64 = np.empty(widest, np.int64)
    m: cython.Py_ssize_t
    with cython.nogil:
        for g in range(bd.shape[0] - 1):
            a, b = bd[g], bd[g + 1]
            if a == b:
                continue
            lo = t[a]
            hi = t[a]
            for k in range(a, b):
                lo = min(lo, t[k])
                hi = max(hi, t[k])
            m = 0
            for k in range(a, b):
                last[k] = t[k] >= hi - cycle
                if not last[k]:
                    buf[m] = t[k]
                    m += 1
            if m:  # the median as numpy takes it: the middle value, or the mean of the middle two
                _sort(buf, m)
                twice[g] = 2 * buf[m // 2] if m % 2 else buf[m // 2 - 1] + buf[m // 2]
            first[g] = lo
            for k in range(a, b):
                t[k] -= lo
    return first_a, twice_a, last_a


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _key(
    distance: cython.bint, late: cython.longlong, first: cython.longlong, twice: cython.longlong
) -> cython.longlong:
    """What :func:`order_stats` selects of a tick: its lateness, or (``distance``) twice its
    distance from its negotiation's median tick (0 without one)."""
    if not distance:
        return late
    if twice == _NO_MEDIAN:
        return 0
    return 2 * (late + first) - twice


def rank_stats(
    bounds: np.ndarray,
    keep: np.ndarray,
    rank: np.ndarray,
    late: np.ndarray,
    first: np.ndarray,
    twice_median: np.ndarray,
    last: np.ndarray,
    n_ranks: int,
) -> np.ndarray:
    """Per rank, over the negotiations where ``keep`` holds: ticks, times last, median and
    p90 (linear) lateness, median distance from the median tick (of the groups' ``first`` and
    ``twice_median``, :func:`group_lateness`), each the double numpy's median and percentile
    give. Returns an ``(n_ranks, 5)`` float64 array."""
    ticks = (_i64(bounds), _u8(keep), _i32(rank), _i64(late), _i64(first), _i64(twice_median))
    bd: CI64 = ticks[0]
    kp: CU8 = ticks[1]
    rk: CI32 = ticks[2]
    lt: CI64 = ticks[3]
    fi: CI64 = ticks[4]
    tw: CI64 = ticks[5]
    ls: CU8 = _u8(last)
    count_a = np.zeros(n_ranks, np.int64)
    count: I64 = count_a
    times_last_a = np.zeros(n_ranks, np.int64)
    times_last: I64 = times_last_a
    # per rank its smallest and largest lateness and distance (keys): where their histograms start
    lo_a = np.full((n_ranks, 2), np.iinfo(np.int64).max, np.int64)
    hi_a = np.full((n_ranks, 2), np.iinfo(np.int64).min, np.int64)
    lo: cython.longlong[:, ::1] = lo_a
    hi: cython.longlong[:, ::1] = hi_a
    with cython.nogil:
        for g in range(bd.shape[0] - 1):
            if kp[g]:
                for k in range(bd[g], bd[g + 1]):
                    r = rk[k]
                    count[r] += 1
                    times_last[r] += ls[k]
                    for j in range(2):
                        x = _key(j, lt[k], fi[g], tw[g])
                        lo[r, j] = min(lo[r, j], x)
                        hi[r, j] = max(hi[r, j], x)
    n = count_a
    lo_a[n == 0] = 0
    hi_a[n == 0] = 0
    # numpy's linear percentile: the two values around its virtual index (the last one twice above it)
    virtual = (n - 1) * np.true_divide(90.0, 100)
    above = virtual >= n - 1
    below = np.where(above, n - 1, np.floor(virtual)).astype(np.int64)
    gamma = virtual - below
    # the lateness at the median's and the percentile's positions, then the distance at the median's
    at = np.column_stack([(n - 1) // 2, n // 2, below, np.where(above, n - 1, below + 1), (n - 1) // 2, n // 2])
    at[n == 0] = -1
    distance = np.array([False] * 4 + [True] * 2)
    column = distance.astype(np.intp)
    if n_ranks * len(column) * HISTOGRAM_ROW_BYTES > HISTOGRAM_MAX_BYTES:  # many ranks: memory by the ticks
        keys = order_stats_sorted(ticks, distance, at)
    else:
        keys = order_stats(ticks, distance, lo_a[:, column], hi_a[:, column], at)
    late_keys, distance_keys = keys[:, :4].astype(np.float64), keys[:, 4:].astype(np.float64)
    out = np.zeros((n_ranks, 5), np.float64)
    out[:, 0] = n
    out[:, 1] = times_last_a
    # as numpy computes them: a median is the mean of the middle two values (of the middle one
    # twice when their count is odd: the same double), the percentile numpy's _lerp of its two
    out[:, 2] = (late_keys[:, 0] + late_keys[:, 1]) / 2.0
    a, b = late_keys[:, 2], late_keys[:, 3]
    diff = b - a  # exact: integers below 2**53
    out[:, 3] = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
    out[:, 4] = (distance_keys[:, 0] / 2.0 + distance_keys[:, 1] / 2.0) / 2.0
    out[n == 0, 2:] = 0.0
    return out


#: the histograms of :func:`order_stats` hold at most this many counts in all (4 MB), and at most
#: :data:`MAX_BINS` per target: a pass over the ticks narrows a target's window up to 4096 times
HISTOGRAM_CELLS = 1 << 20
MAX_BINS = 4096


#: the histograms' bytes per target at their narrowest (64 bins and a cache line), and the most
#: :func:`order_stats` may take: beyond it (hundreds of thousands of ranks: one negotiation of a
#: hostile file carried 300,000 ticks and took 6 GB) the ranks' keys are sorted instead, in memory that
#: follows the ticks (:func:`order_stats_sorted`)
HISTOGRAM_ROW_BYTES = ((1 << 6) + 16) * 4
HISTOGRAM_MAX_BYTES = 64 << 20


def order_stats_sorted(ticks: tuple[np.ndarray, ...], distance: np.ndarray, at: np.ndarray) -> np.ndarray:
    """:func:`order_stats` by sorting each rank's keys: the same keys, in memory proportional to the kept
    ticks (a few words each) instead of to ranks x targets."""
    bd, kp, rk, lt, fi, tw = (np.asarray(t) for t in ticks)
    per = np.diff(bd)
    kept = np.repeat(kp.astype(np.bool_), per)
    group = np.repeat(np.arange(len(per)), per)[kept]
    rank = rk[kept].astype(np.int64)
    late = lt[kept].astype(np.int64)
    twice = tw[group]
    none = twice == NO_MEDIAN  # no median tick: the distance is 0 (as _key has it)
    dist = np.where(none, 0, 2 * (late + fi[group]) - np.where(none, 0, twice))
    n_ranks, n_targets = at.shape
    starts = np.zeros(n_ranks + 1, np.int64)
    np.cumsum(np.bincount(rank, minlength=n_ranks), out=starts[1:])
    found = np.zeros((n_ranks, n_targets), np.int64)
    for of_distance in (False, True):
        cols = np.flatnonzero(np.asarray(distance, np.bool_) == of_distance)
        if not len(cols):
            continue
        keys = dist if of_distance else late
        ordered = keys[np.lexsort((keys, rank))]
        for t in cols:
            where = at[:, t] >= 0
            found[where, t] = ordered[starts[:-1][where] + at[where, t]]
    return found


def order_stats(
    ticks: tuple[np.ndarray, ...], distance: np.ndarray, lo: np.ndarray, hi: np.ndarray, at: np.ndarray
) -> np.ndarray:
    """Per rank ``r`` and column ``t`` of ``at``: the key (:func:`_key`: the lateness, or twice the
    distance from the median tick where ``distance[t]``) at position ``at[r, t]`` (-1: none) of
    rank ``r``'s keys in ascending order, over the negotiations kept; ``ticks``: bounds, keep,
    rank, lateness, first and twice the median tick (:func:`rank_stats`); ``lo``/``hi``: each
    rank's smallest and largest key of each column.

    Each target narrows a window of keys, ``[lo, hi]`` at first: a pass over the ticks counts
    the keys inside it into bins (a power of two wide), and the bin where the target's position
    falls is its next window, until a window holds one key. Targets with the same window share
    one histogram (a rank's start together). No value is copied aside."""
    bd, kp, rk, lt, fi, tw = ticks
    n_ranks, n_targets = at.shape
    size = n_ranks * n_targets
    found = np.zeros(size, np.int64)
    start = np.asarray(lo, np.int64).ravel().copy()
    width = np.asarray(hi, np.int64).ravel() - start + 1
    of_distance = np.tile(np.asarray(distance, np.bool_), n_ranks)
    need = np.asarray(at, np.int64).ravel().copy()  # the target's position among its window's keys
    pending = need >= 0
    bits = max(6, min(MAX_BINS.bit_length() - 1, (HISTOGRAM_CELLS // max(size, 1)).bit_length() - 1))
    # rows a cache line longer than the bins: rows a multiple of 4 KB apart make the same bin of two
    # ranks look like one address to the CPU's store forwarding (4K aliasing; 13 M ticks counted in
    # 0.17 s instead of 0.15, measured)
    hist = np.zeros((size, (1 << bits) + 16), np.int32)
    every = np.arange(size)
    while pending.any():
        shift = np.array([max(0, int(w - 1).bit_length() - bits) for w in width], np.int64)
        row = every.copy()  # whose histogram a target reads: the first of its rank with its window
        for i in np.flatnonzero(pending):
            j = i - i % n_targets
            while j < i and not (
                pending[j] and of_distance[j] == of_distance[i] and start[j] == start[i] and width[j] == width[i]
            ):
                j += 1
            row[i] = j
        counting = pending & (row == every)
        hist[counting] = 0
        _histogram(
            bd,
            kp,
            rk,
            lt,
            fi,
            tw,
            n_targets,
            of_distance.view(np.uint8),
            start,
            width,
            shift,
            counting.view(np.uint8),
            hist,
        )
        idx = np.flatnonzero(pending)
        cum = np.cumsum(hist[row[idx], : 1 << bits], axis=1)
        b = (cum <= need[idx, None]).sum(axis=1)  # the bin of the target's position
        need[idx] -= np.where(b > 0, cum[np.arange(len(idx)), np.maximum(b - 1, 0)], 0)
        start[idx] += b << shift[idx]
        width[idx] = np.minimum(1 << shift[idx], width[idx] - (b << shift[idx]))
        done = idx[shift[idx] == 0]
        found[done] = start[done]
        pending[done] = False
    return found.reshape(n_ranks, n_targets)


@cython.cfunc
def _histogram(
    bounds: CI64,
    keep: CU8,
    rank: CI32,
    late: CI64,
    first: CI64,
    twice_median: CI64,
    n_targets: cython.Py_ssize_t,
    distance: CU8,
    start: CI64,
    width: CI64,
    shift: CI64,
    counting: CU8,
    hist: cython.int[:, ::1],
) -> cython.void:
    """Count each kept tick's keys into the histogram of each counting target of its rank whose
    window holds them (:func:`order_stats`)."""
    with cython.nogil:  # beside the detectors that run meanwhile (TimelineModel.steady_ranks)
        for g in range(bounds.shape[0] - 1):
            if keep[g]:
                for k in range(bounds[g], bounds[g + 1]):
                    x0 = late[k]
                    x1 = _key(True, x0, first[g], twice_median[g])
                    i = rank[k] * n_targets
                    for t in range(i, i + n_targets):
                        if counting[t]:
                            d = (x1 if distance[t] else x0) - start[t]
                            if 0 <= d < width[t]:
                                hist[t, d >> shift[t]] += 1
