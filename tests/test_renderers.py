"""Every renderer x {empty report, report with every finding kind}; hostile strings stay text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analyzer.detectors import ALL_DETECTORS
from analyzer.errors import UsageError
from analyzer.findings import Evidence, Finding, Impact, Severity, Skipped, SourceRef, Suggestion
from analyzer.render import RENDERERS, renderer_for
from analyzer.report.model import AnalysisReport
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
            "blake3": None,
            "rows": {"spans": 1},
            "issues": {"info": 0, "data_loss": 1, "error": 0},
            "timeline": None,
            "log": None,
            "rank_trace": None,
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
    assert renderer_for(None, "results.xml").name == "junit"
    with pytest.raises(UsageError):
        renderer_for(None, "r.pdf")


@pytest.mark.parametrize("name", sorted(set(RENDERERS) - {"junit"}))  # CI's format carries findings only
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


JUNIT_XSD = Path(__file__).parent / "data" / "junit.xsd"


@pytest.mark.parametrize("report", [EMPTY, FULL], ids=["empty", "full"])
@pytest.mark.parametrize("fail_on", ["info", "warning", "critical"])
def test_junit_validates_and_fails_the_cases_at_or_above_fail_on(report: AnalysisReport, fail_on: str) -> None:
    import xml.etree.ElementTree as ET

    import xmlschema

    text = renderer_for("junit", None, fail_on).render(report)
    xmlschema.XMLSchema(JUNIT_XSD).validate(text)
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None
    failures = [c.find("failure") for c in suite.iter("testcase") if c.find("failure") is not None]
    failing = [f for f in report.findings if f.severity >= Severity.parse(fail_on)]
    assert suite.get("failures") == str(len(failures)) == str(len({f.detector for f in failing}))
    text_of_failures = " ".join(x.text or "" for x in failures)
    assert all(f"] {f.code}: " in text_of_failures for f in failing)  # every failing finding, in its case
    assert int(suite.get("tests") or 0) >= len(ALL_DETECTORS)
    if report is FULL:
        assert HOSTILE in ET.tostring(suite, encoding="unicode").replace("&lt;", "<").replace("&gt;", ">")


def test_junit_keeps_control_characters_out_of_the_xml() -> None:
    import xmlschema

    nasty = "tensor\x01\x1b[31m]]><![CDATA[&"
    f = Finding("c.d", Severity.CRITICAL, nasty, nasty, "d", (Evidence(nasty),))
    text = RENDERERS["junit"].render(AnalysisReport("0.1.0", "/s", (), (f,), (), ()))
    xmlschema.XMLSchema(JUNIT_XSD).validate(text)  # parses: no raw control character, no broken markup
    assert "\x01" not in text and "]]><![CDATA[" not in text


def test_report_junit_on_a_real_run_and_its_exit_code(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from analyzer.cli import cli
    from tests.conftest import ROOT

    out = tmp_path / "results.xml"
    res = CliRunner().invoke(
        cli,
        [
            "report",
            str(ROOT / "sample_traces" / "captured" / "straggler_nocache"),
            "-o",
            str(out),
            "--fail-on",
            "critical",
        ],
    )
    assert res.exit_code == 1  # the straggler is critical: CI fails, and says which case
    import xmlschema

    xmlschema.XMLSchema(JUNIT_XSD).validate(str(out))
    text = out.read_text()
    assert 'name="timeline.straggler" time="0"><failure message="Rank 1 is late' in text
    assert 'name="timeline.startup_skew" time="0"><system-out>[INFO]' in text  # below the threshold: output only
    assert '<property name="verdict" value="degraded"/>' in text


def test_the_html_report_of_a_capture_is_small_and_draws_its_charts_without_script(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from analyzer.cli import cli
    from tests.conftest import ROOT

    out = tmp_path / "r.html"
    res = CliRunner().invoke(
        cli, ["report", str(ROOT / "sample_traces" / "captured" / "straggler_nocache"), "-o", str(out)]
    )
    assert res.exit_code == 0
    text = out.read_text()
    assert out.stat().st_size < 1.5e6  # small enough to attach to a ticket (plotly inline made it 4.8 MB)
    assert "<script" not in text and "http" not in text  # nothing to fetch: it opens offline
    assert text.count("<svg ") == 4  # step time over the run, histogram, phases, rank lateness
    assert "Step time over the run" in text and "<polyline" in text
    assert text.index("id='verdict'") < text.index("<svg ")  # the verdict before the charts


def test_text_histograms_keep_to_a_readable_number_of_lines() -> None:
    from analyzer.render.sections import TEXT_BINS, histogram_lines

    section: Any = {"steps": {"histogram": {"counts": [1] * 30, "edges_s": [i / 1e3 for i in range(31)]}}}
    lines = histogram_lines(section)
    assert len(lines) <= TEXT_BINS and sum(int(line.split()[-1]) for line in lines) == 30  # no step lost
    assert lines[0].startswith("     0.0 -      3.0 ms") and lines[-1].split("|")[0].strip().endswith("30.0 ms")


def test_app_charts_start_at_zero_and_put_the_problem_transport_in_red() -> None:
    from analyzer.render import figures
    from analyzer.report.assembly import analyze
    from analyzer.store.discovery import discover
    from analyzer.store.run_store import temporary_store
    from tests.conftest import ROOT

    healthy: Any = {"z": [[0.1, 0.27], [0.2, 0.15]], "steps": [1, 2], "ranks": [0, 1], "note": None}
    heat = figures.rank_heatmap(healthy, step_ms=100.0).data[0]
    assert heat.zmin == 0 and heat.zmax == 25.0  # 0.27 ms of a 100 ms step is pale, not the scale's top
    with temporary_store() as store:
        store.ingest(*discover([ROOT / "sample_traces" / "synthetic" / "nccl_socket_fallback" / "job.log"]))
        report = analyze(store)
    assert report.nccl is not None
    blue, red = figures.transport_matrix(report.nccl).data
    assert red.colorscale[-1][1] != blue.colorscale[-1][1]
    column = list(red.x).index("network Socket")
    socket_cells = [row[column] for row in red.z]
    finding = next(f for f in report.findings if f.code == "nccl.socket_fallback")
    assert sum(socket_cells) == finding.evidence[0].metrics["processes"] == 16  # the chart agrees with the finding
    assert all(row[column] is None for row in blue.z)
