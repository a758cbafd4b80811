"""PyTorch watchdog timeouts of several process groups: each group's SeqNums count on their own, so
two groups timing out in different collectives is no desync, and a rank named within a group that
is not the default one is not taken for the global rank (issue 45). Lines of PyTorch 2.1-2.2 (the
group on the work line only) and 2.4+ (``[PG ID n PG GUID g Rank r]`` on the timeout line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.nccl import joblog
from tests.parsers.nccl.test_nccl_log import report

WD = (
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=8, NumelOut=8, "
    "Timeout(ms)=600000) ran for 600021 milliseconds before timing out."
)
WORK = (
    "Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: "
    "{enq}, last completed NCCL work: {done}."
)


def _v21(rank: int, pg: int, seq: int, op: str) -> str:
    """2.1/2.2: ``[Rank r]`` on the timeout line, the group on the work line after it."""
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:563] [Rank {rank}] {WD.format(seq=seq, op=op)}\n"
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1537] [PG {pg} Rank {rank}] "
        f"{WORK.format(seq=seq, enq=seq + 1, done=seq - 1)}\n"
    )


def _v24(rank: int, pg: int, seq: int, op: str) -> str:
    """2.4+: the group on the timeout line itself, no launcher tag."""
    guid = f"{pg}(default_pg)" if pg == 0 else str(pg)
    return f"[E1206 18:44:12.715 ProcessGroupNCCL.cpp:616] [PG ID {pg} PG GUID {guid} Rank {rank}] {WD.format(seq=seq, op=op)}\n"


@pytest.mark.parametrize("line", [_v21, _v24], ids=["2.1", "2.4"])
def test_two_groups_timing_out_in_different_collectives_is_no_desync(tmp_path: Path, line: object) -> None:
    text = "".join(
        line(r, 0, 812, "ALLREDUCE") + line(r, 1, 40, "ALLGATHER")  # type: ignore[operator]
        for r in range(2)
    )
    doc = report(tmp_path, text)
    (f,) = [f for f in doc["findings"] if f["code"] == "nccl.watchdog_timeout"]
    assert f["labels"]["verdict"] == "groups" and f["ranks"] == []
    assert "process group 0" in f["summary"] and "process group 1" in f["summary"]
    assert "desynchronised" not in f["summary"]
    assert {w["pg"].split()[0] for w in doc["nccl"]["watchdog_timeouts"]} == {"0", "1"}


@pytest.mark.parametrize("line", [_v21, _v24], ids=["2.1", "2.4"])
def test_one_group_with_a_rank_behind_names_it_only_in_the_default_group(tmp_path: Path, line: object) -> None:
    for pg, named in ((0, [3]), (2, [])):
        text = "".join(line(r, pg, 100 if r != 3 else 99, "ALLREDUCE") for r in range(4))  # type: ignore[operator]
        doc = report(tmp_path, text, name=f"pg{pg}.log")
        (f,) = [f for f in doc["findings"] if f["code"] == "nccl.watchdog_timeout"]
        assert f["labels"]["verdict"] == "behind" and f["ranks"] == named
        if not named:  # rank 3 of group 2 is not global rank 3
            assert "ranks within the group" in f["summary"]


def test_the_timeout_line_names_its_group_and_rank_and_the_work_line_still_completes_it() -> None:
    w = joblog.parse_watchdog(_v24(5, 3, 9141, "_ALLGATHER_BASE"), 7)
    assert w is not None and (w["line"], w["rank"], w["pg"], w["seq"]) == (7, 5, "3 3", 9141)
    work = joblog.parse_watchdog_work(
        f"[rank13]:[E ProcessGroupNCCL.cpp:1537] [PG 3 Rank 5] {WORK.format(seq=9141, enq=9142, done=9140)}"
    )
    assert work is not None and work.global_rank == 13 and work.rank == 5
    tagged = joblog.parse_watchdog(f"[rank13]:[E ProcessGroupNCCL.cpp:563] [Rank 5] {WD.format(seq=9141, op='X')}", 1)
    assert tagged is not None and tagged["rank"] == 13  # the launcher's tag is the global rank
    assert joblog.attach_work([tagged], work) and tagged["pg"] == "3" and tagged["last_completed"] == 9140


@pytest.mark.parametrize("prefix", ["", "2025-02-18 12:54 "], ids=["plain", "timestamped"])
def test_a_chain_after_the_watchdog_timed_out_is_its_teardown_not_a_cause(tmp_path: Path, prefix: str) -> None:
    """Two groups made at the same place (PG ID 11) on different ranks time out; NCCL then prints a
    result chain with no WARN while the watchdog aborts the communicator (the shape of NVIDIA/nccl#1610)."""
    text = (
        f"{prefix}[rank13]:[E218 04:54:22.864 ProcessGroupNCCL.cpp:616] [Rank 1] {WD.format(seq=216, op='ALLTOALL_BASE')}\n"
        f"{prefix}[rank13]:[E218 04:54:22.864 ProcessGroupNCCL.cpp:1795] [PG ID 11 PG GUID 119 Rank 1] "
        f"{WORK.format(seq=216, enq=220, done=215)}\n"
        f"{prefix}[rank15]:[E218 04:54:22.883 ProcessGroupNCCL.cpp:616] [Rank 1] {WD.format(seq=57, op='ALLREDUCE')}\n"
        f"{prefix}[rank15]:[E218 04:54:22.883 ProcessGroupNCCL.cpp:1795] [PG ID 11 PG GUID 112 Rank 0] "
        f"{WORK.format(seq=57, enq=57, done=56)}\n"
        f"{prefix}node0:180:915 [7] NCCL INFO misc/socket.cc:47 -> 3\n"
        f"{prefix}node0:180:915 [7] NCCL INFO misc/socket.cc:550 -> 3\n"
    )
    doc = report(tmp_path, text)
    codes = {f["code"]: f for f in doc["findings"]}
    assert "nccl.error" not in codes  # the chain is the abort's, not a root cause
    wd = codes["nccl.watchdog_timeout"]
    assert wd["severity"] == "critical" and wd["labels"]["verdict"] == "groups" and wd["ranks"] == []
    assert "11 119" in wd["summary"] and "11 112" in wd["summary"]
