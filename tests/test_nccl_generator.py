"""The NCCL log generator: every wording parses back to the facts it was written with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from parsers.nccl.wording import parse_version
from sample_traces.generator.nccl import WORDINGS, NcclLogSpec, write_nccl_log


def _report(paths: list[Path]) -> dict[str, Any]:
    with temporary_store() as store:
        store.ingest(*discover(paths))
        return to_document(analyze(store))


def _key(v: str) -> tuple[int, int, int]:
    return (int(v.split(".")[0]), 99, 99) if v.endswith(".x") else parse_version(v)


@pytest.mark.parametrize("wording", sorted(WORDINGS))
def test_every_wording_parses_back(tmp_path: Path, wording: str) -> None:
    spec = NcclLogSpec(hosts=2, gpus_per_host=2, wording=wording, collectives=3)
    doc = _report(write_nccl_log(tmp_path / "job.log", spec))
    n = doc["nccl"]
    assert {v["version"] for v in n["versions"]} == {spec.version}
    procs = n["processes"]
    assert sorted((p["host"], p["pid"]) for p in procs) == [(f"gpu-node-00{r // 2}", 20000 + r) for r in range(4)]
    v = parse_version(spec.version)
    for p in procs:  # the wording of every process allows the version that wrote it
        lo, hi = p["version_range"]
        assert _key(lo) <= v <= _key(hi), (wording, p["version_range"])
        assert p["network"] == "IB" and p["init_complete"]
    assert {t for p in procs for t in p["transports"]} == {
        "NET/IB/GDRDMA",
        "P2P/IPC" if wording == "2.4" else "P2P/IPC/read",
    }
    assert [c["ranks_complete"] for c in n["communicators"]] == [[0, 1, 2, 3]]
    assert doc["findings"] == []


def test_mismatched_host_roce_and_per_rank_files(tmp_path: Path) -> None:
    spec = NcclLogSpec(hosts=2, gpus_per_host=2, link="RoCE", mismatch_host=1, gdr=False)
    files = write_nccl_log(tmp_path / "logs", spec, per_rank=True)
    assert [f.name for f in files] == [
        "gpu-node-000.20000.log",
        "gpu-node-000.20001.log",
        "gpu-node-001.20002.log",
        "gpu-node-001.20003.log",
    ]
    doc = _report(files)
    codes = {f["code"]: f for f in doc["findings"]}
    assert set(codes) == {"nccl.version_mismatch", "nccl.no_gdrdma"}
    assert codes["nccl.version_mismatch"]["severity"] == "critical"  # 2.19.3 and 2.17.1 both printed
    assert {h for p in doc["nccl"]["processes"] for h in p["ib_hcas"]} == {"mlx5_0:1/RoCE", "mlx5_1:1/RoCE"}
    assert {p["file"] for p in doc["nccl"]["processes"]} == {str(f) for f in files}
