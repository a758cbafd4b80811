"""Shared fixtures.

* ``corpus``: ``../shared/corpus`` next to the checkout; tests that need it skip cleanly
  when it is absent.
* ``validated``: checks a JSON report against ``analyzer/report/report.schema.json`` (the
  schema generated from :mod:`analyzer.report.types`) and that the typed model reads it back
  whole, and returns it; every test that makes JSON reports passes them through it.
* :func:`assert_round_trip`: a report is its document read back (``from_document(to_document(r)) == r``),
  also through JSON; the tests that analyse the bundled samples call it on each.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

import analyzer
from analyzer.render.jsonreport import to_document
from analyzer.report.model import AnalysisReport
from analyzer.report.types import ReportDocument

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
SCHEMA = json.loads((Path(analyzer.__file__).parent / "report" / "report.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
Validate = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def validate_report(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """``doc``, after checking it against the report's JSON Schema (AssertionError with the first
    ten problems otherwise)."""
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        raise AssertionError(
            "report does not match report.schema.json:\n"
            + "\n".join(f"  at {'/'.join(map(str, e.path)) or '<root>'}: {e.message}" for e in errors[:10])
        )
    typed: ReportDocument = orjson.loads(orjson.dumps(doc))
    again = dict(to_document(AnalysisReport.from_document(typed)))
    # the verdict is derived: from the rounded numbers its own may differ in the last digit
    verdict, doc_verdict = again.pop("verdict"), doc["verdict"]
    assert again == {k: v for k, v in doc.items() if k != "verdict"}, "the typed model does not read the report back"
    assert (verdict["status"], verdict["passed"], [loss["code"] for loss in verdict["losses"]]) == (
        doc_verdict["status"],
        doc_verdict["passed"],
        [loss["code"] for loss in doc_verdict["losses"]],
    )
    return doc


def assert_round_trip(report: AnalysisReport) -> None:
    """The report is its own document read back, in memory and through JSON."""
    doc = report.to_document()
    assert AnalysisReport.from_document(doc) == report
    assert AnalysisReport.from_document(orjson.loads(orjson.dumps(doc))) == report


@pytest.fixture
def validated() -> Validate:
    return validate_report


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present")
    return CORPUS
