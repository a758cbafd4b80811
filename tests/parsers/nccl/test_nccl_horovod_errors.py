"""Horovod's own reports of a stopped job (``parsers.nccl.horovod_errors``): its shutdown, a consequence of what
stopped a rank, and its coordinator's check that the ranks submitted the same tensors, a cause. Words of Horovod
0.13 to 0.28, raised through TensorFlow and PyTorch. A file holding only them was "not an input"."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.inputs import InputKind, sniff
from parsers.nccl.horovod_errors import MISMATCH, SHUTDOWN, parse_horovod
from tests.parsers.nccl.test_nccl_log import parse, report

SHUTDOWN_14 = (
    "Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to allreduce, "
    "allgather or broadcast a tensor after one of the ranks finished execution. If the shutdown was caused by an "
    "exception, you should see the exception in the log before the first shutdown message."
)
SHUTDOWN_13 = (
    "Horovod has been shut down. This has been caused by an exception on one of the rank or an attempt to allreduce, "
    "allgather or broadcast a tensor after one of the ranks has finished execution."
)

#: (Horovod and framework, line, class, the message's start)
LINES = [
    (
        "0.13 tf",
        f"AbortedError (see above for traceback): {SHUTDOWN_13}",
        SHUTDOWN,
        "Horovod has been shut down. This has",
    ),
    (
        "0.21 tf",
        "[1,0]<stderr>:2021-07-22 05:04:29.589233: W tensorflow/core/framework/op_kernel.cc:1651] OP_REQUIRES failed at "
        f"mpi_ops.cc:316 : Unknown: {SHUTDOWN_14}",
        SHUTDOWN,
        "Horovod has been shut down. This was caused by an exception on one of the ranks",
    ),
    ("0.28 torch", f"RuntimeError: {SHUTDOWN_14}", SHUTDOWN, "Horovod has been shut down. This was caused"),
    (  # the exception that stopped rank 0's background loop when its Gloo peer died, before its shutdown
        "0.28 gloo",
        "[0]<stderr>:[2026-11-22 07:16:51.260756: E /src/horovod/common/operations.cc:697] [0]: Horovod background "
        "loop uncaught exception: [/src/third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:5000: "
        "Connection reset by peer",
        SHUTDOWN,
        "Horovod background loop uncaught exception: [/src/third_party/gloo",
    ),
    (
        "0.15",
        "Mismatched MPI operations: One rank did an allreduce, but another rank did a broadcast.",
        MISMATCH,
        "Mismatched MPI operations: One rank did an allreduce",
    ),
    (
        "0.16 tf",
        "tensorflow.python.framework.errors_impl.FailedPreconditionError: Mismatched allreduce tensor shapes: One rank "
        "sent a tensor of shape [10], but another rank sent a tensor of shape [12].",
        MISMATCH,
        "Mismatched allreduce tensor shapes: One rank sent a tensor of shape [10]",
    ),
    (
        "0.28 torch",
        "[1,0]<stderr>:RuntimeError: Mismatched ALLREDUCE tensor shapes: One rank sent a tensor of shape [32, 1000], but "
        "another rank sent a tensor of shape [17, 1000].",
        MISMATCH,
        "Mismatched ALLREDUCE tensor shapes",
    ),
    (
        "0.28",
        "Mismatched data types: One rank had type HOROVOD_FLOAT32, but another rank had type HOROVOD_FLOAT16.",
        MISMATCH,
        "Mismatched data types",
    ),
    (
        "0.28",
        "Mismatched BROADCAST root ranks: One rank specified root rank 0, but another rank specified root rank 1.",
        MISMATCH,
        "Mismatched BROADCAST root ranks",
    ),
    (
        "0.19",
        "Mismatched ALLREDUCE CPU/GPU device selection: One rank specified device GPU, but another rank specified "
        "device CPU.",
        MISMATCH,
        "Mismatched ALLREDUCE CPU/GPU device selection",
    ),
]


@pytest.mark.parametrize(("release", "line", "cls", "start"), LINES, ids=[f"{c}-{r}" for r, _, c, _ in LINES])
def test_each_release_words_its_report_and_each_is_read(release: str, line: str, cls: str, start: str) -> None:
    found = parse_horovod(line)
    assert found is not None and found.cls == cls, release
    assert found.cause == (cls == MISMATCH)  # the shutdown follows whatever stopped a rank
    assert found.message.startswith(start) and not found.message.endswith("."), found.message
    assert "If the shutdown" not in found.message  # the advice Horovod repeats on every such line


@pytest.mark.parametrize(
    "line",
    [
        "Mismatched socks: one rank of the drawer",
        "The tensor shapes were mismatched on one rank",
        "hvd.shutdown() called: Horovod is shutting down",
    ],
)
def test_what_is_not_horovods_report(line: str) -> None:
    assert parse_horovod(line) is None


def test_a_mismatch_is_the_cause_its_shutdowns_follow(tmp_path: Path) -> None:
    shapes = next(line for release, line, cls, _ in LINES if cls == MISMATCH and release == "0.28 torch")
    text = f"{shapes}\n[1,1]<stderr>:{SHUTDOWN_14}\n[1,2]<stderr>:{SHUTDOWN_14}\n"
    path = tmp_path / "job.log"
    path.write_text(text)
    assert sniff(path).kind is InputKind.JOB_LOG
    _, t = parse(text)
    assert [(e["line"], e["class"], e["consequence"]) for e in t["nccl_errors"]] == [
        (1, MISMATCH, False),
        (2, SHUTDOWN, True),
        (3, SHUTDOWN, True),
    ]
    r = report(tmp_path, text)
    (finding,) = [f for f in r["findings"] if f["code"] == "nccl.error"]
    assert finding["title"].startswith("Horovod collective mismatch: Mismatched ALLREDUCE tensor shapes")
    assert "same tensors in the same order" in finding["suggestions"][0]["action"]


def test_a_shutdown_alone_says_to_find_what_stopped_a_rank(tmp_path: Path) -> None:
    r = report(tmp_path, f"[1,0]<stderr>:RuntimeError: {SHUTDOWN_14}\n")
    (finding,) = [f for f in r["findings"] if f["code"] == "nccl.error"]
    assert finding["severity"] == "critical" and finding["title"].startswith("Horovod stopped: Horovod has been shut")
    assert "hvd.join()" in finding["suggestions"][0]["action"]


def test_after_an_nccl_error_the_shutdown_is_its_consequence(tmp_path: Path) -> None:
    text = (
        "[1,1]<stderr>:horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: unhandled system error\n"
        f"[1,0]<stderr>:RuntimeError: {SHUTDOWN_14}\n"
    )
    _, t = parse(text)
    assert [(e["class"], e["consequence"]) for e in t["nccl_errors"]] == [
        ("system_error", True),
        (SHUTDOWN, True),
    ]
    (finding,) = [f for f in report(tmp_path, text)["findings"] if f["code"] == "nccl.error"]
    assert finding["title"].startswith("NCCL system error: ncclAllReduce failed")  # the shutdown follows it
    assert [e["summary"].split(",")[0] for e in finding["evidence"]] == ["root cause", "consequence"]
