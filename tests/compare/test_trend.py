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
    same = [{"job": ".", "steps": 40, "sample_ms": [20.0 + (i % 7) for i in range(40)]}]
    shifted = [{"job": ".", "steps": 40, "sample_ms": [21.0 + (i % 7) for i in range(40)]}]
    (trend,) = job_trends([("a", same), ("b", shifted), ("c", same)])  # type: ignore[list-item]
    assert [p["vs_previous"] for p in trend["runs"]] == ["unknown", "unchanged", "unchanged"]
    assert trend["regression_started"] is None
