# cython: infer_types=True, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled B/E pairing of Horovod timeline events (the rows of :mod:`parsers.timeline._tokenize`).

Horovod's ``E`` events are anonymous: an ``E`` closes the last open ``B`` of its pid. This
kernel keeps a LIFO stack of open spans per pid (slots in a pool, linked by ``S_PREV``) and
emits a span row when its ``E`` comes, with its parent, depth, the op it belongs to and its
kind; rank ticks (``X``) are attached to the innermost open ``NEGOTIATE_*`` of their pid.
It reads event rows in file order, whoever tokenized them (one thread, or several workers
each a range of the file), so the rows it writes do not depend on how the file was cut.

Contract of :func:`pair`: rows ``events[at:n]`` are applied in order; when an output array is
full (``ST_FULL``) or a state array too small (``ST_GROW``: ``ctr[C_NEED]`` says which) it
returns the first row not applied, and the caller flushes or grows and calls again. The rows'
string ids are their tokenizer's: ``pair`` reads them as the file's through the maps it is given
(a range's tokenizer interns strings in its own order), as it applies each row.
Both kernels run without the GIL. Compiled by Cython at install (pure-Python mode: this file,
uncompiled, is the reference the tests check the compiled module against); the row layouts are
in :mod:`parsers.timeline.layout`.
"""

from __future__ import annotations

import cython

from parsers.timeline import layout as L

#: the compiled module (False: this file runs as the plain-Python reference)
COMPILED = cython.compiled

Rows = cython.typedef(cython.longlong[:, ::1])
#: the output rows: column-major arrays (``order="F"``), so that each column is an Arrow buffer as it is
Out = cython.typedef(cython.longlong[:, :])
Ints = cython.typedef(cython.longlong[::1])

# the layout as C values in the compiled module (Python reads parsers.timeline.layout)
ST_DONE = cython.declare(cython.longlong, L.ST_DONE)
ST_FULL = cython.declare(cython.longlong, L.ST_FULL)
ST_GROW = cython.declare(cython.longlong, L.ST_GROW)
MISSING = cython.declare(cython.longlong, L.MISSING)
PH_B = cython.declare(cython.longlong, L.PH_B)
PH_E = cython.declare(cython.longlong, L.PH_E)
PH_X = cython.declare(cython.longlong, L.PH_X)
PH_I = cython.declare(cython.longlong, L.PH_I)
EV_A = cython.declare(cython.Py_ssize_t, L.EV_A)
EV_B = cython.declare(cython.Py_ssize_t, L.EV_B)
EV_C = cython.declare(cython.Py_ssize_t, L.EV_C)
EV_OFF = cython.declare(cython.Py_ssize_t, L.EV_OFF)
EV_PH = cython.declare(cython.Py_ssize_t, L.EV_PH)
EV_PID = cython.declare(cython.Py_ssize_t, L.EV_PID)
EV_TS = cython.declare(cython.Py_ssize_t, L.EV_TS)
I_NEG_IN_OP = cython.declare(cython.Py_ssize_t, L.I_NEG_IN_OP)
I_ORPHAN_E = cython.declare(cython.Py_ssize_t, L.I_ORPHAN_E)
I_TICK_OUTSIDE = cython.declare(cython.Py_ssize_t, L.I_TICK_OUTSIDE)
C_SPAN_ID = cython.declare(cython.Py_ssize_t, L.C_SPAN_ID)
C_FREE = cython.declare(cython.Py_ssize_t, L.C_FREE)
C_SLOT_HW = cython.declare(cython.Py_ssize_t, L.C_SLOT_HW)
C_NEED = cython.declare(cython.Py_ssize_t, L.C_NEED)
C_NEED_PID = cython.declare(cython.Py_ssize_t, L.C_NEED_PID)
C_MAX_DEPTH = cython.declare(cython.Py_ssize_t, L.C_MAX_DEPTH)
C_TICKS = cython.declare(cython.Py_ssize_t, L.C_TICKS)
S_SPAN = cython.declare(cython.Py_ssize_t, L.S_SPAN)
S_TS = cython.declare(cython.Py_ssize_t, L.S_TS)
S_NAME = cython.declare(cython.Py_ssize_t, L.S_NAME)
S_DEPTH = cython.declare(cython.Py_ssize_t, L.S_DEPTH)
S_OP = cython.declare(cython.Py_ssize_t, L.S_OP)
S_OFF = cython.declare(cython.Py_ssize_t, L.S_OFF)
S_PREV = cython.declare(cython.Py_ssize_t, L.S_PREV)
S_NEG = cython.declare(cython.Py_ssize_t, L.S_NEG)
S_TICKS = cython.declare(cython.Py_ssize_t, L.S_TICKS)
S_PID = cython.declare(cython.Py_ssize_t, L.S_PID)
SP_ID = cython.declare(cython.Py_ssize_t, L.SP_ID)
SP_PID = cython.declare(cython.Py_ssize_t, L.SP_PID)
SP_NAME = cython.declare(cython.Py_ssize_t, L.SP_NAME)
SP_DEPTH = cython.declare(cython.Py_ssize_t, L.SP_DEPTH)
SP_KIND = cython.declare(cython.Py_ssize_t, L.SP_KIND)
SP_START = cython.declare(cython.Py_ssize_t, L.SP_START)
SP_END = cython.declare(cython.Py_ssize_t, L.SP_END)
SP_PARENT = cython.declare(cython.Py_ssize_t, L.SP_PARENT)
SP_OP = cython.declare(cython.Py_ssize_t, L.SP_OP)
SP_DTYPE = cython.declare(cython.Py_ssize_t, L.SP_DTYPE)
SP_SHAPE = cython.declare(cython.Py_ssize_t, L.SP_SHAPE)
SP_NUMEL = cython.declare(cython.Py_ssize_t, L.SP_NUMEL)
SP_SOFF = cython.declare(cython.Py_ssize_t, L.SP_SOFF)
SP_EOFF = cython.declare(cython.Py_ssize_t, L.SP_EOFF)
KIND_NEGOTIATE = cython.declare(cython.Py_ssize_t, L.KIND_NEGOTIATE)
KIND_OP = cython.declare(cython.Py_ssize_t, L.KIND_OP)
KIND_ACTIVITY = cython.declare(cython.Py_ssize_t, L.KIND_ACTIVITY)
TK_PID = cython.declare(cython.Py_ssize_t, L.TK_PID)
TK_NEG = cython.declare(cython.Py_ssize_t, L.TK_NEG)
TK_RANK = cython.declare(cython.Py_ssize_t, L.TK_RANK)
TK_TS = cython.declare(cython.Py_ssize_t, L.TK_TS)
TK_ORDER = cython.declare(cython.Py_ssize_t, L.TK_ORDER)
TK_OFF = cython.declare(cython.Py_ssize_t, L.TK_OFF)
MK_NAME = cython.declare(cython.Py_ssize_t, L.MK_NAME)
MK_TS = cython.declare(cython.Py_ssize_t, L.MK_TS)
MK_OFF = cython.declare(cython.Py_ssize_t, L.MK_OFF)
P_NEG = cython.declare(cython.Py_ssize_t, L.P_NEG)
P_TICKED = cython.declare(cython.Py_ssize_t, L.P_TICKED)
P_OPS = cython.declare(cython.Py_ssize_t, L.P_OPS)
P_FIRST_TS = cython.declare(cython.Py_ssize_t, L.P_FIRST_TS)
P_OPNAME = cython.declare(cython.Py_ssize_t, L.P_OPNAME)


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _issue(iss: Rows, k: cython.Py_ssize_t, off: cython.longlong) -> cython.void:
    if iss[k, 0] == 0:
        iss[k, 1] = off
    iss[k, 0] += 1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _mapped(ids: Ints, v: cython.longlong) -> cython.longlong:
    """String id ``v`` of a row's tokenizer as the file's (``ids`` empty: the same; -1 stays -1)."""
    if v < 0 or ids.shape[0] == 0:
        return v
    return ids[v]


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _emit_span(
    spans: Out,
    ns: cython.Py_ssize_t,
    slots: Rows,
    slot: cython.Py_ssize_t,
    end_ts: cython.longlong,
    end_off: cython.longlong,
    dtype_id: cython.longlong,
    shape_id: cython.longlong,
    numel: cython.longlong,
) -> cython.void:
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


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _close_negotiation_stats(pstat: Rows, slots: Rows, slot: cython.Py_ssize_t) -> cython.void:
    if slots[slot, S_NEG] == 1 and slots[slot, S_TICKS] > 0:
        pstat[slots[slot, S_PID], P_TICKED] += 1


def pair(
    events: Rows,
    at: cython.Py_ssize_t,
    n: cython.Py_ssize_t,
    ctr: Ints,
    iss: Rows,
    top: Ints,
    pstat: Rows,
    slots: Rows,
    spans: Out,
    ticks: Out,
    marks: Out,
    outn: Ints,
    names: Ints,
    dtypes: Ints,
    shapes: Ints,
) -> tuple[int, int]:
    """Apply event rows ``events[at:n]``; see the module docstring. Returns (status, row).

    ``outn`` receives the number of rows written: [spans, ticks, marks]. ``names``, ``dtypes``,
    ``shapes``: the file's id of each of the rows' tokenizer's string ids (names of ``B`` and
    instant rows, dtypes and shapes of ``E`` rows), empty when they are the same.
    """
    with cython.nogil:
        ns: cython.Py_ssize_t = 0
        nt: cython.Py_ssize_t = 0
        nm: cython.Py_ssize_t = 0
        status: cython.longlong = ST_DONE
        r: cython.Py_ssize_t = at
        s: cython.longlong
        slot: cython.longlong
        parent: cython.longlong
        neg: cython.longlong
        order: cython.longlong
        is_neg: cython.bint
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
                nid = _mapped(names, events[r, EV_A])
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
                    dtype_id = _mapped(dtypes, events[r, EV_A])
                    shape_id = _mapped(shapes, events[r, EV_B])
                    _emit_span(spans, ns, slots, slot, ts, off, dtype_id, shape_id, events[r, EV_C])
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
                marks[nm, MK_NAME] = _mapped(names, events[r, EV_A]) if ph == PH_I else events[r, EV_A]
                marks[nm, MK_TS] = ts
                marks[nm, MK_OFF] = off
                nm += 1
            r += 1
        outn[0] = ns
        outn[1] = nt
        outn[2] = nm
    return status, r


def drain(top: Ints, pstat: Rows, slots: Rows, spans: Out) -> int:
    """Emit every still-open span as unclosed (end = -1). Returns the number of rows."""
    with cython.nogil:
        ns: cython.Py_ssize_t = 0
        s: cython.longlong
        for pid in range(top.shape[0]):
            s = top[pid]
            while s >= 0 and ns < spans.shape[0]:
                _emit_span(spans, ns, slots, s, -1, -1, -1, -1, -1)
                _close_negotiation_stats(pstat, slots, s)
                ns += 1
                s = slots[s, S_PREV]
            top[pid] = -1
    return ns
