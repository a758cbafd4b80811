"""What a small compressed input costs follows its content, not only its bytes (issue 46, point 3): a
log of one line repeated is read once per distinct line, and a gzip input's inflated size is read from
its trailer before deciding to hold its tables in memory."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

from analyzer.store.discovery import discover
from analyzer.store.held import BASELINE_BYTES, fits, inflated
from parsers.inputs import INFLATE_FLOOR, INFLATE_RATIO
from parsers.nccl.parser import JobLogParser

WARN = "gpu-node-000:20000:20000 [0] NCCL WARN Call to ibv_create_cq failed"
CHANNEL = "gpu-node-000:20000:20000 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"


def _parse(text: str) -> JobLogParser:
    p = JobLogParser("job.log")
    p.parse(io.BytesIO(text.encode()))
    return p


def test_a_line_repeated_is_read_once_and_counted() -> None:
    p = _parse("\n".join([WARN] * 50_000) + "\n")
    assert len(p.failures.errors) == 1 and p.failures.errors[0].line == 1
    issues = {i.code: i for i in p.sink.issues}
    assert issues["log.repeated_lines"].count == 49_999 and issues["log.repeated_lines"].severity.value == "info"
    assert p.lines == 50_000


def test_lines_that_only_look_alike_are_each_read() -> None:
    other = WARN.replace(":20000 [0]", ":20001 [0]")  # another thread: a record of its own
    p = _parse("\n".join([WARN, CHANNEL, WARN, other, other]) + "\n")
    assert [e.line for e in p.failures.errors] == [1, 3, 4]  # the WARN after the CHANNEL line is new
    assert {i.code: i.count for i in p.sink.issues}.get("log.repeated_lines") == 1


def test_a_gzip_inputs_inflated_size_comes_from_its_trailer(tmp_path: Path) -> None:
    record = b'{"ph": "B", "name": "ALLREDUCE", "ts": 100, "pid": 1},{"ph": "E", "ts": 101, "pid": 1},'
    path = tmp_path / "be.json.gz"
    body = b"[" + record * ((12 << 20) // len(record)) + b"]"
    path.write_bytes(gzip.compress(body, 6))
    (item,), _ = discover([path])
    assert inflated(item) == len(body) > 50 * item.size  # what it inflates to, not 10x the file
    assert not fits([item], BASELINE_BYTES + len(body))  # its tables would not fit: not held in memory
    assert fits([item], BASELINE_BYTES + 3 * len(body))
    capped = tmp_path / "bomb.json.gz"
    capped.write_bytes(gzip.compress(b"[" + record * ((64 << 20) // len(record)) + b"]", 9))
    (bomb,), _ = discover([capped])
    assert inflated(bomb) == max(INFLATE_FLOOR, bomb.size * INFLATE_RATIO)  # no more is ever read of it
