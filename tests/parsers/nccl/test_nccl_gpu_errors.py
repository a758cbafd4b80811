"""A process out of GPU memory, as its framework says it (``parsers.nccl.gpu_errors``): the cause the other ranks'
watchdog timeouts follow from, with its rank; after the first timeout, no cause. PyTorch 1.x, 2.x and ROCm,
TensorFlow, XLA; torchrun's and mpirun's tags."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.inputs import InputKind, sniff
from parsers.nccl.gpu_errors import ASSERT_ADVICE, GPU_FAULT, GPU_OOM, parse_gpu_error
from tests.parsers.nccl.test_nccl_log import parse, report

TORCH_2 = (
    "[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 141.25 MiB is free. Process 2109115 has 78.99 GiB memory in use. Of the allocated "
    "memory 77.21 GiB is allocated by PyTorch, and 283.51 MiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)
TIMEOUT = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=15734, OpType=ALLREDUCE, NumelIn=22, NumelOut=22, Timeout(ms)=600000) ran for 600037 "
    "milliseconds before timing out."
)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (TORCH_2, "CUDA out of memory. Tried to allocate 336.00 MiB (rank 2)"),
        (
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 15.78 GiB total capacity; 12.97 GiB "
            "already allocated; 1.05 GiB free; 13.35 GiB reserved in total by PyTorch)",
            "CUDA out of memory. Tried to allocate 2.00 GiB",
        ),
        (
            "[1,3]<stderr>:torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
            "capacity of 63.98 GiB",
            "HIP out of memory. Tried to allocate 1.50 GiB (rank 3)",
        ),
        (
            "[1,0]<stderr>:tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
            "with shape[64,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator "
            "GPU_0_bfc",
            "OOM when allocating tensor with shape[64,1024,1024] and type float on "
            "/job:localhost/replica:0/task:0/device:GPU:0 (rank 0)",
        ),
        (
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
            "1073741824 bytes.",
            "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1073741824 bytes",
        ),
    ],
)
def test_each_framework_words_it_and_the_rank_comes_from_the_tag(line: str, message: str) -> None:
    found = parse_gpu_error(line)
    assert found is not None and found.cls == GPU_OOM and found.cause and found.message == message


@pytest.mark.parametrize(
    "line",
    [
        "h:1:2 [0] NCCL INFO cudaMalloc failed: out of memory",  # NCCL's own, read as its record
        "print('we ran out of memory yesterday')",
        "cudaErrorMemoryAllocation: out of memory",
        "we hit a CUDA error: an illegal memory access was encountered last week",  # a sentence that mentions one
    ],
)
def test_what_is_not_a_frameworks_report_of_it(line: str) -> None:
    assert parse_gpu_error(line) is None


def test_the_timeouts_after_it_follow_from_it(tmp_path: Path) -> None:
    text = "\n".join([TORCH_2, TIMEOUT.format(r=5), TIMEOUT.format(r=3)]) + "\n"
    path = tmp_path / "job.log"
    path.write_text(TORCH_2 + "\n")
    assert sniff(path).kind is InputKind.JOB_LOG  # alone, a job log
    r = report(tmp_path, text)
    by_code = {f["code"]: f for f in r["findings"]}
    assert (
        by_code["nccl.error"]["title"] == "GPU out of memory: CUDA out of memory. Tried to allocate 336.00 MiB (rank 2)"
    )
    assert by_code["nccl.error"]["severity"] == "critical"
    watchdog = by_code["nccl.watchdog_timeout"]
    assert watchdog["severity"] == "warning" and "The log shows gpu_oom first (line 1" in watchdog["summary"]
    assert r["verdict"]["headline"].startswith("Failed: GPU out of memory")


def test_after_the_first_timeout_it_is_no_cause(tmp_path: Path) -> None:
    text = "\n".join([TIMEOUT.format(r=5), TORCH_2]) + "\n"
    _, t = parse(text)
    (err,) = t["nccl_errors"]
    assert (err["class"], err["consequence"]) == (None, True) and "already timed out" in err["remediation"]
    r = report(tmp_path, text)
    assert [f["code"] for f in r["findings"] if f["severity"] == "critical"] == ["nccl.watchdog_timeout"]


@pytest.mark.parametrize(
    ("line", "message", "advice"),
    [
        (
            "[rank3]: RuntimeError: CUDA error: device-side assert triggered",
            "CUDA error: device-side assert triggered (rank 3)",
            ASSERT_ADVICE,
        ),
        (
            "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",  # 2.8+
            "CUDA error: an illegal memory access was encountered",
            "a kernel on this GPU faulted",
        ),
        (
            "[1,2]<stderr>:  what():  CUDA error: uncorrectable ECC error encountered",  # a C++ exception, terminate
            "CUDA error: uncorrectable ECC error encountered (rank 2)",
            "a hardware fault",
        ),
        (
            "RuntimeError: HIP error: invalid device ordinal",
            "HIP error: invalid device ordinal",
            "CUDA_VISIBLE_DEVICES",
        ),
    ],
)
def test_a_cuda_error_the_process_raised_is_a_gpu_fault_with_what_to_change(
    line: str, message: str, advice: str
) -> None:
    found = parse_gpu_error(line)
    assert found is not None and (found.cls, found.message, found.cause) == (GPU_FAULT, message, True)
    assert found.advice is not None and advice in found.advice


def test_cuda_out_of_memory_as_a_cuda_error_is_out_of_memory() -> None:
    found = parse_gpu_error("[rank1]: RuntimeError: CUDA error: out of memory")
    assert found is not None and (found.cls, found.message) == (GPU_OOM, "CUDA error: out of memory (rank 1)")


def test_a_rank_that_faulted_is_what_the_others_timeouts_follow(tmp_path: Path) -> None:
    text = "[rank3]: RuntimeError: CUDA error: device-side assert triggered\n" + TIMEOUT.format(r=0) + "\n"
    r = report(tmp_path, text)
    by_code = {f["code"]: f for f in r["findings"]}
    assert by_code["nccl.error"]["title"] == "GPU fault: CUDA error: device-side assert triggered (rank 3)"
    assert "index out of range" in by_code["nccl.error"]["suggestions"][0]["action"]
    assert by_code["nccl.watchdog_timeout"]["severity"] == "warning"
