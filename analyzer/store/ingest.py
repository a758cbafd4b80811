"""Ingest on an :class:`~analyzer.store.parallel.Executor`: the tasks, and the runner the store calls.

:func:`analyzer.store.buckets.write_bucket` runs per bucket of inputs; workers write buckets
into the store folder (which must be on a filesystem they all see) and send back manifest
entries, which the one writer of the manifest adds (:meth:`analyzer.store.run_store.RunStore.ingest`).
A big uncompressed log (a combined ``mpirun`` stdout) is parsed per chunk of 32 MB
(:mod:`parsers.nccl.chunks`); the chunks' parser states come back here, are merged in file
order and written as its bucket. Buckets (16 MB of input, or one big input) and chunks go out
a few to a task, up to :data:`TASK_BYTES`. A big uncompressed timeline is cut into 16 MB
ranges tokenized on threads (``--jobs``) or Dask workers and paired here in file order as
they come (its B/E pairing is sequential by nature, and cheap: a quarter of the single pass).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.store.buckets import (
    Bucket,
    write_bucket,
    write_merged_log,
    write_ranged_timeline,
)
from analyzer.store.discovery import InputFile
from analyzer.store.hashing import EarlyHashes, RangeDigest, file_digest
from analyzer.store.local import NOTHING_LENT, Local
from analyzer.store.manifest import ManifestEntry
from analyzer.store.parallel import Executor
from parsers.inputs import CHUNK_BYTES, InputKind

if TYPE_CHECKING:  # the log parser loads when a log is parsed
    from parsers.nccl.chunks import ChunkMerger
    from parsers.nccl.parser import JobLogParser
    from parsers.timeline.tokens import RangeTask, TokenizedRange

#: input per ingest task at most (four buckets of small inputs, two chunks of a big log): an
#: interrupted ingest redoes at most this much per worker (a task's entries come back when it ends)
TASK_BYTES = 64 << 20
RANK_TRACE_COST = 4


@dataclass(frozen=True, slots=True)
class BucketTask:
    """Parse the bucket ``number`` of the plan into the store at ``root``."""

    root: str
    bucket: Bucket
    number: int

    @property
    def weight(self) -> int:
        """Its work, in timeline bytes: a rank's profiler trace costs about 4x a timeline's bytes to parse
        (25 ms per MB on this 2-core box, read event by event), so 80 MB of them pay for a worker pool."""
        return sum(i.size * (RANK_TRACE_COST if i.kind is InputKind.RANK_TRACE else 1) for i in self.bucket.inputs)


@dataclass(frozen=True, slots=True)
class ChunkTask:
    """Parse bytes ``start:end`` of the log at ``path``, chunk ``index`` of its plan."""

    path: str
    index: int
    start: int
    end: int

    @property
    def weight(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class BucketDone:
    """The manifest entries :func:`write_bucket` made for bucket ``number``'s inputs, in their
    order (the inputs themselves are not sent back: unpickling 4096 paths took the coordinator
    0.2 s of a core that the workers need)."""

    number: int
    entries: list[ManifestEntry]


@dataclass(frozen=True, slots=True)
class ChunkDone:
    """A chunk's parser (:func:`parsers.nccl.chunks.parse_chunk`), merged by the coordinator."""

    path: str
    index: int
    parser: JobLogParser


IngestTask = BucketTask | ChunkTask


def ingest_tasks(tasks: list[IngestTask], local: Local = NOTHING_LENT) -> list[BucketDone | ChunkDone]:
    """A worker's share of an ingest: each task's result, in order (``local``: what the ingesting
    process lends when this runs there; pickled to a worker, it is empty)."""
    out: list[BucketDone | ChunkDone] = []
    for task in tasks:
        if isinstance(task, BucketTask):
            written = write_bucket(Path(task.root), task.bucket, local=local)
            out.append(BucketDone(task.number, [entry for _, entry in written]))
        else:
            from parsers.nccl.chunks import parse_chunk

            out.append(ChunkDone(task.path, task.index, parse_chunk(task.path, task.start, task.end, task.path)))
    return out


def chunkable(item: InputFile, chunk_bytes: int = CHUNK_BYTES) -> bool:
    """Whether ``item`` is a log parsed in chunks when several workers are there: uncompressed
    (gzip cannot be entered mid-stream) and of at least two chunks (by default more than makes
    a bucket of its own, :data:`analyzer.store.buckets.BUCKET_BYTES`). Timelines: :func:`ranged`."""
    return item.kind is InputKind.JOB_LOG and not item.compressed and item.size >= 2 * chunk_bytes


def ranged(item: InputFile, range_bytes: int | None = None) -> bool:
    """Whether ``item`` is a timeline big enough to tokenize in ranges at once
    (:mod:`parsers.timeline.tokens`; uncompressed, two ranges or more)."""
    # imported here: the timeline parser, which reading logs never needs
    from parsers.timeline.tokens import RANGE_BYTES

    return (
        item.kind is InputKind.HOROVOD_TIMELINE
        and not item.compressed
        and item.size >= 2 * (range_bytes or RANGE_BYTES)
    )


def ingest_pieces(items: Sequence[InputFile], chunk_bytes: int = CHUNK_BYTES) -> int:
    """How many pieces of work ``items`` make: a file each, a chunkable log a task per chunk, a
    big timeline a task per range."""
    from parsers.timeline.tokens import RANGE_BYTES

    return sum(
        -(-i.size // RANGE_BYTES) if ranged(i) else -(-i.size // chunk_bytes) if chunkable(i, chunk_bytes) else 1
        for i in items
    )


def ingest_runner(
    executor: Executor, chunk_bytes: int = CHUNK_BYTES, range_bytes: int | None = None
) -> Callable[[Path, list[Bucket], Callable[[int], None] | None, Local], Iterator[tuple[InputFile, ManifestEntry]]]:
    """A :data:`analyzer.store.run_store.Runner` that parses the buckets with ``executor``; a big log's
    bucket is parsed as chunks (:func:`chunkable`) merged here, in file order, as they
    come back, while this process hashes the file; a big timeline is tokenized in ranges
    on the executor's threads or Dask workers and paired here (:func:`ranged`), after the rest."""

    def run(
        root: Path,
        buckets: list[Bucket],
        progress: Callable[[int], None] | None = None,
        local: Local = NOTHING_LENT,
    ) -> Iterator[tuple[InputFile, ManifestEntry]]:
        rest: list[Bucket] = []
        timelines: list[Bucket] = []
        for b in buckets:
            (timelines if b.stream and ranged(b.inputs[0], range_bytes) else rest).append(b)
        for item, entry in _parse(root, rest, local):
            if progress:
                progress(item.size)
            yield item, entry
        if not timelines:
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hvd-analyze-hash") as hasher:
            for b in timelines:  # each reports its progress range by range
                item = b.inputs[0]
                tokenized, hexdigest = _ranges_hashed(item, hasher, local.early)
                yield from write_ranged_timeline(
                    root,
                    item,
                    tokenized,
                    hexdigest,
                    b.run,
                    range_bytes,
                    progress,
                    local,
                )

    def _ranges_hashed(
        item: InputFile, hasher: ThreadPoolExecutor, early: EarlyHashes | None
    ) -> tuple[Callable[[list[RangeTask]], Iterable[TokenizedRange]], Callable[[], str]]:
        """How to tokenize a big timeline's ranges, and its hash: from the tokenizer's own reads
        when they are this process's threads (:class:`~analyzer.store.hashing.RangeDigest`), going
        on from where the hash started early stopped (:class:`analyzer.store.hashing.EarlyHashes`);
        else (Dask workers read the file) the early one, or one read on a thread of its own."""
        from parsers.timeline.tokens import tokenize_task

        path = str(item.path)
        unhashed = partial(executor.ordered, tokenize_task)  # the ranges, read by tokenizers that hash nothing
        if executor.uses_dask:
            hashed = (early.hashed(path) if early is not None else None) or hasher.submit(file_digest, path)
            return unhashed, hashed.result
        begun = early.take_over(path) if early is not None else None
        if isinstance(begun, str):
            done = begun
            return unhashed, lambda: done
        digest = RangeDigest(path, item.size, begun)

        def tokenized(tasks: list[RangeTask]) -> Iterable[TokenizedRange]:
            digest.head(tasks[0][1] if tasks else item.size)
            return executor.ordered(partial(tokenize_task, seen=digest), tasks)

        return tokenized, digest.hexdigest

    def _parse(root: Path, buckets: list[Bucket], local: Local) -> Iterator[tuple[InputFile, ManifestEntry]]:
        tasks: list[IngestTask] = []
        logs: dict[str, tuple[InputFile, ChunkMerger, Future[str], str | None]] = {}
        hasher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hvd-analyze-hash")  # one file at a time
        try:
            for number, b in enumerate(buckets):
                item = b.inputs[0]
                if not (b.stream and chunkable(item, chunk_bytes)):
                    tasks.append(BucketTask(str(root), b, number))
                    continue
                from parsers.nccl.chunks import ChunkMerger, chunk_ranges

                path = str(item.path)
                ranges = chunk_ranges(path, item.size, chunk_bytes)
                logs[path] = (
                    item,
                    ChunkMerger(path, ranges, path),
                    hasher.submit(file_digest, path, None, local.early),
                    b.run,
                )
                tasks += [ChunkTask(path, i, start, end) for i, (start, end) in enumerate(ranges)]

            def weight(task: IngestTask) -> int:
                return task.weight

            # processes or a cluster only for enough work (the timelines' threads cost nothing to start)
            here = executor if executor.pays_off(len(tasks), sum(map(weight, tasks))) else Executor()
            # buckets (16 MB of small inputs, or one big input) go a few to a task while much is left, one at the end;
            # with a big log, its chunks (and the buckets) one to a task: a worker then holds one chunk's parser at a
            # time (two held ~25 MB more each: the 1 GB log's ingest tree peaked at 646 MB instead of 567), same time
            tasks_of = partial(ingest_tasks, local=local)
            most = chunk_bytes if logs else TASK_BYTES
            for result in here.map(tasks_of, tasks, weight=weight, most=most):
                if isinstance(result, BucketDone):
                    yield from zip(buckets[result.number].inputs, result.entries, strict=True)
                    continue
                item, merger, hashed, run = logs[result.path]
                merger.add(result.index, result.parser)
                if merger.complete:
                    yield from write_merged_log(root, item, merger, hashed.result(), run, local)
        finally:
            hasher.shutdown(wait=True, cancel_futures=True)

    return run
