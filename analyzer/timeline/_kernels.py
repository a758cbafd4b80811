# cython: infer_types=True, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Sequential loops over spans and ticks that numpy cannot vectorise, compiled by Cython at install.

Each kernel walks arrays once (O(n)); the callers sort and prepare the inputs. They are here,
not in the modules that use them, so that one compiled module holds them all. Cython's
pure-Python mode: this file, uncompiled, is the reference the tests check the compiled module
against. Each public kernel takes numpy arrays of any integer or bool dtype (read-only ones
too: Arrow's) and views them as the C types of its loops (:func:`_i64`, :func:`_i32`, :func:`_u8`),
copying only an array of another dtype.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import cython
import numpy as np

from analyzer.config import available_cores

#: the compiled module (False: this file runs as the plain-Python reference)
COMPILED = cython.compiled
NO_LIMIT = np.iinfo(np.int64).max

I64 = cython.typedef(cython.longlong[::1])
CI64 = cython.typedef(cython.const[cython.longlong][::1])
CI32 = cython.typedef(cython.const[cython.int][::1])
CU8 = cython.typedef(cython.const[cython.uchar][::1])
F64 = cython.typedef(cython.double[::1])


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _i32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int32)


def _u8(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.bool_).view(np.uint8)


def assign_recurrence(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """Step index of each occurrence, for occurrences sorted by time.

    A new step starts when a tensor recurs: its code was already seen in the current
    step. Horovod negotiates every gradient once per step, and a step's negotiations all
    start after the previous step's ops ended, so the first repeat is the next step's first.
    """
    c: CI64 = _i64(codes)
    out_a = np.empty(len(codes), np.int64)
    last_a = np.full(n_codes, -1, np.int64)
    out: I64 = out_a
    last: I64 = last_a
    step: cython.longlong = -1
    for i in range(c.shape[0]):
        k = c[i]
        if step < 0 or last[k] == step:
            step += 1
        last[k] = step
        out[i] = step
    return out_a


def union_by_group(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_groups: int
) -> np.ndarray:
    """Length of the union of ``[start, end)`` per group, clipped to ``[lo[g], hi[g])``.

    Rows must be sorted by (group, start). Overlapping spans (a fused batch's copies on
    several pids) count once. Returns an int64 array of length ``n_groups``.
    """
    gr: CI64 = _i64(group)
    st: CI64 = _i64(start)
    en: CI64 = _i64(end)
    lo_: CI64 = _i64(lo)
    hi_: CI64 = _i64(hi)
    total_a = np.zeros(n_groups, np.int64)
    total: I64 = total_a
    cur_g: cython.longlong = -1
    cur_s: cython.longlong = 0
    cur_e: cython.longlong = 0
    for i in range(gr.shape[0]):
        g = gr[i]
        if g < 0:
            continue
        s = max(st[i], lo_[g])
        e = min(en[i], hi_[g])
        if e <= s:
            continue
        if g != cur_g:
            if cur_g >= 0:
                total[cur_g] += cur_e - cur_s
            cur_g, cur_s, cur_e = g, s, e
        elif s > cur_e:
            total[cur_g] += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_g >= 0:
        total[cur_g] += cur_e - cur_s
    return total_a


def group_batches(
    name: np.ndarray, start_us: np.ndarray, start_off: np.ndarray, exec_off: np.ndarray, max_spread_us: int
) -> np.ndarray:
    """Fused-batch index of each op, for ops sorted by the file offset of their B record.

    Horovod writes the op B of every tensor of a response back to back, then the batch's
    activities; so an op joins the open batch when it has the same name and its B comes
    before the batch began executing (``exec_off``: the first activity B or op E of any
    member). A later op, or one of another type, starts a new batch.
    """
    nm: CI64 = _i64(name)
    su: CI64 = _i64(start_us)
    so: CI64 = _i64(start_off)
    eo: CI64 = _i64(exec_off)
    spread: cython.longlong = max_spread_us
    out_a = np.empty(len(name), np.int64)
    out: I64 = out_a
    batch: cython.longlong = -1
    cur_name: cython.longlong = -1
    cur_exec: cython.longlong = NO_LIMIT
    cur_start: cython.longlong = 0
    for i in range(nm.shape[0]):
        if batch < 0 or nm[i] != cur_name or so[i] > cur_exec or su[i] - cur_start > spread:
            batch += 1
            cur_name = nm[i]
            cur_exec = eo[i]
            cur_start = su[i]
        elif eo[i] < cur_exec:
            cur_exec = eo[i]
        out[i] = batch
    return out_a


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _negotiation(span_id: cython.longlong, lut: CI64) -> cython.longlong:
    """Negotiation index of a tick's ``negotiation_id`` (``lut[span_id]``), -1 when none."""
    return lut[span_id] if 0 <= span_id < lut.shape[0] else -1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _next_slot(span_id: cython.longlong, lut: CI64, full: CU8, fill: I64) -> tuple[cython.longlong, cython.longlong]:
    """A tick's negotiation index and its slot in the negotiation's group (taken: ``fill`` moves on);
    slot -1 when the tick is in no fully ticked negotiation. The one walk :func:`scatter_ticks`
    and :func:`first_last_offsets` share, so that they put each tick in the same slot."""
    g = _negotiation(span_id, lut)
    if g < 0 or not full[g]:
        return g, -1
    j = fill[g]
    fill[g] = j + 1
    return g, j


def count_span_ticks(ids: np.ndarray, rank: np.ndarray, first: int, counts: np.ndarray, top: np.ndarray) -> None:
    """Add one chunk of ticks to ``counts`` and ``top`` (per span id from ``first`` >= 0: ticks naming
    it, and their highest rank, -1 while none). Ticks naming no span (-1) or one outside the arrays
    are left out."""
    ii: CI64 = _i64(ids)
    rk: CI32 = _i32(rank)
    cn: I64 = counts
    tp: I64 = top
    lo: cython.longlong = first
    n: cython.longlong = counts.shape[0]
    with cython.nogil:  # the ticks' first pass runs while the spans are read (load.build_model)
        for i in range(ii.shape[0]):
            k = ii[i] - lo
            if k < 0 or k >= n:  # -1 (no span) too, as first >= 0
                continue
            cn[k] += 1
            tp[k] = max(tp[k], rk[i])


def scatter_ticks(
    ids: np.ndarray,
    rank: np.ndarray,
    ts: np.ndarray,
    lut: np.ndarray,
    fill: np.ndarray,
    full: np.ndarray,
    out_rank: np.ndarray,
    out_ts: np.ndarray,
) -> None:
    """Copy one chunk's ticks of fully ticked negotiations to their group's next free slot."""
    ii: CI64 = _i64(ids)
    rk: CI32 = _i32(rank)
    tt: CI64 = _i64(ts)
    lt: CI64 = _i64(lut)
    fl: I64 = fill
    fu: CU8 = _u8(full)
    orank: cython.int[::1] = out_rank
    ots: I64 = out_ts
    with cython.nogil:
        for i in range(ii.shape[0]):
            _g, j = _next_slot(ii[i], lt, fu, fl)
            if j >= 0:
                orank[j] = rk[i]
                ots[j] = tt[i]


def first_last_offsets(
    ids: np.ndarray,
    rank: np.ndarray,
    offset: np.ndarray,
    lut: np.ndarray,
    fill: np.ndarray,
    full: np.ndarray,
    keep: np.ndarray,
    last: np.ndarray,
    out: np.ndarray,
) -> None:
    """The same walk as :func:`scatter_ticks` (same chunks, same ``fill`` start): per rank,
    the smallest file offset of a tick that was last, in a negotiation where ``keep`` holds
    (``out`` starts at the largest int64)."""
    ii: CI64 = _i64(ids)
    rk: CI32 = _i32(rank)
    of: CI64 = _i64(offset)
    lt: CI64 = _i64(lut)
    fl: I64 = fill
    fu: CU8 = _u8(full)
    kp: CU8 = _u8(keep)
    ls: CU8 = _u8(last)
    o: I64 = out
    for i in range(ii.shape[0]):
        g, j = _next_slot(ii[i], lt, fu, fl)
        if j >= 0 and kp[g] and ls[j] and of[i] < o[rk[i]]:
            o[rk[i]] = of[i]


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


def group_lateness(bounds: np.ndarray, ts: np.ndarray, same_cycle_us: int) -> tuple[np.ndarray, np.ndarray]:
    """For ticks grouped by negotiation (``bounds``): replaces each tick in ``ts`` by its
    lateness behind the group's first tick, and returns its distance from the median tick of
    the ranks that were not last (0.0 when all were) and whether it was last (within
    ``same_cycle_us`` of the group's last tick)."""
    bd: CI64 = _i64(bounds)
    t: I64 = ts
    cycle: cython.longlong = same_cycle_us
    n = len(ts)
    vs_a = np.empty(n, np.float64)
    last_a = np.empty(n, np.bool_)
    vs: F64 = vs_a
    last: cython.uchar[::1] = last_a.view(np.uint8)
    widest: cython.longlong = 0
    for g in range(bd.shape[0] - 1):
        widest = max(widest, bd[g + 1] - bd[g])
    buf: I64 = np.empty(widest, np.int64)
    typical: cython.double
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
            typical = 0.0
            if m:  # the median as numpy takes it: the middle value, or the mean of the middle two
                _sort(buf, m)
                typical = buf[m // 2] if m % 2 else (cython.cast(cython.double, buf[m // 2 - 1]) + buf[m // 2]) / 2.0
            for k in range(a, b):
                vs[k] = t[k] - typical if m else 0.0
                t[k] -= lo
    return vs_a, last_a


def rank_stats(
    bounds: np.ndarray,
    keep: np.ndarray,
    rank: np.ndarray,
    late: np.ndarray,
    vs: np.ndarray,
    last: np.ndarray,
    n_ranks: int,
) -> np.ndarray:
    """Per rank, over the negotiations where ``keep`` holds: ticks, times last, median and
    p90 (linear) lateness, median ``vs``. Returns an ``(n_ranks, 5)`` float64 array."""
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
    # distance from the median, its bits copied into the same bytes (fresh pages cost the kernel's zeroing)
    buf_a = np.empty(count_a[n_ranks], np.int64)
    _by_rank(bd, kp, rk, lt, count, buf_a)
    _select(buf_a, count_a, out, 2, True)
    _by_rank(bd, kp, rk, np.ascontiguousarray(vs, dtype=np.float64).view(np.int64), count, buf_a)
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
