"""Per-process state of an NCCL log and the Arrow tables built from the parser's state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from parsers.issues import IssueSeverity
from parsers.nccl.messages import Version, classify
from parsers.nccl.rows import BareVersion, CollCounter, CommRankRow, EnvRow, ExitRow, StallRow, VersionRow
from parsers.schema import arrow_schema

if TYPE_CHECKING:
    from parsers.nccl.parser import JobLogParser


WORDING_RECORDS = 40  # records of a process whose wording is checked (and more until one matches)


def _v(v: Version) -> str:
    return f"{v[0]}.{v[1]}.{v[2]}" if v[1] < 99 else f"{v[0]}.x"


@dataclass
class ProcessState:
    """What one NCCL process (host, pid) said about itself."""

    host: str | None
    pid: int | None
    first_line: int
    prefix: str | None
    last_line: int = 0
    devs: set[int] = field(default_factory=set)
    version: str | None = None
    version_source: str | None = None
    cuda: str | None = None
    wording: tuple[Version, Version] | None = None
    wording_checked: int = 0
    # what check_wording was given, as far as a continuation could need it (ProcessState.absorb)
    wording_log: list[tuple[Version, Version] | None] = field(default_factory=list)
    network: str | None = None
    bootstrap: str | None = None
    socket_ifs: list[str] = field(default_factory=list)
    ib_hcas: list[str] = field(default_factory=list)
    ib_none: bool = False
    verbs_missing: bool = False
    plugin: str | None = None
    gdr_disabled: bool = False
    records: int = 0
    warns: int = 0
    progress_line: int = 0  # last line showing init progress (network chosen, connection, Init COMPLETE)
    teardown_line: int = 0  # first line tearing a communicator down (Abort, Destroy, Revoke)
    conns: dict[tuple[str, str, str | None, bool], list[int]] = field(default_factory=dict)

    def wording_open(self) -> bool:
        """Whether the next record's wording is still worth checking: the first
        :data:`WORDING_RECORDS` records, then until one narrows the release range."""
        return self.wording is None or self.wording_checked < WORDING_RECORDS

    def check_wording(self, rng: tuple[Version, Version] | None) -> None:
        self.wording_checked += 1
        if rng is not None:
            self.narrow(rng)
        if rng is not None or self.wording_checked <= WORDING_RECORDS:  # later Nones change nothing
            self.wording_log.append(rng)

    def narrow(self, rng: tuple[Version, Version]) -> None:
        """Intersect the release range allowed by this process's wording (kept when disjoint:
        that is a mixed log, reported by the version-mismatch detector across processes)."""
        if self.wording is None:
            self.wording = rng
            return
        lo, hi = max(self.wording[0], rng[0]), min(self.wording[1], rng[1])
        if lo <= hi:
            self.wording = (lo, hi)

    def absorb(self, later: ProcessState, base: int) -> None:
        """Continue this state with ``later``: the same process as read from a later chunk of the
        file alone, whose line numbers count from ``base`` (:mod:`parsers.nccl.chunks`). The
        result is what reading both chunks in one pass gives."""
        self.last_line = max(self.last_line, later.last_line + base)
        self.records += later.records
        self.warns += later.warns
        self.devs |= later.devs
        if self.version is None and later.version is not None:  # the first INFO version line wins
            self.version, self.cuda, self.version_source = later.version, later.cuda, later.version_source
        for rng in later.wording_log:  # what a single pass would have checked of these records
            if self.wording_open():
                self.check_wording(rng)
        for name in ("network", "bootstrap", "plugin"):  # the last one said wins
            if getattr(later, name) is not None:
                setattr(self, name, getattr(later, name))
        _add_new(self.socket_ifs, later.socket_ifs)
        _add_new(self.ib_hcas, later.ib_hcas)
        self.ib_none |= later.ib_none
        self.verbs_missing |= later.verbs_missing
        self.gdr_disabled |= later.gdr_disabled
        if later.progress_line:
            self.progress_line = later.progress_line + base
        if later.teardown_line and not self.teardown_line:
            self.teardown_line = later.teardown_line + base
        for key, (n, first) in later.conns.items():
            c = self.conns.get(key)
            if c is None:
                self.conns[key] = [n, first + base]
            else:
                c[0] += n

    def shift(self, base: int) -> None:
        """Move the line numbers of a chunk's state to the lines of the whole file."""
        self.first_line += base
        self.last_line += base
        if self.progress_line:
            self.progress_line += base
        if self.teardown_line:
            self.teardown_line += base
        for c in self.conns.values():
            c[1] += base

    def add_conn(self, f: dict[str, Any], lineno: int) -> None:
        key = (f["kind"], f["detail"], f["net"], f["gdr"])
        c = self.conns.get(key)
        if c is None:
            self.conns[key] = [1, lineno]
        else:
            c[0] += 1

    def apply(self, kind: str, f: dict[str, Any]) -> None:
        if kind == "version":
            if self.version is None or self.version_source != "info":
                self.version, self.cuda, self.version_source = f["version"], f["cuda"], "info"
        elif kind == "bootstrap":
            self.bootstrap = f"{f['interface']}:{f['address']}"
        elif kind == "ib_using":
            _add_new(self.ib_hcas, f["hcas"])
        elif kind == "ib_none":
            self.ib_none = True
        elif kind == "socket_using":
            _add_new(self.socket_ifs, f["interfaces"])
        elif kind == "no_verbs":
            self.verbs_missing = True
        elif kind == "network":
            self.network = f["name"]
        elif kind == "plugin":
            text = f["text"]
            self.plugin = text.split("Using ", 1)[-1] if "NET/OFI" in text else text.split()[-1]
        elif kind == "gdr" and not f["enabled"]:
            self.gdr_disabled = True


def version_owner(procs: dict[tuple[str | None, int | None], ProcessState], outer: str) -> ProcessState | None:
    """The process that printed a bare version line: the one with the same launcher prefix,
    else the only process of the file."""
    if outer:
        same = [p for p in procs.values() if p.prefix == outer]
        if len(same) == 1:
            return same[0]
    if len(procs) == 1:
        return next(iter(procs.values()))
    return None


def bare_versions(
    procs: dict[tuple[str | None, int | None], ProcessState], bare: Sequence[BareVersion], info: Sequence[VersionRow]
) -> list[VersionRow]:
    """The rows of the bare version lines (``NCCL version X+cudaY``, printed by rank 0 only up to
    2.21), each attributed to the process that printed it when that is known. When the file
    shows one version only (one job), the processes that printed none get it too, with source
    ``job's version line``."""
    out = []
    for lineno, outer, msg in bare:
        fact = classify(msg)
        if fact is None:
            continue
        owner = version_owner(procs, outer.strip())
        if owner is not None and owner.version is None:
            owner.version, owner.cuda, owner.version_source = fact[1]["version"], fact[1]["cuda"], "bare line"
        host, pid = (owner.host, owner.pid) if owner else (None, None)
        out.append(VersionRow(host, pid, lineno, fact[1]["version"], fact[1]["cuda"], "bare line"))
    if len({r.version for r in (*out, *info)}) == 1 and out:
        for p in procs.values():
            if p.version is None:
                p.version, p.cuda, p.version_source = out[0].version, out[0].cuda, "job's version line"
    return out


def _add_new(items: list[str], new: list[str]) -> None:
    """Append the entries of ``new`` not yet in ``items``, keeping NCCL's order."""
    items += [x for x in dict.fromkeys(new) if x not in items]


def log_tables(p: JobLogParser) -> dict[str, pa.Table]:
    """The parser's state as declared tables (only the non-empty ones, plus nccl_processes
    when the file had NCCL records)."""
    procs = list(p.procs.values())
    cols: dict[str, dict[str, list[Any]]] = {}
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
            "wording_min": [_v(x.wording[0]) if x.wording else None for x in procs],
            "wording_max": [_v(x.wording[1]) if x.wording else None for x in procs],
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
    if p.comm_ranks:
        cols["nccl_comm_ranks"] = _columns(p.comm_ranks, CommRankRow._fields)
    if p.versions:
        cols["nccl_versions"] = _columns(p.versions, VersionRow._fields)
    if p.env:
        cols["nccl_env"] = _columns(p.env, EnvRow._fields)
    if p.failures.errors:
        names = [
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
        ]
        cols["nccl_errors"] = {n: [e[n] for e in p.failures.errors] for n in names}
    if p.colls:
        rows = [(*k, c.nranks, c.calls, c.first_opcount, c.last_opcount, c.last_line) for k, c in p.colls.items()]
        cols["nccl_collectives"] = _columns(
            rows, ("host", "pid", "comm", "op", "nranks", "calls", "first_opcount", "last_opcount", "last_line")
        )
    if p.watchdog:
        names = [
            "line",
            "rank",
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
        cols["watchdog_timeouts"] = {n: [w[n] for w in p.watchdog] for n in names}
    if p.stalls:
        cols["horovod_stalls"] = _columns(p.stalls, StallRow._fields)
    if p.exits:
        cols["worker_exits"] = _columns(p.exits, ExitRow._fields)
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
    out = {}
    for name, data in cols.items():
        schema = arrow_schema(name).remove(0)  # input_id is added by the store
        data = in_column_range(p, name, data, schema)
        out[name] = pa.table({f.name: pa.array(data[f.name], f.type) for f in schema}, schema=schema)
    return out


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


def _in_range(value: Any, limits: tuple[int, int]) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or limits[0] <= value <= limits[1]


def in_column_range(p: JobLogParser, name: str, data: dict[str, list[Any]], schema: pa.Schema) -> dict[str, list[Any]]:
    """``data`` with every number its column's type cannot hold left out: the field emptied where the
    column is nullable, an element dropped from a list, else the whole row dropped; each counted as a
    parse issue naming the first (a ``[3000000000]`` device, ``nranks 2147483648``, a pid over int64)."""
    drop: set[int] = set()
    bad = 0
    first: tuple[str, Any, int] | None = None
    for f in schema:
        limits = _INT_RANGES.get(f.type.value_type if pa.types.is_list(f.type) else f.type)
        if limits is None:
            continue
        column = data[f.name]
        for i, value in enumerate(column):
            if pa.types.is_list(f.type) and value is not None:
                kept = [v for v in value if _in_range(v, limits)]
                if len(kept) == len(value):
                    continue
                column[i] = kept
                wrong = next(v for v in value if not _in_range(v, limits))
            elif _in_range(value, limits):
                continue
            elif f.nullable:
                column[i], wrong = None, value
            else:
                drop.add(i)
                wrong = value
            bad += 1
            first = first or (f.name, wrong, i)
    if first is not None:
        column_name, value, row = first
        lines = data.get("line") or data.get("first_line")
        where = f" on line {lines[row]}" if lines and isinstance(lines[row], int) else ""
        p.sink.add(
            IssueSeverity.DATA_LOSS,
            "log.number_out_of_range",
            f"{bad} number(s) too large or too small for their column (first: {name}.{column_name} = {value}{where}): "
            "the field is left empty, or the record dropped where it cannot be",
            count=bad,
        )
    if drop:
        data = {k: [v for i, v in enumerate(col) if i not in drop] for k, col in data.items()}
    return data


def _columns(rows: Sequence[tuple[Any, ...]], names: tuple[str, ...]) -> dict[str, list[Any]]:
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


def fold_fast_colls(parser: JobLogParser) -> None:
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
