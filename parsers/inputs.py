"""Opening inputs: transparent gzip, content sniffing, and the ``describe`` of a file.

Inputs are recognised by their content, never by their name. :func:`sniff` reads the
first bytes (decompressed when the file is gzip) and says what the file is.
"""

from __future__ import annotations

import enum
import gzip
import io
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, Protocol, cast

from parsers.log_signals import log_signal

try:  # ISA-L inflates gzip 2-3x faster than zlib; optional.
    from isal import igzip as _gzip_impl
except ImportError:  # pragma: no cover - depends on the environment
    _gzip_impl = gzip

GZIP_MAGIC = b"\x1f\x8b"
SNIFF_BYTES = 64 * 1024
TEXT_SNIFF_BYTES = 4 << 20  # how far into a text file to look for NCCL / job-log signals


#: :class:`InputKind`'s values of an input (what the manifest and the report write)
InputKindName = Literal["horovod_timeline", "job_log", "rank_trace"]


class InputKind(enum.StrEnum):
    HOROVOD_TIMELINE = "horovod_timeline"
    RANK_TRACE = "rank_trace"  # one rank's PyTorch profiler (Kineto) trace
    JOB_LOG = "job_log"  # NCCL_DEBUG output, job stdout/stderr, Horovod autotune CSV
    UNKNOWN = "unknown"

    @property
    def input_name(self) -> InputKindName:
        """The kind's value, for a kind an input can have (not :attr:`UNKNOWN`)."""
        match self:
            case InputKind.HOROVOD_TIMELINE:
                return "horovod_timeline"
            case InputKind.RANK_TRACE:
                return "rank_trace"
            case InputKind.JOB_LOG:
                return "job_log"
        raise ValueError(f"{self.value!r} is not the kind of an input")


@dataclass(frozen=True, slots=True)
class Sniffed:
    """What the first bytes of a file say it is."""

    kind: InputKind
    compressed: bool
    empty: bool
    reason: str  # why it was (not) recognised, for messages
    candidate: InputKind | None = None  # unrecognised, but only this parser can say exactly why


_GZIP_ERRORS: tuple[type[BaseException], ...] = (EOFError, gzip.BadGzipFile, zlib.error)
if _gzip_impl is not gzip:  # pragma: no cover - depends on the environment
    _GZIP_ERRORS += (_gzip_impl.BadGzipFile, OSError)


GUNZIP_PIECE = 64 * 1024
#: how much of a log one task reads (~0.3 s of parsing): small enough to balance 2-64 workers
#: on a multi-GB log, big enough that a task's state (one entry per process) is cheap to send
#: (:mod:`parsers.nccl.chunks`; here so that planning an ingest does not load the log parser)
CHUNK_BYTES = 32 << 20
INFLATE_RATIO = 200  # inflated / compressed beyond which a .gz input is read no further (as for archives)
INFLATE_FLOOR = 16 << 20  # ... once it has inflated at least this much


def gzip_isize(path: str | Path) -> int | None:
    """The inflated size a gzip file's trailer states (ISIZE: modulo 4 GiB, of its last member), or None
    when it cannot be read: what its bytes will cost, known before reading them."""
    try:
        with open(path, "rb") as f:
            f.seek(-4, os.SEEK_END)
            return int.from_bytes(f.read(4), "little")
    except OSError:
        return None


class ByteSource(Protocol):
    """What the parsers read from: a file, a gzip stream, a range of a file, a hashing reader."""

    def read(self, n: int = -1, /) -> bytes: ...


class GunzipStream:
    """Decompress a gzip stream, treating a cut or damaged stream as its end.

    A gzip file cut short (a killed job, a partial copy) raises ``EOFError`` deep inside
    the decompressor; here it ends the stream instead, with :attr:`cut` set, so the
    parser analyses everything inflated before the damage and reports the loss.
    """

    def __init__(self, fileobj: ByteSource, packed: int | None = None) -> None:
        """``packed``: the compressed size (by default the file's, when ``fileobj`` is one)."""
        self._gz = _gzip_impl.GzipFile(fileobj=fileobj, mode="rb")
        self.cut: str | None = None  # what went wrong, if the stream ended early
        if packed is None:
            try:
                packed = os.fstat(fileobj.fileno()).st_size  # type: ignore[attr-defined]
            except (AttributeError, OSError, ValueError):
                packed = None
        #: inflated bytes beyond which the stream is a decompression bomb (None: no file size to judge by)
        self.budget = None if packed is None else max(INFLATE_FLOOR, INFLATE_RATIO * packed)
        self.inflated = 0

    def readinto(self, b: Any) -> int:
        """Fill ``b`` in small pieces: when the stream turns out to be cut, the gzip modules
        drop what they inflated during that call, so a piece bounds the loss."""
        view = memoryview(b).cast("B")
        total = 0
        while total < len(view) and self.cut is None:
            try:
                n = self._gz.readinto(view[total : total + GUNZIP_PIECE])
            except _GZIP_ERRORS as exc:
                self.cut = str(exc) or type(exc).__name__
                break
            if not n:
                break
            total += n
            self._count(n)
        return total

    def read(self, n: int = -1) -> bytes:
        if self.cut is not None:
            return b""
        try:
            data: bytes = self._gz.read(n)
        except _GZIP_ERRORS as exc:
            self.cut = str(exc) or type(exc).__name__
            return b""
        self._count(len(data))
        return data

    def _count(self, n: int) -> None:
        self.inflated += n
        if self.budget is not None and self.inflated > self.budget:
            self.cut = (
                f"it inflates to more than {self.budget >> 20} MiB, {INFLATE_RATIO}x its compressed size (a "
                "decompression bomb, or a log of nothing but repeats): read up to there"
            )

    def close(self) -> None:
        self._gz.close()

    def __enter__(self) -> GunzipStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_binary(path: str | Path) -> BinaryIO | GunzipStream:
    """Open a file for reading bytes, decompressing gzip by its magic number."""
    raw = open(path, "rb")  # returned to the caller
    head = raw.read(2)
    raw.seek(0)
    return GunzipStream(raw) if head == GZIP_MAGIC else raw


def read_head(path: str | Path, size: int = SNIFF_BYTES) -> tuple[bytes, bool]:
    """The first ``size`` bytes (decompressed, as far as a damaged stream allows) and whether it is gzip."""
    with open_binary(path) as f:
        buf = bytearray(size)
        n = readinto_full(f, memoryview(buf))
        return bytes(buf[:n]), isinstance(f, GunzipStream)


def _strip_bom_ws(data: bytes) -> bytes:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.lstrip(b" \t\r\n")


def sniff(path: str | Path) -> Sniffed:
    """Recognise an input by content (the first 64 KiB, decompressed)."""
    head, compressed = read_head(path)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or re.match(rb"(?:[\t\n\r -~]\x00){8}|(?:\x00[\t\n\r -~]){8}", head):
        return Sniffed(InputKind.UNKNOWN, compressed, False, UTF16_REASON)
    body = _strip_bom_ws(head)
    if not body:
        return Sniffed(InputKind.HOROVOD_TIMELINE, compressed, True, "empty file")
    if body[:1] == b"[":
        rest = body[1:].lstrip(b" \t\r\n")
        if not rest or rest.startswith(b'{"ph"') or rest.startswith(b'{"name"') or rest.startswith(b"{"):
            return Sniffed(InputKind.HOROVOD_TIMELINE, compressed, not rest, "JSON array of trace events")
        signal = log_signal(head)  # "[1,0]<stdout>:host:..." and "[node:0:174 ...]" logs start with '[' too
        if signal:
            return Sniffed(InputKind.JOB_LOG, compressed, False, signal)
        if _BRACKETED_TAG.match(body):  # "[0]<stdout>:...", "[2024-05-01 10:00:00] ...": text, not JSON
            return Sniffed(InputKind.UNKNOWN, compressed, False, _TEXT_REASON + _launcher(body))
        if damaged_start(body):
            return Sniffed(InputKind.HOROVOD_TIMELINE, compressed, False, DAMAGED_START)
        return Sniffed(
            InputKind.UNKNOWN,
            compressed,
            False,
            "a JSON array whose first element is not an object",
            candidate=InputKind.HOROVOD_TIMELINE,
        )
    if re.match(rb'\{\s*"(ph"|name"\s*:\s*"process_(name|sort_index)")', body):
        return Sniffed(InputKind.HOROVOD_TIMELINE, compressed, False, "a fragment of a timeline (no '[')")
    if damaged_start(body):
        return Sniffed(InputKind.HOROVOD_TIMELINE, compressed, False, DAMAGED_START)
    if body[:1] == b"{":
        if _KINETO.search(head) or (b'"traceEvents"' in head and b'"ProfilerStep#' in head):
            return Sniffed(InputKind.RANK_TRACE, compressed, False, "a PyTorch profiler (Kineto) trace of one rank")
        if (lines := _json_lines(path, body, compressed)) is not None:
            return lines
        return Sniffed(
            InputKind.UNKNOWN,
            compressed,
            False,
            "a JSON object that is not a PyTorch profiler trace (no schemaVersion, deviceProperties, "
            "distributedInfo or ProfilerStep; a Horovod timeline is a bare array)",
        )
    signal = log_signal(head)
    if signal:
        return Sniffed(InputKind.JOB_LOG, compressed, False, signal)
    if b"\x00" not in head and len(head) == SNIFF_BYTES:  # job stdout: NCCL may start after pip/setup output
        more, _ = read_head(path, TEXT_SNIFF_BYTES)
        signal = log_signal(more)
        if signal:
            return Sniffed(InputKind.JOB_LOG, compressed, False, signal)
    if b"\x00" not in head:
        return Sniffed(InputKind.UNKNOWN, compressed, False, _TEXT_REASON + _launcher(body))
    return Sniffed(InputKind.UNKNOWN, compressed, False, "not a format hvd-analyze reads")


def _json_lines(path: str | Path, body: bytes, compressed: bool) -> Sniffed | None:
    """Lines of text whose first is a JSON object of its own (a collector wrapping each line, Docker's json-file driver
    or a JSON export, or a program printing its metrics as JSON): judged as a job log is, by the lines a collector
    wrapped and the others; None when the first line is no JSON object of its own (a document, a trace)."""
    import json  # here: only a file that starts with '{' needs it

    from parsers.paste import clean_paste, json_text

    first = body.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace")
    try:
        if not isinstance(json.loads(first), dict):
            return None
    except ValueError:
        return None
    collected = json_text(first) is not None
    if not collected and not body.rstrip().count(b"\n"):
        return None  # one object alone: a JSON document, not lines
    wrapped = " (each line wrapped in JSON by a collector)" if collected else ""
    for head in (body, read_head(path, TEXT_SNIFF_BYTES)[0] if len(body) >= SNIFF_BYTES // 2 else b""):
        whole = head[: head.rfind(b"\n") + 1] or head  # the lines it holds whole
        signal = log_signal(clean_paste(whole.decode("utf-8", "replace")).encode("utf-8", "surrogatepass"))
        if signal:
            return Sniffed(InputKind.JOB_LOG, compressed, False, signal + wrapped)
    return Sniffed(InputKind.UNKNOWN, compressed, False, _TEXT_REASON + wrapped)


#: a record as Horovod writes one (``{"name": "process_name", ...`` or ``{"ph": "B", ...``)
_TIMELINE_RECORD = re.compile(rb'\{"(?:name": "process_(?:name|sort_index)"|ph": "[BEXiM]")')
#: how many intact records the first KiB after a damaged start must hold for the file to be a timeline
DAMAGED_START_RECORDS = 3
#: keys of another profiler's trace (PyTorch's Kineto, Chrome's): never in a Horovod timeline
_OTHER_PROFILER = re.compile(
    rb'"(?:traceEvents|schemaVersion|displayTimeUnit|deviceProperties|distributedInfo|baseTimeNanoseconds|trace_id)"'
)
#: keys only PyTorch's profiler (Kineto) writes at a trace's top level
_KINETO = re.compile(rb'"(?:schemaVersion|deviceProperties|distributedInfo|baseTimeNanoseconds)"\s*:')
DAMAGED_START = "a Horovod timeline whose first bytes are damaged (the records after them are intact)"


def damaged_start(body: bytes) -> bool:
    """Whether ``body`` (a file's first bytes) is a timeline whose start is damaged: not a clean
    opening, but at least :data:`DAMAGED_START_RECORDS` of Horovod's records in its first 4 KiB, and no key
    of another profiler's trace (``"traceEvents"``, ``"schemaVersion"``, ...)."""
    head = body[:4096]
    if _OTHER_PROFILER.search(head):
        return False
    return len(_TIMELINE_RECORD.findall(head)) >= DAMAGED_START_RECORDS


#: text saved as UTF-16 (PowerShell 5's ``>`` and ``Out-File``, Windows editors): every other byte is NUL
UTF16_REASON = (
    "UTF-16 text (as PowerShell's '>' or a Windows editor saves it), not UTF-8: convert it "
    "(iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8.log, or in PowerShell: Get-Content FILE | Set-Content -Encoding utf8 "
    "FILE.utf8.log) and give hvd-analyze the converted file"
)
_TEXT_REASON = (
    "text without NCCL records, watchdog timeouts, stall warnings or an autotune header in its first "
    f"{TEXT_SNIFF_BYTES >> 20} MiB"
)
#: a line that opens with a bracketed tag no JSON array opens with: one followed at once by text
#: (``[0]<stdout>:``, ``[1,0]<stderr>:``), or holding letters or colons outside quotes (``[2024-05-01
#: 10:00:00]``, ``[node:0:174]``); ``true``/``false``/``null`` alone are JSON. (The run before the first letter or colon
#: holds none: the two runs overlapping made a long unclosed bracket quadratic, 4 s for 400 KB.)
_BRACKETED_TAG = re.compile(
    rb"\[[^\]\n]{0,64}\][^\s,\]\}]|\[(?!\s*(?:true|false|null)\s*[,\]])[^\]\n\"{}\[A-Za-z:]*[A-Za-z:][^\]\n\"{}\[]*\]"
)
_LAUNCHER_PREFIX = re.compile(rb"\[\d+(?:,\d+)?\]<std(?:out|err)>:")


def _launcher(body: bytes) -> str:
    """A note on what the text is, when its lines carry a launcher's prefix."""
    return " (a job's output with horovodrun/mpirun '[N]<stdout>:' prefixes)" if _LAUNCHER_PREFIX.match(body) else ""


def readinto_full(f: Source, view: memoryview) -> int:
    """Fill ``view`` as far as the stream allows (gzip streams return short reads)."""
    total = 0
    while total < len(view):
        # every binary file object Python opens has readinto; typeshed's BinaryIO does not declare it
        n = cast(io.RawIOBase, f).readinto(view[total:])
        if not n:
            break
        total += n
    return total


class ByteSink(Protocol):
    """What sees the bytes a reader reads, with their file offsets (an input's hash, computed
    from the reads that parse it instead of reading the file once more)."""

    def feed(self, at: int, data: bytes | memoryview) -> None:
        """``data`` is the file's bytes from offset ``at`` (done with when this returns)."""

    def fail(self) -> None:
        """Bytes this feeder owed will not come (an error, a file cut meanwhile)."""


class LendingSink(ByteSink, Protocol):
    """A :class:`ByteSink` that can also take bytes the reader keeps using, without waiting."""

    def lend(self, at: int, data: bytes | memoryview) -> None:
        """``data`` is the file's bytes from offset ``at``, unchanged until :meth:`settle` returns."""

    def settle(self, stop: int) -> None:
        """Return once done with every byte lent before offset ``stop``."""


class FedReader:
    """A binary file positioned at ``at`` whose every read also goes to ``sink``: fed, or with
    ``lend`` lent (the caller leaves the bytes read as they are until :meth:`settle`)."""

    def __init__(self, f: BinaryIO, at: int, sink: ByteSink, lend: bool = False) -> None:
        self.f, self.at, self.sink = f, at, sink
        # lent only to a sink that borrows (the others are fed)
        self.lending: LendingSink | None = cast(LendingSink, sink) if lend and hasattr(sink, "lend") else None

    def readinto(self, b: Any) -> int:
        n = cast(io.RawIOBase, self.f).readinto(b) or 0
        self._fed(memoryview(b)[:n])
        return n

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self._fed(data)
        return data

    def _fed(self, data: bytes | memoryview) -> None:
        if len(data):
            if self.lending is not None:
                self.lending.lend(self.at, data)
            else:
                self.sink.feed(self.at, data)
            self.at += len(data)

    def settle(self) -> None:
        """Wait until the sink is done with the bytes lent (at once when none were)."""
        if self.lending is not None:
            self.lending.settle(self.at)

    def read_to(self, stop: int) -> bool:
        """Read (and feed) what is left up to offset ``stop``; False if the file ends before."""
        while self.at < stop:
            if not self.read(min(1 << 20, stop - self.at)):
                return False
        return True


#: what the parsers read from: a file, a gzip stream, or a file whose reads are fed to a sink
Source = BinaryIO | GunzipStream | FedReader
