"""The rows a rank's trace gives, and the Arrow tables they make (declared in ``parsers/schema.py``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from parsers.arrow import ints, strings
from parsers.ranktrace.types import RankTraceFacts
from parsers.schema import arrow_schema as _declared


@dataclass(frozen=True, slots=True)
class StepRow:
    """One ``ProfilerStep#N`` of the rank: its span and what it spent on data, copies and collectives."""

    step: int
    start_us: int
    dur_us: int
    data_us: int
    h2d_us: int
    comm_us: int


@dataclass(frozen=True, slots=True)
class Collective:
    """One collective as the rank saw it (``order``: its place among the rank's collectives of its step
    and process group, by start)."""

    step: int | None
    order: int
    pg: str | None
    seq: int | None
    op: str
    dtype: str | None
    bytes: int | None
    enqueue_us: int | None
    start_us: int
    dur_us: int
    source: str
    lane: str


def arrow_schema(table: str, drop_input: bool) -> pa.Schema:
    """A declared table's schema; without ``input_id`` (the store adds it) when ``drop_input``."""
    schema = _declared(table)
    return pa.schema([f for f in schema if not (drop_input and f.name == "input_id")])


def _dict(values: Sequence[str | None]) -> pa.Array:
    return strings(values).dictionary_encode()


def _opt(values: Sequence[int | None]) -> pa.Array:
    arr = np.array([0 if v is None else v for v in values], np.int64)
    return ints(arr, np.array([v is None for v in values], np.bool_))


def build_tables(facts: RankTraceFacts, steps: Sequence[StepRow], coll: Sequence[Collective]) -> dict[str, pa.Table]:
    """``rank_traces`` (one row), ``rank_steps`` and ``rank_collectives`` of one trace."""
    rank = facts.rank
    trace = pa.Table.from_arrays(
        [
            _opt([rank]),
            strings([facts.rank_from]),
            _opt([facts.world_size]),
            strings([facts.backend]),
            strings([facts.host]),
            _opt([facts.pid]),
            strings([facts.worker]),
            strings([facts.trace_id]),
            _opt([facts.base_ns]),
            strings([facts.nccl_version]),
            strings([facts.device]),
            strings([json.dumps(facts.groups) if facts.groups else None]),
            strings([facts.source]),
            ints(np.array([facts.events], np.int64)),
        ],
        schema=arrow_schema("rank_traces", drop_input=True),
    )
    n = len(steps)
    step_table = pa.Table.from_arrays(
        [
            _opt([rank] * n),
            ints(np.array([s.step for s in steps], np.int64)),
            ints(np.array([s.start_us for s in steps], np.int64)),
            ints(np.array([s.dur_us for s in steps], np.int64)),
            ints(np.array([s.data_us for s in steps], np.int64)),
            ints(np.array([s.h2d_us for s in steps], np.int64)),
            ints(np.array([s.comm_us for s in steps], np.int64)),
        ],
        schema=arrow_schema("rank_steps", drop_input=True),
    )
    m = len(coll)
    coll_table = pa.Table.from_arrays(
        [
            _opt([rank] * m),
            _opt([c.step for c in coll]),
            ints(np.array([c.order for c in coll], np.int64)),
            _dict([c.pg for c in coll]),
            _opt([c.seq for c in coll]),
            _dict([c.op for c in coll]),
            _dict([c.dtype for c in coll]),
            _opt([c.bytes for c in coll]),
            _opt([c.enqueue_us for c in coll]),
            ints(np.array([c.start_us for c in coll], np.int64)),
            ints(np.array([c.dur_us for c in coll], np.int64)),
            _dict([c.source for c in coll]),
            _dict([c.lane for c in coll]),
        ],
        schema=arrow_schema("rank_collectives", drop_input=True),
    )
    return {"rank_traces": trace, "rank_steps": step_table, "rank_collectives": coll_table}
