"""The building blocks of the declared tables: a column's spec, a table's, and the ``input_id`` every
table starts with (:mod:`parsers.schema` declares the tables with them)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

STR_DICT = pa.dictionary(pa.int32(), pa.string())


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: pa.DataType
    nullable: bool
    doc: str
    unit: str = ""


@dataclass(frozen=True, slots=True)
class TableSpec:
    name: str
    doc: str
    columns: tuple[Column, ...]


def col(name: str, type_: pa.DataType, doc: str, *, null: bool = False, unit: str = "") -> Column:
    return Column(name, type_, null, doc, unit)


INPUT = col(
    "input_id",
    STR_DICT,
    "store id of the input file: first 16 hex digits of its sha256 "
    "(of its size and first 16 MB for inputs of 16 MB or more)",
)
