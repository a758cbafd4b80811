# cython: infer_types=True, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled tolerant tokenizer for Horovod timelines: bytes -> one event row per record.

Why compiled: a timeline is a JSON array of tens of millions of tiny objects. Decoding them
into Python objects costs ~10x the input in memory; a columnar JSON reader cannot survive a cut
file. This is a tolerant tokenizer for the Chrome-trace subset Horovod writes and a lexer for its
JSON, compiled by Cython at install (``setup.py``; pure-Python mode: the same file, uncompiled,
is the reference the tests check the compiled module against). It turns every usable record
into one row of integers (:data:`~parsers.timeline.layout.EV_N` columns: phase, pid, ts, interned
name / rank / dtype and shape, byte offset); :mod:`parsers.timeline._pair` pairs the B/E rows per
pid. The halves are apart so that threads or workers can tokenize ranges of one file at once
while one pairer takes their rows in file order. Row layouts and codes: :mod:`parsers.timeline.layout`.

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

The loop runs without the GIL. It accepts any whitespace and key order; the exact bytes Horovod
writes for an event are read by a fast pass (:func:`_canonical`, 2.4x the general parse's rate),
whose every near miss falls back to the general parse. It tolerates the unescaped quotes Horovod
writes into tensor names (a ``"`` not followed by ``, } ] :`` is part of the string), numbers may be
floats (rounded half to even, flagged :data:`~parsers.timeline.layout.F_FLOAT`); a ts or pid
beyond int64 makes its record unreadable (:data:`~parsers.timeline.layout.F_RANGE`). The lexing
functions never allocate and tell "cut" (the buffer ends before the token does) from "bad" (not
JSON), so the caller waits for more bytes instead of dropping a record a buffer boundary split.
"""

from __future__ import annotations

import cython
from cython.cimports.libc.math import floor, fmod

from parsers.timeline import layout as L

#: the compiled module (False: this file runs as the plain-Python reference)
COMPILED = cython.compiled

# the layout as C values in the compiled module (Python reads parsers.timeline.layout)
F_UNESCAPED = cython.declare(cython.longlong, L.F_UNESCAPED)
F_ESCAPE = cython.declare(cython.longlong, L.F_ESCAPE)
F_FLOAT = cython.declare(cython.longlong, L.F_FLOAT)
F_RANGE = cython.declare(cython.longlong, L.F_RANGE)
MAX_DIGITS = cython.declare(cython.Py_ssize_t, L.MAX_DIGITS)
MAX_VALUE = cython.declare(cython.double, 9.2e18)  # a double within int64, rounded
TENTH_MAX = cython.declare(cython.longlong, (2**63 - 1) // 10)
MAX_NUMEL = cython.declare(cython.longlong, 2**56)  # elements of a tensor (times 16 bytes: within int64)
ST_NEED_MORE = cython.declare(cython.longlong, L.ST_NEED_MORE)
ST_CLOSED = cython.declare(cython.longlong, L.ST_CLOSED)
ST_FULL = cython.declare(cython.longlong, L.ST_FULL)
ST_SYNTAX = cython.declare(cython.longlong, L.ST_SYNTAX)
ST_GROW = cython.declare(cython.longlong, L.ST_GROW)
T_LAST_TS = cython.declare(cython.Py_ssize_t, L.T_LAST_TS)
T_RECORDS = cython.declare(cython.Py_ssize_t, L.T_RECORDS)
T_SEP_NL = cython.declare(cython.Py_ssize_t, L.T_SEP_NL)
T_SEP_GLUED = cython.declare(cython.Py_ssize_t, L.T_SEP_GLUED)
T_FIRST_TS = cython.declare(cython.Py_ssize_t, L.T_FIRST_TS)
T_FIRST_OFF = cython.declare(cython.Py_ssize_t, L.T_FIRST_OFF)
T_AFTER = cython.declare(cython.Py_ssize_t, L.T_AFTER)
T_NEXT_STR = cython.declare(cython.Py_ssize_t, L.T_NEXT_STR)
CAT_NAME = cython.declare(cython.Py_ssize_t, L.CAT_NAME)
CAT_DTYPE = cython.declare(cython.Py_ssize_t, L.CAT_DTYPE)
CAT_SHAPE = cython.declare(cython.Py_ssize_t, L.CAT_SHAPE)
I_UNESCAPED = cython.declare(cython.Py_ssize_t, L.I_UNESCAPED)
I_FLOAT_TS = cython.declare(cython.Py_ssize_t, L.I_FLOAT_TS)
I_UNKNOWN_KEY = cython.declare(cython.Py_ssize_t, L.I_UNKNOWN_KEY)
I_TS_BACK = cython.declare(cython.Py_ssize_t, L.I_TS_BACK)
I_UNKNOWN_PH = cython.declare(cython.Py_ssize_t, L.I_UNKNOWN_PH)
I_BAD_RECORD = cython.declare(cython.Py_ssize_t, L.I_BAD_RECORD)
I_X_NOT_RANK = cython.declare(cython.Py_ssize_t, L.I_X_NOT_RANK)
I_E_NAMED = cython.declare(cython.Py_ssize_t, L.I_E_NAMED)
I_FOREIGN_PH = cython.declare(cython.Py_ssize_t, L.I_FOREIGN_PH)
EV_PH = cython.declare(cython.Py_ssize_t, L.EV_PH)
EV_PID = cython.declare(cython.Py_ssize_t, L.EV_PID)
EV_TS = cython.declare(cython.Py_ssize_t, L.EV_TS)
EV_A = cython.declare(cython.Py_ssize_t, L.EV_A)
EV_B = cython.declare(cython.Py_ssize_t, L.EV_B)
EV_C = cython.declare(cython.Py_ssize_t, L.EV_C)
EV_OFF = cython.declare(cython.Py_ssize_t, L.EV_OFF)
PH_I = cython.declare(cython.longlong, L.PH_I)
MT_START = cython.declare(cython.Py_ssize_t, L.MT_START)
MT_END = cython.declare(cython.Py_ssize_t, L.MT_END)
MT_PH = cython.declare(cython.Py_ssize_t, L.MT_PH)
MT_FLAGS = cython.declare(cython.Py_ssize_t, L.MT_FLAGS)
MISSING = cython.declare(cython.longlong, L.MISSING)
MASK64 = cython.declare(cython.ulonglong, (1 << 64) - 1)
FNV_OFFSET = cython.declare(cython.ulonglong, 14695981039346656037)
FNV_PRIME = cython.declare(cython.ulonglong, 1099511628211)

#: a read-only byte pointer (compiled) or a memoryview of the bytes (reference)
Buf = cython.typedef(cython.pointer(cython.const[cython.uchar]))
Word = cython.typedef(cython.pointer(cython.const[cython.ulonglong]))
Rows = cython.typedef(cython.longlong[:, ::1])
Ints = cython.typedef(cython.longlong[::1])


# --- the JSON lexer: functions over buf[i:end] ----------------------------------------


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _skip_ws(buf: Buf, i: cython.Py_ssize_t, end: cython.Py_ssize_t) -> cython.Py_ssize_t:
    while i < end and (buf[i] == 32 or buf[i] == 10 or buf[i] == 13 or buf[i] == 9):
        i += 1
    return i


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _string_end(buf: Buf, i: cython.Py_ssize_t, end: cython.Py_ssize_t) -> tuple[cython.Py_ssize_t, cython.longlong]:
    """i is just after the opening quote. Returns (index of closing quote, flags), -1 if cut."""
    flags: cython.longlong = 0
    while i < end:
        c = buf[i]
        if c == 92:  # backslash
            flags |= F_ESCAPE
            i += 2
            continue
        if c == 34:
            j = _skip_ws(buf, i + 1, end)
            if j >= end:
                return -1, flags
            d = buf[j]
            if d == 44 or d == 125 or d == 93 or d == 58:  # , } ] :
                return i, flags
            flags |= F_UNESCAPED
        i += 1
    return -1, flags


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _number(
    buf: Buf, i: cython.Py_ssize_t, end: cython.Py_ssize_t
) -> tuple[cython.longlong, cython.Py_ssize_t, cython.longlong]:
    """Returns (value rounded half to even, index after the number, flags); index -1 if cut, -2 if bad.
    ``F_RANGE`` (value 0) beyond int64 or for no finite float: nothing wraps into a plausible value."""
    neg: cython.bint = False
    if i < end and buf[i] == 45:
        neg = True
        i += 1
    start = i
    v: cython.longlong = 0
    flags: cython.longlong = 0
    while i < end and 48 <= buf[i] <= 57:
        if v > TENTH_MAX or (v == TENTH_MAX and buf[i] > 55):  # the next digit would pass 2^63 - 1
            flags = F_RANGE
        else:
            v = v * 10 + (buf[i] - 48)
        i += 1
    if i == start:
        return 0, -2, 0
    if i < end and (buf[i] == 46 or buf[i] == 101 or buf[i] == 69):
        flags |= F_FLOAT
        f: cython.double = float(v)
        if buf[i] == 46:
            i += 1
            scale: cython.double = 0.1
            while i < end and 48 <= buf[i] <= 57:
                f += (buf[i] - 48) * scale
                scale *= 0.1
                i += 1
        if i < end and (buf[i] == 101 or buf[i] == 69):
            i += 1
            eneg: cython.bint = False
            if i < end and (buf[i] == 45 or buf[i] == 43):
                eneg = buf[i] == 45
                i += 1
            e: cython.longlong = 0
            while i < end and 48 <= buf[i] <= 57:
                if e < 10000:  # further digits only make it bigger still: no wrapping
                    e = e * 10 + (buf[i] - 48)
                i += 1
            p1: cython.double = 10.0 ** min(e, 300)  # two steps: 10.0**400 raises in Python, is inf in C
            p2: cython.double = 10.0 ** min(max(e - 300, 0), 300)
            f = f / p1 / p2 if eneg else f * p1 * p2
        if -MAX_VALUE < f < MAX_VALUE and not flags & F_RANGE:
            v = _round_half_even(f)
        else:  # also NaN and the infinities: a double beyond int64 does not convert
            flags |= F_RANGE
    if flags & F_RANGE:
        v = 0
    if i >= end:
        return 0, -1, flags
    return (-v if neg else v), i, flags


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _round_half_even(f: cython.double) -> cython.longlong:
    """``f`` rounded to the nearest integer, ties to even (numpy's and the C library's rounding)."""
    lo: cython.double = floor(f)
    d: cython.double = f - lo
    if d > 0.5 or (d == 0.5 and fmod(lo, 2.0) != 0.0):
        lo += 1.0
    return cython.cast(cython.longlong, lo)


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _skip_value(buf: Buf, i: cython.Py_ssize_t, end: cython.Py_ssize_t) -> tuple[cython.Py_ssize_t, cython.longlong]:
    """Skip any JSON value. Returns (index after it, flags); -1 if cut, -2 if bad."""
    i = _skip_ws(buf, i, end)
    if i >= end:
        return -1, 0
    c = buf[i]
    if c == 34:
        q, fl = _string_end(buf, i + 1, end)
        if q < 0:
            return -1, fl
        return q + 1, fl
    if c == 45 or 48 <= c <= 57:
        _v, j, fl = _number(buf, i, end)
        return j, fl
    if c == 123 or c == 91:  # nested object / array: bracket counting, strings skipped
        depth: cython.Py_ssize_t = 0
        flags: cython.longlong = 0
        while i < end:
            c = buf[i]
            if c == 34:
                q, fl = _string_end(buf, i + 1, end)
                flags |= fl
                if q < 0:
                    return -1, flags
                i = q + 1
                continue
            if c == 123 or c == 91:
                depth += 1
            elif c == 125 or c == 93:
                depth -= 1
                if depth == 0:
                    return i + 1, flags
            i += 1
        return -1, flags
    # true / false / null
    j2 = i
    while j2 < end and 97 <= buf[j2] <= 122:
        j2 += 1
    if j2 >= end:
        return -1, 0
    if j2 == i:
        return -2, 0
    return j2, 0


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _key_is(
    buf: Buf, s: cython.Py_ssize_t, e: cython.Py_ssize_t, lit: cython.p_const_char, n: cython.Py_ssize_t
) -> cython.bint:
    """Whether buf[s:e] is the ASCII literal ``lit`` of ``n`` bytes."""
    if e - s != n:
        return False
    for k in range(n):
        if buf[s + k] != lit[k]:
            return False
    return True


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _member(
    buf: Buf, i: cython.Py_ssize_t, end: cython.Py_ssize_t
) -> tuple[cython.Py_ssize_t, cython.Py_ssize_t, cython.Py_ssize_t, cython.int]:
    """An object member's ``"key":`` from ``i`` (whitespace first). Returns (key start, its closing
    quote, value start, 0); status -1 if cut, -2 if bad (the third item then at the offending byte)."""
    i = _skip_ws(buf, i, end)
    if i >= end:
        return 0, 0, i, -1
    if buf[i] != 34:
        return 0, 0, i, -2
    ks = i + 1
    q, _fl = _string_end(buf, ks, end)
    if q < 0:
        return 0, 0, i, -1
    i = _skip_ws(buf, q + 1, end)
    if i >= end:
        return 0, 0, i, -1
    if buf[i] != 58:
        return 0, 0, i, -2
    i = _skip_ws(buf, i + 1, end)
    if i >= end:
        return 0, 0, i, -1
    return ks, q, i, 0


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _next_member(buf: Buf, i: cython.Py_ssize_t, end: cython.Py_ssize_t) -> tuple[cython.Py_ssize_t, cython.int]:
    """After a member's value: (index after ``,``, 0) for another member, (index after ``}``, 1) at the
    object's end; status -1 if cut, -2 if bad (at the offending byte)."""
    i = _skip_ws(buf, i, end)
    if i >= end:
        return i, -1
    if buf[i] == 44:
        return i + 1, 0
    if buf[i] == 125:
        return i + 1, 1
    return i, -2


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _hash(buf: Buf, s: cython.Py_ssize_t, e: cython.Py_ssize_t) -> cython.ulonglong:
    """64-bit FNV-1a of buf[s:e] (never 0: 0 marks an empty slot of the intern table)."""
    h: cython.ulonglong = FNV_OFFSET
    b: cython.ulonglong
    for k in range(s, e):
        b = buf[k]
        h = ((h ^ b) * FNV_PRIME) & MASK64  # a no-op in C; the reference's ints do not wrap
    if h == 0:
        h = 1
    return h


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _shape_numel(buf: Buf, s: cython.Py_ssize_t, e: cython.Py_ssize_t) -> cython.longlong:
    """numel of a shape string like "[172, 4096]" ("[]" = scalar = 1); -1 if not a shape."""
    if e - s < 2 or buf[s] != 91 or buf[e - 1] != 93:
        return -1
    numel: cython.longlong = 1
    cur: cython.longlong = 0
    have: cython.bint = False
    for k in range(s + 1, e - 1):
        c = buf[k]
        if 48 <= c <= 57:
            if cur > MAX_NUMEL:  # no tensor is that big, and int64 would wrap
                return -1
            cur = cur * 10 + (c - 48)
            have = True
        elif c == 44:
            if not have or (cur and numel > MAX_NUMEL // cur):
                return -1
            numel *= cur
            cur = 0
            have = False
        elif c != 32:
            return -1
    if have and cur and numel > MAX_NUMEL // cur:
        return -1
    return numel * cur if have else numel


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _lit(
    buf: Buf, i: cython.Py_ssize_t, end: cython.Py_ssize_t, lit: cython.p_const_char, n: cython.Py_ssize_t
) -> cython.bint:
    """Whether buf[i:] starts with the ASCII literal ``lit`` of ``n`` bytes, within ``end``. Compiled, the
    first 8 bytes are one word's compare (the fast pass's literals: +6-13% of the tokenizer's rate)."""
    if i + n > end or not cython.compiled or n < 8:
        return i + n <= end and _key_is(buf, i, i + n, lit, n)
    return cython.cast(Word, buf + i)[0] == cython.cast(Word, lit)[0] and _key_is(buf, i + 8, i + n, lit + 8, n - 8)


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _digits(buf: Buf, i: cython.Py_ssize_t, end: cython.Py_ssize_t) -> tuple[cython.longlong, cython.Py_ssize_t]:
    """Digits from ``i`` up to a ``,`` or ``}``: (their value, the index of that byte), index -1 otherwise."""
    s = i
    v: cython.longlong = 0
    while i < end and 48 <= buf[i] <= 57 and i - s < MAX_DIGITS:
        v = v * 10 + (buf[i] - 48)
        i += 1
    if i == s or i >= end or (buf[i] != 44 and buf[i] != 125):  # more digits: the general parse says why
        return 0, -1
    return v, i


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _canonical(
    buf: Buf, rec: cython.Py_ssize_t, end: cython.Py_ssize_t
) -> tuple[
    cython.bint,
    cython.longlong,
    cython.Py_ssize_t,
    cython.Py_ssize_t,
    cython.longlong,
    cython.longlong,
    cython.Py_ssize_t,
]:
    """The record at ``rec`` if it is in the exact bytes Horovod writes for events,
    ``{"ph": "P"[, "name": "N"], "ts": T, "pid": N[, "dur": D]}``: (True, phase, name start,
    name end, ts, pid, index after the ``}``), which is what the general parse makes of it. Any
    other record (metadata, ``args``, other spacing or order, escapes, quotes in names, signs,
    floats, a cut) gives (False, ...) and goes through the general parse: this only saves the
    generality's branches on the records that make a timeline (3x fewer per record)."""
    i = rec
    if not _lit(buf, i, end, b'{"ph": "', 8) or i + 11 > end or buf[i + 9] != 34 or buf[i + 10] != 44:
        return False, 0, -1, -1, MISSING, MISSING, 0
    ph: cython.longlong = buf[i + 8]
    if ph == 34 or ph == 92:
        return False, 0, -1, -1, MISSING, MISSING, 0
    i += 10
    name_s: cython.Py_ssize_t = -1
    name_e: cython.Py_ssize_t = -1
    if _lit(buf, i, end, b', "name": "', 11):
        j = i + 11
        while j < end and buf[j] != 34 and buf[j] != 92:
            j += 1
        if j + 1 >= end or buf[j] != 34 or buf[j + 1] != 44:
            return False, 0, -1, -1, MISSING, MISSING, 0
        name_s = i + 11
        name_e = j
        i = j + 1
    if not _lit(buf, i, end, b', "ts": ', 8):
        return False, 0, -1, -1, MISSING, MISSING, 0
    ts, i = _digits(buf, i + 8, end)
    if i < 0 or not _lit(buf, i, end, b', "pid": ', 9):
        return False, 0, -1, -1, MISSING, MISSING, 0
    pid, i = _digits(buf, i + 9, end)
    if i >= 0 and _lit(buf, i, end, b', "dur": ', 9):
        _dur, i = _digits(buf, i + 9, end)
    if i < 0 or buf[i] != 125:
        return False, 0, -1, -1, MISSING, MISSING, 0
    return True, ph, name_s, name_e, ts, pid, i + 1


# --- the tokenizer ---------------------------------------------------------------------


@cython.cfunc
@cython.nogil
@cython.exceptval(check=False)
def _intern(
    buf: Buf,
    s: cython.Py_ssize_t,
    e: cython.Py_ssize_t,
    cat: cython.Py_ssize_t,
    ikeys: cython.ulonglong[:, ::1],
    ivals: Rows,
    ctr: Ints,
    newstr: Rows,
    nnew: cython.Py_ssize_t,
) -> tuple[cython.longlong, cython.Py_ssize_t]:
    """Id of buf[s:e] in category cat, and the new row count of newstr.

    The caller guarantees room in the table and in newstr (checked once per record).
    """
    h = _hash(buf, s, e)
    cap: cython.Py_ssize_t = ikeys.shape[1]
    mask: cython.Py_ssize_t = cap - 1
    k: cython.Py_ssize_t = cython.cast(cython.Py_ssize_t, h & mask)
    while True:
        if ikeys[cat, k] == h:
            return ivals[cat, k], nnew
        if ikeys[cat, k] == 0:
            break
        k = (k + 1) & mask
    c: cython.Py_ssize_t = T_NEXT_STR + cat  # the counters of names, dtypes, shapes follow each other
    sid: cython.longlong = ctr[c]
    ctr[c] = sid + 1
    ikeys[cat, k] = h
    ivals[cat, k] = sid
    newstr[nnew, 0] = cat
    newstr[nnew, 1] = sid
    newstr[nnew, 2] = s
    newstr[nnew, 3] = e
    return sid, nnew + 1


@cython.cfunc
@cython.inline
@cython.nogil
@cython.exceptval(check=False)
def _issue(iss: Rows, k: cython.Py_ssize_t, off: cython.longlong) -> cython.void:
    if iss[k, 0] == 0:
        iss[k, 1] = off
    iss[k, 0] += 1


def tokenize(
    data: cython.const[cython.uchar][::1],
    pos: cython.Py_ssize_t,
    end: cython.Py_ssize_t,
    base: cython.longlong,
    ctr: Ints,
    iss: Rows,
    ikeys: cython.ulonglong[:, ::1],
    ivals: Rows,
    events: Rows,
    metas: Rows,
    newstr: Rows,
    outn: Ints,
) -> tuple[int, int]:
    """Tokenize records in data[pos:end]; see the module docstring. Returns (status, pos).

    ``outn`` receives the number of rows written: [events, metas, newstr, error offset
    (with ST_SYNTAX)]. Except with ST_SYNTAX, ``pos`` is returned before the separator that
    precedes the next record, so that the next call sees whether it held a newline.
    """
    buf: Buf = cython.address(data[0]) if cython.compiled else memoryview(data).cast("B")
    with cython.nogil:
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
            ph: cython.longlong = 0
            name_s = -1
            name_e = -1
            ts: cython.longlong = MISSING
            pid: cython.longlong = MISSING
            dt_s = -1
            dt_e = -1
            sh_s = -1
            sh_e = -1
            rflags = 0
            unknown_key = False
            bad: cython.bint = False
            cut: cython.bint = False
            # Horovod's own byte layout in one pass; anything else through the general parse
            fast, ph, name_s, name_e, ts, pid, after = _canonical(buf, rec, end)
            if fast:
                i = after
            else:
                i = _skip_ws(buf, i + 1, end)
                if i < end and buf[i] == 125:
                    i += 1
                else:
                    while True:
                        ks, q, i, st = _member(buf, i, end)
                        if st != 0:
                            cut = st == -1
                            bad = st == -2
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
                        elif klen == 4 and _key_is(buf, ks, q, b"name", 4) and buf[vs] == 34:
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
                            if j < 0 or fl & F_RANGE:  # cut, bad, or beyond int64
                                cut = j == -1
                                bad = not cut
                                break
                            rflags |= fl
                            ts = v
                            i = j
                        elif klen == 3 and _key_is(buf, ks, q, b"pid", 3):
                            v, j, fl = _number(buf, vs, end)
                            if j < 0 or fl & F_RANGE:  # cut, bad, or beyond int64
                                cut = j == -1
                                bad = not cut
                                break
                            pid = v
                            i = j
                        elif klen == 4 and _key_is(buf, ks, q, b"args", 4) and buf[vs] == 123:
                            i = _skip_ws(buf, vs + 1, end)
                            if i < end and buf[i] == 125:
                                i += 1
                            else:
                                while True:
                                    aks, aq, i, st = _member(buf, i, end)
                                    if st != 0:
                                        cut = st == -1
                                        bad = st == -2
                                        break
                                    avs = i
                                    if buf[avs] == 34 and (
                                        _key_is(buf, aks, aq, b"dtype", 5) or _key_is(buf, aks, aq, b"shape", 5)
                                    ):
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
                                        if j < 0:
                                            cut = j == -1
                                            bad = not cut
                                            break
                                        rflags |= fl
                                        i = j
                                    i, st = _next_member(buf, i, end)
                                    if st == 0:
                                        continue
                                    cut = st == -1
                                    bad = st == -2
                                    break
                                if cut or bad:
                                    break
                        else:
                            if not (
                                klen == 3
                                and (
                                    _key_is(buf, ks, q, b"dur", 3)
                                    or _key_is(buf, ks, q, b"tid", 3)
                                    or _key_is(buf, ks, q, b"cat", 3)
                                )
                            ) and not (klen == 1 and buf[ks] == 115):
                                unknown_key = True
                            j, fl = _skip_value(buf, vs, end)
                            if j < 0:
                                cut = j == -1
                                bad = not cut
                                break
                            rflags |= fl
                            i = j
                        i, st = _next_member(buf, i, end)
                        if st == 0:
                            continue
                        cut = st == -1
                        bad = st == -2
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
            a: cython.longlong = -1
            b: cython.longlong = -1
            cc: cython.longlong = -1
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
                    b = 1 if name_e - name_s > 10 and _key_is(buf, name_s, name_s + 10, b"NEGOTIATE_", 10) else 0
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
                rank: cython.longlong = -1
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
            elif ph in (67, 98, 101, 110, 115, 116, 102, 78, 79, 68, 80, 82, 99):  # layout.FOREIGN_PHASES
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
