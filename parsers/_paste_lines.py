# cython: infer_types=True, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled search of a block for what a paste added, without the GIL (:func:`parsers.paste.clean_bytes`).

Cleaning a block of a log first looks for what a paste or a collector may have added: an ANSI sequence, a line that is
a JSON object, and the lines that hold one of :data:`NEEDLES` (every match of the patterns that undo a paste holds one).
``bytes.find`` of a needle of several bytes runs at ~1.5 GB/s here and holds the GIL: on 1 GB of mixed logs, ~1 s of
the scan thread's cleaning (:mod:`parsers.nccl.readahead`) during which the parser's thread waited. :func:`scan` does
the three searches in one pass of C code and lets the other thread run meanwhile. Cython's pure-Python mode: the
source run uncompiled is the reference the tests check the compiled module against (``tests/parsers/test_paste_scan.py``).
"""

from __future__ import annotations

from typing import Any

import cython

#: the compiled module (False: this file runs as plain Python)
COMPILED = cython.compiled

Buf = cython.typedef(cython.pointer(cython.const[cython.uchar]))
Starts = cython.typedef(cython.longlong[::1])

#: a text every match of the patterns that undo a paste holds: a character reference's ``&``, an automatic link's
#: ``http`` (both forms; ``](http`` took 3 ms a block by ``bytes.find``, ']' and '<' being common), Ray's note
NEEDLES = (b"&", b"http", b"x across cluster]")
#: :func:`scan`'s flags: an ANSI escape somewhere, a line that starts with ``{"``
ESCAPE, JSON_LINE = 1, 2
_ESCAPE = cython.declare(cython.longlong, ESCAPE)
_JSON_LINE = cython.declare(cython.longlong, JSON_LINE)
#: the bytes :func:`scan` stops at (a newline, the needles' first bytes, an escape, ``{``): one load for the others
STOPS = bytes(1 if c in b"\n&hx\x1b{" else 0 for c in range(256))


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
@cython.nogil
def _at(buf: Buf, i: cython.Py_ssize_t, n: cython.Py_ssize_t, text: Buf, size: cython.Py_ssize_t) -> cython.bint:
    """Whether ``text`` (``size`` bytes) starts at ``buf[i]``."""
    if i + size > n:
        return False
    k: cython.Py_ssize_t = 0
    while k < size and buf[i + k] == text[k]:
        k += 1
    return k == size


def scan(data: bytes, starts_out: Any) -> tuple[int, int]:
    """The starts of the lines of ``data`` that hold one of :data:`NEEDLES`, in order, into ``starts_out`` (room for
    one more than ``data``'s newlines, int64); returns how many, and :data:`ESCAPE` | :data:`JSON_LINE` where found."""
    buf: Buf = data
    starts: Starts = starts_out
    http: Buf = NEEDLES[1]
    ray: Buf = NEEDLES[2]
    ray_size: cython.Py_ssize_t = len(NEEDLES[2])
    n: cython.Py_ssize_t = len(data)
    count: cython.Py_ssize_t = 0
    flags: cython.longlong = 0
    line: cython.Py_ssize_t = 0
    held: cython.bint = False
    i: cython.Py_ssize_t = 0
    stops: Buf = STOPS
    with cython.nogil:
        while i < n:
            c = buf[i]
            if not stops[c]:
                i += 1
                continue
            if c == 10:
                if held:
                    starts[count] = line
                    count += 1
                    held = False
                line = i + 1
            elif c == 38:  # &
                held = True
            elif c == 104:  # h
                held = held or _at(buf, i, n, http, 4)
            elif c == 120:  # x
                held = held or _at(buf, i, n, ray, ray_size)
            elif c == 27:
                flags |= _ESCAPE
            elif c == 123 and i == line and i + 1 < n and buf[i + 1] == 34:  # {" at a line's start
                flags |= _JSON_LINE
            i += 1
        if held:
            starts[count] = line
            count += 1
    return count, flags
