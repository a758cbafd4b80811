"""The run store: a folder of Parquet tables plus ``manifest.json``.

Layout::

    STORE/manifest.json                      schema_version, tool version, inputs, skipped
    STORE/tables/<table>/input_id=<id>/part-0.parquet   one file per input and table

``input_id`` is the first 16 hex digits of the input's sha256, so ingesting the same
bytes twice (under any name) is a no-op. The folders are a hive-partitioned Parquet
dataset (``input_id`` is the partition key, not a stored column) that pyarrow, pandas,
DuckDB, Dask and Spark read as is. Each input is written into a hidden temporary folder
and renamed once complete; the manifest is replaced atomically last, so an interrupted
ingest leaves the store as it was before that input. Readers only see inputs listed in
the manifest.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import queue
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer import __version__
from analyzer.discover import InputFile, SkippedFile
from analyzer.errors import StoreError
from parsers.inputs import GZIP_MAGIC, GunzipStream, InputKind
from parsers.nccl_log import JobLogParser
from parsers.schema import SCHEMA_VERSION, TABLES, arrow_schema, validate
from parsers.timeline import TimelineParser

MANIFEST = "manifest.json"
#: schema versions this version of hvd-analyze can read
READABLE_SCHEMA_VERSIONS = frozenset({1})
_PARQUET = {"compression": "zstd", "compression_level": 1}
_QUEUE_DEPTH = 4  # batches in flight between the parsing and the writing thread


def _now() -> str:
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


@dataclass
class IngestReport:
    added: list[dict[str, Any]] = field(default_factory=list)
    unchanged: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


class RunStore:
    """Open (or create) a store folder. All reads go through :meth:`table`."""

    def __init__(self, root: str | Path, manifest: dict[str, Any]) -> None:
        self.root = Path(root)
        self.manifest = manifest
        self._cache: dict[str, pa.Table] = {}

    # -- opening ----------------------------------------------------------------------
    @classmethod
    def open(cls, root: str | Path) -> RunStore:
        """Open an existing store.

        Raises:
            StoreError: no manifest, unreadable manifest, or a schema version this
                version cannot read (the message names the version needed).
        """
        root = Path(root)
        path = root / MANIFEST
        if not path.is_file():
            raise StoreError(f"{root}: not a run store (no {MANIFEST}); create one with `hvd-analyze ingest PATH -o {root}`")
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: unreadable manifest ({exc}); re-ingest the inputs into a new store") from exc
        version = manifest.get("schema_version")
        if version not in READABLE_SCHEMA_VERSIONS:
            readable = ", ".join(map(str, sorted(READABLE_SCHEMA_VERSIONS)))
            newer = isinstance(version, int) and version > max(READABLE_SCHEMA_VERSIONS)
            what = (f"a newer hvd-analyze (written by {manifest.get('tool_version', '?')}); upgrade hvd-analyze"
                    if newer else "an older hvd-analyze; re-ingest the inputs into a new store")
            raise StoreError(
                f"{root}: store schema version {version!r}, but hvd-analyze {__version__} reads version(s) {readable}: "
                f"it was written by {what}"
            )
        return cls(root, manifest)

    @classmethod
    def create_or_open(cls, root: str | Path) -> RunStore:
        root = Path(root)
        if (root / MANIFEST).exists():
            return cls.open(root)
        if root.exists() and any(root.iterdir()):
            raise StoreError(f"{root}: exists, is not empty and is not a run store; choose a new folder for -o")
        root.mkdir(parents=True, exist_ok=True)
        manifest = {
            "schema_version": SCHEMA_VERSION, "tool": "hvd-analyze", "tool_version": __version__,
            "created_at": _now(), "updated_at": _now(), "inputs": [], "skipped": [],
        }
        store = cls(root, manifest)
        store._write_manifest()
        return store

    # -- reading ----------------------------------------------------------------------
    @property
    def inputs(self) -> list[dict[str, Any]]:
        return list(self.manifest["inputs"])

    def has_table(self, name: str) -> bool:
        """True when at least one input produced ``name`` (possibly with zero rows)."""
        return bool(self._files(name))

    def table(self, name: str) -> pa.Table:
        """The whole table over every input, checked against its declared schema."""
        if name not in self._cache:
            files = self._files(name)
            if not files:
                data = arrow_schema(name).empty_table()
            else:
                parts = []
                for input_id, f in files:
                    t = pq.read_table(f, schema=_file_schema(name))
                    col = pa.DictionaryArray.from_arrays(pa.array(np.zeros(t.num_rows, np.int32)), pa.array([input_id]))
                    parts.append(t.add_column(0, arrow_schema(name).field("input_id"), col))
                data = pa.concat_tables(parts).unify_dictionaries().combine_chunks()
            self._cache[name] = validate(data, name)
        return self._cache[name]

    def input_table(self, name: str, input_id: str, columns: list[str] | None = None) -> pa.Table:
        """One input's rows of a table (without ``input_id``), reading only ``columns``.

        Analyses work per input; this avoids concatenating every input's partition.
        """
        files = dict(self._files(name))
        schema = _file_schema(name)
        if input_id not in files:
            return schema.empty_table() if columns is None else schema.empty_table().select(columns)
        return pq.read_table(files[input_id], schema=schema, columns=columns)

    def _files(self, name: str) -> list[tuple[str, Path]]:
        if name not in TABLES:
            raise StoreError(f"unknown table {name!r}; tables: {', '.join(TABLES)}")
        out = []
        for entry in self.manifest["inputs"]:
            if name in entry.get("tables", []):
                path = self.root / "tables" / name / f"input_id={entry['id']}" / "part-0.parquet"
                if not path.exists():
                    raise StoreError(f"{self.root}: table {name!r} of input {entry['path']} is missing ({path}); "
                                     "re-ingest that input into a new store")
                out.append((entry["id"], path))
        return out

    # -- writing ----------------------------------------------------------------------
    def ingest(self, inputs: list[InputFile], skipped: list[SkippedFile] | None = None,
               progress: Callable[[int], None] | None = None) -> IngestReport:
        """Parse every input into the store (idempotent per sha256)."""
        report = IngestReport(skipped=list(skipped or []))
        for item in inputs:
            entry = self._known(item)
            if entry is not None:
                if str(item.path) not in entry["paths"]:
                    entry["paths"].append(str(item.path))
                report.unchanged.append(entry)
                if progress:
                    progress(item.size)
                continue
            entry = self._ingest_one(item, progress)
            if (dup := self._by_sha(entry["sha256"])) is not None:  # same bytes, new name
                dup["paths"].append(str(item.path))
                report.unchanged.append(dup)
                continue
            self.manifest["inputs"].append(entry)
            report.added.append(entry)
            self._write_manifest()
        known = {s["path"] for s in self.manifest["skipped"]}
        self.manifest["skipped"] += [{"path": str(s.path), "reason": s.reason}
                                     for s in report.skipped if str(s.path) not in known]
        self._write_manifest()
        self._cache.clear()
        return report

    def _by_sha(self, sha: str) -> dict[str, Any] | None:
        return next((e for e in self.manifest["inputs"] if e["sha256"] == sha), None)

    def _known(self, item: InputFile) -> dict[str, Any] | None:
        """An entry with the same bytes, checked cheaply (size) then by full sha256."""
        same_size = [e for e in self.manifest["inputs"] if e["size"] == item.size]
        if not same_size:
            return None
        h = hashlib.sha256()
        with open(item.path, "rb") as f:
            while block := f.read(8 << 20):
                h.update(block)
        return self._by_sha(h.hexdigest())

    def _ingest_one(self, item: InputFile, progress: Callable[[int], None] | None) -> dict[str, Any]:
        if item.kind not in (InputKind.HOROVOD_TIMELINE, InputKind.JOB_LOG):  # pragma: no cover
            raise StoreError(f"{item.path}: no parser for input kind {item.kind}")
        tmp_dir = f".tmp-{os.getpid()}-{len(self.manifest['inputs'])}"
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
                    self._write(writers, name, tmp_dir, batch)
                    rows[name] = rows.get(name, 0) + batch.num_rows
                    if progress and raw.pos > last:
                        progress(raw.pos - last)
                        last = raw.pos
                tail = [("tensors", parser.tensors_table())] if isinstance(parser, TimelineParser) else []
                for name, table in (*tail, ("parse_issues", _issues_table(parser.sink.issues))):
                    if table.num_rows or name == "parse_issues":  # a clean file has an empty issues table
                        self._write(writers, name, tmp_dir, table)
                        rows[name] = table.num_rows
                complete = True
            finally:
                raw.finish()
                for w in writers.values():
                    w.close()
                if not complete:  # a parser or write error: leave no partial partition behind
                    for name in writers:
                        shutil.rmtree(self.root / "tables" / name / tmp_dir, ignore_errors=True)
            if progress and raw.pos > last:
                progress(raw.pos - last)
        sha = raw.hexdigest()
        input_id = sha[:16]
        for name in writers:
            final = self.root / "tables" / name / f"input_id={input_id}"
            if final.exists():  # left by an interrupted ingest of the same bytes
                shutil.rmtree(final)
            os.replace(self.root / "tables" / name / tmp_dir, final)
        return {
            "id": input_id, "path": str(item.path), "paths": [str(item.path)], "size": item.size,
            "sha256": sha, "kind": item.kind.value, "compressed": item.compressed, "ingested_at": _now(),
            "tables": sorted(writers), "rows": rows, "issues": parser.sink.counts(),
            **({"timeline": parser.info.to_dict()} if isinstance(parser, TimelineParser) else {"log": parser.info}),
        }

    def _write(self, writers: dict[str, pq.ParquetWriter], name: str, tmp_dir: str, batch: pa.Table) -> None:
        """Append to the input's part file; input_id is the partition folder, not a column."""
        w = writers.get(name)
        if w is None:
            folder = self.root / "tables" / name / tmp_dir
            folder.mkdir(parents=True, exist_ok=True)
            schema = _file_schema(name)
            # Dictionary-encode only the dictionary columns: trying it on high-cardinality
            # integers (ids, timestamps, offsets) costs more than it saves (measured: 2.4x slower).
            dict_cols = [f.name for f in schema if pa.types.is_dictionary(f.type)]
            w = writers[name] = pq.ParquetWriter(folder / "part-0.parquet", schema, use_dictionary=dict_cols,
                                                 **_PARQUET)
        w.write_table(batch.drop_columns(["input_id"]) if "input_id" in batch.column_names else batch)

    def _write_manifest(self) -> None:
        self.manifest["updated_at"] = _now()
        tmp = self.root / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(self.manifest, indent=1, sort_keys=False), encoding="utf-8")
        os.replace(tmp, self.root / MANIFEST)


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


def _file_schema(name: str) -> pa.Schema:
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


@contextmanager
def temporary_store() -> Iterator[RunStore]:
    """A store in a temporary folder, removed afterwards (``report PATH`` without a store)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hvd-analyze-") as d:
        yield RunStore.create_or_open(Path(d) / "store")
