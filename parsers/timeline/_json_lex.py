"""Byte-level JSON lexing for the compiled timeline tokenizer (:mod:`parsers.timeline._tokenize`).

numba functions over a ``uint8`` buffer ``buf[i:end]``. None of them allocates, and each one
says "cut" (the buffer ends before the token does) apart from "bad" (not JSON), so the caller
can wait for more bytes instead of dropping a record that a buffer boundary split.

Tolerant where Horovod's writer is sloppy: a string may hold unescaped quotes (a ``"`` not
followed by ``, } ] :`` is part of the string, flagged :data:`F_UNESCAPED`), and numbers may
be floats (rounded to an integer, flagged :data:`F_FLOAT`).

numba's on-disk cache keys a compiled function on its own file only: after editing this
file, delete ``parsers/__pycache__/*.nbi`` (or touch ``_tokenize.py``) so the kernels that
call these functions are compiled again.
"""

from __future__ import annotations

import numpy as np
from numba import njit

F_UNESCAPED = 1  # a string held an unescaped quote
F_ESCAPE = 2  # a string held a backslash escape
F_FLOAT = 4  # a number had a fraction or an exponent

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, inline="always")
def _is_ws(c: int) -> bool:
    return c == 32 or c == 10 or c == 13 or c == 9


@njit(cache=True)
def _skip_ws(buf, i, end):
    while i < end and _is_ws(buf[i]):
        i += 1
    return i


@njit(cache=True)
def _string_end(buf, i, end):
    """i is just after the opening quote. Returns (index of closing quote, flags), -1 if cut."""
    flags = 0
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


@njit(cache=True)
def _number(buf, i, end):
    """Returns (value rounded to int, index after the number, flags); index -1 if cut, -2 if bad."""
    neg = False
    if i < end and buf[i] == 45:
        neg = True
        i += 1
    start = i
    v = np.int64(0)
    while i < end and 48 <= buf[i] <= 57:
        v = v * 10 + (buf[i] - 48)
        i += 1
    if i == start:
        return 0, -2, 0
    flags = 0
    if i < end and (buf[i] == 46 or buf[i] == 101 or buf[i] == 69):
        flags = F_FLOAT
        f = float(v)
        if buf[i] == 46:
            i += 1
            scale = 0.1
            while i < end and 48 <= buf[i] <= 57:
                f += (buf[i] - 48) * scale
                scale *= 0.1
                i += 1
        if i < end and (buf[i] == 101 or buf[i] == 69):
            i += 1
            eneg = False
            if i < end and (buf[i] == 45 or buf[i] == 43):
                eneg = buf[i] == 45
                i += 1
            e = 0
            while i < end and 48 <= buf[i] <= 57:
                e = e * 10 + (buf[i] - 48)
                i += 1
            f = f / 10.0**e if eneg else f * 10.0**e
        v = np.int64(np.round(f))
    if i >= end:
        return 0, -1, flags
    return (-v if neg else v), i, flags


@njit(cache=True)
def _skip_value(buf, i, end):
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
        _, j, fl = _number(buf, i, end)
        return j, fl
    if c == 123 or c == 91:  # nested object / array: bracket counting, strings skipped
        depth = 0
        flags = 0
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
    j = i
    while j < end and 97 <= buf[j] <= 122:
        j += 1
    if j >= end:
        return -1, 0
    if j == i:
        return -2, 0
    return j, 0


@njit(cache=True)
def _key_is(buf, s, e, lit):
    if e - s != len(lit):
        return False
    for k in range(len(lit)):
        if buf[s + k] != lit[k]:
            return False
    return True


@njit(cache=True)
def _hash(buf, s, e):
    h = _FNV_OFFSET
    for k in range(s, e):
        h = (h ^ np.uint64(buf[k])) * _FNV_PRIME
    if h == np.uint64(0):
        h = np.uint64(1)
    return h


@njit(cache=True)
def _shape_numel(buf, s, e):
    """numel of a shape string like "[172, 4096]" ("[]" = scalar = 1); -1 if not a shape."""
    if e - s < 2 or buf[s] != 91 or buf[e - 1] != 93:
        return -1
    numel = np.int64(1)
    cur = np.int64(0)
    have = False
    for k in range(s + 1, e - 1):
        c = buf[k]
        if 48 <= c <= 57:
            cur = cur * 10 + (c - 48)
            have = True
        elif c == 44:
            if not have:
                return -1
            numel *= cur
            cur = 0
            have = False
        elif c != 32:
            return -1
    if have:
        numel *= cur
    return numel
