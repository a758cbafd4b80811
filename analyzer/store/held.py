"""Parts held in memory: a temporary store whose tables live no longer than the process
(``report FILE``) neither encodes them as Parquet nor reads them back.

While a store holds its parts (:class:`HeldParts`), every part this process writes to it
(:func:`analyzer.store.parts.write_part`) is a :class:`HeldPart`, the Arrow batches themselves,
instead of a Parquet file. Its folder is still made, and renamed when the bucket is published,
so the store's layout, its manifest and every check on them stay as they are; a part written by
a worker process (small inputs parsed on a process pool) is a Parquet file as usual, and the
store reads each part from where it is (:class:`analyzer.store.run_store.RunStore`).

Measured on the 1 GB bench timeline: its ingest 1.50-1.67 -> 1.28-1.30 s (the Parquet encoding
was a sixth of its CPU), and the analysis reads its spans and ticks without decoding them:
``report FILE`` 3.51 -> 2.88 s (medians of 5 interleaved runs). The price is memory: ~0.8 bytes
of tables per byte of timeline, held until the report is written (peak 1.30 -> 1.77 GB), so
``report`` holds them only within its memory budget (:func:`fits`), and of ``ticks`` and
``spans`` only the columns it reads (~0.6 bytes per byte; for the ticks' alone, peak 1.67 ->
1.50 GB and 0.16 s less: fresh memory costs this project's VM 0.5-0.8 CPU-seconds per GB).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from analyzer.errors import StoreError
from parsers.inputs import INFLATE_FLOOR, INFLATE_RATIO, gzip_isize
from parsers.schema import arrow_schema

if TYPE_CHECKING:
    import pyarrow.compute as pc

    from analyzer.store.discovery import InputFile

#: bytes a held store's report takes per byte of input (its tables ~0.8 and the analysis ~1.2, the
#: 1 GB bench timeline's figures), and before any input (interpreter, pandas, pyarrow)
HELD_BYTES_PER_INPUT_BYTE = 2.0
BASELINE_BYTES = 450 << 20
#: a compressed input's bytes once inflated, as guessed before reading it (timelines and logs
#: compress ~10x with gzip)
INFLATED_PER_COMPRESSED_BYTE = 10


class HeldPart:
    """One part held in memory: the writer's interface (:meth:`write_table`, :meth:`close`) and
    what a reader asks of a part file. ``schema``: the columns it keeps, those of the table
    ``name`` or some of them."""

    def __init__(self, schema: pa.Schema, name: str = "") -> None:
        self.schema = schema
        self.name = name
        self._batches: list[pa.Table] = []

    def write_table(self, table: pa.Table) -> None:
        if table.column_names != self.schema.names:  # a batch of every column, for a part of some
            table = table.select(self.schema.names)
        self._batches.append(_unique_dictionaries(table))

    def close(self) -> None:
        """Nothing to flush: the batches are the part."""

    def table(self) -> pa.Table:
        """Every row, in the order written."""
        if len(self._batches) != 1:
            self._batches = [pa.concat_tables(self._batches) if self._batches else self.schema.empty_table()]
        return self._batches[0]

    def replace(self, table: pa.Table) -> None:
        self._batches = [table]

    @property
    def nbytes(self) -> int:
        """The bytes its rows take in memory."""
        return sum(t.nbytes for t in self._batches)

    def read(self, columns: list[str], where: pc.Expression | None = None) -> pa.Table:
        """``columns`` of the rows for which ``where`` holds (a Parquet file's read, in memory)."""
        self._check(columns)
        t = self.table()
        return (t if where is None else t.filter(where)).select(columns)

    def batches(self, columns: list[str], batch_rows: int) -> Iterable[pa.RecordBatch]:
        """``columns`` of every row, ``batch_rows`` rows at a time, in the order written."""
        self._check(columns)
        out: list[pa.RecordBatch] = self.table().select(columns).to_batches(max_chunksize=batch_rows)
        return out

    def _check(self, columns: Sequence[str]) -> None:
        missing = [c for c in columns if c not in self.schema.names]
        if missing:  # a reader the projection (:func:`holding`) does not know of: a bug, never bad input
            raise StoreError(
                f"table {self.name!r} of this temporary store keeps only {', '.join(self.schema.names)}, "
                f"not {', '.join(missing)}: add them to the columns it keeps"
            )


def _unique_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with each dictionary holding a word once, as a Parquet file reads back (Arrow
    allows a word twice in a dictionary; pandas does not take such a column)."""
    import pyarrow.compute as pc

    for i, field in enumerate(table.schema):
        if not pa.types.is_dictionary(field.type):
            continue
        col = table.column(i)
        if any(len(c.dictionary) != pc.count_distinct(c.dictionary).as_py() for c in col.chunks):
            decoded = col.cast(field.type.value_type)
            table = table.set_column(i, field, pc.dictionary_encode(decoded).cast(field.type))
    return table


def inflated(item: InputFile) -> int:
    """The bytes an input is once inflated: a gzip file's trailer says (a 4.8 MB .json.gz of 1.4 GB was
    taken for 48 MB, held in memory and took 6.9 GB), at least the usual ratio's guess (the trailer wraps
    at 4 GiB), at most what decompression reads of it (:data:`parsers.inputs.INFLATE_RATIO`)."""
    if not item.compressed:
        return item.size
    guess = item.size * INFLATED_PER_COMPRESSED_BYTE
    stated = gzip_isize(item.path) or 0
    return min(max(guess, stated), max(INFLATE_FLOOR, item.size * INFLATE_RATIO))


def fits(inputs: Iterable[InputFile], budget: int) -> bool:
    """Whether a report of ``inputs`` may hold its store's tables in memory within ``budget`` bytes."""
    size = sum(inflated(i) for i in inputs)
    return BASELINE_BYTES + size * HELD_BYTES_PER_INPUT_BYTE <= budget


class HeldParts:
    """The parts of one store held in memory, owned by that store (:attr:`RunStore.held
    <analyzer.store.run_store.RunStore.held>`, set by :func:`~analyzer.store.run_store.temporary_store`)
    and handed to whatever writes or reads its parts in this process. ``keep``: the columns kept of
    the tables it names (and ``input_id``): those its reader reads (``report`` reads 4 of the 8
    columns of ``ticks``, 28 of its 40 bytes per tick). It does not travel to another process: it is
    pickled as None, so a worker process writes Parquet files, which the store reads from where they
    are."""

    def __init__(self, keep: Mapping[str, Sequence[str]] | None = None) -> None:
        self.keep: Mapping[str, Sequence[str]] = keep or {}
        self._parts: dict[Path, HeldPart] = {}

    def __reduce__(self) -> tuple[object, ...]:
        return (_not_held, ())

    def new_part(self, path: Path, name: str) -> HeldPart:
        """A held part for the part file ``path`` of table ``name``."""
        part = self._parts[path] = HeldPart(arrow_schema(name, self.keep.get(name)), name)
        return part

    @property
    def nbytes(self) -> int:
        """The bytes every part held takes in memory (what an analysis beside them has not got)."""
        return sum(p.nbytes for p in self._parts.values())

    def get(self, path: Path) -> HeldPart | None:
        """The held part of part file ``path``, if it is one."""
        return self._parts.get(path)

    def moved(self, src: Path, dest: Path) -> None:
        """The folder ``src`` was renamed ``dest``: its held parts move with it."""
        for path in [p for p in self._parts if p.parent == src]:
            self._parts[dest / path.name] = self._parts.pop(path)

    def dropped(self, folder: Path) -> None:
        """The folder ``folder`` was removed: so are its held parts."""
        for path in [p for p in self._parts if p.parent == folder]:
            del self._parts[path]


def _not_held() -> None:
    """What held parts are in another process: none."""


def kept(held: HeldParts | None) -> Mapping[str, Sequence[str]] | None:
    """The columns a store held by ``held`` keeps of the tables it names (None: not held), so that a
    parser builds no other (:class:`parsers.timeline.tables.TimelineNames`)."""
    return held.keep if held is not None else None
