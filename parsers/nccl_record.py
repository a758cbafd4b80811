"""Finding NCCL debug records inside log lines (``../shared/docs/nccl-log-format.md`` §1).

A record is ``[outer]HOST:PID:TID [DEV] [MS] [FILE:LINE [(FUNC)]] NCCL LEVEL MSG`` and may sit
anywhere in a line: whatever comes before ``HOST`` (launcher tags such as ``[1,3]<stdout>:``,
``52: ``, ``host: ``, CloudWatch columns, NCCL 2.26+ timestamps) is kept as ``outer``. The
version line has no prefix (``NCCL version 2.x.y+cudaA.B``) and users sometimes strip the
prefix down to ``[DEV] NCCL INFO``. Two processes writing to one terminal can merge records
into one line (NCCL 2.3 wrote prefix and message separately), and CloudWatch exports can
repeat a record after `` | ``: :func:`split_records` returns every record of a line and
says which were merged or doubled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The record header; searched, never anchored (the prefix is foreign).
RECORD = re.compile(
    r"(?P<host>[^\s:\[\]|]+):(?P<pid>\d+):(?P<tid>\d+) "
    r"(?:\[(?P<dev>\d+)\] )?"
    r"(?:\d+\.\d+ )?"  # TRACE: ms since debug init
    r"(?:(?P<src>[^\s]+?):(?P<srcline>\d+) (?:\((?P<func>[^)]*)\) )?)?"
    r"NCCL (?P<level>INFO|WARN|TRACE|CALL|ABORT)(?: |$)"
)
#: A prefix stripped by the user down to the device: ``[3] NCCL INFO ...``.
STRIPPED = re.compile(r"^\s*\[(?P<dev>\d+)\] NCCL (?P<level>INFO|WARN)(?: |$)")
VERSION = re.compile(r"(?:^|[\s:|>\]])NCCL version (?P<ver>\d+\.\d+\.\d+)(?P<sfx>[^+\s]*)\+cuda(?P<cuda>\S+)")
#: A line that is only a launcher tag (the blank line in front of a WARN, with its prefix).
PREFIX_ONLY = re.compile(r"^\s*(?:>\s*)?(?:\[\d+(?:,\d+)?\](?:<\w+>)?:?|[\w.-]+:|\d+:|\|)?\s*$")
#: An ISO-8601 timestamp with a zone offset glued to the host name (CloudWatch exports).
GLUED_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[-+]\d\d:\d\d$")
#: NCCL 2.26+ default timestamp at the end of ``outer``.
NATIVE_TS = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\] $")


@dataclass(frozen=True, slots=True)
class Record:
    """One NCCL record. ``host`` and ``pid`` are None when the user stripped the prefix."""

    outer: str
    host: str | None
    pid: int | None
    tid: int | None
    dev: int | None
    src: str | None  # FILE:LINE of a WARN / TRACE
    func: str | None
    level: str  # INFO, WARN, TRACE, CALL, ABORT or VERSION
    msg: str


def split_records(line: str) -> tuple[list[Record], bool, bool]:
    """The records of ``line``, whether two processes' records were merged in it, and
    whether a repeated copy (CloudWatch ``X | X``) was dropped."""
    matches = list(RECORD.finditer(line))
    if not matches:
        m = STRIPPED.match(line)
        if m:
            return [Record("", None, None, None, int(m["dev"]), None, None, m["level"], line[m.end():].rstrip())], \
                False, False
        v = VERSION.search(line)
        if v:
            at = line.index("NCCL version", v.start())
            return [Record(line[:at].strip(), None, None, None, None, None, None, "VERSION",
                           line[at:].strip())], False, False
        return [], False, False
    out: list[Record] = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        msg = line[m.end():end].rstrip()
        outer = line[: m.start()] if i == 0 else ""
        host = m["host"]
        glued = GLUED_TS.search(outer + host[:2]) if host[:2].isdigit() else None
        if glued:  # CloudWatch "...T16:39:51.208-07:00ip-10-..." : the zone's minutes are not the host
            outer, host = outer + host[:2], host[2:]
        out.append(Record(outer, host, int(m["pid"]), int(m["tid"]),
                          int(m["dev"]) if m["dev"] is not None else None,
                          f"{m['src']}:{m['srcline']}" if m["src"] else None, m["func"], m["level"], msg))
    doubled = False
    merged = False
    if len(out) > 1:
        kept = [out[0]]
        for r in out[1:]:
            prev = kept[-1]
            if (r.host, r.pid, r.tid, r.level) == (prev.host, prev.pid, prev.tid, prev.level) \
                    and prev.msg.rstrip(" |") == r.msg:
                kept[-1] = Record(prev.outer, prev.host, prev.pid, prev.tid, prev.dev, prev.src, prev.func,
                                  prev.level, r.msg)
                doubled = True
            else:
                kept.append(r)
                merged = True
        out = kept
    return out, merged, doubled


def native_timestamp(outer: str) -> str | None:
    """NCCL's own ``[YYYY-MM-DD HH:MM:SS]`` timestamp (2.26+) at the end of the prefix."""
    m = NATIVE_TS.search(outer)
    return m.group(1) if m else None
