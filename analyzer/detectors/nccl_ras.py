"""``nccl.ras``: what NCCL's RAS report (``ncclras``, NCCL 2.24+) says of the job's processes and communicators.

Reading (``docs/formats/nccl-log.md`` §5, NCCL's ``src/ras/client_support.cc``):

- processes the RAS network could not get data from (``INCOMPLETE``: missing communicator data) or considers dead
  (``DEAD``), and ranks of a communicator whose data is missing: crashed, hung or cut off: critical;
- ranks that reported an initialization or asynchronous error (``ERROR``): critical;
- ranks of one communicator at different operation counts of a collective (``MISMATCH``): the smaller group is
  listed, behind or ahead of the others. RAS samples the counts while collectives run, so one operation apart in one
  report is how a healthy job looks too: said as such, with no advice. Two operations or more apart, ranks that
  launched none while others did, or the same ranks behind in every report of the file (``ncclras`` run again), is a
  straggler (or a rank stuck before its next collective): a warning that names them;
- ranks of a communicator with different status (some aborted, finalizing or still initializing): a warning;
- RAS's own queries timing out (``TIMEOUT``): the report may miss processes; said as such.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from analyzer.detectors._logs import listed, src
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel

CODE = "nccl.ras"
LOST_ADVICE = (
    "Read those processes' own logs and their nodes' kernel logs (the OOM killer, GPU Xid errors): a crashed process "
    "ended there; one alive but hung shows where in a stack dump (py-spy dump --pid P); a node cut off the network "
    "shows in its links."
)
BEHIND_ADVICE = (
    "Look at what the ranks behind do between collectives (their data loading, host and GPU load, a slower GPU or "
    "link); run ncclras again: the same ranks behind by a growing count are stuck, not slow."
)


@dataclass(frozen=True, slots=True)
class _Group:
    """Ranks of one communicator at one operation count of a collective, as one report counts them."""

    ops: int
    count: int
    ranks: tuple[int, ...]  # the listed ones
    words: tuple[str, ...]  # each listed rank as the finding says it: "12 (GPU 4, process 323032 on 10.137.190.124)"
    nodes: tuple[str, ...]


class RasReportDetector(LogDetector):
    name = "ras_report"
    code = CODE
    requires = ("nccl_ras",)
    why_required = "no job log with NCCL's RAS report (ncclras, NCCL 2.24+) was ingested"

    def check(self, model: NcclModel) -> list[Finding]:
        r = model.nccl_ras
        if r.empty:
            return []
        r = r.sort_values(["file", "line"])
        out = [*self._lost(r), *self._errors(r), *self._counts(r), *self._status(r)]
        timeouts = r[r["kind"] == "TIMEOUT"]
        if not timeouts.empty:
            first = timeouts.iloc[0]
            out.append(
                Finding(
                    code=CODE,
                    severity=Severity.INFO,
                    title="NCCL RAS: its own queries timed out while it gathered the report",
                    summary=f"{first['what'] or 'RAS reported communication timeouts'}: the report may miss "
                    "processes that were slow to answer.",
                    detector=self.name,
                    evidence=(Evidence(summary=str(first["what"]), sources=(src(first["file"], first["line"]),)),),
                    labels={"reading": "timeout"},
                )
            )
        return out

    def _lost(self, r: pd.DataFrame) -> Iterable[Finding]:
        entries = r[r["kind"].str.contains("INCOMPLETE|DEAD", regex=True)]
        lost = entries[entries["pid"].notna() | entries["rank"].notna()]
        told = entries[entries["comm"].isna() & entries["pid"].isna()].drop_duplicates(["file", "report", "kind"])
        counted = sum(_missing(str(x)) for x in told["what"])  # RAS lists the processes only when they are the few
        if lost.empty and not counted:
            return []
        dead = entries[entries["kind"].str.contains("DEAD")]
        processes = {
            (int(x.pid), x.node): f"process {int(x.pid)} on {x.node}" for x in lost.itertuples() if x.pid == x.pid
        }
        said = sorted(processes.values())
        ranks = sorted({f"{int(x.rank)} of {x.comm}" for x in lost.itertuples() if x.rank == x.rank and x.comm})
        n = max(len(said), counted)
        whom = f"{n} process(es)" if n else f"{len(ranks)} rank(s)"
        return [
            Finding(
                code=CODE,
                severity=Severity.CRITICAL,
                title=f"NCCL RAS: {whom} did not answer" + (" (considered dead)" if not dead.empty else ""),
                summary=f"NCCL's RAS could not get data from {whom}"
                + (f": {listed(said, 8)}" if said else "")
                + (f"; ranks missing: {listed(ranks, 8)}" if ranks else "")
                + ". A process that does not answer RAS crashed, hangs, or lost its network: the job waits for it.",
                detector=self.name,
                evidence=tuple(
                    Evidence(summary=f"{x.what}: {_where(x)}", sources=(src(x.file, x.line),))
                    for x in (lost if not lost.empty else told).head(8).itertuples()
                ),
                suggestions=(Suggestion(action=LOST_ADVICE),),
                hosts=_nodes(lost["node"]),
                labels={"reading": "lost"},
            )
        ]

    def _errors(self, r: pd.DataFrame) -> Iterable[Finding]:
        err = r[r["kind"].str.contains("ERROR") & r["state"].notna()]
        out = []
        for comm, rows in err.groupby("comm", sort=False, dropna=False):
            errors = sorted({str(x) for x in rows["state"]})
            listed_ranks = [_where(x) for x in rows.itertuples() if x.rank == x.rank]
            counts = [f"{int(x.ranks)} ranks reported {x.state}" for x in rows.itertuples() if x.ranks == x.ranks]
            out.append(
                self._stated(
                    rows,
                    Severity.CRITICAL,
                    f"NCCL RAS: ranks of communicator {comm} reported {listed(errors, 3)}",
                    "; ".join(counts + ([f"ranks {listed(listed_ranks, 8)}"] if listed_ranks else [])) + ".",
                    "error",
                )
            )
        return out

    def _counts(self, r: pd.DataFrame) -> Iterable[Finding]:
        counts = r[r["kind"].str.contains("MISMATCH") & r["coll"].notna() & r["ops"].notna()]
        out = []
        for (comm, coll), rows in counts.groupby(["comm", "coll"], sort=False):
            reports = [_groups(rep) for _, rep in rows.groupby(["file", "report"], sort=False)]
            reports = [g for g in reports if len(g) > 1]
            if not reports:
                continue
            groups = reports[-1]  # the latest report says where the ranks stand now
            most = max(groups, key=lambda g: g.count)
            lowest, highest = min(g.ops for g in groups), max(g.ops for g in groups)
            behind = [g for g in groups if g.ops < most.ops]
            ahead = [g for g in groups if g.ops > most.ops]
            always = _behind_in_each(reports)
            stuck = lowest == 0 < highest
            severity = Severity.WARNING if stuck or highest - lowest >= 2 or always else Severity.INFO
            parts = [f"{g.count} at {g.ops}" for g in sorted(groups, key=lambda g: -g.ops)]
            behind_words = [w for g in behind for w in g.words] or ["(not listed)"]
            ahead_words = [w for g in ahead for w in g.words] or ["(not listed)"]
            if behind:
                said = f"rank(s) {listed(behind_words, 8)} behind the {most.count} ranks at operation {most.ops}"
            else:
                said = (
                    f"the {most.count} ranks at operation {most.ops} are behind rank(s) {listed(ahead_words, 8)} "
                    "(RAS lists the smaller group)"
                )
            if severity is Severity.INFO:
                said += (
                    ". One operation apart in one report is how a running job looks too (RAS samples the counts while "
                    "collectives run): run ncclras again; the same ranks behind each time are stragglers"
                )
            elif always:
                said += f", in each of the {len(reports)} reports"
            numbers = [str(rank) for g in behind for rank in g.ranks]
            title = f"NCCL RAS: ranks of communicator {comm} at different {coll} operation counts" + (
                " (some launched none)" if stuck else ""
            )
            if severity is Severity.WARNING and numbers:
                lag = most.ops - min(g.ops for g in behind)
                title = (
                    f"NCCL RAS: rank(s) {listed(numbers, 6)} of communicator {comm} {lag} {coll} operation(s) behind"
                )
                title += " (launched none)" if stuck else ""
            out.append(
                Finding(
                    code=CODE,
                    severity=severity,
                    title=title,
                    summary=f"{coll} operations launched: {', '.join(parts)}; {said}.",
                    detector=self.name,
                    evidence=tuple(
                        Evidence(summary=f"{x.what}: {_count_line(x)}", sources=(src(x.file, x.line),))
                        for x in rows.tail(8).itertuples()
                    ),
                    suggestions=(Suggestion(action=BEHIND_ADVICE),) if severity is Severity.WARNING else (),
                    hosts=tuple(sorted({node for g in behind or ahead for node in g.nodes})),
                    labels={"reading": "counts", "listed": ", ".join(w for g in behind + ahead for w in g.words)},
                )
            )
        return out

    def _status(self, r: pd.DataFrame) -> Iterable[Finding]:
        status = r[r["kind"].str.contains("MISMATCH") & r["coll"].isna() & r["state"].notna()]
        out = []
        for comm, rows in status.groupby("comm", sort=False, dropna=False):
            states = [
                f"{int(x.ranks)} {x.state}" if x.ranks == x.ranks else f"rank {_where(x)} {x.state}"
                for x in rows.itertuples()
            ]
            out.append(
                self._stated(
                    rows,
                    Severity.WARNING,
                    f"NCCL RAS: ranks of communicator {comm} have different status",
                    f"Status of its ranks: {listed(states, 8)}. Ranks that aborted or finalized while others run leave "
                    "the others waiting in their next collective.",
                    "status",
                )
            )
        return out

    def _stated(self, rows: pd.DataFrame, severity: Severity, title: str, summary: str, reading: str) -> Finding:
        """A finding of what an entry's ranks state (an error, a status), each line its evidence."""
        return Finding(
            code=CODE,
            severity=severity,
            title=title,
            summary=summary,
            detector=self.name,
            evidence=tuple(
                Evidence(summary=f"{x.what}: {x.state}", sources=(src(x.file, x.line),))
                for x in rows.head(8).itertuples()
            ),
            hosts=_nodes(rows["node"]),
            labels={"reading": reading},
        )


def _groups(rows: pd.DataFrame) -> list[_Group]:
    """The groups of one report's counts of one collective: its count lines, with the ranks listed after each, and
    the ranks it lists alone (a group of one each, ``Rank R has launched up to operation X``)."""
    counted = {int(x.ops): int(x.ranks) for x in rows.itertuples() if x.ranks == x.ranks}
    groups = {ops: _Group(ops, n, (), (), ()) for ops, n in counted.items()}
    for x in rows.itertuples():
        if x.ranks == x.ranks or x.rank != x.rank:
            continue
        ops = int(x.ops)
        g = groups.get(ops, _Group(ops, 0, (), (), ()))
        groups[ops] = _Group(
            ops,
            g.count if ops in counted else g.count + 1,
            (*g.ranks, int(x.rank)),
            (*g.words, _where(x)),
            (*g.nodes, x.node) if isinstance(x.node, str) else g.nodes,
        )
    return list(groups.values())


def _missing(what: str) -> int:
    """The processes a job-level entry says RAS got nothing from (``Missing communicator data from 3 job processes``,
    ``2 job processes are considered dead …``)."""
    m = re.search(r"(\d+) job process", what)
    return int(m[1]) if m else 0


def _nodes(column: pd.Series) -> tuple[str, ...]:
    return tuple(sorted({x for x in column if isinstance(x, str)}))


def _behind_in_each(reports: list[list[_Group]]) -> bool:
    """Whether two reports or more list the same ranks behind the others in each."""
    if len(reports) < 2:
        return False
    sets = []
    for groups in reports:
        most = max(groups, key=lambda g: g.count)
        sets.append({rank for g in groups if g.ops < most.ops for rank in g.ranks})
    return bool(set.intersection(*sets))


def _where(x: object) -> str:
    """``rank 12 (GPU 4, process 323032 on 10.137.190.124)``'s words without "rank", or a process's."""
    rank, gpu, pid, node = (getattr(x, k) for k in ("rank", "gpu", "pid", "node"))
    where = f"process {int(pid)} on {node}" if pid == pid and pid is not None else "process not known"
    if gpu:
        where = f"GPU {gpu}, {where}"
    return f"{int(rank)} ({where})" if rank == rank and rank is not None else where


def _count_line(x: object) -> str:
    ranks, rank, ops = (getattr(x, k) for k in ("ranks", "rank", "ops"))
    who = f"{int(ranks)} ranks" if ranks == ranks and ranks is not None else f"rank {_where(x)}"
    return f"{who} at operation {int(ops)}"
