"""Acceptance on the further real NCCL logs of ../shared/corpus/nccl-more and nccl-more2 (35 each, their
expected.json).

Each file is ingested alone and analysed. The report must state exactly the file's NCCL
versions (whoever printed them), the hosts of its record headers, the transports it shows in
use (those an expert calls uncertain may be reported or not), whether any Init COMPLETE is
visible, and the classes of its real errors (``watchdog_timeout`` and ``version_mismatch`` stand
for those findings). Files the analyzer does not get right yet are listed in KNOWN_GAPS with the
reason, as strict expected failures: fixing one makes its test fail until it is removed here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from tests.conftest import CORPUS, validate_report

FOLDERS = (CORPUS / "nccl-more", CORPUS / "nccl-more2")
#: file name -> its folder, for every file an expected.json describes (the two sets' numbers do not overlap)
WHERE: dict[str, Path] = {}
EXPECTED: dict[str, dict[str, Any]] = {}
for _folder in FOLDERS:
    if (_folder / "expected.json").is_file():
        for _name, _want in json.loads((_folder / "expected.json").read_text()).items():
            WHERE[_name], EXPECTED[_name] = _folder, _want
KNOWN_GAPS: dict[str, str] = {
    "207": "an expert reads 'Could not find a path for pattern 4, falling back to simple order' as a topology "
    "error; the catalogue marks it benign (NCCL goes on with a simple ring order) and no finding reports it",
    "217": "expects the proxy's 'Failed to execute operation Connect' consequences as a class of their own "
    "(system_error); the report folds them under the root cause, ibv_setup_failure",
    "222": "expects the proxy's 'Socket recv failed' consequence as system_error of its own; the report keeps "
    "shm_exhausted as the root cause and reads the WARN as a peer that exited",
}


def _transports(nccl: dict[str, Any]) -> set[str]:
    out = set()
    for p in nccl["processes"]:
        net = p["network"] or ""
        details = list(p["transports"])
        out |= {"IB"} if net.startswith("IB") or any(t.startswith("NET/IB") for t in details) else set()
        out |= {"Socket"} if net == "Socket" or any(t.startswith("NET/Socket") for t in details) else set()
        out |= {"Libfabric"} if "Libfabric" in net or any("Libfabric" in t for t in details) else set()
        out |= {"P2P"} if any(t.startswith("P2P") for t in details) else set()
        out |= {"SHM"} if any(t.startswith("SHM") for t in details) else set()
        out |= {"NVLS"} if any("NVLS" in t for t in details) else set()
        out |= {"CollNet"} if any("COLLNET" in t.upper() for t in details) else set()
        out |= {"GDRDMA"} if p["gdrdma"] or any("GDRDMA" in t for t in details) else set()
    return out


def facts(doc: dict[str, Any]) -> dict[str, Any]:
    """The expected.json fields, read off a JSON report."""
    n = doc["nccl"] or {"processes": [], "versions": [], "communicators": []}
    base = re.compile(r"\d+\.\d+\.\d+")
    versions = {m.group(0) for v in n["versions"] if (m := base.match(v["version"]))}
    versions |= {m.group(0) for p in n["processes"] if p["version"] and (m := base.match(p["version"]))}
    classes = set()
    for f in doc["findings"]:
        if f["code"] == "nccl.error":
            classes.add(f["labels"]["class"])
        elif f["code"] in ("nccl.watchdog_timeout", "nccl.version_mismatch"):
            classes.add(f["code"].split(".", 1)[1])
        elif f["code"] == "horovod.stall":
            classes.add("horovod_stall")
    return {
        "versions": versions,
        "hosts": {p["host"] for p in n["processes"] if p["host"]},
        "transports": _transports(n),
        "init_complete": any(c["ranks_complete"] for c in n["communicators"])
        or any(p["init_complete"] for p in n["processes"]),
        "error_classes": classes,
    }


def _cases() -> list[Any]:
    return [
        pytest.param(
            name,
            id=name.split("-")[0],
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[name[:3]])] if name[:3] in KNOWN_GAPS else [],
        )
        for name in sorted(EXPECTED)
    ]


@pytest.mark.corpus
@pytest.mark.parametrize("name", _cases())
def test_nccl_more_log_facts(corpus: Path, name: str) -> None:
    expected = EXPECTED[name]
    with temporary_store() as store:
        store.ingest(*discover([WHERE[name] / name]))
        doc = dict(validate_report(to_document(analyze(store))))
    got = facts(doc)
    uncertain = set(expected.get("uncertain_transports", []))
    assert got["versions"] == set(expected["versions"])
    assert got["hosts"] == set(expected["hosts"])
    assert got["transports"] - uncertain == set(expected["transports"]) - uncertain
    assert got["init_complete"] == expected["init_complete"]
    assert got["error_classes"] == set(expected["error_classes"])
    for benign in expected.get("benign_warns", []):  # a harmless WARN is never a critical finding's cause
        critical = [f for f in doc["findings"] if f["severity"] == "critical"]
        assert not any(benign in e["summary"] for f in critical for e in f["evidence"]), benign


def test_known_gaps_name_real_files() -> None:
    if not EXPECTED:
        pytest.skip("../shared/corpus/nccl-more and nccl-more2 are not present")
    assert set(KNOWN_GAPS) <= {name[:3] for name in EXPECTED}
