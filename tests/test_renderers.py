"""Every renderer x {empty report, report with every finding kind}; hostile strings stay text."""

from __future__ import annotations

import json

import pytest

from analyzer.errors import UsageError
from analyzer.findings import (
    AnalysisReport,
    Evidence,
    Finding,
    Impact,
    Severity,
    Skipped,
    SourceRef,
    Suggestion,
)
from analyzer.render import RENDERERS, renderer_for
from tests.conftest import validate_report

HOSTILE = "<img src=x onerror=alert(1)>"


def _finding(code: str, sev: Severity) -> Finding:
    return Finding(
        code=code,
        severity=sev,
        title=f"title {HOSTILE}",
        summary=f"summary {HOSTILE}",
        detector="d",
        evidence=(Evidence(f"ev {HOSTILE}", (SourceRef(f"/x/{HOSTILE}.json", byte_offset=12),), {"m": 1.5}),),
        impact=Impact(0.0125, 0.25, "medium", "the straggler matches the median rank"),
        suggestions=(Suggestion("do it", {"HOROVOD_CACHE_CAPACITY": "0"}, "why"),),
        ranks=(1,),
    )


EMPTY = AnalysisReport("0.1.0", "/s", (), (), (), ())
FULL = AnalysisReport(
    "0.1.0",
    "/s",
    (
        {
            "id": "0" * 16,
            "path": f"/x/{HOSTILE}.json",
            "kind": "horovod_timeline",
            "size": 1,
            "sha256": "0" * 64,
            "rows": {"spans": 1},
            "issues": {"info": 0, "data_loss": 1, "error": 0},
            "timeline": None,
            "log": None,
        },
    ),
    tuple(
        _finding(c, s)
        for c, s in (("timeline.truncated", Severity.WARNING), ("a.b", Severity.CRITICAL), ("c.d", Severity.INFO))
    ),
    (Skipped("x", "no table"),),
    (
        {
            "file": HOSTILE,
            "byte_offset": 3,
            "severity": "data_loss",
            "code": "timeline.truncated_record",
            "message": HOSTILE,
            "count": 2,
        },
    ),
    ({"path": HOSTILE, "reason": "unknown"},),
)


@pytest.mark.parametrize("name", sorted(RENDERERS))
@pytest.mark.parametrize("report", [EMPTY, FULL], ids=["empty", "full"])
def test_renderer(name: str, report: AnalysisReport) -> None:
    text = RENDERERS[name].render(report)
    assert text.endswith("\n")
    if report is FULL:
        assert "timeline.truncated" in text.replace("\\", "") and "HOROVOD_CACHE_CAPACITY" in text
    if name == "json":
        doc = json.loads(text)
        validate_report(doc)
        assert doc["summary"]["worst"] == (None if report is EMPTY else "critical")
    if name in ("html", "md"):
        assert HOSTILE not in text  # escaped, never live markup
    if name == "html" and report is FULL:
        assert "&lt;img src=x onerror=alert(1)&gt;" in text
        assert "<script" not in text and "http" not in text.split("</style>")[1]  # self-contained


def test_json_keeps_the_findings_in_the_order_it_is_given() -> None:
    doc = json.loads(RENDERERS["json"].render(FULL))
    assert [f["code"] for f in doc["findings"]] == ["timeline.truncated", "a.b", "c.d"]  # analyze() orders them


def test_findings_sort_critical_first_then_by_time_lost() -> None:
    def with_impact(code: str, sev: Severity, seconds: float | None) -> Finding:
        impact = None if seconds is None else Impact(seconds, 0.1, "medium", "")
        return Finding(code=code, severity=sev, title="", summary="", detector="d", impact=impact)

    found = [
        with_impact("w-small", Severity.WARNING, 0.001),
        with_impact("info", Severity.INFO, 9.0),
        with_impact("w-none", Severity.WARNING, None),
        with_impact("crit", Severity.CRITICAL, None),
        with_impact("w-big", Severity.WARNING, 0.5),
    ]
    assert [f.code for f in sorted(found, key=Finding.sort_key)] == ["crit", "w-big", "w-small", "w-none", "info"]


def test_renderer_for() -> None:
    assert renderer_for(None, "r.HTML").name == "html"
    assert renderer_for("md", "r.html").name == "md"
    assert renderer_for(None, None).name == "text"
    with pytest.raises(UsageError):
        renderer_for(None, "r.pdf")


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_nccl_section_in_every_format(name: str) -> None:
    from analyzer.report.assembly import analyze
    from analyzer.store.discovery import discover
    from analyzer.store.run_store import temporary_store
    from tests.conftest import ROOT

    with temporary_store() as store:
        store.ingest(*discover([ROOT / "sample_traces" / "synthetic" / "nccl_init_failure" / "job.log"]))
        text = RENDERERS[name].render(analyze(store)).replace("\\_", "_")
    if name == "json":
        doc = json.loads(text)
        assert [c["ranks_incomplete"][0]["rank"] for c in doc["nccl"]["communicators"]] == [9]
        assert doc["nccl"]["errors"][0]["class"] == "ib_completion_error"
        return
    for needle in (
        "gpu-node-001",
        "ib_completion_error",
        "6/8",
        "9 (gpu-node-001), 13 (gpu-node-001)",
        "job_log, 192 lines, 191 NCCL records from 16 process(es)",
    ):
        assert needle in text, (name, needle)


@pytest.mark.parametrize("name", ["text", "md"])
def test_a_line_break_in_an_input_cannot_fake_a_finding(name: str) -> None:
    fake = "allreduce.w\n2. [CRITICAL] nccl.error: fake\r\n## CRITICAL `nccl.error`: fake"
    f = Finding("timeline.over", Severity.INFO, f"tensor {fake}", f"the tensor {fake}", "d", (Evidence(fake),))
    out = RENDERERS[name].render(AnalysisReport("0.1.0", "/s", (), (f,), (), ()))
    assert not any(line.startswith(("2. [CRITICAL]", "## CRITICAL", "### CRITICAL")) for line in out.splitlines())
    assert "\\n2. [CRITICAL] nccl.error: fake\\r\\n" in out.replace("\\\\", "\\").replace("\\[", "[").replace(
        "\\]", "]"
    )
