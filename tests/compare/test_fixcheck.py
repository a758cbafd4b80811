"""Settings a run shows and the fix check, on report documents built by hand: each verdict, the
diagnostic settings, settings not shown or declared, and fixes applied together."""

from __future__ import annotations

import copy
from typing import Any, cast

import numpy as np
import pytest

from analyzer import analyze, temporary_store
from analyzer.compare import Side, compare_sides
from analyzer.compare.settings import Seen, setting_changes, shown_settings
from analyzer.render.jsonreport import to_document
from analyzer.report.model import AnalysisReport
from analyzer.report.types import ReportDocument
from analyzer.store import discover
from tests.conftest import ROOT


@pytest.fixture(scope="module", autouse=True)
def _base() -> None:
    """A real run's report (healthy_np2), whose timeline facts the tests edit."""
    with temporary_store() as store:
        inputs, skipped = discover([ROOT / "sample_traces" / "captured" / "healthy_np2"])
        store.ingest(inputs, skipped)
        BASE.update(to_document(analyze(store)))


BASE: dict[str, Any] = {}


def _doc(
    findings: list[dict[str, Any]], cache: str = "on", lo: int | None = 256, hi: int | None = 1792
) -> AnalysisReport:
    d = copy.deepcopy(BASE)
    d["nccl"] = None
    d["findings"] = findings
    tl = d["timeline"]
    tl["fusion"].update(threshold_lower_bytes=lo, threshold_upper_bytes=hi, threshold_text=f"{lo}..{hi}")
    tl["cycle"] = None
    for e in d["inputs"]:
        if e["timeline"] is not None:
            e["timeline"]["response_cache"] = cache
    return AnalysisReport.from_document(cast(ReportDocument, d))


def _finding(code: str, env: dict[str, str], impact_ms: float | None, severity: str = "warning") -> dict[str, Any]:
    return {
        "code": code,
        "severity": severity,
        "title": code,
        "summary": "",
        "detector": code,
        "job": None,
        "ranks": [],
        "hosts": [],
        "labels": {},
        "evidence": [],
        "impact": None
        if impact_ms is None
        else {"seconds_per_step": impact_ms / 1e3, "fraction_of_step": 0.1, "confidence": "medium", "assumptions": ""},
        "suggestions": [{"action": "do it", "env": env, "rationale": ""}],
    }


FUSION = _finding("timeline.fusion_fragmented", {"HOROVOD_FUSION_THRESHOLD": "67108864"}, 10.0)


def _compare(before: AnalysisReport, after: AnalysisReport, b_ms: float, a_ms: float, **declared: str) -> Any:
    rng = np.random.default_rng(0)
    tl_b, tl_a = before.main_timeline, after.main_timeline
    assert tl_b is not None and tl_a is not None
    sb = Side("BEFORE", "b", before, {tl_b["input_id"]: list(rng.normal(b_ms, 0.5, 40) / 1e3)})
    sa = Side("AFTER", "a", after, {tl_a["input_id"]: list(rng.normal(a_ms, 0.5, 40) / 1e3)}, declared=declared)
    return compare_sides(sb, sa)


@pytest.mark.parametrize(
    ("after_ms", "verdict"),
    [(90.0, "as predicted"), (97.0, "partly"), (100.0, "no effect"), (110.0, "worse")],
)
def test_the_verdict_holds_the_observed_change_against_the_prediction(after_ms: float, verdict: str) -> None:
    before = _doc([FUSION])
    after = _doc([], lo=6_000_000, hi=None)  # the threshold is now over 6 MB: 64 MiB applied
    doc = _compare(before, after, 100.0, after_ms)
    (row,) = doc["fix_check"]
    assert (row["trigger"], row["setting_status"], row["verdict"]) == (
        "setting applied",
        {"HOROVOD_FUSION_THRESHOLD": "applied"},
        verdict,
    )
    assert row["predicted_ms"] == 10.0 and row["observed_ms"] == pytest.approx(100.0 - after_ms, abs=1.0)


def test_a_setting_the_run_contradicts_is_not_applied_and_one_it_cannot_show_is_not_shown() -> None:
    before = _doc([FUSION])
    still_small = _compare(before, _doc([FUSION]), 100.0, 100.0)["fix_check"][0]
    assert (still_small["trigger"], still_small["verdict"]) == ("setting not applied", "not applied")
    unknown = _compare(before, _doc([FUSION], lo=None, hi=None), 100.0, 100.0)["fix_check"][0]
    assert (unknown["verdict"], unknown["setting_status"]) == ("not shown", {"HOROVOD_FUSION_THRESHOLD": "not shown"})
    assert "--after-set" in unknown["note"]


def test_a_declared_setting_counts_as_applied() -> None:
    before = _doc([FUSION])
    row = _compare(before, _doc([], lo=None, hi=None), 100.0, 90.0, HOROVOD_FUSION_THRESHOLD="67108864")["fix_check"][0]
    assert (row["setting_status"], row["verdict"]) == ({"HOROVOD_FUSION_THRESHOLD": "declared"}, "as predicted")


def test_a_diagnostic_setting_promises_no_speed_and_says_what_after_learnt() -> None:
    wait = _finding("timeline.negotiation_wait", {"HOROVOD_CACHE_CAPACITY": "0"}, 90.0)
    straggler = _finding("timeline.straggler", {}, 90.0, "critical") | {"ranks": [3]}
    doc = _compare(_doc([wait]), _doc([straggler], cache="off"), 100.0, 100.0)
    (row,) = doc["fix_check"]
    assert (row["verdict"], row["note"]) == ("diagnostic", "AFTER adds timeline.straggler (rank 3)")


def test_a_finding_gone_without_a_setting_is_checked_by_its_impact_and_fixes_together_share_the_change() -> None:
    straggler = _finding("timeline.straggler", {}, 50.0, "critical")
    doc = _compare(_doc([straggler, FUSION]), _doc([], lo=6_000_000, hi=None), 100.0, 45.0)
    rows = {r["code"]: r for r in doc["fix_check"]}
    assert rows["timeline.straggler"]["trigger"] == "finding resolved"
    assert {r["verdict"] for r in rows.values()} == {"as predicted"}
    assert "also addressed timeline.fusion_fragmented" in rows["timeline.straggler"]["note"]
    assert [f["change"] for f in doc["findings"]] == ["resolved", "resolved"]


def test_settings_read_off_a_run_and_what_changed() -> None:
    seen = shown_settings(_doc([], cache="off"))
    assert seen["HOROVOD_CACHE_CAPACITY"].exact == "0"
    assert seen["HOROVOD_FUSION_THRESHOLD"].admits("1024") and not seen["HOROVOD_FUSION_THRESHOLD"].admits("4096")
    assert Seen("x", "declared", exact="64").admits("64.0") and Seen("x", "t").admits("1") is None
    changes = {c["name"]: c["changed"] for c in setting_changes(seen, shown_settings(_doc([], lo=6_000_000, hi=None)))}
    assert changes == {"HOROVOD_CACHE_CAPACITY": "yes", "HOROVOD_FUSION_THRESHOLD": "yes"}
    same = {c["name"]: c["changed"] for c in setting_changes(seen, seen)}
    assert set(same.values()) == {"no"}
