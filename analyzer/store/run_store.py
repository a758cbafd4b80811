"""The run store: a folder of Parquet tables plus ``manifest.json``. A store holds one run.

Layout (schema version 3)::

    STORE/manifest.json                                        schema_version, run, tool version, inputs, skipped
    STORE/tables/<table>/run=<run>/bucket=<name>/part-0.parquet    one file per bucket and table

A bucket (:func:`analyzer.store.buckets.plan_buckets`) is one big input or several small ones
(per-rank logs of neighbouring hosts and ranks, up to 16 MB). Every file has an ``input_id``
column: the first 16 hex digits of the input's sha256 (of its size and first 16 MB for inputs
of 16 MB or more: it is needed before the first row is written). The manifest lists each
input's hash (sha256, or BLAKE3 from 16 MB: :mod:`analyzer.store.hashing`), which makes
ingesting the same bytes twice (under any name) a no-op, and its bucket. The folders are a
hive-partitioned dataset (keys ``run`` and ``bucket``) that pyarrow, pandas, DuckDB, Dask and
Spark read as is; the run's name (``ingest --run``, by default the folder's) makes the tables
of many stores one dataset (DuckDB: ``read_parquet('stores/*/tables/spans/*/*/*.parquet',
hive_partitioning=true)``). A bucket is written into hidden folders (:mod:`analyzer.store.parts`)
and renamed once complete; the manifest is replaced atomically as buckets complete, so an
interrupted ingest leaves a store listing what completed, and the next one removes the
leftovers and continues. Readers see only the inputs the manifest lists. Version-1
(``tables/<table>/input_id=<id>/``) and version-2 stores (``bucket=<name>/``, no run level) are
still read, and an ingest into one adds version-3 buckets. A temporary store may hold the parts
it writes in memory (:mod:`analyzer.store.held`).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from analyzer.errors import StoreError
from analyzer.store.buckets import Bucket, now, plan_buckets, write_bucket
from analyzer.store.discovery import InputFile, SkippedFile
from analyzer.store.hashing import EarlyHashes
from analyzer.store.held import HeldParts
from analyzer.store.local import Local
from analyzer.store.lock import locked
from analyzer.store.manifest import MANIFEST_NAME, KnownInputs, Manifest, ManifestEntry, checked, digest, write_manifest
from analyzer.store.part_files import Part, input_batches, input_rows, part_path, parts_of, whole_part
from analyzer.store.parts import (
    RUN_KEY,
    TMP_PREFIX,
    drop_input_rows,
    entry_folder,
    file_schema,
    safe_name,
)
from analyzer.version import __version__
from parsers.schema import SCHEMA_VERSION, arrow_schema, validate

if TYPE_CHECKING:  # loaded where rows are filtered: an ingest never needs it (40 ms)
    import pyarrow.compute as pc

MANIFEST = MANIFEST_NAME
#: schema versions this version of hvd-analyze can read
READABLE_SCHEMA_VERSIONS = frozenset({1, 2, 3})
MANIFEST_EVERY_S = 2.0  # during a long ingest the manifest is rewritten at most this often (and at the end)

#: runs :func:`analyzer.store.buckets.write_bucket` for each bucket somewhere (a process pool, Dask) and
#: yields ``(input, entry)`` as each bucket completes, in any order; reports the bytes parsed to
#: the progress callback (third argument) as it goes
#: parses the buckets into the store at the path (with what this process lends) and yields the entries
Runner = Callable[[Path, list[Bucket], Callable[[int], None] | None, Local], Iterable[tuple[InputFile, ManifestEntry]]]


@dataclass
class IngestReport:
    added: list[ManifestEntry] = field(default_factory=list)
    unchanged: list[ManifestEntry] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


class RunStore:
    """Open (or create) a store folder. All reads go through :meth:`table`."""

    def __init__(self, root: str | Path, manifest: Manifest) -> None:
        self.root = Path(root)
        self.manifest = manifest
        self.wait_for_writer = False  # a second writer waits for the lock instead of failing
        self.temporary = False  # made by temporary_store for one command: its path means nothing to a user
        #: the parts this process writes, held in memory instead of Parquet files (temporary_store's hold)
        self.held: HeldParts | None = None
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
            raise StoreError(
                f"{root}: not a run store (no {MANIFEST}); create one with `hvd-analyze ingest PATH -o {root}`"
            )
        try:
            manifest = checked(json.loads(path.read_text(encoding="utf-8")), path)
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: unreadable manifest ({exc}); re-ingest the inputs into a new store") from exc
        version = manifest.get("schema_version")
        if version not in READABLE_SCHEMA_VERSIONS:
            readable = ", ".join(map(str, sorted(READABLE_SCHEMA_VERSIONS)))
            newer = isinstance(version, int) and version > max(READABLE_SCHEMA_VERSIONS)
            what = (
                f"a newer hvd-analyze (written by {manifest.get('tool_version', '?')}); upgrade hvd-analyze"
                if newer
                else "an older hvd-analyze; re-ingest the inputs into a new store"
            )
            raise StoreError(
                f"{root}: store schema version {version!r}, but hvd-analyze {__version__} reads version(s) {readable}: "
                f"it was written by {what}"
            )
        return cls(root, manifest)

    @classmethod
    def create_or_open(cls, root: str | Path, run: str | None = None) -> RunStore:
        """Open the store at ``root``, or create it for run ``run`` (default: the folder's name).

        Raises:
            StoreError: ``root`` is a non-empty folder that is not a store, or a store of
                another run than ``run``, or ``run`` is not a usable name.
        """
        root = Path(root)
        if run is not None and safe_name(run) != run:
            raise StoreError(f"run name {run!r}: use letters, digits, '.', '_' and '-' only (it names a folder)")
        if (root / MANIFEST).exists():
            store = cls.open(root)
            if run is not None and store.manifest.get("run", run) != run:
                raise StoreError(
                    f"{root}: holds run {store.run!r}, not {run!r}; a store holds one run, "
                    "ingest this one into a new folder"
                )
            if run is not None:  # a version-1/2 store gets its name with its first version-3 bucket
                store.manifest.setdefault("run", run)
            return store
        if root.exists() and any(root.iterdir()):
            raise StoreError(f"{root}: exists, is not empty and is not a run store; choose a new folder for -o")
        root.mkdir(parents=True, exist_ok=True)
        manifest: Manifest = {
            "schema_version": SCHEMA_VERSION,
            "run": run or safe_name(root.resolve().name),
            "tool": "hvd-analyze",
            "tool_version": __version__,
            "created_at": now(),
            "updated_at": now(),
            "inputs": [],
            "skipped": [],
        }
        store = cls(root, manifest)
        store._write_manifest()
        return store

    # -- reading ----------------------------------------------------------------------
    @property
    def run(self) -> str:
        """The run's name: the ``run=`` partition of its tables (a version-1/2 store: its folder's name)."""
        return str(self.manifest.get("run") or safe_name(self.root.resolve().name))

    @property
    def inputs(self) -> list[ManifestEntry]:
        return list(self.manifest["inputs"])

    def part_path(self, name: str, entry: ManifestEntry) -> Path:
        """The Parquet file holding the rows of table ``name`` of input ``entry`` (a manifest entry)."""
        return part_path(self.root, name, entry)

    def has_table(self, name: str) -> bool:
        """True when at least one input produced ``name`` (possibly with zero rows)."""
        return bool(self._parts(name))

    def table(self, name: str) -> pa.Table:
        """The whole table over every input, checked against its declared schema."""
        if name not in self._cache:
            parts = [whole_part(name, part, self.held) for part in self._parts(name)]
            data = (
                pa.concat_tables(parts).unify_dictionaries().combine_chunks()
                if parts
                else arrow_schema(name).empty_table()
            )
            self._cache[name] = validate(data, name)
        return self._cache[name]

    def input_table(
        self, name: str, input_id: str, columns: list[str] | None = None, where: pc.Expression | None = None
    ) -> pa.Table:
        """One input's rows of a table (without ``input_id``), reading only ``columns``, and
        only the rows for which ``where`` holds when it is given (row groups whose statistics
        rule it out are not read: a window of a big timeline reads only its own).

        Analyses work per input; this avoids concatenating every input's partition.
        """
        part = self._part_of(name, input_id)
        if part is None:
            schema = file_schema(name)
            return schema.empty_table() if columns is None else schema.empty_table().select(columns)
        return input_rows(name, part, input_id, self.held, columns, where)

    def input_batches(
        self,
        name: str,
        input_id: str,
        columns: list[str],
        batch_rows: int = 1 << 20,
        between: tuple[str, int, int] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """One input's rows of a table as record batches of ``columns``, read one at a time and
        always in file order: what an analysis streams instead of holding the table (13 M ticks
        per GB of timeline). ``between=(column, lo, hi)`` keeps only the rows whose integer
        ``column`` is in ``[lo, hi]`` (not null) and skips the row groups whose statistics rule
        them all out: the ticks of a windowed timeline's first steps are the first row groups."""
        part = self._part_of(name, input_id)
        if part is not None:
            yield from input_batches(name, part, input_id, self.held, columns, batch_rows, between)

    def _part_of(self, name: str, input_id: str) -> Part | None:
        """The part file of table ``name`` that holds ``input_id``'s rows (None: it has none)."""
        return next((part for part in self._parts(name) if input_id in part.ids), None)

    def _parts(self, name: str) -> list[Part]:
        return parts_of(self.root, self.manifest["inputs"], name, self.held)

    # -- writing ----------------------------------------------------------------------
    @locked
    def ingest(
        self,
        inputs: list[InputFile],
        skipped: list[SkippedFile] | None = None,
        progress: Callable[[int], None] | None = None,
        runner: Runner | None = None,
        early: EarlyHashes | None = None,
    ) -> IngestReport:
        """Parse every input into the store (idempotent per bytes' hash), holding its writer lock
        (:mod:`analyzer.store.lock`: a second writer is refused) and reading its manifest anew.

        ``runner`` parses elsewhere (:mod:`analyzer.store.parallel`: processes, Dask); by default the
        inputs are parsed here, one after the other. Only this process writes the manifest:
        entries are added as inputs complete and the manifest is replaced atomically every
        :data:`MANIFEST_EVERY_S` and at the end, also when an input fails. An interrupted
        ingest therefore leaves a consistent store that lists what completed, and running the
        same ingest again continues with the rest. ``early``: the hashes the caller started as soon as
        it found the inputs (:class:`analyzer.store.hashing.EarlyHashes`).
        """
        local = Local(self.held, early)
        report = IngestReport(skipped=list(skipped or []))
        self._sweep()
        stored = KnownInputs(self.manifest["inputs"])
        ids = {e["id"] for e in self.manifest["inputs"]}
        todo = []
        for item in inputs:
            entry = stored.of_file(item.path, item.size, early)
            if entry is None:
                todo.append(item)
                continue
            if str(item.path) not in entry["paths"]:
                entry["paths"].append(str(item.path))
            report.unchanged.append(entry)
            if progress:
                progress(item.size)
        buckets = plan_buckets(todo, run=self.run)
        if buckets:  # version-3 buckets from here on (a version-1/2 store stays readable)
            self.manifest["schema_version"] = SCHEMA_VERSION
            self.manifest.setdefault("run", self.run)
        results = (
            runner(self.root, buckets, progress, local)
            if runner
            else (pair for b in buckets for pair in write_bucket(self.root, b, progress, local=local))
        )
        last = time.monotonic()
        try:
            for item, entry in results:
                if (dup := stored.same_bytes(entry)) is not None:  # same bytes, new name
                    if dup.get("bucket") != entry["bucket"]:  # parsed twice at once: drop the second copy
                        self._drop_rows(entry)
                    dup["paths"].append(str(item.path))
                    report.unchanged.append(dup)
                    continue
                if entry["id"] in ids:  # two big inputs with the same size and prefix
                    self._drop_rows(entry)
                    ((item, entry),) = write_bucket(
                        self.root,
                        Bucket((item,), stream=True, run=self.run),
                        input_id=digest(entry)[1][:16],
                        local=local,
                    )
                self.manifest["inputs"].append(entry)
                stored.add(entry)
                ids.add(entry["id"])
                report.added.append(entry)
                if time.monotonic() - last > MANIFEST_EVERY_S:
                    self._write_manifest()
                    last = time.monotonic()
        finally:
            known = {s["path"] for s in self.manifest["skipped"]}
            self.manifest["skipped"] += [
                {"path": str(s.path), "reason": s.reason} for s in report.skipped if str(s.path) not in known
            ]
            self._write_manifest()
            self._cache.clear()
        return report

    def reload(self) -> None:
        """Read the manifest anew (another process may have ingested since this store was opened)."""
        if (self.root / MANIFEST).is_file():
            self.manifest = RunStore.open(self.root).manifest

    def _sweep(self) -> None:
        """Remove what an interrupted ingest left: half-written folders and buckets the manifest
        does not list (written, but the ingest stopped before listing them). There is one
        writer per store, so nothing else is writing while this runs."""
        listed = {entry_folder(e) for e in self.manifest["inputs"]}
        for folder in (self.root / "tables").glob("*/*"):
            if folder.name.startswith(f"{RUN_KEY}="):  # version 3: run=<run>/bucket=<name>
                for bucket in folder.iterdir():
                    if f"{folder.name}/{bucket.name}" not in listed:
                        shutil.rmtree(bucket, ignore_errors=True)
                if not any(folder.iterdir()):
                    folder.rmdir()
            elif folder.name.startswith(TMP_PREFIX) or folder.name not in listed:
                shutil.rmtree(folder, ignore_errors=True)

    def _drop_rows(self, entry: ManifestEntry) -> None:
        """Remove the rows of an input the manifest will not list from the bucket they were
        written to (the whole bucket when it is that input's own)."""
        bucket = entry["bucket"]
        own = bucket == entry["id"] or bucket.startswith(f"{entry['id']}-")
        for name in entry["tables"]:
            path = self.part_path(name, entry)
            if own:
                shutil.rmtree(path.parent)
                if self.held is not None:
                    self.held.dropped(path.parent)
            else:
                drop_input_rows(path, name, entry["id"], self.held)

    def _write_manifest(self) -> None:
        write_manifest(self.root, self.manifest)


@contextmanager
def temporary_store(
    run: str | None = None, hold: bool = False, keep: Mapping[str, Sequence[str]] | None = None
) -> Iterator[RunStore]:
    """A store in a temporary folder, removed afterwards (``report PATH`` without a store); with
    ``hold``, the parts this process writes stay in memory instead, with only the columns that
    ``keep`` lists of its tables (:class:`analyzer.store.held.HeldParts`, owned by the store)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hvd-analyze-") as d:
        store = RunStore.create_or_open(Path(d) / "store", run=run)
        store.temporary = True
        store.held = HeldParts(keep) if hold else None
        try:
            yield store
        finally:
            store.held = None  # the tables go with the store
