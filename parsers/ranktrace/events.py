"""A chrome-trace JSON object read as a stream: its top-level keys, and the events wanted of it.

A rank's profiler trace is one JSON object, ``{"schemaVersion": 1, ..., "traceEvents": [ {...},
{...}, ... ], "traceName": ..., "baseTimeNanoseconds": ...}``, 1-2 GB for a long profiling window,
written by Kineto one event to a few lines or by ``json.dump`` on one line. It is never parsed
whole: the bytes stream through in chunks, the events are cut at the ``}, {`` between two of them,
and only those that hold a wanted word (:data:`WANTED`) are parsed, by ``orjson``; a cut that fell
inside a string (a kernel's template name can hold ``}, {``) shows as an event that does not parse,
which is joined with the next piece and parsed again. The keys before the events (the header) and
after them (the trailer) are parsed once each. Memory holds a chunk and the events kept.

A file cut short ends at its last whole event: the events read are kept and the loss is
:attr:`EventStream.cut`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from parsers.inputs import ByteSource

CHUNK = 8 << 20
#: the pieces worth parsing: steps, collectives of every backend, the Horovod optimizer, data loading,
#: host-to-device copies and the kernel launches that say when a GPU collective was asked for
WANTED = re.compile(
    rb"ProfilerStep#|gloo:|nccl|rccl|c10d::|record_param_comms|Optimizer\.step#|DataLoader|HtoD|LaunchKernel"
)
_BETWEEN = re.compile(rb"\}\s*,\s*\{")
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_END = re.compile(rb"\}\s*\]")
#: a piece that fails to parse is joined with up to this many next ones before it is given up
MAX_JOINS = 64
#: the header (the keys before the events) is read up to this size
MAX_HEADER = 64 << 20


@dataclass
class EventStream:
    """What one pass over a trace found besides its events (filled as :meth:`events` runs)."""

    header: dict[str, Any] = field(default_factory=dict)
    trailer: dict[str, Any] = field(default_factory=dict)
    pieces: int = 0  # events seen (parsed or not)
    unreadable: int = 0  # wanted pieces that never parsed
    unreadable_at: int | None = None  # byte offset of the first
    cut: str | None = None  # how the file ended early, if it did
    found_events: bool = False  # the traceEvents array was there

    def events(self, stream: ByteSource, keep: Callable[[bytes], bool] | None = None) -> Iterator[dict[str, Any]]:
        """The wanted events of ``stream`` (each parsed), in file order; ``keep``: a test of a piece's
        bytes beyond :data:`WANTED` (default: that alone)."""
        buf = bytearray()
        base = 0  # file offset of buf[0]
        eof = False
        while not self.found_events:
            data = _read(stream)
            if not data:
                eof = True
                break
            buf += data
            m = _KEY.search(buf)
            if m is not None:
                self.header = _object(bytes(buf[: m.start()]) + b'"traceEvents": []}')
                self.found_events = True
                del buf[: m.end()]
                base += m.end()
            elif len(buf) > MAX_HEADER:
                break
        if not self.found_events:
            self.header = _object(bytes(buf)) if eof else {}
            return
        lead = _skip_ws(buf, 0)
        del buf[:lead]
        base += lead
        test = keep or (lambda piece: WANTED.search(piece) is not None)
        pos = look = 0  # the piece being read starts at pos; the next separator is searched from look
        joins, after_first = 0, 0  # pieces joined to a piece that did not parse; where its own piece ended
        while True:
            while (m := _BETWEEN.search(buf, look)) is not None:
                end, following = m.start() + 1, m.end() - 1
                if joins == 0:
                    self.pieces += 1
                    after_first = following
                piece = bytes(buf[pos:end])
                look = following
                if joins == 0 and not test(piece):
                    pos = following
                    continue
                try:
                    event = orjson.loads(piece)
                except orjson.JSONDecodeError as exc:
                    joins += 1
                    if exc.pos >= len(piece) - 2 and joins <= MAX_JOINS:
                        continue  # it ends inside a string: the cut fell there, take the next piece with it
                    self._unreadable(base + pos)  # broken before its end: this piece alone is lost
                    pos = look = after_first
                    joins = 0
                    continue
                yield event
                pos, joins = following, 0
            del buf[:pos]
            base += pos
            look -= pos
            after_first -= pos
            pos = 0
            if eof:
                break
            data = _read(stream)
            if data:
                buf += data  # the search goes on where it stopped (a separator may straddle chunks)
                continue
            eof = True
            cut = getattr(stream, "cut", None)
            if cut:
                self.cut = f"the gzip stream ends early ({cut})"
        yield from self._last(bytes(buf), base, test)

    def _last(self, tail: bytes, base: int, test: Callable[[bytes], bool]) -> Iterator[dict[str, Any]]:
        """The last event and the trailer, or what a cut file left of them."""
        for m in _END.finditer(tail):
            piece = tail[: m.start() + 1]
            try:
                event = orjson.loads(piece)
            except orjson.JSONDecodeError:
                continue
            self.pieces += 1
            if test(piece):
                yield event
            rest = tail[m.end() :].strip().lstrip(b",").strip()
            self.trailer = _object(b"{" + rest) if rest and rest != b"}" else {}
            return
        if tail.strip() in (b"", b"]", b"]}"):
            return
        self.cut = self.cut or "the file ends inside an event (a trace cut short)"
        if tail.strip():
            self.pieces += 1
            self._unreadable(base)

    def _unreadable(self, offset: int) -> None:
        self.unreadable += 1
        if self.unreadable_at is None:
            self.unreadable_at = offset


def _read(stream: ByteSource) -> bytes:
    """The next chunk: through ``readinto`` where the stream has it (a cut gzip stream then keeps what it
    inflated before the damage: :class:`parsers.inputs.GunzipStream`)."""
    readinto = getattr(stream, "readinto", None)
    if readinto is None:
        return stream.read(CHUNK)
    buf = bytearray(CHUNK)
    n = readinto(buf)
    del buf[n:]
    return bytes(buf)


def _skip_ws(buf: bytearray, at: int) -> int:
    while at < len(buf) and buf[at] in b" \t\r\n":
        at += 1
    return at


def _object(text: bytes) -> dict[str, Any]:
    """A JSON object's keys, or nothing when ``text`` is not one (a damaged header: said by the caller)."""
    try:
        out = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return out if isinstance(out, dict) else {}
