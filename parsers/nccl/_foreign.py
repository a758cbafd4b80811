# cython: infer_types=True, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled test of a line of application output: certainly foreign, or for the Python path to read.

A line with no ``NCCL`` and no job-log signal (:data:`parsers.nccl._lines.NO_SIGNAL`) is blank, an NCCL
message cut from its header (an orphan: :meth:`~parsers.nccl.parser.JobLogParser._other_line` classifies
it), or foreign. Most are foreign (a training loop's output: 15% of the corpus's lines), and reading
each in Python cost ~14 us. :func:`certainly_foreign` tells the compiled reader, from the bytes alone,
that a line is none of the others: it has words after its first, or a first word no launcher's tag
looks like (:data:`~parsers.nccl.records.PREFIX_ONLY`: ``[…]…:``, ``host:``, ``|``), no whitespace other
than ASCII's at its ends (``str.strip`` would take it off), does not start with any of
:data:`parsers.nccl.messages.FACT_STARTS` and holds none of :data:`~parsers.nccl.messages.FACT_TEXTS`
(a message :func:`~parsers.nccl.messages.classify` reads does one or the other: a test checks it on
every message of the corpus). Anything else goes to the Python path, which decides as before.
"""

from __future__ import annotations

import cython
import numpy as np

from parsers.nccl.messages import FACT_STARTS, FACT_TEXTS

#: the compiled module (False: this file runs as plain Python)
COMPILED = cython.compiled

Buf = cython.typedef(cython.pointer(cython.const[cython.uchar]))
Ints = cython.typedef(cython.longlong[::1])


def text_table(texts: tuple[str, ...]) -> tuple[bytes, object, object]:
    """``texts`` one after the other in the order of their first bytes, their (start, length) pairs in that order, and
    where each first byte's run of pairs starts (257 entries: byte ``c``'s texts are pairs ``first[c]`` to
    ``first[c + 1]``): what the compiled readers scan a line for them with (here, and :mod:`parsers.nccl._lines` for
    job-log signals). A byte is compared with the texts that start with it only (44 signals start with 25 bytes,
    among them the space and common letters: comparing each byte with all of them took a parse of 100 MB of the
    corpus's lines from 3.6 s to 4.1 s)."""
    ordered = sorted(texts, key=lambda t: t[0])
    spans = np.array([(sum(len(x) for x in ordered[:k]), len(t)) for k, t in enumerate(ordered)], np.int64).ravel()
    first = np.searchsorted(np.array([ord(t[0]) for t in ordered], np.int64), np.arange(257), "left").astype(np.int64)
    return "".join(ordered).encode("ascii"), spans, first


STARTS, START_SPANS, START_FIRST = text_table(FACT_STARTS)
TEXTS, TEXT_SPANS, TEXT_FIRST = text_table(FACT_TEXTS)
# typed once, here: four views taken in the function at each call were two thirds of its time (0.75 -> 0.24 us)
_START_SPANS = cython.declare(Ints, START_SPANS)
_START_FIRST = cython.declare(Ints, START_FIRST)
_TEXT_SPANS = cython.declare(Ints, TEXT_SPANS)
_TEXT_FIRST = cython.declare(Ints, TEXT_FIRST)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def _space(c: cython.longlong) -> cython.bint:
    """Python's ``str.strip`` whitespace among ASCII characters."""
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


@cython.cfunc
@cython.exceptval(check=False)
def _at(buf: Buf, i: cython.Py_ssize_t, b: cython.Py_ssize_t, texts: Buf, spans: Ints, first: Ints) -> cython.bint:
    """Whether one of the texts (:func:`text_table`) starts at ``buf[i]`` (and ends by ``b``)."""
    c = buf[i]
    for k in range(first[c], first[c + 1]):
        s = spans[2 * k]
        n = spans[2 * k + 1]
        if i + n <= b:
            j = 1
            while j < n and buf[i + j] == texts[s + j]:
                j += 1
            if j == n:
                return True
    return False


@cython.cfunc
@cython.exceptval(check=False)
def _uspace(buf: Buf, i: cython.Py_ssize_t, n: cython.Py_ssize_t) -> cython.bint:
    """Whether the ``n`` bytes at ``buf[i]`` are the UTF-8 of a whitespace character other than ASCII's, which
    ``str.strip`` takes off: U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000."""
    if n == 2:
        return buf[i] == 0xC2 and (buf[i + 1] == 0x85 or buf[i + 1] == 0xA0)
    c, d, e = buf[i], buf[i + 1], buf[i + 2]
    if c == 0xE2 and d == 0x80:
        return 0x80 <= e <= 0x8A or e == 0xA8 or e == 0xA9 or e == 0xAF
    return (
        (c == 0xE2 and d == 0x81 and e == 0x9F)
        or (c == 0xE1 and d == 0x9A and e == 0x80)
        or (c == 0xE3 and d == 0x80 and e == 0x80)
    )


@cython.cfunc
@cython.exceptval(check=False)
def _unicode_space_edge(buf: Buf, a: cython.Py_ssize_t, b: cython.Py_ssize_t) -> cython.bint:
    """Whether ``buf[a:b]`` starts or ends with whitespace other than ASCII's."""
    n = b - a
    return (n >= 2 and (_uspace(buf, a, 2) or _uspace(buf, b - 2, 2))) or (
        n >= 3 and (_uspace(buf, a, 3) or _uspace(buf, b - 3, 3))
    )


def certainly_foreign(data: bytes, a: cython.Py_ssize_t, b: cython.Py_ssize_t) -> cython.bint:
    """Whether line ``data[a:b]`` (no ``NCCL`` in it, no job-log signal) is certainly foreign: see the module."""
    buf: Buf = data
    starts: Buf = STARTS
    texts: Buf = TEXTS
    while a < b and _space(buf[a]):
        a += 1
    while b > a and _space(buf[b - 1]):
        b -= 1
    if a == b or _unicode_space_edge(buf, a, b):
        return False
    w = a + 1 if buf[a] == 62 else a  # ">" of a quote, then the first word
    while w < b and _space(buf[w]):
        w += 1
    word = w
    ascii_word = True
    while word < b and not _space(buf[word]):
        ascii_word = ascii_word and buf[word] < 128
        word += 1
    # one word alone may be a launcher's tag (PREFIX_ONLY: "[1,0]<stdout>:", "host:", "3:", "|"), and Python's
    # \s and \w decide where it holds a character other than ASCII
    if word == b and (not ascii_word or buf[w] == 91 or buf[b - 1] == 58 or (b - w == 1 and buf[w] == 124)):
        return False
    if _at(buf, a, b, starts, _START_SPANS, _START_FIRST):
        return False
    for i in range(a, b):
        if _at(buf, i, b, texts, _TEXT_SPANS, _TEXT_FIRST):
            return False
    return True
