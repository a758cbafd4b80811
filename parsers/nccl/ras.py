"""NCCL's RAS report (``ncclras``, NCCL 2.24+; ``docs/formats/nccl-log.md`` §5): the job's communicators as one
query of the RAS network saw them, pasted or captured beside the job's log.

After its version line, job summary and table of communicators come two sections, ``Errors`` and ``Warnings``, of
entries that each open with a header and go on with indented lines (``src/ras/client_support.cc``):

- ``INCOMPLETE`` (missing communicator data from N job processes), ``DEAD`` (N processes unreachable via the RAS
  network): the processes, ``Process P on node N managing GPU G``;
- ``#G-C (HASH) INCOMPLETE`` (missing data from N ranks of that communicator), ``#G-C (HASH) ERROR`` (initialization
  or asynchronous errors on N ranks: ``N ranks reported <error>``, ``Rank R reported <error> -- …``);
- ``TIMEOUT`` (RAS's own communication timed out while gathering), ``#G-C (HASH) MISMATCH`` (ranks with a different
  status: ``N ranks have status S``; or ``Communicator ranks have different <Coll> operation counts``: ``N ranks have
  launched up to operation X``, ``Rank R has launched up to operation X -- …``, ``… have not launched any
  operations``).

A count line of several ranks is followed by those ranks' lines when they are few (RAS lists the outliers), which
then state nothing of their own: they take the count line's value. Each data line is a :class:`~parsers.nccl.rows.
RasRow`; reading the rows (who is missing, behind, failed) is the ``nccl.ras`` detector's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from parsers.nccl.rows import RasRow

#: texts that open a RAS report or one of its entries pasted alone (job-log signals: ``joblog.SIGNAL_HINTS``)
RAS_HINTS = ("Group     Comms     Nodes", ") MISMATCH", ") INCOMPLETE", ") ERROR")
SECTIONS = {"Errors": "errors", "Warnings": "warnings"}
_ENTRY = re.compile(r"^#(?P<group>\d+)-(?P<comm>\d+) \((?P<hash>[0-9a-fA-F]+)\) (?P<kinds>[A-Z]+(?:,[A-Z]+)*)\s*$")
_JOB_ENTRY = re.compile(r"^(?P<kind>INCOMPLETE|DEAD|TIMEOUT)\s*$")
_WHERE = (
    r"(?:GPUs? (?P<gpu>[\d,]+(?: \(NVML [\d,]+\))?) managed by process (?P<pid>\d+) on node (?P<node>\S+)"
    r"|\[process information not found\])"
)
_RANK = re.compile(
    r"^Rank (?P<rank>\d+)(?: has launched up to operation (?P<ops>\d+)| has (?P<none>not launched any operations)"
    r"| has status (?P<status>\w+)| reported (?P<error>.+?))? -- " + _WHERE + r"\s*$"
)
_PROCESS = re.compile(r"^Process (?P<pid>\d+) on node (?P<node>\S+) managing GPUs? (?P<gpu>\S+(?: \(NVML \S+\))?)\s*$")
_COUNT = re.compile(
    r"^(?P<n>\d+) ranks (?:have launched up to operation (?P<ops>\d+)|have (?P<none>not launched any operations)"
    r"|have status (?P<status>\w+)|reported (?P<error>.+?))\s*$"
)
_COLL = re.compile(r"^Communicator ranks have different (?P<coll>\w+) operation counts\s*$")
#: the summary's own lines (its headers, NCCL's and CUDA's versions, an outlier node)
_SUMMARY = (
    "Group ",
    "#  in group",
    "Job summary",
    "Communicators",
    "NCCL version",
    "CUDA runtime version",
    "(total)",
    "The outlier node",
    "Node ",
    "Nodes ",
    "per node",
    "No communicator data collected",
)
#: an entry's lines where a paste took their indent off
_DETAIL = re.compile(
    r"^(?:Rank \d+ |Process \d+ on node |\d+ ranks |\d+ job process|Missing communicator data|Communicator ranks have "
    r"different|(?:Initialization|Asynchronous) errors? on|Encountered \d+ communication timeout|\[could not find)"
)
#: what the summary table names: a group's line, ``    0         1         4   8   32   32   RUNNING  MISMATCH``
_TABLE_ROW = re.compile(r"^\s*\d+\s+\d+\s+\d+\s+[\d-]+\s+\d+\s+\d+\s+[A-Z]+\s+[A-Z,]+\s*$")


@dataclass(slots=True)
class RasReport:
    """A RAS report being read: where it stands (its section, its entry, the count line its rank lines belong to)."""

    since: int
    section: str | None = None
    comm: str | None = None
    kind: str | None = None
    what: str | None = None
    coll: str | None = None
    value: tuple[int | None, str | None] | None = None  # (operations, status or error) of the count line before


def opens(line: str) -> bool:
    """Whether ``line`` starts a RAS report, or one of its entries pasted without what came before them."""
    s = line.strip()
    return s.startswith("Group     Comms     Nodes") or _ENTRY.match(s) is not None


def read(report: RasReport, line: str, lineno: int) -> tuple[bool, RasRow | None]:
    """Whether ``line`` is part of ``report`` (False: the report ended before it), and the row it states, if any."""
    s = line.strip()
    if not s or set(s) <= {"="}:
        return True, None
    if s in SECTIONS:
        report.section, report.comm, report.kind = SECTIONS[s], None, None
        return True, None
    if (m := _ENTRY.match(s)) is not None:
        report.comm, report.kind = f"#{m['group']}-{m['comm']}", m["kinds"]
        report.what = report.coll = report.value = None
        return True, None
    if report.section is not None and (m := _JOB_ENTRY.match(s)) is not None:
        report.comm, report.kind = None, m["kind"]
        report.what = report.coll = report.value = None
        return True, None
    if report.section is not None and s.startswith(("NCCL version", "Group     Comms")):
        return False, None  # the next report (ncclras run again)
    if _TABLE_ROW.match(s) or s.startswith(_SUMMARY):
        return True, None
    if report.kind is None:  # the summary before the sections: its tables' rows (numbers), nothing else
        return s[:1].isdigit(), None
    if not line[:1].isspace() and _DETAIL.match(s) is None:
        return False, None  # a line of its own, not indented and of no entry's words: the report ended
    return True, _row(report, s, lineno)


def _row(report: RasReport, s: str, lineno: int) -> RasRow | None:
    kind = report.kind or ""
    if (m := _COUNT.match(s)) is not None:
        ops = int(m["ops"]) if m["ops"] else 0 if m["none"] else None
        report.value = (ops, m["status"] or m["error"])
        return _make(report, lineno, ranks=int(m["n"]), ops=ops, state=m["status"] or m["error"])
    if (m := _RANK.match(s)) is not None:
        ops = int(m["ops"]) if m["ops"] else 0 if m["none"] else None
        state = m["status"] or m["error"]
        if ops is None and state is None and report.value is not None:
            ops, state = report.value  # one of the ranks the count line before it counted
        pid = int(m["pid"]) if m["pid"] else None
        return _make(report, lineno, rank=int(m["rank"]), ops=ops, state=state, gpu=m["gpu"], pid=pid, node=m["node"])
    if (m := _PROCESS.match(s)) is not None:
        return _make(report, lineno, gpu=m["gpu"], pid=int(m["pid"]), node=m["node"])
    report.value = None
    if (m := _COLL.match(s)) is not None:
        report.coll = m["coll"]
    report.what = s
    return _make(report, lineno) if kind else None


def _make(
    report: RasReport,
    lineno: int,
    *,
    ranks: int | None = None,
    rank: int | None = None,
    ops: int | None = None,
    state: str | None = None,
    gpu: str | None = None,
    pid: int | None = None,
    node: str | None = None,
) -> RasRow:
    return RasRow(
        lineno,
        report.since,
        report.section or "errors",
        report.comm,
        report.kind or "",
        report.what,
        report.coll,
        ranks,
        rank,
        ops,
        state,
        gpu,
        pid,
        node,
    )
