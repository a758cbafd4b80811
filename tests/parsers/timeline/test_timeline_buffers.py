"""The tokenizer's event-row buffers are reused once their reader gives them back, and reuse
never changes a table: a buffer still read from is never handed out again."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from parsers.timeline import ParsedTimeline, parse_timeline, tokens
from parsers.timeline import buffers as T
from parsers.timeline import layout as L
from parsers.timeline.buffers import events_array
from parsers.timeline.tokens import TokenBlock, recycle, tokenize_task
from sample_traces.generator.timeline import TimelineSpec, write_timeline


@pytest.fixture
def pool() -> Iterator[dict[str, int]]:
    """An empty pool for the test, and how many buffers were asked for and taken from it."""
    saved = dict(T._EVENTS)
    T._EVENTS.clear()
    counts = {"asked": 0, "reused": 0}
    real = T.events_array

    def counted(rows: int) -> np.ndarray:
        counts["asked"] += 1
        counts["reused"] += bool(T._EVENTS.get(rows))
        return real(rows)

    tokens.events_array = counted  # type: ignore[assignment]  # counting the tokenizer's calls
    yield counts
    tokens.events_array = real  # type: ignore[assignment]  # restored
    T._EVENTS.clear()
    T._EVENTS.update(saved)


def test_a_buffer_given_back_is_the_next_one_handed_out(pool: dict[str, int]) -> None:
    whole = events_array(5000)
    recycle(TokenBlock(whole[:3000], [], []))
    assert events_array(5000) is whole
    assert events_array(5000) is not whole  # taken: the pool is empty again


def test_copies_and_foreign_arrays_are_not_pooled(pool: dict[str, int]) -> None:
    recycle(TokenBlock(events_array(5000)[:10].copy(), [], []))  # a few rows copied out: no buffer
    recycle(TokenBlock(np.zeros((5000, 3), np.int64)[:10], [], []))  # not event rows
    recycle(TokenBlock(np.zeros((4321, L.EV_N), np.int64)[:10], [], []))  # a size never asked for (a Dask worker's)
    assert not any(T._EVENTS.values())


def test_a_finished_parse_lets_the_buffers_go(tmp_path: Path, pool: dict[str, int]) -> None:
    path = tmp_path / "t.json"
    write_timeline(path, TimelineSpec(ranks=8, tensors=12, steps=40, cache=False))
    parse_timeline(path, chunk_bytes=1 << 16)
    assert pool["reused"] > 0 and not any(T._EVENTS.values())


def test_the_pool_keeps_a_few_buffers_only(pool: dict[str, int]) -> None:
    events_array(2048)  # the tokenizer asks for this size
    for _ in range(T._POOLED + 3):
        recycle(TokenBlock(np.empty((2048, L.EV_N), np.int64)[:100], [], []))
    assert len(T._EVENTS[2048]) == T._POOLED


def test_a_recycled_block_no_longer_shows_the_buffer(pool: dict[str, int]) -> None:
    block = TokenBlock(events_array(5000)[:3000], [], [])
    recycle(block)
    assert len(block.events) == 0  # whoever still holds the block cannot read rows rewritten later


def _threads(tasks: list) -> list:
    with ThreadPoolExecutor(2) as ex:
        return list(ex.map(tokenize_task, tasks))


def _rows(p: ParsedTimeline) -> dict[str, list[dict]]:
    return {name: t.to_pylist() for name, t in p.tables.items()}


@pytest.mark.parametrize("ranged", [False, True])
def test_reused_buffers_give_the_same_tables(tmp_path: Path, pool: dict[str, int], ranged: bool) -> None:
    path = tmp_path / "t.json"
    write_timeline(path, TimelineSpec(ranks=8, tensors=12, steps=40, cache=False, mark_cycles=True))
    saved = T._POOLED
    T._POOLED = 0  # nothing kept: every buffer new, as before the pool
    try:
        fresh = parse_timeline(path, chunk_bytes=1 << 16)
        T._EVENTS.clear()
    finally:
        T._POOLED = saved
    pool.update(asked=0, reused=0)
    if ranged:  # equal ranges on two threads, all tokenized before the first is paired
        again = parse_timeline(path, range_bytes=1 << 16, tokenized=_threads)
        assert pool["asked"] > 8 and pool["reused"] > 0, pool
    else:  # one pass: each block's buffer back before the next is filled
        again = parse_timeline(path, chunk_bytes=1 << 16)
        assert pool["reused"] >= pool["asked"] - 2 > 8, pool
    assert _rows(again) == _rows(fresh)
