"""The ticks' lateness: the first pass over the ticks, started before the spans are known, gives what
the pass over the negotiations' own span ids gives."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from analyzer.timeline._lateness_loops import NO_MEDIAN
from analyzer.timeline.lateness import Chunks, Lateness, span_ticks, tick_lateness

# span ids 5, 9 and 40 are negotiations; 12 is another span a malformed tick names (with rank 7,
# which must not count as a rank of the job), -1 no span, 1000 a span past every negotiation
IDS = np.array([5, 5, 9, 5, 9, 12, -1, 5, 40, 40, 9, 40, 40, 1000], np.int64)
RANKS = np.array([0, 1, 0, 2, 1, 7, 3, 3, 3, 0, 2, 1, 2, 0], np.int32)
TS = np.array([10, 12, 20, 2_500, 21, 30, 31, 2_600, 50, 51, 52, 3_000, 53, 60], np.int64)


def chunks(columns: tuple[str, ...]) -> Iterator[tuple[np.ndarray, ...]]:
    """The ticks in three chunks, the last one with the highest span id (the arrays grow for it)."""
    by_name = {"negotiation_id": IDS, "rank": RANKS, "ts_us": TS}
    for a, b in ((0, 5), (5, 9), (9, len(IDS))):
        yield tuple(by_name[c][a:b] for c in columns)


def _lateness(early: bool) -> Lateness:
    span_ids = np.array([5, 9, 40], np.int64)
    counted = (lambda: span_ticks(chunks)) if early else None
    return tick_lateness(chunks, span_ids, np.array([0, 0, 1]), np.array([3_000.0, np.nan, 3_100.0]), counted)


def test_the_first_pass_started_early_gives_the_same_lateness() -> None:
    spans, early = _lateness(False), _lateness(True)
    for name in ("bounds", "tick_counts", "keep", "rank", "lateness_us", "first_us", "twice_median_us", "last", "lut"):
        np.testing.assert_array_equal(getattr(early, name), getattr(spans, name), err_msg=name)
    # ranks 0-3 (the malformed tick's rank 7 is no rank of the job): 5 and 40 fully ticked, 9 not
    np.testing.assert_array_equal(spans.tick_counts, [4, 3, 4])
    np.testing.assert_array_equal(spans.keep, [True, False, True])
    np.testing.assert_array_equal(spans.rank, [0, 1, 2, 3, 3, 0, 1, 2])
    np.testing.assert_array_equal(spans.lateness_us, [0, 2, 2_490, 2_590, 0, 1, 2_950, 3])
    np.testing.assert_array_equal(spans.last, [False, False, True, True, False, False, True, False])
    # per negotiation its first tick and the median of its ranks that were not last; per tick the distance
    np.testing.assert_array_equal(spans.first_us[[0, 2]], [10, 50])
    np.testing.assert_array_equal(spans.twice_median_us, [22, NO_MEDIAN, 102])
    np.testing.assert_array_equal(spans.vs_median_us(0), [-1.0, 1.0, 2_489.0, 2_589.0])
    np.testing.assert_array_equal(spans.vs_median_us(2), [-1.0, 0.0, 2_949.0, 2.0])
    assert len(spans.vs_median_us(1)) == 0  # not fully ticked: no ticks kept


def test_span_ticks_counts_every_span_id_it_meets() -> None:
    grown = span_ticks(chunks)
    assert len(grown.counts) >= 1001
    assert (grown.counts[[5, 9, 12, 40, 1000]] == [4, 3, 1, 4, 1]).all()
    assert (grown.top[[5, 9, 12, 40, 1000]] == [3, 2, 7, 3, 0]).all()
    bounded = span_ticks(chunks, 5, 40)  # ids outside [5, 40] left out
    assert len(bounded.counts) == 36 and bounded.counts.sum() == 12
    counts, top = bounded.of(np.array([5, 9, 40, 41]))
    assert counts.tolist() == [4, 3, 4, 0] and top == 3


def test_the_spans_own_pass_spans_their_ids_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an early pass, the counts cover the negotiations' ids from the lowest (a later
    window's ids start far from 0: arrays from 0 would take 16 bytes per span of the run)."""
    import analyzer.timeline.lateness as lateness

    bounds: list[tuple[int, int | None]] = []

    def recording(chunks_: Chunks, first: int = 0, last: int | None = None) -> lateness.SpanTicks:
        bounds.append((first, last))
        return span_ticks(chunks_, first, last)

    monkeypatch.setattr(lateness, "span_ticks", recording)
    _lateness(False)
    assert bounds == [(5, 40)]
