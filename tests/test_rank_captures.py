"""The committed real per-rank trace captures (sample_traces/ranks/) meet their EXPECTED.md, in every capture."""

from __future__ import annotations

import csv
import functools
import json
import statistics
from pathlib import Path

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.report.model import AnalysisReport
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from sample_traces.capture.ranks import SCENARIOS, expected_md
from tests.conftest import ROOT, Validate, assert_round_trip

RANKS = ROOT / "sample_traces" / "ranks"
CAPTURES = [(name, folder) for name in sorted(SCENARIOS) for folder in sorted((RANKS / name).glob("r*/"))]
IDS = [f"{name}/{folder.name}" for name, folder in CAPTURES]


@functools.cache
def _report(folder: Path) -> AnalysisReport:
    with temporary_store() as store:
        store.ingest(*discover([folder]))
        return analyze(store)


def test_every_scenario_was_captured_three_times() -> None:
    assert sorted(p.name for p in RANKS.iterdir() if p.is_dir()) == sorted(SCENARIOS)
    for name, sc in SCENARIOS.items():
        tags = sorted(p.name for p in (RANKS / name).iterdir() if p.is_dir())
        assert tags == ["r1", "r2", "r3"], (name, tags)
        for tag in tags:
            assert (RANKS / name / tag / "EXPECTED.md").read_text() == expected_md(name, sc)


@pytest.mark.parametrize(("name", "folder"), CAPTURES, ids=IDS)
def test_the_late_rank_and_only_it_is_named(name: str, folder: Path, validated: Validate) -> None:
    """Named: the injected rank(s), with the pattern and cause injected; nobody in a healthy run, a
    whole-job slowdown or noise."""
    sc = SCENARIOS[name]
    report = _report(folder)
    validated(to_document(report))
    assert_round_trip(report)
    found = [f for f in report.findings if f.code == "traces.straggler"]
    if not sc.late:
        assert not found, [f.title for f in found]
        return
    (f,) = found
    assert f.ranks == sc.late, f.title
    for r in sc.late:
        assert f.labels[f"rank{r}_when"] == sc.when and f.labels[f"rank{r}_cause"] == sc.cause, dict(f.labels)
    assert f.hosts, "the late rank's host is named"


@pytest.mark.parametrize(("name", "folder"), CAPTURES, ids=IDS)
def test_step_time_per_rank_is_within_5_percent_of_the_truth(name: str, folder: Path) -> None:
    truth: dict[int, list[float]] = {}
    with open(folder / "steps.csv") as f:
        for row in csv.DictReader(f):
            truth.setdefault(int(row["rank"]), []).append(float(row["step_time_s"]) * 1e3)
    (section,) = _report(folder).rank_traces
    assert len(section["ranks"]) == 4 - len(SCENARIOS[name].drop)
    for r in section["ranks"]:
        want = statistics.median(truth[r["rank"]])
        assert r["median_step_ms"] == pytest.approx(want, rel=0.05), (r["rank"], r["median_step_ms"], want)
    assert section["matched_share"] == 1.0 and not section["missing_collectives"]


PARTIAL = [c for c in CAPTURES if SCENARIOS[c[0]].drop]


@pytest.mark.parametrize(("name", "folder"), PARTIAL, ids=[f"{n}/{f.name}" for n, f in PARTIAL])
def test_a_partial_set_names_the_missing_ranks(name: str, folder: Path) -> None:
    report = _report(folder)
    (section,) = report.rank_traces
    assert section["missing_ranks"] == list(SCENARIOS[name].drop)
    (note,) = [f for f in report.findings if f.code == "traces.incomplete"]
    assert note.ranks == SCENARIOS[name].drop and "3 of 4" in note.title


def test_horovod_cache_on_the_timeline_points_at_the_rank_the_traces_name() -> None:
    """With Horovod's response cache on the timeline cannot name the late rank; the same job's per-rank
    traces do, and the timeline's negotiation wait cites them."""
    for folder in sorted((RANKS / "hvd_cached_straggler").glob("r*/")):
        report = _report(folder)
        assert not [f for f in report.findings if f.code == "timeline.straggler"]
        (wait,) = [f for f in report.findings if f.code == "timeline.negotiation_wait"]
        assert wait.ranks == (2,) and any("traces.straggler" in e.summary for e in wait.evidence)
        assert "rank(s) 2" in wait.suggestions[0].action


def test_slice_draws_every_rank_as_a_process_on_one_clock(tmp_path: Path) -> None:
    """``slice`` of a run of per-rank traces: one step of every rank, each a process, the collectives'
    ends aligned across ranks (one host's clock), the late rank's collectives short and marked late."""
    from click.testing import CliRunner

    from analyzer.cli import cli

    out = tmp_path / "slice.json"
    res = CliRunner().invoke(cli, ["slice", str(RANKS / "ddp_straggler" / "r1"), "--steps", "median", "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    events = json.loads(out.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {r: f"rank {r} (vm)" for r in range(4)}
    steps = [e for e in events if e["ph"] == "X" and e["name"].startswith("ProfilerStep#")]
    assert len(steps) == 4 and len({e["name"] for e in steps}) == 1
    coll = [e for e in events if e["ph"] == "X" and e.get("tid") == 1]
    ends = {}
    for e in coll:
        ends.setdefault(e["args"]["step"], []).append(e["ts"] + e["dur"])
    late = {e["pid"]: e["args"]["late_by_us"] for e in coll}
    assert max(late, key=lambda r: late[r]) == 2
    assert all(max(v) - min(v) < 30_000 for v in ends.values()), ends


def test_compare_two_runs_of_per_rank_traces() -> None:
    """``compare`` of a run with a straggler and a healthy one, both per-rank traces only: the step
    time shift comes from the traces, and the straggler finding is gone."""
    from click.testing import CliRunner

    from analyzer.cli import cli

    res = CliRunner().invoke(
        cli, ["compare", str(RANKS / "ddp_straggler" / "r1"), str(RANKS / "ddp_healthy" / "r1"), "-f", "json"]
    )
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["before"]["steps"] == 20 and doc["after"]["steps"] == 20
    assert doc["steps"]["direction"] == "faster" and doc["steps"]["significant"]
    assert doc["steps"]["median"]["after_ms"] < doc["steps"]["median"]["before_ms"]
    gone = [f for f in doc["findings"] if f["code"] == "traces.straggler"]
    assert gone and gone[0]["change"] == "resolved", gone


def test_the_app_ranks_page_shows_the_traces() -> None:
    from dashboards.pages import render_page

    doc = to_document(_report(RANKS / "ddp_straggler" / "r1"))
    page = render_page("ranks", {"report": doc, "views": {}})
    ids = set()
    stack = [page]
    while stack:
        node = stack.pop()
        ids.add(getattr(node, "id", None))
        children = getattr(node, "children", None)
        stack += [
            c
            for c in (children if isinstance(children, list) else [children])
            if hasattr(c, "children") or hasattr(c, "id")
        ]
    assert {"trace-bars", "trace-table", "trace-summary"} <= ids


def test_batch_over_captures_lists_the_traces_stragglers(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from analyzer.cli import cli

    res = CliRunner().invoke(cli, ["batch", str(RANKS / "ddp_straggler"), "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.stderr
    fleet = json.loads((tmp_path / "out" / "fleet.json").read_text())["fleet"]
    assert [(s["run"], s["ranks"]) for s in fleet["stragglers"]] == [("r1", [2]), ("r2", [2]), ("r3", [2])]
