"""The Parquet part files of a bucket: written in a hidden folder, published by one rename.

Every table of a bucket is one ``part-0.parquet`` under ``tables/<table>/[run=<run>/]bucket=<name>``
(a hive-partitioned dataset). A bucket is written into hidden ``.tmp-*`` folders and renamed
once complete (:func:`publish_parts`), so a reader or a crash never sees half a bucket.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar

import numpy as np
import pyarrow as pa

from analyzer.errors import StoreError
from analyzer.store.held import HeldParts
from parsers import arrow as A
from parsers.issues import ParseIssue
from parsers.schema import arrow_schema

if TYPE_CHECKING:  # Parquet loads where a file is written or read: a report's store held in memory has none
    import pyarrow.parquet as pq

    from analyzer.store.manifest import ManifestEntry

QUEUE_DEPTH = 4  # batches in flight between the parsing and the writing thread
COMPRESSION = "lz4"
#: the columns whose row-group statistics readers use to skip row groups (the ``between`` and
#: ``where`` of :class:`~analyzer.store.run_store.RunStore`: ``start_us``, ``negotiation_id``,
#: ``ts_us``), and ``span_id``, which ticks' ``negotiation_id`` refers to, for readers outside
#: (DuckDB, Spark) joining the two; computing them for every column was a fifth of the time spent
#: writing. Not ``input_id``: a dictionary column's statistics cost
#: 0.08 s per GB of timeline, and only a bucket of small inputs holds more than one id
STATS_COLUMNS = frozenset({"span_id", "start_us", "negotiation_id", "ts_us"})
#: integers that stay PLAIN-encoded: small values in no order (ranks, pids, depths, rank orders)
PLAIN_INTS = frozenset({"pid", "rank", "order", "depth", "nranks", "cuda_dev"})
TMP_PREFIX = ".tmp-"
RUN_KEY = "run"
BUCKET_KEY = "bucket"
PART = "part-0.parquet"


def bucket_folder(name: str, run: str | None = None) -> str:
    """The hive partition folder of bucket ``name`` (of ``run``), under ``tables/<table>/``."""
    return f"{RUN_KEY}={run}/{BUCKET_KEY}={name}" if run is not None else f"{BUCKET_KEY}={name}"


def entry_folder(entry: ManifestEntry) -> str:
    """The folder of a manifest entry's rows under ``tables/<table>/``: its run's bucket, its
    bucket (schema version 2), or (version 1) its own."""
    return bucket_folder(entry["bucket"], entry.get("run")) if entry.get("bucket") else f"input_id={entry['id']}"


def safe_name(name: str) -> str:
    """``name`` made usable as a file or folder name (and a hive partition value)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "run"


class PartWriter(Protocol):
    """What writes a part: a Parquet file's writer, or a part held in memory (:mod:`analyzer.store.held`)."""

    def write_table(self, table: pa.Table) -> None: ...

    def close(self) -> None: ...


Writers = dict[str, PartWriter]
Data = TypeVar("Data", pa.Table, pa.RecordBatch)


def write_part(
    root: Path, writers: Writers, name: str, tmp_dir: str, batch: pa.Table, held: HeldParts | None = None
) -> None:
    """Append to the bucket's part file of table ``name`` (held in memory when the store holds its
    parts: ``held``, :class:`analyzer.store.held.HeldParts`)."""
    w = writers.get(name)
    if w is None:
        folder = root / "tables" / name / tmp_dir
        folder.mkdir(parents=True, exist_ok=True)
        w = held.new_part(folder / PART, name) if held is not None else None
        if w is None:
            import pyarrow.parquet as pq

            schema = arrow_schema(name)
            w = pq.ParquetWriter(folder / PART, schema, **parquet_options(schema))
        writers[name] = w
    w.write_table(batch)


class ParquetOptions(TypedDict):
    """Keyword arguments of :class:`pyarrow.parquet.ParquetWriter` this store sets."""

    use_dictionary: list[str]
    column_encoding: dict[str, str]
    write_statistics: list[str]
    compression: str
    write_page_checksum: bool


def parquet_options(schema: pa.Schema) -> ParquetOptions:
    """How every part file is written.

    * Dictionary-encode only the dictionary columns: trying it on high-cardinality integers
      (ids, timestamps, offsets) costs more than it saves (measured: 2.4x slower).
    * The other integers but the small ones (:data:`PLAIN_INTS`) are ``DELTA_BINARY_PACKED``:
      ids, timestamps and offsets grow by small steps, so their deltas pack in a few bits.
    * Row-group statistics only for :data:`STATS_COLUMNS`.
    * A CRC of every page, which every read verifies (:func:`read_part`): a flipped byte inside a
      page's values decodes without an error, as other numbers or as invalid UTF-8 that only fails
      when the strings are used; its checksum names the damage where it is read.

    Measured on the 3.9 M ticks and 0.5 M spans of a 300 MB timeline against plain zstd with
    statistics everywhere: writing 0.50 -> 0.25 s, reading 0.10 -> 0.04 s, 12.7 -> 3.3 MB.
    """
    ints = [f.name for f in schema if pa.types.is_integer(f.type) and f.name not in PLAIN_INTS]
    return {
        "use_dictionary": [f.name for f in schema if pa.types.is_dictionary(f.type)],
        "column_encoding": dict.fromkeys(ints, "DELTA_BINARY_PACKED"),
        "write_statistics": [n for n in schema.names if n in STATS_COLUMNS],
        "compression": COMPRESSION,
        "write_page_checksum": True,
    }


def with_input_id(batch: pa.Table, input_id: str) -> pa.Table:
    if "input_id" in batch.column_names:
        batch = batch.drop_columns(["input_id"])
    col = A.repeated(input_id, batch.num_rows)
    return batch.add_column(0, pa.field("input_id", col.type, nullable=False), col)


def drop_input_rows(path: Path, name: str, input_id: str, held: HeldParts | None = None) -> None:
    """Rewrite the part file ``path`` of table ``name`` without the rows of ``input_id``."""
    import pyarrow.compute as pc  # here: writing parts never needs it
    import pyarrow.parquet as pq

    part = held.get(path) if held is not None else None
    t = part.table() if part is not None else read_part(path, name, schema=arrow_schema(name))
    keep = t.filter(pc.not_equal(t["input_id"].cast(pa.string()), input_id))
    if part is not None:
        part.replace(keep)
        return
    tmp = path.with_name(f"{TMP_PREFIX}{PART}")
    pq.write_table(keep, tmp, **parquet_options(keep.schema))
    os.replace(tmp, path)


def close_parts(writers: Writers) -> None:
    for w in writers.values():
        w.close()


def discard_parts(root: Path, writers: Writers, tmp_dir: str, held: HeldParts | None = None) -> None:
    """After a parser or write error: leave no partial bucket behind."""
    for w in writers.values():
        with contextlib.suppress(Exception):  # the original error is the one to report
            w.close()
    for name in writers:
        shutil.rmtree(root / "tables" / name / tmp_dir, ignore_errors=True)
        if held is not None:
            held.dropped(root / "tables" / name / tmp_dir)


def publish_parts(
    root: Path, writers: Writers, tmp_dir: str, run: str | None, name: str, held: HeldParts | None = None
) -> str:
    """Rename the bucket's hidden folders to ``[run=<run>/]bucket=<name>``, or to
    ``bucket=<name>-<random>`` where that exists (the same bytes parsed by two tasks at once,
    or a clash of ids), which the store then resolves; a listed bucket is never overwritten."""
    tables = root / "tables"
    if any((tables / t / bucket_folder(name, run)).exists() for t in writers):
        name = f"{name}-{uuid.uuid4().hex[:8]}"
    for t in writers:
        dest = tables / t / bucket_folder(name, run)
        dest.parent.mkdir(exist_ok=True)
        os.replace(tables / t / tmp_dir, dest)
        if held is not None:
            held.moved(tables / t / tmp_dir, dest)
    return name


def tmp_folder_name() -> str:
    return f"{TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"


def in_background(batches: Iterator[tuple[str, pa.Table]]) -> Iterator[tuple[str, pa.Table]]:
    """Run a batch generator in a thread, ``QUEUE_DEPTH`` batches ahead of the consumer.

    The parser's compiled kernel and pyarrow's Parquet writer both release the GIL, so
    parsing the next chunk overlaps compressing and writing the previous one. Errors
    raised in the thread are re-raised here, in the consumer.
    """
    q: queue.Queue[tuple[str, pa.Table] | BaseException | None] = queue.Queue(maxsize=QUEUE_DEPTH)
    stop = threading.Event()

    def offer(item: tuple[str, pa.Table] | BaseException | None) -> bool:
        """Put unless the consumer has gone (it may never take from a full queue again)."""
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in batches:
                if not offer(item):
                    return
            offer(None)
        except BaseException as exc:  # handed to the consumer
            offer(exc)

    thread = threading.Thread(target=produce, name="hvd-analyze-parse", daemon=True)
    thread.start()
    try:
        while (item := q.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


def file_schema(name: str) -> pa.Schema:
    """The schema of a version-1 part file: ``input_id`` was the folder name, not a column."""
    schema = arrow_schema(name)
    return schema.remove(schema.get_field_index("input_id"))


def issues_table(issues: list[ParseIssue]) -> pa.Table:
    n = len(issues)
    return pa.Table.from_arrays(
        [
            A.repeated("", n),  # set by the store
            A.strings([i.file for i in issues]),
            A.ints(
                np.array([i.byte_offset or 0 for i in issues], np.int64),
                np.array([i.byte_offset is None for i in issues], np.bool_),
            ),
            A.encoded([i.severity.value for i in issues]),
            A.encoded([i.code for i in issues]),
            A.strings([i.message for i in issues]),
            A.ints(np.array([i.count for i in issues], np.int64)),
        ],
        schema=arrow_schema("parse_issues"),
    )


@contextlib.contextmanager
def reading(path: Path, name: str, held: HeldParts | None = None) -> Iterator[None]:
    """Read a part file of table ``name`` (held in memory when ``held`` has it): a damaged one (cut,
    emptied, another table's) is a :class:`StoreError` naming it. A part without a nullable column
    (one a later release added, such as ``watchdog_timeouts.global_rank``) is an older store's:
    a read with the table's schema gives that column nulls.

    Raises:
        StoreError: the part cannot be read as this table's Parquet file.
    """
    if held is not None and held.get(path) is not None:  # in memory: nothing to check
        yield
        return
    import pyarrow.parquet as pq

    try:
        schema = file_schema(name)
        missing = set(schema.names) - set(pq.read_schema(path).names)
        # a nullable column added by a later release reads as nulls from an older store's part
        required = sorted(c for c in missing if not schema.field(c).nullable)
        if required:
            raise ValueError(f"it lacks the {name} column(s) {', '.join(required)}: another table's file?")
        yield
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise StoreError(
            f"{path}: a damaged part of the run store ({type(exc).__name__}: {exc}); the store cannot be "
            "read: repair it with `hvd-analyze ingest --repair -o STORE` (its inputs are ingested again from "
            "where they were, if they are still there)"
        ) from exc


def read_part(path: Path, name: str, **options: Any) -> pa.Table:
    """Part file ``path`` of table ``name``, read with ``pyarrow.parquet.read_table``'s ``options``
    (damage reported as :func:`reading` does), its pages' checksums verified and its strings
    checked (:func:`check_strings`). Parquet loads here and where parts are written: a report whose
    store is held in memory reads no file and never loads it (20 ms)."""
    import pyarrow.parquet as pq

    with reading(path, name):
        return check_strings(pq.read_table(path, page_checksum_verification=True, **options))


def check_strings(data: Data) -> Data:
    """``data`` once its strings are valid UTF-8: each dictionary's values (a few per column), and
    whole string columns. A part written before page checksums (or a damage no checksum covers)
    can hold bytes that decode only when a string is used, far from the read.

    Raises:
        ValueError: a string column holds invalid UTF-8 (:func:`reading` names the part).
    """
    for col in data.columns:
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        for chunk in chunks:
            if pa.types.is_dictionary(chunk.type):
                chunk.dictionary.validate(full=True)
            elif pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type):
                chunk.validate(full=True)
    return data


def check_part(path: Path, name: str) -> None:
    """Read every page of part file ``path`` of table ``name`` (a row group at a time: a part of a
    big timeline is never whole in memory), as every read does (:func:`read_part`).

    Raises:
        StoreError: the part is damaged (:func:`reading`).
    """
    import pyarrow.parquet as pq

    with reading(path, name):
        file = pq.ParquetFile(path, page_checksum_verification=True)
        for group in range(file.num_row_groups):  # as a table: its columns' lengths are compared
            check_strings(file.read_row_group(group))


def row_groups(meta: pq.FileMetaData, column: str, lo: int, hi: int) -> list[int]:
    """The row groups of a Parquet file that may hold a value of ``column`` in ``[lo, hi]``: all
    but those whose statistics rule it out (values all outside, or all null)."""
    at = meta.schema.names.index(column)
    out = []
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        stats = group.column(at).statistics
        if stats is not None and stats.has_null_count and stats.null_count == group.num_rows:
            continue
        if stats is None or not stats.has_min_max or stats.min <= hi and stats.max >= lo:
            out.append(g)
    return out
