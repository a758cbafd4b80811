"""The plain-record path of ``split_records`` (one ``HOST:PID:TID [DEV] ... NCCL LEVEL`` record from the
line's start, regex-read) gives exactly what the careful path gives, on every line of the corpus and
the project's logs, and on forms built to sit at its edges."""

from __future__ import annotations

import pytest

from parsers.nccl.records import _plain, careful_split, split_records
from tests.conftest import CORPUS, ROOT


def _lines() -> list[str]:
    files = sorted(ROOT.glob("sample_traces/**/*.log")) + sorted(CORPUS.glob("nccl*/*.log"))
    out: list[str] = []
    for f in files:
        out += [line.rstrip("\r") for line in f.read_text(errors="replace").splitlines() if "NCCL" in line]
    return out


def test_the_plain_path_agrees_with_the_careful_one_on_every_real_line() -> None:
    lines = _lines()
    plain = [line for line in lines if _plain(line) is not None]
    assert len(plain) > 0.5 * len(lines) > 1000  # most real lines are plain records
    for line in plain:
        assert split_records(line) == careful_split(line), line


EDGES = [
    # headers a collector stripped to the device: read by the compiled reader where the careful path reads them so
    "[0] NCCL INFO Using network IB",
    "[3] NCCL INFO",
    "[12] misc/socket.cc:47 NCCL WARN Net : Connect to 10.0.0.2<1> failed",
    "[0] transport/net_ib.cc:123 (ncclIbInit) NCCL WARN NET/IB : Unable to open device",
    "[0] include/shm.h:9 NCCL WARN Error while creating shared memory segment",
    "[0] a.cpp:1 NCCL TRACE t",
    "[0] a.c:3 (f) NCCL INFO m",
    "[0] a.c:3 (f.g) NCCL INFO m",
    "[0] foo:12 NCCL WARN no extension",
    "[0] .cc:12 NCCL WARN a bare extension",
    "[0] NCCL CALL ncclAllReduce",
    "[0]NCCL INFO glued",
    " [0] NCCL INFO a space before",
    "[0] NCCL INFO NCCL version 2.21.5+cuda12.4",
    "[0] NCCL INFO two [1] NCCL INFO records",
    "[0] 1699.123 NCCL INFO a time",
    "[99999999999999999999] NCCL INFO a device past 18 digits",
    "[1,0]<stdout>:[0] NCCL INFO behind a tag",
    "node-1:11:12 [0] NCCL INFO Using network IB",
    "node-1:11:12 [0] NCCL INFO",
    "node-1:11:12 [0] NCCL INFO ",
    "node-1:11:12 [3] misc/socket.cc:47 NCCL WARN Net : Connect to 10.0.0.2<1> failed",
    "node-1:11:12 [3] misc/socket.cc:47 (ncclSocketConnect) NCCL WARN Call to connect returned",
    "node-1:11:12 [3] 1712.5 misc/socket.cc:47 NCCL WARN x",
    "node-1:11:12 [3] (func) NCCL WARN x",
    "node-1:11:12 [3] ((odd)) NCCL WARN x",
    "node-1:11:12 [3] NCCL INFO NCCL INFO twice",
    "node-1:11:12 [3] NCCL INFO comm 0x1 rank 0 node-2:13:14 [1] NCCL INFO merged",
    "node-1:11:12 [3] NCCL CALL ncclAllReduce",
    "node-1:11:12 [3] NCCL INFOx not a level",
    "a:b:11:12 [0] NCCL INFO a colon in the host",
    "node-1:11:12 [99999999999999999999] NCCL INFO a huge device",
    "ip-10-0-0-1:1:2 [0] NCCL TRACE x",
    "2024-01-01T00:00:00+00:00ip-10-0-0-1:1:2 [0] NCCL INFO a CloudWatch column",
    "[1,0]<stdout>:node-1:11:12 [0] NCCL INFO prefixed",
]


@pytest.mark.parametrize("line", EDGES)
def test_the_paths_agree_at_the_plain_forms_edges(line: str) -> None:
    assert split_records(line) == careful_split(line)
