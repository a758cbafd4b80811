"""The same log behind any launcher's or collector's prefix states the same facts.

Every real NCCL log of the corpus is read as it is and with every line prefixed the way launchers and
log collectors write them (kubectl's timestamps, ``srun -l``, Open MPI's and torchrun's tags, Ray's
worker tag, docker compose, journald, a Markdown quote; a tab, a no-break space, a terminal colour), with
Windows line ends. The error classes, versions, processes and
their network, watchdog timeouts and communicator rows must not change: a verdict that flips with the
way the log was collected is a bug.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from parsers.nccl.parser import JobLogParser

PREFIXES: dict[str, Callable[[int], str]] = {
    "kubectl": lambda i: f"2024-05-11T14:10:52.{i:09d}Z ",
    "srun": lambda i: "3: ",
    "mpirun": lambda i: "[1,3]<stdout>:",
    "torchrun": lambda i: "[default3]:",
    "ray": lambda i: "(RayTrainWorker pid=1234, ip=10.0.0.1) ",
    "compose": lambda i: "worker-1  | ",
    "journald": lambda i: "Nov 28 14:00:01 node1 python[1234]: ",
    "quote": lambda i: "> ",
    "tab": lambda i: "\t",  # an indented paste
    "nbsp": lambda i: "\u00a0",  # a paste from a web page
    "ansi": lambda i: "\x1b[32m",  # a terminal's colour
}


def _facts(path: Path) -> dict[str, Any]:
    with open(path, "rb") as f:
        tables = JobLogParser(path).parse(f)

    def rows(name: str, cols: tuple[str, ...]) -> list[tuple[Any, ...]]:
        got = tables[name].to_pylist() if name in tables else []
        return sorted({tuple(r[c] for c in cols) for r in got}, key=repr)

    return {
        "errors": rows("nccl_errors", ("class", "level", "host", "pid")),
        "versions": rows("nccl_versions", ("version", "host", "pid")),
        "processes": rows("nccl_processes", ("host", "pid", "network", "version")),
        "watchdog": rows("watchdog_timeouts", ("seq", "op", "rank", "pg")),
        "communicators": rows("nccl_comm_ranks", ("host", "pid", "rank", "nranks", "phase")),
        "exits": rows("worker_exits", ("launcher", "rank", "exit_code")),
    }


def _logs(corpus: Path) -> list[Path]:
    return sorted(p for d in sorted(corpus.glob("nccl*")) for p in d.glob("*.log"))


def test_every_corpus_log_states_the_same_facts_behind_every_prefix(corpus: Path, tmp_path: Path) -> None:
    checked = 0
    for log in _logs(corpus):
        want = _facts(log)
        lines = log.read_bytes().split(b"\n")
        for name, prefix in PREFIXES.items():
            moved = tmp_path / f"{name}-{log.name}"
            moved.write_bytes(b"\r\n".join(prefix(i).encode() + x if x.strip() else x for i, x in enumerate(lines)))
            assert _facts(moved) == want, (log.name, name)
            checked += 1
    assert checked >= 140 * len(PREFIXES)  # records cut down to "[3] NCCL INFO" too


def test_a_bare_version_line_goes_to_its_process_whatever_the_timestamps(tmp_path: Path) -> None:
    """rank 0 prints ``NCCL version …`` without a record header; behind mpirun's tag it belongs to the
    process with the same tag, even when a collector's timestamp before the tag differs on every line."""
    lines = [
        "[1,0]<stdout>:a:11:11 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "[1,1]<stdout>:b:22:22 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>",
        "[1,0]<stdout>:NCCL version 2.8.4+cuda11.2",
        "[1,1]<stdout>:b:22:22 [0] NCCL INFO Using network Socket",
    ]
    log = tmp_path / "job.log"
    log.write_text("".join(f"2021-06-01T10:00:0{i}.{i:09d}Z {x}\n" for i, x in enumerate(lines)))
    assert _facts(log)["versions"] == [("2.8.4", "a", 11)]
