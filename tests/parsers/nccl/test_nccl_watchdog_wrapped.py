"""PyTorch watchdog timeouts as users paste them: hard-wrapped mid-token or at a space, behind a
launcher's rank tag, whose ``[rankN]:`` is the global rank while the message's ``[Rank N]`` is the rank
within the process group that timed out (PyTorch 2.1 and 2.4 wording)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.nccl.parser import JobLogParser

WRAPPED = [
    # cut mid-token inside the WorkNCCL tuple, the tag repeated on the next line (torchrun, PyTorch 2.4)
    (
        "[rank3]:[E1206 18:44:12.715 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=12, OpType=ALLRE\n"
        "[rank3]:DUCE, NumelIn=10, NumelOut=10, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.\n",
        (1, 3, 12, "ALLREDUCE", 600000, 600061),
    ),
    # cut inside a number, no tag (PyTorch 2.1)
    (
        "[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
        "OpType=BROADCAST, NumelIn=4, NumelOut=4, Timeout(ms)=1800000) ran for 18\n"
        "00123 milliseconds before timing out.\n",
        (2, None, 7, "BROADCAST", 1800000, 1800123),
    ),
    # cut at a space the wrap ate, over three lines
    (
        "[E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective operation timeout:\n"
        "WorkNCCL(SeqNum=3, OpType=ALLGATHER, NumelIn=8, NumelOut=64, Timeout(ms)=600000)\n"
        "ran for 600500 milliseconds before timing out.\n",
        (0, None, 3, "ALLGATHER", 600000, 600500),
    ),
]


@pytest.mark.parametrize(("text", "want"), WRAPPED)
def test_a_wrapped_watchdog_timeout_is_read_whole(
    tmp_path: Path, text: str, want: tuple[int | str | None, ...]
) -> None:
    log = tmp_path / "job.log"
    log.write_text("plain output\n" + text + "more output\n")
    p = JobLogParser(log)
    with open(log, "rb") as f:
        tables = p.parse(f)
    (row,) = tables["watchdog_timeouts"].to_pylist()
    got = (row["rank"], row["global_rank"], row["seq"], row["op"], row["timeout_ms"], row["ran_ms"])
    assert got == want  # rank: within the group; global_rank: the launcher's tag (no group line here to say more)
    assert row["line"] == 2  # where the timeout starts


def test_the_launchers_rank_tag_is_the_global_rank(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "[rank5]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 "
        "milliseconds before timing out.\n"
    )
    p = JobLogParser(log)
    with open(log, "rb") as f:
        (row,) = p.parse(f)["watchdog_timeouts"].to_pylist()
    assert (row["rank"], row["global_rank"]) == (1, 5)  # within its group, and the job's
