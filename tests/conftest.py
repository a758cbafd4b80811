"""Shared fixtures.

* ``corpus``: ``../shared/corpus`` next to the checkout; tests that need it skip cleanly
  when it is absent.
* Every JSON report produced anywhere in the suite (through the JSON renderer, the CLI
  included) is validated against ``analyzer/report/report.schema.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import analyzer
from analyzer.render import jsonreport

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
SCHEMA = json.loads((Path(analyzer.__file__).parent / "report" / "report.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
VALIDATED: list[int] = []


def validate_report(doc: dict[str, Any]) -> None:
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        raise AssertionError("report does not match report.schema.json:\n" + "\n".join(
            f"  at {'/'.join(map(str, e.path)) or '<root>'}: {e.message}" for e in errors[:10]))
    VALIDATED.append(1)


@pytest.fixture(autouse=True, scope="session")
def _validate_every_report() -> Iterator[None]:
    original = jsonreport.to_document

    def checked(report: Any) -> dict[str, Any]:
        doc = original(report)
        validate_report(doc)
        return doc

    jsonreport.to_document = checked  # type: ignore[assignment]
    yield
    jsonreport.to_document = original  # type: ignore[assignment]


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present")
    return CORPUS
