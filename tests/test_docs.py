"""Docs cannot drift from the code: generated schema doc, finding codes, CLI commands, JSON keys."""

from __future__ import annotations

import importlib.util
import json

import pytest

from analyzer import detectors
from analyzer.cli import cli
from analyzer.report.json_schema import report_schema
from parsers.schema import render_markdown
from tests.conftest import ROOT, SCHEMA, validate_report


def test_generated_docs_are_current() -> None:
    """The CLI reference (docs/cli.md), the finding codes' reference (docs/detectors.md) and the README's
    list of them, the store's and the reports' schemas: what ``python scripts/docs.py`` writes."""
    spec = importlib.util.spec_from_file_location("docs_script", ROOT / "scripts" / "docs.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stale = [
        str(p.relative_to(ROOT)) for p, text in script.generated().items() if p.read_text(encoding="utf-8") != text
    ]
    assert stale == [], "run: python scripts/docs.py"


def test_schema_doc_is_current() -> None:
    assert (ROOT / "docs" / "schema.md").read_text() == render_markdown(), (
        "run: python -m parsers.schema > docs/schema.md"
    )


def test_readme_documents_every_finding_code_and_command() -> None:
    readme = (ROOT / "README.md").read_text()
    codes = {det.code for det in detectors.ALL_DETECTORS}
    assert len(codes) == len(detectors.ALL_DETECTORS) and all(f"`{c}`" in readme for c in codes), codes
    for name in cli.commands:
        assert f"hvd-analyze {name}" in readme, name


def test_every_finding_code_is_in_the_catalogue_with_its_thresholds_from_the_config() -> None:
    """docs/detectors.md is made of the catalogue: one entry per detector's code, each threshold group it
    names exists, and every number it quotes is a threshold's place filled from the config."""
    import dataclasses

    from analyzer.config import Thresholds
    from analyzer.detectors.catalogue import CODES, filled

    assert [c.code for c in CODES] == [d.code for d in detectors.ALL_DETECTORS]
    groups = {f.name for f in dataclasses.fields(Thresholds)}
    assert all(set(c.thresholds) <= groups and c.summary for c in CODES)
    changed = dataclasses.replace(
        Thresholds(), straggler=dataclasses.replace(Thresholds().straggler, critical_share=0.4, min_late_us=7_000)
    )
    straggler = next(c for c in CODES if c.code == "timeline.straggler")
    assert "≥ 40% of the step" in filled(straggler.severity, changed)
    assert "max(7 ms, 5% of the step)" in filled(straggler.signal, changed)
    assert all("{" not in filled(t, Thresholds()) for c in CODES for t in (c.severity, c.signal, c.action))


def test_the_version_is_the_projects() -> None:
    import tomllib

    import analyzer

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert analyzer.__version__ == project["version"]


def test_report_doc_names_every_top_level_key() -> None:
    doc = (ROOT / "docs" / "report-schema.md").read_text()
    for key in SCHEMA["properties"]:
        assert f"`{key}" in doc, key


def test_readme_starts_with_the_two_commands_and_ci_runs_the_second() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = [b.split("\n", 1)[1] for b in readme.split("```")[1::2]]
    assert "hvd-analyze report sample_traces" in blocks[0]
    test_cmd = blocks[1].strip()
    assert "pytest" in test_cmd
    assert test_cmd in (ROOT / ".ci" / "run").read_text()


def test_committed_report_schema_is_the_generated_one() -> None:
    assert SCHEMA == report_schema(), "run: python -m analyzer.report.json_schema > analyzer/report/report.schema.json"


def test_report_schema_rejects_what_the_types_do_not_allow() -> None:
    doc = json.loads((ROOT / "tests" / "data" / "minimal-report.json").read_text())
    validate_report(doc)
    for broken in (
        {**doc, "extra": 1},
        {k: v for k, v in doc.items() if k != "findings"},
        {**doc, "summary": {**doc["summary"], "worst": "fatal"}},
        {**doc, "verdict": {**doc["verdict"], "status": "fine"}},
        {**doc, "inputs": [{**doc["inputs"][0], "size": -1}]},
    ):
        with pytest.raises(AssertionError, match="does not match"):
            validate_report(broken)
