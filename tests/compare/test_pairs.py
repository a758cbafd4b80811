"""The committed before/after captures (sample_traces/compare/) compared as their EXPECTED.md says,
and ``hvd-analyze compare`` as a user runs it: formats, the JSON Schema, exit codes, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

import analyzer
from analyzer.cli import cli
from sample_traces.capture.pairs import PAIRS, expected_md
from tests.conftest import ROOT

PAIRS_DIR = ROOT / "sample_traces" / "compare"
CAPTURED = ROOT / "sample_traces" / "captured"
STABILITY = ROOT / "sample_traces" / "stability"
SCHEMA = json.loads((Path(analyzer.__file__).parent / "compare" / "compare.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _compare(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, ["compare", *map(str, args)])
    return res.exit_code, res.stdout, res.stderr


def _json(before: Path, after: Path, *more: str) -> dict[str, Any]:
    code, out, err = _compare(str(before), str(after), "-f", "json", *more)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    errors = list(VALIDATOR.iter_errors(doc))
    assert not errors, errors[:3]
    return doc


def test_every_pair_is_committed_with_its_expected_md() -> None:
    assert sorted(p.name for p in PAIRS_DIR.iterdir() if p.is_dir()) == sorted(PAIRS)
    for name, pair in PAIRS.items():
        assert (PAIRS_DIR / name / "EXPECTED.md").read_text() == expected_md(name, pair)
        for side in ("before", "after"):
            assert (PAIRS_DIR / name / side / "timeline.json").exists() or (
                PAIRS_DIR / name / side / "timeline.json.gz"
            ).exists()


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_a_pair_compares_as_expected(name: str) -> None:
    pair = PAIRS[name]
    doc = _json(PAIRS_DIR / name / "before", PAIRS_DIR / name / "after")
    steps = doc["steps"]
    assert steps["direction"] == pair.direction, doc["headline"]
    assert steps["significant"] is (pair.direction != "unchanged")
    verdicts = {
        r["code"]: r["verdict"] for r in doc["fix_check"] if r["trigger"] in ("setting applied", "finding resolved")
    }
    assert verdicts == pair.fix, doc["fix_check"]
    assert doc["lateness"]["stopped_being_late"] == list(pair.stopped_being_late)
    assert doc["headline"].startswith("AFTER is " if pair.direction != "unchanged" else "No significant change")


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (CAPTURED / "healthy_np2", STABILITY / "healthy_np2" / "r2"),
        (CAPTURED / "healthy_np2", STABILITY / "healthy_np2" / "r3"),
        (STABILITY / "healthy_np2" / "r2", STABILITY / "healthy_np2" / "r3"),
        (CAPTURED / "healthy_np4", STABILITY / "healthy_np4" / "r2"),
        (CAPTURED / "healthy_np4", STABILITY / "healthy_np4" / "r3"),
    ],
    ids=["np2-r2", "np2-r3", "np2-r2-r3", "np4-r2", "np4-r3"],
)
def test_captures_of_one_healthy_job_taken_apart_are_no_regression(before: Path, after: Path) -> None:
    """Captured in different sessions (medians up to 60% apart on this shared 2-core box): noise."""
    doc = _json(before, after)
    assert (doc["steps"]["direction"], doc["steps"]["significant"]) == ("unchanged", False), doc["headline"]
    assert not [r for r in doc["fix_check"] if r["trigger"] == "setting applied"]


def test_a_run_compared_with_itself_changes_nothing() -> None:
    run = PAIRS_DIR / "straggler_removed" / "before"
    doc = _json(run, run)
    assert doc["steps"]["mann_whitney_p"] == 1.0 and doc["steps"]["median"]["delta_ms"] == 0
    assert {f["change"] for f in doc["findings"]} == {"persisting"}
    assert all(c["changed"] == "no" for c in doc["settings"])
    assert not [r for r in doc["fix_check"] if r["trigger"] in ("setting applied", "finding resolved")]


def test_the_formats_tell_the_same_story() -> None:
    pair = PAIRS_DIR / "cycle_default"
    code, text, _ = _compare(pair / "before", pair / "after")
    assert code == 0 and "AFTER is faster" in text and "Fix check:" in text and "as predicted" in text
    code, md, _ = _compare(pair / "before", pair / "after", "-f", "md")
    assert md.startswith("# hvd-analyze compare") and "| timeline.cycle_time_high | setting applied |" in md
    code, html, _ = _compare(pair / "before", pair / "after", "-f", "html")
    assert "<svg" in html and "id='fix-check'" in html and "<script" not in html


def test_output_format_from_the_extension(tmp_path: Path) -> None:
    pair = PAIRS_DIR / "healthy_again"
    out = tmp_path / "c.json"
    code, _, err = _compare(pair / "before", pair / "after", "-o", str(out))
    assert code == 0, err
    assert json.loads(out.read_text())["tool"] == "hvd-analyze"
    code, _, err = _compare(pair / "before", pair / "after", "-o", str(tmp_path / "c.pdf"))
    assert code == 2 and "cannot tell the format" in err


def test_fail_on_regression_exits_1_when_after_is_slower() -> None:
    pair = PAIRS_DIR / "straggler_removed"
    code, _, err = _compare(pair / "after", pair / "before", "--fail-on-regression")
    assert code == 1 and "significantly slower" in err and "timeline.straggler" in err
    code, _, _ = _compare(pair / "before", pair / "after", "--fail-on-regression")
    assert code == 0


def test_declared_settings_and_bad_arguments(tmp_path: Path) -> None:
    pair = PAIRS_DIR / "fusion_default"
    doc = _json(pair / "before", pair / "after", "--after-set", "HOROVOD_FUSION_THRESHOLD=134217728")
    assert {r["setting_status"]["HOROVOD_FUSION_THRESHOLD"] for r in doc["fix_check"]} == {"declared"}
    code, _, err = _compare(pair / "before", pair / "after", "--after-set", "HOROVOD_FUSION_THRESHOLD")
    assert code == 2 and "expected NAME=VALUE" in err
    code, _, err = _compare(pair / "before", tmp_path / "missing")
    assert code == 2 and "AFTER" in err and "no such file" in err
    (tmp_path / "notes.txt").write_text("hello\n")
    code, _, err = _compare(pair / "before", tmp_path)
    assert code == 2 and "nothing to analyse" in err
    code, _, err = _compare(pair / "before", pair / "after", "--before-job", "nope")
    assert code == 2 and "no job 'nope'" in err and "before" in err


def test_a_lower_effect_bar_calls_a_smaller_shift_a_change() -> None:
    """The captures of healthy_np2 taken apart: a small effect (Cliff's delta 0.46) is noise by default
    and a regression for a user whose machines are quiet enough to lower the bar."""
    before, after = CAPTURED / "healthy_np2", STABILITY / "healthy_np2" / "r2"
    assert _json(before, after)["steps"]["direction"] == "unchanged"
    doc = _json(before, after, "--min-effect", "0.33")
    assert (doc["steps"]["direction"], doc["steps"]["significant"]) == ("slower", True)
    assert "0.33" in doc["steps"]["rule"]


SYNTHETIC = ROOT / "sample_traces" / "synthetic"


def test_nccl_changes_per_host_and_new_errors() -> None:
    """IB with GPUDirect RDMA before, TCP sockets after: per host, the network, transports and GDRDMA
    changed, and the hosts only one run has are named; an IB error only the second run has is new."""
    doc = _json(SYNTHETIC / "nccl_healthy_ib", SYNTHETIC / "nccl_socket_fallback")
    changes = {(c["host"], c["field"]): (c["before"], c["after"]) for c in doc["nccl"]["changes"]}
    assert changes[("gpu-node-000", "network")] == (["IB"], ["Socket"])
    assert changes[("gpu-node-001", "gdrdma")] == (["on"], ["off"])
    assert changes[("gpu-node-003", "present")] == (["no"], ["yes"])
    assert "nccl.socket_fallback" in {f["code"] for f in doc["findings"] if f["change"] == "new"}
    failed = _json(SYNTHETIC / "nccl_healthy_ib", SYNTHETIC / "nccl_init_failure")
    assert [(e["error_class"], e["change"]) for e in failed["nccl"]["errors"]] == [("ib_completion_error", "new")]
    assert failed["steps"]["direction"] == "unknown" and failed["headline"].startswith("Cannot tell")


def test_nccl_env_echoes_are_settings_the_run_shows() -> None:
    doc = _json(SYNTHETIC / "nccl_healthy_ib", SYNTHETIC / "nccl_ib_disabled")
    row = next(s for s in doc["settings"] if s["name"] == "NCCL_IB_DISABLE")
    assert row["before"] is None and row["after"] == {"text": "1", "source": "nccl log"}
    assert row["changed"] == "unknown"  # the first run's logs do not say
