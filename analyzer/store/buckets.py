"""Writing inputs into a store folder: parse, hash and write their Parquet partitions.

Inputs are written in buckets (:func:`plan_buckets`): a big input alone, small ones (per-rank
logs) several to a bucket, so that 10,000 ranks make a few hundred Parquet files per table,
not 10,000. :func:`write_bucket` is the unit of work of every ingest path (one process, a
process pool, a Dask worker): it only creates files under ``ROOT/tables`` and returns the
manifest entries, which the single writer of the manifest (:class:`analyzer.store.run_store.RunStore`)
then adds.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from analyzer.errors import InputError, StoreError
from analyzer.store.discovery import InputFile
from analyzer.store.hashing import EarlyHashes, HashingReader, algorithm_for
from analyzer.store.held import HeldParts, kept
from analyzer.store.local import NOTHING_LENT, Local
from analyzer.store.manifest import ManifestEntry, digest
from analyzer.store.parts import (
    Writers,
    close_parts,
    discard_parts,
    in_background,
    issues_table,
    publish_parts,
    tmp_folder_name,
    with_input_id,
    write_part,
)
from parsers.inputs import GZIP_MAGIC, GunzipStream, InputKind

if TYPE_CHECKING:  # the parsers load when an input of theirs is parsed
    from parsers.nccl.chunks import ChunkMerger
    from parsers.nccl.parser import JobLogParser
    from parsers.ranktrace.parser import RankTraceParser
    from parsers.timeline.parser import TimelineParser

#: inputs this big stream into a bucket of their own; smaller ones share buckets up to this size
BUCKET_BYTES = 16 << 20
#: a big input's id hashes its size and this many first bytes (it is needed before the first row is written)
ID_PREFIX_BYTES = 16 << 20


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class Bucket:
    """Inputs written together into one Parquet file per table: one big input that streams
    (``stream``), or several small ones."""

    inputs: tuple[InputFile, ...]
    stream: bool = False
    run: str | None = None  # the run it belongs to: its folder is run=<run>/bucket=<name> (None: bucket=<name>)

    @property
    def size(self) -> int:
        return sum(i.size for i in self.inputs)


def plan_buckets(items: list[InputFile], bucket_bytes: int | None = None, run: str | None = None) -> list[Bucket]:
    """The inputs grouped into buckets, the unit of work and of storage.

    An input of ``bucket_bytes`` (:data:`BUCKET_BYTES`) or more is a bucket of its own and
    streams; smaller ones are taken in natural path order (so per-rank logs of neighbouring
    hosts and ranks end up together) and cut into buckets of up to ``bucket_bytes``. The plan
    depends only on the inputs, not on how many processes or workers run it.
    """
    limit = bucket_bytes or BUCKET_BYTES
    out = [Bucket((i,), stream=True, run=run) for i in items if i.size >= limit]
    cur: list[InputFile] = []
    size = 0
    for item in sorted((i for i in items if i.size < limit), key=lambda i: _natural(str(i.path))):
        if cur and size + item.size > limit:
            out.append(Bucket(tuple(cur), run=run))
            cur, size = [], 0
        cur.append(item)
        size += item.size
    return out + ([Bucket(tuple(cur), run=run)] if cur else [])


def write_bucket(
    root: Path,
    bucket: Bucket,
    progress: Callable[[int], None] | None = None,
    input_id: str | None = None,
    local: Local = NOTHING_LENT,
) -> list[tuple[InputFile, ManifestEntry]]:
    """Parse one bucket of inputs into ``root/tables/<table>/bucket=<name>/part-0.parquet`` and
    return ``(input, manifest entry)`` for each (the manifest itself is not touched: the caller
    adds the entries). Safe to run in another process or on a Dask worker sharing the folder:
    the files are written into a uniquely named hidden folder and renamed once complete, and
    an existing bucket is never overwritten.

    A big input streams into its own bucket; its id (known before the first row is written)
    hashes its size and first :data:`ID_PREFIX_BYTES`, unless ``input_id`` is given. The small
    inputs of a bucket are parsed one at a time in memory, so that their id is the sha256 of
    their bytes, and a repeated input (same bytes) is written once. Each entry holds the hash of
    its input's bytes (:func:`analyzer.store.hashing.algorithm_for`). ``local``: the store's parts
    held in memory and the hashes started early, when this process has them.
    """
    return _bucket(
        root,
        bucket.run,
        lambda writers, tmp: (
            _stream(root, bucket, progress, input_id, writers, tmp, local)
            if bucket.stream
            else _gather(root, bucket, progress, writers, tmp, local)
        ),
        local.held,
    )


def write_merged_log(
    root: Path,
    item: InputFile,
    merger: ChunkMerger,
    hexdigest: str,
    run: str | None = None,
    local: Local = NOTHING_LENT,
) -> list[tuple[InputFile, ManifestEntry]]:
    """A big log parsed in chunks (:mod:`parsers.nccl.chunks`, all merged), written as the
    bucket that streaming it would have written: same id, rows and manifest entry."""

    def fill(writers: Writers, tmp: str) -> list[tuple[InputFile, ManifestEntry]]:
        iid = prefix_id(item.path, item.size)
        rows: dict[str, int] = {}
        for name, table in _with_issues(merger.tables().items(), merger.parser):
            write_part(root, writers, name, tmp, with_input_id(table, iid), local.held)
            rows[name] = table.num_rows
        entry = _entry(item, hexdigest, rows, merger.parser)
        entry["id"] = iid
        return [(item, entry)]

    return _bucket(root, run, fill, local.held)


def write_ranged_timeline(
    root: Path,
    item: InputFile,
    tokenized: Callable[[list[Any]], Iterable[Any]],
    hexdigest: Callable[[], str],
    run: str | None = None,
    range_bytes: int | None = None,
    progress: Callable[[int], None] | None = None,
    local: Local = NOTHING_LENT,
) -> list[tuple[InputFile, ManifestEntry]]:
    """A big uncompressed timeline tokenized in ranges by ``tokenized`` (threads, Dask workers:
    :meth:`analyzer.store.parallel.Executor.ordered`) and paired here in file order
    (:meth:`parsers.timeline.parser.TimelineParser.batches_in_ranges`), written as the bucket that
    streaming it would have written: same id, rows and manifest entry. ``hexdigest()`` gives
    the file's hash once the rows are written (it is computed meanwhile). ``range_bytes``: the
    ranges' size (default :data:`parsers.timeline.tokens.RANGE_BYTES`); ``progress`` gets the
    bytes of each range as it is paired, and of the file's head at the end."""
    from parsers.timeline.parser import TimelineParser
    from parsers.timeline.tokens import RANGE_BYTES

    done = [0]

    def counted(tasks: list[Any]) -> Iterator[Any]:
        for r in tokenized(tasks):
            if progress:
                progress(r.stop - r.start)
            done[0] += r.stop - r.start
            yield r

    def fill(writers: Writers, tmp: str) -> list[tuple[InputFile, ManifestEntry]]:
        iid = prefix_id(item.path, item.size)
        parser = TimelineParser(item.path, display_name=str(item.path), columns=kept(local.held))
        rows: dict[str, int] = {}
        batches = parser.batches_in_ranges(counted, range_bytes or RANGE_BYTES)
        for name, table in _with_issues(in_background(batches), parser):
            write_part(root, writers, name, tmp, with_input_id(table, iid), local.held)
            rows[name] = rows.get(name, 0) + table.num_rows
        if progress:
            progress(item.size - done[0])
        entry = _entry(item, hexdigest(), rows, parser)
        entry["id"] = iid
        return [(item, entry)]

    return _bucket(root, run, fill, local.held)


def _bucket(
    root: Path,
    run: str | None,
    fill: Callable[[Writers, str], list[tuple[InputFile, ManifestEntry]]],
    held: HeldParts | None = None,
) -> list[tuple[InputFile, ManifestEntry]]:
    """Run ``fill(writers, tmp folder name)``, then publish the bucket it wrote into ``run``'s
    folder (discarded if it fails); the entries get ``bucket`` and ``run``."""
    tmp = tmp_folder_name()
    writers: Writers = {}
    try:
        out = fill(writers, tmp)
    except BaseException:
        discard_parts(root, writers, tmp, held)
        raise
    close_parts(writers)
    ids = sorted({e["id"] for _, e in out})
    name = publish_parts(root, writers, tmp, run, ids[0] if len(ids) == 1 else _digest("\n".join(ids).encode()), held)
    for _, entry in out:
        entry["bucket"] = name
        if run is not None:
            entry["run"] = run
    return out


def _stream(
    root: Path,
    bucket: Bucket,
    progress: Callable[[int], None] | None,
    input_id: str | None,
    writers: Writers,
    tmp: str,
    local: Local,
) -> list[tuple[InputFile, ManifestEntry]]:
    """The one big input of ``bucket``, written batch by batch as it is parsed."""
    (item,) = bucket.inputs
    iid = input_id or prefix_id(item.path, item.size)
    entry = _parse(
        item,
        progress,
        lambda name, t: write_part(root, writers, name, tmp, with_input_id(t, iid), local.held),
        threaded_hash=True,
        columns=kept(local.held),
        early=local.early,
    )
    entry["id"] = iid
    return [(item, entry)]


def _gather(
    root: Path,
    bucket: Bucket,
    progress: Callable[[int], None] | None,
    writers: Writers,
    tmp: str,
    local: Local,
) -> list[tuple[InputFile, ManifestEntry]]:
    """The small inputs of ``bucket``, each parsed in memory (its id is its hash), then written
    in one go per table; the same bytes twice are written once."""
    out: list[tuple[InputFile, ManifestEntry]] = []
    pending: dict[str, list[pa.Table]] = {}  # per table, every input's rows
    for item in bucket.inputs:
        tables: list[tuple[str, pa.Table]] = []

        def collect(name: str, t: pa.Table, into: list[tuple[str, pa.Table]] = tables) -> None:
            into.append((name, t))

        entry = _parse(item, progress, collect, threaded_hash=False, columns=kept(local.held), early=local.early)
        entry["id"] = digest(entry)[1][:16]
        if all(e["id"] != entry["id"] for _, e in out):
            for name, t in tables:
                pending.setdefault(name, []).append(with_input_id(t, entry["id"]))
        out.append((item, entry))
    # One write per table: a row group per input would mean a zstd context per column and
    # input (measured: 9% of the time on 4096 per-rank logs) and row groups of a few rows.
    for name, parts in pending.items():
        write_part(root, writers, name, tmp, pa.concat_tables(parts), local.held)
    return out


def prefix_id(path: Path, size: int) -> str:
    """The id of a big input: sha256 of its size and first :data:`ID_PREFIX_BYTES` (domain-separated
    from the whole-file ids of small inputs). The store resolves the rare clash of two inputs
    with the same prefix and size by re-ingesting the second under its whole-file id."""
    h = hashlib.sha256(f"hvd-analyze input {size}\n".encode())
    with open(path, "rb") as f:
        h.update(f.read(ID_PREFIX_BYTES))
    return h.hexdigest()[:16]


def _parse(
    item: InputFile,
    progress: Callable[[int], None] | None,
    emit: Callable[[str, pa.Table], None],
    threaded_hash: bool,
    columns: Mapping[str, Sequence[str]] | None = None,
    early: EarlyHashes | None = None,
) -> ManifestEntry:
    """Parse ``item``, hand each ``(table, batch)`` to ``emit`` and return its manifest entry
    (without ``id`` and ``bucket``); ``threaded_hash``: see :class:`HashingReader`; ``columns``:
    those a timeline's tables need (:func:`analyzer.store.held.kept`)."""
    if item.kind not in (InputKind.HOROVOD_TIMELINE, InputKind.JOB_LOG, InputKind.RANK_TRACE):  # pragma: no cover
        raise StoreError(f"{item.path}: no parser for input kind {item.kind}")
    rows: dict[str, int] = {}
    with open(item.path, "rb") as raw_file:
        gz = raw_file.read(2) == GZIP_MAGIC
        raw_file.seek(0)
        soon = early.hashed(item.path) if early is not None else None  # hashed while the parsers loaded
        raw = HashingReader(raw_file, algorithm_for(item.size), threaded_hash, hashing=soon is None)
        stream: Any = GunzipStream(raw, packed=item.size) if gz else raw
        parser: TimelineParser | JobLogParser | RankTraceParser
        if item.kind is InputKind.RANK_TRACE:
            from parsers.ranktrace.parser import RankTraceParser  # imported here: only a rank's trace needs it

            parser = RankTraceParser(item.path, display_name=str(item.path))
            batches: Iterator[tuple[str, pa.Table]] = iter(parser.parse(stream).items())
        elif item.kind is InputKind.JOB_LOG:
            from parsers.nccl.parser import JobLogParser  # imported here: a timeline's ingest never needs it

            parser = JobLogParser(item.path, display_name=str(item.path))
            batches = iter(parser.parse(stream).items())
        else:
            # imported here: the timeline parser, which a worker parsing only logs never needs
            from parsers.timeline.parser import TimelineParser

            parser = TimelineParser(item.path, display_name=str(item.path), columns=columns)
            batches = in_background(parser.batches(stream))
        last = 0
        try:
            for name, batch in _with_issues(batches, parser):
                emit(name, batch)
                rows[name] = rows.get(name, 0) + batch.num_rows
                if progress and raw.pos > last:
                    progress(raw.pos - last)
                    last = raw.pos
        finally:
            raw.finish()
        if progress and raw.pos > last:
            progress(raw.pos - last)
    return _entry(item, soon.result() if soon is not None else raw.hexdigest(), rows, parser)


def _with_issues(
    batches: Iterable[tuple[str, pa.Table]], parser: TimelineParser | JobLogParser | RankTraceParser
) -> Iterator[tuple[str, pa.Table]]:
    """A parser's batches, then its tensors (timelines) and parse issues, once it is done."""
    yield from batches
    from parsers.timeline.parser import TimelineParser

    tail = [("tensors", parser.tensors_table())] if isinstance(parser, TimelineParser) else []
    for name, table in (*tail, ("parse_issues", issues_table(parser.sink.issues))):
        if table.num_rows or name == "parse_issues":  # a clean file has an empty issues table
            yield name, table


def _entry(
    item: InputFile, hexdigest: str, rows: dict[str, int], parser: TimelineParser | JobLogParser | RankTraceParser
) -> ManifestEntry:
    """An input's manifest entry, without ``id`` and ``bucket`` (the caller sets them);
    ``hexdigest``: its bytes' hash, in the algorithm for its size.

    Raises:
        InputError: the file's size changed since it was found (a job still writing it): its rows
            and hash would describe bytes the file no longer holds.
    """
    try:
        size = item.path.stat().st_size
    except OSError:
        size = -1
    if size != item.size:
        raise InputError(
            str(item.path),
            f"it changed while it was read ({item.size} bytes when found, "
            f"{'gone' if size < 0 else f'{size} bytes'} now)",
            hint="is a job still writing it? Ingest it again once it is complete: inputs already stored are skipped",
        )
    partial = {
        "path": str(item.path),
        "paths": [str(item.path)],
        "size": item.size,
        algorithm_for(item.size): hexdigest,
        "kind": item.kind.input_name,
        "compressed": item.compressed,
        "ingested_at": now(),
        "tables": sorted(rows),
        "rows": rows,
        "issues": parser.sink.counts(),
    }
    entry = cast(ManifestEntry, partial)  # "id" is the caller's: known only once the input is parsed
    from parsers.timeline.parser import TimelineParser

    if isinstance(parser, TimelineParser):
        entry["timeline"] = parser.info.to_dict()
    elif item.kind is InputKind.RANK_TRACE:  # the parser's class is not imported unless such a trace is read
        entry["rank_trace"] = cast("RankTraceParser", parser).info.to_dict()
    else:
        entry["log"] = cast("JobLogParser", parser).info
    return entry


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _natural(s: str) -> list[Any]:
    """Sort key that puts ``node-2`` before ``node-10``."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s)]
