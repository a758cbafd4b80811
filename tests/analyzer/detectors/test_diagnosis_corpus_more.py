"""Acceptance on six further real Horovod 0.28.1 runs (``../shared/corpus/horovod-cpu-more``, its
README says what each must give). Skipped when the corpus is absent. Each run is analysed as a user
points the tool at it: the whole run folder (timeline, logs, autotune CSV, notes)."""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any

import pytest

from analyzer.findings import Severity
from analyzer.report.assembly import analyze
from analyzer.report.model import AnalysisReport
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from tests.builders import truth_steps

RUNS = {
    "c": "c_cycle_time_50ms_np2",
    "d3": "d3_straggler_rank3_150ms_np4_nocache_markcycles",
    "e2": "e2_killed_sigkill_rank1_only_np2",
    "f": "f_manysmall_onebig_default_fusion_np2",
    "l": "l_autotune_np2",
    "n": "n_large_file_manysmall_500steps_markcycles_np2",
}
_CACHE: dict[str, AnalysisReport] = {}


def _run(corpus: Path, key: str) -> AnalysisReport:
    if key not in _CACHE:
        with temporary_store() as store:
            store.ingest(*discover([corpus / "horovod-cpu-more" / RUNS[key]]))
            _CACHE[key] = analyze(store)
    return _CACHE[key]


def _by_code(report: AnalysisReport) -> dict[str, Any]:
    return {f.code: f for f in report.findings}


@pytest.mark.parametrize("key", sorted(RUNS))
def test_median_step_within_10_percent_of_steps_csv(corpus: Path, key: str) -> None:
    report = _run(corpus, key)
    truth = truth_steps(corpus / "horovod-cpu-more" / RUNS[key] / "steps.csv")
    expected = median(truth.loc[truth["steady"], "duration_us"]) / 1e6
    assert report.timelines[0]["steps"]["median_s"] == pytest.approx(expected, rel=0.10)


@pytest.mark.parametrize("key", ["c", "e2", "f", "l", "n"])
def test_no_straggler_where_every_rank_ran_alike(corpus: Path, key: str) -> None:
    assert "timeline.straggler" not in _by_code(_run(corpus, key))


def test_c_a_50_ms_cycle_is_too_high_for_100_ms_steps(corpus: Path) -> None:
    f = _by_code(_run(corpus, "c"))["timeline.cycle_time_high"]
    assert f.severity >= Severity.WARNING and "50" in f.title


def test_d3_names_rank_3(corpus: Path) -> None:
    f = _by_code(_run(corpus, "d3"))["timeline.straggler"]
    assert f.ranks == (3,) and 130 <= f.evidence[0].metrics["offset_ms"] <= 220


def test_e2_steps_before_the_kill_are_analysed(corpus: Path) -> None:
    report = _run(corpus, "e2")
    truth = truth_steps(corpus / "horovod-cpu-more" / RUNS["e2"] / "steps.csv")
    assert abs(report.timelines[0]["steps"]["count"] - len(truth)) <= 2


def test_f_a_gradient_over_horovods_default_threshold_is_reported_as_an_assumption(corpus: Path) -> None:
    f = _by_code(_run(corpus, "f"))["timeline.tensor_over_fusion_threshold"]
    assert "allreduce.big.weight" in f.summary and "assumed Horovod's default of 128 MiB" in f.summary


def test_l_autotune_trials_are_not_a_slowdown_and_an_unfinished_tuning_gives_no_settings(corpus: Path) -> None:
    found = _by_code(_run(corpus, "l"))
    slowdown = found["timeline.slowdown"]
    assert slowdown.severity is Severity.INFO and slowdown.ranks == () and "autotuner" in slowdown.title
    tuned = found["horovod.autotune_result"]
    assert "unfinished" in tuned.title and all(not s.env for s in tuned.suggestions)


def test_n_the_writers_lost_tail_is_a_note_not_a_warning(corpus: Path) -> None:
    report = _run(corpus, "n")
    f = _by_code(report)["timeline.truncated"]
    assert f.severity is Severity.INFO and "every step before the last is complete" in f.summary
    assert report.timelines[0]["steps"]["count"] == 500
    assert report.verdict()["status"] == "healthy"


def test_e2_says_rank_1_was_killed_from_the_launchers_output(corpus: Path) -> None:
    report = _run(corpus, "e2")
    f = _by_code(report)["job.worker_exit"]
    assert f.ranks == (1,) and "SIGKILL" in f.title and "137" in f.title
    assert report.verdict()["status"] == "failed"
    assert report.verdict()["headline"].startswith("Failed: Rank 1 died")  # the kill, not what followed it
    shutdown = _by_code(report)["nccl.error"]  # rank 0's Horovod shut down after it lost rank 1
    assert shutdown.severity is Severity.WARNING and "job.worker_exit" in shutdown.summary
