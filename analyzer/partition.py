"""Writing one input into a store folder: parse, hash and write its Parquet partitions.

:func:`write_input` is the unit of work of every ingest path (one process, a process pool,
a Dask worker): it only creates files under ``ROOT/tables`` and returns the manifest entry,
which the single writer of the manifest (:class:`analyzer.store.RunStore`) then adds.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import queue
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.discover import InputFile
from analyzer.errors import StoreError
from parsers.inputs import GZIP_MAGIC, GunzipStream, InputKind
from parsers.nccl_log import JobLogParser
from parsers.schema import arrow_schema
from parsers.timeline import TimelineParser

_QUEUE_DEPTH = 4  # batches in flight between the parsing and the writing thread
_PARQUET = {"compression": "zstd", "compression_level": 1}
TMP_PREFIX = ".tmp-"


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class _HashingReader:
    """A raw file that hashes every byte read through it (in a thread) and counts them.

    hashlib releases the GIL on large buffers, so hashing in its own thread takes it
    off the parsing thread's path (0.6 s per GB here): the parser hands over a copy of
    each block it reads.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.pos = 0
        self._sha = hashlib.sha256()
        self._blocks: queue.Queue[bytes | None] = queue.Queue(maxsize=8)
        self._thread = threading.Thread(target=self._hash, name="hvd-analyze-sha256", daemon=True)
        self._thread.start()

    def _hash(self) -> None:
        while (block := self._blocks.get()) is not None:
            self._sha.update(block)

    def readinto(self, b: Any) -> int:
        n = self.raw.readinto(b)  # type: ignore[attr-defined]
        if n:
            self._blocks.put(bytes(memoryview(b)[:n]))
            self.pos += n
        return n or 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        if data:
            self._blocks.put(data)
            self.pos += len(data)
        return data

    def readable(self) -> bool:
        return True

    def hexdigest(self) -> str:
        """Wait for the hashing thread and return the sha256 of everything read."""
        self.finish()
        return self._sha.hexdigest()

    def finish(self) -> None:
        if self._thread.is_alive():
            self._blocks.put(None)
            self._thread.join()

    def close(self) -> None:
        self.finish()
        self.raw.close()



def write_input(root: Path, item: InputFile, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Parse one input into its partitions under ``root/tables`` and return its manifest entry
    (the manifest itself is not touched: the caller adds the entry). Safe to run in another
    process or on a Dask worker sharing the folder: the partitions are written into a
    uniquely named hidden folder and renamed to ``input_id=<id>`` once complete."""
    if item.kind not in (InputKind.HOROVOD_TIMELINE, InputKind.JOB_LOG):  # pragma: no cover
        raise StoreError(f"{item.path}: no parser for input kind {item.kind}")
    tmp_dir = f"{TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
    writers: dict[str, pq.ParquetWriter] = {}
    rows: dict[str, int] = {}
    with open(item.path, "rb") as raw_file:
        gz = raw_file.read(2) == GZIP_MAGIC
        raw_file.seek(0)
        raw = _HashingReader(raw_file)
        stream: Any = GunzipStream(raw) if gz else raw  # type: ignore[arg-type]
        parser: TimelineParser | JobLogParser
        if item.kind is InputKind.JOB_LOG:
            parser = JobLogParser(item.path, display_name=str(item.path))
            batches: Iterator[tuple[str, pa.Table]] = iter(parser.parse(stream).items())  # type: ignore[arg-type]
        else:
            parser = TimelineParser(item.path, display_name=str(item.path))
            batches = _in_background(parser.batches(stream))
        last = 0
        complete = False
        try:
            for name, batch in batches:
                _write(root, writers, name, tmp_dir, batch)
                rows[name] = rows.get(name, 0) + batch.num_rows
                if progress and raw.pos > last:
                    progress(raw.pos - last)
                    last = raw.pos
            tail = [("tensors", parser.tensors_table())] if isinstance(parser, TimelineParser) else []
            for name, table in (*tail, ("parse_issues", _issues_table(parser.sink.issues))):
                if table.num_rows or name == "parse_issues":  # a clean file has an empty issues table
                    _write(root, writers, name, tmp_dir, table)
                    rows[name] = table.num_rows
            complete = True
        finally:
            raw.finish()
            for w in writers.values():
                w.close()
            if not complete:  # a parser or write error: leave no partial partition behind
                for name in writers:
                    shutil.rmtree(root / "tables" / name / tmp_dir, ignore_errors=True)
        if progress and raw.pos > last:
            progress(raw.pos - last)
    sha = raw.hexdigest()
    input_id = sha[:16]
    for name in writers:
        final = root / "tables" / name / f"input_id={input_id}"
        if final.exists():  # left by an interrupted ingest of the same bytes
            shutil.rmtree(final)
        os.replace(root / "tables" / name / tmp_dir, final)
    return {
        "id": input_id, "path": str(item.path), "paths": [str(item.path)], "size": item.size,
        "sha256": sha, "kind": item.kind.value, "compressed": item.compressed, "ingested_at": now(),
        "tables": sorted(writers), "rows": rows, "issues": parser.sink.counts(),
        **({"timeline": parser.info.to_dict()} if isinstance(parser, TimelineParser) else {"log": parser.info}),
    }


def _write(root: Path, writers: dict[str, pq.ParquetWriter], name: str, tmp_dir: str, batch: pa.Table) -> None:
    """Append to the input's part file; input_id is the partition folder, not a column."""
    w = writers.get(name)
    if w is None:
        folder = root / "tables" / name / tmp_dir
        folder.mkdir(parents=True, exist_ok=True)
        schema = file_schema(name)
        # Dictionary-encode only the dictionary columns: trying it on high-cardinality
        # integers (ids, timestamps, offsets) costs more than it saves (measured: 2.4x slower).
        dict_cols = [f.name for f in schema if pa.types.is_dictionary(f.type)]
        w = writers[name] = pq.ParquetWriter(folder / "part-0.parquet", schema, use_dictionary=dict_cols,
                                             **_PARQUET)
    w.write_table(batch.drop_columns(["input_id"]) if "input_id" in batch.column_names else batch)


def _in_background(batches: Iterator[tuple[str, pa.Table]]) -> Iterator[tuple[str, pa.Table]]:
    """Run a batch generator in a thread, ``_QUEUE_DEPTH`` batches ahead of the consumer.

    The parser's compiled kernel and pyarrow's Parquet writer both release the GIL, so
    parsing the next chunk overlaps compressing and writing the previous one. Errors
    raised in the thread are re-raised here, in the consumer.
    """
    q: queue.Queue[tuple[str, pa.Table] | BaseException | None] = queue.Queue(maxsize=_QUEUE_DEPTH)
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
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
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
    schema = arrow_schema(name)
    return schema.remove(schema.get_field_index("input_id"))


def _issues_table(issues: list[Any]) -> pa.Table:
    n = len(issues)
    return pa.Table.from_arrays(
        [
            pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([""])),  # set by the store
            pa.array([i.file for i in issues], pa.string()),
            pa.array([i.byte_offset for i in issues], pa.int64()),
            pa.array([i.severity.value for i in issues], pa.string()).dictionary_encode(),
            pa.array([i.code for i in issues], pa.string()).dictionary_encode(),
            pa.array([i.message for i in issues], pa.string()),
            pa.array([i.count for i in issues], pa.int64()),
        ],
        schema=arrow_schema("parse_issues"),
    )
