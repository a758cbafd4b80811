"""The run store: a folder of Parquet tables plus ``manifest.json``.

Layout::

    STORE/manifest.json                      schema_version, tool version, inputs, skipped
    STORE/tables/<table>/input_id=<id>/part-0.parquet   one file per input and table

``input_id`` is the first 16 hex digits of the input's sha256, so ingesting the same
bytes twice (under any name) is a no-op. The folders are a hive-partitioned Parquet
dataset (``input_id`` is the partition key, not a stored column) that pyarrow, pandas,
DuckDB, Dask and Spark read as is. Each input is written into a hidden temporary folder
(:mod:`analyzer.partition`, here or on a worker) and renamed once complete; the manifest is
replaced atomically as inputs complete, so an interrupted ingest leaves a store listing what
completed, and the next ingest sweeps the leftovers and continues. Readers only see inputs
listed in the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer import __version__
from analyzer.discover import InputFile, SkippedFile
from analyzer.errors import StoreError
from analyzer.partition import TMP_PREFIX, file_schema, now, write_input
from parsers.schema import SCHEMA_VERSION, TABLES, arrow_schema, validate

MANIFEST = "manifest.json"
#: schema versions this version of hvd-analyze can read
READABLE_SCHEMA_VERSIONS = frozenset({1})
MANIFEST_EVERY_S = 2.0  # during a long ingest the manifest is rewritten at most this often (and at the end)

#: runs :func:`analyzer.partition.write_input` for each input somewhere (a process pool, Dask) and
#: yields ``(input, entry)`` as each completes, in any order
Runner = Callable[[Path, list[InputFile]], Iterable[tuple[InputFile, dict[str, Any]]]]


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
            "created_at": now(), "updated_at": now(), "inputs": [], "skipped": [],
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
                    t = pq.read_table(f, schema=file_schema(name))
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
        schema = file_schema(name)
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
               progress: Callable[[int], None] | None = None, runner: Runner | None = None) -> IngestReport:
        """Parse every input into the store (idempotent per sha256).

        ``runner`` parses elsewhere (:mod:`analyzer.parallel`: processes, Dask); by default the
        inputs are parsed here, one after the other. Only this process writes the manifest:
        entries are added as inputs complete and the manifest is replaced atomically every
        :data:`MANIFEST_EVERY_S` and at the end, also when an input fails. An interrupted
        ingest therefore leaves a consistent store that lists what completed, and running the
        same ingest again continues with the rest.
        """
        report = IngestReport(skipped=list(skipped or []))
        self._sweep()
        todo = []
        for item in inputs:
            entry = self._known(item)
            if entry is None:
                todo.append(item)
                continue
            if str(item.path) not in entry["paths"]:
                entry["paths"].append(str(item.path))
            report.unchanged.append(entry)
            if progress:
                progress(item.size)
        results = runner(self.root, todo) if runner else ((i, write_input(self.root, i, progress)) for i in todo)
        last = time.monotonic()
        try:
            for item, entry in results:
                if runner and progress:
                    progress(item.size)
                if (dup := self._by_sha(entry["sha256"])) is not None:  # same bytes, new name
                    dup["paths"].append(str(item.path))
                    report.unchanged.append(dup)
                    continue
                self.manifest["inputs"].append(entry)
                report.added.append(entry)
                if time.monotonic() - last > MANIFEST_EVERY_S:
                    self._write_manifest()
                    last = time.monotonic()
        finally:
            known = {s["path"] for s in self.manifest["skipped"]}
            self.manifest["skipped"] += [{"path": str(s.path), "reason": s.reason}
                                         for s in report.skipped if str(s.path) not in known]
            self._write_manifest()
            self._cache.clear()
        return report

    def _sweep(self) -> None:
        """Remove partitions an interrupted ingest left half-written (one writer per store)."""
        for tmp in (self.root / "tables").glob(f"*/{TMP_PREFIX}*"):
            shutil.rmtree(tmp, ignore_errors=True)

    def _by_sha(self, sha: str) -> dict[str, Any] | None:
        return next((e for e in self.manifest["inputs"] if e["sha256"] == sha), None)

    def _known(self, item: InputFile) -> dict[str, Any] | None:
        """An entry with the same bytes, checked cheaply (size) then by full sha256."""
        if not any(e["size"] == item.size for e in self.manifest["inputs"]):
            return None
        h = hashlib.sha256()
        with open(item.path, "rb") as f:
            while block := f.read(8 << 20):
                h.update(block)
        return self._by_sha(h.hexdigest())

    def _write_manifest(self) -> None:
        self.manifest["updated_at"] = now()
        tmp = self.root / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(self.manifest, indent=1, sort_keys=False), encoding="utf-8")
        os.replace(tmp, self.root / MANIFEST)


@contextmanager
def temporary_store() -> Iterator[RunStore]:
    """A store in a temporary folder, removed afterwards (``report PATH`` without a store)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hvd-analyze-") as d:
        yield RunStore.create_or_open(Path(d) / "store")
