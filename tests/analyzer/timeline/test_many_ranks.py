"""Rank statistics take memory by the ticks and the ranks seen, never by the largest rank a file names
nor ranks x histogram bins (issue 46, point 2: one negotiation with 300,000 ticks took 6 GB)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import analyzer.report.timeline_section as section
import analyzer.timeline.lateness as lateness
from analyzer.cli import cli
from analyzer.timeline._lateness_loops import order_stats, order_stats_sorted, rank_stats
from analyzer.timeline.lateness import rank_summary
from analyzer.timeline.model import InputIdentity, model_from_tables
from parsers.timeline import parse_timeline
from tests.builders import B, E, X, glued, meta, write
from tests.conftest import ROOT
from tests.test_hostile import _rss


def _ticks(rng: np.random.Generator, groups: int, ranks: int) -> tuple[np.ndarray, ...]:
    per = rng.integers(1, ranks + 1, groups)
    bounds = np.concatenate([[0], np.cumsum(per)]).astype(np.int64)
    rank = np.concatenate([rng.permutation(ranks)[:n] for n in per]).astype(np.int32)
    late = rng.integers(0, 50_000, int(bounds[-1])).astype(np.int64)
    first = rng.integers(0, 1 << 40, groups).astype(np.int64)
    twice = np.where(rng.random(groups) < 0.2, np.iinfo(np.int64).min, 2 * first + rng.integers(0, 9_000, groups))
    keep = rng.random(groups) < 0.9
    return bounds, keep.astype(np.uint8), rank, late, first, twice.astype(np.int64)


@pytest.mark.parametrize("seed", range(5))
def test_sorting_gives_the_histograms_keys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ticks = _ticks(rng, 300, 24)
    n_ranks = 24
    kept = np.repeat(ticks[1].astype(bool), np.diff(ticks[0]))
    keys_per_rank = np.bincount(ticks[2][kept], minlength=n_ranks)
    at = np.minimum(rng.integers(0, 40, (n_ranks, 6)), (keys_per_rank - 1)[:, None])  # -1: a rank without keys
    distance = np.array([False] * 4 + [True] * 2)
    lo = np.full((n_ranks, 6), -(1 << 50), np.int64)
    hi = np.full((n_ranks, 6), 1 << 50, np.int64)
    np.testing.assert_array_equal(order_stats_sorted(ticks, distance, at), order_stats(ticks, distance, lo, hi, at))


def test_both_paths_of_rank_stats_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    import analyzer.timeline._lateness_loops as loops

    ticks = _ticks(np.random.default_rng(9), 400, 16)
    last = np.random.default_rng(1).random(len(ticks[2])) < 0.1
    histograms = rank_stats(*ticks, last, 16)
    monkeypatch.setattr(loops, "HISTOGRAM_MAX_BYTES", 0)  # every call sorts
    np.testing.assert_array_equal(rank_stats(*ticks, last, 16), histograms)


def _one_negotiation(tmp_path: Path, ranks: list[int], steps: int = 3) -> Path:
    parts = [meta(1, "grad.w")]
    for step in range(steps):
        t0 = step * 10_000_000
        parts += [B("NEGOTIATE_ALLREDUCE", t0, 1), *(X(r, t0 + 1 + i, 1) for i, r in enumerate(ranks))]
        parts += [E(t0 + len(ranks) + 10, 1), B("ALLREDUCE", t0 + len(ranks) + 20, 1), E(t0 + len(ranks) + 30, 1)]
    return write(tmp_path, glued(*parts))


def test_a_rank_named_two_billion_costs_nothing(tmp_path: Path) -> None:
    """A negotiation naming rank 2147483647 among three ticks is not fully ticked (Horovod's ranks are
    0..N-1): it is left out, and nothing is sized by that number."""
    path = _one_negotiation(tmp_path, [0, 1, 2])
    text = path.read_text().replace('"name": "2"', '"name": "2147483647"', 1)  # the first negotiation's rank 2
    path.write_text(text)
    t = parse_timeline(path).tables
    model = model_from_tables(InputIdentity("x", str(path), {}), t["spans"], t["ticks"], t["markers"])
    assert int(model.lateness.ticked.sum()) == 2  # the two intact negotiations
    rows = rank_summary(model.lateness)
    assert sorted(r.rank for r in rows) == [0, 1, 2] and all(r.negotiations == 2 for r in rows)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures memory through /proc")
def test_300_000_ticks_in_one_negotiation_stay_in_bounded_memory(tmp_path: Path) -> None:
    path = _one_negotiation(tmp_path, list(range(300_000)), steps=1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "report", "-q", "-f", "json", str(path)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    peak = 0
    while proc.poll() is None:  # the child's own high-water mark, read while it runs (it only grows)
        try:
            peak = max(peak, _rss(proc.pid, "VmHWM"))
        except (OSError, AssertionError):  # it has just ended
            break
        time.sleep(0.02)
    assert proc.wait(120) == 0, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    assert 0 < peak < 1 << 30, f"{peak >> 20} MiB for {path.stat().st_size >> 20} MB of ticks"


def test_rank_rows_come_most_often_last_first_then_by_median_then_rank() -> None:
    """The rows are built from the statistics in one sort (not one object per rank, then a sort)."""
    bounds, keep, rank, late, first, twice = _ticks(np.random.default_rng(3), 500, 40)
    last = np.random.default_rng(4).random(len(rank)) < 0.2
    n = len(keep)
    lat = lateness.Lateness(
        bounds,
        np.diff(bounds),
        np.zeros(n, np.int64),
        np.zeros(n),
        keep.astype(bool),
        rank,
        late,
        first,
        twice,
        last,
        np.arange(n),
    )
    rows = rank_summary(lat)
    stats = rank_stats(bounds, keep, rank, late, first, twice, last, 40)
    assert sorted(r.rank for r in rows) == [r for r in range(40) if stats[r, 0] > 0]
    assert rows == sorted(rows, key=lambda r: (-r.last, -r.median_us, r.rank))
    assert all(r.negotiations == stats[r.rank, 0] and r.p90_us == stats[r.rank, 3] for r in rows)


def test_a_negotiation_naming_more_ranks_than_a_job_has_is_left_out_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above MAX_WORLD ticks (2^20; 300 here) a negotiation is not read as ranks: the report counts
    it and says so, and a timeline of 10 M such ticks (50 MB gzipped) took 5 s and 0.5 GB, not
    minutes and gigabytes of rows."""
    monkeypatch.setattr(lateness, "MAX_WORLD", 300)
    path = _one_negotiation(tmp_path, list(range(301)), steps=1)
    res = CliRunner().invoke(cli, ["report", "-f", "json", str(path)])
    ranks = json.loads(res.stdout)["timeline"]["ranks"]
    assert (ranks["count"], ranks["oversized"], ranks["ranks"]) == (0, 1, [])
    text = CliRunner().invoke(cli, ["report", str(path)]).stdout
    assert "ranks: 1 negotiation(s) naming more than 1,048,576 ranks (more than any Horovod job) are left out" in text
    (tmp_path / "ok").mkdir()
    ok = _one_negotiation(tmp_path / "ok", list(range(300)), steps=1)
    assert (
        json.loads(CliRunner().invoke(cli, ["report", "-f", "json", str(ok)]).stdout)["timeline"]["ranks"]["count"]
        == 300
    )


def test_a_report_lists_the_ranks_most_often_last_and_counts_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(section, "LISTED_RANKS", 50)
    late = [*range(200)]
    late.remove(137)
    path = _one_negotiation(tmp_path, [*late, 137], steps=3)  # rank 137 ticks last in every negotiation
    doc = json.loads(CliRunner().invoke(cli, ["report", "-f", "json", str(path)]).stdout)
    ranks = doc["timeline"]["ranks"]
    assert ranks["count"] == 200 and len(ranks["ranks"]) == 50 and ranks["oversized"] == 0
    listed = [r["rank"] for r in ranks["ranks"]]
    assert listed == sorted(listed) and 137 in listed
    text = CliRunner().invoke(cli, ["report", str(path)]).stdout
    assert "ranks: 150 more rank(s) not listed: the report lists the 50 most often last" in text
