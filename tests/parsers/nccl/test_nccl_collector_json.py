"""A log whose lines a collector wrapped in JSON, one object a line (``parsers/paste.py``): Docker's json-file
driver (a container's log file taken from its node), journald's and Cloud Logging's JSON exports. It is read as the
lines it wraps, each where it stands in the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from parsers.inputs import InputKind, sniff
from tests.parsers.nccl.test_nccl_log import report

LINES = [
    "node1:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    "node1:100:100 [0] NCCL INFO NET/IB : No device found.",
    "node1:100:100 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
    "node1:100:100 [0] NCCL INFO Using network Socket",
    "node1:100:120 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init START",
    "node1:100:120 [0] NCCL INFO Channel 00 : 1[1000] -> 0[1000] [receive] via NET/Socket/0",
    "",
    "node1:100:120 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer node2<45678>",
    "node1:100:120 [0] NCCL INFO misc/socket.cc:546 -> 6",
]


def _docker(line: str, k: int) -> str:  # Docker escapes <, > and & (Go's JSON encoder), as its log files show
    text = json.dumps(line + "\n").replace("<", "\\u003c").replace(">", "\\u003e")
    return f'{{"log":{text},"stream":"stderr","time":"2024-05-01T10:00:00.{k:09d}Z"}}'


def _journald(line: str, k: int) -> str:
    return json.dumps({"__REALTIME_TIMESTAMP": str(1714557600000000 + k), "_PID": "100", "MESSAGE": line})


def _cloud_logging(line: str, k: int) -> str:
    return json.dumps({"insertId": f"x{k}", "textPayload": line + "\n", "resource": {"type": "k8s_container"}})


def _findings(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((f["code"], f["severity"], f["title"]) for f in doc["findings"])


@pytest.mark.parametrize("wrap", [_docker, _journald, _cloud_logging], ids=["docker", "journald", "cloud-logging"])
def test_a_log_wrapped_line_by_line_in_json_reads_as_the_lines_it_wraps(tmp_path: Path, wrap: Any) -> None:
    plain = report(tmp_path, "\n".join(LINES) + "\n")
    wrapped_text = "\n".join(wrap(line, k) for k, line in enumerate(LINES)) + "\n"
    (tmp_path / "w").mkdir()
    wrapped = report(tmp_path / "w", wrapped_text)
    assert sniff(tmp_path / "w" / "job.log").kind is InputKind.JOB_LOG
    assert _findings(wrapped) == _findings(plain) and any(f[1] == "critical" for f in _findings(plain))
    (error,) = wrapped["nccl"]["errors"]
    assert error["line"] == 8 and "Connection closed by remote peer node2<45678>" in error["message"]


def test_json_of_other_shapes_is_left_as_it_is(tmp_path: Path) -> None:
    """A trainer's metrics printed as JSON hold no line of a log: they stay as written, a log that starts with them is
    still read (it was refused as "a JSON object that is not a profiler's trace"), and a file of JSON lines with
    nothing to read is refused with the reason."""
    plain = report(tmp_path, "\n".join(LINES) + "\n")
    text = '{"loss": 1.25, "epoch": 1}\n' + "\n".join(LINES) + "\n"
    (tmp_path / "a").mkdir()
    metrics_first = report(tmp_path / "a", text)
    assert sniff(tmp_path / "a" / "job.log").kind is InputKind.JOB_LOG
    assert _findings(metrics_first) == _findings(plain) and metrics_first["nccl"]["errors"][0]["line"] == 9
    only = "\n".join(_docker(f"epoch {k} loss 0.{k}", k) for k in range(5)) + "\n"
    (tmp_path / "job.log").write_text(only)
    found = sniff(tmp_path / "job.log")
    assert found.kind is InputKind.UNKNOWN and "wrapped in JSON by a collector" in found.reason
