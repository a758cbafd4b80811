"""PyTorch watchdog timeouts of several process groups: each group's SeqNums count on their own, so
two groups timing out in different collectives is no desync, and a rank named within a group that
is not the default one is not taken for the job's rank: it maps to it through the launcher's tag or
the group's membership the log shows (issue 45). Lines of PyTorch 2.1-2.2 (the
group on the work line only) and 2.4+ (``[PG ID n PG GUID g Rank r]`` on the timeout line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.nccl import joblog
from parsers.nccl.rows import WatchdogRow
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
    """2.1/2.2: ``[Rank r]`` on the timeout line, the group on the work line after it, both behind the
    launcher's tag of the job's rank (group 0 holds ranks 0-3, any other group ranks 4-7)."""
    tag = rank if pg == 0 else rank + 4
    return (
        f"[rank{tag}]:[E ProcessGroupNCCL.cpp:563] [Rank {rank}] {WD.format(seq=seq, op=op)}\n"
        f"[rank{tag}]:[E ProcessGroupNCCL.cpp:1537] [PG {pg} Rank {rank}] "
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


def _members(pg: int, ranks: range, guid: bool) -> str:
    """PyTorch's initialization options lines of group ``pg`` (its rank r is the job's rank r + 4)."""
    head = f"PG ID {pg} PG GUID {pg}" if guid else f"PG {pg}"
    return "".join(
        f"[I ProcessGroupNCCL.cpp:968] [{head} Rank {r}] ProcessGroupNCCL initialization options: size: "
        f"{len(ranks)}, global rank: {r + 4}, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0\n"
        for r in ranks
    )


@pytest.mark.parametrize("line", [_v21, _v24], ids=["2.1", "2.4"])
def test_a_rank_behind_is_named_by_its_job_rank_where_the_log_tells_it(tmp_path: Path, line: object) -> None:
    """In the default group the rank is the job's; in group 2, rank 3 is the job's rank 7 when the
    launcher tags the line (2.1 here) or the log shows the group's membership, and unnamed otherwise."""
    cases = [(0, "", [3]), (2, "", [7] if line is _v21 else []), (2, _members(2, range(4), line is _v24), [7])]
    for i, (pg, members, named) in enumerate(cases):
        text = members + "".join(line(r, pg, 100 if r != 3 else 99, "ALLREDUCE") for r in range(4))  # type: ignore[operator]
        doc = report(tmp_path, text, name=f"case{i}.log")
        (f,) = [f for f in doc["findings"] if f["code"] == "nccl.watchdog_timeout"]
        assert f["labels"]["verdict"] == "behind" and f["ranks"] == named, (i, f["summary"])
        if pg:  # rank 3 of group 2 is not the job's rank 3
            assert "rank(s) 3 (ranks within the group)" in f["summary"]
            assert ("(the job's rank(s) 7)" in f["summary"]) is bool(named)
        rows = doc["nccl"]["watchdog_timeouts"]
        assert {(w["rank"], w["global_rank"]) for w in rows if w["rank"] == 3} == {(3, named[0] if named else None)}
        first = f["suggestions"][0]["action"]  # what to look at: the rank named, or the one never named
        assert first.startswith(
            f"Find what rank(s) {named[0]} were doing" if named else "Find the rank the others waited for"
        )


def test_membership_of_a_group_made_twice_at_one_place_names_no_one() -> None:
    """Two groups with PG ID 11 (made at the same place on different ranks) whose rank 1 is the job's 5
    in one and 9 in the other: without the GUID a timeout's rank 1 cannot be mapped; with it, it can."""
    members = [
        joblog.parse_pg_member(_members(11, range(2), guid=False).splitlines()[1], 1),
        joblog.PgMember(2, "11", None, 1, 9),
    ]
    rows = [joblog.parse_watchdog(f"[PG 11 Rank 1] {WD.format(seq=5, op='X')}", 3)]
    assert all(m is not None for m in members) and rows[0] is not None
    joblog.resolve_global_ranks(rows, members)  # type: ignore[arg-type]
    assert rows[0].global_rank is None
    guided = [joblog.PgMember(1, "11", "11", 1, 5), joblog.PgMember(2, "11", "12", 1, 9)]
    row = joblog.parse_watchdog(f"[PG ID 11 PG GUID 12 Rank 1] {WD.format(seq=5, op='X')}", 3)
    assert row is not None
    joblog.resolve_global_ranks([row], guided)
    assert row.global_rank == 9


def test_the_timeout_line_names_its_group_and_rank_and_the_work_line_still_completes_it() -> None:
    w = joblog.parse_watchdog(_v24(5, 3, 9141, "_ALLGATHER_BASE"), 7)
    assert w is not None and (w.line, w.rank, w.pg, w.seq) == (7, 5, "3 3", 9141)
    work = joblog.parse_watchdog_work(
        f"[rank13]:[E ProcessGroupNCCL.cpp:1537] [PG 3 Rank 5] {WORK.format(seq=9141, enq=9142, done=9140)}"
    )
    assert work is not None and work.global_rank == 13 and work.rank == 5
    tagged = joblog.parse_watchdog(f"[rank13]:[E ProcessGroupNCCL.cpp:563] [Rank 5] {WD.format(seq=9141, op='X')}", 1)
    assert tagged is not None and (tagged.rank, tagged.global_rank) == (5, 13)  # the tag is the job's rank
    assert joblog.OpenTimeouts().attach([tagged], work) and tagged.pg == "3" and tagged.last_completed == 9140


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


def _linear_attach(watchdog: list[WatchdogRow], work: joblog.WatchdogWork) -> bool:
    """The scan :class:`joblog.OpenTimeouts` replaces: every timeout, latest first."""
    for w in reversed(watchdog):
        same_rank = w.rank in (work.rank, work.global_rank) or (
            w.global_rank is not None and w.global_rank == work.global_rank
        )
        if same_rank and w.seq == work.work and w.pg in (None, work.pg) and w.last_completed is None:
            w.pg, w.last_enqueued, w.last_completed = work.pg, work.last_enqueued, work.last_completed
            return True
    return False


def test_open_timeouts_complete_the_rows_the_linear_scan_completes() -> None:
    """Timeouts and work lines of few ranks, sequence numbers and groups, interleaved at random (work lines
    without a timeout, several timeouts a work line could complete)."""
    import copy
    import random

    rng = random.Random(47)
    for _ in range(200):
        rows: list[WatchdogRow] = []
        open_timeouts = joblog.OpenTimeouts()
        reference: list[WatchdogRow] = []
        for step in range(60):
            if rng.random() < 0.5:
                row = WatchdogRow(
                    line=step,
                    rank=rng.choice([0, 1, 2, None]),
                    global_rank=rng.choice([None, 0, 5]),
                    seq=rng.randrange(4),
                    op="ALLREDUCE",
                    numel_in=None,
                    numel_out=None,
                    timeout_ms=1000,
                    ran_ms=1001,
                    pg=rng.choice([None, "0", "1"]),
                    last_enqueued=None,
                    last_completed=None,
                )
                rows.append(row)
                reference.append(copy.deepcopy(row))
            else:
                work = joblog.WatchdogWork(
                    rank=rng.choice([0, 1, 2]),
                    pg=rng.choice(["0", "1"]),
                    work=rng.randrange(4),
                    last_enqueued=7,
                    last_completed=rng.randrange(3),
                    global_rank=rng.choice([None, 0, 5]),
                )
                assert open_timeouts.attach(rows, work) == _linear_attach(reference, work)
        assert rows == reference


def test_a_work_line_is_matched_among_the_timeouts_of_its_rank_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job that timed out again and again at one SeqNum on many ranks: a work line reads the open timeouts of
    its own rank, not all of that SeqNum's (the scan grew with the log: 2.4% of a 1 GB parse's time)."""
    rows = [
        WatchdogRow(k, k % 512, None, 77, "ALLREDUCE", None, None, 1000, 1001, None, None, None) for k in range(5120)
    ]
    calls = 0
    real = joblog._describes

    def counted(work: joblog.WatchdogWork, w: WatchdogRow) -> bool:
        nonlocal calls
        calls += 1
        return real(work, w)

    monkeypatch.setattr(joblog, "_describes", counted)
    open_timeouts = joblog.OpenTimeouts()
    for _ in range(3):  # the latest open timeout of rank 7 first, then the one before it
        assert open_timeouts.attach(rows, joblog.WatchdogWork(7, "0", 77, 78, 76))
    assert [w.line for w in rows if w.last_completed is not None] == [3591, 4103, 4615]
    assert calls == 3
    assert not open_timeouts.attach(rows, joblog.WatchdogWork(7, "0", 78, 79, 77))  # no timeout of that SeqNum
    assert calls == 3


@pytest.mark.parametrize(
    ("work", "pg"),
    [
        # 2.2-2.3
        (
            "[rank5]:[E ProcessGroupNCCL.cpp:1182] [PG 0 Rank 1] Timeout at NCCL work: 77, last enqueued NCCL work: 79, "
            "last completed NCCL work: 76.",
            "0",
        ),
        # 2.4+: two spaces after the prefix, the group's status in other words
        (
            "[rank5]:[E1218 20:27:21.484903450 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 1]  failure detected by "
            "watchdog at work sequence id: 77 PG status: last enqueued work: 79, last completed work: 76",
            "1 1",
        ),
    ],
    ids=["2.2", "2.4"],
)
def test_every_release_s_work_line_completes_its_timeout(tmp_path: Path, work: str, pg: str) -> None:
    text = f"[rank5]:[E ProcessGroupNCCL.cpp:607] [Rank 1] {WD.format(seq=77, op='ALLREDUCE')}\n{work}\n"
    (w,) = report(tmp_path, text)["nccl"]["watchdog_timeouts"]
    assert (w["seq"], w["pg"], w["last_enqueued"], w["last_completed"], w["global_rank"]) == (77, pg, 79, 76, 5)


RESTATED = [
    # the watchdog thread's end, then the exception PyTorch 2.3+ aborts with
    "terminate called after throwing an instance of 'c10::DistBackendError'\n"
    "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: "
    "[Rank 3] {wd}\n",
    # the error the program raises after the abort (PyTorch 2.1)
    "[rank3]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3. Original reason for "
    "failure was: [Rank 3] {wd}\n",
]


@pytest.mark.parametrize("again", RESTATED, ids=["terminated", "aborted"])
def test_a_timeout_stated_again_counts_once(tmp_path: Path, again: str) -> None:
    wd = WD.format(seq=1561, op="ALLREDUCE")
    first = f"[rank3]:[E1218 ProcessGroupNCCL.cpp:629] [PG ID 0 PG GUID 0(default_pg) Rank 3] {wd}\n"
    other = first.replace("rank3", "rank2").replace("Rank 3", "Rank 2")  # another rank: a timeout of its own
    doc = report(tmp_path, first + other + again.format(wd=wd))
    rows = doc["nccl"]["watchdog_timeouts"]
    assert [(w["line"], w["rank"], w["global_rank"]) for w in rows] == [(1, 3, 3), (2, 2, 2)]
    (f,) = [f for f in doc["findings"] if f["code"] == "nccl.watchdog_timeout"]
    assert f["summary"].startswith("2 watchdog timeout(s) over 2 rank(s)")


def test_the_same_rank_of_two_groups_is_two_timeouts() -> None:
    """Only what no field tells apart is folded: group 1's rank 3 is not the default group's."""
    wd = WD.format(seq=9, op="ALLREDUCE")
    rows = [
        joblog.parse_watchdog(f"[PG ID {pg} PG GUID {pg} Rank 3] {wd}", n) for n, pg in enumerate((0, 1, 0), start=1)
    ]
    kept = joblog.fold_restated([r for r in rows if r is not None])
    assert [(w.line, w.pg) for w in kept] == [(1, "0 0"), (2, "1 1")]


#: PyTorch 1.8's and 1.9's words: no SeqNum (1.9 prints the tensor's shape instead)
OLD_TIMEOUTS = [
    "[E ProcessGroupNCCL.cpp:566] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE, "
    "Timeout(ms)=1800000) ran for 1800995 milliseconds before timing out.",
    "[E ProcessGroupNCCL.cpp:587] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, "
    "TensorShape=[2048, 1024], Timeout(ms)=1800000) ran for 1803451 milliseconds before timing out.",
]


@pytest.mark.parametrize("line", OLD_TIMEOUTS, ids=["1.8", "1.9"])
def test_a_timeout_without_its_seqnum_is_read(line: str) -> None:
    w = joblog.parse_watchdog(line, 4)
    assert w is not None and w.seq is None and w.timeout_ms == 1800000 and w.rank in (0, 3)
    assert w.op in ("ALLREDUCE", "BROADCAST") and w.ran_ms > w.timeout_ms


def test_timeouts_without_seqnums_say_what_is_not_known(tmp_path: Path) -> None:
    """Two ranks' timeouts of PyTorch 1.8-1.10: a finding without a SeqNum it does not have, and a verdict that does
    not claim a hang, a desync or a rank behind (each needs the SeqNums)."""
    doc = report(tmp_path, "\n".join(OLD_TIMEOUTS) + "\n")
    (f,) = [f for f in doc["findings"] if f["code"] == "nccl.watchdog_timeout"]
    assert f["title"] == "Collective timeout: ALLREDUCE, BROADCAST" and f["labels"]["verdict"] == "unknown"
    assert "prints no SeqNum" in f["summary"] and f["ranks"] == []
    assert [(w["rank"], w["seq"]) for w in doc["nccl"]["watchdog_timeouts"]] == [(0, None), (3, None)]
