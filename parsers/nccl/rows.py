"""The rows a log parser collects before they become tables: one type per table, fields named as
the table's columns (``parsers/schema.py``), so that merging chunks and building tables never
index by position."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple, TypedDict

from parsers.issues import IssueSeverity
from parsers.shapes import Count


class CommRankRow(NamedTuple):
    """An ``Init START`` / ``Init COMPLETE`` line (``nccl_comm_ranks``)."""

    host: str | None
    pid: int | None
    line: int
    api: str | None
    comm: str | None
    comm_id: str | None
    rank: int
    nranks: int
    cuda_dev: int | None
    bus_id: str | None
    phase: str


class VersionRow(NamedTuple):
    """A version line (``nccl_versions``); ``source``: ``info``, ``bare line`` or ``pytorch`` (its text)."""

    host: str | None
    pid: int | None
    line: int
    version: str
    cuda: str
    source: str


class EnvRow(NamedTuple):
    """An ``NCCL_X set by environment to V`` line (``nccl_env``)."""

    host: str | None
    pid: int | None
    line: int
    var: str
    value: str


class StallRow(NamedTuple):
    """A rank of a Horovod stall warning (``horovod_stalls``)."""

    line: int
    rank: int
    shutdown: bool
    tensors: list[str]
    more: bool


class RasRow(NamedTuple):
    """A line of an entry of NCCL's RAS report (``nccl_ras``): a count of ranks, a rank, a process, or what the entry
    says, with the entry it is in (:mod:`parsers.nccl.ras`)."""

    line: int
    report: int  # the line its report starts at (a log may hold several: ncclras run again)
    section: str  # errors, warnings
    comm: str | None  # "#0-0" (the summary's group and the communicator's place in it); None: the job's
    kind: str  # INCOMPLETE, DEAD, TIMEOUT, ERROR, MISMATCH (or several: "INCOMPLETE,MISMATCH")
    what: str | None  # the entry's words before this line ("Missing communicator data from 1 rank")
    coll: str | None  # the collective whose operation counts differ (AllGather, AllReduce, ...)
    ranks: int | None  # how many ranks a count line counts
    rank: int | None  # the rank within the communicator
    ops: int | None  # operations launched (0: none)
    state: str | None  # a status (INIT, RUNNING, FINALIZE, ABORT, NOCOMM) or an error ("remote process exited...")
    gpu: str | None
    pid: int | None
    node: str | None


class ExitRow(NamedTuple):
    """A worker's exit as its launcher reported it (``worker_exits``)."""

    line: int
    launcher: str  # horovodrun | mpirun | torchrun | torchelastic (its agent's summary) | srun | deepspeed
    rank: int | None
    host: str | None
    pid: int | None
    exit_code: int | None
    signal: int | None  # the signal that ended it: named by the launcher, or exit code 128+N / -N
    text: str


class BareVersion(NamedTuple):
    """A version line without a record header, attributed to a process at the end of the log."""

    line: int
    outer: str
    msg: str


class PgMember(NamedTuple):
    """A process's place in a process group, from PyTorch's ``[PG ID 1 PG GUID 5 Rank 1] ProcessGroupNCCL
    initialization options: size: 4, global rank: 3, …`` (what maps a group's ranks to the job's)."""

    line: int
    pg: str  # the group's id
    guid: str | None  # its GUID (PyTorch 2.3+), which tells apart groups made at the same place
    rank: int  # within the group
    global_rank: int


@dataclass(slots=True)
class LineIssue:
    """The issues of one code a log's lines raised: the first one's line, and how many."""

    severity: IssueSeverity
    template: str  # the message, ``{line}`` standing for :attr:`line`
    line: int
    count: int


@dataclass(slots=True)
class CollCounter:
    """The ``COLL`` lines of one (host, pid, communicator, op) (``nccl_collectives``)."""

    nranks: int | None  # None: a COLL line of a release that does not print [nranks=N]
    calls: int
    first_opcount: int
    last_opcount: int
    last_line: int
    first_line: int


@dataclass(slots=True)
class FastColl:
    """:class:`CollCounter` as the block regex collects it: strings, converted when folded in."""

    nranks: str
    calls: int
    first_opcount: str
    last_opcount: str
    last_line: int
    dev: str
    outer: str
    first_line: int


class LogFacts(TypedDict):
    """:attr:`parsers.nccl.parser.JobLogParser.info`: what the manifest and the report (``inputs[].log``)
    say of a log: its line and record counts."""

    lines: Count
    records: Count
    processes: Count
    foreign_lines: Count
    blank_lines: Count
    merged_lines: Count
    watchdog_timeouts: Count
    stall_ranks: Count
    autotune_rows: Count


ErrorLevel = Literal["WARN", "chain", "framework"]


@dataclass(slots=True, eq=False)
class ErrorRow:
    """An ``nccl_errors`` row while the log is read (its chain and result code grow as frames follow; what
    followed settles its class). Slots, not a dict: a log keeps up to 100,000 of them, a third of the size.
    Compared by identity: two WARNs of the same words on the same line are two errors."""

    host: str | None
    pid: int | None
    tid: int | None
    line: int
    level: ErrorLevel
    cls: str | None  # the ``class`` column (parsers.nccl.error_classes.CLASSES); None: benign, or declassified
    src: str | None
    message: str
    chain: list[str]
    result_code: int | None
    remediation: str | None
    time: str | None
    consequence: bool
    # a failure NCCL often goes on after (a probe), and nothing after it in the log shows that it did not:
    # the process's last word in an excerpt, or a real failure whose aftermath is not in the log
    unconfirmed: bool = False
    plugin: bool = False  # a network plugin's WARN while probing: settled by whether NCCL went on
    probe: bool = False  # raised while NCCL probed its networks: unconfirmed unless confirmed later
    flap: bool = False  # an HCA port that went down, a service thread stopped: settled by whether NCCL went on
    retried: bool = False  # a WARN whose call NCCL then tried again (a flap too: settled by whether NCCL went on)


@dataclass(slots=True)
class WatchdogRow:
    """A ``watchdog_timeouts`` row: a PyTorch watchdog's timeout line, completed by the work line after it.
    (Slotted: a log of a job timing out again and again holds ~150 k of them until they are folded, 650 B each
    as a dict.)"""

    line: int
    rank: (
        int | None
    )  # the launcher's ``[rankN]:`` when it tags the line, else PyTorch's ``[Rank N]`` (within the group)
    global_rank: int | None  # the job's rank: the launcher's tag, the default group's rank, or the group's membership
    seq: int | None  # None: PyTorch 1.8-1.10 print no SeqNum
    op: str
    numel_in: int | None
    numel_out: int | None
    timeout_ms: int
    ran_ms: int
    pg: str | None
    last_enqueued: int | None
    last_completed: int | None
