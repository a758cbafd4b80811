"""PyTorch's NCCL watchdog ended by a CUDA error it met on its GPU (``gpu_fault``).

The watchdog polls its collectives' CUDA events; a fault of any kernel on that GPU (the job's own as much as
NCCL's) surfaces there, and PyTorch ends the process with ``[Rank N] NCCL watchdog thread terminated with
exception: CUDA error: …`` (1.13-2.2) or ``[PG ID 0 PG GUID 0(default_pg) Rank N] Process group watchdog thread
terminated with exception: CUDA error: …`` (2.3+), often inside ``terminate called … what():`` or behind Ray's
``logging.cc`` line. The same sentence around a timeout is a timeout, read as such.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.inputs import InputKind, sniff
from tests.parsers.nccl.test_nccl_log import parse, report

IMA = "CUDA error: an illegal memory access was encountered"
FAULTS = {
    "2.1": f"[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with exception: {IMA}\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.\n",
    "2.5": "terminate called after throwing an instance of 'c10::DistBackendError'\n"
    f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated with exception: {IMA}\n"
    "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent call "
    "first):\n",
    "ray": "[2025-04-15 00:31:11,815 E 808 17795] logging.cc:108: Unhandled exception: N3c1016DistBackendErrorE. "
    f"what(): [PG ID 2 PG GUID 3 Rank 0] Process group watchdog thread terminated with exception: {IMA}\n",
}


@pytest.mark.parametrize("release", sorted(FAULTS))
def test_a_gpu_error_the_watchdog_met_is_a_gpu_fault(tmp_path: Path, release: str) -> None:
    path = tmp_path / "job.log"
    path.write_text(FAULTS[release])
    assert sniff(path).kind is InputKind.JOB_LOG
    _, t = parse(FAULTS[release])
    (err,) = t["nccl_errors"]
    assert (err["level"], err["class"]) == ("framework", "gpu_fault")
    assert err["message"].startswith(IMA) and "PyTorch's NCCL watchdog" in err["message"]
    (finding,) = [f for f in report(tmp_path, FAULTS[release])["findings"] if f["code"] == "nccl.error"]
    assert finding["severity"] == "critical" and finding["title"].startswith(f"GPU fault: {IMA}")


def test_out_of_memory_there_is_cuda_oom_and_a_timeout_there_is_a_timeout() -> None:
    _, t = parse(
        "[Rank 1] NCCL watchdog thread terminated with exception: CUDA error: out of memory\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Process group watchdog thread terminated with exception: "
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=8, "
        "NumelOut=8, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.\n"
    )
    assert [(e["line"], e["class"]) for e in t["nccl_errors"]] == [(1, "cuda_oom")]
    assert [(w["line"], w["seq"], w["op"]) for w in t["watchdog_timeouts"]] == [(2, 5, "ALLREDUCE")]


def test_after_an_nccl_error_it_is_that_errors_consequence(tmp_path: Path) -> None:
    text = "\nh:7:9 [0] transport/nvls.cc:598 NCCL WARN Cuda failure 1 'invalid argument'\n" + FAULTS["2.1"]
    _, t = parse(text)
    assert [(e["level"], e["class"], e["consequence"]) for e in t["nccl_errors"]] == [
        ("WARN", "cuda_error", False),
        ("framework", "cuda_error", True),
    ]
    codes = [f["code"] for f in report(tmp_path, text)["findings"] if f["severity"] == "critical"]
    assert codes == ["nccl.error"]  # one failure, named by NCCL's own record
