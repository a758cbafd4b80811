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
def union_by_group(group: np.ndarray, start: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                   n_groups: int) -> np.ndarray:
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
def group_batches(name: np.ndarray, start_us: np.ndarray, start_off: np.ndarray, exec_off: np.ndarray,
                  max_spread_us: int) -> np.ndarray:
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
        if (batch < 0 or name[i] != cur_name or start_off[i] > cur_exec
                or start_us[i] - cur_start > max_spread_us):
            batch += 1
            cur_name = name[i]
            cur_exec = exec_off[i]
            cur_start = start_us[i]
        elif exec_off[i] < cur_exec:
            cur_exec = exec_off[i]
        out[i] = batch
    return out
