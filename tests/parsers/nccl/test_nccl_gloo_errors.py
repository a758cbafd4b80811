"""Gloo's own reports of a failed operation (``parsers.nccl.gloo_errors``): a peer lost or waited for past the timeout
(what a process saw of a peer: consequences), the mesh that never connected, an interface with no address, a
collective mismatch (causes). Raised through PyTorch's ``RuntimeError`` (1.x to 2.x, their build trees' paths), a C++
program's ``what():`` under Horovod's Gloo controller, behind mpirun's, torchrun's and Ray's tags. A file holding
only them was "not an input", or its abort was read as the job's cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.inputs import InputKind, sniff
from parsers.nccl.gloo_errors import CONNECT, INTERFACE, MISMATCH, PEER_LOST, TIMEOUT, parse_gloo
from tests.parsers.nccl.test_nccl_log import parse, report

CLOSED_19 = (
    "Thu Aug 29 16:41:02 2019[0]<stderr>:  what():  [/tmp/pip-req-build-5w870gio/third_party/gloo/gloo/transport/tcp/"
    "pair.cc:572] Connection closed by peer [10.128.15.205]:53666"
)
CLOSED_TORCH = (
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [18.25.6.30]:28048"
)

#: (source, line, class, the message's start, the source location read)
LINES = [
    ("horovod 0.18 what()", CLOSED_19, PEER_LOST, "Connection closed by peer [10.128.15.205]:53666", "pair.cc:572"),
    ("torch 1.11", CLOSED_TORCH, PEER_LOST, "Connection closed by peer [18.25.6.30]:28048", "pair.cc:598"),
    (
        "torch 2.5, Gloo's advice after it",
        "[rank3]:RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
        "[10.0.0.3]:41005. This is typically caused by a remote worker crashing. Check the logs of the remote worker "
        "before reporting an error. GLHF! \U0001f3d6\ufe0f",
        PEER_LOST,
        "Connection closed by peer [10.0.0.3]:41005 (rank 3)",
        "pair.cc:534",
    ),
    (
        "torch 2.1 read error",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [192.168.70.92]:25266: "
        "Connection reset by peer",
        PEER_LOST,
        "Read error [192.168.70.92]:25266: Connection reset by peer",
        "pair.cc:589",
    ),
    (
        "horovod what() read error",
        "[4]<stderr>:  what():  [/tmp/pip-req-build-p31znpnj/third_party/gloo/gloo/transport/tcp/pair.cc:563] Read "
        "error [10.128.0.5]:19855: Connection reset by peer",
        PEER_LOST,
        "Read error [10.128.0.5]:19855: Connection reset by peer",
        "pair.cc:563",
    ),
    (
        "writev",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:401] writev [10.1.1.7]:39211: Broken pipe",
        PEER_LOST,
        "writev [10.1.1.7]:39211: Broken pipe",
        "pair.cc:401",
    ),
    (
        "torchrun's role tag",
        "[trainer22|6]:RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv "
        "operation to complete",
        TIMEOUT,
        "Timed out waiting 1800000ms for recv operation to complete",
        "unbound_buffer.cc:81",
    ),
    (
        "torch 1.13 send",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] Timed out waiting 600000ms for "
        "send operation to complete",
        TIMEOUT,
        "Timed out waiting 600000ms for send operation to complete",
        "unbound_buffer.cc:133",
    ),
    (
        "sync mode",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:476] Read timeout [10.0.0.9]:50123",
        TIMEOUT,
        "Read timeout [10.0.0.9]:50123",
        "pair.cc:476",
    ),
    (
        "vLLM under Ray, 2.x's first wording",
        "(RayWorkerWrapper pid=1890, ip=10.41.0.8) [rank8]:[E ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed "
        "with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
        CONNECT,
        "Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
        "pair.cc:144",
    ),
    (
        "torch 2.5, a loopback peer",
        "RuntimeError: Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] "
        "timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:14215 (rank=8, size=16, "
        "local=[127.0.0.1])",
        CONNECT,
        "Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out",
        "pair.cc:152",
    ),
    (
        "torch 1.4 host name",
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:127] rp != nullptr. Unable "
        "to find address for: dgx-1.ai",
        INTERFACE,
        "Unable to find address for: dgx-1.ai",
        "device.cc:127",
    ),
    (
        "torch 1.9 interface",
        "RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
        "Unable to find address for: ib0",
        INTERFACE,
        "Unable to find address for: ib0",
        "device.cc:83",
    ),
    ("torch 2.4+, no location", "RuntimeError: Unable to find address for: eth0", INTERFACE, "Unable to find", None),
    (
        "1.x enforce",
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= "
        "op.nbytes. 8 vs 4",
        MISMATCH,
        "op.preamble.length <= op.nbytes. 8 vs 4",
        "pair.cc:446",
    ),
    (
        "2.x enforce with its question",
        "[rank1]: RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:510] "
        "op.preamble.length <= op.nbytes. 4096 vs 2048. Received data size doesn't match expected size. Is there a "
        "distributed collective mismatch in your code?",
        MISMATCH,
        "op.preamble.length <= op.nbytes. 4096 vs 2048",
        "pair.cc:510",
    ),
]


@pytest.mark.parametrize(("source", "line", "cls", "start", "at"), LINES, ids=[f"{c}-{s}" for s, _, c, _, _ in LINES])
def test_each_form_is_read_with_its_class_and_place(
    source: str, line: str, cls: str, start: str, at: str | None
) -> None:
    found = parse_gloo(line)
    assert found is not None and found.cls == cls, source
    assert found.message.startswith(start) and "GLHF" not in found.message, found.message
    assert found.cause == (cls not in (PEER_LOST, TIMEOUT))  # what a process saw of a peer is a consequence
    assert (found.src or "").endswith(at or "") and (at is None) == (found.src is None)
    if found.src:
        assert found.src.startswith("gloo/")  # the build tree's path left out


@pytest.mark.parametrize(("source", "line", "cls"), [(s, line, c) for s, line, c, _, _ in LINES], ids=lambda x: x)
def test_a_file_of_the_report_alone_is_a_job_log(tmp_path: Path, source: str, line: str, cls: str) -> None:
    path = tmp_path / "job.log"
    path.write_text(line + "\n")
    assert sniff(path).kind is InputKind.JOB_LOG, source
    _, tables = parse(line + "\n")
    assert [e["class"] for e in tables["nccl_errors"]] == [cls], source


def test_the_advice_names_what_was_set_wrong() -> None:
    excluded = parse_gloo(
        "RuntimeError: [enforce fail at .../gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find address "
        "for: ^lo"
    )
    assert excluded is not None and excluded.advice is not None and "exclusion list" in excluded.advice
    loopback = parse_gloo(next(line for s, line, *_ in LINES if s == "torch 2.5, a loopback peer"))
    assert loopback is not None and loopback.advice is not None and "loopback" in loopback.advice
    refused = parse_gloo(
        "RuntimeError: Gloo connectFullMesh failed with [../gloo/transport/tcp/pair.cc:152] timed out connecting: "
        "SO_ERROR: Connection refused, remote=[10.2.0.4]:29400"
    )
    assert refused is not None and refused.advice is None


@pytest.mark.parametrize(
    "line",
    [
        "the connection was closed by peer [10.0.0.1]:5000 while we slept",
        "misc/socket.cc:47 NCCL WARN Net : Connection closed by remote peer 10.0.0.2<5000>",
        "Connection closed by peer [10.0.0.1]:5000",  # the words without Gloo's location
        "see gloo/README.md for the transport's design",
        "Unable to find address for the meeting",
    ],
)
def test_what_is_not_glooss_report(line: str) -> None:
    assert parse_gloo(line) is None


def test_horovods_stopped_loop_keeps_its_class(tmp_path: Path) -> None:
    """Horovod's background loop quotes the Gloo error that stopped it: Horovod's shutdown, as before."""
    line = (
        "[0]<stderr>:[2026-11-22 07:16:51.260756: E /src/horovod/common/operations.cc:697] [0]: Horovod background "
        "loop uncaught exception: [/src/third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [10.0.0.2]:5000: "
        "Connection reset by peer\n"
    )
    _, tables = parse(line)
    assert [e["class"] for e in tables["nccl_errors"]] == ["horovod_shutdown"]


def test_a_peer_lost_alone_says_where_to_look(tmp_path: Path) -> None:
    r = report(tmp_path, f"{CLOSED_TORCH}\n")
    (finding,) = [f for f in r["findings"] if f["code"] == "nccl.error"]
    assert finding["severity"] == "critical"
    assert finding["title"] == "Gloo peer lost: Connection closed by peer [18.25.6.30]:28048"
    assert "read the log of the host at that address" in finding["suggestions"][0]["action"]
    assert r["verdict"]["headline"].endswith("Connection closed by peer [18.25.6.30]:28048")


def test_a_peer_lost_after_a_worker_died_follows_from_it(tmp_path: Path) -> None:
    text = f"Process 1 exit with status code 137.\n[1,0]<stderr>:{CLOSED_TORCH}\n"
    r = report(tmp_path, text)
    (finding,) = [f for f in r["findings"] if f["code"] == "nccl.error"]
    assert finding["severity"] == "warning" and "follows from the worker's end" in finding["summary"]
    assert any(f["code"] == "job.worker_exit" and f["severity"] == "critical" for f in r["findings"])


def test_the_abort_its_own_gloo_error_caused_is_no_peer_s_end(tmp_path: Path) -> None:
    """A C++ program that met the lost peer ends in ``terminate`` and aborts: that abort is the Gloo error's, so the
    lost peer stays the finding to read first, not a consequence of the abort."""
    text = (
        "Thu Aug 29 16:41:02 2019[0]<stderr>:terminate called after throwing an instance of 'gloo::IoException'\n"
        f"{CLOSED_19}\n"
        "Thu Aug 29 16:41:02 2019[0]<stderr>:Fatal Python error: Aborted\n"
    )
    r = report(tmp_path, text)
    (finding,) = [f for f in r["findings"] if f["code"] == "nccl.error"]
    assert finding["severity"] == "critical" and "follows from the worker's end" not in finding["summary"]
    assert r["verdict"]["headline"] == "Failed: Gloo peer lost: Connection closed by peer [10.128.15.205]:53666"
