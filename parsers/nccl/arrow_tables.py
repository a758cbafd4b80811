"""An NCCL / job log's parsed state as the store's declared Arrow tables.

What the tables are built from is :class:`LogState`: the parser's collected rows (a
:class:`parsers.nccl.parser.JobLogParser` is one), named here by their shape so that this module
does not import the parser that calls it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import pyarrow as pa

from parsers.arrow import column
from parsers.issues import IssueSeverity, IssueSink
from parsers.nccl import joblog, rows
from parsers.nccl.failures import Failures
from parsers.nccl.kept import KeptRows, OutOfRange, checked
from parsers.nccl.process import ProcessState, version_text
from parsers.nccl.rows import CollCounter, ExitRow, RasRow, StallRow
from parsers.schema import arrow_schema


class LogState(Protocol):
    """What a log's parser has collected (the attributes of :class:`parsers.nccl.parser.JobLogParser`)."""

    sink: IssueSink
    procs: dict[tuple[str | None, int | None], ProcessState]
    comm_ranks: KeptRows[rows.CommRankRow]
    env: KeptRows[rows.EnvRow]
    failures: Failures
    colls: dict[tuple[str | None, int | None, str, str], rows.CollCounter]
    _fast_colls: dict[tuple[str, str, str, str], rows.FastColl]
    watchdog: list[rows.WatchdogRow]
    exits: list[rows.ExitRow]
    ras: list[rows.RasRow]
    stalls: list[rows.StallRow]
    autotune: list[joblog.AutotuneRow]
    _autotune_layout: str | None
    versions: KeptRows[rows.VersionRow]
    counts: Counter[str]


def log_tables(p: LogState) -> dict[str, pa.Table]:
    """The parser's state as declared tables (only the non-empty ones, plus nccl_processes
    when the file had NCCL records)."""
    procs = list(p.procs.values())
    cols = _Built(p)
    if procs:
        cols["nccl_processes"] = {
            "host": [x.host for x in procs],
            "pid": [x.pid for x in procs],
            "first_line": [x.first_line for x in procs],
            "last_line": [x.last_line for x in procs],
            "prefix": [x.prefix for x in procs],
            "cuda_devs": [sorted(x.devs) for x in procs],
            "version": [x.version for x in procs],
            "version_source": [x.version_source for x in procs],
            "cuda": [x.cuda for x in procs],
            "wording_min": [version_text(x.wording[0]) if x.wording else None for x in procs],
            "wording_max": [version_text(x.wording[1]) if x.wording else None for x in procs],
            "network": [x.network for x in procs],
            "bootstrap_interface": [x.bootstrap for x in procs],
            "socket_interfaces": [x.socket_ifs for x in procs],
            "ib_hcas": [x.ib_hcas for x in procs],
            "ib_no_device": [x.ib_none for x in procs],
            "verbs_missing": [x.verbs_missing for x in procs],
            "plugin": [x.plugin for x in procs],
            "gdr_disabled": [x.gdr_disabled for x in procs],
            "records": [x.records for x in procs],
            "warns": [x.warns for x in procs],
        }
        conns = [(x.host, x.pid, *k, *v) for x in procs for k, v in x.conns.items()]
        if conns:
            cols["nccl_connections"] = _columns(
                conns, ("host", "pid", "kind", "detail", "net", "gdr", "connections", "first_line")
            )
    for name, kept in (("nccl_comm_ranks", p.comm_ranks), ("nccl_versions", p.versions), ("nccl_env", p.env)):
        if kept:
            table, wrong = kept.table()
            say_out_of_range(p, name, wrong)
            cols.tables[name] = table
    if errors := p.failures.errors:
        cols.in_slices(  # the column ``class`` is the row's ``cls`` (a Python keyword)
            "nccl_errors",
            (
                {column: [getattr(e, field) for e in errors[k : k + SLICE]] for column, field in ERROR_COLUMNS.items()}
                for k in range(0, len(errors), SLICE)
            ),
        )
    if p.colls:
        in_order = sorted(p.colls.items(), key=lambda kc: kc[1].first_line)  # as the file first shows each, by
        # whichever path its lines took (a block dense in COLL lines is read by one regex, others line by line)
        rows = [(*k, c.nranks, c.calls, c.first_opcount, c.last_opcount, c.last_line) for k, c in in_order]
        cols["nccl_collectives"] = _columns(
            rows, ("host", "pid", "comm", "op", "nranks", "calls", "first_opcount", "last_opcount", "last_line")
        )
    if p.watchdog:
        names = [
            "line",
            "rank",
            "global_rank",
            "seq",
            "op",
            "numel_in",
            "numel_out",
            "timeout_ms",
            "ran_ms",
            "pg",
            "last_enqueued",
            "last_completed",
        ]
        cols["watchdog_timeouts"] = {n: [getattr(w, n) for w in p.watchdog] for n in names}
    if p.stalls:
        cols["horovod_stalls"] = _columns(p.stalls, StallRow._fields)
    if p.exits:
        cols["worker_exits"] = _columns(p.exits, ExitRow._fields)
    if p.ras:
        cols["nccl_ras"] = _columns(p.ras, RasRow._fields)
    if p.autotune:
        layout = p._autotune_layout
        cols["autotune"] = {
            "line": [r.line for r in p.autotune],
            "layout": [layout] * len(p.autotune),
            **{
                n: [getattr(r, n) for r in p.autotune]
                for n in (
                    "hierarchical_allreduce",
                    "hierarchical_allgather",
                    "torus_allreduce",
                    "cache_enabled",
                    "cycle_time_ms",
                    "fusion_threshold_mb",
                    "score",
                )
            },
        }
    return cols.tables


#: rows of ``nccl_errors`` made into a record batch at a time
SLICE = 1 << 14
#: the ``nccl_errors`` columns and the :class:`~parsers.nccl.rows.ErrorRow` fields they hold
ERROR_COLUMNS = {
    name: "cls" if name == "class" else name
    for name in (
        "host",
        "pid",
        "tid",
        "line",
        "level",
        "class",
        "src",
        "message",
        "chain",
        "result_code",
        "remediation",
        "time",
        "consequence",
        "unconfirmed",
    )
}


class _Built:
    """The tables, each converted to Arrow as its columns are set: besides the Arrow tables, one table's
    Python lists at most are held at a time (1 GB of the corpus's lines: a 589 MB peak instead of 637)."""

    def __init__(self, p: LogState) -> None:
        self.p = p
        self.tables: dict[str, pa.Table] = {}

    def __setitem__(self, name: str, data: dict[str, list[Any]]) -> None:
        self.in_slices(name, (data,))

    def in_slices(self, name: str, slices: Iterable[dict[str, list[Any]]]) -> None:
        """The table ``name`` of the columns of each of ``slices`` in turn: only one slice's Python lists and their
        text's copies are held at a time (the ``nccl_errors`` of 1 GB of real lines, in one: 75 MB over its 52)."""
        schema = arrow_schema(name).remove(0)  # input_id is added by the store
        batches = []
        out_of_range: OutOfRange | None = None
        for data in slices:
            data, wrong = checked(data, schema)
            out_of_range = wrong if out_of_range is None else out_of_range.add(wrong)
            # built from buffers, not by pa.array: its first call imports pandas (~50 MB, ~0.45 s) in a process that
            # never uses it (an ingest's worker)
            batches.append(pa.record_batch([column(data[f.name], f.type) for f in schema], schema=schema))
        say_out_of_range(self.p, name, out_of_range)
        self.tables[name] = pa.Table.from_batches(batches, schema)


def say_out_of_range(p: LogState, name: str, wrong: OutOfRange | None) -> None:
    """The parse issue of the numbers table ``name`` could not hold (:func:`parsers.nccl.kept.checked`)."""
    if wrong is None:
        return
    where = f" on line {wrong.line}" if wrong.line is not None else ""
    p.sink.add(
        IssueSeverity.DATA_LOSS,
        "log.number_out_of_range",
        f"{wrong.count} number(s) too large or too small for their column (first: {name}.{wrong.column} = "
        f"{wrong.value}{where}): the field is left empty, or the record dropped where it cannot be",
        count=wrong.count,
    )


def _columns(rows: Sequence[tuple[Any, ...]], names: tuple[str, ...]) -> dict[str, list[Any]]:
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


def fold_fast_colls(parser: LogState) -> None:
    """Merge the COLL lines the parser's block regex read into its processes and collectives."""
    for (host, pid_s, comm, op), fc in parser._fast_colls.items():
        calls, last_line, first_line, outer = fc.calls, fc.last_line, fc.first_line, fc.outer
        pid = int(pid_s)
        p = parser.procs.get((host, pid))
        if p is None:
            p = parser.procs[(host, pid)] = ProcessState(host, pid, first_line, outer.strip() or None)
        p.first_line = min(p.first_line, first_line)
        p.last_line = max(p.last_line, last_line)
        p.records += calls
        p.devs.add(int(fc.dev))
        parser.counts["records"] += calls
        key = (host, pid, comm, op)
        old = parser.colls.get(key)
        first, last = int(fc.first_opcount, 16), int(fc.last_opcount, 16)
        if old is None:
            parser.colls[key] = CollCounter(int(fc.nranks), calls, first, last, last_line, first_line)
        else:  # the same communicator also went through the careful path (merged lines)
            old.calls += calls
            if last_line > old.last_line:
                old.last_opcount, old.last_line = last, last_line
            if first_line < old.first_line:
                old.first_opcount, old.first_line = first, first_line
    parser._fast_colls.clear()
