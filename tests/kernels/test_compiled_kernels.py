"""The compiled kernels against their sources run as plain Python (:mod:`tests.kernels.reference`):
the same tables, issues and facts on every real timeline here (the captures, the samples, the
corpus's when ``../shared`` is present) and on files cut at many points, and the same arrays from
the analysis loops on random input of every shape they take."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pytest

import analyzer.timeline._kernels as compiled_kernels
import analyzer.timeline._lateness_loops as compiled_lateness
import parsers.timeline._pair as compiled_pair
import parsers.timeline._tokenize as compiled_tokenize
from tests.conftest import CORPUS, ROOT
from tests.kernels.reference import KERNELS, LATENESS, parsed_tables, reference_parser

#: the reference runs at a few MB/s: files above this are checked by their cut copies only
MAX_WHOLE = 1_600_000


def _timelines() -> list[Path]:
    found = sorted((ROOT / "sample_traces" / "captured").glob("*/timeline.json*"))
    found += sorted((ROOT / "sample_traces" / "synthetic").glob("*/timeline.json"))
    found += sorted((ROOT / "sample_traces" / "compare").glob("*/*/timeline.json"))
    if CORPUS.is_dir():
        found += sorted(p for p in CORPUS.rglob("*.json") if "timeline" in p.name or p.parent.name == "horovod-public")
    return [p for p in found if p.stat().st_size <= MAX_WHOLE]


def test_the_kernels_are_compiled() -> None:
    """``pip install`` compiled them: what imports find is the extension, not the .py file."""
    for module in (compiled_tokenize, compiled_pair, compiled_kernels, compiled_lateness):
        assert module.COMPILED is True, f"{module.__name__} is not compiled: reinstall with a C compiler"
        assert not module.__file__.endswith(".py")


@pytest.mark.parametrize("path", _timelines(), ids=lambda p: str(p.relative_to(p.parents[2])))
def test_a_real_timeline_parses_the_same_compiled_and_uncompiled(path: Path) -> None:
    compiled = parsed_tables(path)
    with reference_parser():
        reference = parsed_tables(path)
    for name in compiled:
        assert compiled[name] == reference[name], name


CUT_SOURCES = [
    ROOT / "sample_traces" / "captured" / "straggler_nocache" / "timeline.json",  # glued, ticks on every negotiation
    ROOT / "sample_traces" / "synthetic" / "legacy_line_per_event" / "timeline.json",  # <= 0.20.0 layout
    ROOT / "sample_traces" / "captured" / "cycle_long" / "timeline.json",  # cycle markers
]


@pytest.mark.parametrize("source", CUT_SOURCES, ids=lambda p: p.parent.name)
def test_a_timeline_cut_anywhere_parses_the_same(source: Path, tmp_path: Path) -> None:
    """Cut inside a string, a number, a key, between records: 60 cuts per file, seeded, with small
    chunks so that records also straddle the tokenizer's buffer ends."""
    data = source.read_bytes()
    rng = random.Random(23)
    cuts = sorted(rng.sample(range(1, len(data)), 60))
    for cut in cuts:
        path = tmp_path / f"cut{cut}.json"
        path.write_bytes(data[:cut])
        compiled = parsed_tables(path, chunk_bytes=4096)
        with reference_parser():
            reference = parsed_tables(path, chunk_bytes=4096)
        assert compiled == reference, cut


def test_floats_escapes_unknown_keys_and_foreign_phases_tokenize_the_same(tmp_path: Path) -> None:
    """What Horovod's writer never does but other writers and pastes do."""
    records = [
        '{"name": "NEGOTIATE_ALLREDUCE", "ph": "B", "ts": 1.5, "pid": 1}',
        '{"ph": "X", "name": "0", "ts": 2.5e0, "pid": 1, "args": {"x": [1, {"y": "a\\"b"}], "z": null}}',
        '{"ph": "E", "ts": 3.4999, "pid": 1, "extra": true}',
        '{"ph": "C", "name": "counter", "ts": 4, "pid": 1, "args": {"v": -1.25e-3}}',
        '{"name": "ALLREDUCE", "ph": "B", "ts": 5, "pid": 2, "tid": 7, "cat": "x"}',
        '{"name": "grad "quoted" name", "ph": "B", "ts": 6, "pid": 3}',
        '{"ph": "E", "ts": 7, "pid": 2, "args": {"dtype": "float32", "shape": "[172, 4096]"}}',
        '{"ph": "i", "name": "CYCLE_START", "ts": 8, "s": "g"}',
        '{"ph": "Q", "ts": 9, "pid": 1}',
        '{"ph": "E", "ts": 10, "pid": 9}',
    ]
    path = tmp_path / "odd.json"
    path.write_text("[\n" + ",\n".join(records) + "\n]\n")
    compiled = parsed_tables(path)
    with reference_parser():
        assert parsed_tables(path) == compiled
    codes = {c for c, _, _ in compiled["issues"]}  # type: ignore[attr-defined]
    assert {"timeline.float_ts", "timeline.unknown_phase", "timeline.orphan_end"} <= codes


def test_a_gzipped_capture_parses_the_same(tmp_path: Path) -> None:
    source = ROOT / "sample_traces" / "captured" / "healthy_np2" / "timeline.json"
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(source.read_bytes()))
    compiled = parsed_tables(path)
    with reference_parser():
        assert parsed_tables(path) == compiled


# --- the analysis loops -------------------------------------------------------------------------


def _both(name: str, *args: object) -> tuple[object, object]:
    """``name`` of the compiled and of the reference module on copies of the same arguments (some
    kernels write into their arguments: the copies are compared too)."""
    a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    b = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    compiled, reference = (compiled_kernels, KERNELS) if hasattr(KERNELS, name) else (compiled_lateness, LATENESS)
    out_a = getattr(compiled, name)(*a)
    out_b = getattr(reference, name)(*b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
    return out_a, out_b


def _same(x: object, y: object) -> None:
    if isinstance(x, tuple):
        for u, v in zip(x, y, strict=True):  # type: ignore[call-overload]
            _same(u, v)
    elif isinstance(x, np.ndarray):
        assert isinstance(y, np.ndarray) and x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)
    else:
        assert x == y


@pytest.mark.parametrize("seed", range(4))
def test_the_step_and_batch_loops_match(seed: int) -> None:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 50, 2000)
    _same(*_both("assign_recurrence", codes, 50))
    n, groups = 3000, 40
    group = np.sort(rng.integers(-1, groups, n))
    start = rng.integers(0, 10_000, n)
    order = np.lexsort((start, group))
    end = start + rng.integers(-5, 500, n)
    lo, hi = rng.integers(0, 3000, groups), rng.integers(5000, 12_000, groups)
    _same(*_both("union_by_group", group[order], start[order], end[order], lo, hi, groups))
    names = rng.integers(0, 3, n)
    start_us = np.cumsum(rng.integers(0, 50, n))
    start_off = np.cumsum(rng.integers(1, 100, n))
    exec_off = start_off + rng.integers(0, 400, n)
    _same(*_both("group_batches", names, start_us, start_off, exec_off, 300))
    keys = rng.integers(-3, 600, n)  # keys outside [0, 500) are left out
    least = _both("min_by_key", keys, start_off, 500)
    _same(*least)
    want = np.full(500, compiled_kernels.NO_LIMIT, np.int64)
    inside = (keys >= 0) & (keys < 500)
    np.minimum.at(want, keys[inside], start_off[inside])
    np.testing.assert_array_equal(least[0], want)


@pytest.mark.parametrize("ranks", [2, 8, 33, 257])  # the median's sort: insertion below 33 values, heapsort above
def test_the_lateness_loops_match(ranks: int) -> None:
    rng = np.random.default_rng(ranks)
    n_neg = 60
    span_ids = np.sort(rng.choice(10_000, n_neg, replace=False))
    lut = np.full(10_000, -1, np.int64)
    lut[span_ids] = np.arange(n_neg)
    ids = np.repeat(span_ids, ranks)
    ids[rng.integers(0, len(ids), 5)] = -1  # ticks outside a negotiation
    rank = np.tile(np.arange(ranks, dtype=np.int32), n_neg)
    ts = rng.integers(0, 5000, len(ids)) + np.repeat(np.arange(n_neg) * 10_000, ranks)
    offset = np.arange(len(ids), dtype=np.int64) * 40
    # per span id from 100 (ids below it, above the arrays and -1 are left out); both write alike
    first = 100
    per_span, top = np.zeros(9_000, np.int64), np.full(9_000, -1, np.int64)
    _both("count_span_ticks", ids, rank, first, per_span, top)
    compiled_kernels.count_span_ticks(ids, rank, first, per_span, top)
    inside = (ids >= first) & (ids < first + 9_000)
    np.testing.assert_array_equal(per_span, np.bincount(ids[inside] - first, minlength=9_000))
    want_top = np.full(9_000, -1, np.int64)
    np.maximum.at(want_top, ids[inside] - first, rank[inside])
    np.testing.assert_array_equal(top, want_top)
    counts = np.zeros(n_neg, np.int64)
    np.add.at(counts, lut[ids[ids >= 0]], 1)
    full = counts == ranks
    bounds = np.zeros(n_neg + 1, np.int64)
    np.cumsum(np.where(full, counts, 0), out=bounds[1:])
    fill = bounds[:-1].copy()
    out_rank, out_ts = np.zeros(bounds[-1], np.int32), np.zeros(bounds[-1], np.int64)
    _both("scatter_ticks", ids, rank, ts, lut, fill, full, out_rank, out_ts)
    compiled_kernels.scatter_ticks(ids, rank, ts, lut, fill.copy(), full, out_rank, out_ts)
    grouped = _both("group_lateness", bounds, out_ts, 1000)
    _same(*grouped)
    first, twice_median, last = grouped[0]  # type: ignore[misc]
    compiled_lateness.group_lateness(bounds, out_ts, 1000)  # out_ts now holds the lateness
    keep = rng.random(n_neg) < 0.8
    _same(*_both("rank_stats", bounds, keep, out_rank, out_ts, first, twice_median, last, ranks))
    out = np.full(ranks, np.iinfo(np.int64).max, np.int64)
    _both("first_last_offsets", ids, rank, offset, lut, bounds[:-1].copy(), full, keep, last, out)


@pytest.mark.parametrize("ranks", [8, 33, 64, 257])
@pytest.mark.parametrize("order", ["arrival", "shuffled", "reversed"])
def test_each_tick_s_distance_from_the_median_equals_numpy_s(ranks: int, order: str) -> None:
    """Horovod writes a negotiation's ticks as they arrive (in time order), which the median's sort
    takes as sorted already; any other order is sorted. Both give numpy's median, compiled and not."""
    rng = np.random.default_rng(ranks)
    n_neg, cycle = 40, 1000
    ts = np.sort(rng.integers(0, 40_000, (n_neg, ranks)), axis=1) + np.arange(n_neg)[:, None] * 100_000
    if order == "shuffled":
        ts = rng.permuted(ts, axis=1)
    elif order == "reversed":
        ts = ts[:, ::-1]
    ts[::7] = ts[::7, :1]  # a cycle with every rank at once: nobody late
    bounds = np.arange(n_neg + 1, dtype=np.int64) * ranks
    want_vs, want_last, want_typical = np.zeros(ts.shape), np.zeros(ts.shape, bool), np.full(n_neg, np.nan)
    for g, row in enumerate(ts):
        want_last[g] = row >= row.max() - cycle
        if not want_last[g].all():
            want_typical[g] = np.median(row[~want_last[g]])
            want_vs[g] = row - want_typical[g]
    assert np.isnan(want_typical[::7]).all()  # no median tick where every rank was last
    for name, kernels in (("compiled", compiled_lateness), ("reference", LATENESS)):
        flat = ts.ravel().copy()
        first, twice, last = kernels.group_lateness(bounds, flat, cycle)
        np.testing.assert_array_equal(last, want_last.ravel(), err_msg=name)
        np.testing.assert_array_equal(flat, (ts - ts.min(axis=1, keepdims=True)).ravel(), err_msg=name)
        np.testing.assert_array_equal(first, ts.min(axis=1), err_msg=name)
        none = twice == compiled_lateness.NO_MEDIAN
        np.testing.assert_array_equal(none, np.isnan(want_typical), err_msg=name)
        np.testing.assert_array_equal(twice[~none] / 2, want_typical[~none], err_msg=name)
        # each tick's distance from the median, as rank_stats and Lateness.vs_median_us compute it
        late = flat.reshape(ts.shape)
        vs = np.where(none[:, None], 0.0, (2 * (late + first[:, None]) - twice[:, None]) / 2.0)
        np.testing.assert_array_equal(vs, want_vs, err_msg=name)


@pytest.mark.parametrize(
    ("ranks", "spread"),
    [
        (16, 9_000),  # every window fits one histogram: one pass
        (16, 10**9),  # the lateness spans 30 bits: three passes narrow each window
        (300, 50_000),  # many ranks: fewer bins per window, more passes
    ],
)
def test_rank_statistics_equal_numpy_s_median_and_percentile(ranks: int, spread: int) -> None:
    """The ranks' medians and p90s counted into histograms are the doubles numpy's median and
    percentile give on each rank's values, compiled and from source; ranks with one tick, two,
    none, and negotiations without a median tick (every rank last) included."""
    rng = np.random.default_rng(ranks + spread)
    n_neg = 90_000 // ranks  # the source runs at a few M ticks a minute
    bounds = np.arange(n_neg + 1, dtype=np.int64) * ranks
    rank = np.tile(np.arange(ranks, dtype=np.int32), n_neg)
    late = rng.integers(0, spread, len(rank)) * (1 + (rank == 3))
    late[rank == 5] = rng.integers(0, 3, int((rank == 5).sum()))  # few values, many repeats
    # per negotiation its first tick and twice its median tick (odd: a half), none in a tenth
    first = rng.integers(0, 10**12, n_neg)
    twice = np.where(
        rng.random(n_neg) < 0.1, compiled_lateness.NO_MEDIAN, 2 * first + rng.integers(0, 2 * spread, n_neg)
    )
    g = np.repeat(np.arange(n_neg), ranks)
    vs = np.where(twice[g] == compiled_lateness.NO_MEDIAN, 0.0, (2 * (late + first[g]) - twice[g]) / 2.0)
    last = rng.random(len(rank)) < 0.1
    keep = rng.random(n_neg) < 0.9
    kept = np.repeat(keep, ranks)
    # rank 1 in one kept negotiation, rank 2 in two, rank 4 in none
    for r, times in ((1, 1), (2, 2), (4, 0)):
        drop = kept & (rank == r)
        drop[np.flatnonzero(drop)[:times]] = False
        rank[drop] = 0
    stats = _both("rank_stats", bounds, keep, rank, late, first, twice, last, ranks + 1)
    _same(*stats)
    out = stats[0]
    assert isinstance(out, np.ndarray)
    for r in range(ranks + 1):
        mine = kept & (rank == r)
        assert (out[r, 0], out[r, 1]) == (mine.sum(), last[mine].sum())
        if not mine.any():
            assert (out[r, 2:] == 0).all()
            continue
        want = (np.median(late[mine]), np.percentile(late[mine], 90.0), np.median(vs[mine]))
        assert (out[r, 2], out[r, 3], out[r, 4]) == want, r
        # the same bits as numpy's on the doubles of the same values
        as_float = late[mine].astype(np.float64)
        assert (out[r, 2], out[r, 3]) == (np.median(as_float), np.percentile(as_float, 90.0)), r


def test_the_kernels_take_arrow_s_read_only_arrays_and_other_int_widths() -> None:
    codes = np.arange(10, dtype=np.int32) % 3
    codes.flags.writeable = False
    _same(*_both("assign_recurrence", codes, 3))
