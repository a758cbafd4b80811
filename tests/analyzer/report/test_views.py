"""The dashboard's bounded views: reductions keep outliers, bin honestly and say what they did."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.context import Context
from analyzer.render import figures
from analyzer.report import views
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from analyzer.timeline.model import TimelineModel
from tests.conftest import ROOT

SAMPLE = ROOT / "sample_traces" / "captured" / "straggler_nocache" / "timeline.json"


@pytest.fixture(scope="module")
def model() -> TimelineModel:
    with temporary_store() as store:
        store.ingest(*discover([SAMPLE]))
        return Context(store).timelines()[0]


def test_full_views_when_small(model: TimelineModel) -> None:
    v = views.timeline_views(model)
    dur = model.steps["duration_us"].dropna().to_numpy(np.float64) / 1e3
    assert v["step_series"]["note"] is None and np.allclose(v["step_series"]["ms"], dur, atol=1e-3)
    assert [r["rank"] for r in v["rank_box"]["ranks"]] == [0, 1]
    late = v["rank_box"]["ranks"][1]
    assert late["p5"] <= late["q1"] <= late["median"] <= late["q3"] <= late["p95"]
    assert late["median"] == pytest.approx(model.steady_ranks[0].median_us / 1e3, rel=0.05)
    assert v["heatmap"]["note"] is None and len(v["heatmap"]["z"]) == 2


def test_step_series_keeps_the_slowest_and_fastest_step(model: TimelineModel, monkeypatch) -> None:
    monkeypatch.setattr(views, "MAX_SERIES_POINTS", 10)
    s = views.step_series(model)
    dur = model.steps["duration_us"].dropna().to_numpy(np.float64) / 1e3
    assert len(s["ms"]) <= 10 + 2 and s["note"].startswith(f"{len(dur)} steps shown as the fastest and slowest")
    assert max(s["ms"]) == pytest.approx(dur.max(), abs=1e-3) and min(s["ms"]) == pytest.approx(dur.min(), abs=1e-3)
    assert "shown as the fastest" in figures.step_series(s).layout.title.text


def test_heatmap_bins_steps_and_says_so(model: TimelineModel, monkeypatch) -> None:
    monkeypatch.setattr(views, "MAX_HEAT_STEPS", 5)
    lat = model.steady_lateness
    h = views.rank_step_heatmap(lat)
    assert len(h["z"][0]) <= 5 and h["step_bin"] > 1 and "binned by" in h["note"]
    row = np.array([x for x in h["z"][1] if x is not None])
    assert row.min() > 50  # rank 1 sleeps 100 ms every step
    assert "binned by" in figures.rank_heatmap(h).layout.title.text


def test_box_keeps_the_latest_ranks(model: TimelineModel, monkeypatch) -> None:
    monkeypatch.setattr(views, "MAX_BOX_RANKS", 1)
    box = views.rank_box(model.steady_lateness)
    assert [r["rank"] for r in box["ranks"]] == [1] and box["note"] == "the 1 latest ranks (by p75) of 2"


def test_tensor_table_and_histograms(model: TimelineModel) -> None:
    v = views.timeline_views(model)
    rows = {r["tensor"]: r for r in v["tensors"]["rows"]}
    assert rows["allreduce.0.weight"]["ops"] == 30 and rows["allreduce.0.weight"]["bytes"] == 4194304
    ms = [r["median_op_ms"] for r in v["tensors"]["rows"]]
    assert ms == sorted(ms, reverse=True)
    assert sum(v["batch_sizes"]["counts"]) == v["batch_sizes"]["batches"] == len(model.steady_batches)
    assert sum(v["cadence"]["counts"]) == v["cadence"]["gaps"] and v["cadence"]["method"] in ("markers", "bursts")
