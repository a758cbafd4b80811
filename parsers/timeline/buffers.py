"""The tokenizer's buffers, kept across ranges and blocks instead of made anew.

A new buffer is pages the kernel zeroes when they are first written: for the event rows of a
1 GB timeline that was 0.3 CPU-seconds, a tenth of its ingest, spent again for every buffer
handed out. Reads go into a buffer kept per thread; event rows into buffers their reader gives
back (:func:`parsers.timeline.tokens.recycle`) once it has paired them.

This module's state is a cache, and only that: memory kept for reuse (a buffer per thread, at
most :data:`_POOLED` event buffers of each size). Nothing read from it depends on what was in it
before: every buffer handed out is written before it is read, and :func:`release` empties it.
"""

from __future__ import annotations

import threading

import numpy as np

from parsers.timeline import layout as L

_BUFFERS = threading.local()
#: event-row buffers given back by their reader, by row count; at most :data:`_POOLED` of each
_EVENTS: dict[int, list[np.ndarray]] = {}
_POOLED = 4


def events_array(rows: int) -> np.ndarray:
    """A buffer of ``rows`` event rows: one given back if there is one, else a new one."""
    try:
        return _EVENTS.setdefault(rows, []).pop()  # list operations hold the GIL: safe across threads
    except IndexError:
        return np.empty((rows, L.EV_N), np.int64)


def give_back(events: np.ndarray) -> None:
    """Keep ``events`` (a whole event-row buffer, no view of one) for the next :func:`events_array`, if
    it is of a size the tokenizer asks for: rows that came from elsewhere (a Dask worker's, each
    of its own length) would otherwise be kept, one size after another."""
    free = _EVENTS.get(len(events))
    if free is not None and len(free) < _POOLED and events.base is None and events.shape[1:] == (L.EV_N,):
        free.append(events)


def release() -> None:
    """Let the kept event-row buffers go (a parse is over: its analysis needs the memory)."""
    _EVENTS.clear()


def thread_buffer(size: int) -> np.ndarray:
    """This thread's buffer to read ranges into, kept from one range to the next (the file is read,
    not mapped: a file cut while mapped kills the process with SIGBUS, where a read sees it end
    and says so)."""
    buf: np.ndarray | None = getattr(_BUFFERS, "buf", None)
    if buf is None or len(buf) < size:
        buf = _BUFFERS.buf = np.empty(size, np.uint8)
    return buf
