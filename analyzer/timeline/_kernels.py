# cython: infer_types=True, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Sequential loops over spans and ticks that numpy cannot vectorise, compiled by Cython at install.

Each kernel walks arrays once (O(n)); the callers sort and prepare the inputs. They are here,
not in the modules that use them, so that compiled modules hold them all: these for spans,
steps, batches and the ticks' grouping, :mod:`analyzer.timeline._lateness_loops` for each
negotiation's lateness and each rank's statistics. Cython's
pure-Python mode: this file, uncompiled, is the reference the tests check the compiled module
against. Each public kernel takes numpy arrays of any integer or bool dtype (read-only ones
too: Arrow's) and views them as the C types of its loops (:func:`_i64`, :func:`_i32`, :func:`_u8`),
copying only an array of another dtype.
"""

from __future__ import annotations

import cython
import numpy as np

#: the compiled module (False: this file runs as the plain-Python reference)
COMPILED = cython.compiled
NO_LIMIT = np.iinfo(np.int64).max

I64 = cython.typedef(cython.longlong[::1])
CI64 = cython.typedef(cython.const[cython.longlong][::1])
CI32 = cython.typedef(cython.const[cython.int][::1])
CU8 = cython.typedef(cython.const[cython.uchar][::1])


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


def min_by_key(keys: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per key in ``[0, n)``, the smallest of its ``values`` (:data:`NO_LIMIT`: none); rows with a
    key outside are left out. ``np.minimum.at`` without its per-row dispatch (0.04 s per M rows)."""
    ky: CI64 = _i64(keys)
    vl: CI64 = _i64(values)
    out_a = np.full(n, NO_LIMIT, np.int64)
    out: I64 = out_a
    with cython.nogil:
        for i in range(ky.shape[0]):
            k = ky[i]
            if 0 <= k < out.shape[0] and vl[i] < out[k]:
                out[k] = vl[i]
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
