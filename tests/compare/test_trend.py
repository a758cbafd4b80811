"""``batch``'s per-job trend on real captures: a job that turns slow in one run and fast again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.compare.trend import job_trends
from tests.conftest import ROOT

PAIR = ROOT / "sample_traces" / "compare" / "straggler_removed"


def test_batch_names_the_run_where_a_job_regressed_and_where_it_recovered(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name, side in (("2026-11-01", "after"), ("2026-11-02", "before"), ("2026-11-03", "after")):
        (runs / name / "trainer").mkdir(parents=True)
        shutil.copy(PAIR / side / "timeline.json", runs / name / "trainer" / "timeline.json")
    (runs / "2026-11-04" / "eval").mkdir(parents=True)  # another job, in one run only: no trend
    shutil.copy(PAIR / "after" / "timeline.json", runs / "2026-11-04" / "eval" / "timeline.json")
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["batch", str(runs), "-o", str(out), "-j", "1"])
    assert res.exit_code == 0, res.output
    fleet = json.loads((out / "fleet.json").read_text())
    (trend,) = fleet["fleet"]["trends"]
    assert trend["job"] == "trainer"
    assert [p["run"] for p in trend["runs"]] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert [p["vs_previous"] for p in trend["runs"]] == ["unknown", "slower", "faster"]
    assert (trend["regression_started"], trend["recovered"]) == ("2026-11-02", "2026-11-03")
    assert all("jobs" not in r for r in fleet["runs"])  # the step samples stay out of fleet.json
    md = (out / "fleet.md").read_text()
    assert "job `trainer`" in md and "regression started at `2026-11-02`" in md


def test_noise_between_runs_is_no_regression() -> None:
    same = [{"job": ".", "fingerprint": "f", "steps": 40, "sample_ms": [20.0 + (i % 7) for i in range(40)]}]
    shifted = [{"job": ".", "fingerprint": "f", "steps": 40, "sample_ms": [21.0 + (i % 7) for i in range(40)]}]
    (trend,) = job_trends([("a", same), ("b", shifted), ("c", same)])  # type: ignore[list-item]
    assert [p["vs_previous"] for p in trend["runs"]] == ["unknown", "unchanged", "unchanged"]
    assert trend["regression_started"] is None


def test_runs_of_different_jobs_at_the_same_place_get_no_trend() -> None:
    """Two unrelated jobs whose timelines both sit at their run's top: no trend joins them, even when
    one is much slower than the other (that is no regression of either)."""
    fast = {"job": ".", "fingerprint": "model-a", "steps": 40, "sample_ms": [20.0 + (i % 7) for i in range(40)]}
    slow = {"job": ".", "fingerprint": "model-b", "steps": 40, "sample_ms": [90.0 + (i % 7) for i in range(40)]}
    assert job_trends([("a", [fast]), ("b", [slow])]) == []  # type: ignore[list-item]
    (trend,) = job_trends([("a", [fast]), ("b", [slow]), ("c", [fast])])  # type: ignore[list-item]
    assert [p["run"] for p in trend["runs"]] == ["a", "c"] and trend["regression_started"] is None


def test_batch_over_unrelated_samples_draws_no_trend_and_lists_what_is_not_a_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("long_queue", "nccl_socket_fallback", "straggler_nocache", "healthy_glued"):
        shutil.copytree(ROOT / "sample_traces" / "synthetic" / name, runs / name)
    (runs / "NOTES.txt").write_text("what these runs are\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["batch", str(runs), "-o", str(out), "-j", "1"])
    assert res.exit_code == 0, res.output
    fleet = json.loads((out / "fleet.json").read_text())["fleet"]
    assert fleet["trends"] == [] and fleet["runs"] == 4
    assert [Path(n["path"]).name for n in fleet["not_runs"]] == ["NOTES.txt"]
    assert "`NOTES.txt`: text without NCCL records" in (out / "fleet.md").read_text()
