"""A framework's report of a failed NCCL call is classified by the failed call's own words.

PyTorch wraps NCCL's result code (``unhandled system error``, ``internal error``) around the text NCCL
kept of the call that failed (``Last error: …``). The wrapper's code is generic; the last error names
the cause: ``Bootstrap : no socket interface found`` is a configuration error, not an internal one. The
report arrives flattened onto one line (older PyTorch's crash text), as a block behind a launcher's
prefix (``[trainer0|0]:``, TorchX; ``[rank1]:``, torchrun), or as a result code's name without
PyTorch's ``NCCL error in:`` header. NCCL 2.14 and 2.19 texts; PyTorch's report without NCCL's version
(releases before ≈1.6, NCCL 2.4-2.7) and hard-wrapped by a terminal (NCCL 2.7, 2.10); Horovod's
``<call> failed: <text>`` under PyTorch and TensorFlow, XLA's; PyTorch's unique id never fetched from the
c10d store; ``torch.cuda.nccl``'s ``NCCL Error 2: …``, PyTorch's async ``NCCL error: …``, TensorFlow's
``NCCL: …``; nccl-tests' ``Test NCCL failure …``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from parsers.inputs import InputKind, sniff
from parsers.nccl.parser import JobLogParser

ONE_LINE = (
    "terminate called after throwing an instance of 'std::runtime_error'\n"
    "  what():  NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error, "
    "NCCL version 2.14.3 ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
    "device error. Last error: NET/IB : Got completion from peer 10.0.0.2<45678> with error 12, opcode 0, len 0, "
    "vendor err 129 (Recv)\n"
    "Fatal Python error: Aborted\n"
)
BLOCK = (
    "[trainer0|0]:Traceback (most recent call last):\n"
    "[trainer0|0]:    dist.barrier()\n"
    "[trainer0|0]:torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the "
    "NCCL developers, NCCL version 2.19.3\n"
    "[trainer0|0]:ncclInternalError: Internal check failed.\n"
    "[trainer0|0]:Last error:\n"
    "[trainer0|0]:Bootstrap : no socket interface found\n"
)
NAMED_ONLY = (
    "[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
    "[rank1]: Last error:\n"
    "[rank1]: Call to ibv_reg_mr failed with error Cannot allocate memory\n"
)
NO_LAST_ERROR = (
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system "
    "error, NCCL version 2.14.3\n"
)


def _errors(tmp_path: Path, text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    log = tmp_path / "job.log"
    log.write_text(text)
    assert sniff(log).kind is InputKind.JOB_LOG
    with temporary_store() as store:
        store.ingest(*discover([log]))
        doc = to_document(analyze(store))
    assert doc["nccl"] is not None
    return list(doc["nccl"]["errors"]), list(doc["findings"])


@pytest.mark.parametrize(
    ("text", "cls", "cause"),
    [
        (ONE_LINE, "ib_completion_error", "NET/IB : Got completion from peer"),
        (BLOCK, "config_error", "Bootstrap : no socket interface found"),
        (NAMED_ONLY, "ibv_setup_failure", "Call to ibv_reg_mr failed"),
    ],
)
def test_the_last_error_names_the_cause(tmp_path: Path, text: str, cls: str, cause: str) -> None:
    errors, findings = _errors(tmp_path, text)
    (err,) = errors  # one report: its result code's name and its Last error belong to it
    assert err["class"] == cls and err["message"].startswith(f"Last error: {cause}")
    f, *more = findings  # and the worker's end, where Python's faulthandler says the process aborted
    assert f["code"] == "nccl.error" and f["labels"]["class"] == cls and cause in f["title"]
    assert [m["code"] for m in more] == (["job.worker_exit"] if "Fatal Python error: Aborted" in text else [])


def test_without_a_last_error_the_result_code_decides(tmp_path: Path) -> None:
    errors, _ = _errors(tmp_path, NO_LAST_ERROR)
    (err,) = errors
    assert err["class"] == "system_error" and err["result_code"] == 2


def test_two_reports_stay_two(tmp_path: Path) -> None:
    """Each ``NCCL error in:`` is a failed call of its own, even right after another one."""
    errors, _ = _errors(tmp_path, NO_LAST_ERROR + NO_LAST_ERROR.replace("1269", "1271"))
    assert [e["line"] for e in errors] == [1, 2]


def test_prose_naming_a_result_code_is_no_report(tmp_path: Path) -> None:
    """A README that says "a bare `ncclSystemError: …` takes its class from the `Last error:` text" is
    not a failed call: a result code's name counts only with NCCL's own description after it."""
    notes = tmp_path / "notes.md"
    notes.write_text(
        "A framework's report (a bare `ncclSystemError: …`) takes its class from the `Last error:`\n"
        "text it carries, not from the wrapper's result code.\n"
    )
    assert sniff(notes).kind is not InputKind.JOB_LOG


# PyTorch before ≈1.6 printed its report without NCCL's version (two real tracebacks' last lines)
BARE = [
    (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 50, in <module>\n'
        "    dist._broadcast_coalesced(self.process_group, tensors, buffer_size)\n"
        "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:290, internal error\n",
        "internal_error",
        4,
    ),
    (
        "[1,0]<stderr>:RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, unhandled "
        "system error\n",
        "system_error",
        1,
    ),
]


@pytest.mark.parametrize(("text", "cls", "line"), BARE)
def test_a_report_without_nccls_version_is_read(tmp_path: Path, text: str, cls: str, line: int) -> None:
    """A log whose only evidence is such a report is an input, and the report its failure."""
    errors, findings = _errors(tmp_path, text)
    (err,) = errors
    assert (err["class"], err["line"], err["level"]) == (cls, line, "framework")
    assert err["src"] == "/pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:" + ("290" if line == 4 else "911")
    assert [f["code"] for f in findings] == ["nccl.error"]


# a terminal's or a paste's hard wrap cuts the report: after its comma, where a comma was, or mid-token
WRAPPED = [
    (
        "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:825, \n"
        "unhandled system error, NCCL version 2.7.8\n",
        "system_error",
        "2.7.8",
        825,
    ),
    (
        "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:825\n"
        "internal error, NCCL version 2.10.3\n",
        "internal_error",
        "2.10.3",
        825,
    ),
    (
        "[rank0]: RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1656352465323/work/torch/csrc/distributed/"
        "c10d/ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL versi\n"
        "[rank0]: on 2.10.3\n"
        "[rank0]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n",
        "system_error",
        "2.10.3",
        1191,
    ),
]


@pytest.mark.parametrize(("text", "cls", "version", "src_line"), WRAPPED)
def test_a_hard_wrapped_report_is_read_whole(tmp_path: Path, text: str, cls: str, version: str, src_line: int) -> None:
    errors, _ = _errors(tmp_path, text)
    (err,) = errors  # one report: its wrapped rest and its result code's name belong to it
    assert (err["class"], err["line"], err["message"].endswith(f"NCCL version {version}")) == (cls, 1, True)
    assert err["src"].rsplit("/", 1)[-1] == f"ProcessGroupNCCL.cpp:{src_line}"
    log = tmp_path / "job.log"
    p = JobLogParser(log)
    with open(log, "rb") as f:
        versions = p.parse(f)["nccl_versions"].to_pylist()
    assert [(v["line"], v["version"], v["source"]) for v in versions] == [(1, version, "pytorch")]


def test_reports_on_consecutive_lines_stay_apart(tmp_path: Path) -> None:
    """A report without a version followed by another report (bare, or with its version) is two failed
    calls, not one report wrapped onto the next line."""
    first = "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:290, internal error\n"
    versioned = "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:38, unhandled cuda error, NCCL version 2.7.8\n"
    errors, _ = _errors(tmp_path, first + first.replace("290", "291") + versioned)
    assert [(e["line"], e["class"]) for e in errors] == [
        (1, "internal_error"),
        (2, "internal_error"),
        (3, "cuda_error"),
    ]


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        (
            "horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: unhandled system error\n",
            "system_error",
        ),
        (
            "[1,0]<stderr>:tensorflow.python.framework.errors_impl.UnknownError: ncclCommInitRank failed: unhandled "
            "cuda error\n",
            "cuda_error",
        ),
        (
            "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:297: NCCL "
            "operation ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled cuda error (run with NCCL_DEBUG=INFO "
            "for details)\n",
            "cuda_error",
        ),
    ],
)
def test_horovods_report_of_a_failed_call_is_read(tmp_path: Path, text: str, cls: str) -> None:
    """Horovod raises ``<call> failed: <result text>`` (PyTorch and TensorFlow alike), XLA the call with its
    arguments."""
    errors, findings = _errors(tmp_path, text)
    (err,) = errors
    assert (err["class"], err["level"], err["src"]) == (cls, "framework", None)
    assert err["message"].split("(")[0].split(" failed:")[0] in ("ncclAllReduce", "ncclCommInitRank")
    assert [f["code"] for f in findings] == ["nccl.error"]


def test_prose_about_a_failed_call_is_no_report(tmp_path: Path) -> None:
    """The result text anchors Horovod's form: a sentence saying a call failed is no report."""
    notes = tmp_path / "notes.txt"
    notes.write_text("If ncclAllReduce failed: check the network. NCCL error in the docs.\n")
    assert sniff(notes).kind is not InputKind.JOB_LOG


@pytest.mark.parametrize(
    "text",
    [
        # PyTorch 2.3+, torchrun's [rankN]: prefix, a TCPStore that timed out
        "[rank5]:[W socket.cpp:432] [c10d] While waitForInput, poolFD failed with (errno: 0 - Success).\n"
        "[rank5]: torch.distributed.DistBackendError: [5] is setting up NCCL communicator and retrieving ncclUniqueId "
        "from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n",
        # PyTorch 1.13's spelling, a FileStore's wait
        "RuntimeError: [1] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d key-value "
        "store by key '0', but store->get('0') got error: Timeout waiting for key: default_pg/0/0 after 1800000 ms\n",
    ],
)
def test_a_unique_id_never_fetched_is_its_own_class(tmp_path: Path, text: str) -> None:
    """NCCL never started: the group's first rank did not publish the id. The finding says to read that
    rank's log and names the store, not a network or NCCL fault."""
    errors, findings = _errors(tmp_path, text)
    (err,) = errors
    assert (err["class"], err["level"]) == ("unique_id_exchange", "framework")
    (f,) = findings
    assert f["labels"]["class"] == "unique_id_exchange" and f["severity"] == "critical"
    assert "MASTER_ADDR" in f["suggestions"][0]["action"] and "init_process_group" in f["suggestions"][0]["action"]


def test_an_nccl_error_before_it_stays_the_root(tmp_path: Path) -> None:
    """Where NCCL's own WARN says why, the report of the rank that waited follows it."""
    warn = (
        "h1:7:9 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : "
        "Connection refused\n"
    )
    uid = (
        "RuntimeError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value "
        "store by key '0', but store->get('0') got error: Connection reset by peer\n"
    )
    errors, _ = _errors(tmp_path, warn + uid)
    assert [(e["level"], e["class"]) for e in errors] == [("WARN", "socket_error"), ("framework", "socket_error")]


NUMBERED = [
    # PyTorch 1.x, nn.DataParallel's broadcast through torch.cuda.nccl
    (
        '  File "torch/cuda/comm.py", line 40, in broadcast_coalesced\n'
        "    return torch._C._broadcast_coalesced(tensors, devices, buffer_size)\n"
        "RuntimeError: NCCL Error 2: unhandled system error\n",
        [("framework", "system_error", 2, 3)],
    ),
    # NCCL 2.18+'s suffixed text in a Ray worker's log: NCCL's WARN before it names the cause
    (
        "(train pid=2657296) n176:2657296:2658232 [0] include/alloc.h:102 NCCL WARN Cuda failure 1 'invalid argument'\n"
        "(train pid=2657296) n176:2657296:2658232 [0] NCCL INFO transport/p2p.cc:190 -> 1\n"
        "(train pid=2657296) RuntimeError: NCCL Error 1: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n",
        [("WARN", "cuda_error", 1, 1), ("framework", "cuda_error", 1, 3)],
    ),
    # PyTorch's watchdog ends on an error NCCL raised later (ncclCommGetAsyncError), 1.7-1.8
    (
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  [Rank 0] NCCL watchdog thread terminated with exception: NCCL error: unhandled system error, "
        "NCCL version 2.7.8\n",
        [("framework", "system_error", 2, 2)],
    ),
    # TensorFlow's NcclManager
    (
        "tensorflow.python.framework.errors_impl.InternalError: NCCL: unhandled system error. Set NCCL_DEBUG=WARN for "
        "detail.\n\t [[{{node Adam/NcclAllReduce}}]]\n",
        [("framework", "system_error", 2, 1)],
    ),
]


@pytest.mark.parametrize(("text", "want"), NUMBERED, ids=["dataparallel", "after-warn", "async", "tensorflow"])
def test_torch_cuda_nccls_numbered_report_is_read(tmp_path: Path, text: str, want: list[tuple[object, ...]]) -> None:
    """``nn.DataParallel`` fails through ``torch.cuda.nccl``: ``NCCL Error <code>: <text>``; PyTorch's watchdog
    on an asynchronous error says ``NCCL error: <text>``; TensorFlow ``NCCL: <text>``."""
    errors, findings = _errors(tmp_path, text)
    assert [(e["level"], e["class"], e["result_code"], e["line"]) for e in errors] == want
    assert [f["code"] for f in findings] == ["nccl.error"]


@pytest.mark.parametrize(
    ("text", "cls", "line", "host"),
    [
        # nccl-tests built with NCCL >= 2.13: the host, and NCCL's last error after " / " (empty here)
        (
            "#  Rank  0 Group  0 Pid 543317 on     dell03 device  0 [0x1b] NVIDIA A100-SXM4-80GB\n"
            "dell03: Test NCCL failure common.cu:1012 'internal error - please report this issue to the NCCL "
            "developers / '\n"
            " .. dell03 pid 543317: Test failure common.cu:891\n",
            "internal_error",
            2,
            "dell03",
        ),
        # the last error names the cause: a socket error, not the wrapper's system error
        (
            "node1: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details) / "
            "socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort'\n",
            "socket_error",
            1,
            "node1",
        ),
        # older nccl-tests: no host, no last error
        ("Test NCCL failure all_reduce.cu:86 'unhandled cuda error'\n", "cuda_error", 1, None),
    ],
    ids=["2.13+", "last-error", "old"],
)
def test_nccl_tests_report_of_a_failed_call_is_read(tmp_path: Path, text: str, cls: str, line: int, host: str) -> None:
    """nccl-tests, the tool a cluster is checked with, prints ``[HOST: ]Test NCCL failure FILE:LINE '<text>'``."""
    errors, findings = _errors(tmp_path, text)
    (err,) = errors
    assert (err["class"], err["line"], err["level"], err["host"]) == (cls, line, "framework", host)
    assert [f["code"] for f in findings] == ["nccl.error"]


def test_the_title_keeps_the_file_of_a_build_tree_and_the_summary_the_path(tmp_path: Path) -> None:
    """A report's source path deep in a conda build tree filled the title and cut the result text out."""
    path = "/opt/conda/conda-bld/pytorch_1656352465323/work/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
    _, findings = _errors(
        tmp_path, f"RuntimeError: NCCL error in: {path}:1191, unhandled system error, NCCL version 2.10.3\n"
    )
    (f,) = findings
    assert f["title"].startswith(
        "NCCL system error: NCCL error in: …/ProcessGroupNCCL.cpp:1191, unhandled system error"
    )
    assert path in f["summary"]


@pytest.mark.parametrize(
    "line",
    [
        "INFO 07-23 20:47:08 pynccl.py:69] vLLM is using nccl==2.21.5",  # vLLM 0.5
        "(VllmWorkerProcess pid=538) INFO 07-23 20:47:08 pynccl.py:69] vLLM is using nccl==2.21.5",
        "(Worker pid=4155524) INFO 08-20 16:42:21 [pynccl.py:113] vLLM is using nccl==2.21.5",  # vLLM 0.10
    ],
)
def test_the_nccl_version_vllm_says_it_loaded_is_read(line: str) -> None:
    from tests.parsers.nccl.test_nccl_log import parse

    p, tables = parse(line + "\nbm-1:538:538 [1] NCCL INFO Using network IB\n")
    assert [(v["version"], v["source"], v["line"]) for v in tables["nccl_versions"]] == [("2.21.5", "vllm", 1)]
    assert p.counts["foreign"] == 0


@pytest.mark.parametrize(
    ("line", "version", "cuda"),
    [
        ("NCCL version 2.26.2 compiled with CUDA 12.4", "2.26.2", "12.4"),  # ncclras's first line (2.24+)
        (
            "$ ncclras -v | head\nNCCL version 2.24.3 compiled with CUDA 12.6",
            "2.24.3",
            "12.6",
        ),  # the command pasted too
    ],
)
def test_the_nccl_version_nccls_ras_client_reports_is_read(line: str, version: str, cuda: str) -> None:
    from tests.parsers.nccl.test_nccl_log import parse

    _, tables = parse(line + "\nCUDA runtime version 12040, driver version 12040\n")
    assert [(v["version"], v["cuda"], v["source"]) for v in tables["nccl_versions"]] == [(version, cuda, "ras")]


NCCL_TESTS_TAIL = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
   536870912     134217728     float     sum      -1   2432.7  220.69  413.79      0   2382.4  225.35  422.54      0
  1073741824     268435456     float     sum      -1   4523.3  237.38  445.09      3   4518.9  237.61  445.52      0
{indent}# Out of bounds values : {n} {verdict}
{indent}# Avg bus bandwidth    : 431.73
"""


@pytest.mark.parametrize("indent", ["", "    ", "> "], ids=["plain", "code block", "quote"])
def test_nccl_tests_wrong_results_are_a_failure_of_their_own(tmp_path: Path, indent: str) -> None:
    from tests.parsers.nccl.test_nccl_log import parse, report

    failed = NCCL_TESTS_TAIL.format(indent=indent, n=3, verdict="FAILED")
    (err,) = parse(failed)[1]["nccl_errors"]
    assert (err["class"], err["consequence"], err["line"]) == ("wrong_results", False, 4)
    log = tmp_path / "all_reduce_perf.out"
    log.write_text(failed)
    assert sniff(log).kind is InputKind.JOB_LOG
    (f,) = report(tmp_path, failed)["findings"]
    assert (f["severity"], f["labels"]["class"]) == ("critical", "wrong_results") and "3 wrong value" in f["title"]
    # an NCCL error logged before does not take its class: wrong data is a finding of its own
    warned = "h:1:1 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer g<4>\n" + failed
    assert {e["class"] for e in parse(warned)[1]["nccl_errors"]} == {"socket_error", "wrong_results"}
    assert "nccl_errors" not in parse(NCCL_TESTS_TAIL.format(indent=indent, n=0, verdict="OK"))[1]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (BLOCK, "log.no_nccl_records"),  # a framework's report, no NCCL_DEBUG record: it is what the file says
        ("vLLM is using nccl==2.21.5\n", "log.no_nccl_records"),
        ("epoch 1 loss 0.3\nepoch 2 loss 0.2\n", "log.no_signals"),
    ],
)
def test_a_file_of_framework_texts_is_not_said_to_hold_nothing(tmp_path: Path, text: str, code: str) -> None:
    log = tmp_path / "job.log"
    log.write_text(text)
    p = JobLogParser(log)
    with open(log, "rb") as f:
        p.parse(f)
    codes = {i.code for i in p.sink.issues}
    assert code in codes and not codes & ({"log.no_signals", "log.no_nccl_records"} - {code})
