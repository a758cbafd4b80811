"""The job-log texts that span lines, read by :class:`~parsers.nccl.parser.JobLogParser` through this mixin.

* A framework's report of a failed NCCL call: PyTorch's ``NCCL error in: …`` line (with NCCL's version, or
  without it as releases before ≈1.6 printed it, or hard-wrapped before it: the next line completes it),
  Horovod's ``ncclAllReduce failed: <text>``, nccl-tests' ``Test NCCL failure FILE:LINE '<text> / <last error>'``,
  ``torch.cuda.nccl``'s ``NCCL Error 2: <text>``, PyTorch's failure to fetch a communicator's unique id from
  the c10d store (``[5] is setting up NCCL communicator and retrieving ncclUniqueId …``), the result code's
  name on the next line (``ncclSystemError: System call …``) or alone, and ``Last error:`` with the
  text NCCL kept of the failed call, on the same line or the next (behind the same launcher prefix).
  The report is classified by that text (:meth:`parsers.nccl.failures.Failures.last_error`).
* A watchdog timeout hard-wrapped over a few lines, mid-token or at a space the wrap ate.
* torchelastic's summary of a failed job (``Failures:``, ``Root Cause (first observed failure):``), an entry's
  fields on lines of their own.

What a later chunk cannot resolve alone is left for :mod:`parsers.nccl.chunks`: ``framework_orphans``
(lines that may continue the report before the cut) and the pending state of the cut's last line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from parsers.nccl import crashes, exits, joblog, ras, reports, rows, signal_groups
from parsers.nccl.failures import Failures
from parsers.nccl.job_failures import parse_job_failure
from parsers.nccl.kept import KeptRows

#: lines a hard-wrapped watchdog timeout may span, and the ways of joining them kept at most
WRAPPED_LINES = 4
WRAPPED_READINGS = 8
#: a launcher's tag at a line's start (``[rank3]:``, ``[trainer0|0]:``): its wrapped continuation carries it too
_LINE_TAG = re.compile(r"^\[[^\]\s]{1,64}\]:\s?")
#: what opens a process's report of its crash: plain tests, not a loop (most lines of a log come here)
_UCX_OPENS, _OMPI_OPENS, _PY_OPENS = crashes.CRASH_HINTS
#: lines after a framework's report of a failed NCCL call that still belong to it (result name, Last error)
FRAMEWORK_LINES = 6


@dataclass(slots=True)
class ElasticEntry:
    """Where a torchelastic summary's reading is: its section, the line of its last field, the entry's fields."""

    root: bool  # in the Root Cause section
    since: int
    host: str | None = None
    rank: int | None = None


@dataclass(slots=True)
class MpiExit:
    """Where the reading of Open MPI's report of the first process to exit with a non-zero code is."""

    since: int  # the report's first line
    launcher: str  # mpirun, or horovodrun (its Gloo launcher raises the same text)
    rank: int | None = None


class JobTexts:
    """The parser's state and steps for texts that span lines (mixed into the job-log parser)."""

    failures: Failures
    watchdog: list[rows.WatchdogRow]
    versions: KeptRows[rows.VersionRow]
    exits: list[rows.ExitRow]

    def _init_job_texts(self) -> None:
        self._framework: rows.ErrorRow | None = None  # the last framework report of a failed NCCL call
        self._await_last: tuple[int, str, rows.ErrorRow] | None = None  # "Last error:" ended a line: its text next
        self.framework_orphans: list[int] = []  # lines that may continue an earlier chunk's framework report
        self._wrapped: tuple[int, list[str], str] | None = None  # a watchdog line hard-wrapped: its readings so far
        self._elastic: ElasticEntry | None = None  # a torchelastic summary being read
        self._mpi_exit: MpiExit | None = None  # Open MPI's report of the first non-zero exit being read
        self._crash: crashes.Crash | None = None  # a process's report of the signal that killed it, being read
        self.progressed = 0  # the last line that shows every process of the job went on (nccl-tests' results)
        self.crashed = 0  # the first line of the last crash report (another handler's report of it may follow)
        #: a framework report without NCCL's version (kept already): its line, and the row the next line may complete
        self._torch_cut: tuple[int, str, rows.ErrorRow] | None = None
        self._ras: ras.RasReport | None = None  # NCCL's RAS report being read
        self.ras: list[rows.RasRow] = []

    def _ras_text(self, line: str, lineno: int) -> bool:
        """Whether ``line`` was part of NCCL's RAS report (its rows kept), or opened one pasted without its start."""
        if self._ras is None:
            if not ras.opens(line):
                return False
            self._ras = ras.RasReport(lineno)
        part, row = ras.read(self._ras, line, lineno)
        if not part:
            self._ras = None
            return False
        if row is not None:
            self.ras.append(row)
        return True

    # -- framework reports -------------------------------------------------------------
    def _framework_text(self, line: str, lineno: int, hints: int) -> bool:
        """Whether ``line`` was part of a framework's report of a failed NCCL call (or PyTorch's version); ``hints``:
        the readers its texts concern (:mod:`parsers.nccl.signal_groups`)."""
        if self._await_last is not None and self._last_error_text(line, lineno):
            return True
        if self._torch_cut is not None and self._torch_rest(line, lineno):
            return True
        if (reports.TORCH_ERROR_HINT in line or reports.ASYNC_HINT in line) and reports.TORCH_ERROR.search(
            line
        ) is None:
            head = reports.torch_error_head(line)  # older PyTorch's report, or one hard-wrapped before its version
            if head is not None:
                self._framework_error(head, line, lineno, None)
                if self._framework is not None:
                    self._torch_cut = (lineno, line.rstrip(), self._framework)
                return True
        if joblog.VLLM_VERSION_HINT in line and (vllm := joblog.VLLM_VERSION.search(line)) is not None:
            self.versions.append(rows.VersionRow(None, None, lineno, vllm["ver"], "", "vllm"))
            return True
        if joblog.VERSION_HINT in line:  # PyTorch prints the version it was built with, and wraps NCCL's errors
            if (client := reports.RAS_VERSION.search(line)) is not None:  # NCCL's RAS client's report starts with it
                self.versions.append(rows.VersionRow(None, None, lineno, client["ver"], client["cuda"], "ras"))
                self._ras = ras.RasReport(lineno)
                return True
            version, err = reports.parse_torch_version(line), reports.parse_torch_error(line)
            if version is not None:
                self.versions.append(rows.VersionRow(None, None, lineno, version, "", "pytorch"))
            if err is not None:  # each "NCCL error in:" is a report of its own (one per failed call)
                self._framework_error(err, line, lineno, None)
            if version is not None or err is not None:
                return True
        if joblog.RESULT_HINT in line and (named := reports.parse_result_name(line)) is not None:
            # "ncclSystemError: …" after PyTorch's "NCCL error in:" line (the same report), or alone
            recent = self._recent_framework(lineno)
            if recent is None:
                self.framework_orphans.append(lineno)
            self._framework_error(named, line, lineno, recent)
            return True
        if joblog.CALL_FAILED_HINT in line and (failed := reports.parse_call_failed(line)) is not None:
            self._framework_error(failed, line, lineno, None)  # Horovod's report: one per failed call
            return True
        if (reports.NUMBERED_HINT in line or reports.TF_HINT in line) and (
            numbered := reports.parse_numbered(line)
        ) is not None:  # torch.cuda.nccl's (DataParallel's) report, TensorFlow's
            self._framework_error(numbered, line, lineno, None)
            return True
        if reports.NCCL_TESTS_HINT in line and (tested := reports.parse_nccl_tests(line)) is not None:
            self._framework_error(tested, line, lineno, None)  # nccl-tests' report, NCCL's last error in it
            return True
        if any(map(line.__contains__, joblog.HEARTBEAT_HINTS)) and (beat := reports.parse_heartbeat(line)) is not None:
            report, fatal = beat
            recent = self._recent_framework(lineno)
            if fatal and recent is not None and recent.cls == "watchdog_stuck":
                recent.message += f" {report.message}"  # how long it was stuck: the same report's second line
            else:  # the process is ended because its watchdog was stuck
                self._framework_error(report, line, lineno, None)
            return True
        if joblog.WATCHDOG_EXCEPTION_HINT in line and (fault := reports.parse_watchdog_exception(line)) is not None:
            self._framework_error(fault, line, lineno, None)  # the watchdog met a CUDA error: the GPU faulted
            return True
        if hints & signal_groups.JOB_FAILURE and (failed := parse_job_failure(line)) is not None:
            # the framework's own failures (job_failures)
            self._framework_error(failed, line, lineno, None)
            return True
        if joblog.OUT_OF_BOUNDS_HINT in line:
            if (wrong := reports.parse_out_of_bounds(line)) is not None:
                self._framework_error(wrong, line, lineno, None)  # nccl-tests found wrong results: a cause of its own
                return True
            if reports.NCCL_TESTS_OK.search(line) is not None:
                self.progressed = lineno  # nccl-tests' collectives completed, right, on every rank: the job went on
                return True
        if reports.UNIQUE_ID_HINT in line and (fetch := reports.parse_unique_id(line)) is not None:
            self._framework_error(fetch, line, lineno, None)  # a rank never got its communicator's unique id
            return True
        if joblog.LAST_ERROR_HINT not in line:
            return False
        recent = self._recent_framework(lineno)
        if recent is None:
            self.framework_orphans.append(lineno)
            return False
        last = reports.LAST_ERROR.search(line)
        if last is not None and last["text"].strip():
            self.failures.last_error(recent, last["text"].strip())
        elif last is not None:
            self._await_last = (lineno, line[: last.start()], recent)
        return True

    def _torch_rest(self, line: str, lineno: int) -> bool:
        """The line after a framework report without NCCL's version: its rest when the two, joined as a hard
        wrap cuts (mid-token, at a space, after the comma), read as PyTorch's whole report (its text and
        version); the report kept from the first line is then completed. Else the report stays as it was."""
        at, first, row = self._torch_cut or (0, "", None)
        self._torch_cut = None
        if row is None or lineno != at + 1:
            return False
        tag = _LINE_TAG.match(first)
        piece = (line[tag.end() :] if tag and line.startswith(tag.group(0)) else line).strip()
        if reports.TORCH_ERROR_HINT in piece:  # a report of its own (the next rank's, the next call's)
            return False
        readings = [first + sep + piece for sep in ("", " ", ", ")] if piece else []
        whole = [(text, w) for text in readings if (w := reports.parse_torch_error(text, bare=False)) is not None]
        if not whole:
            return False
        text, report = next(((t, w) for t, w in whole if w.result_code is not None), whole[0])
        self.failures.reread(row, report)
        version = reports.parse_torch_version(text)
        if version is not None:
            self.versions.append(rows.VersionRow(None, None, at, version, "", "pytorch"))
        return True

    def _recent_framework(self, lineno: int) -> rows.ErrorRow | None:
        """The framework report a line a few lines after it still belongs to (its result code's name,
        its ``Last error:``)."""
        f = self._framework
        return f if f is not None and lineno - f.line <= FRAMEWORK_LINES else None

    def _framework_error(self, err: reports.FrameworkError, line: str, lineno: int, same: rows.ErrorRow | None) -> None:
        if same is None:
            same = self.failures.framework(
                lineno,
                err.src,
                err.message,
                err.result_code,
                named=err.cls,
                host=err.host,
                cause=err.cause,
                advice=err.advice,
            )
        self._framework = same
        if err.last_error:
            self.failures.last_error(same, err.last_error)
        elif (last := reports.LAST_ERROR.search(line)) is not None:  # "Last error:" ends the line: its text follows
            self._await_last = (lineno, line[: last.start()], same)

    def _last_error_text(self, line: str, lineno: int) -> bool:
        """The line after a bare ``Last error:``: the failed call's text (behind the same launcher prefix)."""
        if self._await_last is None:
            return False
        at, prefix, err = self._await_last
        self._await_last = None
        text = line[len(prefix) :] if prefix.strip() and line.startswith(prefix) else line
        if lineno - at > 2 or not text.strip() or " NCCL " in text:
            return False
        self.failures.last_error(err, text.strip())
        return True

    # -- torchelastic's summary ----------------------------------------------------------
    def _elastic_text(self, line: str, lineno: int) -> bool:
        """Whether ``line`` was part of torchelastic's summary of a failed job (its sections, entries and
        fields; an entry's traceback lines are read as any other line)."""
        st = self._elastic
        root = exits.ELASTIC_ROOT in line
        if root or line.strip().endswith(exits.ELASTIC_OTHERS):
            self._elastic = ElasticEntry(root, lineno)
            return True
        if st is None:
            return False
        end = exits.ELASTIC_END.search(line) is not None
        if end or lineno - st.since > exits.ELASTIC_LINES:
            self._elastic = None
            return end
        if exits.ELASTIC_ENTRY.search(line):
            st.since, st.host, st.rank = lineno, None, None
            return True
        m = exits.ELASTIC_FIELD.search(line)
        if m is None:
            return False
        st.since = lineno
        if m["key"] == "host":
            st.host = m["value"]
        elif m["key"] == "rank":
            r = exits.ELASTIC_RANK.match(m["value"])
            st.rank = int(r["rank"]) if r else None
        elif (ended := exits.elastic_exit(lineno, st.root, st.host, st.rank, m["value"])) is not None:
            self.exits.append(ended)
        return True

    # -- a worker's end: Open MPI's first non-zero exit, a process's report of its crash --------
    def _end_text(self, line: str, lineno: int) -> bool:
        """Whether ``line`` was part of a report of a worker's end that spans lines."""
        return self._mpi_exit_text(line, lineno) or self._crash_text(line, lineno)

    def _crash_text(self, line: str, lineno: int) -> bool:
        """Whether ``line`` was part of a process's report of the signal that killed it: its first line, its signal,
        a frame of its backtrace, its last line (lines of the process's own prefix are all its)."""
        opens = _UCX_OPENS in line or _OMPI_OPENS in line or _PY_OPENS in line
        if opens and (opened := crashes.open_crash(line, lineno)) is not None:
            if opened.reporter == "python" and self.crashed and lineno - self.crashed <= crashes.CRASH_LINES:
                return True  # Python's faulthandler after another handler's report of the same crash
            self._end_crash()
            self._crash, self.crashed = opened, lineno
            return True
        st = self._crash
        if st is None:
            return False
        if lineno - st.since > crashes.CRASH_LINES:  # cut: what was read of it
            self._end_crash()
            return False
        if crashes.END.search(line) is not None:
            self._end_crash()
            return True
        frames = st.frames
        st.read(line)
        return st.frames > frames or (st.host is not None and f"[{st.host}:{st.pid}]" in line)

    def _end_crash(self) -> None:
        """The report read so far becomes the worker's end and, when NCCL's code was where it crashed, an error."""
        st, self._crash = self._crash, None
        if st is None:
            return
        text = st.describe()
        self.exits.append(rows.ExitRow(st.since, st.reporter, None, st.host, st.pid, None, st.signal, text))
        if st.in_nccl:
            self.failures.framework(st.since, None, text[0].upper() + text[1:], None, named="nccl_crash", host=st.host)

    def _mpi_exit_text(self, line: str, lineno: int) -> bool:
        """Whether ``line`` was part of Open MPI's report of the first process that exited with a non-zero
        code: its opening sentence, the rest of it, the process's name (its rank) and its exit code."""
        if exits.MPI_FIRST_EXIT in line:
            self._mpi_exit = MpiExit(lineno, "horovodrun" if "Horovod detected" in line else "mpirun")
            return True
        st = self._mpi_exit
        if st is None:
            return False
        if lineno - st.since > exits.MPI_LINES:  # cut before its exit code
            self._mpi_exit = None
            return False
        if (m := exits.MPI_PROCESS.search(line)) is not None:
            st.rank = int(m["rank"] or m["bare"])
            return True
        if (m := exits.MPI_EXIT_CODE.search(line)) is not None:
            self.exits.append(exits.mpi_first_exit(lineno, st.launcher, st.rank, int(m["code"])))
            self._mpi_exit = None
            return True
        return "first process to do so" in line or not line.strip(" \t\r>-")  # its sentence's end, a blank line

    # -- watchdog timeouts -------------------------------------------------------------
    def _watchdog_text(self, line: str, lineno: int) -> bool:
        """Whether ``line`` was a watchdog timeout, or the start or rest of a hard-wrapped one."""
        if self._wrapped is not None and self._unwrap(line, lineno):
            return True
        if joblog.WATCHDOG_HINT not in line:
            return False
        w = joblog.parse_watchdog(line, lineno)
        if w is not None:
            self.watchdog.append(w)
            return True
        if "Watchdog caught collective operation timeout" in line:  # hard-wrapped: the rest on the next lines
            tag = _LINE_TAG.match(line)
            self._wrapped = (lineno, [line.rstrip("\r\n")], tag.group(0) if tag else "")
            return True
        return False

    def _unwrap(self, line: str, lineno: int) -> bool:
        """A line after a watchdog timeout line that did not parse: its continuation when the two read
        as one timeout, joined as they were cut (mid-token, or at a space the wrap ate)."""
        at, readings, tag = self._wrapped or (0, [], "")
        self._wrapped = None
        piece = (line[len(tag) :] if tag and line.startswith(tag) else line).strip()
        if not piece or lineno - at > WRAPPED_LINES:
            return False
        joined = [r + sep + piece for r in readings for sep in ("", " ")]
        for text in joined:
            w = joblog.parse_watchdog(text, at)
            if w is not None:
                self.watchdog.append(w)
                return True
        if lineno - at < WRAPPED_LINES and "milliseconds" not in piece:
            self._wrapped = (at, joined[:WRAPPED_READINGS], tag)
            return True
        return False
