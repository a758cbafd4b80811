"""One big log parsed in chunks, in parallel, with the result of a single pass.

A combined job log (``mpirun`` stdout of thousands of ranks) is one file of several GB.
:func:`chunk_ranges` cuts it at line boundaries; :func:`parse_chunk` reads one range alone
(any process, any machine), counting lines from 0; :class:`ChunkMerger` takes the chunks'
parsers in file order and continues one parser with each, moving the chunk's line numbers
by the lines before it. The merge is exact, not approximate: per-process facts, collective
counters, connection counts, errors, issues and job-log rows combine the way one pass would
have accumulated them (tests compare every table on every corpus log cut at every line).

Where a chunk's reading depended on what came before it (a stall warning's rank list or an
autotune CSV running across the cut, an error's ``FILE:LINE`` frames continuing a WARN of
the previous chunk), the chunk is read again here, continuing the merged parser: exact, and
rare, as these are short passages of small files.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import pyarrow as pa

from parsers.inputs import CHUNK_BYTES
from parsers.nccl.arrow_tables import log_tables
from parsers.nccl.crashes import CRASH_LINES
from parsers.nccl.failures import CHAIN_LINES, ERROR_LIMIT
from parsers.nccl.jobtexts import FRAMEWORK_LINES
from parsers.nccl.parser import ROW_LIMIT, JobLogParser
from parsers.nccl.rows import CollCounter, FastColl, LineIssue
from parsers.paste import clean_paste


def chunk_ranges(path: str | Path, size: int, chunk_bytes: int = CHUNK_BYTES) -> list[tuple[int, int]]:
    """``[start, end)`` byte ranges covering the file, each starting at a line (after a
    ``\\n``) and ending after one (except the last, which ends with the file)."""
    cuts = [0]
    with open(path, "rb") as f:
        for target in range(chunk_bytes, size, chunk_bytes):
            if target <= cuts[-1]:
                continue  # a line longer than a chunk
            f.seek(target - 1)
            pos = target - 1
            while piece := f.read(64 << 10):
                nl = piece.find(b"\n")
                if nl >= 0:
                    pos += nl + 1
                    break
                pos += len(piece)
            if cuts[-1] < pos < size:
                cuts.append(pos)
    return [(a, b) for a, b in zip(cuts, [*cuts[1:], size], strict=True)]


class _Range:
    """A read-only view of bytes ``[start, end)`` of an open file."""

    def __init__(self, f: BinaryIO, start: int, end: int) -> None:
        f.seek(start)
        self.f = f
        self.left = end - start

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n) if n else b""
        self.left -= len(data)
        return data


def parse_chunk(path: str | Path, start: int, end: int, display_name: str | None = None) -> JobLogParser:
    """Read bytes ``[start, end)`` of a log alone (lines counted from 0), not finished: the
    state :class:`ChunkMerger` continues with."""
    parser = JobLogParser(path, display_name)
    with open(path, "rb") as f:
        parser._previous_line = _line_before(f, start)  # a repeat of it is one, as in a single pass
        parser.feed(_Range(f, start, end))
    return parser


LOOKBACK = 64 << 10  # how far before a chunk its previous line is looked for (a longer line: not known)


def _line_before(f: BinaryIO, start: int) -> str | None:
    """The line that ends at ``start`` (a chunk starts at a line boundary), as the parser reads lines."""
    if start <= 0:
        return None
    f.seek(max(0, start - LOOKBACK))
    data = f.read(start - max(0, start - LOOKBACK))
    if not data.endswith(b"\n"):
        return None
    cut = data.rfind(b"\n", 0, len(data) - 1)
    if cut < 0 and start > LOOKBACK:
        return None
    return clean_paste(data[cut + 1 : -1].decode("utf-8", "replace"))


class ChunkMerger:
    """Chunks of one log (from :func:`chunk_ranges`) merged in file order into one parser.

    :meth:`add` takes them in any order and merges as far as they are contiguous, so the
    chunks held at a time stay few; :meth:`tables` returns what ``JobLogParser.parse`` of
    the whole file returns.
    """

    def __init__(self, path: str | Path, ranges: list[tuple[int, int]], display_name: str | None = None) -> None:
        self.path = Path(path)
        self.ranges = ranges
        self.parser = JobLogParser(path, display_name)
        self.rereads = 0  # chunks read again here because their start depended on the chunk before
        self._waiting: dict[int, JobLogParser] = {}
        self._next = 0

    @property
    def complete(self) -> bool:
        return self._next == len(self.ranges)

    def add(self, index: int, chunk: JobLogParser) -> None:
        self._waiting[index] = chunk
        while self._next in self._waiting:
            self._merge(self._next, self._waiting.pop(self._next))
            self._next += 1

    def tables(self) -> dict[str, pa.Table]:
        if not self.complete:
            raise ValueError(f"{self.path}: {len(self.ranges) - self._next} chunk(s) not merged yet")
        self.parser.finish()
        return log_tables(self.parser)

    def _merge(self, index: int, chunk: JobLogParser) -> None:
        p = self.parser
        if p.stopped:  # past its row limit: the chunks after are not read, as one pass stops
            return
        base = p.lines
        if index and not _independent(p, chunk, base):
            self.rereads += 1
            start, end = self.ranges[index]
            with open(self.path, "rb") as f:
                p.feed(_Range(f, start, end))
            return
        _absorb(p, chunk, base)
        if chunk.stopped:  # its own limit: its issue came with its line issues
            p.stopped = True
        elif p.kept_rows() > ROW_LIMIT:  # at a chunk's end (one pass stops at the block's)
            p.stop(p.lines)


def _independent(p: JobLogParser, chunk: JobLogParser, base: int) -> bool:
    """Whether ``chunk``, read alone, read its lines as a continuation of ``p`` would have."""
    if p._in_stall:  # a rank list may go on across the cut
        return False
    if p._autotune_layout is not None and chunk.autotune_lines:  # lines the CSV before the cut would read
        return False
    if any(x is not None for x in (p._await_last, p._wrapped, p._torch_cut, p._elastic, p._mpi_exit, p._crash, p._ras)):
        return False
    if p.crashed and base - p.crashed < CRASH_LINES:  # Python's report of that crash may follow the cut
        return False
    recent = p._framework
    if recent is not None and any(n + base - recent.line <= FRAMEWORK_LINES for n in chunk.framework_orphans):
        return False  # a result code's name or a "Last error:" that belongs to the report before the cut
    for key, lineno in chunk.failures.chain_orphans:  # frames that may continue a WARN of an earlier chunk
        err = p.failures.open_error.get(key)
        if err is not None and lineno + base - err.line <= CHAIN_LINES:
            return False
    return True


def _absorb(p: JobLogParser, chunk: JobLogParser, base: int) -> None:
    """Continue ``p`` (lines ``1..base``) with ``chunk`` (its lines counted from 0)."""
    for key, proc in chunk.procs.items():
        mine = p.procs.get(key)
        if mine is None:
            proc.shift(base)
            p.procs[key] = proc
        else:
            mine.absorb(proc, base)
    _absorb_counters(p.colls, chunk.colls, base)
    _absorb_counters(p._fast_colls, chunk._fast_colls, base)
    for _, work in chunk.work_orphans:  # "detected by watchdog at work" of a timeout of an earlier chunk
        p.open_timeouts.attach(p.watchdog, work)
    for err in chunk.failures.errors:
        err.line += base  # open_error holds the same dicts
    kept = chunk.failures.errors[: max(ERROR_LIMIT - len(p.failures.errors), 0)]  # the first, as one pass keeps
    p.failures.errors += kept
    p.failures.unkept += chunk.failures.unkept + len(chunk.failures.errors) - len(kept)
    p.failures.open_error.update(chunk.failures.open_error)
    p.comm_ranks.absorb(chunk.comm_ranks, base)
    p.versions.absorb(chunk.versions, base)
    p.env.absorb(chunk.env, base)
    for w in chunk.watchdog:
        w.line += base
    p.watchdog += chunk.watchdog
    p.stalls += [row._replace(line=row.line + base) for row in chunk.stalls]
    p.pg_members += [row._replace(line=row.line + base) for row in chunk.pg_members]
    p.exits += [row._replace(line=row.line + base) for row in chunk.exits]
    p.ras += [row._replace(line=row.line + base, report=row.report + base) for row in chunk.ras]
    p.autotune += [_moved(row, base) for row in chunk.autotune]
    if p._autotune_layout is None:
        p._autotune_layout = chunk._autotune_layout
    p._in_stall = chunk._in_stall
    if chunk._ras is not None:  # a RAS report its last lines were in: the next chunk may go on with it
        chunk._ras.since += base
    p._ras = chunk._ras
    if chunk._framework is not None:  # its line was shifted with the errors above
        p._framework = chunk._framework
    if chunk._wrapped is not None:
        at, readings, tag = chunk._wrapped
        p._wrapped = (at + base, readings, tag)
    if chunk._await_last is not None:
        at, prefix, err = chunk._await_last
        p._await_last = (at + base, prefix, err)
    if chunk._elastic is not None:
        p._elastic = replace(chunk._elastic, since=chunk._elastic.since + base)
    if chunk._mpi_exit is not None:
        p._mpi_exit = replace(chunk._mpi_exit, since=chunk._mpi_exit.since + base)
    if chunk.progressed:
        p.progressed = chunk.progressed + base
    if chunk.crashed:
        p.crashed = chunk.crashed + base
    if chunk._crash is not None:
        p._crash = replace(chunk._crash, since=chunk._crash.since + base)
    if chunk._torch_cut is not None:  # its row was shifted with the errors above
        at, first, row = chunk._torch_cut
        p._torch_cut = (at + base, first, row)
    p._previous_line = chunk._previous_line
    p._bare_versions.absorb(chunk._bare_versions, base)
    p.counts.update(chunk.counts)
    for code, i in chunk.line_issues.items():
        old = p.line_issues.get(code)
        if old is None:
            p.line_issues[code] = LineIssue(i.severity, i.template, i.line + base, i.count)
        else:
            old.count += i.count
    for issue in chunk.sink.issues:  # none while reading; kept general
        p.sink.add(issue.severity, issue.code, issue.message, byte_offset=issue.byte_offset, count=issue.count)
    p.lines = base + chunk.lines


Counter = TypeVar("Counter", CollCounter, FastColl)


def _absorb_counters(mine: dict[Any, Counter], later: dict[Any, Counter], base: int) -> None:
    """Collective counters of a later chunk: calls add up, the last opCount and line are the
    later chunk's."""
    for key, c in later.items():
        c.last_line += base
        c.first_line += base
        old = mine.get(key)
        if old is None:
            mine[key] = c
        else:
            old.calls += c.calls
            old.last_opcount = c.last_opcount
            old.last_line = c.last_line


def _moved(row: Any, base: int) -> Any:
    return replace(row, line=row.line + base)
