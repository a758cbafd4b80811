"""Reading a timeline's bytes into event rows: the tokenizing half of :mod:`parsers.timeline.parser`.

:class:`Tokenizer` runs the compiled tokenizer (:mod:`parsers.timeline._tokenize`) over a stream, or
over one byte range of a file, in fixed buffers, and hands out :class:`TokenBlock` s: event
rows, the strings they name and the metadata records. It owns everything about the bytes:
the opening ``[``, syntax errors (skipped to the next record), oversized records, the end
of the input. What it cannot judge alone (is a missing ``]`` normal for this writer?) it
leaves in :attr:`Tokenizer.ending` for the parser.

A big uncompressed timeline is tokenized in ranges at once (:func:`timeline_ranges`,
:func:`tokenize_range`, by threads or Dask workers) and paired in file order by one
:class:`~parsers.timeline.parser.TimelineParser`. A range starts right after a record's closing
``}``; one that is not a record boundary after all (a ``},{"ph"`` inside a tensor name)
shows up as a range that ends inside a record, and the parser re-reads from there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from parsers.inputs import ByteSink, FedReader, Source, readinto_full
from parsers.issues import IssueSink, ParseIssue
from parsers.timeline import _tokenize as T
from parsers.timeline import layout as L
from parsers.timeline._state import TokenState, decode_str
from parsers.timeline.buffers import events_array, give_back, thread_buffer
from parsers.timeline.openings import MAX_RECORD, Openings

DEFAULT_CHUNK = 16 * 1024 * 1024
#: a range of a big timeline tokenized by one task (16 MB: ~0.015 s of work, ~20 MB of rows)
RANGE_BYTES = 16 << 20
#: a record boundary: the end of one record and the start of the next (group 1: the separator)
_BOUNDARY_RE = re.compile(rb'\}(\s*,\s*)\{\s*"(?:ph|name)"\s*:')


@dataclass(slots=True)
class TokenBlock:
    """Event rows (:data:`parsers.timeline._tokenize.EV_N` columns; string ids local to the tokenizer
    that made them), the strings first seen in them and the metadata records among them."""

    events: np.ndarray
    strings: list[tuple[int, int, str]]  # (category, id, text), ids in increasing order
    metas: list[tuple[int, bytes]]  # (file offset, raw record)


@dataclass(slots=True)
class Ending:
    """Why tokenizing stopped.

    ``empty``: an empty timeline (nothing but ``[``); ``closed``: the ``]`` ending the array
    was read at ``at`` (``trailing`` non-blank bytes after it, to the end of the range);
    ``end``: the input or range ended, ``tail`` the bytes from ``at`` on that were not a
    whole record; ``stopped``: an unreadable record at ``at`` in a range read without
    skipping (``resync=False``).
    """

    kind: str
    at: int
    tail: bytes = b""
    trailing: int = 0


class Tokenizer(Openings):
    """Tokenize one stream, or one range of a file, into :class:`TokenBlock` s.

    ``first``: the input starts at the file's start (its ``[`` is checked); ``resync``:
    skip an unreadable record to the next one (else stop there, see :class:`Ending`);
    ``records_before``: records read before this range (a syntax error before any record
    means the file is not a timeline at all).
    """

    def __init__(
        self,
        name: str,
        sink: IssueSink,
        *,
        chunk_bytes: int = DEFAULT_CHUNK,
        first: bool = True,
        resync: bool = True,
        records_before: int = 0,
    ) -> None:
        self.name = name
        self.sink = sink
        self.chunk_bytes = max(4096, chunk_bytes)
        self.first = first
        self.resync = resync
        self.records_before = records_before
        self.state = TokenState.new(after=records_before > 0)
        self.ending = Ending("end", 0)
        self.skipped_bytes = 0
        self.position = 0  # file offset after the last byte read

    def blocks(
        self,
        f: Source,
        start: int = 0,
        stop: int | None = None,
        buffer: np.ndarray | None = None,
        first_read: int | None = None,
    ) -> Iterator[TokenBlock]:
        """Tokenize ``f`` (positioned at file offset ``start``) up to ``stop`` (or its end), read into
        ``buffer`` (a new one by default) a chunk at a time, the first read ``first_read`` bytes if given."""
        st = self.state
        chunk = self.chunk_bytes
        cap = max(1024, chunk // 48)  # one size for every block: the pool (events_array) reuses them
        metas = np.empty((4096, L.MT_N), np.int64)
        newstr = np.empty((4096, 4), np.int64)
        outn = np.zeros(4, np.int64)
        left = None if stop is None else stop - start

        def read(into: memoryview) -> int:
            nonlocal left
            want = len(into) if left is None else min(len(into), left)
            n = readinto_full(f, into[:want])
            if left is not None:
                left -= n
            return n

        first = first_read or chunk
        room = max(chunk, first) + 64
        buf = buffer if buffer is not None and len(buffer) >= room else np.empty(room, np.uint8)
        end = read(buf.data[:first])
        eof = end < first or left == 0
        pos = self.open_array(buf, end) if self.first else 0
        base = start
        if pos < 0:
            self.position = start + end
            self.ending = Ending("empty", start + end)
            return
        events = events_array(cap)
        try:
            while True:
                status, pos = T.tokenize(
                    buf, pos, end, base, st.ctr, st.iss, st.ikeys, st.ivals, events, metas, newstr, outn
                )
                err = int(outn[3])  # where a syntax error is (taking the block resets outn)
                rows = events[: int(outn[0])]
                if 2 * len(rows) >= cap:  # hand most of a buffer out as it is, and fill a new one
                    events = events_array(cap)
                else:  # a few rows: copied, not pinning the whole buffer
                    rows = rows.copy()
                block = self._block(buf, base, rows, metas, newstr, outn)
                if len(block.events) or block.metas:
                    yield block
                self.position = base + pos
                if status == L.ST_FULL:
                    continue
                if status == L.ST_GROW:
                    st.grow_intern()
                    continue
                if status == L.ST_CLOSED:
                    trailing, more = self._trailing(f, buf, pos, end, left)
                    self.position = base + end + more
                    self.ending = Ending("closed", base + pos, trailing=trailing)
                    return
                if status == L.ST_SYNTAX:
                    if not self.resync:
                        self.ending = Ending("stopped", base + pos)
                        return
                    pos = self._resync(buf, err, pos, end, base, eof)
                    if pos >= 0:
                        continue
                    pos = end  # nothing to resync to in this buffer: read on
                # ST_NEED_MORE (or resync needs more): keep the partial record, read on
                carry = end - pos
                if eof:
                    self.position = base + end
                    self.ending = Ending("end", base + pos, tail=bytes(buf[pos:end]))
                    return
                if carry > MAX_RECORD:
                    if not self.resync:
                        self.ending = Ending("stopped", base + pos)
                        return
                    self._oversized(base + pos)
                    self.skipped_bytes += carry
                    carry = 0
                    pos = end
                if carry + chunk > len(buf):
                    bigger = np.empty(carry + chunk + 64, np.uint8)
                    bigger[:carry] = buf[pos:end]
                    buf = bigger
                else:
                    buf[:carry] = buf[pos:end]
                base += pos
                n = read(buf.data[carry : carry + chunk])
                eof = n < chunk or left == 0
                pos, end = 0, carry + n
        finally:  # the buffer not handed out goes back to the pool
            give_back(events)

    @property
    def records(self) -> int:
        return int(self.state.ctr[L.T_RECORDS])

    @staticmethod
    def _trailing(f: Source, buf: np.ndarray, pos: int, end: int, left: int | None) -> tuple[int, int]:
        """Non-blank bytes after the closing ']' to the end of the input or range, and the
        bytes read past the buffer to count them."""
        extra, read = nonblank(f, left)
        return len(bytes(buf[pos:end]).strip()) + extra, read

    # -- kernel output ------------------------------------------------------------------
    @staticmethod
    def _block(
        buf: np.ndarray, base: int, rows: np.ndarray, metas: np.ndarray, newstr: np.ndarray, outn: np.ndarray
    ) -> TokenBlock:
        nx, nn = int(outn[1]), int(outn[2])
        strings = [(int(cat), int(sid), decode_str(bytes(buf[s:e]))) for cat, sid, s, e in newstr[:nn]]
        raw = [(base + int(s), bytes(buf[s:e])) for s, e, _ph, _fl in metas[:nx]]
        outn[:] = 0
        return TokenBlock(rows, strings, raw)


def nonblank(f: Source, left: int | None = None) -> tuple[int, int]:
    """The bytes of ``f`` from where it is (``left`` of them, or to its end) other than blanks
    around each MiB read, and how many were read."""
    extra = read = 0
    while left is None or left > 0:
        more = f.read(1 << 20 if left is None else min(1 << 20, left))
        if not more:
            break
        if left is not None:
            left -= len(more)
        read += len(more)
        extra += len(more.strip())
    return extra, read


@dataclass(slots=True)
class TokenizedRange:
    """One range of a file, tokenized (by :func:`tokenize_range`, possibly on another worker)."""

    start: int
    stop: int
    blocks: list[TokenBlock]
    ctr: np.ndarray  # the tokenizer's counters (records, separators, first/last ts)
    iss: np.ndarray  # the tokenizer's issue counts
    issues: list[ParseIssue] = field(default_factory=list)
    skipped_bytes: int = 0
    ending: Ending = field(default_factory=lambda: Ending("end", 0))


def tokenize_range(
    path: str,
    start: int,
    stop: int,
    chunk_bytes: int = DEFAULT_CHUNK,
    *,
    resync: bool = False,
    records_before: int = 1,
    seen: ByteSink | None = None,
) -> TokenizedRange:
    """Tokenize ``path[start:stop]``, a range starting at a record boundary past the ``[``.

    By default (a worker's range) it stops at an unreadable record instead of skipping it
    (``Ending("stopped")``): the parser re-reads from there in file order, as the single
    pass would have. ``seen`` gets every byte of the range as it is read (those the tokenizer
    did not need too), or its ``fail()`` when they cannot all come.
    """
    sink = IssueSink(path)
    # a range a little over the chunk size (ranges end at the first record boundary after it) is
    # read at once: its bytes stay in the buffer until it is tokenized, so they are lent to ``seen``
    most = chunk_bytes + chunk_bytes // 2
    whole = stop - start <= most
    tok = Tokenizer(
        path,
        sink,
        chunk_bytes=min(chunk_bytes, max(4096, stop - start)),
        first=False,
        resync=resync,
        records_before=records_before,
    )
    with open(path, "rb") as raw:
        raw.seek(start)
        f = raw if seen is None else FedReader(raw, start, seen, lend=whole)
        fed = False
        try:
            # one size for every range: the next one (a little longer or shorter) reads into it too
            buffer = thread_buffer((most if whole else tok.chunk_bytes) + 64)
            blocks = list(tok.blocks(f, start, stop, buffer, stop - start if whole else None))
            fed = not isinstance(f, FedReader) or f.read_to(stop)
        finally:
            if seen is not None and not fed:
                seen.fail()
        if isinstance(f, FedReader):
            f.settle()  # before this thread's next range reads into the buffer
    return TokenizedRange(start, stop, blocks, tok.state.ctr, tok.state.iss, sink.issues, tok.skipped_bytes, tok.ending)


def recycle(block: TokenBlock) -> None:
    """Give ``block``'s event buffer back for the next :func:`~parsers.timeline.buffers.events_array`:
    its reader is done with it and holds no view of it (the pairer copies what it keeps)."""
    whole = block.events.base
    block.events = block.events[:0]
    if isinstance(whole, np.ndarray):
        give_back(whole)


#: a range of a file to tokenize: (path, start, stop, records_before)
RangeTask = tuple[str, int, int, int]


def tokenize_task(task: RangeTask, seen: ByteSink | None = None) -> TokenizedRange:
    """:func:`tokenize_range` of one of :func:`timeline_ranges`' tasks (a worker's unit of work)."""
    path, start, stop, records_before = task
    return tokenize_range(path, start, stop, records_before=records_before, seen=seen)


def timeline_ranges(path: str, begin: int, size: int, range_bytes: int = RANGE_BYTES) -> list[RangeTask]:
    """``path[begin:size]`` cut into ranges of about ``range_bytes`` that start right after a
    record's ``}`` (so each range's first separator is its own), as tasks for
    :func:`tokenize_task`: ``(path, start, stop, records_before)`` (1: some records may
    precede the range). One range if no boundary is found."""
    cuts = [begin]
    with open(path, "rb") as f:
        at = begin + range_bytes
        while at < size - range_bytes // 4:
            f.seek(at)
            window = f.read(1 << 20)
            m = _BOUNDARY_RE.search(window)
            if m is None:
                at += len(window) or range_bytes
                continue
            cut = at + m.start(1)
            cuts.append(cut)
            at = cut + range_bytes
    cuts.append(size)
    return [(path, start, stop, int(start > begin)) for start, stop in pairwise(cuts)]
