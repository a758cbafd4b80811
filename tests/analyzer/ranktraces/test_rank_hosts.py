"""Rank -> host from the job's NCCL logs: in the straggler finding, its advice and the rank table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.nccl.model import NcclModel
from analyzer.nccl.ranks import RankPlace, rank_places
from sample_traces.generator.nccl import NcclLogSpec, write_nccl_log
from tests.conftest import ROOT

STRAGGLER = ROOT / "sample_traces" / "synthetic" / "straggler_nocache" / "timeline.json"  # 8 ranks, rank 5 late


def _report(folder: Path) -> dict[str, Any]:
    res = CliRunner().invoke(cli, ["report", "-f", "json", str(folder)])
    assert res.exit_code == 0, res.output
    return dict(json.loads(res.stdout))


def _run(tmp_path: Path, spec: NcclLogSpec | None) -> dict[str, Any]:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(STRAGGLER, run / "timeline.json")
    if spec is not None:
        write_nccl_log(run / "job.log", spec)
    return _report(run)


def test_the_late_rank_is_named_with_its_host_and_process(tmp_path: Path) -> None:
    doc = _run(tmp_path, NcclLogSpec(hosts=2, gpus_per_host=4))  # ranks 4-7 on gpu-node-001
    f = next(f for f in doc["findings"] if f["code"] == "timeline.straggler")
    assert f["ranks"] == [5] and f["hosts"] == ["gpu-node-001"]
    assert f["title"].startswith("Rank 5 (gpu-node-001) is late")
    assert "on gpu-node-001, pid " in f["suggestions"][0]["action"] and "horovodrun --verbose" not in str(f)
    assert f["suggestions"][1]["action"].startswith("If host gpu-node-001 is degraded")
    hosts = {r["rank"]: r["host"] for r in doc["timeline"]["ranks"]["ranks"]}
    assert hosts == {r: f"gpu-node-00{r // 4}" for r in range(8)}


def test_logs_of_another_world_size_map_nothing(tmp_path: Path) -> None:
    doc = _run(tmp_path, NcclLogSpec(hosts=2, gpus_per_host=8))  # 16 ranks: not this 8-rank job's numbering
    f = next(f for f in doc["findings"] if f["code"] == "timeline.straggler")
    assert f["hosts"] == [] and "horovodrun --verbose" in f["suggestions"][0]["action"]
    assert all(r["host"] is None for r in doc["timeline"]["ranks"]["ranks"])


def test_without_logs_the_advice_says_how_to_find_the_host(tmp_path: Path) -> None:
    f = next(f for f in _run(tmp_path, None)["findings"] if f["code"] == "timeline.straggler")
    assert f["hosts"] == [] and "map rank to host with horovodrun --verbose" in f["suggestions"][0]["action"]


def _comm_ranks(rows: list[tuple[int, int, str, int]]) -> NcclModel:
    df = pd.DataFrame(rows, columns=["rank", "nranks", "host", "pid"]).assign(file="job.log")
    return NcclModel({"nccl_comm_ranks": df})


def test_a_rank_two_processes_claim_is_left_out() -> None:
    model = _comm_ranks([(0, 2, "a", 1), (1, 2, "b", 2), (1, 2, "c", 3), (0, 4, "z", 9)])
    assert rank_places(model, 2) == {0: RankPlace("a", 1, "job.log")}  # rank 1: two jobs' logs mixed
    assert rank_places(model, 3) == {}


def test_every_rank_level_finding_names_the_hosts(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(ROOT / "sample_traces" / "synthetic" / "slowdown_rank_late" / "timeline.json", run / "timeline.json")
    write_nccl_log(run / "job.log", NcclLogSpec(hosts=2, gpus_per_host=2))  # 4 ranks, as the timeline
    slowdown = next(f for f in _report(run)["findings"] if f["code"] == "timeline.slowdown")
    assert slowdown["ranks"] == [2] and slowdown["hosts"] == ["gpu-node-001"]
