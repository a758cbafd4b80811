"""A log's next lines scanned on a thread while the parser applies the records of the lines before.

The compiled reader reads lines in two passes (:mod:`parsers.nccl._lines`): :func:`~parsers.nccl._lines.scan_lines`,
C code alone, finds each line's end, its plain record's fields and what else it holds; ``read_lines`` applies them,
with Python objects. The first pass runs without the GIL, so :class:`ReadAhead` reads the stream, cleans its blocks
(:func:`~parsers.paste.clean_bytes`) and scans their lines on a thread of its own, a few batches ahead, into row
buffers it reuses, while the parser's thread applies the batch before: on a second core the first pass, a fifth of
reading a log of mixed lines, costs the parser nothing. A stream of one block is read in the caller's thread (no
thread to start for a small log).

What it hands out, in the stream's order: :class:`Scanned` batches, and blocks (``bytes``) that are mostly COLL
trace lines, which the parser reads with its own regex. An exception of the stream (a damaged gzip member) comes out
where the stream raised it, after the lines read before it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from types import ModuleType, TracebackType
from typing import Any

from parsers.paste import clean_bytes

#: blocks in flight at most (read, or being applied): with :data:`BUFFERS` row buffers, what the read-ahead holds
#: (three 2 MB buffers of rows; two 4 MB blocks, read and cleaned: ~20 MB in all)
BLOCKS = 2
BUFFERS = 3
#: how often the parser's thread looks whether the scan thread is still there while it waits for it
WAKE_S = 0.5


@dataclass(frozen=True, slots=True)
class Scanned:
    """``count`` lines of ``data`` (a block's whole lines, cleaned) from byte ``start``, scanned into ``rows``;
    ``last``: the block's last."""

    data: bytes
    rows: Any
    start: int
    count: int
    last: bool


@dataclass(frozen=True, slots=True)
class _Failed:
    error: BaseException


_DONE = object()


class LineBlocks:
    """A stream's whole lines, a block of about ``size`` bytes at a time; :attr:`rest`: what follows its last
    newline, once the stream has ended."""

    def __init__(self, stream: Any, size: int) -> None:
        self.stream, self.size = stream, size
        self.rest = b""

    def __iter__(self) -> Iterator[bytes]:
        rest = b""
        while block := self.stream.read(self.size):
            cut = block.rfind(b"\n")
            if cut < 0:
                rest += block
                continue
            # one copy of the block's lines (with the line cut before it), not the block joined and then cut again
            data = b"".join((rest, memoryview(block)[: cut + 1])) if rest else block[: cut + 1]
            rest = block[cut + 1 :]
            yield data
        self.rest = rest


class ReadAhead:
    """:class:`Scanned` batches and COLL blocks of ``blocks`` (see the module); ``dense``: whether a block is
    mostly COLL trace lines; ``reader``: the module with ``scan_rows`` and ``scan_lines``. Use as a context
    manager (the thread ends with it), hand each piece back with :meth:`done` once applied."""

    def __init__(self, blocks: Iterable[bytes], dense: Callable[[bytes], bool], reader: ModuleType) -> None:
        self._blocks = iter(blocks)
        self._dense = dense
        self._reader = reader
        self._out: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._free: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._slots = threading.Semaphore(BLOCKS)
        self._stop = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop = True
        if self._thread is not None:
            self._free.put(None)  # wakes it where it waits for rows or a slot
            self._slots.release()
            self._thread.join()

    def __iter__(self) -> Iterator[Scanned | bytes]:
        first = next(self._blocks, None)
        if first is None:
            return
        second = next(self._blocks, None)
        if second is None:  # one block: here, in this thread
            rows = self._reader.scan_rows()
            self._free.put(rows)
            self._slots.acquire()
            yield from self._pieces(first)
            return
        for _ in range(BUFFERS):
            self._free.put(self._reader.scan_rows())
        self._thread = threading.Thread(target=self._run, args=([first, second],), name="hvd-analyze-scan", daemon=True)
        self._thread.start()
        while (piece := self._next()) is not _DONE:
            if isinstance(piece, _Failed):
                raise piece.error
            assert isinstance(piece, Scanned | bytes)
            yield piece

    def _next(self) -> object:
        """The thread's next piece; a thread that ended without its last is a bug, raised (not a wait for ever)."""
        while True:
            try:
                return self._out.get(timeout=WAKE_S)
            except queue.Empty:
                if self._thread is not None and not self._thread.is_alive() and self._out.empty():
                    raise RuntimeError("the scan thread ended without handing over its last lines") from None

    def done(self, piece: Scanned | bytes) -> None:
        """``piece`` was applied: its rows, and its block's slot once it was the block's last, go back."""
        if isinstance(piece, Scanned):
            self._free.put(piece.rows)
            if not piece.last:
                return
        self._slots.release()

    def _run(self, read: list[bytes]) -> None:
        try:
            for data in chain(read, self._blocks):
                self._slots.acquire()
                if self._stop:
                    return
                for piece in self._pieces(data):
                    if self._stop:
                        return
                    self._out.put(piece)
            self._out.put(_DONE)
        except BaseException as error:  # the stream's: raised in the parser's thread, after what came before
            self._out.put(_Failed(error))

    def _pieces(self, data: bytes) -> Iterator[Scanned | bytes]:
        """The pieces of one block, each in rows taken from the free ones (waiting for one)."""
        if self._dense(data):
            yield data
            return
        clean = clean_bytes(data)
        start = 0
        while True:
            rows = self._free.get()
            if rows is None:
                return
            end, count = self._reader.scan_lines(clean, start, rows)
            if count == 0:
                raise RuntimeError(f"no whole line at byte {start} of a cleaned block of {len(clean)} bytes")
            last = end >= len(clean)
            yield Scanned(clean, rows, start, count, last)
            if last:
                return
            start = end
