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
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import orjson

from parsers.inputs import ByteSource
from parsers.ranktrace.types import JsonObject

CHUNK = 8 << 20
#: the pieces worth parsing: steps, collectives of every backend, the Horovod optimizer, data loading,
#: host-to-device copies and the kernel launches that say when a GPU collective was asked for
WORDS = (
    b"ProfilerStep#",
    b"gloo:",
    b"nccl",
    b"rccl",
    b"c10d::",
    b"record_param_comms",
    b"Optimizer.step#",
    b"DataLoader",
    b"HtoD",
)
WANTED = re.compile(b"|".join(re.escape(w) for w in WORDS))
#: a kernel launch as Kineto and json.dump write one (name, then ts, then args with its correlation id),
#: read without parsing the event: there is one per kernel, a third of a GPU trace's events
LAUNCH = re.compile(
    rb'"name":\s*"[A-Za-z]*Launch(?:Cooperative)?Kernel[A-Za-z]*"[^{}]*?"ts":\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)'
    rb'[^{}]*?"args":\s*\{[^{}]*?"correlation":\s*(\d+)'
)


def _hits(data: bytes, words: tuple[bytes, ...], limit: int) -> np.ndarray:
    """Where any of ``words`` occurs in ``data[:limit]`` (``bytes.find`` per word: a scan at memory speed
    where one alternation regex tries every word at every byte)."""
    out: list[int] = []
    for w in words:
        at = data.find(w, 0, limit)
        while at >= 0:
            out.append(at)
            at = data.find(w, at + len(w), limit)
    return np.array(out, np.int64)


_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_END = re.compile(rb"\}\s*\]")
#: a piece that fails to parse is joined with up to this many next ones before it is given up
MAX_JOINS = 64
#: the header (the keys before the events) is read up to this size
MAX_HEADER = 64 << 20


@dataclass
class EventStream:
    """What one pass over a trace found besides its events (filled as :meth:`events` runs)."""

    header: JsonObject = field(default_factory=dict)
    trailer: JsonObject = field(default_factory=dict)
    pieces: int = 0  # events seen (parsed or not)
    unreadable: int = 0  # wanted pieces that never parsed
    unreadable_at: int | None = None  # byte offset of the first
    cut: str | None = None  # how the file ended early, if it did
    found_events: bool = False  # the traceEvents array was there
    launch_ts: array[float] = field(default_factory=lambda: array("d"))  # kernel launches (LAUNCH): ts ...
    launch_corr: array[int] = field(default_factory=lambda: array("q"))  # ... and correlation id (8 bytes each)

    def events(self, stream: ByteSource, keep: Callable[[bytes], bool] | None = None) -> Iterator[JsonObject]:
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
        while True:
            data = bytes(buf)
            starts = event_starts(data)  # every event but the last may be cut by the chunk's end: kept back
            done = self._complete(data, starts, base, keep)
            yield from done.events
            del buf[: done.upto]
            base += done.upto
            if eof:
                break
            more = _read(stream)
            if more:
                buf += more
                continue
            eof = True
            cut = getattr(stream, "cut", None)
            if cut:
                self.cut = f"the gzip stream ends early ({cut})"
        yield from self._last(bytes(buf), base, test)

    def _complete(self, data: bytes, starts: np.ndarray, base: int, keep: Callable[[bytes], bool] | None) -> _Done:
        """The wanted events among the complete ones of ``data`` (those before its last event start), in
        order, and how far ``data`` was read: the kernel launches by :data:`LAUNCH` in one pass, the other
        wanted events found by one :data:`WANTED` pass and parsed alone."""
        n = len(starts) - 1  # events [0, n) are complete: each ends where the next starts
        if n <= 0:
            return _Done([], 0)
        limit = int(starts[n])
        if keep is None:
            wanted = np.unique(np.searchsorted(starts, _hits(data, WORDS, limit), side="right") - 1)
        else:
            wanted = np.array([i for i in range(n) if keep(_piece(data, starts, i, i + 1))], np.int64)
        out: list[JsonObject] = []
        free = 0  # events before this one are read (a joined piece takes several)
        for i in wanted.tolist():
            if i < free or i >= n:
                continue
            for j in range(i + 1, min(n, i + 1 + MAX_JOINS) + 1):
                piece = _piece(data, starts, i, j)
                try:
                    out.append(orjson.loads(piece))
                except orjson.JSONDecodeError as exc:
                    if exc.pos >= len(piece) - 2 and j < n:
                        continue  # it ends inside a string: the cut fell there, take the next piece with it
                    if exc.pos >= len(piece) - 2 and j == n and n - i <= MAX_JOINS:
                        self.pieces += i
                        return self._launches(_Done(out, int(starts[i])), data)  # the rest is in the next chunk
                    self._unreadable(base + int(starts[i]))  # broken before its end: this piece alone is lost
                    free = i + 1
                    break
                free = j
                break
        self.pieces += n
        return self._launches(_Done(out, limit), data)

    def _launches(self, done: _Done, data: bytes) -> _Done:
        """Collect the kernel launches of what ``done`` read of ``data``: one :data:`LAUNCH` pass reads each
        one's ts and correlation id off its bytes (nothing parsed)."""
        for m in LAUNCH.finditer(data, 0, done.upto):
            corr = int(m.group(2))
            if corr < (1 << 62):  # a longer one is damage: array('q') holds int64
                self.launch_ts.append(float(m.group(1)))
                self.launch_corr.append(corr)
        return done

    def _last(self, tail: bytes, base: int, test: Callable[[bytes], bool]) -> Iterator[JsonObject]:
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


@dataclass(frozen=True, slots=True)
class _Done:
    events: list[JsonObject]
    upto: int  # bytes of the chunk read: the next starts there


#: whitespace between two events beyond this is not read as their separator (Kineto writes 3 bytes)
MAX_BLANKS = 64
_WS = np.zeros(256, bool)
_WS[[9, 10, 13, 32]] = True


def event_starts(data: bytes) -> np.ndarray:
    """Where each event of ``data`` (the events' array from its first event on) starts: 0, and every
    ``{`` with only whitespace between it and a ``,`` that follows a ``}`` (the ``}, {`` between two
    events; vectorised over the ``{`` alone. One inside a string is a false start, which the parse finds)."""
    a = np.frombuffer(data, np.uint8)
    opens = np.flatnonzero(a == 0x7B)
    comma = _back_over_blanks(a, opens - 1)
    opens, comma = opens[comma >= 1], comma[comma >= 1]
    keep = a[comma] == 0x2C
    opens, comma = opens[keep], comma[keep]
    brace = _back_over_blanks(a, comma - 1)
    opens = opens[(brace >= 0) & (a[np.maximum(brace, 0)] == 0x7D)]
    return np.concatenate([np.zeros(1, np.int64), opens.astype(np.int64)])


def _back_over_blanks(a: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Each position of ``at`` moved back over whitespace (runs of up to :data:`MAX_BLANKS`), -1 at the start."""
    at = at.copy()
    for _ in range(MAX_BLANKS):
        blank = (at >= 0) & _WS[a[np.maximum(at, 0)]]
        if not blank.any():
            break
        at[blank] -= 1
    return at


def _piece(data: bytes, starts: np.ndarray, i: int, j: int) -> bytes:
    """Events ``i`` to ``j`` (excluded) of ``data`` as one piece, without the separator after it."""
    return data[int(starts[i]) : int(starts[j])].rstrip(b" \t\r\n,")


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


def _object(text: bytes) -> JsonObject:
    """A JSON object's keys, or nothing when ``text`` is not one (a damaged header: said by the caller)."""
    try:
        out = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return out if isinstance(out, dict) else {}
