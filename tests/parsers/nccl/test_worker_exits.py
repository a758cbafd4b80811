"""Launchers' reports of a worker's end (horovodrun, mpirun, torchrun and torchelastic, srun, DeepSpeed) read
from job logs; Open MPI's report of the first process to exit with a non-zero code, over lines (Open MPI 4's
mpirun and mpiexec, 5's prterun, quoted in a mailing list's reply)."""

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
        # srun's other words: tasks of a host list that ended alike, a signal's name (strsignal's), the OOM killer
        ("srun: error: gpu-a[01-02]: tasks 4-7,9: Out Of Memory", "srun", 4, None, 9),
        ("srun: error: nid002: tasks 0-3: Segmentation fault (core dumped)", "srun", 0, None, 11),
        ("srun: error: nid002: task 5: Terminated", "srun", 5, None, 15),
        ("srun: error: nid002: task 1: Bus error", "srun", 1, None, 7),
        # slurmstepd's report of the OOM killer in the step's cgroup (22.05+, and the older wording)
        (
            "slurmstepd: error: Detected 1 oom_kill event in StepId=5061512.0. Some of your processes may have been "
            "killed by the cgroup out-of-memory handler.",
            "slurmstepd",
            None,
            None,
            9,
        ),
        (
            "slurmstepd: error: Detected 2 oom-kill event(s) in step 12345.0 cgroup. Some of your processes may have "
            "been killed by the cgroup out-of-memory handler.",
            "slurmstepd",
            None,
            None,
            9,
        ),
        # DeepSpeed 0.8-0.16: the command is the last one started, its --local_rank not the failed worker's
        (
            "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', "
            "'--local_rank=0', '--zero_stage', '2', '--deepspeed'] exits with return code = -9",
            "deepspeed",
            None,
            -9,
            9,
        ),
        (
            "[2024-01-03 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['python', 'train.py', '--local_rank=1'] "
            "exits with return code = -11",
            "deepspeed",
            None,
            -11,
            11,
        ),
    ],
)
def test_launchers_report_a_workers_end(
    line: str, launcher: str, rank: int | None, code: int | None, sig: int | None
) -> None:
    from parsers.nccl.exits import parse_worker_exit

    row = parse_worker_exit(line, 7)
    assert row is not None and (row.launcher, row.rank, row.exit_code, row.signal, row.line) == (
        launcher,
        rank,
        code,
        sig,
        7,
    )
    assert parse_worker_exit("Process 1 exited normally", 1) is None
    assert parse_worker_exit("srun: error: Unable to create step for job 123: Invalid generic resource", 1) is None


@pytest.mark.parametrize(
    "text",
    [
        "[0]<stdout>:step 1\nProcess 1 exit with status code 137.\nTerminating remaining workers\n",
        "srun: error: node12: task 3: Killed\nsrun: launch/slurm: _step_signal: Terminating StepId=1234.0\n",
        "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266\n"
        "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['python3', '-u', 'main.py', "
        "'--local_rank=0'] exits with return code = -9\n",
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n  Process name: [[56171,1],6]\n  Exit code:    3\n",
        "srun: error: gpu-a[01-02]: tasks 4-7: Out Of Memory\n",
        "slurmstepd: error: Detected 1 oom_kill event in StepId=77.0. Some of your processes may have been killed by the "
        "cgroup out-of-memory handler.\n",
    ],
    ids=["horovodrun", "srun", "deepspeed", "openmpi", "srun-oom", "slurmstepd"],
)
def test_a_launchers_output_alone_is_a_job_log(tmp_path: Path, text: str) -> None:
    from parsers.inputs import InputKind, sniff

    log = tmp_path / "stdout.txt"
    log.write_text(text)
    assert sniff(log).kind is InputKind.JOB_LOG


def _summary(prefix: str = "") -> str:
    """torchelastic's summary (PyTorch 1.9+): another failure listed first, the root cause after it, a traceback
    between an entry's fields and the next section."""
    lines = [
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "[1]:",
        "  time      : 2024-03-01_10:00:05",
        "  host      : node2",
        "  rank      : 9 (local_rank: 1)",
        "  exitcode  : 1 (pid: 2201)",
        "  error_file: /tmp/torchelastic_x/error.json",
        "  traceback : Traceback (most recent call last):",
        '    File "train.py", line 10, in <module>',
        "  RuntimeError: NCCL communicator was aborted.",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-03-01_10:00:00",
        "  host      : node1",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : -9 (pid: 12345)",
        "  error_file: <N/A>",
        "  traceback : Signal 9 (SIGKILL) received by PID 12345",
        "============================================================",
    ]
    return "".join(f"{prefix}{x}\n" for x in lines)


@pytest.mark.parametrize(
    "prefix", ["", "2024-03-01T10:00:06.123456789Z ", "[default0]:"], ids=["bare", "kubectl", "tag"]
)
def test_torchelastics_summary_names_the_root_cause_it_prints_last(tmp_path: Path, prefix: str) -> None:
    from tests.parsers.nccl.test_nccl_log import report

    doc = report(tmp_path, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n" + _summary(prefix))
    (f,) = [f for f in doc["findings"] if f["code"] == "job.worker_exit"]
    assert f["title"] == "Rank 3 died on node1: SIGKILL, exit code -9"  # the job's rank, not the local one
    assert "1 other worker(s) ended" in f["evidence"][1]["summary"] and "rank 9" in f["evidence"][1]["summary"]


def test_a_summary_of_ends_the_agent_logged_adds_no_end(tmp_path: Path) -> None:
    """The agent logs each end as it happens; the summary at the end repeats them (the same pid)."""
    from tests.parsers.nccl.test_nccl_log import report

    streamed = (
        "torch.distributed.elastic.multiprocessing.api:[ERROR] failed (exitcode: -9) local_rank: 3 (pid: 12345) "
        "of binary: /usr/bin/python\n"
    )
    doc = report(tmp_path, streamed + _summary())
    (f,) = [f for f in doc["findings"] if f["code"] == "job.worker_exit"]
    assert f["evidence"][0]["sources"][0]["line"] == 1  # the streamed end, in its place in time
    assert "1 other worker(s) ended" in f["evidence"][1]["summary"]  # rank 9's end: the summary's only new one


def test_ends_without_a_rank_are_listed_as_workers(tmp_path: Path) -> None:
    """DeepSpeed names no rank: the first end is 'a worker', the others are listed without one too."""
    from tests.parsers.nccl.test_nccl_log import report

    line = "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['python3', 'main.py'] exits with return code = {}\n"
    doc = report(tmp_path, line.format(-9) + line.format(-15))
    (f,) = [f for f in doc["findings"] if f["code"] == "job.worker_exit"]
    assert f["title"] == "A worker died: SIGKILL, exit code -9" and f["ranks"] == []
    assert "a worker (rank not named): SIGTERM" in f["evidence"][1]["summary"]


OPEN_MPI = """\
-------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
{launcher} detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: {name}
  Exit code:    {code}
--------------------------------------------------------------------------
"""


@pytest.mark.parametrize(
    ("launcher", "name", "code", "rank", "sig", "quote"),
    [
        ("mpirun", "[[56171,1],6]", 3, 6, None, ""),
        ("mpiexec", "[[42807,1],0]", 137, 0, 9, ""),
        ("prterun", "[prterun-gpu01-12345@1,3]", 1, 3, None, ""),
        ("mpirun", "[[43465,1],2]", 255, 2, None, "> "),
    ],
)
def test_open_mpis_first_non_zero_exit_names_its_rank(
    tmp_path: Path, launcher: str, name: str, code: int, rank: int, sig: int | None, quote: str
) -> None:
    from tests.parsers.nccl.test_nccl_log import parse, report

    text = "".join(f"{quote}{x}\n" for x in OPEN_MPI.format(launcher=launcher, name=name, code=code).splitlines())
    (row,) = parse(text)[1]["worker_exits"]
    assert (row["launcher"], row["rank"], row["exit_code"], row["signal"], row["line"]) == (
        "mpirun",
        rank,
        code,
        sig,
        10,
    )
    (f,) = report(tmp_path, text)["findings"]
    assert f["code"] == "job.worker_exit" and f["ranks"] == [rank]
    if sig is None:  # it ended by itself: its own last lines say why
        assert f["title"] == f"Rank {rank} died: exit code {code}" and "traceback" in f["suggestions"][0]["action"]
    else:
        assert f["title"] == f"Rank {rank} died: SIGKILL, exit code {code}" and "dmesg" in f["suggestions"][0]["action"]


def test_open_mpis_report_cut_before_its_exit_code_names_no_end() -> None:
    from tests.parsers.nccl.test_nccl_log import parse

    cut = OPEN_MPI.format(launcher="mpirun", name="[[1,1],4]", code=1).split("  Exit code")[0]
    assert "worker_exits" not in parse(cut + "\n" * 12 + "  Exit code:    1\n")[1]  # too far: not its code


def test_horovodruns_gloo_launcher_raises_the_same_report_with_the_rank_alone() -> None:
    from tests.parsers.nccl.test_nccl_log import parse

    text = (
        "    raise RuntimeError('Horovod detected that one or more processes exited with non-zero '\n"
        "RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the job "
        "to be terminated. The first process to do so was:\n"
        "Process name: 1\n"
        "Exit code: 137\n"
    )
    (row,) = parse(text)[1]["worker_exits"]
    assert (row["launcher"], row["rank"], row["exit_code"], row["signal"]) == ("horovodrun", 1, 137, 9)


def test_slurms_out_of_memory_names_the_killer_and_host_memory(tmp_path: Path) -> None:
    """srun says which killer ended the task: the report says so, and what to change is host memory, not GPU's."""
    from tests.parsers.nccl.test_nccl_log import report

    doc = report(
        tmp_path,
        "srun: error: gpu-a12: task 3: Out Of Memory\n"
        "slurmstepd: error: Detected 1 oom_kill event in StepId=5061512.0. Some of your processes may have been "
        "killed by the cgroup out-of-memory handler.\n"
        "srun: error: gpu-a12: tasks 0-2: Terminated\n",
    )
    (f,) = [f for f in doc["findings"] if f["code"] == "job.worker_exit"]
    assert f["title"] == "Rank 3 died on gpu-a12: out of memory"
    assert "out-of-memory killer" in f["summary"] and "--mem" in f["suggestions"][0]["action"]


TF_REPORT = (
    "tensorflow.python.framework.errors_impl.UnknownError:  ncclCommInitRank failed: unhandled system error\n"
    "\t [[node HorovodBroadcast_conv1_bn_moving_mean_0 (defined at <string>:234) ]]\n\n"
)


@pytest.mark.parametrize(
    "ends",
    [
        # horovod#1651 (Slurm): both tasks exit with the program's code after TensorFlow raised NCCL's error
        "srun: error: jwc09n018: task 1: Exited with exit code 1\nsrun: error: jwc09n012: task 0: Exited with exit code 1\n",
        # horovod#2347 (Open MPI): its report of the first process to exit with a non-zero code
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n"
        "  Process name: [[41012,1],0]\n  Exit code:    1\n",
    ],
    ids=["srun", "mpirun"],
)
def test_an_exit_code_after_the_error_the_program_reported_is_that_errors_consequence(
    tmp_path: Path, ends: str
) -> None:
    """A worker that exits with its program's code after the NCCL error it raised ended because of that error: a
    warning that says so, the error the job's failure (it was also a critical "died, the job stopped because of it")."""
    from tests.parsers.nccl.test_nccl_log import report

    doc = report(tmp_path, TF_REPORT + ends)
    found = {f["code"]: f for f in doc["findings"]}
    assert found["nccl.error"]["severity"] == "critical" and doc["verdict"]["headline"].startswith("Failed: NCCL")
    end = found["job.worker_exit"]
    assert end["severity"] == "warning" and "exited" in end["title"] and "after NCCL system error" in end["title"]
    assert "not a cause of its own" in end["summary"] and end["suggestions"] == []


@pytest.mark.parametrize(
    "text",
    [
        TF_REPORT + "srun: error: node3: task 2: Killed\n",  # a signal ends a worker of its own (the OOM killer, …)
        "srun: error: node3: task 2: Exited with exit code 1\n" + TF_REPORT,  # the error after the end
    ],
    ids=["signal", "error-after"],
)
def test_an_end_by_a_signal_or_before_the_error_stays_a_cause(tmp_path: Path, text: str) -> None:
    from tests.parsers.nccl.test_nccl_log import report

    end = next(f for f in report(tmp_path, text)["findings"] if f["code"] == "job.worker_exit")
    assert end["severity"] == "critical" and "died" in end["title"]
