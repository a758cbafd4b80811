"""Repairing a store whose Parquet parts are damaged (``hvd-analyze ingest --repair``).

A part can be cut (a full disk, a copy stopped half-way), emptied, replaced by another table's
file, or hold flipped bytes (its pages' checksums, or its strings' UTF-8, say so).
:func:`drop_damaged` finds every part the manifest lists that cannot be read as its table,
removes the buckets that hold one (a bucket's inputs share its parts) and their inputs' entries,
and returns those inputs' files that are still where they were ingested from, unchanged in size,
so that an ingest puts them back. Inputs whose files are gone are lost to the store, and said so.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from analyzer.errors import StoreError
from analyzer.store.discovery import InputFile, recognise
from analyzer.store.lock import writer_lock
from analyzer.store.manifest import ManifestEntry, write_manifest
from analyzer.store.parts import check_part, entry_folder
from analyzer.store.run_store import RunStore


@dataclass(slots=True)
class Repair:
    """What :func:`drop_damaged` found and did."""

    damaged: list[str] = field(default_factory=list)  # part files that could not be read, with why
    reingest: list[InputFile] = field(default_factory=list)  # inputs to ingest again
    lost: list[str] = field(default_factory=list)  # inputs dropped whose files are gone or changed


def _damage(path: Path, table: str) -> str | None:
    """Why the part at ``path`` cannot be read as ``table`` (None: it can): every page is read and
    checked as a report reads it, so what a report calls damaged, this finds."""
    if not path.is_file():
        return f"{path}: missing"
    try:
        check_part(path, table)
    except StoreError as exc:
        return str(exc).split("; the store cannot be read")[0]
    return None


def drop_damaged(store: RunStore) -> Repair:
    """Drop the damaged buckets of ``store`` and their inputs' entries (holding the writer lock)."""
    out = Repair()
    with writer_lock(store.root, wait=store.wait_for_writer):
        store.reload()
        bad: set[str] = set()
        seen: set[Path] = set()
        for entry in store.inputs:
            for table in entry["tables"]:
                path = store.part_path(table, entry)
                if path in seen:
                    continue
                seen.add(path)
                if why := _damage(path, table):
                    out.damaged.append(why)
                    bad.add(entry_folder(entry))
        if not bad:
            return out
        hit = [e for e in store.inputs if entry_folder(e) in bad]
        for entry in hit:
            for table in entry["tables"]:
                shutil.rmtree(store.part_path(table, entry).parent, ignore_errors=True)
            found = _still_there(entry)
            if found is None:
                out.lost.append(entry["path"])
            else:
                out.reingest.append(found)
        store.manifest["inputs"] = [e for e in store.inputs if entry_folder(e) not in bad]
        write_manifest(store.root, store.manifest)
    return out


def _still_there(entry: ManifestEntry) -> InputFile | None:
    """The input of ``entry`` at one of the paths it was ingested from, if one holds a file of its size
    (the ingest that follows compares the bytes' hash)."""
    for p in entry["paths"] or [entry["path"]]:
        path = Path(p)
        if path.is_file() and path.stat().st_size == entry["size"]:
            item = recognise(path)
            if isinstance(item, InputFile):
                return item
    return None
