"""Acceptance on ../shared/corpus/horovod-cpu-set2/: six real Horovod 0.28.1 runs, each checked against
what its expected.json says (must / must_not finding codes, the ranks a straggler names, the step a
late rank began at, the cycle in effect) and its median step against steps.csv."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.report.model import AnalysisReport
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from tests.conftest import ROOT
from tests.test_captured import sync_median

SET2 = ROOT.parent / "shared" / "corpus" / "horovod-cpu-set2"
EXPECTED: dict[str, dict[str, Any]] = (
    json.loads((SET2 / "expected.json").read_text()) if (SET2 / "expected.json").is_file() else {}
)

pytestmark = pytest.mark.skipif(not EXPECTED, reason="../shared/corpus/horovod-cpu-set2 is not here")


@functools.cache
def _report(run: str) -> AnalysisReport:
    with temporary_store() as store:
        store.ingest(*discover([SET2 / run / "timeline.json"]))
        return analyze(store)


@pytest.mark.parametrize("run", sorted(EXPECTED))
def test_each_run_gives_what_its_expected_json_says(run: str) -> None:
    want = EXPECTED[run]
    report = _report(run)
    codes = {f.code for f in report.findings}
    assert set(want["must"]) <= codes, (run, codes)
    assert not set(want["must_not"]) & codes, (run, codes)
    straggler = next((f for f in report.findings if f.code == "timeline.straggler"), None)
    if "ranks" in want:
        assert straggler is not None and straggler.ranks == tuple(want["ranks"]), straggler
    if "late_from_step" in want:
        assert straggler is not None and "every step" not in straggler.title
        (ev,) = [e for e in straggler.evidence if e.metrics.get("rank") == want["ranks"][0]]
        assert abs(ev.metrics["first_late_step"] - want["late_from_step"]) <= 2, ev.summary
    steps_csv = SET2 / run / "steps.csv"
    truth = sync_median(steps_csv)
    assert abs(report.timelines[0]["steps"]["median_s"] - truth) <= 0.10 * truth


@pytest.mark.parametrize("run", sorted(r for r, w in EXPECTED.items() if "cycle_ms" in w))
def test_the_cycle_is_the_one_in_effect_or_unknown(run: str) -> None:
    """A cycle reported with confidence is within 25% of HOROVOD_CYCLE_TIME; else it says unknown."""
    cycle = to_document(_report(run))["timeline"]["cycle"]
    if cycle is not None and cycle["confidence"] != "low":
        assert cycle["cycle_ms"] == pytest.approx(EXPECTED[run]["cycle_ms"], rel=0.25), cycle
