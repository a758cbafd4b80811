"""The issues a log's reading ends with: what was counted and not analysed, what the file lacks, and a log
whose lines are newest first.

Log viewers show the newest line first by default (Grafana's Loki view, Kibana's Discover, CloudWatch
Insights), and a log copied from them keeps that order: an error's ``FILE:LINE -> N`` frames come before
its WARN, a communicator's ``Init COMPLETE`` before its ``Init START``. NCCL's sequences then read backwards
(a probe's failure looks like one NCCL went on from, a chain looks like it has no WARN). The reading cannot
turn the file round without moving every line a finding cites, so it says so, and how to turn it round.
"""

from __future__ import annotations

from collections.abc import Iterable

from parsers.issues import IssueSeverity
from parsers.nccl import rendezvous
from parsers.nccl.arrow_tables import LogState
from parsers.nccl.failures import ERROR_LIMIT
from parsers.nccl.rows import CommRankRow

#: communicators whose ``Init COMPLETE`` came before their ``Init START`` (and none after it) that make a
#: log newest first: one could be two communicators at one address, one after the other
NEWEST_FIRST_COMMS = 2


def closing_issues(p: LogState) -> None:
    """The issues of the whole log, added to ``p.sink`` once its last line was read."""
    counts = p.counts
    if counts["foreign"]:
        p.sink.add(
            IssueSeverity.INFO,
            "log.foreign_lines",
            f"{counts['foreign']} line(s) carry no NCCL record and no job-log signal "
            "(application output, launcher banners): counted, not analysed",
            count=counts["foreign"],
        )
    if p.failures.unkept:
        p.sink.add(
            IssueSeverity.DATA_LOSS,
            "log.errors_not_kept",
            f"{p.failures.unkept:,} NCCL error record(s) after the first {ERROR_LIMIT:,} were counted, not "
            "kept (a retry loop or every rank repeating one failure): the report reads the first ones, where "
            "the causes are",
            count=p.failures.unkept,
        )
    if counts["doubled"]:
        p.sink.add(
            IssueSeverity.INFO,
            "log.doubled_columns",
            f"{counts['doubled']} line(s) held the same record twice (a CloudWatch-style "
            "export with repeated columns): read once",
            count=counts["doubled"],
        )
    if not counts["records"] and (p.failures.errors or p.versions):  # a framework's texts only
        never_met = (
            bool(p.failures.errors) and not p.versions and all(e.cls in rendezvous.CLASSES for e in p.failures.errors)
        )
        p.sink.add(
            IssueSeverity.INFO,
            "log.no_nccl_records",
            "no NCCL_DEBUG record in this file: the job ended at its rendezvous, before NCCL started"
            if never_met
            else "no NCCL_DEBUG record in this file: what it says of NCCL comes from the framework's own texts "
            "(an error report, a version line); NCCL_DEBUG=INFO adds NCCL's own account (transports, errors)",
        )
    elif not counts["records"] and not (p.watchdog or p.stalls or p.autotune or p.exits):
        p.sink.add(
            IssueSeverity.INFO,
            "log.no_signals",
            "no NCCL record, watchdog timeout, stall warning or autotune row in this file (was NCCL_DEBUG=INFO set?)",
        )
    stamped = [((e.host, e.pid), e.line, e.time) for e in p.failures.errors if e.time]
    backwards = newest_first(p.comm_ranks, stamped)
    if backwards is not None:
        line, why = backwards
        p.sink.add(
            IssueSeverity.DATA_LOSS,
            "log.newest_first",
            f"the lines are newest first (line {line}: {why}), as log viewers show them: NCCL's sequences read "
            "backwards here (an error's frames before its WARN), so causes and what followed them may be swapped; "
            "turn the file round (tac FILE > oldest-first.log) and analyse that",
        )


Who = tuple[str | None, int | None]


def newest_first(inits: Iterable[CommRankRow], times: list[tuple[Who, int, str]]) -> tuple[int, str] | None:
    """Where a log shows its lines newest first, and how: :data:`NEWEST_FIRST_COMMS` communicators or more whose
    ``Init COMPLETE`` came before their ``Init START`` and none after it, or the times of each process's errors
    (``times``: process, line, time, in line order; a process's own clock, one format) stepping back at least
    :data:`NEWEST_FIRST_COMMS` times and never forward; else None."""
    last: dict[Who, tuple[str, str]] = {}  # each process's last time, and its format
    back: list[int] = []
    for who, line, time in times:
        shape = _shape(time)
        before = last.get(who)
        last[who] = (time, shape)
        if before is None or before[1] != shape or before[0] == time:
            continue
        if time > before[0]:
            back = []  # a process's clock went forward: not newest first
            break
        back.append(line)
    if len(back) >= NEWEST_FIRST_COMMS:
        return back[0], "an error stamped earlier than the one of its process above it"
    started: dict[tuple[str | None, int | None, str | None], int] = {}
    completed: dict[tuple[str | None, int | None, str | None], int] = {}
    for r in inits:
        into = started if r.phase == "START" else completed
        into.setdefault((r.host, r.pid, r.comm), r.line)
    both = [(completed[k], started[k]) for k in completed if k in started]
    backwards = sorted(done for done, start in both if done < start)
    if len(backwards) < NEWEST_FIRST_COMMS or len(backwards) < len(both):
        return None
    return backwards[0], "a communicator's Init COMPLETE before its Init START"


def _shape(time: str) -> str:
    """A time's format: its digits as 0 (times of one format compare as strings)."""
    return "".join("0" if c.isdigit() else c for c in time)
