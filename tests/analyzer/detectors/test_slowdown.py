"""``timeline.slowdown``: change points of the step time, what the added time is spent on, which rank.

Generated runs with a known change (``TimelineSpec.slow_*``), step series with spikes and warm-up,
a window too small to hold the slow steps, and agreement with the ground-truth step times of real
captures (ours in sample_traces/captured, and ../shared/corpus/horovod-cpu when present).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analyzer.config import AnalysisConfig, SlowdownThresholds
from analyzer.context import Context
from analyzer.findings import Finding
from analyzer.render import figures
from analyzer.report import views
from analyzer.report.assembly import analyze
from analyzer.report.model import AnalysisReport
from analyzer.store.discovery import discover
from analyzer.store.run_store import RunStore
from analyzer.timeline.changepoints import Slowdown, find_slowdown, stretch_test
from analyzer.timeline.load import budget_for_room, model_bytes
from sample_traces.generator.timeline import GroundTruth, TimelineSpec, write_timeline
from tests.builders import truth_steps
from tests.conftest import ROOT

T = SlowdownThresholds()
MAX_P, MIN_RATIO = T.max_p, T.min_ratio
EPOCH_US = 1795331437366285  # the generator's start-time header


def _report(tmp_path: Path, budget: int | None = None, **spec: Any) -> tuple[AnalysisReport, GroundTruth, RunStore]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    truth = write_timeline(tmp_path / "timeline.json", TimelineSpec(steps=220, **spec))
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([tmp_path / "timeline.json"]))
    return analyze(store, config=None if budget is None else AnalysisConfig(memory_budget=budget)), truth, store


def _slowdown(report: AnalysisReport) -> Finding:
    (f,) = [f for f in report.findings if f.code == "timeline.slowdown"]
    return f


def _metrics(f: Finding) -> dict[str, float]:
    return {k: v for e in f.evidence for k, v in e.metrics.items()}


def _truth_lost_s(truth: GroundTruth, first: int, stop: int) -> float:
    d = np.array([s["duration_us"] for s in truth.steps], float)
    return float((np.median(d[first:stop]) - np.median(d[1:first])) * (stop - first) / 1e6)


def test_a_rank_that_becomes_late_is_named_with_when_and_what_it_cost(tmp_path: Path) -> None:
    report, truth, _ = _report(tmp_path, cache=False, slow_from_step=120, slow_ranks=(5,), slow_delay_us=20_000)
    f = _slowdown(report)
    m = _metrics(f)
    assert (
        f.ranks == (5,) and "rank 5 became late" in f.title and f.title.startswith("Step time rose 30% from step 120")
    )
    assert m["onset_step"] == 120 and m["baseline_ms"] == pytest.approx(50, abs=0.5)
    assert m["wait_ms"] == pytest.approx(20, abs=0.5) and abs(m["exposed_ms"]) < 0.5  # the injected delay
    assert m["lost_s"] == pytest.approx(_truth_lost_s(truth, 120, 220), rel=0.05)
    assert m["vs_median_ms"] == pytest.approx(20, abs=1) and m["vs_median_before_ms"] < 1
    onset = datetime.fromtimestamp((EPOCH_US + truth.steps[120]["start_us"]) / 1e6, tz=UTC)
    assert f"from step 120 ({onset:%Y-%m-%d %H:%M:%S} UTC" in f.summary and "to the end of the run" in f.summary
    assert f.evidence[0].sources and f.evidence[0].sources[0].byte_offset is not None
    assert f.impact is not None and f.impact.seconds_per_step == pytest.approx(m["lost_s"] / 219, rel=1e-6)
    assert "Rank 5's host" not in f.suggestions[0].action and "rank 5's host" in f.suggestions[0].action
    # the lateness model names rank 5 from step 120 on too: one story seen twice, each citing the other
    (g,) = [x for x in report.findings if x.code == "timeline.straggler"]
    assert g.ranks == (5,) and g.labels["rank5_when"] == "from" and "from step 120 on" in g.title
    assert any("timeline.straggler in the same job tells the same story" in e.summary for e in f.evidence)
    assert any("timeline.slowdown in the same job tells the same story" in e.summary for e in g.evidence)


@pytest.mark.parametrize(
    ("spec", "cause", "env"),
    [
        (
            {"slow_from_step": 100, "slow_bandwidth_bytes_per_us": 100.0},
            "communication after backward",
            {"NCCL_DEBUG": "INFO"},
        ),
        (
            {"slow_from_step": 150, "slow_ranks": tuple(range(8)), "slow_delay_us": 15_000},
            "every rank computing slower",
            {},
        ),
    ],
)
def test_the_added_time_is_put_on_communication_or_compute(tmp_path: Path, spec: dict, cause: str, env: dict) -> None:
    f = _slowdown(_report(tmp_path, **spec)[0])
    m = _metrics(f)
    assert cause in f.title and f.ranks == ()
    assert m["onset_step"] == spec["slow_from_step"] and abs(m["wait_ms"]) < 0.5
    big = m["exposed_ms"] if "NCCL_DEBUG" in env else m["compute_ms"]
    assert big >= 0.9 * m["added_ms"]
    assert dict(f.suggestions[0].env) == env


def test_a_stretch_that_recovers_says_so_and_the_cache_hides_the_rank(tmp_path: Path) -> None:
    report, truth, _ = _report(
        tmp_path, slow_from_step=60, slow_until_step=110, slow_ranks=(2,), slow_delay_us=30_000
    )  # response cache on: no ticks after the first step
    f = _slowdown(report)
    assert "until step 109 (then back to 50.0 ms)" in f.summary and f.ranks == ()
    assert f.title.endswith("waiting for late rank(s) at the end of backward")
    assert dict(f.suggestions[0].env) == {"HOROVOD_CACHE_CAPACITY": "0"}
    assert _metrics(f)["lost_s"] == pytest.approx(_truth_lost_s(truth, 60, 110), rel=0.05)


def test_a_window_that_ends_before_the_slowdown_still_names_the_rank(tmp_path: Path) -> None:
    spec = {"cache": False, "slow_from_step": 120, "slow_ranks": (5,), "slow_delay_us": 20_000}
    whole, _, store = _report(tmp_path / "a", **spec)
    entry = store.inputs[0]
    budget = budget_for_room(int(model_bytes(entry) / 220 * 30 / 0.75))  # a head of about 30 steps
    windowed, _, _ = _report(tmp_path / "b", budget=budget, **spec)
    (section,) = windowed.timelines
    assert section["window"] is not None and section["window"]["steps"] < 120
    a, b = _slowdown(whole), _slowdown(windowed)
    assert (b.title, b.ranks, b.impact) == (a.title, a.ranks, a.impact)
    assert b.summary.replace("/b/", "/a/") == a.summary
    assert [e.metrics for e in b.evidence[:2]] == [e.metrics for e in a.evidence[:2]]  # from every step
    assert _metrics(b)["vs_median_ms"] == pytest.approx(20, abs=1)  # from the slow steps' ticks, read for it
    assert _metrics(b)["vs_median_before_ms"] < 1  # from the window's ticks, before the onset


def test_the_step_series_shades_the_slow_stretches(tmp_path: Path) -> None:
    _, _, store = _report(tmp_path / "slow", cache=False, slow_from_step=120, slow_ranks=(5,), slow_delay_us=20_000)
    view = views.step_series(Context(store).timelines()[0])
    assert view["slow"] == [{"first": 120, "last": 219, "ms": pytest.approx(65, abs=0.5)}]
    assert view["baseline_ms"] == pytest.approx(50, abs=0.5)
    (shade,) = figures.step_series(view).layout.shapes
    assert (shade.x0, shade.x1) == (119.5, 219.5)
    assert figures.step_series(view).layout.annotations[0].text == "slow: 65.0 ms (+30%)"
    _, _, steady = _report(tmp_path / "steady")
    view = views.step_series(Context(steady).timelines()[0])
    assert view["slow"] == [] and view["baseline_ms"] is None and not figures.step_series(view).layout.shapes


@pytest.mark.parametrize(
    "spec", [{}, {"jitter_us": 20_000}, {"cache": False, "straggler_ranks": (3,), "straggler_delay_us": 20_000}]
)
def test_runs_that_keep_their_speed_are_silent(tmp_path: Path, spec: dict) -> None:
    report = _report(tmp_path, **spec)[0]
    assert "timeline.slowdown" not in {f.code for f in report.findings}


def _table(durations_ms: np.ndarray) -> pd.DataFrame:
    n = len(durations_ms)
    return pd.DataFrame({"step": np.arange(n), "duration_us": durations_ms * 1e3, "steady": np.arange(n) >= 1})


def test_checkpoints_warm_up_and_short_runs_are_not_slowdowns() -> None:
    rng = np.random.default_rng(3)
    steady = rng.normal(100, 3, 3000)
    spikes = steady.copy()
    spikes[::200] = 5000  # a checkpoint every 200 steps
    warm = steady.copy()
    warm[:300] *= 1.5  # slow start, then faster
    assert find_slowdown(_table(spikes), T) is None
    assert find_slowdown(_table(warm), T) is None
    assert find_slowdown(_table(np.r_[np.full(20, 100.0), np.full(9, 200.0)]), T) is None  # under 30 steady steps


def test_a_short_stretch_within_the_noise_is_not_a_slowdown() -> None:
    """A spiky 40-step run (a shared machine) with a 10-step excursion: the change points cut it
    out and its median is 26% up, but ten noisy steps do not show the run slower (p >= MAX_P)."""
    rng = np.random.default_rng(12)
    d = 160 + rng.normal(0, 8, 40) + (rng.random(40) < 0.15) * 80
    d[21:31] += 30 + rng.normal(0, 25, 10)
    assert find_slowdown(_table(d), T) is None
    s = find_slowdown(_table(d), replace(T, max_p=1.0))  # without the test, the same stretch would be reported
    assert s is not None and s.ratio >= MIN_RATIO
    ratio, p = stretch_test(d[1:], s.onset.first, s.onset.stop)
    assert ratio == pytest.approx(s.ratio) and MAX_P <= p < 0.05


def test_the_baseline_is_the_runs_speed_before_the_onset_not_its_fastest_stretch() -> None:
    rng = np.random.default_rng(4)
    d = rng.normal(100, 3, 1000)
    d[400:460] = rng.normal(80, 3, 60)  # a while faster (a neighbour's job ended), then the usual speed
    assert find_slowdown(_table(d), T) is None
    d[700:] += 25
    s = find_slowdown(_table(d), T)
    assert s is not None and abs(s.onset.first_step - 700) <= 3
    assert s.baseline.median_us == pytest.approx(np.median(d[1 : s.onset.first_step]) * 1e3)


def test_recovery_ignores_a_short_blip_at_the_end() -> None:
    rng = np.random.default_rng(6)
    d = np.r_[rng.normal(100, 2, 300), rng.normal(140, 2, 100), rng.normal(100, 2, 192), np.full(8, 300.0)]
    s = find_slowdown(_table(d), T)
    assert s is not None and [(g.first_step, g.last_step) for g in s.slow] == [(300, 399)]
    assert s.recovered and s.after[0].median_us == pytest.approx(100e3, rel=0.01)


def test_a_shift_in_a_long_noisy_run_is_placed_at_its_step() -> None:
    rng = np.random.default_rng(5)
    d = rng.normal(120, 6, 41_796)
    d[30_000:] += 30
    d[rng.integers(0, len(d), 80)] += 3000  # checkpoints
    s = find_slowdown(_table(d), T)
    assert s is not None and abs(s.onset.first_step - 30_000) <= 5 and not s.recovered
    assert s.ratio == pytest.approx(150 / 120, rel=0.02) and len(s.slow) == 1
    assert s.lost_us / 1e6 == pytest.approx(30e3 * 11_796 / 1e6, rel=0.03)


def _captures() -> list[Path]:
    here = sorted(p for p in (ROOT / "sample_traces" / "captured").iterdir() if (p / "steps.csv").is_file())
    corpus = ROOT.parent / "shared" / "corpus" / "horovod-cpu"
    return here + (sorted(p for p in corpus.iterdir() if (p / "steps.csv").is_file()) if corpus.is_dir() else [])


def _onsets(s: Slowdown) -> list[int]:
    """The onset, and the first step of each shorter segment right before it that is as slow (one
    series may cut a ramp into the slowdown where the other keeps it whole)."""
    out = [s.onset.first_step]
    at = s.segments.index(s.onset)
    while at > 0 and s.segments[at - 1].first > 0 and s.segments[at - 1].median_us >= MIN_RATIO * s.baseline.median_us:
        at -= 1
        out.append(s.segments[at].first_step)
    return out


@pytest.mark.parametrize("folder", _captures(), ids=lambda p: p.name)
def test_the_timeline_and_the_ground_truth_see_the_same_slowdowns(folder: Path, tmp_path: Path) -> None:
    """Real runs on a shared machine slow down now and then; the timeline's step table and the
    workload's own step times must agree: both silent, or both with the same onset. Where only
    one series passes the onset's thresholds, the other shows the same stretch as a borderline
    case (within 10% of the ratio and 10x of the p-value), never a different reading."""
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([next(folder.glob("timeline*.json*"))]))
    (model,) = Context(store).timelines()
    tables = {"timeline": model.all_steps, "truth": truth_steps(folder / "steps.csv")}
    found = {k: find_slowdown(t, T) for k, t in tables.items()}
    if all(found.values()):
        a, b = found["timeline"], found["truth"]
        near = max(5, 0.02 * a.steady_steps)
        assert min(abs(x - y) for x in _onsets(a) for y in _onsets(b)) <= near, (a.onset, b.onset)
        assert a.ratio == pytest.approx(b.ratio, rel=0.15)
        return
    for who, s in found.items():
        if s is None:
            continue
        other = tables["truth" if who == "timeline" else "timeline"]
        steady = other[other["steady"]]
        steps = steady["step"].to_numpy()
        first, stop = np.searchsorted(steps, s.onset.first_step), np.searchsorted(steps, s.onset.last_step, "right")
        ratio, p = stretch_test(steady["duration_us"].to_numpy(float), int(first), int(stop))
        assert ratio >= 0.9 * MIN_RATIO and p < 10 * MAX_P, (who, s.onset, ratio, p)


def test_an_autotune_timeline_without_its_log_is_not_blamed_on_the_ranks_compute() -> None:
    """The autotune capture's timeline alone: its slower stretches come with batches that fit no single
    fusion threshold and grew or shrank with the step time. The finding says so (autotune?), as a
    warning without an impact or a rank, instead of a critical "every rank computing slower"."""
    from analyzer import analyze, temporary_store
    from analyzer.store import discover

    path = ROOT / "sample_traces" / "captured" / "autotune" / "timeline.json.gz"
    with temporary_store() as store:
        store.ingest(*discover([path]))
        (f,) = [f for f in analyze(store).findings if f.code == "timeline.slowdown"]
    assert f.severity.label == "warning" and f.title.endswith("autotune?")
    assert "computing slower" not in f.title and f.impact is None and f.ranks == ()
    assert "batches fit no single fusion threshold" in f.summary
    assert f.suggestions[0].env == {"HOROVOD_AUTOTUNE_LOG": "autotune.csv"}


@pytest.mark.parametrize("seed", range(40))
def test_pelt_finds_the_change_points_ruptures_finds(seed: int) -> None:
    """:func:`~analyzer.timeline.changepoints.pelt` replaced ruptures' ``Pelt(model="l2", jump=1)``
    (0.5 s to import with scipy): the same ends on step-time-like signals of every size it gets
    (block medians: up to 200), with shifts up and down, spikes, and the penalties the search uses."""
    import ruptures

    from analyzer.timeline.changepoints import pelt

    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 201))
    level = rng.choice([80_000.0, 100_000.0, 130_000.0], size=int(rng.integers(1, 5)))
    cuts = np.sort(rng.choice(np.arange(5, n - 5), size=len(level) - 1, replace=False))
    signal = np.repeat(level, np.diff([0, *cuts, n])) + rng.normal(0, 2_000, n)
    signal[rng.integers(0, n, 3)] *= 1.5  # a few slow steps
    min_size = int(rng.integers(1, 8))
    for pen in (2_000.0**2 * 6 * np.log(n), 500.0**2, 10_000.0**2):
        want = ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(signal).predict(pen=pen)
        assert pelt(signal, min_size, pen) == want, (n, min_size, pen)
