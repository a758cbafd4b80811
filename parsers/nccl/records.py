"""Finding NCCL debug records inside log lines (``docs/formats/nccl-log.md`` §1).

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
from functools import lru_cache
from typing import NamedTuple

from parsers.nccl.net_plugins import plugin_source

#: A prefix stripped by the user down to the device: ``[3] NCCL INFO ...``.
STRIPPED = re.compile(r"^\s*\[(?P<dev>\d+)\] NCCL (?P<level>INFO|WARN)(?: |$)")
#: the bare version line rank 0 prints (``NCCL version 2.8.4+cuda11.2``; RCCL's ``RCCL version 2.18.3+hip5.5``)
VERSION = re.compile(r"(?:^|[\s:|>\]])[NR]CCL version (?P<ver>\d+\.\d+\.\d+)[^+\s]*\+(?:cuda|hip)\S*")
#: A line that is only a launcher tag (the blank line in front of a WARN, with its prefix).
#: (Possessive runs of whitespace: a line of spaces before text is refused in one pass, not one per space.)
PREFIX_ONLY = re.compile(r"^\s*+(?:>\s*+)?(?:\[\d+(?:,\d+)?\](?:<\w+>)?:?|[\w.-]+:|\d+:|\|)?\s*+$")
#: An ISO-8601 timestamp with a zone offset glued to the host name (CloudWatch exports).
GLUED_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[-+]\d\d:\d\d$")
#: NCCL 2.26+ default timestamp at the end of ``outer``.
NATIVE_TS = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\] $")


class Record(NamedTuple):
    """One NCCL record. ``host`` and ``pid`` are None when the user stripped the prefix. (A named tuple:
    built for every record of a log, in a quarter of a frozen dataclass's time.)"""

    outer: str
    host: str | None
    pid: int | None
    tid: int | None
    dev: int | None
    src: str | None  # FILE:LINE of a WARN / TRACE
    func: str | None
    level: str  # INFO, WARN, TRACE, CALL, ABORT or VERSION
    msg: str


#: the levels after ``NCCL`` that mark a record (the careful path, and the compiled reader's second-record check)
MARKER_LEVELS = ("INFO", "WARN", "TRACE", "CALL", "ABORT")
_DEV = re.compile(r"\[(\d+)\]$")
_SRC = re.compile(r"(?P<src>\S+?):(?P<line>\d+)$")
_MS = re.compile(r"\d+\.\d+$")
#: A host name alone before ``[DEV]`` (no ``:PID:TID``), possibly after a pasted quote or backtick.
_HOST_ONLY = re.compile(r"^[`'\"]*[A-Za-z0-9][\w.-]*$")
#: What can stand glued before a host name: launcher tags, collector columns, Markdown and quotes.
_BEFORE_HOST = (":", "]", "|", "`", "'", '"')


@lru_cache(maxsize=1 << 12)  # a process's header repeats on each of its lines (when no timestamp is in it)
def _header(head: str) -> tuple[str, str, int | None, int | None, int | None, str | None, str | None] | None:
    """Parse ``[outer]HOST:PID:TID [DEV] [MS] [FILE:LINE [(FUNC)]]`` (the text before `` NCCL LEVEL``)
    from the right: (outer, host, pid, tid, dev, src, func), or None if it is not a record header.
    ``HOST [DEV]`` without ``:PID:TID`` (patched printers, trimmed pastes) gives pid and tid None."""
    func = src = None
    if ")" in head and (signature := plugin_source(head)) is not None:
        head, src = signature
    tokens = head.split(" ")
    k = len(tokens) - 1
    dev = None
    if src is None and k >= 0 and tokens[k].startswith("(") and tokens[k].endswith(")"):
        func = tokens[k][1:-1]
        k -= 1
    if src is None and k >= 1 and ":" in tokens[k] and not tokens[k].startswith("[") and tokens[k].count(":") == 1:
        m = _SRC.match(tokens[k])
        if m:
            src = tokens[k]
            k -= 1
    if k >= 1 and _MS.match(tokens[k]):
        k -= 1
    if k >= 1 and tokens[k].startswith("["):
        m = _DEV.match(tokens[k])
        if m:
            dev = int(m.group(1))
            k -= 1
    if k < 0:
        return None
    parts = tokens[k].rsplit(":", 2)
    pid: int | None = None
    tid: int | None = None
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        pre_host, pid, tid = parts[0], int(parts[1]), int(parts[2])
    elif dev is not None and _HOST_ONLY.match(tokens[k]):  # "HOST [DEV] NCCL INFO": a patched or trimmed prefix
        pre_host = tokens[k]
    else:
        return None
    cut = len(pre_host) - 1  # the host starts after the last of those, or of any space (a tab, a pasted NBSP)
    while cut >= 0 and not (pre_host[cut] in _BEFORE_HOST or pre_host[cut].isspace()):
        cut -= 1
    host = pre_host[cut + 1 :]
    if not host and pid is None:
        return None  # (a host cut off, ``:PID:TID [DEV]``, a redacted paste's or a collector's: its process by its pid)
    outer = " ".join(tokens[:k]) + (" " if k else "") + pre_host[: cut + 1]
    if host[:2].isdigit() and GLUED_TS.search(outer + host[:2]):  # CloudWatch "...-07:00ip-10-..."
        outer, host = outer + host[:2], host[2:]
    return outer, host, pid, tid, dev, src, func


Header = tuple[str, str, int | None, int | None, int | None, str | None, str | None]
HEADER_WINDOW = 4096  # characters before " NCCL LEVEL" a record header can span (hosts are <= 255)


#: What a record without its HOST:PID:TID [DEV] header keeps before NCCL's marker: a source location
#: (``transport/nvls.cc:165``, a WARN's) with its function, after nothing or a launcher's or collector's
#: prefix (``[1,0]<stderr>:``, ``[trainer0|0]:``, a timestamp)
_HEADLESS = re.compile(
    r"^(?P<outer>.*?)(?:(?<![^\s:|>\]])(?P<src>[\w./-]+\.(?:cc|cu|cpp|c|h):\d+)(?: \((?P<func>\w+)\))?)?\s*$"
)
#: ``NCCL INFO`` at a line's start or right after a launcher's tag (``[1,0]<stderr>:NCCL INFO``)
_GLUED = re.compile(r"^(?P<tag>(?:\[[^\]\s]{1,64}\](?:<\w+>)?:?)?)NCCL (?:INFO|WARN|TRACE) ")
#: the device a stripped header kept (``[3]``), at the end of what stands before the marker
_STRIPPED_DEV = re.compile(r"(?:^|(?<=[\s:>\]|)]))\[(?P<dev>\d+)\]\s*$")
#: a launcher's tag alone: Open MPI's, torchrun's, a role's (``[trainer0|0]:``), or worker tags in parentheses naming
#: their pid, one or more (Ray's ``(RayWorkerWrapper pid=927)``, vLLM's ``(VllmWorker rank=1 pid=1234)``, nested)
_LAUNCHER = re.compile(
    r"^\s*+(?:>\s*+)?(?:\[[^\]\s]{1,64}\](?:<\w+>)?:?|(?:\([^()\n]{0,80}\bpid=\d+[^()\n]{0,80}\)\s*+)+)?\s*+$"
)


#: a logger's own fields before the marker, each in brackets (``[03/16][2025-02-25 15:46:48,389] [misc/socket.cc:602]
#: [s11gn1268:pid=3987720] NCCL WARN …``), after the file name ``grep -r`` puts before each line it found
_FIELDS = re.compile(r"^(?:[\w./-]+\.(?:log|txt|out|err):)?(?:\[[^\[\]\n]{1,80}\][^\S\n]*){1,8}$")
_FIELD = re.compile(r"\[([^\[\]\n]*)\]")
#: the fields that say where the record comes from: its source location, its host and pid
_FIELD_SRC = re.compile(r"[\w./-]+\.(?:cc|cu|cpp|c|h):\d+")
_FIELD_PROC = re.compile(r"(?P<host>[A-Za-z0-9][\w.-]*):pid=(?P<pid>\d{1,18})")


def _fields(outer: str) -> Header | None:
    """The header of a record behind a logger's bracketed fields (:data:`_FIELDS`): its host and pid, and its
    source location, where fields say them; the fields stay its outer text."""
    if _FIELDS.match(outer) is None:
        return None
    host, pid, src = "", None, None
    for field in _FIELD.findall(outer):
        if (proc := _FIELD_PROC.fullmatch(field)) is not None:
            host, pid = proc["host"], int(proc["pid"])
        elif _FIELD_SRC.fullmatch(field):
            src = field
    return outer, host, pid, None, None, src, None


@lru_cache(maxsize=1 << 12)
def _headless(head: str) -> Header | None:
    """The header of a record pasted or collected without ``HOST:PID:TID [DEV]`` (``NCCL INFO Using network
    IB``, ``misc/ibvwrap.cc:288 NCCL WARN Call to ibv_...``): no host, pid, thread or device, and what the
    line keeps before the marker (a source location, a launcher's tag, a timestamp) if it is only that;
    None when other text stands there (a sentence quoting NCCL, a damaged header). A header cut down to
    its device (``[3] NCCL INFO``) is one whatever prefix a launcher or collector wrote before it."""
    m = _HEADLESS.match(head.rstrip())  # no whitespace run for the lazy prefix to scan again at each step
    if m is None:
        return None
    outer = m["outer"]
    dev = _STRIPPED_DEV.search(outer)
    if dev is not None:  # "[DEV] FILE:LINE NCCL WARN": HOST:PID:TID stripped, the device kept, after any prefix
        return outer[: dev.start()], "", None, None, int(dev["dev"]), m["src"], m["func"]
    if outer.strip() and not (_LAUNCHER.match(outer) or OUTER_TS.fullmatch(outer.strip(" []:|"))):
        return _fields(outer) if m["src"] is None else None
    return outer, "", None, None, None, m["src"], m["func"]


def _find_records(line: str) -> list[tuple[int, int, str, Header]]:
    """(header start, message start, level, header) of every record in ``line``."""
    out: list[tuple[int, int, str, Header]] = []
    pos = 0
    glued = _GLUED.match(line)
    if glued is not None:  # a headerless record from the line's start, or glued to a launcher's tag
        at = glued.end("tag")
        found = _find_records(line[:at] + " " + line[at:])
        return [(a - (a > at), m - (m > at), lv, h) for a, m, lv, h in found]
    while True:
        at = line.find(" NCCL ", pos)
        if at < 0:
            return out
        rest = line[at + 6 : at + 12]
        level = next((lv for lv in MARKER_LEVELS if rest.startswith(lv)), None)
        pos = at + 6
        if level is None:
            continue
        end = at + 6 + len(level)
        if end < len(line) and line[end] != " ":
            continue
        start = out[-1][1] if out else 0
        window = max(start, at - HEADER_WINDOW)  # a header is short: never re-read a long line from its start
        h = _header(line[window:at])
        if h is None and not out and at <= HEADER_WINDOW:  # a headerless record keeps a short prefix, if any
            h = _headless(line[:at])
        if h is None:
            continue
        if window > start:
            h = (line[start:window] + h[0], *h[1:])
        if out:  # the previous record's message stops where this record's header starts
            out.append((start + len(h[0]), min(end + 1, len(line)), level, ("", *h[1:])))
        else:
            out.append((0, min(end + 1, len(line)), level, h))


#: The record most lines are, alone in its line: ``[outer]HOST:PID:TID [DEV] [MS] [FILE:LINE [(FUNC)]] NCCL
#: LEVEL``, the host right after a space, a launcher's or collector's tag, or the line's start. What it
#: accepts, :func:`careful_split` reads the same way (a test checks both on every line of the corpus);
#: anything else (a second record, a host that is a number, a rarer form) takes that careful path.
_PLAIN = re.compile(
    r"(?:^|(?<=[\s:\]|`'\"]))(?P<host>[A-Za-z][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\](?: \d+\.\d+)?"
    r"(?: (?P<src>[^\s:\[(][^\s:]*:\d+)(?: \((?P<func>[^\s()]*)\))?)? NCCL (?P<level>INFO|WARN|TRACE)(?: |$)"
)


def _plain(line: str) -> Record | None:
    """The one record of a line :data:`_PLAIN` finds, with nothing NCCL-like before or after it; else None."""
    m = _PLAIN.search(line)
    if m is None:
        return None
    at = m.start()
    if at > HEADER_WINDOW // 2 or line.find("NCCL", 0, at) >= 0 or line.find(" NCCL ", m.end() - 1) >= 0:
        return None
    host, pid, tid, dev, src, func, level = m.groups()
    return Record(line[:at], host, int(pid), int(tid), int(dev), src, func, level, line[m.end() :].rstrip())


#: a text every record holds: a marker of each level (a glued or stripped header's too), a bare version line's
_MARKS = (*(f"NCCL {level}" for level in MARKER_LEVELS), "CCL version")


def split_records(line: str) -> tuple[list[Record], bool, bool]:
    """The records of ``line``, whether two processes' records were merged in it, and
    whether a repeated copy (CloudWatch ``X | X``) was dropped."""
    if (plain := _plain(line)) is not None:
        return [plain], False, False
    return careful_split(line)


def careful_split(line: str) -> tuple[list[Record], bool, bool]:
    """:func:`split_records` by finding every ``NCCL LEVEL`` marker and reading its header from the
    right: every form the format allows (the reference :data:`_PLAIN` agrees with)."""
    if not any(map(line.__contains__, _MARKS)):  # a framework's line that names NCCL: 3 us of regexes saved
        return [], False, False
    found = _find_records(line) if " NCCL " in line or _GLUED.match(line) else []
    if not found:
        m = STRIPPED.match(line)
        if m:
            return (
                [Record("", None, None, None, int(m["dev"]), None, None, m["level"], line[m.end() :].rstrip())],
                False,
                False,
            )
        v = VERSION.search(line) if "CCL version" in line else None  # no literal start: it tried every position
        if v:
            at = line.index("CCL version", v.start()) - 1
            return (
                [Record(line[:at].strip(), None, None, None, None, None, None, "VERSION", line[at:].strip())],
                False,
                False,
            )
        return [], False, False
    out: list[Record] = []
    for i, (_, msg_at, level, (outer, host, pid, tid, dev, src, func)) in enumerate(found):
        end = found[i + 1][0] if i + 1 < len(found) else len(line)
        out.append(Record(outer, host or None, pid, tid, dev, src, func, level, line[msg_at:end].rstrip()))
    doubled = False
    merged = False
    if len(out) > 1:
        kept = [out[0]]
        for r in out[1:]:
            prev = kept[-1]
            if (r.host, r.pid, r.tid, r.level) == (prev.host, prev.pid, prev.tid, prev.level) and prev.msg.rstrip(
                " |"
            ) == r.msg:
                kept[-1] = Record(
                    prev.outer, prev.host, prev.pid, prev.tid, prev.dev, prev.src, prev.func, prev.level, r.msg
                )
                doubled = True
            else:
                kept.append(r)
                merged = True
        out = kept
    return out, merged, doubled


#: Collector timestamps in a prefix: RFC 3339 / CloudWatch / container runtime, mpirun --timestamp-output.
OUTER_TS = re.compile(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[-+]\d\d:?\d\d)?|"
    r"\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}"
)


def launcher_tag(outer: str) -> str:
    """``outer`` without the times in it: what stays the same on every line of one process (a launcher's
    tag, a pod's name), where a collector's timestamp changes from line to line."""
    return OUTER_TS.sub("", NATIVE_TS.sub("", outer)).strip()


def timestamp(outer: str) -> str | None:
    """The time a record was written, when something printed it: NCCL's own
    ``[YYYY-MM-DD HH:MM:SS]`` (2.26+, WARN by default) or a collector's timestamp in the prefix."""
    if not outer:  # most records: two searches saved
        return None
    m = NATIVE_TS.search(outer)
    if m:
        return m.group(1)
    found = OUTER_TS.findall(outer)
    return found[-1] if found else None
