"""``job.worker_exit``: a worker died, and its launcher said how.

Signal: the launcher's report of a worker's end (``worker_exits``): ``horovodrun``'s ``Process N
exit with status code C``, Open MPI's ``mpirun noticed that process rank N ... exited on signal S`` and its
report of the first process to exit with a non-zero code (``Process name: [[J,1],N]``, ``Exit code: C``),
torchrun's ``failed (exitcode: -S)`` and its agent's summary (``Root Cause (first observed failure)``: the job's
rank, host and exit code), Slurm's ``srun: error: NODE: task N: Killed``, DeepSpeed's launcher's ``exits with
return code = -S`` (no rank: the command it prints is not the failed one's). The first
abnormal end (a signal, or a nonzero exit code) is the cause; the ends after it are the launcher
tearing the job down (SIGTERM, exit 143) and are listed as consequences. SIGKILL without a
traceback is most often the kernel's out-of-memory killer, or the scheduler; an exit code that is no signal's is
the program's own, so its last lines say why. When those lines are the NCCL error the log reported first (the root
of its first incident, earlier in the same file), the exit is that error's consequence: a warning naming it, the
error the job's failure.
"""

from __future__ import annotations

import signal
from typing import Any

import pandas as pd

from analyzer.detectors._logs import abnormal_exits, src
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel
from parsers.nccl.crashes import REPORTERS
from parsers.nccl.exits import ELASTIC_ROOT, OOM_KILLED

CODE = "job.worker_exit"
#: why a signal ends a worker, as an SRE reads it
CAUSES = {
    signal.SIGKILL: "SIGKILL: the kernel's out-of-memory killer, the scheduler (time or memory limit) or a user; "
    "a process cannot catch it, so it leaves no traceback",
    signal.SIGTERM: "SIGTERM: asked to stop (the launcher after another worker failed, or the scheduler)",
    signal.SIGSEGV: "SIGSEGV: a crash in native code (a framework, a driver, a custom op)",
    signal.SIGABRT: "SIGABRT: the process aborted itself (a C++ exception, an assertion, NCCL's abort)",
    signal.SIGBUS: "SIGBUS: a bad memory access, often /dev/shm full in a container",
}


def _who(row: pd.Series) -> str:
    return f"rank {int(row['rank'])}" if pd.notna(row["rank"]) else "a worker (rank not named)"


def _oom_killed(row: pd.Series) -> bool:
    """Whether the launcher's line names the out-of-memory killer (Slurm says which killer it was)."""
    return any(t in row["text"] for t in OOM_KILLED)


def _how(row: pd.Series) -> str:
    if _oom_killed(row):  # Slurm says which killer it was
        return "out of memory: the kernel's out-of-memory killer (SIGKILL), at the step's memory limit or the node's"
    sig = row["signal"]
    if pd.notna(sig) and int(sig) in signal.valid_signals():
        s = signal.Signals(int(sig))
        return CAUSES.get(s, s.name)
    return f"exit code {int(row['exit_code'])}" if pd.notna(row["exit_code"]) else "ended"


def _class(err: Any) -> str:
    """An error's class in words: ``NCCL system error``."""
    return f"NCCL {str(err['class']).replace('_', ' ')}"


def _reporter(launcher: str) -> str:
    """Who said how the worker ended: its launcher, or its own signal handler (a crash's backtrace)."""
    return f"its own signal handler ({launcher}'s)" if launcher in REPORTERS else f"the launcher ({launcher})"


def _action(first: pd.Series, whose: str, signalled: bool) -> str:
    """What to read first about the end of ``first`` (``whose``: that worker, in words)."""
    line = int(first["line"])
    if first["launcher"] == "python":
        return (
            f"Read the Python frames its faulthandler printed (line {line}) and the lines just before them: a C++ "
            "exception's 'what():', or an NCCL or CUDA error there, says why it ended."
        )
    if first["launcher"] in REPORTERS:
        return (
            f"Read the backtrace its signal handler printed (line {line}): below the handler's own frames (libucs, "
            "libpthread, the C library's sigaction) the first library is where it crashed; a SIGBUS in a container is "
            "most often /dev/shm full (--shm-size, --ipc=host)."
        )
    if _oom_killed(first):
        return (
            "Lower the host memory the workers need: fewer data loader workers or a smaller prefetch, less pinned "
            "memory, datasets read lazily instead of loaded whole; or ask the scheduler for more (--mem, "
            "--mem-per-gpu). sacct -j JOB -o JobID,MaxRSS,ReqMem shows what the step used against its limit."
        )
    if signalled or pd.isna(first["exit_code"]):
        return (
            f"Look at {whose} host at that time: the kernel log (dmesg: 'Out of memory: Killed process'), the "
            "scheduler's record of the job (time and memory limits), and the worker's own last lines."
        )
    return (
        f"Read {whose} own last lines (its traceback or error message): it ended by itself with exit code "
        f"{int(first['exit_code'])}, not by a signal, so the program said why before it exited."
    )


class WorkerExit(LogDetector):
    name = "worker_exit"
    code = CODE
    requires = ("worker_exits",)
    why_required = (
        "no job log with a launcher's report of a worker's end (horovodrun, mpirun, torchrun, srun) was ingested"
    )

    def check(self, model: NcclModel) -> list[Finding]:
        w = model.worker_exits
        if w.empty:
            return []
        bad = abnormal_exits(w)
        if bad.empty:
            return []
        # torchelastic's summary prints the first failure last (its Root Cause section): it goes first
        later = ~((bad["launcher"] == "torchelastic") & bad["text"].str.startswith(ELASTIC_ROOT))
        bad = bad.assign(_later=later).sort_values(["file", "_later", "line"])
        first = bad.iloc[0]
        rank = None if pd.isna(first["rank"]) else int(first["rank"])
        where = f" on {first['host']}" if isinstance(first["host"], str) else ""
        signalled = pd.notna(first["signal"])
        code = "" if pd.isna(first["exit_code"]) or not signalled else f", exit code {int(first['exit_code'])}"
        who = f"Rank {rank}" if rank is not None else "A worker"
        whose = f"{'rank ' + str(rank) if rank is not None else 'that worker'}'s"
        action = _action(first, whose, signalled)
        after = bad.iloc[1:]
        # the same end reported again (a launcher's summary of an end it streamed, in another file)
        after = after[~((after["rank"] == first["rank"]) & (after["exit_code"] == first["exit_code"]))]
        evidence = [
            Evidence(
                summary=f"{first['launcher']}: {first['text']}",
                sources=(src(first["file"], first["line"]),),
                metrics={"rank": float(rank if rank is not None else -1)},
            )
        ]
        if len(after):
            evidence.append(
                Evidence(
                    summary=f"then {len(after)} other worker(s) ended as the job was torn down: "
                    + "; ".join(f"{_who(r)}: {_how(r).split(':')[0]}" for _, r in after.head(8).iterrows())
                )
            )
        cause = model.incidents[0].roots[0] if model.incidents else None
        if cause is not None and (signalled or cause["file"] != first["file"] or cause["line"] > first["line"]):
            cause = None  # a signal ends a worker of its own; an error in another file or after it is no cause of it
        if cause is not None:  # its program's exit code after the error it reported: the error is why
            return [
                Finding(
                    code=CODE,
                    severity=Severity.WARNING,
                    title=f"{who} exited{where}: {_how(first)}, after {_class(cause)}",
                    summary=(
                        f"{first['file']}: {_reporter(first['launcher'])} reports that {who.lower()}{where} ended "
                        f"first: {_how(first)}, after the {_class(cause)} logged at line {cause['line']} (see "
                        "nccl.error): a program's exit code when that error reached it, not a cause of its own."
                    ),
                    detector=self.name,
                    evidence=tuple(evidence),
                    ranks=() if rank is None else (rank,),
                    labels={"consequence_of": str(cause["class"])},
                )
            ]
        return [
            Finding(
                code=CODE,
                severity=Severity.CRITICAL,
                title=f"{who} died{where}: {_how(first).split(':')[0]}{code}",
                summary=(
                    f"{first['file']}: {_reporter(first['launcher'])} reports that {who.lower()}{where} ended "
                    f"first: {_how(first)}. The job stopped because of it."
                ),
                detector=self.name,
                evidence=tuple(evidence),
                suggestions=(Suggestion(action=action),),
                ranks=() if rank is None else (rank,),
            )
        ]
