"""A process's own report of the signal that killed it: a worker's end, and NCCL's crash when its code is there.

UCX's handler (Open MPI, HPC-X): ``[HOST:PID:THREAD:TID] Caught signal 11 (Segmentation fault: …)``, a backtrace
of numbered frames, raw (``/lib/libnccl.so(+0x1200)``) or symbolized (``0x49b8a ncclMemoryPoolAlloc<…>()``), closed
by a rule of ``=``; Open MPI's: ``[HOST:PID] *** Process received signal ***``, ``Signal: Segmentation fault (11)``,
``[HOST:PID] [ N] frame`` lines, ``*** End of error message ***``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.inputs import InputKind, sniff
from parsers.nccl.chunks import ChunkMerger, chunk_ranges, parse_chunk
from tests.parsers.nccl.test_nccl_log import parse, report

UCX_RAW = (
    "[gpu-7:288505:0:296459] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x48)\n"
    "==== backtrace (tid: 296459) ====\n"
    " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2d4) [0x7fedc925c274]\n"
    " 1  /usr/lib/libucs.so.0(+0x2d44c) [0x7fedc925c44c]\n"
    " 2  /opt/nccl/lib/libnccl.so(+0x120057) [0x7ff1c18c1057]\n"
    " 3  /opt/nccl/lib/libnccl.so(+0x12209d) [0x7ff1c18c309d]\n"
    " 4  /usr/lib/x86_64-linux-gnu/libc.so.6(+0x89144) [0x7ff1c151e144]\n"
    "=================================\n"
)
UCX_SYMBOLS = (  # a paste without UCX's tag, symbolized frames
    " Caught signal 11 (Segmentation fault: address not mapped to object at address 0x3)\n"
    "==== backtrace (tid: 212877) ====\n"
    " 0 0x0000000000042520 __sigaction()  ???:0\n"
    " 1 0x0000000000049b8a ncclMemoryPoolAlloc<ncclProxyOp>()  /build/nccl/src/include/utils.h:44\n"
    " 2 0x0000000000049c10 ncclLocalOpAppend()  /build/nccl/src/proxy.cc:462\n"
    "=================================\n"
)
OMPI = (
    "2026-08-31 12:27:50 [k8s-w3:00956] *** Process received signal ***\n"
    "2026-08-31 12:27:50 [k8s-w3:00956] Signal: Segmentation fault (11)\n"
    "2026-08-31 12:27:50 [k8s-w3:00956] Signal code:  (-6)\n"
    "2026-08-31 12:27:50 [k8s-w3:00956] [ 0] /usr/lib/x86_64-linux-gnu/libc.so.6(+0x45330)[0x7d1d0c3eb330]\n"
    "2026-08-31 12:27:50 [k8s-w3:00956] [ 1] /usr/local/nccl/lib/libnccl.so.2(+0xbd72c)[0x7d1d0c8f372c]\n"
    "2026-08-31 12:27:50 [k8s-w3:00956] [ 2] /usr/lib/x86_64-linux-gnu/libc.so.6(+0x9caa4)[0x7d1d0c442aa4]\n"
    "2026-08-31 12:27:50 [k8s-w3:00956] *** End of error message ***\n"
)
NOT_NCCL = (
    "[tb2:78142] *** Process received signal ***\n"
    "[tb2:78142] Signal: Bus error (7)\n"
    "[tb2:78142] [ 0] /lib64/libpthread.so.0(+0x115d0)[0x7f8eaaf0e5d0]\n"
    "[tb2:78142] [ 1] /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so(+0x353)[0x7f8eab35933c]\n"
    "[tb2:78142] *** End of error message ***\n"
)


@pytest.mark.parametrize(
    ("text", "host", "pid", "where", "frames"),
    [
        (UCX_RAW, "gpu-7", 288505, "libnccl.so", (2, 5)),
        (UCX_SYMBOLS, None, None, "ncclMemoryPoolAlloc", (2, 3)),
        (OMPI, "k8s-w3", 956, "libnccl.so", (1, 3)),
    ],
)
def test_a_crash_in_nccls_code_is_nccls_failure_and_the_workers_end(
    tmp_path: Path, text: str, host: str | None, pid: int | None, where: str, frames: tuple[int, int]
) -> None:
    path = tmp_path / "crash.log"
    path.write_text("epoch 3 step 120 loss 0.41\n" + text)
    assert sniff(path).kind is InputKind.JOB_LOG
    _, t = parse("epoch 3 step 120 loss 0.41\n" + text)
    (end,) = t["worker_exits"]
    assert (end["line"], end["host"], end["pid"], end["signal"]) == (2, host, pid, 11)
    (err,) = t["nccl_errors"]
    assert (err["line"], err["class"], err["host"]) == (2, "nccl_crash", host)
    assert err["message"] == (
        f"Segmentation fault (signal 11) in {where}: {frames[0]} of the {frames[1]} frames of its backtrace are NCCL's"
    )
    doc = report(tmp_path, text)
    codes = [(f["code"], f["severity"]) for f in doc["findings"]]
    assert codes[:2] == [("nccl.error", "critical"), ("job.worker_exit", "critical")]
    assert doc["verdict"]["headline"].startswith("Failed: NCCL crashed: Segmentation fault (signal 11)")


def test_a_crash_elsewhere_is_only_the_workers_end(tmp_path: Path) -> None:
    _, t = parse(NOT_NCCL)
    assert "nccl_errors" not in t
    (end,) = t["worker_exits"]
    assert (end["launcher"], end["host"], end["signal"]) == ("open-mpi", "tb2", 7)
    (finding,) = report(tmp_path, NOT_NCCL)["findings"]
    assert finding["title"] == "A worker died on tb2: SIGBUS" and "its own signal handler" in finding["summary"]
    assert finding["suggestions"][0]["action"].startswith("Read the backtrace its signal handler printed (line 1)")


def test_a_report_cut_by_the_end_of_the_log_or_a_chunk_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    cut = UCX_RAW.split("=================================")[0]  # no closing rule: the log ends in it
    _, t = parse(cut)
    assert [e["class"] for e in t["nccl_errors"]] == ["nccl_crash"] and len(t["worker_exits"]) == 1
    path = tmp_path / "job.log"
    text = "x\n" * 40 + OMPI + "y\n" * 40
    path.write_bytes(text.encode())
    one = parse(text)[1]
    for size in (60, 100, 150):  # chunk cuts inside the report
        ranges = chunk_ranges(path, len(text), size)
        merger = ChunkMerger(str(path), ranges, str(path))
        for i, (a, b) in enumerate(ranges):
            merger.add(i, parse_chunk(str(path), a, b, str(path)))
        tables = {k: v.to_pylist() for k, v in merger.tables().items()}
        assert tables["worker_exits"] == one["worker_exits"] and tables["nccl_errors"] == one["nccl_errors"], size


PYTHON = (  # Python's faulthandler, behind Ray's worker tag (vLLM#4108): the process aborted itself
    "(RayWorkerVllm pid=7046) Fatal Python error: Aborted\n"
    "(RayWorkerVllm pid=7046) \n"
    "(RayWorkerVllm pid=7046) Extension modules: msgpack._cmsgpack, psutil._psutil_linux (total: 37)\n"
)
FAULTHANDLER = (  # Python 3.10's, after UCX's report of the same crash
    "Fatal Python error: Segmentation fault\n\n"
    "Current thread 0x00007f1e4f7fe740 (most recent call first):\n"
    '  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 2050 in all_reduce\n'
)


def test_pythons_faulthandler_is_a_workers_end_and_one_with_the_report_before_it(tmp_path: Path) -> None:
    _, t = parse(PYTHON)
    (end,) = t["worker_exits"]
    assert (end["launcher"], end["signal"], end["line"]) == ("python", 6, 1) and "nccl_errors" not in t
    (finding,) = report(tmp_path, PYTHON)["findings"]
    assert finding["title"] == "A worker died: SIGABRT"
    assert finding["suggestions"][0]["action"].startswith("Read the Python frames its faulthandler printed (line 1)")
    text = "x\n" * 30 + UCX_RAW + FAULTHANDLER + "y\n" * 30
    one = parse(text)[1]
    assert [(e["launcher"], e["line"]) for e in one["worker_exits"]] == [("ucx", 31)]  # one crash, one end
    path = tmp_path / "both.log"
    path.write_bytes(text.encode())
    for size in (60, 200, 400):  # cuts between the two handlers' reports
        ranges = chunk_ranges(path, len(text), size)
        merger = ChunkMerger(str(path), ranges, str(path))
        for i, (a, b) in enumerate(ranges):
            merger.add(i, parse_chunk(str(path), a, b, str(path)))
        assert merger.tables()["worker_exits"].to_pylist() == one["worker_exits"], size
