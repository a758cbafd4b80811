"""The verdict: status, key numbers, the one thing to do, checks passed; first in every format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.detectors import ALL_DETECTORS
from analyzer.report.job_view import report_for_job
from analyzer.report.model import AnalysisReport
from analyzer.report.verdict import NOT_A_CHECK, PASSED, verdict_of
from tests.conftest import ROOT

CAPTURED = ROOT / "sample_traces" / "captured"
SYNTHETIC = ROOT / "sample_traces" / "synthetic"


def _doc(*paths: Path) -> dict[str, Any]:
    res = CliRunner().invoke(cli, ["report", "-f", "json", *map(str, paths)])
    assert res.exit_code == 0, res.output
    return dict(json.loads(res.stdout))


def test_a_straggler_run_is_degraded_with_its_cost_and_first_action() -> None:
    doc = _doc(CAPTURED / "straggler_nocache")
    v = doc["verdict"]
    assert v["status"] == "degraded" and v["headline"].startswith("Degraded: Rank 1 is late")
    assert v["median_step_ms"] == pytest.approx(doc["timeline"]["steps"]["median_s"] * 1e3, abs=1e-3)
    assert v["steps_per_s"] == pytest.approx(1e3 / v["median_step_ms"], rel=1e-3)
    assert v["losses"][0]["code"] == "timeline.straggler" and v["losses"][0]["ms_per_step"] > 50
    straggler = next(f for f in doc["findings"] if f["code"] == "timeline.straggler")
    assert v["action"] == straggler["suggestions"][0]["action"]
    assert "no rank is consistently the last one ready" not in v["passed"]  # it fired
    assert "tensor fusion works: gradients go out in few batches" in v["passed"]


def test_a_healthy_run_lists_the_checks_it_passed() -> None:
    v = _doc(CAPTURED / "healthy_np4")["verdict"]
    assert v["status"] == "healthy" and v["headline"].startswith("Healthy: median step")
    assert v["action"] is None and v["losses"] == []
    assert len(v["passed"]) >= 6 and "the timeline is complete: no step after its end is missing" in v["passed"]


def test_nccl_checks_pass_on_a_healthy_log_and_name_the_network() -> None:
    v = _doc(SYNTHETIC / "nccl_healthy_ib")["verdict"]
    assert v["status"] == "healthy" and v["median_step_ms"] is None
    assert "no process fell back to TCP sockets" in v["passed"]
    assert any(p.startswith("network: IB on all 2 hosts") for p in v["passed"])
    assert not any("tensor fusion" in p for p in v["passed"])  # no timeline: no timeline check passed


@pytest.mark.parametrize("sample", ["nccl_init_failure", "watchdog_behind"])
def test_a_job_that_died_or_hung_is_failed(sample: str) -> None:
    v = _doc(SYNTHETIC / sample)["verdict"]
    assert v["status"] == "failed" and v["action"]


def test_warnings_without_a_failure_are_degraded_not_failed() -> None:
    v = _doc(SYNTHETIC / "nccl_socket_fallback")["verdict"]
    assert v["status"] == "degraded" and "no process fell back to TCP sockets" not in v["passed"]


def test_every_detector_says_what_its_silence_means() -> None:
    names = {d.name for d in ALL_DETECTORS}
    assert names == set(PASSED) | NOT_A_CHECK and not set(PASSED) & NOT_A_CHECK


def test_a_job_narrowed_report_gets_its_own_verdict(tmp_path: Path) -> None:
    import shutil

    for name, src in (("a", CAPTURED / "straggler_nocache"), ("b", CAPTURED / "healthy_np4")):
        shutil.copytree(src, tmp_path / name)
    doc = _doc(tmp_path)
    assert doc["verdict"]["status"] == "degraded"
    healthy = next(j["id"] for j in doc["jobs"] if any("/b/" in t for t in j["timelines"]))
    whole = AnalysisReport.from_document(doc)  # type: ignore[arg-type]
    narrowed = report_for_job(whole, healthy)
    assert narrowed.verdict()["status"] == "healthy" and narrowed.verdict() == verdict_of(narrowed)
    assert {f.job for f in narrowed.findings} <= {healthy} and len(narrowed.jobs) == 2


@pytest.mark.parametrize(
    ("fmt", "verdict_mark", "findings_mark"),
    [
        ("text", "Verdict: ", "Findings ("),
        ("md", "## Verdict", "## Findings"),
        ("html", "id='verdict'", "<h2>Findings"),
    ],
)
def test_the_verdict_comes_first_in_every_format(fmt: str, verdict_mark: str, findings_mark: str) -> None:
    res = CliRunner().invoke(cli, ["report", "-f", fmt, str(CAPTURED / "straggler_nocache")])
    out = res.stdout
    assert res.exit_code == 0
    assert 0 <= out.index(verdict_mark) < out.index(findings_mark) < out.index("Inputs")


def test_logs_without_a_warn_pass_the_error_check_instead_of_skipping_it() -> None:
    doc = _doc(SYNTHETIC / "nccl_healthy_ib")
    skipped = {s["detector"]: s["reason"] for s in doc["skipped_detectors"]}
    assert "nccl_error" not in skipped and "ib_disabled" not in skipped  # ran: the logs had nothing to report
    assert {"no NCCL error", "InfiniBand is not disabled by NCCL_IB_DISABLE"} <= set(doc["verdict"]["passed"])
    assert skipped["straggler"].endswith("no Horovod timeline was ingested")


def test_a_job_log_without_nccl_records_says_so_when_the_nccl_checks_skip(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "[rank1]:[E1206 18:44:12.715 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        "600021 milliseconds before timing out.\n"
    )
    doc = _doc(log)
    skipped = {s["detector"]: s["reason"] for s in doc["skipped_detectors"]}
    assert "the job logs hold no NCCL_DEBUG=INFO records" in skipped["socket_fallback"]
    assert "no NCCL_DEBUG=INFO log was ingested" not in str(skipped)  # one was: it had no NCCL records


def test_a_long_queue_names_the_socket_fallback_that_explains_it() -> None:
    doc = _doc(SYNTHETIC / "nccl_socket_fallback")
    queue = next(f for f in doc["findings"] if f["code"] == "timeline.long_queue")
    assert any("nccl.socket_fallback in the same job explains it" in e["summary"] for e in queue["evidence"])
    first = queue["suggestions"][0]
    assert first["action"].startswith("Fix the transport first (nccl.socket_fallback)")
    assert "rerun with NCCL_DEBUG=INFO" not in str(queue["suggestions"])  # the logs are already in the run


def test_in_a_run_of_several_jobs_the_verdict_quotes_the_step_time_of_its_findings_job() -> None:
    """Two run folders reported together: the worst finding is the slow job's, and so must be the
    median step the verdict quotes (the run's main timeline is the other job's)."""
    pair = ROOT / "sample_traces" / "compare" / "cycle_default"
    doc = _doc(pair / "before", pair / "after")
    slow = next(t for t in [doc["timeline"], *doc["other_timelines"]] if "before" in t["path"])
    v = doc["verdict"]
    assert v["headline"].endswith("(job before)") and "cycle" in v["headline"]
    assert v["median_step_ms"] == pytest.approx(slow["steps"]["median_s"] * 1e3, abs=1e-3)


def test_the_verdict_names_the_error_before_the_init_it_broke(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "a:7:9 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 commId 0x5 - Init START\n"
        "b:8:9 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 0 busId 18000 commId 0x5 - Init START\n"
        "b:8:9 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 0 busId 18000 commId 0x5 - Init COMPLETE\n"
        "\na:7:9 [0] transport/nvls.cc:598 NCCL WARN Cuda failure 1 'invalid argument'\n"
        "a:7:9 [0] NCCL INFO transport/nvls.cc:620 -> 1\n"
    )
    doc = _doc(log)
    codes = [f["code"] for f in doc["findings"] if f["severity"] == "critical"]
    assert codes == ["nccl.error", "nccl.init_incomplete"]  # both fail the job; the first is the cause
    assert doc["verdict"]["headline"].startswith("Failed: NCCL cuda error: Cuda failure 1 'invalid argument'")


def test_an_excerpt_that_ends_on_a_failure_nccl_goes_on_from_is_inconclusive(tmp_path: Path) -> None:
    probe = (
        "a:7:9 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
        "\na:7:9 [0] misc/ibvwrap.cc:107 NCCL WARN Call to ibv_open_device failed\n"
    )
    log = tmp_path / "excerpt.log"
    log.write_text(probe)
    v = _doc(log)["verdict"]
    assert v["status"] == "inconclusive" and v["headline"].startswith(
        "Inconclusive: NCCL ibv setup failure, unconfirmed"
    )
    assert v["action"].startswith("Read what")  # what would tell, first
    log.write_text(
        probe + "a:7:9 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\na:7:9 [0] NCCL INFO Using network Socket\n"
    )
    assert _doc(log)["verdict"]["status"] != "inconclusive"  # it went on: the WARN was a probe, no failure
