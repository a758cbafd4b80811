"""A job's per-rank traces, read from the store's tables into a :class:`~analyzer.ranktraces.model.RankTraceSet`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from analyzer.ranktraces.model import WAIT_SOURCES, Collectives, RankTrace, RankTraceSet

TABLES = ("rank_traces", "rank_steps", "rank_collectives")


def rank_trace_set(tables: Mapping[str, pa.Table], paths: Mapping[str, str], ids: Sequence[str]) -> RankTraceSet:
    """The traces of inputs ``ids`` (in this order: a rank traced twice keeps its first file's steps)."""
    wanted = pa.array(list(ids), pa.string())
    rows = {name: _of(tables[name], wanted) for name in TABLES}
    info = rows["rank_traces"].to_pylist()
    order = {i: n for n, i in enumerate(ids)}
    info.sort(key=lambda r: order.get(str(r["input_id"]), len(order)))
    traces: list[RankTrace] = []
    unranked: list[str] = []
    for r in info:
        iid = str(r["input_id"])
        if r["rank"] is None:
            unranked.append(paths.get(iid, iid))
            continue
        traces.append(
            RankTrace(
                int(r["rank"]),
                iid,
                paths.get(iid, iid),
                r["host"],
                r["pid"],
                r["world_size"],
                r["backend"],
                str(r["source"]),
                (r["base_ns"] or 0) / 1e3,
            )
        )
    traces, other_jobs = _one_world(traces)
    sources = {t.source for t in traces if t.source != "none"}
    source = _main_source(traces)
    kept, duplicates = _first_of_each(rows["rank_steps"], traces)
    steps = _of(rows["rank_steps"], kept)
    s_rank = np.asarray(steps["rank"].fill_null(-1), np.int64)
    s_step = np.asarray(steps["step"], np.int64)
    ranks = np.unique(np.array([t.rank for t in traces], np.int64))
    step_ids = np.unique(s_step)
    mats = {
        c: np.full((len(step_ids), len(ranks)), np.nan) for c in ("dur_us", "data_us", "h2d_us", "comm_us", "start_us")
    }
    si = np.searchsorted(step_ids, s_step)
    ri = np.searchsorted(ranks, s_rank)
    for c, m in mats.items():
        m[si, ri] = np.asarray(steps[c], np.float64)
    coll = _collectives(_of(rows["rank_collectives"], kept), source if len(sources) <= 1 else "mixed")
    return RankTraceSet(
        tuple(traces),
        ranks,
        step_ids,
        mats["dur_us"],
        mats["data_us"],
        mats["h2d_us"],
        mats["comm_us"],
        mats["start_us"],
        coll,
        source,
        tuple(duplicates),
        tuple(unranked),
        tuple(other_jobs),
    )


def _one_world(traces: list[RankTrace]) -> tuple[list[RankTrace], list[str]]:
    """The traces of one job: those of the world size most traces state (a trace that states none stays);
    the files of another world size are another job's, left out."""
    sizes: dict[int, int] = {}
    for t in traces:
        if t.world_size:
            sizes[t.world_size] = sizes.get(t.world_size, 0) + 1
    if len(sizes) < 2:
        return traces, []
    world = max(sorted(sizes), key=lambda w: sizes[w])
    return [t for t in traces if t.world_size in (None, world)], [
        t.file for t in traces if t.world_size not in (None, world)
    ]


def _of(table: pa.Table, ids: pa.Array) -> pa.Table:
    if table.num_rows == 0:
        return table
    return table.filter(pc.is_in(table["input_id"].cast(pa.string()), value_set=ids))


def _main_source(traces: Sequence[RankTrace]) -> str:
    """The evidence most ranks' traces hold (ranks with another are still read, their waits only if alike)."""
    count: dict[str, int] = {}
    for t in traces:
        count[t.source] = count.get(t.source, 0) + 1
    return max(sorted(count), key=lambda s: count[s]) if count else "none"


def _first_of_each(steps: pa.Table, traces: Sequence[RankTrace]) -> tuple[pa.Array, list[tuple[int, str]]]:
    """The inputs whose rows are read: each rank's files in the inputs' order, but a file holding a step its
    rank already has from an earlier file (a rank traced twice, or another job's) is left out whole; and
    the (rank, file) pairs left out. A schedule's ``repeat`` windows (other steps each) are all read."""
    cols = steps.select(["input_id", "step"]).to_pydict()
    rows: dict[str, list[int]] = {}
    for i, s in zip(cols["input_id"], cols["step"], strict=True):
        rows.setdefault(str(i), []).append(int(s))
    seen: set[tuple[int, int]] = set()
    kept: list[str] = []
    dup: list[tuple[int, str]] = []
    for t in traces:  # in the inputs' order
        mine = rows.get(t.input_id, [])
        if any((t.rank, s) in seen for s in mine):
            dup.append((t.rank, t.file))
            continue
        seen.update((t.rank, s) for s in mine)
        kept.append(t.input_id)
    return pa.array(kept, pa.string()), dup


def _collectives(table: pa.Table, source: str) -> Collectives:
    """The collectives of the kept inputs, each with its identity across ranks (:mod:`analyzer.ranktraces.model`)."""
    n = table.num_rows
    rank = np.asarray(table["rank"].fill_null(-1), np.int64) if n else np.empty(0, np.int64)
    step = np.asarray(table["step"].fill_null(-1), np.int64) if n else np.empty(0, np.int64)
    pg = table["pg"].cast(pa.string()).fill_null("").to_pylist() if n else []
    seq = table["seq"].to_pylist() if n else []
    order = table["order"].to_pylist() if n else []
    ids: dict[tuple[object, ...], int] = {}
    key = np.fromiter(
        (
            ids.setdefault(("seq", g, q) if q is not None else ("order", int(s), g, o), len(ids))
            for s, g, q, o in zip(step, pg, seq, order, strict=True)
        ),
        np.int64,
        len(step),
    )
    sources = set(table["source"].cast(pa.string()).to_pylist()) if n else set()
    return Collectives(
        rank=rank,
        step=step,
        key=key,
        op=np.asarray(table["op"].cast(pa.string()).to_pylist() if n else [], object),
        start_us=np.asarray(table["start_us"], np.int64) if n else np.empty(0, np.int64),
        dur_us=np.asarray(table["dur_us"], np.int64) if n else np.empty(0, np.int64),
        waits=bool(sources) and sources <= WAIT_SOURCES and len(sources) == 1 and source != "mixed",
    )
