"""Sequential loops over spans that numpy cannot vectorise, compiled with numba.

Each kernel walks arrays once (O(n)); the callers sort and prepare the inputs. They are
here, not in the modules that use them, so that numba's compile cache covers one file.
"""

from __future__ import annotations

import numpy as np
from numba import njit

NO_LIMIT = np.iinfo(np.int64).max


@njit(cache=True, nogil=True)
def assign_recurrence(codes: np.ndarray, n_codes: int) -> np.ndarray:
    """Step index of each occurrence, for occurrences sorted by time.

    A new step starts when a tensor recurs: its code was already seen in the current
    step. Horovod negotiates every gradient once per step, and a step's negotiations all
    start after the previous step's ops ended, so the first repeat is the next step's first.
    """
    out = np.empty(codes.shape[0], np.int64)
    last = np.full(n_codes, -1, np.int64)
    step = -1
    for i in range(codes.shape[0]):
        c = codes[i]
        if step < 0 or last[c] == step:
            step += 1
        last[c] = step
        out[i] = step
    return out


@njit(cache=True, nogil=True)
def union_by_group(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_groups: int
) -> np.ndarray:
    """Length of the union of ``[start, end)`` per group, clipped to ``[lo[g], hi[g])``.

    Rows must be sorted by (group, start). Overlapping spans (a fused batch's copies on
    several pids) count once. Returns an int64 array of length ``n_groups``.
    """
    total = np.zeros(n_groups, np.int64)
    cur_g = -1
    cur_s = 0
    cur_e = 0
    for i in range(group.shape[0]):
        g = group[i]
        if g < 0:
            continue
        s = max(start[i], lo[g])
        e = min(end[i], hi[g])
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
    return total


@njit(cache=True, nogil=True)
def group_batches(
    name: np.ndarray, start_us: np.ndarray, start_off: np.ndarray, exec_off: np.ndarray, max_spread_us: int
) -> np.ndarray:
    """Fused-batch index of each op, for ops sorted by the file offset of their B record.

    Horovod writes the op B of every tensor of a response back to back, then the batch's
    activities; so an op joins the open batch when it has the same name and its B comes
    before the batch began executing (``exec_off``: the first activity B or op E of any
    member). A later op, or one of another type, starts a new batch.
    """
    out = np.empty(name.shape[0], np.int64)
    batch = -1
    cur_name = -1
    cur_exec = NO_LIMIT
    cur_start = 0
    for i in range(name.shape[0]):
        if batch < 0 or name[i] != cur_name or start_off[i] > cur_exec or start_us[i] - cur_start > max_spread_us:
            batch += 1
            cur_name = name[i]
            cur_exec = exec_off[i]
            cur_start = start_us[i]
        elif exec_off[i] < cur_exec:
            cur_exec = exec_off[i]
        out[i] = batch
    return out


@njit(cache=True, nogil=True)
def _negotiation(span_id: int, lut: np.ndarray) -> int:
    """Negotiation index of a tick's ``negotiation_id`` (``lut[span_id]``), -1 when none."""
    return lut[span_id] if 0 <= span_id < lut.shape[0] else -1


@njit(cache=True, nogil=True)
def count_ticks(ids: np.ndarray, rank: np.ndarray, lut: np.ndarray, counts: np.ndarray, max_rank: int) -> int:
    """Add one chunk of ticks to ``counts`` (per negotiation index, ``lut[span_id]``; -1:
    not a negotiation). Returns the highest rank seen so far."""
    for i in range(ids.shape[0]):
        g = _negotiation(ids[i], lut)
        if g < 0:
            continue
        counts[g] += 1
        max_rank = max(max_rank, rank[i])
    return max_rank


@njit(cache=True, nogil=True)
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
    for i in range(ids.shape[0]):
        g = _negotiation(ids[i], lut)
        if g < 0 or not full[g]:
            continue
        j = fill[g]
        fill[g] = j + 1
        out_rank[j] = rank[i]
        out_ts[j] = ts[i]


@njit(cache=True, nogil=True)
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
    for i in range(ids.shape[0]):
        g = _negotiation(ids[i], lut)
        if g < 0 or not full[g]:
            continue
        j = fill[g]
        fill[g] = j + 1
        if keep[g] and last[j] and offset[i] < out[rank[i]]:
            out[rank[i]] = offset[i]


@njit(cache=True, nogil=True)
def group_lateness(bounds: np.ndarray, ts: np.ndarray, same_cycle_us: int) -> tuple[np.ndarray, np.ndarray]:
    """For ticks grouped by negotiation (``bounds``): replaces each tick in ``ts`` by its
    lateness behind the group's first tick, and returns its distance from the median tick of
    the ranks that were not last (0.0 when all were) and whether it was last (within
    ``same_cycle_us`` of the group's last tick)."""
    n = ts.shape[0]
    vs = np.empty(n, np.float64)
    last = np.empty(n, np.bool_)
    widest = 0
    for g in range(bounds.shape[0] - 1):
        widest = max(widest, bounds[g + 1] - bounds[g])
    buf = np.empty(widest, np.int64)
    for g in range(bounds.shape[0] - 1):
        a, b = bounds[g], bounds[g + 1]
        if a == b:
            continue
        lo = ts[a]
        hi = ts[a]
        for k in range(a, b):
            lo = min(lo, ts[k])
            hi = max(hi, ts[k])
        m = 0
        for k in range(a, b):
            last[k] = ts[k] >= hi - same_cycle_us
            if not last[k]:
                buf[m] = ts[k]
                m += 1
        typical = np.median(buf[:m]) if m else 0.0
        for k in range(a, b):
            vs[k] = ts[k] - typical if m else 0.0
            ts[k] -= lo
    return vs, last


@njit(cache=True, nogil=True)
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
    count = np.zeros(n_ranks + 1, np.int64)
    out = np.zeros((n_ranks, 5), np.float64)
    for g in range(bounds.shape[0] - 1):
        if keep[g]:
            for k in range(bounds[g], bounds[g + 1]):
                count[rank[k] + 1] += 1
                out[rank[k], 1] += last[k]
    for r in range(n_ranks):
        count[r + 1] += count[r]
    buf = np.empty(count[n_ranks], np.float64)  # one value per tick, filled twice: lateness, then vs
    _by_rank(bounds, keep, rank, late, count, buf)
    for r in range(n_ranks):
        a, b = count[r], count[r + 1]
        out[r, 0] = b - a
        if b > a:
            out[r, 2] = np.median(buf[a:b])
            out[r, 3] = np.percentile(buf[a:b], 90.0)
    _by_rank(bounds, keep, rank, vs, count, buf)
    for r in range(n_ranks):
        a, b = count[r], count[r + 1]
        if b > a:
            out[r, 4] = np.median(buf[a:b])
    return out


@njit(cache=True, nogil=True)
def _by_rank(
    bounds: np.ndarray, keep: np.ndarray, rank: np.ndarray, values: np.ndarray, count: np.ndarray, buf: np.ndarray
) -> None:
    """Copy ``values`` of the ticks of the negotiations where ``keep`` holds into ``buf``, rank
    ``r``'s at ``buf[count[r]:count[r + 1]]``."""
    fill = count[:-1].copy()
    for g in range(bounds.shape[0] - 1):
        if keep[g]:
            for k in range(bounds[g], bounds[g + 1]):
                buf[fill[rank[k]]] = values[k]
                fill[rank[k]] += 1
