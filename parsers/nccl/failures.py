"""WARN records and ``FILE:LINE -> N`` error chains of one NCCL log.

A WARN opens an error of its thread ``(host, pid, tid)``; the chain frames that thread logs
next (within :data:`CHAIN_LINES` lines) extend it, and the last frame's code is its result
code. A frame with no open WARN starts an error of its own (``level`` ``chain``), classified
by its result code. At the end of a log (:meth:`Failures.settle`):

- a chain after which its process went on normally (chose a network, connected, completed
  init) was a probe that failed, not an error;
- a network plugin's failure (aws-ofi-nccl's ``NET/OFI`` WARNs) is the plugin stepping aside
  when NCCL went on with its own transports, and an error when the process said nothing more;
- what a process logs after tearing its own communicator down (``Abort``, ``Destroy``) is
  shutdown noise, and so is a chain without a WARN just before it (the abort unwinding);
- a framework's report of a failed call takes the class of NCCL's first error;
- a failure NCCL often goes on after (a network plugin's or the verbs wrapper's WARN while it probed
  its networks; a chain without a WARN, which a probe or an abort unwinding prints), after which its
  process neither went on nor showed a failure (another error, its abort, a framework's report, a
  worker's exit, a timeout), is ``unconfirmed``: an excerpt cut just after it ends the same way as a
  process that died of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from sys import intern
from typing import TYPE_CHECKING

from parsers.nccl.catalogue import lookup
from parsers.nccl.error_classes import (
    CODE_CLASS,
    OFI_REMEDIATION,
    Verdict,
    classify_chain,
    remediation,
    shm_class,
    verdict,
)
from parsers.nccl.gpu_errors import GPU_FAULT, GPU_OOM
from parsers.nccl.hca_events import PORT_DOWN, async_event
from parsers.nccl.messages import Chain, Retried
from parsers.nccl.process import ProcessState
from parsers.nccl.records import Record, timestamp
from parsers.nccl.rows import ErrorLevel, ErrorRow

if TYPE_CHECKING:
    from parsers.nccl.reports import FrameworkError

CHAIN_LINES = 200  # a FILE:LINE frame this many lines after its thread's WARN starts a chain of its own
PROBE_NOTE = (
    "NCCL went on after this chain (it chose a network, connected or completed init): a probe of a plugin or "
    "transport that failed, not an error"
)
WRAPPER_PROBE_NOTE = (
    "the verbs library wrapper could not start (libibverbs or its provider missing) and NCCL went on with "
    "another network: a probe of InfiniBand that failed, a problem only if InfiniBand was meant to be used"
)
#: the library wrappers NCCL probes InfiniBand through: their WARN is a failed probe when the process then
#: went on with a network other than IB
IB_WRAPPERS = ("misc/ibvwrap.cc", "misc/ibvwrap.cu", "misc/mlx5dvwrap.cc")
PLUGIN_ASIDE_NOTE = (
    "the network plugin could not start here and NCCL went on with its own transports (the plugin stepping "
    "aside): a problem only if that network (EFA) was meant to be used"
)
#: the sources of NCCL's connection setup (the net transport's setup and connect, the transport loop, the
#: proxy that runs them): a chain through them was raised while connecting, after the network was chosen
CONNECT_SOURCES = frozenset({"transport/net.cc", "transport/net.cu", "transport.cc", "transport.cu", "proxy.cc"})
TEARDOWN_NOTE = "logged as this process tore its communicator down (Abort, Destroy): shutdown noise"

WATCHDOG_NOTE = (
    "logged after PyTorch's watchdog timed a collective out in this log, with no WARN of its own before: the "
    "watchdog tearing the communicator down (ncclCommAbort), a consequence of the timeout, not its cause"
)

LATE_GPU_NOTE = (
    "a process's GPU failed (out of memory, a CUDA error) after a collective had already timed out in this log: not "
    "the timeout's cause (a rank tearing its communicators down can ask for memory it does not have, or meet the "
    "error the abort left)"
)

STUCK_NOTE = (
    "PyTorch's watchdog got stuck after a collective timed out earlier in this log (tearing the communicator down "
    "hung), and its heartbeat monitor ended the process: a consequence of the timeout, not its cause"
)

RETRIED_NOTE = (
    "NCCL tried this call again right after this WARN and went on (its connections, its init or its collectives "
    "completed): a transient failure it recovered from, such as a peer not listening yet; a problem only when the "
    "WARN that the retries ran out follows"
)
#: how many lines after a WARN its thread's retry notice may come (other processes' lines interleave)
RETRY_LINES = 50
FLAP_NOTE = (
    "the InfiniBand port went down and NCCL went on after it (its connections, its init or its collectives "
    "completed): a link flap the job survived; look at the link (ibstat, the switch port's counters) if it recurs"
)
#: NCCL 2.8-2.11's remote allocator (bootstrap.cc) ending its service thread when a poll() fails: its "error 1" is
#: the comparison ``poll(...) < 0`` assigned, whatever the errno (a signal interrupting it is enough)
ALLOCATOR_POLL = "[Rem Allocator] Poll failed"
ALLOCATOR_NOTE = (
    "NCCL's remote allocator thread (2.8-2.11) stopped when its poll() failed (its 'error 1' stands for any errno: "
    "a signal interrupting it is enough), and this process went on: the job did not need it then. It serves "
    "the buffers of GPUs that reach each other through an intermediate GPU; a send or receive between such GPUs that "
    "hangs later would follow from it"
)
TEARDOWN_LINES = 50  # a chain this close before its process's Abort/Destroy line is the teardown's own
#: the errors a log keeps (``nccl_errors`` rows, ~1 KB each): the first ones, where the root causes are;
#: beyond them a WARN or chain is counted only. A retry loop of 64 ranks logging the same IB completion
#: error, 3 M lines in a 3 MB .log.gz, took 222 s and 7.5 GB when every one was kept
ERROR_LIMIT = 100_000
ThreadKey = tuple[str | None, int | None, int | None]


class Failures:
    """The errors of a log in file order (``nccl_errors`` rows), and the open one per thread."""

    def __init__(self) -> None:
        self.errors: list[ErrorRow] = []
        self.unkept = 0  # errors past ERROR_LIMIT: counted, not kept
        self.open_error: dict[ThreadKey, ErrorRow] = {}
        #: frames and retry notices with no error open before them in this parser (a later chunk's: parsers.nccl.chunks)
        self.chain_orphans: list[tuple[ThreadKey, int]] = []

    def warn(self, r: Record, lineno: int) -> None:
        """A WARN (:meth:`settle` tells a network plugin's or the verbs wrapper's before its process chose a
        network: a probe, which NCCL may go on after)."""
        v, plugin, probe, flap = _warn_traits(r.msg, r.src)
        err = self._open(r, lineno, "WARN", None if v.benign else v.cls, r.src, r.msg.strip(), v.remediation)
        err.consequence = v.consequence
        if plugin:
            err.plugin = True  # settled by whether NCCL went on
        if probe:
            err.probe = True
        if flap:
            err.flap = True

    def retried(self, r: Record, f: Retried, lineno: int) -> None:
        """A notice that NCCL tries a call again (2.24+'s ``FUNC: … retrying (n/N)``; patched builds print it after a
        WARN of theirs): the WARN just before it on the same thread, of the same function, was not its last word."""
        key = (r.host, r.pid, r.tid)
        err = self.open_error.get(key)
        if err is None:
            self.chain_orphans.append((key, lineno))  # its WARN may be in an earlier chunk
        elif err.level == "WARN" and lineno - err.line <= RETRY_LINES and f.func in err.message:
            err.flap = err.retried = True

    def chain(self, r: Record, f: Chain, lineno: int) -> None:
        frame = f.frame
        err = self.open_error.get((r.host, r.pid, r.tid))
        if err is None:
            self.chain_orphans.append(((r.host, r.pid, r.tid), lineno))
        if err is None or lineno - err.line > CHAIN_LINES:
            cls, fix = classify_chain(f.code, f.src)
            err = self._open(r, lineno, "chain", cls, f.src, frame, fix)
            err.probe = True  # no WARN: a probe's, or an abort unwinding, unless something after it says more
        err.chain.append(frame)
        err.result_code = f.code
        if err.cls and err.cls.startswith("shm_") and f.errno:  # 2.16+ chains carry the errno
            by_errno = shm_class(f.errno)
            if by_errno is not None and by_errno != err.cls:
                err.cls, err.remediation = by_errno, remediation(by_errno)

    def framework(
        self,
        lineno: int,
        src: str | None,
        message: str,
        result_code: int | None,
        last_error: str | None = None,
        named: str | None = None,
        host: str | None = None,
        cause: bool = False,
        advice: str | None = None,
    ) -> ErrorRow:
        """A framework's report of a failed NCCL call (PyTorch's ``NCCL error in: …``): classified by
        the text NCCL kept of the failed call when it carries one (:meth:`last_error`), else by its
        result code (or the class its text ``named``), until :meth:`settle` knows whether NCCL's own
        records name the cause; ``cause``: a failure of its own (nccl-tests' wrong results), which keeps its class."""
        cls, fix = _code_class(result_code) if named is None else (named, remediation(named))
        fix = f"{fix} Here: {advice}" if advice and fix else advice or fix
        err = _row(host, None, None, lineno, "framework", cls, src, message, fix, None, result_code)
        err.consequence = not cause
        self.errors.append(err)
        if last_error:
            self.last_error(err, last_error)
        return err

    def reread(self, err: ErrorRow, report: FrameworkError) -> None:
        """Framework report ``err`` read again, whole: its line was hard-wrapped and the next one completes it."""
        err.src, err.message, err.result_code = report.src, report.message, report.result_code
        err.cls, err.remediation = _code_class(report.result_code)
        if report.last_error:
            self.last_error(err, report.last_error)

    @staticmethod
    def last_error(err: ErrorRow, text: str) -> None:
        """``Last error: <text>`` of a framework's report: the failed call's own words (``Bootstrap : no
        socket interface found``, ``NET/IB : Got completion … error 12``) name the cause more exactly than
        the wrapper's result code, so a text the catalogue classes gives the report its class."""
        if not err.message.startswith("Last error:"):  # the cause first: titles quote the start of the message
            wrapper = err.message.split("Last error:", 1)[0].rstrip(" .,;")
            err.message = f"Last error: {text} (reported as: {wrapper})"
        v = verdict(text)
        if lookup(text) is not None and not v.benign:
            err.cls, err.remediation = v.cls, v.remediation

    def settle(
        self,
        procs: Mapping[tuple[str | None, int | None], ProcessState],
        timed_out: int | None = None,
        exited: int | None = None,
        progressed: int = 0,
    ) -> None:
        """Declassify the chains after which their process went on normally (failed probes), the
        plugins that stepped aside and the shutdown noise (also a chain without a WARN logged after
        the log's first watchdog timeout, line ``timed_out``: the watchdog's teardown), let
        framework reports inherit the class of NCCL's first classified error (they are its
        consequence, not a cause of their own), and mark the probes' failures that nothing after
        them confirms (``exited``: the line of the log's first worker exit; ``progressed``: the last line that shows
        every process went on, nccl-tests' results)."""
        warned = {(e.host, e.pid) for e in self.errors if e.level == "WARN" and e.cls is not None}
        for err in self.errors:
            if (
                timed_out is not None
                and err.level == "chain"
                and err.line > timed_out
                and (err.host, err.pid) not in warned
            ):
                err.cls, err.remediation, err.consequence = None, WATCHDOG_NOTE, True
                continue
            if timed_out is not None and err.cls in (GPU_OOM, GPU_FAULT) and err.line > timed_out:
                err.cls, err.remediation, err.consequence = None, LATE_GPU_NOTE, True
                continue
            proc = procs.get((err.host, err.pid))
            if proc is None:
                continue
            if (  # a chain without a WARN just before its process's own Abort: the abort unwinding
                err.level == "chain"
                and 0 < proc.teardown_line - err.line <= TEARDOWN_LINES
                and (err.host, err.pid) not in warned
            ):
                err.cls, err.remediation = None, TEARDOWN_NOTE
            went_on = max(proc.progress_line, progressed) > err.line
            if err.level == "WARN" and (0 < proc.network_line < err.line or _connecting(err.chain)):
                err.plugin = err.probe = False  # after its process chose a network, or while it connected
            if err.level == "chain" and went_on:
                err.cls, err.remediation = None, PROBE_NOTE
            if err.flap:  # an HCA port that went down, a service thread stopped: a failure only if nothing went on
                err.flap = False
                if went_on:
                    err.cls, err.remediation = (
                        None,
                        RETRIED_NOTE
                        if err.retried
                        else ALLOCATOR_NOTE
                        if err.message.startswith(ALLOCATOR_POLL)
                        else FLAP_NOTE,
                    )
                else:
                    err.probe = True  # unconfirmed, unless something after it shows a failure
            if (
                err.level == "WARN"
                and went_on
                and _source(err.src) in IB_WRAPPERS
                and (
                    proc.verbs_missing
                    or (proc.network is not None and not proc.network.startswith("IB"))
                    or progressed > err.line  # the job's collectives completed: what it probed was not needed
                )
            ):
                err.cls, err.remediation = None, WRAPPER_PROBE_NOTE
            if err.plugin:
                if went_on and err.cls is not None:
                    err.cls, err.remediation = None, PLUGIN_ASIDE_NOTE
                elif not went_on and err.cls is None:  # a probe that was the process's last word
                    err.cls, err.remediation = "system_error", OFI_REMEDIATION
                err.plugin = False
            if proc.teardown_line and err.line > proc.teardown_line and err.cls is not None:
                err.cls, err.remediation, err.consequence = None, TEARDOWN_NOTE, True
        self._confirm(procs, [x for x in (timed_out, exited) if x is not None])
        root = next((e for e in self.errors if e.level != "framework" and e.cls is not None), None)
        if root is not None:
            for err in self.errors:  # the reports of a failed call (not a failure of their own: wrong results)
                if err.level == "framework" and err.consequence:
                    err.cls, err.remediation = root.cls, root.remediation
        for err in self.errors:  # the watchdog stuck in the abort of a collective that timed out before it
            if err.level == "framework" and err.cls == "watchdog_stuck" and timed_out is not None:
                if err.line > timed_out:
                    err.cls, err.remediation = None, STUCK_NOTE

    def _confirm(self, procs: Mapping[tuple[str | None, int | None], ProcessState], ends: list[int]) -> None:
        """Mark ``unconfirmed`` each probe's failure, and each chain without a WARN, after which its process
        neither went on (:meth:`settle` declassified those) nor showed that it failed: no later error of its
        own of another kind, no abort or destroy of its own, and no framework report, worker exit or timeout
        (lines ``ends``) anywhere after it. NCCL goes on after many such failures (it falls back to another
        network; an abort unwinds through chains), so a log that ends there does not tell whether it was fatal."""
        probes = [e for e in self.errors if e.probe]
        for e in probes:
            e.probe = False
        if not probes:
            return
        probed = {id(e) for e in probes}
        # one pass each (a log keeps up to ERROR_LIMIT errors): the last failure of the job, and of each process
        # an error of another kind than a probe's
        last_failure = max([*ends, *(e.line for e in self.errors if e.level == "framework")], default=0)
        last_other: dict[tuple[str | None, int | None], int] = {}
        for e in self.errors:
            if e.cls is not None and e.level != "framework" and id(e) not in probed:
                who = (e.host, e.pid)
                last_other[who] = max(last_other.get(who, 0), e.line)
        for err in probes:
            if err.cls is None:
                continue
            line, who = err.line, (err.host, err.pid)
            proc = procs.get(who)
            confirmed = (
                (proc is not None and (proc.progress_line > line or proc.teardown_line > line))
                or last_failure > line
                or last_other.get(who, 0) > line
            )
            err.unconfirmed = not confirmed

    def _open(
        self, r: Record, lineno: int, level: ErrorLevel, cls: str | None, src: str | None, message: str, fix: str | None
    ) -> ErrorRow:
        err = _row(r.host, r.pid, r.tid, lineno, level, cls, src, message, fix, timestamp(r.outer))
        if len(self.errors) < ERROR_LIMIT:
            self.errors.append(err)
        else:  # its frames still join it (its thread's open error), and go with it
            self.unkept += 1
        self.open_error[(r.host, r.pid, r.tid)] = err
        return err


@lru_cache(maxsize=4096)  # a retry loop, every rank: one WARN's text again and again
def _warn_traits(msg: str, src: str | None) -> tuple[Verdict, bool, bool, bool]:
    """A WARN's verdict and whether it is a network plugin's, a probe's (a plugin's or the verbs wrapper's), and a
    flap: a port down (an error to NCCL up to 2.22, non-fatal to 2.23+) or a service thread stopped (settled by
    what followed)."""
    plugin = msg.lstrip().startswith("NET/OFI")
    probe = plugin or _source(src) in IB_WRAPPERS
    flap = async_event(msg) == PORT_DOWN or msg.lstrip().startswith(ALLOCATOR_POLL)
    return verdict(msg, src), plugin, probe, flap


def _code_class(result_code: int | None) -> tuple[str | None, str | None]:
    """The class a result code stands for when nothing more specific is known, and its remediation."""
    cls = CODE_CLASS.get(result_code) if result_code is not None else None
    return cls, remediation(cls) if cls else None


def _row(
    host: str | None,
    pid: int | None,
    tid: int | None,
    line: int,
    level: ErrorLevel,
    cls: str | None,
    src: str | None,
    message: str,
    fix: str | None,
    time: str | None,
    result_code: int | None = None,
) -> ErrorRow:
    """An ``nccl_errors`` row (its chain and result code grow as frames follow). Its texts are shared with
    every other row of the same words (``sys.intern``): a retry loop repeats one WARN on every rank."""
    return ErrorRow(
        _shared(host),
        pid,
        tid,
        line,
        level,
        cls,
        _shared(src),
        intern(message),
        [],
        result_code,
        _shared(fix),
        _shared(time),
        level == "chain",
    )


def _shared(text: str | None) -> str | None:
    return None if text is None else intern(text)


def _connecting(chain: list[str]) -> bool:
    """Whether an error's result chain passed through the code that sets connections up (a transport's
    setup or connect, the proxy): raised while connecting, after the network was chosen, not while probing."""
    return any(_source(frame.split(" -> ", 1)[0]) in CONNECT_SOURCES for frame in chain)


def _source(src: str | None) -> str | None:
    """``misc/ibvwrap.cc`` of ``misc/ibvwrap.cc:173``."""
    return src.rsplit(":", 1)[0] if src else None
