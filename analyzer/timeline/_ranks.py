# cython: infer_types=True, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The loops of the ranks' lateness (:mod:`analyzer.timeline.lateness`), compiled by Cython at install.

Per negotiation, its ticks side by side (:func:`group_lateness`), and per rank, over the
negotiations kept (:func:`rank_stats`). Cython's pure-Python mode, as :mod:`analyzer.timeline._kernels`:
this file, uncompiled, is the reference the tests check the compiled module against.

The distance of a tick from its negotiation's median tick is not kept per tick (8 bytes per tick,
0.1 GB of fresh pages for a 1 GB timeline, which this kind of machine zeroes at 1-1.5 s per GB):
each negotiation keeps its first tick and its median tick, from which :func:`rank_stats` and
:meth:`analyzer.timeline.lateness.Lateness.vs_median_us` compute it, in the same double arithmetic.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import cython
import numpy as np

from analyzer.config import available_cores
from analyzer.timeline._kernels import _i32, _i64, _u8

#: the compiled module (False: this file runs as the plain-Python reference)
COMPILED = cython.compiled

I64 = cython.typedef(cython.longlong[::1])
CI64 = cython.typedef(cython.const[cython.longlong][::1])
CI32 = cython.typedef(cython.const[cython.int][::1])
CU8 = cython.typedef(cython.const[cython.uchar][::1])
F64 = cython.typedef(cython.double[::1])
CF64 = cython.typedef(cython.const[cython.double][::1])


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
    lateness behind the group's first tick, and returns per group its first tick and the median
    tick of the ranks that were not last (NaN when all were, or the group is empty), and per
    tick whether it was last (within ``same_cycle_us`` of the group's last tick)."""
    bd: CI64 = _i64(bounds)
    t: I64 = ts
    cycle: cython.longlong = same_cycle_us
    n_groups = max(len(bounds) - 1, 0)
    first_a = np.zeros(n_groups, np.int64)
    typical_a = np.full(n_groups, np.nan)
    last_a = np.empty(len(ts), np.bool_)
    first: I64 = first_a
    typ: F64 = typical_a
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
                typ[g] = buf[m // 2] if m % 2 else (cython.cast(cython.double, buf[m // 2 - 1]) + buf[m // 2]) / 2.0
            first[g] = lo
            for k in range(a, b):
                t[k] -= lo
    return first_a, typical_a, last_a


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _vs(late: cython.longlong, first: cython.longlong, typical: cython.double) -> cython.double:
    """A tick's distance from its negotiation's median tick (0.0 without one), as it was computed
    when each tick kept it: its time as a double minus the median."""
    if typical != typical:  # NaN: every rank was last
        return 0.0
    return cython.cast(cython.double, late + first) - typical


def rank_stats(
    bounds: np.ndarray,
    keep: np.ndarray,
    rank: np.ndarray,
    late: np.ndarray,
    first: np.ndarray,
    typical: np.ndarray,
    last: np.ndarray,
    n_ranks: int,
) -> np.ndarray:
    """Per rank, over the negotiations where ``keep`` holds: ticks, times last, median and
    p90 (linear) lateness, median distance from the median tick (of the groups' ``first`` and
    ``typical``, :func:`group_lateness`). Returns an ``(n_ranks, 5)`` float64 array."""
    bd: CI64 = _i64(bounds)
    kp: CU8 = _u8(keep)
    rk: CI32 = _i32(rank)
    ls: CU8 = _u8(last)
    lt: CI64 = _i64(late)
    count_a = np.zeros(n_ranks + 1, np.int64)
    count: I64 = count_a
    times_last_a = np.zeros(n_ranks, np.int64)
    times_last: I64 = times_last_a
    nr: cython.Py_ssize_t = n_ranks
    with cython.nogil:
        for g in range(bd.shape[0] - 1):
            if kp[g]:
                for k in range(bd[g], bd[g + 1]):
                    count[rk[k] + 1] += 1
                    times_last[rk[k]] += ls[k]
        for r in range(nr):
            count[r + 1] += count[r]
    out = np.zeros((n_ranks, 5), np.float64)
    out[:, 0] = np.diff(count_a)
    out[:, 1] = times_last_a
    # each rank's values side by side in one scratch buffer: the lateness (as the integers it is: a
    # median of integers is the float median of the same values, exact in a double), then the
    # distance from the median, as doubles in the same bytes (fresh pages cost the kernel's zeroing)
    buf_a = np.empty(count_a[n_ranks], np.int64)
    _by_rank(bd, kp, rk, lt, count, buf_a)
    _select(buf_a, count_a, out, 2, True)
    _vs_by_rank(bd, kp, rk, lt, _i64(first), np.ascontiguousarray(typical, np.float64), count, buf_a.view(np.float64))
    _select(buf_a.view(np.float64), count_a, out, 4, False)
    return out


@cython.cfunc
def _by_rank(bounds: CI64, keep: CU8, rank: CI32, values: CI64, count: I64, buf: I64) -> cython.void:
    """Copy ``values`` of the ticks of the negotiations where ``keep`` holds into ``buf``, rank
    ``r``'s at ``buf[count[r]:count[r + 1]]``."""
    fill: I64 = np.asarray(count[: count.shape[0] - 1]).copy()
    j: cython.longlong
    with cython.nogil:  # beside the detectors that run meanwhile (TimelineModel.steady_ranks)
        for g in range(bounds.shape[0] - 1):
            if keep[g]:
                for k in range(bounds[g], bounds[g + 1]):
                    j = fill[rank[k]]
                    buf[j] = values[k]
                    fill[rank[k]] = j + 1


@cython.cfunc
def _vs_by_rank(
    bounds: CI64, keep: CU8, rank: CI32, late: CI64, first: CI64, typical: CF64, count: I64, buf: F64
) -> cython.void:
    """:func:`_by_rank` of each tick's distance from its negotiation's median tick (:func:`_vs`)."""
    fill: I64 = np.asarray(count[: count.shape[0] - 1]).copy()
    j: cython.longlong
    with cython.nogil:
        for g in range(bounds.shape[0] - 1):
            if keep[g]:
                for k in range(bounds[g], bounds[g + 1]):
                    j = fill[rank[k]]
                    buf[j] = _vs(late[k], first[g], typical[g])
                    fill[rank[k]] = j + 1


#: values from which :func:`_select` shares the ranks among threads (below, a thread costs more)
PARALLEL_VALUES = 1 << 20


def _select(buf: np.ndarray, count: np.ndarray, out: np.ndarray, col: int, p90: bool) -> None:
    """Per rank ``r``, the median (and the p90) of ``buf[count[r]:count[r + 1]]`` into ``out[r, col]``
    (and ``out[r, col + 1]``), selected in place: ``buf`` is scratch, and order does not change
    a median or a percentile. numpy's selection releases the GIL, so the ranks of a big
    timeline are shared among threads, one per core: 0.14 -> 0.07 s for 13 M ticks on two."""

    def one(r: int) -> None:
        a, b = count[r], count[r + 1]
        if b > a:
            out[r, col] = np.median(buf[a:b], overwrite_input=True)
            if p90:
                out[r, col + 1] = np.percentile(buf[a:b], 90.0, overwrite_input=True)

    ranks = range(len(count) - 1)
    workers = min(available_cores(), len(ranks)) if count[len(ranks)] >= PARALLEL_VALUES else 1
    if workers < 2:
        for r in ranks:
            one(r)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="hvd-analyze-select") as pool:
        for _ in pool.map(one, ranks):  # each rank's slice is its own: no two threads share one
            pass
