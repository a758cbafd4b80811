"""The app's analyses run in worker processes, a bounded number at a time, each under a time and a
memory limit: a hostile or huge upload can fail its own run, never stall or exhaust the server.

:class:`WorkerPool` hands a :class:`Work` (what to read and where to write) to a fresh process
started from a fork server (on Linux: it imports the analyzer once, so a worker starts in
milliseconds, and the server's request threads are never forked). The worker reports its stage
and progress through a pipe; the thread that waits for it enforces the limits: it kills the
worker when it runs past :attr:`Budget.seconds` or its resident memory passes
:attr:`Budget.memory` (checked ten times a second; an address-space limit of memory + 2 GiB
stops a sudden huge allocation before the check sees it). A worker that dies reports nothing:
the message says how it ended.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from dashboards.work import Report, Work, make_run

GIB = 1 << 30
POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class Budget:
    """What one run's worker may use, and how many run at once."""

    workers: int = 2
    seconds: float = 3600.0
    memory: int = 4 * GIB  # resident bytes


@dataclass(slots=True)
class Outcome:
    """How a worker ended: ``error`` is None when it wrote the run's analysis."""

    error: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def _rss(pid: int) -> int:
    """Resident bytes of process ``pid`` (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # no /proc (not Linux): the data-segment limit still holds
        return 0


def _human(n: float) -> str:
    return f"{n / GIB:.1f} GiB" if n >= GIB else f"{n / (1 << 20):.0f} MiB"


class WorkerPool:
    """Runs :class:`Work` in worker processes, at most ``budget.workers`` at a time."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget or Budget()
        self._slots = threading.BoundedSemaphore(self.budget.workers)
        method = "forkserver" if sys.platform == "linux" else "spawn"
        self._ctx: Any = mp.get_context(method)
        if method == "forkserver":
            self._ctx.set_forkserver_preload(["dashboards.worker"])

    def run(self, work: Work, report: Report) -> Outcome:
        """Make one run (blocking; call it on the run's own thread). Waits for a free slot first."""
        with self._slots:
            return self._run(work, report)

    def _run(self, work: Work, report: Report) -> Outcome:
        recv, send = self._ctx.Pipe(duplex=False)
        memory = self.budget.memory
        proc = self._ctx.Process(
            target=_main,
            args=(work, send, memory, os.getpid(), self.budget.seconds),
            daemon=True,
            name="hvd-analyze-run",
        )
        proc.start()
        send.close()
        out = Outcome()
        start = time.monotonic()
        ended: str | None = None
        try:
            while ended is None:
                if recv.poll(POLL_S):
                    try:
                        kind, value = recv.recv()
                    except (EOFError, OSError):
                        ended = _death(proc)
                        continue
                    if kind == "done":
                        return out
                    if kind == "failed":
                        out.error = str(value)
                        return out
                    if kind == "files":
                        out.files = list(value)
                    elif kind == "labels":
                        out.labels = dict(value)
                    report(kind, value)
                elif not proc.is_alive():
                    ended = _death(proc)
                # the limits are checked on every turn: a worker that reports often cannot outrun them
                if ended is None and time.monotonic() - start > self.budget.seconds:
                    ended = (
                        f"the analysis ran past the time limit of {self.budget.seconds:.0f} s per run and was "
                        "stopped; ingest it with `hvd-analyze ingest` on a machine of your own, or start the "
                        "app with a larger --job-timeout"
                    )
                elif ended is None and (rss := _rss(proc.pid or 0)) > memory:
                    ended = (
                        f"the analysis used {_human(rss)} of memory, over the limit of {_human(memory)} per run, "
                        "and was stopped; start the app with a larger --job-memory, or a smaller --memory-budget "
                        "to analyse big timelines through a window"
                    )
        finally:
            if proc.is_alive():
                proc.kill()
            proc.join(5)
            recv.close()
        out.error = ended
        return out


def _death(proc: Any) -> str:
    proc.join(5)
    code = proc.exitcode
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        why = " (the system ran out of memory?)" if -code == signal.SIGKILL else ""
        return f"the analysis process was killed by {name}{why}; nothing of this run was kept"
    return f"the analysis process ended with exit code {code} before it finished"


def internal_error(exc: BaseException) -> str:
    """What a user reads when hvd-analyze itself failed on their run: that it is a bug, not their input,
    and what to send, with the traceback in the server's log (the command line's words for exit 3)."""
    import traceback

    traceback.print_exception(exc)  # the server's stderr: what a bug report needs
    return (
        f"internal error in hvd-analyze ({type(exc).__name__}: {exc}): a bug, not a problem of your files. The "
        "server's log has the traceback; `HVD_ANALYZE_DEBUG=1 hvd-analyze report FILES` shows it too"
    )


#: seconds between a worker's checks that the server that owns its run is still there
OWNER_POLL_S = 0.5


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # there, under another user (a reused pid): not ours, but alive
        return True
    return True


def watch_owner(owner: int, seconds: float) -> None:
    """End this worker when the server that owns its run is gone (killed: nothing watches this worker's
    time and memory any more, and a restarted server has marked the run failed) or when it runs past its
    time limit (the server's own watch, kept here too). It ends without writing anything."""
    deadline = time.monotonic() + seconds
    while _alive(owner) and time.monotonic() < deadline:
        time.sleep(OWNER_POLL_S)
    os._exit(3)


def _main(work: Work, send: Connection, memory: int, owner: int, seconds: float) -> None:
    """The worker process: limit its address space, end with its server, make the run, report how it went."""
    threading.Thread(target=watch_owner, args=(owner, seconds), daemon=True, name="owner-watch").start()
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        cap = memory + 2 * GIB  # a backstop for one sudden allocation; the parent watches resident memory
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))

    def report(kind: str, value: Any) -> None:
        send.send((kind, value))

    try:
        make_run(work, report)
        send.send(("done", None))
    except MemoryError:
        send.send(("failed", f"the analysis needed more memory than the limit of {_human(memory)} per run allows"))
    except Exception as exc:  # whatever happens, the run fails alone with a message
        from analyzer import HvdAnalyzeError

        send.send(("failed", str(exc) if isinstance(exc, HvdAnalyzeError) else internal_error(exc)))
    finally:
        send.close()
