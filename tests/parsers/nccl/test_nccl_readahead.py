"""The compiled reader's lines scanned ahead on a thread (:mod:`parsers.nccl.readahead`) read as one pass does.

The scan's batches may end anywhere in a block; a stream that fails mid-way raises in the parser's thread after the
lines before it; a reading stopped at its row limit or by an error leaves no thread behind; a log of one block starts
none.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import parsers.nccl._lines as compiled_lines
import parsers.nccl.parser as parser_module
import parsers.nccl.readahead as readahead
from parsers.nccl.parser import JobLogParser
from tests.conftest import ROOT
from tests.parsers.nccl.test_nccl_compiled import REFERENCE, _edge_log, _read, _reader, _Trickle

SAMPLES = sorted(ROOT.glob("sample_traces/**/*.log"))


def _scan_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hvd-analyze-scan"]


def _small_batches(rows: int, module: Any = compiled_lines) -> Any:
    """The reader ``module`` with scan buffers of ``rows`` lines: batches end inside every block."""
    names = {name: getattr(module, name) for name in dir(module) if not name.startswith("__")}
    return SimpleNamespace(**{**names, "scan_rows": lambda: np.empty((rows, module.S_WIDTH), np.int64)})


@pytest.mark.parametrize("rows", [1, 2, 7, 64])
def test_batches_that_end_anywhere_read_as_the_python_path(rows: int) -> None:
    data = _edge_log() + b"".join(p.read_bytes() for p in SAMPLES[:6])
    python = _read(data, "python", step=5003)
    with _reader(_small_batches(rows)):
        for step in (5003, 1 << 30):
            p = JobLogParser("log.txt")
            tables = p.parse(_Trickle(data, step))
            out: dict[str, object] = {name: t.to_pylist() for name, t in tables.items()}
            out["info"] = p.info
            out["issues"] = sorted((i.code, i.count, i.message) for i in p.sink.issues)
            assert out == python, (rows, step)
    assert not _scan_threads()


def test_the_source_run_uncompiled_scans_ahead_as_the_compiled_module() -> None:
    data = _edge_log() + SAMPLES[0].read_bytes()
    with _reader(_small_batches(5, REFERENCE)):
        p = JobLogParser("log.txt")
        p.compiled = True  # the source's two passes, read ahead
        source = {name: t.to_pylist() for name, t in p.parse(_Trickle(data, 3001)).items()}
    assert source == {name: t.to_pylist() for name, t in JobLogParser("log.txt").parse(_Trickle(data, 3001)).items()}


class _Failing:
    """A stream that raises after handing out ``good`` bytes, ``step`` at a time."""

    def __init__(self, data: bytes, good: int, step: int) -> None:
        self.data, self.good, self.step, self.pos = data, good, step, 0

    def read(self, n: int = -1) -> bytes:
        if self.pos >= self.good:
            raise OSError("the disk went away")
        out = self.data[self.pos : min(self.pos + self.step, self.good)]
        self.pos += len(out)
        return out


def test_a_stream_that_fails_raises_in_the_parser_after_the_lines_before_it() -> None:
    lines = [f"node1:{100 + i}:{100 + i} [0] NCCL INFO Bootstrap : Using eth0:10.0.0.{i}<0>\n" for i in range(400)]
    data = "".join(lines).encode()
    good = sum(map(len, lines[:300]))  # a whole number of lines, in many blocks
    p = JobLogParser("log.txt")
    with pytest.raises(OSError, match="the disk went away"):
        p.feed(_Failing(data, good, 997))
    assert p.counts["records"] == 300  # every line handed out before the failure was read
    assert not _scan_threads()


def test_a_reading_stopped_at_its_row_limit_leaves_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parser_module, "ROW_LIMIT", 50)
    data = "".join(
        f"node{r % 4}:{100 + r}:{100 + r} [0] NCCL INFO comm 0x{r:x} rank {r % 8} nranks 8 cudaDev 0 busId 1000 "
        "commId 0x5 - Init COMPLETE\n"
        for r in range(3000)
    ).encode()
    p = JobLogParser("log.txt")
    p.feed(_Trickle(data, 4096))
    assert p.stopped and 50 < len(p.comm_ranks) < 200  # the limit is checked at each block's end
    assert not _scan_threads()


def test_a_log_of_one_block_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_thread(*args: object, **kwargs: object) -> None:
        raise AssertionError("a thread was started for a log of one block")

    monkeypatch.setattr(readahead, "threading", SimpleNamespace(Thread=no_thread, Semaphore=threading.Semaphore))
    p = JobLogParser("log.txt")
    p.parse(_Trickle(_edge_log(), 1 << 30))
    assert p.counts["records"] > 20
    with pytest.raises(AssertionError, match="a thread was started"):  # the check holds: two blocks start one
        JobLogParser("log.txt").parse(_Trickle(_edge_log(), 97))


def test_a_scan_thread_that_dies_is_an_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    def dies(self: readahead.ReadAhead, read: list[bytes]) -> None:
        """Ends the thread before it hands anything over."""

    monkeypatch.setattr(readahead.ReadAhead, "_run", dies)
    with pytest.raises(RuntimeError, match="the scan thread ended"):
        JobLogParser("log.txt").parse(_Trickle(_edge_log(), 97))
