# cython: infer_types=True, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled reading of an NCCL log's lines: the plain record found by C code, its INFO fact applied here.

Why compiled: most lines of a real log are one NCCL record each, ``[outer]HOST:PID:TID [DEV] [MS]
[FILE:LINE [(FUNC)]] NCCL LEVEL MSG``, and most of their messages change nothing but counters (a ring
or tree line, a buffer size) or add one connection. The regex that found such a record and the Python
steps around it cost ~15 us a line; here a record is found by a scan of its bytes and an INFO record of
a known process is applied without building a :class:`~parsers.nccl.records.Record`.

:func:`plain_fields` finds what :func:`parsers.nccl.records.split_records` finds in a line of one record:
the leftmost match of :data:`~parsers.nccl.records._PLAIN` with the same refusals, and where the regex
finds none, two forms the careful path reads the same way (a host starting with a digit or ``<`` after a
space; ``NCCL`` again in the message with no second record's marker). A character other than ASCII
before the message, a number past 18 digits, or anything else goes to the careful, regex path of
:meth:`~parsers.nccl.parser.JobLogParser._line`, with the job-log readers its texts concern
(:mod:`parsers.nccl.signal_groups`); one with neither ``NCCL`` nor a job-log signal's hint is handed over as such.

Two passes: :func:`scan_lines`, C code alone and run without the GIL, finds each line's end, its plain record's
fields, ``NCCL`` and the readers' gates in it, into rows of integers; :func:`read_lines` applies them with Python
objects. :mod:`parsers.nccl.readahead` runs the first on a thread, a few batches ahead of the second. Together they
are :meth:`~parsers.nccl.parser.JobLogParser._lines` with that fast path: the tables are the same, on every log of
the corpus, in blocks and batches of any size, and on lines built at the edges (``test_nccl_compiled.py`` and
``test_nccl_readahead.py``, which also run this source uncompiled). Cython's pure-Python mode: uncompiled, the parser
keeps to its Python loop (quicker than this one interpreted).
"""

from __future__ import annotations

from typing import Any

import cython
import numpy as np

from parsers.issues import IssueSeverity
from parsers.nccl import joblog, signal_groups
from parsers.nccl._foreign import certainly_foreign, text_table
from parsers.nccl.messages import Conn, classify
from parsers.nccl.process import WORDING_RECORDS
from parsers.nccl.recordfacts import RECORD_STEPS, SETUP_STEPS, RecordFacts
from parsers.nccl.records import HEADER_WINDOW, MARKER_LEVELS, Record
from parsers.nccl.wording import wording_range

#: the compiled module (False: this file runs as plain Python)
COMPILED = cython.compiled

Buf = cython.typedef(cython.pointer(cython.const[cython.uchar]))
Ints = cython.typedef(cython.longlong[::1])
Rows = cython.typedef(cython.longlong[:, ::1])

#: :func:`plain_fields`'s output: where the header starts, the host ends, the numbers, the source and
#: function spans (-1: absent), the level and where the message starts (C constants: the scan runs without the GIL)
F_AT = cython.declare(cython.Py_ssize_t, 0)
F_HOST_END = cython.declare(cython.Py_ssize_t, 1)
F_PID = cython.declare(cython.Py_ssize_t, 2)
F_TID = cython.declare(cython.Py_ssize_t, 3)
F_DEV = cython.declare(cython.Py_ssize_t, 4)
F_SRC = cython.declare(cython.Py_ssize_t, 5)
F_SRC_END = cython.declare(cython.Py_ssize_t, 6)
F_FUNC = cython.declare(cython.Py_ssize_t, 7)
F_FUNC_END = cython.declare(cython.Py_ssize_t, 8)
F_LEVEL = cython.declare(cython.Py_ssize_t, 9)
F_MSG = cython.declare(cython.Py_ssize_t, 10)
N_FIELDS = 11
#: :func:`scan_lines`'s row of a line: those fields, then where the line ends (at its newline), where it ends
#: before its carriage returns, what :func:`_plain_fields` found (1, 0, -1; :data:`FOUND_BLANK`: an empty line,
#: not searched), its flags and, where it holds no plain record, the job-log readers its texts concern
#: (:mod:`parsers.nccl.signal_groups`)
S_END = cython.declare(cython.Py_ssize_t, 11)
S_E = cython.declare(cython.Py_ssize_t, 12)
S_FOUND = cython.declare(cython.Py_ssize_t, 13)
S_FLAGS = cython.declare(cython.Py_ssize_t, 14)
S_HINTS = cython.declare(cython.Py_ssize_t, 15)
S_WIDTH = 16
FOUND_BLANK = cython.declare(cython.longlong, 2)
#: a row's flags: the same bytes as the line before it, ASCII only, ``NCCL`` in it
SAME_BYTES = cython.declare(cython.longlong, 1)
ALL_ASCII = cython.declare(cython.longlong, 2)
HAS_NCCL = cython.declare(cython.longlong, 4)
H_SIGNAL = cython.declare(cython.longlong, signal_groups.SIGNAL)
LEVELS = ("INFO", "WARN", "TRACE")
LV_INFO = cython.declare(cython.longlong, 0)
MAX_DIGITS = cython.declare(cython.Py_ssize_t, 18)  # within int64; more: the careful path
WINDOW = cython.declare(cython.Py_ssize_t, HEADER_WINDOW // 2)
WORDING_N = cython.declare(cython.longlong, WORDING_RECORDS)

#: what the reader tells the parser's Python path of a line it hands it (``JobLogParser._line``): nothing,
#: that it holds no plain record (the careful path only), that it holds no record and no job-log signal
UNREAD, NOT_PLAIN, NO_SIGNAL = 0, 1, 2
#: the job-log readers' gates ordered by their first bytes, (start, length) of each, where each byte's run starts,
#: and the readers each one gates
SIGNAL_TEXTS, SIGNAL_SPANS, SIGNAL_FIRST = text_table(signal_groups.TEXTS)
SIGNAL_BITS = np.array(signal_groups.BITS, np.int64)
SEPARATORS = cython.declare(cython.longlong, joblog.HEADER_SEPARATORS)
#: the careful path's record levels (:func:`_second_marker`), as a text table
MARKER_TEXTS, MARKER_SPANS, MARKER_FIRST = text_table(MARKER_LEVELS)
_MARKER_TEXT = cython.declare(cython.const[cython.uchar][::1], MARKER_TEXTS)
_MARKER_SPANS = cython.declare(Ints, MARKER_SPANS)
_MARKER_FIRST = cython.declare(Ints, MARKER_FIRST)

REPEATED = (
    "NCCL records identical to the line before them (the first: line {line}) were read once: a repeated line carries nothing "
    "new, and reading each again cost minutes on a log of one line repeated"
)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
@cython.nogil
def _space(c: cython.longlong) -> cython.bint:
    """Python's ``\\s`` among ASCII characters (``str.isspace``)."""
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
@cython.nogil
def _word(c: cython.longlong) -> cython.bint:
    """``[\\w.-]`` among ASCII characters."""
    return 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 95 or c == 46 or c == 45


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
@cython.nogil
def _digits(buf: Buf, i: cython.Py_ssize_t, n: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """The end of the run of digits at ``i`` (``i``: none)."""
    while i < n and 48 <= buf[i] <= 57:
        i += 1
    return i


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _number(buf: Buf, i: cython.Py_ssize_t, j: cython.Py_ssize_t) -> cython.longlong:
    v: cython.longlong = 0
    while i < j:
        v = v * 10 + (buf[i] - 48)
        i += 1
    return v


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _marker(buf: Buf, i: cython.Py_ssize_t, n: cython.Py_ssize_t, f: Ints) -> cython.Py_ssize_t:
    """`` NCCL (INFO|WARN|TRACE)( |$)`` at ``i``: where the message starts (its level in ``f``), or -1."""
    if i + 10 > n or buf[i] != 32 or not _nccl_at(buf, i + 1) or buf[i + 5] != 32:
        return -1
    j = i + 6
    if buf[j] == 73 and buf[j + 1] == 78 and buf[j + 2] == 70 and buf[j + 3] == 79:  # INFO
        f[F_LEVEL] = 0
        j += 4
    elif buf[j] == 87 and buf[j + 1] == 65 and buf[j + 2] == 82 and buf[j + 3] == 78:  # WARN
        f[F_LEVEL] = 1
        j += 4
    elif (
        j + 5 <= n and buf[j] == 84 and buf[j + 1] == 82 and buf[j + 2] == 65 and buf[j + 3] == 67 and buf[j + 4] == 69
    ):
        f[F_LEVEL] = 2  # TRACE
        j += 5
    else:
        return -1
    if j == n:
        return j
    return j + 1 if buf[j] == 32 else -1


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _after_src(buf: Buf, i: cython.Py_ssize_t, n: cython.Py_ssize_t, f: Ints) -> cython.Py_ssize_t:
    """``(?: SRC(?: \\(FUNC\\))?)? NCCL LEVEL`` at ``i`` (the regex's order: with a source, with a function,
    then without): the message's start, or -1."""
    f[F_SRC] = f[F_SRC_END] = f[F_FUNC] = f[F_FUNC_END] = -1
    if i + 1 < n and buf[i] == 32:
        s = i + 1
        c = buf[s]
        if not (_space(c) or c == 58 or c == 91 or c == 40):  # [^\s:\[(]
            j = s + 1
            while j < n and not (_space(buf[j]) or buf[j] == 58):  # [^\s:]*
                j += 1
            if j < n and buf[j] == 58:
                e = _digits(buf, j + 1, n)
                if e > j + 1:
                    m = _after_file(buf, s, e, n, f, False)
                    if m >= 0:
                        return m
    return _marker(buf, i, n, f)


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _after_file(
    buf: Buf, s: cython.Py_ssize_t, e: cython.Py_ssize_t, n: cython.Py_ssize_t, f: Ints, word: cython.bint
) -> cython.Py_ssize_t:
    """After ``FILE:LINE`` (``buf[s:e]``): `` (FUNC)`` then the marker, else the marker: where the message starts
    (``f``'s source and function spans set), or -1. FUNC is ``[^\\s()]*``, or ``\\w+`` when ``word`` (the form of a
    header stripped to its device)."""
    if e + 1 < n and buf[e] == 32 and buf[e + 1] == 40:
        k = e + 2
        while k < n and (
            (_word(buf[k]) and buf[k] != 46 and buf[k] != 45)
            if word
            else not (_space(buf[k]) or buf[k] == 40 or buf[k] == 41)
        ):
            k += 1
        if (k > e + 2 or not word) and k < n and buf[k] == 41:
            m = _marker(buf, k + 1, n, f)
            if m >= 0:
                f[F_SRC], f[F_SRC_END], f[F_FUNC], f[F_FUNC_END] = s, e, e + 2, k
                return m
    m = _marker(buf, e, n, f)
    if m >= 0:
        f[F_SRC], f[F_SRC_END] = s, e
    return m


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _match_at(buf: Buf, i: cython.Py_ssize_t, n: cython.Py_ssize_t, f: Ints, other: cython.bint) -> cython.Py_ssize_t:
    """The plain record's header from ``i``: where its message starts, -1 if none, -2 if a number of it is
    past :data:`MAX_DIGITS` (the careful path reads it). ``other``: a host that starts with a digit or
    ``<`` (a container's id, a redacted ``<cluster_name>``), of ``[\\w.<>-]``, instead of a letter."""
    c = buf[i]
    if other:
        if not (48 <= c <= 57 or c == 60):
            return -1
    elif not (65 <= c <= 90 or 97 <= c <= 122):
        return -1
    j = i + 1
    while j < n and (_word(buf[j]) or other and (buf[j] == 60 or buf[j] == 62)):
        j += 1
    if j >= n or buf[j] != 58:
        return -1
    host_end = j
    a = j + 1
    j = _digits(buf, a, n)
    if j == a or j >= n or buf[j] != 58:
        return -1
    pid_a, pid_b = a, j
    a = j + 1
    j = _digits(buf, a, n)
    if j == a or j + 1 >= n or buf[j] != 32 or buf[j + 1] != 91:
        return -1
    tid_a, tid_b = a, j
    a = j + 2
    j = _digits(buf, a, n)
    if j == a or j >= n or buf[j] != 93:
        return -1
    if pid_b - pid_a > MAX_DIGITS or tid_b - tid_a > MAX_DIGITS or j - a > MAX_DIGITS:
        return -2
    f[F_AT], f[F_HOST_END] = i, host_end
    f[F_PID], f[F_TID], f[F_DEV] = _number(buf, pid_a, pid_b), _number(buf, tid_a, tid_b), _number(buf, a, j)
    j += 1
    # (?: \d+\.\d+)? first, then without it
    if j + 3 < n and buf[j] == 32:
        d = _digits(buf, j + 1, n)
        if d > j + 1 and d < n and buf[d] == 46:
            e = _digits(buf, d + 1, n)
            if e > d + 1:
                m = _after_src(buf, e, n, f)
                if m >= 0:
                    return m
    return _after_src(buf, j, n, f)


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _find(buf: Buf, n: cython.Py_ssize_t, f: Ints) -> cython.Py_ssize_t:
    """The leftmost plain record's message start (``f`` filled), -1 if none starts within the header
    window, -2 if one holds an over-long number.

    Where the regex finds none, a host starting with a digit or ``<`` at the line's start, after a space or
    after a launcher's stream tag (``[1,0]<stdout>:``: a container's id in a Docker job) (the careful path
    reads those: its header read from the right gives the same fields for them, as GLUED_TS cannot move a
    timestamp's digits out of a host after a space or a ``>:``)."""
    i: cython.Py_ssize_t = 0
    while i < n and i <= WINDOW:
        c = buf[i - 1] if i > 0 else 32
        if _space(c) or c == 58 or c == 93 or c == 124 or c == 96 or c == 39 or c == 34:  # [\s:\]|`'"]
            m = _match_at(buf, i, n, f, False)
            if m != -1:
                return m
        i += 1
    i = 0
    while i < n and i <= WINDOW:
        if i == 0 or buf[i - 1] == 32 or i >= 2 and buf[i - 1] == 58 and buf[i - 2] == 62:
            m = _match_at(buf, i, n, f, True)
            if m != -1:
                return m
        i += 1
    return -1


def plain_fields(line: str, f: Any) -> int:
    """Whether ``line`` (without its newline) is one plain record as ``_plain`` reads it: 1 (its fields in
    ``f``, an int64 array of :data:`N_FIELDS`), 0 not, -1 not read here (a character other than ASCII
    before its message, a number past 18 digits: the careful path decides)."""
    raw = line.encode("utf-8", "surrogatepass")
    return _plain_fields(raw, 0, len(raw), f)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
@cython.nogil
def _nccl_at(buf: Buf, i: cython.Py_ssize_t) -> cython.bint:
    return buf[i] == 78 and buf[i + 1] == 67 and buf[i + 2] == 67 and buf[i + 3] == 76


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _has(buf: Buf, a: cython.Py_ssize_t, b: cython.Py_ssize_t, spaced: cython.bint) -> cython.bint:
    """Whether ``NCCL`` (`` NCCL `` when ``spaced``) occurs within ``buf[a:b]``."""
    k: cython.Py_ssize_t = 1 if spaced else 0
    while a + 4 + 2 * k <= b:
        if _nccl_at(buf, a + k) and (not spaced or buf[a] == 32 and buf[a + 5] == 32):
            return True
        a += 1
    return False


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _plain_fields(buf: Buf, a: cython.Py_ssize_t, b: cython.Py_ssize_t, out: Ints) -> cython.int:
    """:func:`plain_fields` of the line ``buf[a:b]`` (UTF-8): offsets in ``out`` count from ``a``."""
    n = b - a
    line: Buf = buf + a if cython.compiled else buf[a:b]
    m = _find(line, n, out)
    if m == -1:
        m = _stripped(line, n, out)
    if m == -2:
        return -1
    # a character other than ASCII before the message (or anywhere, when none was found): Python's
    # \s and \w decide (the regex's ``\s`` and ``\w`` take Unicode's spaces and letters)
    if not _ascii(line, 0, m if m >= 0 else n):
        return -1
    if m < 0:
        return 0
    at = out[F_AT]
    if _has(line, 0, at, False):
        return 0
    if _has(line, m - 1, n, True):
        # ``NCCL`` again in the message ("NCCL version", "NCCL Dev 0"): the regex refuses the line, and the
        # careful path reads the same record from it when the host follows a space (its tokens split there)
        # and no second record's marker follows
        if not (at == 0 or line[at - 1] == 32) or _second_marker(line, m - 1, n):
            return 0
    out[F_MSG] = m
    return 1


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _stripped(buf: Buf, n: cython.Py_ssize_t, f: Ints) -> cython.Py_ssize_t:
    """A record whose header a collector stripped to its device, at the line's start: ``[DEV] [FILE.EXT:LINE [(FUNC)]]
    NCCL LEVEL`` with EXT one of cc, cu, cpp, c, h (the careful path's headless form, read the same way): where its
    message starts, ``f`` filled (no host, pid -1: the file's process without a header), or -1."""
    if n < 4 or buf[0] != 91:
        return -1
    j = _digits(buf, 1, n)
    if j == 1 or j >= n or buf[j] != 93 or j - 1 > MAX_DIGITS:
        return -1
    f[F_AT] = f[F_HOST_END] = 0
    f[F_PID] = f[F_TID] = -1
    f[F_DEV] = _number(buf, 1, j)
    f[F_SRC] = f[F_SRC_END] = f[F_FUNC] = f[F_FUNC_END] = -1
    m = _marker(buf, j + 1, n, f)
    if m >= 0 or j + 2 >= n or buf[j + 1] != 32:
        return m
    s = j + 2  # FILE.EXT:LINE, [\w./-]+ then its extension
    k = s
    while k < n and (_word(buf[k]) or buf[k] == 47):
        k += 1
    e = _digits(buf, k + 1, n) if k < n and buf[k] == 58 else k
    if e == k or e == k + 1 or not _source_file(buf, s, k):
        return -1
    return _after_file(buf, s, e, n, f, True)


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _source_file(buf: Buf, s: cython.Py_ssize_t, k: cython.Py_ssize_t) -> cython.bint:
    """Whether ``buf[s:k]`` is a name then ``.cc``, ``.cu``, ``.cpp``, ``.c`` or ``.h``."""
    if k - s >= 4 and buf[k - 3] == 46 and buf[k - 2] == 99 and (buf[k - 1] == 99 or buf[k - 1] == 117):  # .cc .cu
        return True
    if k - s >= 5 and buf[k - 4] == 46 and buf[k - 3] == 99 and buf[k - 2] == 112 and buf[k - 1] == 112:  # .cpp
        return True
    return k - s >= 3 and buf[k - 2] == 46 and (buf[k - 1] == 99 or buf[k - 1] == 104)  # .c .h


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _second_marker(buf: Buf, a: cython.Py_ssize_t, n: cython.Py_ssize_t) -> cython.bint:
    """Whether ``buf[a:n]`` holds a record's marker as the careful path finds one: `` NCCL `` and a level
    (``INFO``, ``WARN``, ``TRACE``, ``CALL``, ``ABORT``) that ends the line or a space follows."""
    while a + 6 <= n:
        if buf[a] == 32 and _nccl_at(buf, a + 1) and buf[a + 5] == 32:
            k = _level_end(buf, a + 6, n)
            if k > a + 6 and (k == n or buf[k] == 32):
                return True
        a += 1
    return False


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _level_end(buf: Buf, j: cython.Py_ssize_t, n: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """The end of the level at ``j`` (one of the careful path's), or ``j``."""
    if j >= n:
        return j
    c = buf[j]
    for k in range(_MARKER_FIRST[c], _MARKER_FIRST[c + 1]):
        s = _MARKER_SPANS[2 * k]
        size = _MARKER_SPANS[2 * k + 1]
        if j + size <= n:
            i: cython.Py_ssize_t = 1
            while i < size and buf[j + i] == _MARKER_TEXT[s + i]:
                i += 1
            if i == size:
                return j + size
    return j


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _hints(
    buf: Buf, a: cython.Py_ssize_t, b: cython.Py_ssize_t, texts: Buf, spans: Ints, first: Ints, bits: Ints
) -> cython.longlong:
    """The bits of the job-log readers whose gates ``buf[a:b]`` holds (:mod:`parsers.nccl.signal_groups`, found by
    :func:`~parsers.nccl._foreign.text_table`'s buckets), :data:`~parsers.nccl.signal_groups.SIGNAL` also for an
    autotune header's separators."""
    out: cython.longlong = 0
    seps: cython.longlong = 0
    for i in range(a, b):
        c = buf[i]
        if c == 44 or c == 124:  # , |
            seps += 1
        for k in range(first[c], first[c + 1]):
            s = spans[2 * k]
            n = spans[2 * k + 1]
            if i + n <= b:
                j = 1
                while j < n and buf[i + j] == texts[s + j]:
                    j += 1
                if j == n:
                    out |= bits[k]
    return out | H_SIGNAL if seps >= SEPARATORS else out


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _ascii(buf: Buf, a: cython.Py_ssize_t, b: cython.Py_ssize_t) -> cython.bint:
    while a < b:
        if buf[a] >= 128:
            return False
        a += 1
    return True


SCAN_ROWS = 16384  # lines a scan reads at most (2 MB of rows)


def scan_rows() -> Any:
    return np.empty((SCAN_ROWS, S_WIDTH), np.int64)  # rows for scan_lines


def scan_lines(data: bytes, start: cython.Py_ssize_t, rows_out: Any) -> tuple[int, int]:
    """The first pass over the whole lines of ``data`` from byte ``start`` (cleaned: :func:`~parsers.paste.clean_bytes`):
    a row of ``rows_out`` (:data:`S_WIDTH` int64) per line, as many as it has; returns where the lines read end and
    how many they are. C code alone, run without the GIL: :mod:`parsers.nccl.readahead` runs it on a thread for the
    lines ahead while the parser applies the records of these (:func:`read_lines`)."""
    rows: Rows = rows_out
    buf: Buf = data
    texts: Buf = SIGNAL_TEXTS
    spans: Ints = SIGNAL_SPANS
    first: Ints = SIGNAL_FIRST
    bits: Ints = SIGNAL_BITS
    end: cython.Py_ssize_t = len(data)
    room: cython.Py_ssize_t = rows.shape[0]
    n: cython.Py_ssize_t = 0
    pos: cython.Py_ssize_t = start
    prev_a: cython.Py_ssize_t = -1
    prev_b: cython.Py_ssize_t = -1
    row: Ints
    with cython.nogil:
        while pos < end and n < room:
            nl: cython.Py_ssize_t = pos
            while nl < end and buf[nl] != 10:  # the line's end, without a Python call per line
                nl += 1
            if nl == end:
                break
            a: cython.Py_ssize_t = pos
            b: cython.Py_ssize_t = nl
            row = rows[n]
            flags: cython.longlong = 0
            if prev_a >= 0 and _same_bytes(buf, a, b, prev_a, prev_b):
                flags |= SAME_BYTES
            if _ascii(buf, a, b):
                flags |= ALL_ASCII
            e: cython.Py_ssize_t = b
            while e > a and buf[e - 1] == 13:
                e -= 1
            found: cython.longlong = FOUND_BLANK
            hints: cython.longlong = 0
            if b > a and not (b == a + 1 and buf[a] == 13):
                found = _plain_fields(buf, a, e, row)
                if found != 1:
                    if _has(buf, a, e, False):
                        flags |= HAS_NCCL
                    hints = _hints(buf, a, e, texts, spans, first, bits)
            row[S_END] = b
            row[S_E] = e
            row[S_FOUND] = found
            row[S_FLAGS] = flags
            row[S_HINTS] = hints
            prev_a = a
            prev_b = b
            pos = nl + 1
            n += 1
    return pos, n


def read_lines(
    parser: Any, data: bytes, lineno: cython.longlong, rows_out: Any, start: cython.Py_ssize_t, count: cython.Py_ssize_t
) -> cython.longlong:
    """:meth:`JobLogParser._lines <parsers.nccl.parser.JobLogParser._lines>` over the ``count`` lines of ``data`` from
    byte ``start`` that :func:`scan_lines` read into ``rows_out``, with the plain records read here: returns the number
    of the last line. A line is decoded as the block would have been (invalid bytes replaced): only where a line has no
    plain record, and a record's host and message."""
    rows: Rows = rows_out
    blank: cython.longlong = 0
    repeated: cython.longlong = 0
    first_repeat: cython.longlong = 0
    records: cython.longlong = 0
    foreign: cython.longlong = 0
    previous: str | None = parser._previous_line  # while prev_a < 0: the line before these
    prev_a: cython.Py_ssize_t = -1
    prev_b: cython.Py_ssize_t = -1
    prev_flags: cython.longlong = 0
    procs: dict[Any, Any] = parser.procs
    last_p: Any = None  # the process of the last INFO record read, its host's bytes and its pid
    last_pid: cython.longlong = -1
    last_a: cython.Py_ssize_t = 0
    last_b: cython.Py_ssize_t = 0
    f: Ints
    buf: Buf = data
    pos: cython.Py_ssize_t = start
    for i in range(count):
        f = rows[i]
        lineno += 1
        a: cython.Py_ssize_t = pos
        b: cython.Py_ssize_t = f[S_END]
        pos = b + 1
        flags: cython.longlong = f[S_FLAGS]
        if prev_a < 0:
            same = previous is not None and data[a:b].decode("utf-8", "replace") == previous
        else:  # other bytes may decode to the same text (invalid ones)
            same = flags & SAME_BYTES or (
                not (flags & prev_flags & ALL_ASCII)
                and data[a:b].decode("utf-8", "replace") == data[prev_a:prev_b].decode("utf-8", "replace")
            )
        if same and _has(buf, a, b, True):
            repeated += 1
            if first_repeat == 0:
                first_repeat = lineno
        elif f[S_FOUND] != FOUND_BLANK:
            e: cython.Py_ssize_t = f[S_E]
            if f[S_FOUND] == 1:
                ha = a + f[F_AT]
                hb = a + f[F_HOST_END]
                if f[F_LEVEL] != LV_INFO:
                    p = None
                elif last_p is not None and f[F_PID] == last_pid and _same_bytes(buf, ha, hb, last_a, last_b):
                    p = last_p  # the process of the record before: a log is mostly runs of one process's records
                else:  # a header stripped to its device (pid -1): the file's process without one
                    p = procs.get((data[ha:hb].decode("ascii"), f[F_PID]) if f[F_PID] >= 0 else (None, None))
                    if p is not None:
                        last_p, last_pid, last_a, last_b = p, f[F_PID], ha, hb
                records += _record(parser, p, data, a, e, f, lineno)
            else:
                known = NOT_PLAIN if f[S_FOUND] == 0 else UNREAD
                if not flags & HAS_NCCL and not f[S_HINTS] & H_SIGNAL and parser.job_idle():
                    known = NO_SIGNAL  # no NCCL, no job-log signal: blank, cut from its header, or foreign
                if known == NO_SIGNAL and certainly_foreign(data, a, e):
                    foreign += 1  # application output: counted here
                else:
                    parser._line(data[a:e].decode("utf-8", "replace"), lineno, known, f[S_HINTS])
        else:
            blank += 1
            parser._in_stall = False
        prev_a, prev_b, prev_flags = a, b, flags
    if prev_a >= 0:
        parser._previous_line = data[prev_a:prev_b].decode("utf-8", "replace")
    parser.counts["blank"] += blank
    parser.counts["records"] += records
    parser.counts["foreign"] += foreign
    if repeated:
        parser._issue_at(first_repeat, IssueSeverity.INFO, "log.repeated_lines", REPEATED, count=repeated)
    return lineno


@cython.cfunc
@cython.exceptval(check=False)
@cython.nogil
def _same_bytes(
    buf: Buf, a: cython.Py_ssize_t, b: cython.Py_ssize_t, c: cython.Py_ssize_t, d: cython.Py_ssize_t
) -> cython.bint:
    """Whether ``buf[a:b]`` and ``buf[c:d]`` hold the same bytes."""
    if b - a != d - c:
        return False
    k: cython.Py_ssize_t = 0
    while k < b - a and buf[a + k] == buf[c + k]:
        k += 1
    return k == b - a


@cython.cfunc
def _record(
    parser: Any,
    p: Any,
    data: bytes,
    a: cython.Py_ssize_t,
    e: cython.Py_ssize_t,
    f: Ints,
    lineno: cython.longlong,
) -> cython.longlong:
    """The plain record of line ``data[a:e]`` (fields in ``f``): an INFO record of a process already seen (``p``) is
    applied here, any other through the parser's steps. Returns the records counted here (they count their own)."""
    msg = data[a + f[F_MSG] : e].decode("utf-8", "replace").rstrip()
    counted: cython.longlong = 0
    try:
        if p is None:  # no host nor pid where the header was stripped to its device (pid -1)
            host = data[a + f[F_AT] : a + f[F_HOST_END]].decode("ascii") if f[F_PID] >= 0 else None
            parser._record(_whole(data, a, f, host, f[F_PID] if f[F_PID] >= 0 else None, msg), lineno)
        else:
            counted = 1
            p.last_line = lineno
            p.records += 1
            dev = f[F_DEV]
            devs = p.devs
            if dev not in devs:
                devs.add(dev)
            fact = classify(msg)
            if p.wording is None or p.wording_checked < WORDING_N:
                p.check_wording(wording_range(msg))
            if fact is None:
                pass
            elif type(fact) is Conn:
                p.add_conn(fact, lineno)
            elif (step := RECORD_STEPS.get(type(fact))) is not None:
                step(parser, p, _whole(data, a, f, p.host, p.pid, msg), fact, lineno)  # its rows share them
            else:
                SETUP_STEPS.get(type(fact), RecordFacts._apply)(parser, p, fact, lineno)
        if parser._in_stall:
            parser._in_stall = False
    except (ValueError, OverflowError, IndexError):
        parser._damaged(lineno)
    return counted


@cython.cfunc
def _whole(data: bytes, a: cython.Py_ssize_t, f: Ints, host: str | None, pid: object, msg: str) -> Record:
    """The :class:`Record` of the plain record at ``data[a:]`` whose other fields are in ``f``."""
    src = data[a + f[F_SRC] : a + f[F_SRC_END]].decode("ascii") if f[F_SRC] >= 0 else None
    func = data[a + f[F_FUNC] : a + f[F_FUNC_END]].decode("ascii") if f[F_FUNC] >= 0 else None
    outer = data[a : a + f[F_AT]].decode("ascii")
    # the named tuple's own __new__ is a Python function (a frame a record): what it does, as one C call
    tid = f[F_TID] if f[F_TID] >= 0 else None
    return tuple.__new__(Record, (outer, host, pid, tid, f[F_DEV], src, func, LEVELS[f[F_LEVEL]], msg))
