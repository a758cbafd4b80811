"""The content hash of inputs, computed off the parsing thread's path where that pays.

An input of :data:`BIG_BYTES` or more is hashed with BLAKE3, a smaller one with sha256
(:func:`algorithm_for`). The hash identifies an input's bytes in the store (ingesting them twice,
under any name, is a no-op) and is shown in reports. sha256 runs at 1.6 GB/s on one core with
the CPU's SHA instructions and cannot be split across cores: it was the longest serial step of a
big ingest (0.75 of its 3.3 CPU-seconds per GB, measured). BLAKE3 hashes the same gigabyte in
0.31 CPU-seconds. Small inputs keep sha256, whose first 16 hex digits are their id in the store's
tables, so their ids are those of every store written before.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, Protocol, cast, get_args

from parsers.inputs import FedReader, InputKind

if TYPE_CHECKING:
    from analyzer.store.discovery import InputFile

FILE_BLOCK = 8 << 20
#: inputs at least this big are hashed with BLAKE3, and by :class:`EarlyHashes` (those of their own
#: bucket: :data:`analyzer.store.buckets.BUCKET_BYTES`, which a test checks this equals)
BIG_BYTES = 16 << 20
Algorithm = Literal["sha256", "blake3"]
ALGORITHMS: tuple[Algorithm, ...] = get_args(Algorithm)


class Hasher(Protocol):
    def update(self, data: bytes | memoryview, /) -> object: ...
    def hexdigest(self) -> str: ...


def algorithm_for(size: int) -> Algorithm:
    """The hash of an input of ``size`` bytes (on disk: packed, for a compressed one)."""
    return "blake3" if size >= BIG_BYTES else "sha256"


def new_hasher(algorithm: Algorithm) -> Hasher:
    if algorithm == "sha256":
        return hashlib.sha256()
    from blake3 import blake3  # here: only big inputs need it

    # one thread: it runs beside the tokenizer's, which keep the other cores busy
    return cast(Hasher, blake3(max_threads=1))


class HashingReader(FedReader):
    """A raw file that hashes every byte read through it and counts them (:attr:`pos`): the
    :class:`parsers.inputs.ByteSink` of its own reads.

    ``threaded``: hash in a thread of its own. Both hashes release the GIL on large buffers, so
    this takes the hashing off the parsing thread's path (0.3 s per GB here) when a core is
    free for it, at the cost of a thread and a copy of each block; worth it for a big input
    that streams, not for the small inputs of a bucket (a thread per 200 KB log costs about
    what hashing it does, and several worker processes leave no core free anyway).
    """

    def __init__(self, raw: BinaryIO, algorithm: Algorithm, threaded: bool = True, hashing: bool = True) -> None:
        super().__init__(raw, 0, self)
        self.hashing = hashing  # False: only count (the file's hash is known already: EarlyHashes)
        self._hash_of = new_hasher(algorithm)
        self._blocks: queue.Queue[bytes | None] | None = None
        self._thread: threading.Thread | None = None
        if threaded and hashing:
            self._blocks = queue.Queue(maxsize=8)
            self._thread = threading.Thread(target=self._hash, name="hvd-analyze-hash", daemon=True)
            self._thread.start()

    @property
    def pos(self) -> int:
        """Bytes read so far."""
        return self.at

    def _hash(self) -> None:
        assert self._blocks is not None
        while (block := self._blocks.get()) is not None:
            self._hash_of.update(block)

    def feed(self, at: int, data: bytes | memoryview) -> None:
        """Hash ``data`` here, or hand the hashing thread a copy (the reader reuses its buffer;
        ``bytes`` of a ``bytes`` is the same object, no copy)."""
        if not self.hashing:
            pass
        elif self._blocks is None:
            self._hash_of.update(data)
        else:
            self._blocks.put(bytes(data))

    def fail(self) -> None:
        """Nothing is owed: this reader's reads are all the file's."""

    def readable(self) -> bool:
        return True

    def hexdigest(self) -> str:
        """Wait for the hashing thread and return the hash of everything read."""
        assert self.hashing, "this reader only counts"
        self.finish()
        return self._hash_of.hexdigest()

    def finish(self) -> None:
        if self._blocks is not None and self._thread is not None and self._thread.is_alive():
            self._blocks.put(None)
            self._thread.join()

    def close(self) -> None:
        self.finish()
        self.f.close()


def file_digest(path: str | Path, algorithm: Algorithm | None = None, early: EarlyHashes | None = None) -> str:
    """The hash of a whole file, by default in the algorithm for its size (both hashes release the
    GIL: a thread can do this beside parsing); the result of ``early`` when it hashed this file as it
    still is."""
    if early is not None and (algorithm is None or algorithm == algorithm_for(os.stat(path).st_size)):
        soon = early.hashed(path)
        if soon is not None:
            return soon.result()
    return _digest_of(path, algorithm)


def _digest_of(path: str | Path, algorithm: Algorithm | None = None) -> str:
    return _hash_file(path, algorithm)[0].hexdigest()


def _hash_file(
    path: str | Path, algorithm: Algorithm | None = None, stop: threading.Event | None = None
) -> tuple[Hasher, int, bool]:
    """``path``'s bytes hashed to its end, or until ``stop`` is set (checked between two reads): the
    hash, how many bytes it covers, and whether that is the whole file."""
    # a fresh block per read: refilling one bytearray took 0.3 s more kernel time per GB in the
    # 1 GB ingest (measured, interleaved), though not when hashing alone
    with open(path, "rb") as f:
        h = new_hasher(algorithm or algorithm_for(os.fstat(f.fileno()).st_size))
        at = 0
        while stop is None or not stop.is_set():
            block = f.read(FILE_BLOCK)
            if not block:
                return h, at, True
            h.update(block)
            at += len(block)
    return h, at, False


class RangeDigest:
    """The hash of a file whose ranges are read on several threads at once (a big timeline's
    tokenizer ranges, :func:`parsers.timeline.tokens.tokenize_range`), computed from those reads
    instead of reading the whole file once more (the second read was 0.2 CPU-seconds per GB).

    A :class:`parsers.inputs.LendingSink`. Bytes are hashed in file order, each once (bytes fed
    twice, a range read again, are hashed once). A range's reader lends its bytes
    (:meth:`lend`) and goes on tokenizing them: whichever thread finds the bytes that come next
    hashes them, and any lent after them that it finds waiting; the reader waits
    (:meth:`settle`) only before it reuses its buffer, by which time another thread has
    usually hashed them. Before, each reader waited to hash its own bytes until those of the range
    before were in (the 1 GB report's tokenizer threads waited 0.55 s so, of their 2.1 s).
    :meth:`feed` is a lend that settles at once. If a feeder fails, or the bytes do not reach the
    file's end, :meth:`hexdigest` hashes the file afresh.
    """

    def __init__(self, path: str | Path, size: int, begun: tuple[Hasher, int] | None = None) -> None:
        """``begun``: a hash of the file's first bytes and their count, to go on from
        (:meth:`EarlyHashes.take_over`)."""
        self.path, self.size = str(path), size
        self._hash_of, self._next = begun or (new_hasher(algorithm_for(size)), 0)  # bytes before _next are hashed
        self._lent: list[tuple[int, bytes | memoryview]] = []  # (offset, bytes) not yet hashed
        self._hashing = False  # a thread is hashing lent bytes (one at a time: they go in order)
        self._broken = False
        self._turn = threading.Condition()

    def head(self, stop: int) -> None:
        """Feed ``[0, stop)`` from the file: what precedes the first range."""
        with open(self.path, "rb") as f:
            data = f.read(stop)
        if len(data) < stop:
            self.fail()
        self.feed(0, memoryview(data))

    def feed(self, at: int, data: bytes | memoryview) -> None:
        self.lend(at, data)
        self.settle(at + len(data))

    def lend(self, at: int, data: bytes | memoryview) -> None:
        """``data``, the file's bytes from ``at``, to hash in their turn; they must stay as they are
        until :meth:`settle` returns. Hashes them at once, and what follows them, if they come next."""
        with self._turn:
            if self._broken:
                return
            self._lent.append((at, data))
            if self._hashing:  # the thread hashing will find them
                return
            self._hashing = True
        self._hash_lent()

    def settle(self, stop: int) -> None:
        """Wait until the bytes before ``stop`` are hashed (or will never be: a feeder failed)."""
        with self._turn:
            self._turn.wait_for(lambda: self._next >= stop or self._broken)

    def _hash_lent(self) -> None:
        """Hash the lent bytes that come next, in order, until none of those lent does."""
        while True:
            with self._turn:
                ready = [k for k, (at, _) in enumerate(self._lent) if at <= self._next]
                if not ready or self._broken:
                    self._hashing = False
                    self._turn.notify_all()
                    return
                at, data = self._lent.pop(min(ready, key=lambda k: self._lent[k][0]))
                skip = self._next - at
            if skip < len(data):  # outside the lock: others lend and settle meanwhile
                self._hash_of.update(data[skip:])
            with self._turn:
                self._next = max(self._next, at + len(data))
                self._turn.notify_all()

    def fail(self) -> None:
        with self._turn:
            self._broken = True
            self._lent.clear()
            self._turn.notify_all()

    def hexdigest(self) -> str:
        """The file's hash: of the bytes fed when they were all of it, else read anew."""
        with self._turn:
            self._turn.wait_for(lambda: not self._hashing)  # the last lender may still be leaving
            whole = not self._broken and self._next == self.size
        return self._hash_of.hexdigest() if whole else _digest_of(self.path)


_Key = tuple[str, int, int]


class _Job:
    """One file :class:`EarlyHashes` hashes: its hash (``future``), unless asked to stop (``stop``),
    in which case ``handed`` gets the hash so far and how many bytes it covers."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.future: Future[str] = Future()
        self.stop = threading.Event()
        self.handed: Future[tuple[Hasher, int]] = Future()

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            h, at, whole = _hash_file(self.path, stop=self.stop)
        except BaseException as exc:  # handed to whoever asks for the hash
            self.future.set_exception(exc)
            return
        if whole:
            self.future.set_result(h.hexdigest())
        else:
            self.handed.set_result((h, at))


class EarlyHashes:
    """Big inputs hashed one after the other on a daemon thread (an unused hash never delays the
    exit), started as soon as the CLI has found its inputs (:meth:`start`), so that the hash (0.3 s
    per GB) runs on a core that is otherwise idle while the store, pyarrow and the parsers load.
    The CLI hands this object to the ingest (``RunStore.ingest(early=...)``); the streaming parse
    then takes a finished hash (:meth:`hashed`) instead of hashing again, and a timeline ingested in
    ranges goes on from where it got to (:meth:`take_over`). It does not travel to another process:
    pickled, it is None (a worker hashes what it reads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: dict[_Key, _Job] = {}
        self.todo: queue.Queue[_Job] = queue.Queue()
        self.thread: threading.Thread | None = None

    def __reduce__(self) -> tuple[object, ...]:
        return (_none, ())

    @classmethod
    def of_inputs(cls, inputs: Iterable[InputFile], timelines: bool = True) -> EarlyHashes:
        """Hashes started for the big ones among ``inputs`` (smaller ones are hashed as they are
        parsed, in their bucket); ``timelines`` False: not uncompressed timelines, whose tokenizer
        threads hash what they read (:class:`RangeDigest`)."""
        early = cls()
        early.start(
            i.path
            for i in inputs
            if i.size >= BIG_BYTES and (timelines or i.kind is not InputKind.HOROVOD_TIMELINE or i.compressed)
        )
        return early

    def start(self, paths: Iterable[str | Path]) -> None:
        """Start hashing ``paths`` now, in the background."""
        with self.lock:
            for path in paths:
                key = _key(path)
                if key is None or key in self.jobs:
                    continue
                job = self.jobs[key] = _Job(str(path))
                self.todo.put(job)
                if self.thread is None:
                    self.thread = threading.Thread(target=self._run, name="hvd-analyze-hash-early", daemon=True)
                    self.thread.start()

    def _run(self) -> None:
        while True:
            self.todo.get().run()

    def _taken(self, path: str | Path) -> _Job | None:
        """The job started for ``path``, taken (once), if the file still has the size and
        modification time it had then; else None."""
        key = _key(path)
        with self.lock:
            return self.jobs.pop(key, None) if key is not None else None

    def hashed(self, path: str | Path) -> Future[str] | None:
        """The hash started for ``path`` (see :meth:`_taken`); None: hash it anew."""
        job = self._taken(path)
        return job.future if job is not None else None

    def take_over(self, path: str | Path) -> str | tuple[Hasher, int] | None:
        """What was hashed of ``path`` so far, for a :class:`RangeDigest` to go on from: its hash
        when it is done, else (it stops) the hash of the bytes before an offset, and that offset.
        The early hash uses the core the imports leave idle; once the tokenizer threads run, they
        hash what they read, where the early hash went on reading the file a second time on the
        cores they need (the 1 GB report: 0.4 CPU-seconds less, 2.85 -> 2.66 s in 8 interleaved
        runs). None: nothing was started, or it failed (hash anew)."""
        job = self._taken(path)
        if job is None:
            return None
        job.stop.set()
        ends: list[Future[Any]] = [job.future, job.handed]
        wait(ends, return_when=FIRST_COMPLETED)
        if job.handed.done():
            return job.handed.result()
        return None if job.future.exception() is not None else job.future.result()


def _none() -> None:
    """What early hashes are in another process: none."""


def _key(path: str | Path) -> _Key | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return str(Path(path).absolute()), st.st_size, st.st_mtime_ns
