"""NCCL_DEBUG logs and job logs -> ``nccl_*``, ``watchdog_timeouts``, ``horovod_stalls``, ``autotune``.

One pass over the text in blocks (never line by line from disk, never the whole file in
memory). Each line is searched for NCCL records (:mod:`parsers.nccl.records`); their
messages become facts (:mod:`parsers.nccl.messages`) folded into per-process state, and
WARNs open an error that the following ``FILE:LINE -> N`` frames of the same thread
extend. Lines without a record are checked for job-log signals (:mod:`parsers.nccl.joblog`)
and otherwise counted as foreign lines. Per-line work is bounded; the state grows with
processes, communicators and errors, not with the number of lines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sized
from pathlib import Path

import pyarrow as pa

from parsers.collector import fewer_passes
from parsers.inputs import ByteSource
from parsers.issues import IssueSeverity, IssueSink
from parsers.nccl import _lines as reader
from parsers.nccl import exits, joblog, ras, rows, signal_groups
from parsers.nccl.arrow_tables import fold_fast_colls, log_tables
from parsers.nccl.closing import closing_issues
from parsers.nccl.coll_blocks import COLL_LINE, coll_dense
from parsers.nccl.failures import Failures
from parsers.nccl.jobtexts import JobTexts
from parsers.nccl.kept import BARE_VERSIONS, KeptRows, table_rows
from parsers.nccl.messages import classify_once
from parsers.nccl.process import ProcessState, bare_versions
from parsers.nccl.readahead import LineBlocks, ReadAhead, Scanned
from parsers.nccl.recordfacts import RecordFacts
from parsers.nccl.records import PREFIX_ONLY, careful_split, split_records
from parsers.paste import clean_paste

BLOCK = 4 << 20
#: the rows a log keeps for its tables (~0.2-1 KB each) before its reading stops (:meth:`JobLogParser.stop`):
#: 1 GB of the corpus's real lines keeps ~1.5 M; a flood of distinct INFO records would grow without end
ROW_LIMIT = 4_000_000
#: what reading a damaged line can raise: int() of a cut number, a number past its column, a field missing
LINE_DAMAGE = (ValueError, OverflowError, IndexError)


class JobLogParser(RecordFacts, JobTexts):
    """Parses one text log. Use :meth:`parse` once; read :attr:`sink` and :attr:`info` after."""

    def __init__(self, path: str | Path, display_name: str | None = None) -> None:
        self.path = Path(path)
        self.name = display_name or str(path)
        self.sink = IssueSink(self.name)
        self.procs: dict[tuple[str | None, int | None], ProcessState] = {}
        self.comm_ranks = table_rows(rows.CommRankRow, "nccl_comm_ranks")
        self.env = table_rows(rows.EnvRow, "nccl_env")
        self.failures = Failures()  # WARNs and error chains (nccl_errors)
        self.colls: dict[tuple[str | None, int | None, str, str], rows.CollCounter] = {}
        self._fast_colls: dict[tuple[str, str, str, str], rows.FastColl] = {}
        self.watchdog: list[rows.WatchdogRow] = []
        self.exits: list[rows.ExitRow] = []
        self.stalls: list[rows.StallRow] = []
        self.autotune: list[joblog.AutotuneRow] = []
        self._autotune_layout: str | None = None
        self._in_stall = False
        self._init_job_texts()
        self._bare_versions = KeptRows(rows.BareVersion, BARE_VERSIONS)
        self.versions = table_rows(rows.VersionRow, "nccl_versions")
        self.counts: Counter[str] = Counter()
        self.lines = 0
        self._previous_line: str | None = None  # the last line read: an identical next one is a repeat
        self.line_issues: dict[str, rows.LineIssue] = {}  # by code
        # what a later chunk's parser could not resolve alone (parsers.nccl.chunks merges chunks):
        self.work_orphans: list[tuple[int, joblog.WatchdogWork]] = []  # watchdog work, no timeout line
        self.open_timeouts = joblog.OpenTimeouts()  # the watchdog rows no work line completed yet
        #: lines an autotune header before them would read as its rows (or as a header): a chunk without one
        #: reads the same whether a header came before it or not
        self.autotune_lines = 0
        self.pg_members: list[rows.PgMember] = []  # process groups' membership (maps group ranks to the job's)
        self.stopped = False  # the kept rows passed ROW_LIMIT: the rest of the log is not read (stop)
        #: lines read by the compiled reader (:mod:`parsers.nccl._lines`) when it was built; the same tables
        self.compiled = reader.COMPILED

    # -- reading --------------------------------------------------------------------
    def parse(self, stream: ByteSource) -> dict[str, pa.Table]:
        """Parse the whole ``stream`` and return the tables."""
        self.feed(stream)
        self.finish(getattr(stream, "cut", None))
        return log_tables(self)

    def feed(self, stream: ByteSource) -> None:
        """Read ``stream`` on from line :attr:`lines` (a whole file, or one chunk of it that
        starts and, unless it is the file's end, ends at a line boundary); :meth:`finish` ends.
        Nothing more is read once the log's kept rows passed :data:`ROW_LIMIT` (:meth:`stop`)."""
        if self.stopped:  # past its row limit: nothing more is read
            return
        lineno = self.lines
        blocks = LineBlocks(stream, BLOCK)
        with fewer_passes():
            if self.compiled:
                lineno = self._read_ahead(blocks, lineno)
            else:
                for data in blocks:
                    lineno = self._block(data, lineno)
                    if self.kept_rows() > ROW_LIMIT:
                        self.stop(lineno)
                        break
        rest = blocks.rest
        if rest and not self.stopped:
            lineno += 1
            self._issue_at(
                lineno,
                IssueSeverity.DATA_LOSS,
                "log.cut_line",
                f"the file ends mid-line (line {{line}}, {len(rest)} bytes without a newline): the "
                "excerpt or capture was cut there; the fragment is read as far as it goes",
            )
            self._line(clean_paste(rest.decode("utf-8", "replace")).rstrip("\r"), lineno)
        self.lines = lineno

    def _read_ahead(self, blocks: LineBlocks, lineno: int) -> int:
        """The compiled reader's lines, scanned ahead on a thread (:mod:`parsers.nccl.readahead`)."""
        with ReadAhead(blocks, coll_dense, reader) as ahead:
            for piece in ahead:
                if isinstance(piece, Scanned):
                    lineno = int(reader.read_lines(self, piece.data, lineno, piece.rows, piece.start, piece.count))
                else:
                    lineno = self._coll_block(piece, lineno)
                ahead.done(piece)
                if (not isinstance(piece, Scanned) or piece.last) and self.kept_rows() > ROW_LIMIT:
                    self.stop(lineno)
                    break
        return lineno

    def kept_rows(self) -> int:
        """The rows this log keeps for its tables until it ends (what its memory grows with)."""
        kept: tuple[Sized, ...] = (
            self.failures.errors,
            self.comm_ranks,
            self.versions,
            self._bare_versions,
            self.env,
            self.watchdog,
            self.stalls,
            self.exits,
            self.autotune,
            self.pg_members,
        )
        return sum(map(len, kept))

    def stop(self, lineno: int) -> None:
        """Read no more of this log (its kept rows passed :data:`ROW_LIMIT` at line ``lineno``): what was
        read is analysed, and the report says where the reading stopped."""
        self.stopped = True
        self._issue_at(
            lineno,
            IssueSeverity.DATA_LOSS,
            "log.row_limit",
            f"line {{line}}: the records this log keeps for the analysis (errors, communicator inits, settings, "
            f"versions, timeouts) passed {ROW_LIMIT:,}, the bound on what one log's reading may hold in memory: "
            "the lines after it are not read, and the report covers the log up to there",
        )

    def finish(self, gzip_cut: str | None = None) -> None:
        """End of the input: issues, folded collectives, late verdicts (:meth:`parse` calls it)."""
        for code, i in self.line_issues.items():
            self.sink.add(i.severity, code, i.template.replace("{line}", str(i.line)), count=i.count)
        self.line_issues.clear()
        if gzip_cut:
            self.sink.add(
                IssueSeverity.DATA_LOSS,
                "log.gzip_cut",
                f"the gzip stream is cut or damaged ({gzip_cut}); lines up to the damage were read",
            )
        self._finish()

    def _issue_at(self, lineno: int, severity: IssueSeverity, code: str, template: str, count: int = 1) -> None:
        """``count`` issues, the first of line ``lineno`` (``{line}`` in ``template``), kept as data until
        :meth:`finish` so that a chunk's issues can be moved to the lines of the whole file."""
        old = self.line_issues.get(code)
        if old is None:
            self.line_issues[code] = rows.LineIssue(severity, template, lineno, count)
        else:
            old.count += count

    def _block(self, data: bytes, lineno: int) -> int:
        """Lines of ``data`` (UTF-8, ending with a newline) by the Python path: COLL trace lines, which make up
        nearly all of a long NCCL_DEBUG_SUBSYS=COLL log, through one regex over the block; the rest one by one."""
        if not coll_dense(data):
            return self._lines(clean_paste(data.decode("utf-8", "replace")), lineno)
        return self._coll_block(data, lineno)

    def _coll_block(self, data: bytes, lineno: int) -> int:
        """A block of mostly COLL trace lines (:func:`coll_dense`): those through one regex, the rest one by one."""
        text = clean_paste(data.decode("utf-8", "replace"))
        pos = 0
        fast = self._fast_colls
        for m in COLL_LINE.finditer(text):
            start = m.start()
            if start > pos:
                self._in_stall = self._in_stall and pos == 0  # a record line ends a stall warning's rank list
                lineno = self._lines(text[pos:start], lineno)
            lineno += 1
            pos = m.end()
            self._previous_line = None  # a COLL line read here: the next line repeats nothing
            outer, host, pid, dev, op, opc, comm, n = m.groups()
            if " NCCL " in outer:  # two records merged in one line: the careful path
                self._line(text[start : pos - 1].rstrip("\r"), lineno)
                continue
            c = fast.get((host, pid, comm, op))
            if c is None:
                fast[(host, pid, comm, op)] = rows.FastColl(n, 1, opc, opc, lineno, dev, outer, lineno)
            else:
                c.calls += 1
                c.last_opcount = opc
                c.last_line = lineno
        if pos < len(text):
            self._in_stall = self._in_stall and pos == 0
            lineno = self._lines(text[pos:], lineno)
        return lineno

    def _lines(self, text: str, lineno: int) -> int:
        blank = repeated = first_repeat = 0
        previous = self._previous_line
        for line in text.split("\n")[:-1]:
            lineno += 1
            if line == previous and " NCCL " in line:  # the same record again (a retry loop's WARN): nothing new
                repeated += 1
                first_repeat = first_repeat or lineno
            elif line and line != "\r":
                self._line(line.rstrip("\r"), lineno)
            else:  # an empty line only counts, and ends a stall warning's rank list: no call per line
                blank += 1
                self._in_stall = False
            previous = line
        self._previous_line = previous
        self.counts["blank"] += blank
        if repeated:
            self._issue_at(first_repeat, IssueSeverity.INFO, "log.repeated_lines", reader.REPEATED, count=repeated)
        return lineno

    def _line(self, line: str, lineno: int, known: int = reader.UNREAD, hints: int = signal_groups.ALL) -> None:
        """One line; a value it cannot hold (a number out of range, a field cut short: a shape no release
        prints) costs that line, counted. Any other exception is a bug of this code and is raised: it must
        fail the tests, not pass for damaged input. ``hints``: the job-log readers its texts concern
        (:mod:`parsers.nccl.signal_groups`), when the compiled reader found them."""
        try:
            self._read_line(line, lineno, known, hints)
        except LINE_DAMAGE:
            self._damaged(lineno)

    def _damaged(self, lineno: int) -> None:
        self._issue_at(
            lineno,
            IssueSeverity.DATA_LOSS,
            "log.unreadable_line",
            "line {line}: a line of a shape hvd-analyze could not read; skipped",
        )

    def _read_line(self, line: str, lineno: int, known: int, hints: int) -> None:
        """``known``: what the compiled reader found of ``line`` (:data:`~parsers.nccl._lines.NOT_PLAIN`: no plain record,
        the careful path only; :data:`~parsers.nccl._lines.NO_SIGNAL`: no record and no job-log signal either)."""
        if known == reader.NO_SIGNAL:
            self._other_line(line, lineno)
            return
        if "NCCL" in line or joblog.RCCL_VERSION_HINT in line:
            records, merged, doubled = careful_split(line) if known == reader.NOT_PLAIN else split_records(line)
            if records:
                if merged:
                    self.counts["merged"] += 1
                    if any(not r.msg for r in records):
                        self._issue_at(
                            lineno,
                            IssueSeverity.DATA_LOSS,
                            "nccl.merged_records",
                            "line {line}: records of two processes were written into one line "
                            "(NCCL <= 2.3 wrote prefix and message separately); a record without "
                            "its message is counted, its message may appear on a later line",
                        )
                if doubled:
                    self.counts["doubled"] += 1
                for r in records:
                    self._record(r, lineno)
                self._in_stall = False
                return
        self._job_line(line, lineno, hints)

    def _job_line(self, line: str, lineno: int, hints: int) -> None:
        if not self._job_signal(line, lineno, hints):
            self._other_line(line, lineno)

    def job_idle(self) -> bool:
        """Whether no job-log signal of the lines before goes on into the next: a line without any of
        :data:`joblog.SIGNAL_HINTS` and with fewer separators than an autotune header or row has is then no
        signal."""
        return (  # called for most lines the compiled reader reads: plain ands, no tuple, no generator
            self._await_last is None
            and self._wrapped is None
            and self._torch_cut is None
            and self._elastic is None
            and self._mpi_exit is None
            and self._crash is None
            and self._ras is None
            and not self._in_stall
        )

    def _job_signal(self, line: str, lineno: int, hints: int) -> bool:
        """Whether ``line`` was a job-log signal (read here), or part of one. ``hints``: the readers its texts
        concern (:mod:`parsers.nccl.signal_groups`); every reader tries it while a signal spans lines."""
        if not self.job_idle():
            hints = signal_groups.ALL
        if (
            hints & signal_groups.RAS
            and (self._ras is not None or any(map(line.__contains__, ras.RAS_HINTS)))
            and self._ras_text(line, lineno)
        ):
            return True  # NCCL's RAS report: a line of the one being read, or one that opens a report
        if hints & signal_groups.FRAMEWORK and self._framework_text(line, lineno, hints):
            return True
        if hints & signal_groups.ELASTIC and self._elastic_text(line, lineno):
            return True
        if hints & signal_groups.END and self._end_text(line, lineno):  # Open MPI's first non-zero exit, a crash
            return True
        if (
            hints & signal_groups.EXIT
            and any(map(line.__contains__, exits.EXIT_HINTS))
            and (ended := exits.parse_worker_exit(line, lineno))
        ):
            self.exits.append(ended)
            return True
        if hints & signal_groups.WATCHDOG and self._watchdog_text(line, lineno):
            return True
        if hints & signal_groups.PG_MEMBERS and joblog.PG_OPTIONS_HINT in line:
            member = joblog.parse_pg_member(line, lineno)
            if member is not None:
                self.pg_members.append(member)
                return True
        if hints & signal_groups.WORK and any(map(line.__contains__, joblog.WORK_HINTS)):
            work = joblog.parse_watchdog_work(line)
            if work is not None:
                if not self.open_timeouts.attach(self.watchdog, work):
                    self.work_orphans.append((lineno, work))
                return True
        if hints & signal_groups.STALL and (
            any(map(line.__contains__, joblog.STALL_HEADS)) or joblog.STALL_WARNING in line
        ):
            self._in_stall = True
            if "[missing ranks:" not in line:
                return True
        if self._in_stall:
            one = joblog.parse_stall_rank(line)
            found = [one] if one is not None else joblog.parse_stall_ops(line)
            self.stalls += [rows.StallRow(lineno, s.rank, s.shutdown, list(s.tensors), s.more) for s in found]
            if found:
                return True
            self._in_stall = False
        separated = line.count(",") + line.count("|") >= joblog.HEADER_SEPARATORS
        self.autotune_lines += separated
        if self._autotune_layout is None:
            layout = joblog.autotune_header(line) if separated else None
            if layout is not None:
                self._autotune_layout = layout
                return True
        else:
            row = joblog.parse_autotune_row(line, self._autotune_layout, lineno)
            if row is not None:
                self.autotune.append(row)
                return True
        return False

    def _other_line(self, line: str, lineno: int) -> None:
        """A line with no NCCL record and no job-log signal: blank, an NCCL message cut from its header, or
        foreign (application output)."""
        if not line.strip() or PREFIX_ONLY.match(line):
            self.counts["blank"] += 1
        elif classify_once(line.strip()) is not None:
            self.counts["orphan"] += 1
            self._issue_at(
                lineno,
                IssueSeverity.DATA_LOSS,
                "nccl.orphan_message",
                "line {line}: an NCCL message without its HOST:PID:TID prefix (its prefix was "
                "written into another line by a concurrent process): it cannot be attributed and is "
                "not analysed",
            )
        else:
            self.counts["foreign"] += 1

    # -- end ------------------------------------------------------------------------
    def _finish(self) -> None:
        fold_fast_colls(self)
        self._end_crash()  # a report the log ends in: what was read of it
        timed_out, exited = (
            min((w.line for w in self.watchdog), default=None),
            min((e.line for e in self.exits), default=None),
        )
        self.failures.settle(self.procs, timed_out, exited, self.progressed)
        self.watchdog = joblog.fold_restated(self.watchdog)
        self.exits = exits.fold_elastic(self.exits)
        joblog.resolve_global_ranks(self.watchdog, self.pg_members)
        self.versions.extend(bare_versions(self.procs, self._bare_versions, self.versions))
        closing_issues(self)

    @property
    def info(self) -> rows.LogFacts:
        return {
            "lines": self.lines,
            "records": self.counts["records"],
            "processes": len(self.procs),
            "foreign_lines": self.counts["foreign"],
            "blank_lines": self.counts["blank"],
            "merged_lines": self.counts["merged"],
            "watchdog_timeouts": len(self.watchdog),
            "stall_ranks": len(self.stalls),
            "autotune_rows": len(self.autotune),
        }
