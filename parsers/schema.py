"""Declared schemas of every table hvd-analyze produces: the single source of truth.

Each table is a list of :class:`Column` specs (name, Arrow type, nullability, unit and a
one-line meaning). Parsers build Arrow tables with :func:`arrow_schema`, the store checks
every table it writes and reads with :func:`validate`, and ``docs/schema.md`` is generated
from this module (``python -m parsers.schema > docs/schema.md``; a test keeps it current).

Times are integer microseconds on the trace's own clock (``*_us``); byte offsets point
into the (decompressed) input file so that evidence can cite a position.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pyarrow as pa

from parsers.columns import INPUT as _INPUT
from parsers.columns import STR_DICT, TableSpec
from parsers.columns import Column as Column
from parsers.columns import col as _c
from parsers.errors import SchemaError
from parsers.schema_logs import LOG_TABLES
from parsers.schema_ranks import RANK_TABLES

#: Bump when a table changes incompatibly; the store refuses versions it cannot read.
SCHEMA_VERSION = 3

TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        TableSpec(
            "spans",
            "Horovod timeline B/E pairs, one row per span (unclosed spans kept with closed=false).",
            (
                _INPUT,
                _c("span_id", pa.int64(), "sequence number of the span's B record in the file"),
                _c("pid", pa.int32(), "timeline pid (= tensor index, not a rank)"),
                _c("tensor", STR_DICT, "tensor name from the pid's process_name metadata", null=True),
                _c("name", STR_DICT, "span name, e.g. NEGOTIATE_ALLREDUCE, ALLREDUCE, QUEUE"),
                _c("kind", STR_DICT, "negotiate | op | activity"),
                _c("depth", pa.int16(), "nesting depth on the pid's stack (0 = top level)"),
                _c("start_us", pa.int64(), "B timestamp", unit="us"),
                _c("end_us", pa.int64(), "E timestamp (null if the E never came)", null=True, unit="us"),
                _c("dur_us", pa.int64(), "end_us - start_us", null=True, unit="us"),
                _c("closed", pa.bool_(), "false when the file ended before the span's E"),
                _c("parent_id", pa.int64(), "span_id of the enclosing span", null=True),
                _c("op_id", pa.int64(), "span_id of the enclosing top-level op (self for ops)", null=True),
                _c("dtype", STR_DICT, "dtype from the op's E args", null=True),
                _c("shape", pa.string(), "shape from the op's E args, e.g. [172, 4096]", null=True),
                _c("numel", pa.int64(), "number of elements of shape", null=True),
                _c("bytes", pa.int64(), "numel x dtype size", null=True, unit="bytes"),
                _c("start_offset", pa.int64(), "byte offset of the B record", unit="bytes"),
                _c("end_offset", pa.int64(), "byte offset of the E record", null=True, unit="bytes"),
            ),
        ),
        TableSpec(
            "ticks",
            "Per-rank 'ready' X events inside NEGOTIATE_* spans (the only per-rank data in a timeline).",
            (
                _INPUT,
                _c("pid", pa.int32(), "timeline pid (tensor index)"),
                _c("tensor", STR_DICT, "tensor name", null=True),
                _c("negotiation_id", pa.int64(), "span_id of the enclosing NEGOTIATE_* span", null=True),
                _c("rank", pa.int32(), "rank that became ready (process-set relative from 0.23)"),
                _c("ts_us", pa.int64(), "time rank 0 processed the rank's request", unit="us"),
                _c("order", pa.int32(), "0-based position of the tick within its negotiation"),
                _c("offset", pa.int64(), "byte offset of the X record", unit="bytes"),
            ),
        ),
        TableSpec(
            "markers",
            "Global instant events (CYCLE_START with HOROVOD_TIMELINE_MARK_CYCLES=1).",
            (
                _INPUT,
                _c("name", STR_DICT, "marker name"),
                _c("ts_us", pa.int64(), "marker timestamp", unit="us"),
                _c("offset", pa.int64(), "byte offset of the record", unit="bytes"),
            ),
        ),
        TableSpec(
            "tensors",
            "One row per timeline pid: the tensor it stands for and what was done with it.",
            (
                _INPUT,
                _c("pid", pa.int32(), "timeline pid"),
                _c("tensor", pa.string(), "tensor name (null if the metadata record was lost)", null=True),
                _c("op_type", STR_DICT, "most frequent top-level op (ALLREDUCE, BROADCAST, ...)", null=True),
                _c("negotiations", pa.int64(), "number of NEGOTIATE_* spans"),
                _c("ticked_negotiations", pa.int64(), "NEGOTIATE_* spans that carry rank ticks"),
                _c("ops", pa.int64(), "number of top-level op spans"),
                _c("first_ts_us", pa.int64(), "first B timestamp", null=True, unit="us"),
            ),
        ),
        TableSpec(
            "parse_issues",
            "Problems found while parsing, aggregated per file and code (first position kept).",
            (
                _INPUT,
                _c("file", pa.string(), "input path as given"),
                _c("byte_offset", pa.int64(), "position of the first occurrence", null=True, unit="bytes"),
                _c("severity", STR_DICT, "info | data_loss | error"),
                _c("code", STR_DICT, "stable issue code, e.g. timeline.truncated_record"),
                _c("message", pa.string(), "what happened and what was done about it"),
                _c("count", pa.int64(), "number of occurrences"),
            ),
        ),
    )
}

TABLES.update(LOG_TABLES)
TABLES.update(RANK_TABLES)


def arrow_schema(table: str, keep: Sequence[str] | None = None) -> pa.Schema:
    """The Arrow schema of a declared table (``keep``: of those columns only, and ``input_id``)."""
    cols = [c for c in TABLES[table].columns if keep is None or c.name == "input_id" or c.name in keep]
    return pa.schema([pa.field(c.name, c.type, nullable=c.nullable) for c in cols])


def validate(data: pa.Table, table: str) -> pa.Table:
    """Check ``data`` against the declared schema of ``table`` and return it.

    Raises:
        SchemaError: naming the table, the column, the expected and the found type.
    """
    if table not in TABLES:
        raise SchemaError(f"unknown table {table!r}; declared tables: {', '.join(sorted(TABLES))}")
    expected = arrow_schema(table)
    found = {f.name: f for f in data.schema}
    for field in expected:
        got = found.get(field.name)
        if got is None:
            raise SchemaError(f"table {table!r}: column {field.name!r} is missing")
        if not got.type.equals(field.type):
            raise SchemaError(f"table {table!r}: column {field.name!r} should be {field.type}, found {got.type}")
        if not field.nullable and data.column(field.name).null_count:
            raise SchemaError(f"table {table!r}: column {field.name!r} must not contain nulls")
    extra = set(found) - {f.name for f in expected}
    if extra:
        raise SchemaError(f"table {table!r}: undeclared columns {sorted(extra)}")
    return data


def render_markdown() -> str:
    """The text of ``docs/schema.md``."""
    lines = [
        "# Store tables",
        "",
        "Generated from `parsers/schema.py` by `python -m parsers.schema > docs/schema.md`;",
        "`tests/test_docs.py` fails when this file and the code disagree.",
        "",
        f"Schema version: **{SCHEMA_VERSION}**. Each table is a hive-partitioned Parquet dataset under",
        "`STORE/tables/<table>/run=<run>/bucket=<name>/part-0.parquet`: one file per bucket (one big input,",
        "or several small ones such as per-rank logs), whose `input_id` column names the input of each row;",
        "`run` and `bucket` are the partition keys (`run` names the store's run, so that the tables of many",
        "stores read as one dataset).",
        "",
    ]
    for spec in TABLES.values():
        lines += [
            f"## `{spec.name}`",
            "",
            spec.doc,
            "",
            "| column | type | null | unit | meaning |",
            "|---|---|---|---|---|",
        ]
        for c in spec.columns:
            type_name = "string (dictionary)" if c.type.equals(STR_DICT) else str(c.type)
            lines.append(f"| `{c.name}` | {type_name} | {'yes' if c.nullable else 'no'} | {c.unit} | {c.doc} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - exercised through tests/test_docs.py
    sys.stdout.write(render_markdown())
