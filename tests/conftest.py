"""Shared fixtures.

* ``corpus``: ``../shared/corpus`` next to the checkout; tests that need it skip cleanly
  when it is absent.
* ``validated``: checks a JSON report against ``analyzer/report/report.schema.json`` (the
  schema generated from :mod:`analyzer.report.types`) and returns it; every test that makes
  JSON reports passes them through it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import analyzer

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
    return doc


@pytest.fixture
def validated() -> Validate:
    return validate_report


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present")
    return CORPUS
