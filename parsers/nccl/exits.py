"""Launchers' reports of a worker's end (``docs/formats/nccl-log.md`` §5): horovodrun's ``Process 1 exit with
status code 137.``, Open MPI's ``mpirun noticed that process rank 1 with PID … on node … exited on signal 9
(Killed).`` and its report of the first non-zero exit over lines, torchrun's ``failed (exitcode: -9) local_rank: 1
(pid: 4242)`` and torchelastic's failure summary, Slurm's ``srun: error: node7: task 3: Killed`` (its other
words: ``Out Of Memory``, ``Exited with exit code N``, a signal's name, a range of tasks), DeepSpeed's launcher.
Each becomes a ``worker_exits`` row with the signal that ended it when the report or the exit code says."""

from __future__ import annotations

import re

from parsers.nccl.rows import ExitRow

#: (launcher, pattern): a worker's end as each launcher reports it
EXITS = (
    ("horovodrun", re.compile(r"\bProcess (?P<rank>\d+) exit with status code (?P<code>-?\d+)")),
    (
        "mpirun",
        re.compile(
            r"mpirun noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<host>\S+) "
            r"exited on signal (?P<sig>\d+)"
        ),
    ),
    ("torchrun", re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<rank>\d+) \(pid: (?P<pid>\d+)\)")),
    (  # srun: its hosts (a host list when tasks of several ended alike), its task(s), how: SLURM's words or strsignal's
        "srun",
        re.compile(
            r"srun: error: (?P<host>[^\s:]+): tasks? (?P<rank>\d+)[-,\d]*: (?:(?P<oom>Out Of Memory)|Exited with exit code "
            r"(?P<code>\d+)|(?P<signame>[A-Z][a-z]+(?:[ /][a-z]+)*(?: \d)?)(?: \(core dumped\))?\s*$)"
        ),
    ),
    # Slurm's step daemon, when the kernel's out-of-memory killer ended processes of the step (its cgroup's limit or
    # the node's): ``Detected 1 oom_kill event in StepId=123.0.`` (``oom-kill event(s) in step 123.0 cgroup`` before)
    ("slurmstepd", re.compile(r"slurmstepd: error: Detected (?P<oom>\d+) oom[-_]kill events?(?:\(s\))? in ")),
    # DeepSpeed's launcher: the command it prints is the last one it started, not the one that failed: no rank
    ("deepspeed", re.compile(r"\[launch\.py:\d+:sigkill_handler\] .* exits with return code = (?P<code>-?\d+)")),
)
EXIT_HINTS = (
    "exit with status code",
    "exited on signal",
    "(exitcode:",
    "srun: error:",
    "exits with return code",
    "kill event",
)
#: the texts of a report that the kernel's out-of-memory killer ended the worker
OOM_KILLED = (": Out Of Memory", "oom_kill event", "oom-kill event")
#: Open MPI's report of the first process to exit with a non-zero code (mpirun, mpiexec; prterun in 5.x), over lines
#: (horovodrun's Gloo launcher raises the same text, ``Process name: 1``, the rank alone):
#: ``mpirun detected that one or more processes exited with non-zero status, thus causing`` / ``the job to be
#: terminated. The first process to do so was:`` / (blank) / ``Process name: [[56171,1],6]`` (the job's rank last;
#: 5.x: ``[prterun-host-123@1,6]``) / ``Exit code:    3``
MPI_FIRST_EXIT = "detected that one or more processes exited with non-zero status"
MPI_PROCESS = re.compile(r"Process name:\s*(?:\[(?:\[\d+,\d+\]|[^\]\s]*@\d+),(?P<rank>\d+)\]|(?P<bare>\d+)\s*$)")
MPI_EXIT_CODE = re.compile(r"Exit code:\s*(?P<code>-?\d+)\s*$")
MPI_LINES = 8  # lines from the report's first to its exit code
#: torchelastic's summary of a failed job (``ChildFailedError``): its two sections, each entry ``[i]:`` and then
#: ``host : H``, ``rank : R (local_rank: L)``, ``exitcode : C (pid: P)`` on lines of their own, then a traceback that
#: may take many lines; the root cause is the first failure, whatever the order the summary prints them in
ELASTIC_ROOT, ELASTIC_OTHERS = "Root Cause (first observed failure):", "Failures:"
ELASTIC_FIELD = re.compile(r"(?:^|[\s:\]>|])(?P<key>host|rank|exitcode) *: (?P<value>\S(?:.*\S)?)\s*$")
ELASTIC_RANK = re.compile(r"(?P<rank>\d+) \(local_rank: \d+\)")
ELASTIC_EXIT = re.compile(r"(?P<code>-?\d+) \(pid: (?P<pid>\d+)\)")
ELASTIC_ENTRY = re.compile(r"(?:^|[\s:\]>|])\[\d+\]:\s*$")
ELASTIC_END = re.compile(r"={20,}\s*$")
ELASTIC_LINES = 400  # lines an entry's traceback may take: past them the summary was cut


def elastic_exit(lineno: int, root: bool, host: str | None, rank: int | None, value: str) -> ExitRow | None:
    """The ``worker_exits`` row of a torchelastic summary's entry, from its ``exitcode`` field's ``value``."""
    m = ELASTIC_EXIT.match(value)
    if m is None:
        return None
    code, pid = int(m["code"]), int(m["pid"])
    sig = _exit_signal(code)
    section = ELASTIC_ROOT if root else ELASTIC_OTHERS
    text = f"{section} rank {rank} on {host}, exitcode {code} (pid: {pid})"
    return ExitRow(lineno, "torchelastic", rank, host, pid, code, sig, text)


def mpi_first_exit(lineno: int, launcher: str, rank: int | None, code: int) -> ExitRow:
    """The ``worker_exits`` row of Open MPI's (or horovodrun's) report of the first process that exited with a
    non-zero code."""
    text = f"the first process to exit with a non-zero status was rank {rank}, exit code {code}"
    return ExitRow(lineno, launcher, rank, None, None, code, _exit_signal(code), text)


def fold_elastic(exits: list[ExitRow]) -> list[ExitRow]:
    """The exits, each once: torchelastic's summary repeats the ends its agent logged as they happened
    (``failed (exitcode: -9) local_rank: 3 (pid: 12345)``); those lines keep their place in time."""
    streamed = {e.pid for e in exits if e.launcher != "torchelastic" and e.pid is not None}
    return [e for e in exits if e.launcher != "torchelastic" or e.pid not in streamed]


def _exit_signal(code: int) -> int | None:
    """The signal an exit code says ended a worker: -N (Python's and torchrun's) or 128 + N (a shell's)."""
    return -code if code < 0 else code - 128 if 128 < code < 160 else None


#: the signal each of strsignal's texts names (glibc's: what srun prints of a task a signal ended)
SIGNAL_NAMES = dict(
    zip(
        ("Hangup", "Interrupt", "Quit", "Illegal instruction", "Trace/breakpoint trap", "Aborted", "Bus error")
        + ("Floating point exception", "Killed", "User defined signal 1", "Segmentation fault")
        + ("User defined signal 2", "Broken pipe", "Alarm clock", "Terminated"),
        range(1, 16),
        strict=True,
    )
)


def parse_worker_exit(line: str, lineno: int) -> ExitRow | None:
    """A launcher's report that a worker ended, with the signal that ended it when the report or the
    exit code says (128 + N, or -N for torchrun)."""
    for launcher, rx in EXITS:
        m = rx.search(line)
        if m is None:
            continue
        d = m.groupdict()
        code = int(d["code"]) if d.get("code") else None
        sig = int(d["sig"]) if d.get("sig") else 9 if d.get("oom") else SIGNAL_NAMES.get(d.get("signame") or "")
        if sig is None and code is not None:
            sig = _exit_signal(code)
        pid = int(d["pid"]) if d.get("pid") else None
        rank = int(d["rank"]) if d.get("rank") else None
        return ExitRow(lineno, launcher, rank, d.get("host"), pid, code, sig, line.strip()[:300])
    return None
