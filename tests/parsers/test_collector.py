"""The collector held back while a log is read (:mod:`parsers.collector`), and put back after."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from parsers.collector import YOUNG, fewer_passes
from parsers.nccl.parser import JobLogParser


@pytest.fixture(autouse=True)
def default_threshold() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_the_threshold_is_raised_while_reading_and_put_back(default_threshold: tuple[int, int, int]) -> None:
    with fewer_passes():
        assert gc.get_threshold() == (YOUNG, 10, 10)
    assert gc.get_threshold() == default_threshold


def test_a_log_is_read_with_fewer_passes_and_the_default_comes_back(
    tmp_path: Path, default_threshold: tuple[int, int, int]
) -> None:
    seen: list[tuple[int, int, int]] = []

    class Stream:
        def __init__(self) -> None:
            self.chunks = [b"h:1:2 [0] NCCL INFO NCCL version 2.18.3+cuda12.1\n", b""]

        def read(self, n: int = -1) -> bytes:
            seen.append(gc.get_threshold())
            return self.chunks.pop(0)

    JobLogParser(tmp_path / "x.log").parse(Stream())
    assert seen and all(t[0] == YOUNG for t in seen)
    assert gc.get_threshold() == default_threshold


def test_nested_and_interleaved_uses_leave_the_default(default_threshold: tuple[int, int, int]) -> None:
    with fewer_passes():
        with fewer_passes():
            assert gc.get_threshold()[0] == YOUNG
        assert gc.get_threshold()[0] == YOUNG  # the outer one is still reading
    assert gc.get_threshold() == default_threshold
    first, second = fewer_passes(), fewer_passes()  # two readers on threads: the first ends before the second
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    second.__exit__(None, None, None)
    assert gc.get_threshold() == default_threshold


def test_an_error_while_reading_puts_the_threshold_back(default_threshold: tuple[int, int, int]) -> None:
    with pytest.raises(RuntimeError), fewer_passes():
        raise RuntimeError("a bug")
    assert gc.get_threshold() == default_threshold
