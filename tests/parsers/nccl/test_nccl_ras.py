"""NCCL's RAS report (``ncclras``, 2.24+) pasted or captured beside a job's log (``parsers/nccl/ras.py``, the
``nccl.ras`` detector): its entries' lines as rows, and what they say of the job."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from parsers.inputs import InputKind, sniff
from parsers.nccl.parser import JobLogParser
from parsers.nccl.rows import RasRow
from tests.parsers.nccl.test_nccl_log import report

HEAD = """\
NCCL version 2.26.2 compiled with CUDA 12.6
CUDA runtime version 12060, driver version 12060

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      4          8            1         32       32

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4         8        32        32   RUNNING  {errors}

Errors
======

"""
#: nccl#1911: two ranks launched one AllGather more than the thirty others (RAS lists the smaller group)
AHEAD = (
    HEAD.format(errors="MISMATCH")
    + """\
Warnings
========

#0-0 (fa93daea854b060b) MISMATCH
  Communicator ranks have different AllGather operation counts
  30 ranks have launched up to operation 640
  2 ranks have launched up to operation 641
  Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124
  Rank 13 -- GPU 5 managed by process 323033 on node 10.137.190.124
"""
)
#: nccl#1762 (2.27.3): a process RAS got no data from, and the rank of a communicator it held
LOST = """\
NCCL version 2.27.3 compiled with CUDA 12.9
CUDA runtime version 12090, driver version 12040

Job summary
===========

  Nodes  Processes         GPUs
(total)    (total)      (total)
      2         10           10

The outlier node:
  Node 10.4.109.13 running processes 60004,60035

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         1         1         2         1   RUNNING  INCOMPLETE

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 60004 on node 10.4.109.13 managing GPU 0

#0-0 (b3398875b8b2a063) INCOMPLETE
  Missing communicator data from 1 rank
  Rank 1 -- GPU 0 managed by process 60004 on node 10.4.109.13

Warnings
========

"""
#: NCCL's documentation's example, pasted from the table on (no version line)
BEHIND_BY_ONE = """\
Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4         8        32        32   RUNNING  MISMATCH

Warnings
========

#0-0 (27a079b828ff1a75) MISMATCH
  Communicator ranks have different collective operation counts
  26 ranks have launched up to operation 6650
  6 ranks have launched up to operation 6649
  Rank 0 -- GPU 0 managed by process 483072 on node 172.16.64.210
  Rank 2 -- GPU 2 managed by process 483074 on node 172.16.64.210
  Rank 3 -- GPU 3 managed by process 483075 on node 172.16.64.210
  Rank 4 -- GPU 4 managed by process 483076 on node 172.16.64.210
  Rank 5 -- GPU 5 managed by process 483077 on node 172.16.64.210
  Rank 7 -- GPU 7 managed by process 483079 on node 172.16.64.210
"""


def _straggler(at: int) -> str:
    """One rank launched fewer AllReduces than the seven others (2.28's wording of a rank listed alone)."""
    return (
        HEAD.format(errors="MISMATCH")
        + "Warnings\n========\n\n#0-0 (78db921d1c117b4a) MISMATCH\n"
        + "  Communicator ranks have different AllReduce operation counts\n"
        + "  7 ranks have launched up to operation 64\n"
        + f"  Rank 7 has launched up to operation {at} -- GPU 3 managed by process 1650386 on node node1\n"
    )


ERRORS = (
    HEAD.format(errors="ERROR")
    + """\
#0-0 (27a079b828ff1a75) ERROR
  Asynchronous errors on 2 ranks
  2 ranks reported remote process exited or there was a network error
  Rank 3 -- GPU 3 managed by process 4101 on node 10.0.0.2
  Rank 11 -- GPU 3 managed by process 4209 on node 10.0.0.3

Warnings
========

"""
)


def _rows(text: str) -> list[RasRow]:
    p = JobLogParser("ras.log")
    p.parse(io.BytesIO(text.encode()))
    return p.ras


def _ras(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == "nccl.ras"]


def test_an_entrys_count_lines_lend_their_count_to_the_ranks_listed_after_them() -> None:
    rows = _rows(AHEAD)
    data = [(r.comm, r.kind, r.coll, r.ranks, r.rank, r.ops, r.pid, r.node) for r in rows if r.ops is not None]
    assert data == [
        ("#0-0", "MISMATCH", "AllGather", 30, None, 640, None, None),
        ("#0-0", "MISMATCH", "AllGather", 2, None, 641, None, None),
        ("#0-0", "MISMATCH", "AllGather", None, 12, 641, 323032, "10.137.190.124"),
        ("#0-0", "MISMATCH", "AllGather", None, 13, 641, 323033, "10.137.190.124"),
    ]
    lost = [(r.comm, r.kind, r.rank, r.gpu, r.pid, r.node) for r in _rows(LOST) if r.pid is not None]
    assert lost == [
        (None, "INCOMPLETE", None, "0", 60004, "10.4.109.13"),
        ("#0-0", "INCOMPLETE", 1, "0", 60004, "10.4.109.13"),
    ]


@pytest.mark.parametrize("text", [AHEAD, LOST, BEHIND_BY_ONE], ids=["with-version", "lost", "from-the-table"])
def test_a_ras_report_alone_is_a_job_log(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ras.txt"
    path.write_text(text)
    assert sniff(path).kind is InputKind.JOB_LOG and "RAS" in sniff(path).reason


def test_a_process_that_did_not_answer_is_a_failure_that_names_it(tmp_path: Path) -> None:
    doc = report(tmp_path, LOST)
    (f,) = _ras(doc)
    assert f["severity"] == "critical" and f["title"] == "NCCL RAS: 1 process(es) did not answer"
    assert "process 60004 on 10.4.109.13" in f["summary"] and "1 of #0-0" in f["summary"]
    assert f["hosts"] == ["10.4.109.13"] and doc["verdict"]["status"] == "failed"


def test_one_operation_apart_in_one_report_is_said_as_a_sample_without_advice(tmp_path: Path) -> None:
    """RAS samples the counts while collectives run: the documentation's own example, and nccl#1911's."""
    for text, words in ((BEHIND_BY_ONE, "rank(s) 0 (GPU 0"), (AHEAD, "the 30 ranks at operation 640 are behind")):
        (f,) = _ras(report(tmp_path, text))
        assert f["severity"] == "info" and words in f["summary"] and "run ncclras again" in f["summary"]
        assert f["suggestions"] == []


@pytest.mark.parametrize("at", [60, 0], ids=["four-behind", "none-launched"])
def test_a_rank_operations_behind_is_a_warning_that_names_it(tmp_path: Path, at: int) -> None:
    (f,) = _ras(report(tmp_path, _straggler(at)))
    assert f["severity"] == "warning" and "7 (GPU 3, process 1650386 on node1) behind" in f["summary"]
    assert f["hosts"] == ["node1"] and f["suggestions"]
    assert f["title"] == f"NCCL RAS: rank(s) 7 of communicator #0-0 {64 - at} AllReduce operation(s) behind" + (
        " (launched none)" if at == 0 else ""
    )


def test_the_same_rank_behind_in_each_report_is_a_warning_even_one_operation_apart(tmp_path: Path) -> None:
    """ncclras run again: the same rank behind each time is a straggler, not a sample."""
    (f,) = _ras(report(tmp_path, _straggler(63) + "\n" + _straggler(63).replace("operation 64", "operation 71")))
    assert f["severity"] == "warning" and "in each of the 2 reports" in f["summary"]


def test_ranks_that_reported_an_error_are_a_failure(tmp_path: Path) -> None:
    (f,) = _ras(report(tmp_path, ERRORS))
    assert f["severity"] == "critical" and "remote process exited" in f["title"]
    assert "3 (GPU 3, process 4101 on 10.0.0.2)" in f["summary"] and f["hosts"] == ["10.0.0.2", "10.0.0.3"]


def test_a_healthy_report_says_nothing_and_a_report_inside_a_log_ends_where_the_log_goes_on(tmp_path: Path) -> None:
    healthy = HEAD.format(errors="OK") + "Warnings\n========\n\n"
    assert _ras(report(tmp_path, healthy)) == []
    log = (
        "node1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
        + BEHIND_BY_ONE
        + "node1:1:1 [0] NCCL INFO NET/IB : No device found.\n"
        + "node1:1:1 [0] NCCL INFO Using network Socket\n"
    )
    p = JobLogParser("job.log")
    tables = p.parse(io.BytesIO(log.encode()))
    assert len(p.ras) == 9 and tables["nccl_processes"].column("network").to_pylist() == ["Socket"]


def test_a_dead_process_and_ranks_of_a_different_status_are_read_in_their_own_words(tmp_path: Path) -> None:
    """``DEAD`` (2.26+: unreachable via the RAS network) and ``Communicator ranks have different status``."""
    text = HEAD.format(errors="MISMATCH") + (
        "DEAD\n"
        "  1 job process is considered dead (unreachable via the RAS network)\n"
        "  Process 4101 on node 10.0.0.2 managing GPUs 2,3\n\n"
        "Warnings\n========\n\n"
        "#0-0 (27a079b828ff1a75) MISMATCH\n"
        "  Communicator ranks have different status\n"
        "  30 ranks have status RUNNING\n"
        "  2 ranks have status ABORT\n"
        "  Rank 3 -- GPU 3 managed by process 11 on node n1\n"
        "  Rank 9 -- GPU 1 managed by process 12 on node n2\n"
    )
    found = {f["title"]: f for f in _ras(report(tmp_path, text))}
    dead = found["NCCL RAS: 1 process(es) did not answer (considered dead)"]
    assert dead["severity"] == "critical" and "process 4101 on 10.0.0.2" in dead["summary"]
    status = found["NCCL RAS: ranks of communicator #0-0 have different status"]
    assert status["severity"] == "warning" and "30 RUNNING" in status["summary"]
    assert "rank 3 (GPU 3, process 11 on n1) ABORT" in status["summary"] and status["hosts"] == ["n1", "n2"]


@pytest.mark.parametrize("chunk_bytes", [1, 64, 700])
def test_a_log_of_ras_reports_read_in_chunks_reads_as_in_one_pass(tmp_path: Path, chunk_bytes: int) -> None:
    import random

    from tests.parsers.nccl.test_nccl_chunks import assert_same

    path = tmp_path / "job.log"
    path.write_text(LOST + AHEAD + "h:1:5 [0] NCCL INFO Using network Socket\n" + _straggler(60))
    n, _ = assert_same(path, chunk_bytes, random.Random(chunk_bytes))
    assert n > 1 and len(_rows(path.read_text())) == 4 + 5 + 3


def test_processes_ras_counts_without_listing_them_are_still_a_failure(tmp_path: Path) -> None:
    """RAS lists the processes it got nothing from only when they are the few: the count alone says it."""
    text = HEAD.format(errors="INCOMPLETE") + (
        "INCOMPLETE\n  Missing communicator data from 12 job processes\n\n"
        "#0-0 (27a079b828ff1a75) INCOMPLETE\n  Missing communicator data from 12 ranks\n"
        "  Rank 5 -- [process information not found]\n\n"
    )
    (f,) = _ras(report(tmp_path, text))
    assert f["severity"] == "critical" and f["title"] == "NCCL RAS: 12 process(es) did not answer"
    assert "ranks missing: 5 of #0-0" in f["summary"]


def test_a_version_line_followed_by_other_text_is_no_ras_report_eating_it(tmp_path: Path) -> None:
    """The report's summary takes only its own lines: a traceback after a stray version line is still read."""
    text = (
        "NCCL version 2.26.2 compiled with CUDA 12.6\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2\n"
    )
    doc = report(tmp_path, text)
    assert [f["code"] for f in doc["findings"]] == ["nccl.error"] and _ras(doc) == []


def test_a_job_log_without_a_ras_report_is_no_skip_of_the_detector(tmp_path: Path) -> None:
    """A log that holds no RAS report had none to say (as a log without a watchdog timeout): the detector ran and
    found nothing, it is not listed as skipped for want of one."""
    doc = report(tmp_path, "node1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n")
    assert "ras_report" not in {s["detector"] for s in doc["skipped_detectors"]} and _ras(doc) == []
