"""Compiled B/E pairing of Horovod timeline events (the rows of :mod:`parsers.timeline._tokenize`).

Horovod's ``E`` events are anonymous: an ``E`` closes the last open ``B`` of its pid. This
kernel keeps a LIFO stack of open spans per pid (slots in a pool, linked by ``S_PREV``) and
emits a span row when its ``E`` comes, with its parent, depth, the op it belongs to and its
kind; rank ticks (``X``) are attached to the innermost open ``NEGOTIATE_*`` of their pid.
It reads event rows in file order, whoever tokenized them (one thread, or several workers
each a range of the file), so the rows it writes do not depend on how the file was cut.

Contract of :func:`pair`: rows ``events[at:n]`` are applied in order; when an output array is
full (``ST_FULL``) or a state array too small (``ST_GROW``: ``ctr[C_NEED]`` says which) it
returns the first row not applied, and the caller flushes or grows and calls again.
Both kernels release the GIL (``nogil``).
"""

from __future__ import annotations

from numba import njit

from parsers.timeline._tokenize import (
    EV_A,
    EV_B,
    EV_C,
    EV_OFF,
    EV_PH,
    EV_PID,
    EV_TS,
    I_NEG_IN_OP,
    I_ORPHAN_E,
    I_TICK_OUTSIDE,
    MISSING,
    PH_B,
    PH_E,
    PH_X,
    _issue,
)

ST_DONE = 0  # every row applied
ST_FULL = 2  # an output array is full; flush and call again
ST_GROW = 4  # a state array is too small; grow and call again

# --- counters (ctr) ---------------------------------------------------------------
C_SPAN_ID = 0  # next span id
C_FREE = 1  # head of the slot free list (-1 = none)
C_SLOT_HW = 2  # slots ever used
C_NEED = 3  # with ST_GROW: 1 = pid arrays, 2 = slots
C_NEED_PID = 4  # with ST_GROW/1: the pid that did not fit
C_MAX_DEPTH = 5  # deepest stack seen (1-based)
C_TICKS = 6  # ticks emitted
C_NCTR = 8

# --- slot fields (open spans) ------------------------------------------------------
S_SPAN, S_TS, S_NAME, S_DEPTH, S_OP, S_OFF, S_PREV, S_NEG, S_TICKS, S_PID = range(10)
S_N = 10

# --- span rows ---------------------------------------------------------------------
SP_ID, SP_PID, SP_NAME, SP_DEPTH, SP_KIND, SP_START, SP_END, SP_PARENT, SP_OP = range(9)
SP_DTYPE, SP_SHAPE, SP_NUMEL, SP_SOFF, SP_EOFF = range(9, 14)
SP_N = 14
KIND_NEGOTIATE, KIND_OP, KIND_ACTIVITY = 0, 1, 2

# --- tick rows / marker rows ------------------------------------------------------------
TK_PID, TK_NEG, TK_RANK, TK_TS, TK_ORDER, TK_OFF = range(6)
TK_N = 6
MK_NAME, MK_TS, MK_OFF = range(3)
MK_N = 3

# --- per-pid statistics ------------------------------------------------------------
P_NEG, P_TICKED, P_OPS, P_FIRST_TS, P_OPNAME = range(5)
P_N = 5


@njit(cache=True)
def _emit_span(spans, ns, slots, slot, end_ts, end_off, dtype_id, shape_id, numel):
    spans[ns, SP_ID] = slots[slot, S_SPAN]
    spans[ns, SP_PID] = slots[slot, S_PID]
    spans[ns, SP_NAME] = slots[slot, S_NAME]
    spans[ns, SP_DEPTH] = slots[slot, S_DEPTH]
    if slots[slot, S_NEG] == 1:
        spans[ns, SP_KIND] = KIND_NEGOTIATE
    elif slots[slot, S_OP] == slots[slot, S_SPAN]:
        spans[ns, SP_KIND] = KIND_OP
    else:
        spans[ns, SP_KIND] = KIND_ACTIVITY
    spans[ns, SP_START] = slots[slot, S_TS]
    spans[ns, SP_END] = end_ts
    prev = slots[slot, S_PREV]
    spans[ns, SP_PARENT] = slots[prev, S_SPAN] if prev >= 0 else -1
    spans[ns, SP_OP] = slots[slot, S_OP]
    spans[ns, SP_DTYPE] = dtype_id
    spans[ns, SP_SHAPE] = shape_id
    spans[ns, SP_NUMEL] = numel
    spans[ns, SP_SOFF] = slots[slot, S_OFF]
    spans[ns, SP_EOFF] = end_off


@njit(cache=True)
def _close_negotiation_stats(pstat, slots, slot):
    if slots[slot, S_NEG] == 1 and slots[slot, S_TICKS] > 0:
        pstat[slots[slot, S_PID], P_TICKED] += 1


@njit(cache=True, nogil=True)
def pair(events, at, n, ctr, iss, top, pstat, slots, spans, ticks, marks, outn):
    """Apply event rows ``events[at:n]``; see the module docstring. Returns (status, row).

    ``outn`` receives the number of rows written: [spans, ticks, marks].
    """
    ns = 0
    nt = 0
    nm = 0
    status = ST_DONE
    r = at
    while r < n:
        if ns >= spans.shape[0] or nt >= ticks.shape[0] or nm >= marks.shape[0]:
            status = ST_FULL
            break
        ph = events[r, EV_PH]
        pid = events[r, EV_PID]
        ts = events[r, EV_TS]
        off = events[r, EV_OFF]
        if ph == PH_B:
            if pid >= top.shape[0]:
                ctr[C_NEED] = 1
                ctr[C_NEED_PID] = pid
                status = ST_GROW
                break
            if ctr[C_FREE] < 0 and ctr[C_SLOT_HW] >= slots.shape[0]:
                ctr[C_NEED] = 2
                status = ST_GROW
                break
            nid = events[r, EV_A]
            is_neg = events[r, EV_B] == 1
            slot = ctr[C_FREE]
            if slot >= 0:
                ctr[C_FREE] = slots[slot, S_PREV]
            else:
                slot = ctr[C_SLOT_HW]
                ctr[C_SLOT_HW] += 1
            parent = top[pid]
            sid = ctr[C_SPAN_ID]
            ctr[C_SPAN_ID] = sid + 1
            slots[slot, S_SPAN] = sid
            slots[slot, S_TS] = ts
            slots[slot, S_NAME] = nid
            slots[slot, S_DEPTH] = slots[parent, S_DEPTH] + 1 if parent >= 0 else 0
            slots[slot, S_OFF] = off
            slots[slot, S_PREV] = parent
            slots[slot, S_NEG] = 1 if is_neg else 0
            slots[slot, S_TICKS] = 0
            slots[slot, S_PID] = pid
            ctr[C_MAX_DEPTH] = max(ctr[C_MAX_DEPTH], slots[slot, S_DEPTH] + 1)
            parent_op = slots[parent, S_OP] if parent >= 0 else -1
            if is_neg:
                if parent >= 0:
                    _issue(iss, I_NEG_IN_OP, off)
                slots[slot, S_OP] = -1
                pstat[pid, P_NEG] += 1
            elif parent_op >= 0:
                slots[slot, S_OP] = parent_op
            else:
                slots[slot, S_OP] = sid
                pstat[pid, P_OPS] += 1
                if pstat[pid, P_OPNAME] < 0:
                    pstat[pid, P_OPNAME] = nid
            if pstat[pid, P_FIRST_TS] == MISSING:
                pstat[pid, P_FIRST_TS] = ts
            top[pid] = slot
        elif ph == PH_E:
            if pid < 0 or pid >= top.shape[0] or top[pid] < 0:
                _issue(iss, I_ORPHAN_E, off)
            else:
                slot = top[pid]
                _emit_span(spans, ns, slots, slot, ts, off, events[r, EV_A], events[r, EV_B], events[r, EV_C])
                ns += 1
                _close_negotiation_stats(pstat, slots, slot)
                top[pid] = slots[slot, S_PREV]
                slots[slot, S_PREV] = ctr[C_FREE]
                ctr[C_FREE] = slot
        elif ph == PH_X:
            neg = -1
            order = 0
            if 0 <= pid < top.shape[0]:
                s = top[pid]
                while s >= 0 and slots[s, S_NEG] == 0:
                    s = slots[s, S_PREV]
                if s >= 0:
                    neg = slots[s, S_SPAN]
                    order = slots[s, S_TICKS]
                    slots[s, S_TICKS] = order + 1
            if neg < 0:
                _issue(iss, I_TICK_OUTSIDE, off)
            ticks[nt, TK_PID] = pid
            ticks[nt, TK_NEG] = neg
            ticks[nt, TK_RANK] = events[r, EV_A]
            ticks[nt, TK_TS] = ts
            ticks[nt, TK_ORDER] = order
            ticks[nt, TK_OFF] = off
            nt += 1
            ctr[C_TICKS] += 1
        else:  # instant marker
            marks[nm, MK_NAME] = events[r, EV_A]
            marks[nm, MK_TS] = ts
            marks[nm, MK_OFF] = off
            nm += 1
        r += 1
    outn[0] = ns
    outn[1] = nt
    outn[2] = nm
    return status, r


@njit(cache=True, nogil=True)
def drain(top, pstat, slots, spans):
    """Emit every still-open span as unclosed (end = -1). Returns the number of rows."""
    ns = 0
    for pid in range(top.shape[0]):
        s = top[pid]
        while s >= 0 and ns < spans.shape[0]:
            _emit_span(spans, ns, slots, s, -1, -1, -1, -1, -1)
            _close_negotiation_stats(pstat, slots, s)
            ns += 1
            s = slots[s, S_PREV]
        top[pid] = -1
    return ns
