"""The rows of a log's biggest tables, kept as Arrow record batches once there are many.

A long log keeps hundreds of thousands of communicator inits, settings and version lines (1 GB of the corpus's
lines: 0.8 M). As Python tuples they took ~200 B each (the tuple, its line's int, texts of its own), and when the
tables were built their Arrow copy came on top. :class:`KeptRows` holds the last rows as tuples and turns every
:data:`BATCH` of them into a record batch of the table's own types (~100 B a row): the table is then those batches,
put together without a copy. Numbers a column cannot hold are checked as each batch is made (:func:`checked`) and
said once, for the whole table.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

import pyarrow as pa

from parsers.arrow import column
from parsers.schema import arrow_schema

#: rows a batch holds: the tuples waiting are ~2 MB a table (65,536 held ~25 MB of three tables at 1 GB); a parse of
#: 100 MB of the corpus's lines took the same time with either (three interleaved pairs)
BATCH = 1 << 13
R = TypeVar("R", bound=NamedTuple)

#: the bare version lines' columns (no table of their own: :func:`parsers.nccl.process.bare_versions` reads them)
BARE_VERSIONS = pa.schema([pa.field("line", pa.int64(), nullable=False), ("outer", pa.string()), ("msg", pa.string())])
#: the range of each Arrow integer type a log column may have: a number outside it is input damage
_INT_RANGES = {
    pa.int8(): (-(1 << 7), (1 << 7) - 1),
    pa.int16(): (-(1 << 15), (1 << 15) - 1),
    pa.int32(): (-(1 << 31), (1 << 31) - 1),
    pa.int64(): (-(1 << 63), (1 << 63) - 1),
    pa.uint8(): (0, (1 << 8) - 1),
    pa.uint16(): (0, (1 << 16) - 1),
    pa.uint32(): (0, (1 << 32) - 1),
    pa.uint64(): (0, (1 << 64) - 1),
}


@dataclass(slots=True)
class OutOfRange:
    """The numbers of a table its columns could not hold: how many, and the first (column, value, line)."""

    count: int
    column: str
    value: Any
    line: int | None

    def add(self, other: OutOfRange | None) -> OutOfRange:
        if other is not None:
            self.count += other.count
        return self


def _in_range(value: Any, limits: tuple[int, int]) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or limits[0] <= value <= limits[1]


def _all_in_range(values: list[Any], limits: tuple[int, int], lists: bool) -> bool:
    """Whether every number of a column (of its lists' elements when ``lists``) is certainly in range: their least
    and greatest compared once (a batch's numbers are nearly always plain ints in range). False where that does not
    decide it (other types among them, one out of range): :func:`checked` then reads each value."""
    flat = [v for row in values if row is not None for v in row] if lists else [v for v in values if v is not None]
    if not flat:
        return True
    try:
        return bool(limits[0] <= min(flat) and max(flat) <= limits[1])
    except TypeError:  # texts or lists among the numbers: each is judged on its own
        return False


def checked(data: dict[str, list[Any]], schema: pa.Schema) -> tuple[dict[str, list[Any]], OutOfRange | None]:
    """``data`` with every number its column's type cannot hold left out: the field emptied where the column is
    nullable, an element dropped from a list, else the whole row dropped (a ``[3000000000]`` device, ``nranks
    2147483648``, a pid over int64); and what was left out."""
    drop: set[int] = set()
    bad = 0
    first: tuple[str, Any, int] | None = None
    for f in schema:
        limits = _INT_RANGES.get(f.type.value_type if pa.types.is_list(f.type) else f.type)
        if limits is None:
            continue
        values = data[f.name]
        if _all_in_range(values, limits, pa.types.is_list(f.type)):
            continue
        for i, value in enumerate(values):
            if pa.types.is_list(f.type) and value is not None:
                kept = [v for v in value if _in_range(v, limits)]
                if len(kept) == len(value):
                    continue
                values[i] = kept
                wrong = next(v for v in value if not _in_range(v, limits))
            elif _in_range(value, limits):
                continue
            elif f.nullable:
                values[i], wrong = None, value
            else:
                drop.add(i)
                wrong = value
            bad += 1
            first = first or (f.name, wrong, i)
    if first is None:
        return data, None
    name, value, row = first
    lines = data.get("line") or data.get("first_line")
    line = lines[row] if lines and isinstance(lines[row], int) else None
    if drop:
        data = {k: [v for i, v in enumerate(values) if i not in drop] for k, values in data.items()}
    return data, OutOfRange(bad, name, value, line)


def table_rows(row: type[R], table: str) -> KeptRows[R]:
    """Kept rows of the store's table ``table`` (its schema, without the ``input_id`` the store adds)."""
    return KeptRows(row, arrow_schema(table).remove(0))


class KeptRows(Generic[R]):
    """A table's rows in file order: record batches of the rows read first, then tuples (``row``'s type) of the
    last ones. Appended to, counted, iterated (as ``row`` tuples again), moved down a chunk's lines, made a table."""

    def __init__(self, row: type[R], schema: pa.Schema) -> None:
        if set(row._fields) != set(schema.names):
            raise ValueError(f"{row.__name__}'s fields {row._fields} are not the columns {schema.names}")
        self.row = row
        self.schema = schema
        self.rows: list[R] = []
        self.batches: list[pa.RecordBatch] = []
        self.in_batches = 0
        self.out_of_range: OutOfRange | None = None

    def append(self, row: R) -> None:
        self.rows.append(row)
        if len(self.rows) >= BATCH:
            self._flush()

    def extend(self, rows: Iterable[R]) -> None:
        for row in rows:
            self.append(row)

    def __len__(self) -> int:
        return self.in_batches + len(self.rows)

    def __bool__(self) -> bool:
        return bool(self.rows or self.batches)

    def __iter__(self) -> Iterator[R]:
        make = self.row._make
        for batch in self.batches:
            yield from map(make, zip(*(batch.column(name).to_pylist() for name in self.row._fields), strict=True))
        yield from self.rows

    def absorb(self, other: KeptRows[R], base: int) -> None:
        """Go on with ``other``'s rows (a later chunk's, its lines counted from 0), their lines moved by ``base``."""
        self._flush()
        at = self.schema.get_field_index("line")
        for batch in other.batches:
            lines = column([n + base for n in batch.column(at).to_pylist()], batch.schema.field(at).type)
            self.batches.append(batch.set_column(at, batch.schema.field(at), lines))
            self.in_batches += batch.num_rows
        if other.out_of_range is not None:
            moved = other.out_of_range
            line = None if moved.line is None else moved.line + base
            mine = OutOfRange(moved.count, moved.column, moved.value, line)
            self.out_of_range = mine if self.out_of_range is None else self.out_of_range.add(mine)
        self.extend(row._replace(line=row.line + base) for row in other.rows)  # type: ignore[attr-defined]

    def table(self) -> tuple[pa.Table, OutOfRange | None]:
        """The rows as one table of :attr:`schema` (the batches' memory, not a copy), and the numbers left out."""
        self._flush()
        return pa.Table.from_batches(self.batches, self.schema), self.out_of_range

    def _flush(self) -> None:
        if not self.rows:
            return
        data = {name: [r[i] for r in self.rows] for i, name in enumerate(self.row._fields)}
        data, wrong = checked(data, self.schema)
        if wrong is not None:
            self.out_of_range = wrong if self.out_of_range is None else self.out_of_range.add(wrong)
        arrays = [column(data[f.name], f.type) for f in self.schema]
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self.in_batches += self.batches[-1].num_rows
        self.rows = []
