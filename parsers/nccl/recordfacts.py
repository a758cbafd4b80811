"""An NCCL record's facts folded into the log's state, read by :class:`~parsers.nccl.parser.JobLogParser`
through this mixin: its process (devices, records, WARNs), the fact its INFO message states
(:func:`parsers.nccl.messages.classify`) dispatched by class, and the rows kept for the tables
(communicator inits, versions, settings, collectives, errors).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from parsers.nccl import rows
from parsers.nccl.failures import Failures
from parsers.nccl.kept import KeptRows
from parsers.nccl.messages import (
    NETWORK_PROGRESS,
    Chain,
    Coll,
    Conn,
    Env,
    Fact,
    Init,
    Network,
    NoVerbs,
    Retried,
    Teardown,
    VersionLine,
    classify,
)
from parsers.nccl.process import ProcessState
from parsers.nccl.records import Record
from parsers.nccl.wording import wording_range


class RecordFacts:
    """The parser's steps for one NCCL record (mixed into the job-log parser, which owns the state)."""

    procs: dict[tuple[str | None, int | None], ProcessState]
    comm_ranks: KeptRows[rows.CommRankRow]
    env: KeptRows[rows.EnvRow]
    versions: KeptRows[rows.VersionRow]
    failures: Failures
    colls: dict[tuple[str | None, int | None, str, str], rows.CollCounter]
    counts: Counter[str]
    _bare_versions: KeptRows[rows.BareVersion]

    def _proc(self, r: Record, lineno: int) -> ProcessState:
        key = (r.host, r.pid)
        p = self.procs.get(key)
        if p is None:
            p = self.procs[key] = ProcessState(r.host, r.pid, lineno, r.outer.strip() or None)
        p.last_line = lineno
        p.records += 1
        if r.dev is not None:
            p.devs.add(r.dev)
        return p

    def _record(self, r: Record, lineno: int) -> None:
        self.counts["records"] += 1
        if r.level == "VERSION":
            self._bare_versions.append(rows.BareVersion(lineno, r.outer, r.msg))
            return
        p = self._proc(r, lineno)
        if r.level == "WARN":
            p.warns += 1
            self.failures.warn(r, lineno)
            if isinstance(classify(r.msg), NoVerbs):  # libibverbs missing is a WARN up to 2.10
                p.verbs_missing = True
                p.progress_line = lineno  # NCCL went on to its own IB transport (and then sockets)
            return
        if r.level != "INFO":
            return
        self._info(p, r, lineno)

    def _info(self, p: ProcessState, r: Record, lineno: int) -> None:
        msg = r.msg
        fact = classify(msg)
        if p.wording_open():  # version-specific wording shows up early
            p.check_wording(wording_range(msg))
        self._fact(p, r, fact, lineno)

    def _fact(self, p: ProcessState, r: Record, fact: Fact | None, lineno: int) -> None:
        """What INFO record ``r`` of process ``p`` states (its message's ``fact``), kept: its step, by its class
        (a table: a chain of class patterns, twice over, cost ~0.3 us a record)."""
        if fact is None:
            return
        step = RECORD_STEPS.get(type(fact))
        if step is not None:
            step(self, p, r, fact, lineno)
        else:
            SETUP_STEPS.get(type(fact), RecordFacts._apply)(self, p, fact, lineno)

    def _coll(self, p: ProcessState, r: Record, fact: Coll, lineno: int) -> None:
        key = (r.host, r.pid, fact.comm, fact.op)
        c = self.colls.get(key)
        if c is None:
            self.colls[key] = rows.CollCounter(fact.nranks, 1, fact.opcount, fact.opcount, lineno, lineno)
        else:
            c.calls += 1
            c.last_opcount = fact.opcount
            c.last_line = lineno

    def _chain(self, p: ProcessState, r: Record, fact: Chain, lineno: int) -> None:
        self.failures.chain(r, fact, lineno)

    def _retried(self, p: ProcessState, r: Record, fact: Retried, lineno: int) -> None:
        self.failures.retried(r, fact, lineno)

    def _version(self, p: ProcessState, r: Record, fact: VersionLine, lineno: int) -> None:
        self.versions.append(rows.VersionRow(r.host, r.pid, lineno, fact.version, fact.cuda, "info"))
        p.apply(fact)

    def _env(self, p: ProcessState, r: Record, fact: Env, lineno: int) -> None:
        self.env.append(rows.EnvRow(r.host, r.pid, lineno, fact.var, fact.value))

    # a fact of the process alone, not of RECORD_STEPS: a connection, its setup, its teardown (parsers.nccl._lines
    # calls these without building the record)
    def _conn(self, p: ProcessState, fact: Conn, lineno: int) -> None:
        p.add_conn(fact, lineno)

    def _teardown(self, p: ProcessState, fact: Teardown, lineno: int) -> None:
        p.teardown_line = p.teardown_line or lineno

    def _progress(self, p: ProcessState, fact: Fact, lineno: int) -> None:
        """One of NETWORK_PROGRESS: NCCL went on probing."""
        p.progress_line = lineno
        if isinstance(fact, Network) and not p.network_line:
            p.network_line = lineno
        p.apply(fact)

    def _apply(self, p: ProcessState, fact: Fact, lineno: int) -> None:
        p.apply(fact)

    def _init(self, p: ProcessState, r: Record, f: Init, lineno: int) -> None:
        if f.phase == "COMPLETE":
            p.progress_line = lineno
        if f.phase is None and (f.cuda_dev is not None or f.api is not None):
            return  # a cut init line (NCCL 2.4+ always ends it with "- Init START|COMPLETE")
        phase = f.phase or "START"  # NCCL 2.3: "comm %p rank %d nranks %d" at start, "- COMPLETE" at the end
        self.comm_ranks.append(
            rows.CommRankRow(
                r.host, r.pid, lineno, f.api, f.comm, f.comm_id, f.rank, f.nranks, f.cuda_dev, f.bus_id, phase
            )
        )


#: the steps of the facts kept with their record's host, pid or thread (rows, counters, error chains), by class
RECORD_STEPS: dict[type, Callable[[RecordFacts, ProcessState, Record, Any, int], None]] = {
    Coll: RecordFacts._coll,
    Chain: RecordFacts._chain,
    Retried: RecordFacts._retried,
    Init: RecordFacts._init,
    VersionLine: RecordFacts._version,
    Env: RecordFacts._env,
}
#: the steps of the facts that change only their process, by class (the others: :meth:`RecordFacts._apply`)
SETUP_STEPS: dict[type, Callable[[RecordFacts, ProcessState, Any, int], None]] = {
    Conn: RecordFacts._conn,
    Teardown: RecordFacts._teardown,
    **dict.fromkeys(NETWORK_PROGRESS, RecordFacts._progress),
}
