"""Trust on first use, over every real file of ``../shared/corpus`` (skipped when it is absent).

Each file is given to ``report`` alone, and each corpus folder to ``batch``, as a new user would. None
may end in an internal error (exit 3), and no report may contradict itself: a check listed as passed
must have its evidence in the same report and agree with every finding beside it. The contradiction
rules here are written from the report's own sections, independently of how the verdict decides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from analyzer.cli import cli
from analyzer.cli.options import INTERNAL_ERROR
from tests.conftest import CORPUS, validate_report

NOT_INPUTS = {".md", ".py", ".sh"}
FOLDERS = sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []


def _files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix not in NOT_INPUTS and p.name not in {"expected.json", "EXPECTED.md"}
    )


def contradictions(doc: Mapping[str, Any]) -> list[str]:
    """What a report says twice and differently: checks passed that its own findings or sections deny."""
    v = doc["verdict"]
    passed = set(v["passed"])
    codes = {f["code"] for f in doc["findings"]}
    out: list[str] = []

    def denied(check: str, why: str) -> None:
        if any(p.startswith(check) for p in passed):
            out.append(f"{check!r} passed, but {why}")

    if v["status"] == "healthy" and not passed:
        out.append("healthy without one check passed on evidence")
    if v["status"] == "healthy" and any(f["severity"] != "info" for f in doc["findings"]):
        out.append("healthy with a warning or worse")
    waiting = [f for f in doc["findings"] if f["code"] in ("timeline.straggler", "timeline.negotiation_wait")]
    if waiting:
        denied("waiting for other ranks is a small share of the step", f"{waiting[0]['code']} says otherwise")
        denied("no rank is consistently the last one ready", f"{waiting[0]['code']} names one")
    if "timeline.slowdown" in codes:
        denied("step time holds steady", "timeline.slowdown fired")
    timeline = doc["timeline"]
    ranks = len(timeline["ranks"]["ranks"]) if timeline else 0
    if ranks < 2:
        for check in ("the ranks started together", "tensor fusion works", "no rank is consistently"):
            denied(check, f"the timeline shows {ranks} rank(s)")
    if timeline is not None:
        facts = next(i["timeline"] for i in doc["inputs"] if i["id"] == timeline["input_id"])
        if facts["status"] != "closed":
            denied("the timeline is complete", f"the timeline is {facts['status']}")
    procs = doc["nccl"]["processes"] if doc["nccl"] else []
    nets = {p["network"] for p in procs}
    if not procs or None in nets or "Socket" in nets:
        denied("no process fell back to TCP sockets", f"the networks read are {sorted(map(str, nets))}")
    if not any(p["network"] not in (None, "Socket") for p in procs):
        denied("no InfiniBand process runs without GPUDirect RDMA", "no process runs on an RDMA network")
    versions = {p["version"] for p in procs if p["version"]}
    if len(versions) != 1 or len([p for p in procs if p["version"]]) < 2:
        denied("every process runs the same NCCL version", f"the versions read are {sorted(versions)}")
    if "nccl.watchdog_timeout" in codes:
        denied("no NCCL error", "a collective timed out")
    top = v["headline"]
    if "…" not in top and top.rstrip(")").endswith((" opcode", " the", " of", " a")):
        out.append(f"headline cut mid-sentence: {top!r}")
    return out


def _invoke(*args: str) -> Result:
    """The command in-process; an exception that escapes it is what ``main`` turns into exit 3."""
    res = CliRunner().invoke(cli, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"internal error (exit {INTERNAL_ERROR}) on {args}: {res.exception!r}") from res.exception
    return res


def _report(path: Path) -> tuple[int, dict[str, Any] | None, str]:
    res = _invoke("report", "-q", "-f", "json", str(path))
    doc = json.loads(res.stdout) if res.exit_code in (0, 1) else None
    return res.exit_code, doc, res.stderr if res.exit_code else ""


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_corpus_file_reports_without_a_crash_or_a_contradiction(folder: Path) -> None:
    problems = []
    for path in _files(folder):
        code, doc, err = _report(path)
        assert code != INTERNAL_ERROR, f"{path}: {err}"
        if code == 2:
            assert err.startswith("hvd-analyze: error: ") and "Traceback" not in err, f"{path}: {err}"
            assert str(path) in err, f"{path}: the message does not name the file: {err}"
            continue
        assert doc is not None
        validate_report(doc)
        problems += [f"{path.relative_to(CORPUS)}: {c}" for c in contradictions(doc)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_batch_over_every_corpus_folder_writes_its_summary(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = _invoke("batch", str(folder), "-o", str(out), "-j", "1", "--allow-failures")
    assert res.exit_code != INTERNAL_ERROR, res.output
    if res.exit_code == 0:
        fleet = json.loads((out / "fleet.json").read_text())["fleet"]
        assert not [r for r in fleet["failed"] if r["internal"]], fleet["failed"]
        assert (out / "fleet.md").is_file() and fleet["analysed"] >= 1
    else:  # a folder that is one run, or of no run at all: said, with the command to use
        assert res.exit_code == 2 and "hvd-analyze: error:" in res.output, res.output
