"""Real per-rank profiler traces from public repositories (../shared/corpus/kineto-public): every file is
ingested and reported without error; the 8-rank DLRM job is matched across all 8 ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.report.model import AnalysisReport
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from tests.conftest import CORPUS, Validate

KINETO = CORPUS / "kineto-public"
pytestmark = pytest.mark.corpus


def _report(*paths: Path) -> AnalysisReport:
    with temporary_store() as store:
        found, skipped = discover(list(paths))
        assert not skipped, skipped
        store.ingest(found, skipped)
        return analyze(store)


def _files() -> list[Path]:
    return sorted(KINETO.glob("*/*.gz")) if KINETO.is_dir() else []


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name[:40])
def test_every_public_trace_is_read_and_reported(path: Path, corpus: Path, validated: Validate) -> None:
    report = _report(path)
    validated(to_document(report))
    (entry,) = report.inputs
    assert entry["kind"] == "rank_trace" and entry["issues"]["error"] == 0
    facts = entry["rank_trace"]
    assert facts is not None and facts["events"] > 0
    assert facts["steps"] >= 1, "every public trace holds at least one ProfilerStep"


def test_the_dlrm_job_is_matched_across_its_8_ranks(corpus: Path, validated: Validate) -> None:
    report = _report(KINETO / "param-dlrm-8rank")
    validated(to_document(report))
    (section,) = report.rank_traces
    assert [r["rank"] for r in section["ranks"]] == list(range(8)) and section["world_size"] == 8
    assert section["matched_share"] == 1.0 and not section["missing_ranks"] and not section["missing_collectives"]
    assert all(r["steps"] == 1 and r["median_step_ms"] > 0 for r in section["ranks"])
    assert section["source"].startswith("NCCL kernels")
    # one profiled step is too few to tell a straggler from noise: nobody is named, and nothing claims health
    assert "traces.straggler" not in {f.code for f in report.findings}
    assert not any("own trace" in p for p in report.verdict()["passed"])


def test_a_sampled_pair_of_a_128_rank_job_names_the_126_missing(corpus: Path) -> None:
    report = _report(
        KINETO / "hta" / "trace_filter__sampled_rank-0.json.gz", KINETO / "hta" / "trace_filter__sampled_rank-1.json.gz"
    )
    (section,) = report.rank_traces
    assert len(section["missing_ranks"]) == 126 and section["world_size"] == 128
    (note,) = [f for f in report.findings if f.code == "traces.incomplete"]
    assert "2 of 128" in note.title


def test_traces_without_a_rank_are_read_and_said_so(corpus: Path) -> None:
    report = _report(KINETO / "hta" / "distributed_info_unavailable__distributed_info_not_found.json.gz")
    facts = report.inputs[0]["rank_trace"]
    assert facts is not None and facts["rank"] is None
    assert any(i["code"] == "trace.no_rank" for i in report.parse_issues)
