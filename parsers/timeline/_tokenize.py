"""Compiled tolerant tokenizer for Horovod timelines: bytes -> one event row per record.

Why compiled: a timeline is a JSON array of tens of millions of tiny objects. Decoding
them into Python objects (``json``/``orjson``) costs ~10x the input in memory and is
slower than DuckDB; a general columnar JSON reader cannot survive a cut file. This module
is a tolerant tokenizer for the Chrome-trace subset Horovod writes, compiled by numba. It
turns every usable record into one row of integers (:data:`EV_N` columns: phase, pid, ts,
interned name / rank / dtype and shape, byte offset); :mod:`parsers.timeline._pair` then pairs the
B/E rows per pid. The two halves are separate so that several threads or workers can
tokenize ranges of one file at once while one pairer takes their rows in file order.

Contract of :func:`tokenize`:
    * ``buf[pos:end]`` is scanned record by record; a record is emitted only after its
      closing ``}`` was read, so a buffer that ends inside a record returns ``ST_NEED_MORE``
      with ``pos`` at that record's first byte and no side effect.
    * ``events`` (and ``metas``, ``newstr``) are filled from row 0; when one is full the call
      returns ``ST_FULL`` at a record boundary and the caller takes the rows and calls again.
    * Strings are never copied: names, dtypes and shapes are interned by FNV-1a hash into
      ``ikeys``/``ivals`` and every new string is reported once in ``newstr`` (category, id,
      start, end) so the caller can decode it from the current buffer.
    * Anything the tokenizer tolerates or drops is counted in ``iss`` (count, first offset).
    * A record's decisions never look past its closing ``}``: a range that ends right after
      a record tokenizes exactly as that part of the whole file does.

The kernel releases the GIL (``nogil``). It accepts any whitespace and key order; Horovod's
exact byte layout is just the common case. It tolerates the unescaped quotes Horovod writes
into tensor names (a ``"`` not followed by ``, } ] :`` is taken as part of the string).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from parsers.timeline._json_lex import (
    F_FLOAT,
    F_UNESCAPED,
    _hash,
    _key_is,
    _number,
    _shape_numel,
    _skip_value,
    _skip_ws,
    _string_end,
)

# --- return status -----------------------------------------------------------------
ST_NEED_MORE = 0  # buffer ended between or inside records
ST_CLOSED = 1  # the closing ']' of the array was read
ST_FULL = 2  # an output array is full; take the rows and call again
ST_SYNTAX = 3  # not the JSON this reader accepts, at outn[3]
ST_GROW = 4  # the intern table is too small; grow and call again

# --- counters (ctr) ---------------------------------------------------------------
T_LAST_TS = 0  # last ts seen (monotonicity check; int64 min = none)
T_RECORDS = 1  # complete records read
T_SEP_NL = 2  # separators between records that contain a newline
T_SEP_GLUED = 3  # separators without newline
T_FIRST_TS = 4  # first ts seen
T_FIRST_OFF = 5  # its record's offset (-1 = no ts seen yet)
T_AFTER = 6  # 1: records precede this range (its first separator counts as one)
T_NEXT_STR = 8  # next interned string id of category 0 (names); 9, 10: dtypes, shapes
T_NCTR = 12
CAT_NAME, CAT_DTYPE, CAT_SHAPE = 0, 1, 2
_CAT_CTR = (T_NEXT_STR, 9, 10)

# --- issue counters (iss[k] = count, first offset) ---------------------------------
I_ORPHAN_E = 0  # E with no open B on its pid (pairer)
I_NEG_IN_OP = 1  # NEGOTIATE_* B while the pid's stack was not empty (#316) (pairer)
I_TICK_OUTSIDE = 2  # rank tick with no open NEGOTIATE_* on its pid (pairer)
I_UNESCAPED = 3  # string with an unescaped quote (tolerated)
I_FLOAT_TS = 4  # non-integer ts (rounded to us)
I_UNKNOWN_KEY = 5  # key Horovod does not write (ignored)
I_TS_BACK = 6  # ts smaller than the previous record's
I_UNKNOWN_PH = 7  # phase Horovod does not write (dropped)
I_BAD_RECORD = 8  # record without the fields its phase needs (dropped)
I_X_NOT_RANK = 9  # X event whose name is not a rank number (dropped)
I_E_NAMED = 10  # E carrying a name (0.9.2 writer)
I_FOREIGN_PH = 11  # a trace-event phase of other tools (counter, async, flow, object): skipped
I_NISS = 12

# --- event rows ---------------------------------------------------------------------
# EV_PH is the phase byte: B (66) -> A = name id, B = 1 if NEGOTIATE_*; E (69) -> A = dtype
# id, B = shape id (-1: none), C = numel (-1: no shape); X (88) -> A = rank; i (105) -> A =
# name id (no pid). Records that are dropped or metadata make no row.
EV_PH, EV_PID, EV_TS, EV_A, EV_B, EV_C, EV_OFF = range(7)
EV_N = 7
PH_B, PH_E, PH_X, PH_I = 66, 69, 88, 105
# other tools' trace-event phases: C counter, b/e/n async, s/t/f flow, N/O/D object, P sample, R/c marks
FOREIGN_PHASES = (67, 98, 101, 110, 115, 116, 102, 78, 79, 68, 80, 82, 99)

# --- metadata rows: the record's byte range in buf, for Python to decode ---------------
MT_START, MT_END, MT_PH, MT_FLAGS = range(4)
MT_N = 4

MISSING = np.int64(-(2**62))
_NEGOTIATE = np.frombuffer(b"NEGOTIATE_", dtype=np.uint8).copy()


@njit(cache=True)
def _intern(buf, s, e, cat, ikeys, ivals, ctr, newstr, nnew):
    """Id of buf[s:e] in category cat, and the new row count of newstr.

    The caller guarantees room in the table and in newstr (checked once per record).
    """
    h = _hash(buf, s, e)
    cap = ikeys.shape[1]
    mask = cap - 1
    k = np.int64(h & np.uint64(mask))
    while True:
        if ikeys[cat, k] == h:
            return ivals[cat, k], nnew
        if ikeys[cat, k] == np.uint64(0):
            break
        k = (k + 1) & mask
    c = _CAT_CTR[cat]
    sid = ctr[c]
    ctr[c] = sid + 1
    ikeys[cat, k] = h
    ivals[cat, k] = sid
    newstr[nnew, 0] = cat
    newstr[nnew, 1] = sid
    newstr[nnew, 2] = s
    newstr[nnew, 3] = e
    return sid, nnew + 1


@njit(cache=True)
def _issue(iss, k, off):
    if iss[k, 0] == 0:
        iss[k, 1] = off
    iss[k, 0] += 1


@njit(cache=True, nogil=True)
def tokenize(buf, pos, end, base, ctr, iss, ikeys, ivals, events, metas, newstr, outn):
    """Tokenize records in buf[pos:end]; see the module docstring. Returns (status, pos).

    ``outn`` receives the number of rows written: [events, metas, newstr, error offset
    (with ST_SYNTAX)]. Except with ST_SYNTAX, ``pos`` is returned before the separator that
    precedes the next record, so that the next call sees whether it held a newline.
    """
    ne = 0
    nx = 0
    nn = 0
    status = ST_NEED_MORE
    i = pos
    while True:
        # ---- separators --------------------------------------------------------
        sep = i
        nl = False
        while i < end:
            c = buf[i]
            if c == 10:
                nl = True
            elif not (c == 32 or c == 13 or c == 9 or c == 44):
                break
            i += 1
        if i >= end:
            i = sep
            status = ST_NEED_MORE
            break
        c = buf[i]
        if c == 93:
            i += 1
            status = ST_CLOSED
            break
        if c != 123:
            outn[3] = i
            status = ST_SYNTAX
            break
        # room for the worst case of one record in every output
        if ne >= events.shape[0] or nx >= metas.shape[0] or nn + 4 > newstr.shape[0]:
            i = sep
            status = ST_FULL
            break
        rec = i
        # ---- one object, into locals -----------------------------------------
        ph = 0
        name_s = -1
        name_e = -1
        ts = MISSING
        pid = MISSING
        dt_s = -1
        dt_e = -1
        sh_s = -1
        sh_e = -1
        rflags = 0
        unknown_key = False
        bad = False
        cut = False
        i = _skip_ws(buf, i + 1, end)
        if i < end and buf[i] == 125:
            i += 1
        else:
            while True:
                i = _skip_ws(buf, i, end)
                if i >= end:
                    cut = True
                    break
                if buf[i] != 34:
                    bad = True
                    break
                ks = i + 1
                q, fl = _string_end(buf, ks, end)
                if q < 0:
                    cut = True
                    break
                i = _skip_ws(buf, q + 1, end)
                if i >= end:
                    cut = True
                    break
                if buf[i] != 58:
                    bad = True
                    break
                i = _skip_ws(buf, i + 1, end)
                if i >= end:
                    cut = True
                    break
                vs = i
                klen = q - ks
                if klen == 2 and buf[ks] == 112 and buf[ks + 1] == 104 and buf[vs] == 34:  # "ph"
                    qe, fl = _string_end(buf, vs + 1, end)
                    if qe < 0:
                        cut = True
                        break
                    if qe - vs - 1 == 1:
                        ph = buf[vs + 1]
                    else:
                        ph = 63  # '?': unknown phase
                    i = qe + 1
                elif klen == 4 and _key_is(buf, ks, q, b"name") and buf[vs] == 34:
                    qe, fl = _string_end(buf, vs + 1, end)
                    if qe < 0:
                        cut = True
                        break
                    rflags |= fl
                    name_s = vs + 1
                    name_e = qe
                    i = qe + 1
                elif klen == 2 and buf[ks] == 116 and buf[ks + 1] == 115:  # "ts"
                    v, j, fl = _number(buf, vs, end)
                    if j == -1:
                        cut = True
                        break
                    if j == -2:
                        bad = True
                        break
                    rflags |= fl
                    ts = v
                    i = j
                elif klen == 3 and _key_is(buf, ks, q, b"pid"):
                    v, j, fl = _number(buf, vs, end)
                    if j == -1:
                        cut = True
                        break
                    if j == -2:
                        bad = True
                        break
                    pid = v
                    i = j
                elif klen == 4 and _key_is(buf, ks, q, b"args") and buf[vs] == 123:
                    i = _skip_ws(buf, vs + 1, end)
                    if i < end and buf[i] == 125:
                        i += 1
                    else:
                        while True:
                            i = _skip_ws(buf, i, end)
                            if i >= end:
                                cut = True
                                break
                            if buf[i] != 34:
                                bad = True
                                break
                            aks = i + 1
                            aq, fl = _string_end(buf, aks, end)
                            if aq < 0:
                                cut = True
                                break
                            i = _skip_ws(buf, aq + 1, end)
                            if i >= end:
                                cut = True
                                break
                            if buf[i] != 58:
                                bad = True
                                break
                            i = _skip_ws(buf, i + 1, end)
                            if i >= end:
                                cut = True
                                break
                            avs = i
                            if buf[avs] == 34 and (_key_is(buf, aks, aq, b"dtype") or _key_is(buf, aks, aq, b"shape")):
                                qe, fl = _string_end(buf, avs + 1, end)
                                if qe < 0:
                                    cut = True
                                    break
                                if buf[aks] == 100:
                                    dt_s = avs + 1
                                    dt_e = qe
                                else:
                                    sh_s = avs + 1
                                    sh_e = qe
                                i = qe + 1
                            else:
                                j, fl = _skip_value(buf, avs, end)
                                if j == -1:
                                    cut = True
                                    break
                                if j == -2:
                                    bad = True
                                    break
                                rflags |= fl
                                i = j
                            i = _skip_ws(buf, i, end)
                            if i >= end:
                                cut = True
                                break
                            if buf[i] == 44:
                                i += 1
                                continue
                            if buf[i] == 125:
                                i += 1
                                break
                            bad = True
                            break
                        if cut or bad:
                            break
                else:
                    if not (
                        klen == 3
                        and (_key_is(buf, ks, q, b"dur") or _key_is(buf, ks, q, b"tid") or _key_is(buf, ks, q, b"cat"))
                    ) and not (klen == 1 and buf[ks] == 115):
                        unknown_key = True
                    j, fl = _skip_value(buf, vs, end)
                    if j == -1:
                        cut = True
                        break
                    if j == -2:
                        bad = True
                        break
                    rflags |= fl
                    i = j
                i = _skip_ws(buf, i, end)
                if i >= end:
                    cut = True
                    break
                if buf[i] == 44:
                    i += 1
                    continue
                if buf[i] == 125:
                    i += 1
                    break
                bad = True
                break
        if cut:  # the separator before it is read again with the record
            i = sep
            status = ST_NEED_MORE
            break
        if bad:
            outn[3] = i
            i = rec
            status = ST_SYNTAX
            break
        # ---- the record is complete: make room first, then emit it ----------------
        if (max(ctr[T_NEXT_STR], ctr[9], ctr[10]) + 2) * 2 > ikeys.shape[1]:
            i = sep
            status = ST_GROW
            break
        off = base + rec
        if nl:
            ctr[T_SEP_NL] += 1
        elif ctr[T_RECORDS] > 0 or ctr[T_AFTER] == 1:
            ctr[T_SEP_GLUED] += 1
        if rflags & F_UNESCAPED:
            _issue(iss, I_UNESCAPED, off)
        if rflags & F_FLOAT:
            _issue(iss, I_FLOAT_TS, off)
        if unknown_key:
            _issue(iss, I_UNKNOWN_KEY, off)
        if ts != MISSING:
            if ts < ctr[T_LAST_TS]:
                _issue(iss, I_TS_BACK, off)
            ctr[T_LAST_TS] = ts
            if ctr[T_FIRST_OFF] == -1:
                ctr[T_FIRST_TS] = ts
                ctr[T_FIRST_OFF] = off
        a = np.int64(-1)
        b = np.int64(-1)
        cc = np.int64(-1)
        row = False
        if ph == 77 or (ph == 0 and name_s >= 0 and ts == MISSING):  # 'M' metadata
            metas[nx, MT_START] = rec
            metas[nx, MT_END] = i
            metas[nx, MT_PH] = 77
            metas[nx, MT_FLAGS] = rflags
            nx += 1
        elif ph == 66:  # 'B'
            if pid == MISSING or ts == MISSING or name_s < 0 or pid < 0:
                _issue(iss, I_BAD_RECORD, off)
            else:
                a, nn = _intern(buf, name_s, name_e, CAT_NAME, ikeys, ivals, ctr, newstr, nn)
                b = 1 if name_e - name_s > 10 and _key_is(buf, name_s, name_s + 10, _NEGOTIATE) else 0
                row = True
        elif ph == 69:  # 'E'
            if name_s >= 0:
                _issue(iss, I_E_NAMED, off)
            if pid == MISSING or ts == MISSING:
                _issue(iss, I_BAD_RECORD, off)
            else:
                if dt_s >= 0:
                    a, nn = _intern(buf, dt_s, dt_e, CAT_DTYPE, ikeys, ivals, ctr, newstr, nn)
                if sh_s >= 0:
                    b, nn = _intern(buf, sh_s, sh_e, CAT_SHAPE, ikeys, ivals, ctr, newstr, nn)
                    cc = _shape_numel(buf, sh_s, sh_e)
                row = True
        elif ph == 88:  # 'X'
            rank = np.int64(-1)
            if name_s >= 0 and name_e > name_s and name_e - name_s < 10:
                rank = 0
                for k in range(name_s, name_e):
                    if 48 <= buf[k] <= 57:
                        rank = rank * 10 + (buf[k] - 48)
                    else:
                        rank = -1
                        break
            if pid == MISSING or ts == MISSING:
                _issue(iss, I_BAD_RECORD, off)
            elif rank < 0:
                _issue(iss, I_X_NOT_RANK, off)
            else:
                a = rank
                row = True
        elif ph == 105 or ph == 73:  # 'i' / 'I' instant
            if ts == MISSING or name_s < 0:
                _issue(iss, I_BAD_RECORD, off)
            else:
                a, nn = _intern(buf, name_s, name_e, CAT_NAME, ikeys, ivals, ctr, newstr, nn)
                ph = PH_I
                pid = -1
                row = True
        elif ph == 0:
            _issue(iss, I_BAD_RECORD, off)
        elif ph in FOREIGN_PHASES:
            _issue(iss, I_FOREIGN_PH, off)
        else:
            _issue(iss, I_UNKNOWN_PH, off)
        if row:
            events[ne, EV_PH] = ph
            events[ne, EV_PID] = pid
            events[ne, EV_TS] = ts
            events[ne, EV_A] = a
            events[ne, EV_B] = b
            events[ne, EV_C] = cc
            events[ne, EV_OFF] = off
            ne += 1
        ctr[T_RECORDS] += 1
    outn[0] = ne
    outn[1] = nx
    outn[2] = nn
    return status, i
