"""Launchers' reports of a worker's end (horovodrun, mpirun, torchrun, srun) read from job logs."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("line", "launcher", "rank", "code", "sig"),
    [
        ("[1]<stdout>:Process 1 exit with status code 137.", "horovodrun", 1, 137, 9),
        ("Process 0 exit with status code 143.", "horovodrun", 0, 143, 15),
        (
            "mpirun noticed that process rank 3 with PID 4242 on node gpu-7 exited on signal 9 (Killed).",
            "mpirun",
            3,
            None,
            9,
        ),
        (
            "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -11) local_rank: 2 (pid: 77) of "
            "binary: /usr/bin/python",
            "torchrun",
            2,
            -11,
            11,
        ),
        ("srun: error: node12: task 5: Killed", "srun", 5, None, 9),
        ("srun: error: node12: task 6: Exited with exit code 1", "srun", 6, 1, None),
    ],
)
def test_launchers_report_a_workers_end(line: str, launcher: str, rank: int, code: int | None, sig: int | None) -> None:
    from parsers.nccl.joblog import parse_worker_exit

    row = parse_worker_exit(line, 7)
    assert row is not None and (row.launcher, row.rank, row.exit_code, row.signal, row.line) == (
        launcher,
        rank,
        code,
        sig,
        7,
    )
    assert parse_worker_exit("Process 1 exited normally", 1) is None


@pytest.mark.parametrize(
    "text",
    [
        "[0]<stdout>:step 1\nProcess 1 exit with status code 137.\nTerminating remaining workers\n",
        "srun: error: node12: task 3: Killed\nsrun: launch/slurm: _step_signal: Terminating StepId=1234.0\n",
    ],
    ids=["horovodrun", "srun"],
)
def test_a_launchers_output_alone_is_a_job_log(tmp_path: Path, text: str) -> None:
    from parsers.inputs import InputKind, sniff

    log = tmp_path / "stdout.txt"
    log.write_text(text)
    assert sniff(log).kind is InputKind.JOB_LOG
