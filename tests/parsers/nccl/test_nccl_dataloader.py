"""A DataLoader worker that died (``parsers.nccl.dataloader``): PyTorch's report and the worker's own last words,
read as the cause the other ranks' timeouts follow, with what its signal says to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.inputs import InputKind, sniff
from parsers.nccl.dataloader import DATALOADER, parse_dataloader
from tests.parsers.nccl.test_nccl_log import report


@pytest.mark.parametrize(
    ("line", "message", "advice"),
    [
        (
            "[rank1]: RuntimeError: DataLoader worker (pid 325) is killed by signal: Bus error. It is possible that "
            "dataloader's workers are out of shared memory.",
            "DataLoader worker (pid 325) is killed by signal: Bus error (rank 1)",
            "/dev/shm",
        ),
        (
            "RuntimeError: DataLoader worker (pid 4411) is killed by signal: Killed.",
            "DataLoader worker (pid 4411) is killed by signal: Killed",
            "out-of-memory killer",
        ),
        (
            "[1,3]<stderr>:ERROR: Unexpected segmentation fault encountered in worker.",
            "Unexpected segmentation fault encountered in worker (rank 3)",
            "num_workers=0",
        ),
        (
            "RuntimeError: DataLoader worker (pid(s) 1234, 1235) exited unexpectedly",
            "DataLoader worker (pid(s) 1234, 1235) exited unexpectedly",
            None,
        ),
    ],
)
def test_pytorchs_words_for_a_worker_that_died(line: str, message: str, advice: str | None) -> None:
    found = parse_dataloader(line)
    assert found is not None and (found.cls, found.message, found.cause) == (DATALOADER, message, True)
    assert (found.advice is None) if advice is None else (found.advice is not None and advice in found.advice)


def test_what_the_other_ranks_timeouts_follow(tmp_path: Path) -> None:
    text = (
        "[rank1]:ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
        "memory (shm).\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=22, NumelOut=22, Timeout(ms)=600000) ran for 600037 "
        "milliseconds before timing out.\n"
    )
    r = report(tmp_path, text)
    by_code = {f["code"]: f for f in r["findings"]}
    assert (
        by_code["nccl.error"]["title"] == "DataLoader worker died: Unexpected bus error encountered in worker (rank 1)"
    )
    assert "--shm-size" in by_code["nccl.error"]["suggestions"][0]["action"]
    assert by_code["nccl.watchdog_timeout"]["severity"] == "warning"
    alone = tmp_path / "train.log"
    alone.write_text("RuntimeError: DataLoader worker (pid 325) is killed by signal: Bus error.\n")
    assert sniff(alone).kind is InputKind.JOB_LOG
