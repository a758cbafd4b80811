"""Acceptance on real Horovod 0.28.1 runs (``../shared/corpus/horovod-cpu``, ground truth in steps.csv).

Skipped when the corpus is absent. The analysis of each run is computed once per module.
"""

from __future__ import annotations

import csv
from pathlib import Path
from statistics import median
from typing import Any

import pytest

from analyzer.report.assembly import analyze
from analyzer.report.model import AnalysisReport
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from tests.builders import truth_steps

RUNS = {
    "a1": "a1_baseline_mlp_np2",
    "a2": "a2_baseline_mlp_np2_markcycles",
    "a3": "a3_baseline_cnn_np4_oversubscribed",
    "b1": "b1_fusion_off_cnn_np2",
    "b2": "b2_fusion_1024B_manysmall_np2",
    "d1": "d1_straggler_rank1_100ms_np2",
    "d2": "d2_straggler_rank1_100ms_np2_nocache",
    "e1": "e1_killed_sigkill_whole_job_np2",
    "g": "g_allgather_broadcast_alltoall_np2",
    "i": "i_dynamic_timeline_np2",
    "j": "j_fp16_compression_np2",
    "k": "k_long_run_1000steps_markcycles_np2",
    "m": "m_grouped_allreduce_1group_np2",
}
_CACHE: dict[str, AnalysisReport] = {}


def _run(corpus: Path, key: str) -> tuple[AnalysisReport, list[dict[str, Any]]]:
    folder = corpus / "horovod-cpu" / RUNS[key]
    if key not in _CACHE:
        with temporary_store() as store:
            store.ingest(*discover([next(folder.glob("timeline*.json"))]))
            _CACHE[key] = analyze(store)
    with open(folder / "steps.csv", newline="") as f:
        truth = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return _CACHE[key], truth


def _codes(report: AnalysisReport) -> set[str]:
    return {f.code for f in report.findings}


@pytest.mark.parametrize("key", ["a1", "a2", "a3", "b1", "b2", "d1", "d2", "g", "j", "k", "m"])
def test_median_step_and_step_count_match_steps_csv(corpus: Path, key: str) -> None:
    report, truth = _run(corpus, key)
    slowest = truth_steps(corpus / "horovod-cpu" / RUNS[key] / "steps.csv")
    steps = report.timelines[0]["steps"]
    assert steps["median_s"] == pytest.approx(median(slowest.loc[slowest["steady"], "duration_us"]) / 1e6, rel=0.10)
    assert abs(steps["count"] - len({int(r["step"]) for r in truth})) <= 2
    assert report.timelines[0]["segmentation"]["confidence"] == "high"


def test_dynamic_timeline_counts_only_the_captured_window(corpus: Path) -> None:
    report, truth = _run(corpus, "i")
    assert abs(report.timelines[0]["steps"]["count"] - 20) <= 2  # steps 10-29 were captured
    captured = [r["step_time_s"] for r in truth if 10 <= r["step"] <= 29]
    assert report.timelines[0]["steps"]["median_s"] == pytest.approx(median(captured), rel=0.10)


def test_d2_names_rank_1_as_the_straggler(corpus: Path) -> None:
    report, _ = _run(corpus, "d2")
    (f,) = [f for f in report.findings if f.code == "timeline.straggler"]
    assert f.ranks == (1,)
    assert 100 <= f.evidence[0].metrics["offset_ms"] <= 130
    assert f.impact is not None and f.impact.seconds_per_step > 0.09
    assert "timeline.negotiation_wait" not in _codes(report)


def test_d1_reports_negotiation_wait_with_the_cache_suggestion(corpus: Path) -> None:
    report, _ = _run(corpus, "d1")
    assert "timeline.straggler" not in _codes(report)
    (f,) = [f for f in report.findings if f.code == "timeline.negotiation_wait"]
    assert 80 <= f.evidence[0].metrics["floor_ms"] <= 120
    assert any(s.env.get("HOROVOD_CACHE_CAPACITY") == "0" for s in f.suggestions)
    assert f.ranks == ()  # not named: only weak first-step evidence
    assert any(e.summary.startswith("weak evidence") for e in f.evidence)


@pytest.mark.parametrize("key", ["a1", "a3", "k"])
def test_balanced_runs_have_no_straggler_and_no_negotiation_wait(corpus: Path, key: str) -> None:
    report, _ = _run(corpus, key)
    assert not _codes(report) & {"timeline.straggler", "timeline.negotiation_wait"}


@pytest.mark.parametrize("key", ["b1", "b2"])
def test_fusion_fragmented_when_fusion_is_off_or_tiny(corpus: Path, key: str) -> None:
    report, _ = _run(corpus, key)
    (f,) = [f for f in report.findings if f.code == "timeline.fusion_fragmented"]
    assert f.suggestions[0].env["HOROVOD_FUSION_THRESHOLD"] == "134217728"


def test_b2_threshold_is_bracketed_around_1024_bytes(corpus: Path) -> None:
    report, _ = _run(corpus, "b2")
    fusion = report.timelines[0]["fusion"]
    assert fusion["threshold_lower_bytes"] <= 1024 < fusion["threshold_upper_bytes"]


def test_a1_fusion_is_healthy(corpus: Path) -> None:
    report, _ = _run(corpus, "a1")
    assert "timeline.fusion_fragmented" not in _codes(report)
    assert report.timelines[0]["fusion"]["batches_per_step"] <= 4


def test_e1_is_truncated_and_still_fully_analysed(corpus: Path) -> None:
    report, _ = _run(corpus, "e1")
    assert "timeline.truncated" in _codes(report)
    steps = report.timelines[0]["steps"]
    assert abs(steps["count"] - 81) <= 2 and steps["steady"] >= 78
    assert report.timelines[0]["phases"]


def test_startup_skew_is_info_on_a3(corpus: Path) -> None:
    report, _ = _run(corpus, "a3")
    (f,) = [f for f in report.findings if f.code == "timeline.startup_skew"]
    assert f.severity.label == "info" and 2.0 <= f.evidence[0].metrics["skew_ms"] / 1e3 <= 2.5
