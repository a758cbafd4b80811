"""A log whose lines are newest first (a log viewer's order) is said to be, with how to turn it round.

Grafana's Loki view, Kibana's Discover and CloudWatch Insights show the newest line first, and a log copied from
them keeps that order. Told by NCCL's own sequences (a communicator's ``Init COMPLETE`` before its ``Init
START``) or by the times a collector stamped on one process's errors stepping back.
"""

from __future__ import annotations

import io
from pathlib import Path

from parsers.nccl.closing import newest_first
from parsers.nccl.parser import JobLogParser
from tests.parsers.nccl.test_nccl_log import parse


def _codes(text: str) -> dict[str, str]:
    p, _ = parse(text)
    return {i.code: i.message for i in p.sink.issues}


def _init(host: str, pid: int, comm: str, rank: int, phase: str) -> str:
    return (
        f"{host}:{pid}:{pid + 9} [0] NCCL INFO ncclCommInitRank comm {comm} rank {rank} nranks 2 cudaDev 0 busId "
        f"18000 commId 0x7 - Init {phase}\n"
    )


FORWARD = (
    _init("a", 1, "0x10", 0, "START")
    + _init("b", 2, "0x20", 1, "START")
    + "a:1:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via NET/Socket/0\n"
    + _init("a", 1, "0x10", 0, "COMPLETE")
    + _init("b", 2, "0x20", 1, "COMPLETE")
)
BACKWARDS = "".join(reversed(FORWARD.splitlines(keepends=True)))
# kubectl logs --timestamps: RFC 3339 times on every line; one process's WARNs and their chains
STAMPED = (
    "2025-11-24T03:20:21.001125857Z gpu-3:55:56 [5] misc/socket.cc:46 NCCL WARN socketProgress: Connection reset\n"
    "2025-11-24T03:20:21.001128133Z gpu-3:55:56 [5] NCCL INFO misc/socket.cc:64 -> 6\n"
    "2025-11-24T03:20:25.101125857Z gpu-3:55:56 [5] misc/socket.cc:46 NCCL WARN socketProgress: Connection reset\n"
    "2025-11-24T03:20:29.201125857Z gpu-3:55:57 [5] misc/socket.cc:46 NCCL WARN socketProgress: Connection reset\n"
)


def test_nccls_own_order_tells_a_log_read_newest_first() -> None:
    assert "log.newest_first" not in _codes(FORWARD)
    said = _codes(BACKWARDS)["log.newest_first"]
    assert said.startswith("the lines are newest first (line 1: a communicator's Init COMPLETE before its Init START")
    assert "tac FILE" in said


def test_the_times_of_one_processs_errors_tell_it_too() -> None:
    assert "log.newest_first" not in _codes(STAMPED)
    backwards = "".join(reversed(STAMPED.splitlines(keepends=True)))
    assert "log.newest_first" in _codes(backwards)


def test_clocks_of_different_hosts_do_not() -> None:
    """Three hosts whose clocks disagree, each with one error: no process's own clock steps back."""
    times = [(("a", 1), 1, "10:00:05"), (("b", 2), 2, "09:59:50"), (("c", 3), 3, "09:59:40")]
    assert newest_first([], times) is None
    assert newest_first([], [(("a", 1), 1, "10:00:05"), (("a", 1), 5, "10:00:01"), (("a", 1), 9, "09:00:00")]) == (
        5,
        "an error stamped earlier than the one of its process above it",
    )


def test_no_corpus_log_is_said_to_be_newest_first_and_each_turned_round_with_inits_is(corpus: Path) -> None:
    turned = 0
    for path in sorted(p for d in sorted(corpus.glob("nccl*")) for p in d.glob("*.log")):
        data = path.read_bytes()
        p = JobLogParser(path)
        p.parse(io.BytesIO(data))
        assert "log.newest_first" not in {i.code for i in p.sink.issues}, path.name
        pairs = {(r.host, r.pid, r.comm) for r in p.comm_ranks if r.phase == "COMPLETE"} & {
            (r.host, r.pid, r.comm) for r in p.comm_ranks if r.phase == "START"
        }
        if len(pairs) >= 2:
            back = JobLogParser(path)
            back.parse(io.BytesIO(b"\n".join(reversed(data.rstrip(b"\n").split(b"\n"))) + b"\n"))
            assert "log.newest_first" in {i.code for i in back.sink.issues}, path.name
            turned += 1
    assert turned >= 1  # few: NCCL prints 'Init START' since 2.18.3 only (and 2.3 its 'comm … rank' line)
