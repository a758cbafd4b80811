"""Where a store's rows are: the part files of each table (or their held copies in memory), and
reading one input's rows out of them.

A part file holds one bucket's rows of one table (layout version 2 and 3: with an ``input_id``
column, shared by the bucket's inputs) or one input's (version 1: named by its folder). The
manifest lists which inputs a part holds; :func:`parts_of` groups them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from analyzer.errors import StoreError
from analyzer.store.held import HeldPart, HeldParts
from analyzer.store.manifest import ManifestEntry
from analyzer.store.parts import PART, check_strings, entry_folder, file_schema, read_part, reading, row_groups
from parsers import arrow as A
from parsers.schema import TABLES, arrow_schema

if TYPE_CHECKING:
    import pyarrow.compute as pc


@dataclass(frozen=True, slots=True)
class Part:
    """One part file of a table: its path, the ids of the listed inputs in it and its layout version
    (2: a bucket with an ``input_id`` column; 1: one input's folder)."""

    path: Path
    ids: list[str]
    version: int


def part_path(root: Path, name: str, entry: ManifestEntry) -> Path:
    """The Parquet file holding the rows of table ``name`` of input ``entry`` (a manifest entry)."""
    return root / "tables" / name / entry_folder(entry) / PART


def held_part(held: HeldParts | None, path: Path) -> HeldPart | None:
    return held.get(path) if held is not None else None


def parts_of(root: Path, entries: Sequence[ManifestEntry], name: str, held: HeldParts | None) -> list[Part]:
    """Each part file of table ``name`` among the inputs ``entries``.

    Raises:
        StoreError: an unknown table, or a part the manifest lists that is gone.
    """
    if name not in TABLES:
        raise StoreError(f"unknown table {name!r}; tables: {', '.join(TABLES)}")
    parts: dict[Path, tuple[list[str], int]] = {}
    for entry in entries:
        if name not in entry.get("tables", []):
            continue
        path = part_path(root, name, entry)
        if path not in parts:
            if not path.exists() and held_part(held, path) is None:
                raise StoreError(
                    f"{root}: table {name!r} of input {entry['path']} is missing ({path}); "
                    "repair the store with `hvd-analyze ingest --repair -o STORE`"
                )
            parts[path] = ([], 2 if entry.get("bucket") else 1)
        parts[path][0].append(entry["id"])
    return [Part(path, ids, version) for path, (ids, version) in parts.items()]


def whole_part(name: str, part: Part, held: HeldParts | None) -> pa.Table:
    """A part file with its ``input_id`` column (a version-1 file has one input, named by its folder)."""
    if (kept := held_part(held, part.path)) is not None:
        return kept.read(arrow_schema(name).names)
    if part.version == 2:
        return read_part(part.path, name, schema=arrow_schema(name))
    t = read_part(part.path, name, schema=file_schema(name))
    col = A.dictionary(np.zeros(t.num_rows, np.int32), part.ids)
    return t.add_column(0, arrow_schema(name).field("input_id"), col)


def input_rows(
    name: str,
    part: Part,
    input_id: str,
    held: HeldParts | None,
    columns: list[str] | None = None,
    where: pc.Expression | None = None,
) -> pa.Table:
    """``input_id``'s rows of the part (without ``input_id``), of ``columns``, for which ``where`` holds."""
    schema = file_schema(name)
    if part.version == 1:
        return read_part(part.path, name, schema=schema, columns=columns, filters=where)
    cols = columns if columns is not None else schema.names
    if len(part.ids) > 1:
        import pyarrow.compute as pc

        mine = pc.field("input_id") == input_id
        where = mine if where is None else where & mine
    if (kept := held_part(held, part.path)) is not None:
        return kept.read(cols, where)
    return read_part(part.path, name, columns=cols, filters=where)


def input_batches(
    name: str,
    part: Part,
    input_id: str,
    held: HeldParts | None,
    columns: list[str],
    batch_rows: int,
    between: tuple[str, int, int] | None,
) -> Iterator[pa.RecordBatch]:
    """``input_id``'s rows of the part as record batches of ``columns``, in file order (see
    :meth:`analyzer.store.run_store.RunStore.input_batches`)."""
    import pyarrow.compute as pc

    shared = part.version == 2 and len(part.ids) > 1
    extra = (["input_id"] if shared else []) + ([between[0]] if between else [])
    read = list(dict.fromkeys([*columns, *extra]))
    with reading(part.path, name, held):
        if (kept := held_part(held, part.path)) is not None:
            batches: Iterable[pa.RecordBatch] = kept.batches(read, batch_rows)
        else:
            import pyarrow.parquet as pq  # here: a store held in memory reads no file (20 ms)

            file = pq.ParquetFile(part.path, page_checksum_verification=True)
            groups = row_groups(file.metadata, *between) if between else None
            read_batches = file.iter_batches(batch_size=batch_rows, row_groups=groups, columns=read)
            batches = (check_strings(b) for b in read_batches)
        for b in batches:
            keep = pc.equal(b.column("input_id").cast(pa.string()), input_id) if shared else None
            if between:
                col = b.column(between[0])
                inside = pc.and_(pc.greater_equal(col, between[1]), pc.less_equal(col, between[2]))
                keep = inside if keep is None else pc.and_(keep, inside)
            yield b if keep is None else b.filter(keep).select(columns)
