"""A whole timeline parsed into Arrow tables in memory: for small files, tests and notebooks
(the store streams batches from :class:`~parsers.timeline.parser.TimelineParser` instead)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from parsers.issues import ParseIssue
from parsers.schema import arrow_schema
from parsers.timeline.facts import TimelineInfo
from parsers.timeline.parser import TimelineParser
from parsers.timeline.tokens import DEFAULT_CHUNK, RANGE_BYTES, RangeTask, TokenizedRange


@dataclass(frozen=True, slots=True)
class ParsedTimeline:
    tables: dict[str, pa.Table]
    info: TimelineInfo
    issues: list[ParseIssue]


def parse_timeline(
    path: str | Path,
    *,
    input_id: str = "",
    chunk_bytes: int = DEFAULT_CHUNK,
    range_bytes: int | None = None,
    tokenized: Callable[[list[RangeTask]], Iterable[TokenizedRange]] | None = None,
) -> ParsedTimeline:
    """Parse a whole timeline into in-memory tables (for small files and tests); in ranges
    (:meth:`TimelineParser.batches_in_ranges`) if ``range_bytes`` or ``tokenized`` is given."""
    parser = TimelineParser(path, input_id=input_id, chunk_bytes=chunk_bytes)
    parts: dict[str, list[pa.Table]] = {"spans": [], "ticks": [], "markers": []}
    ranged = range_bytes is not None or tokenized is not None
    batches = parser.batches_in_ranges(tokenized, range_bytes or RANGE_BYTES) if ranged else parser.batches()
    for name, table in batches:
        parts[name].append(table)
    tables = {
        name: (pa.concat_tables(ts).unify_dictionaries().combine_chunks() if ts else arrow_schema(name).empty_table())
        for name, ts in parts.items()
    }
    tables["tensors"] = parser.tensors_table()
    return ParsedTimeline(tables, parser.info, parser.issues)
