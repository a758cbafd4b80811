"""A job's per-rank traces analysed: who is late, what is missing, whose clock is where."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from analyzer.report.assembly import analyze
from analyzer.report.model import AnalysisReport
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from tests.rank_builders import gloo_rank, kineto_text, write_job


def _report(*paths: Path) -> AnalysisReport:
    with temporary_store() as store:
        store.ingest(*discover(list(paths)))
        return analyze(store)


def _codes(report: AnalysisReport) -> set[str]:
    return {f.code for f in report.findings}


def test_a_late_rank_is_named_with_its_host(tmp_path: Path) -> None:
    write_job(tmp_path / "job", {2: 25_000})
    report = _report(tmp_path / "job")
    (f,) = [f for f in report.findings if f.code == "traces.straggler"]
    assert f.ranks == (2,) and f.hosts == ("node1",) and f.labels["rank2_when"] == "every_step"
    assert f.impact is not None and abs(f.impact.seconds_per_step - 0.025) < 0.004
    (section,) = report.rank_traces
    assert [r["named"] for r in section["ranks"]] == [False, False, True, False]
    assert report.verdict()["status"] == "degraded" and report.verdict()["median_step_ms"]


def test_healthy_ranks_are_not_blamed_and_the_check_passes(tmp_path: Path) -> None:
    write_job(tmp_path / "job", {})
    report = _report(tmp_path / "job")
    assert "traces.straggler" not in _codes(report)
    verdict = report.verdict()
    assert verdict["status"] == "healthy" and any("own trace" in p for p in verdict["passed"])


def test_every_rank_slower_blames_nobody(tmp_path: Path) -> None:
    write_job(tmp_path / "job", {r: 20_000 for r in range(4)})
    assert "traces.straggler" not in _codes(_report(tmp_path / "job"))


def test_a_partial_set_names_the_ranks_without_a_trace(tmp_path: Path) -> None:
    paths = write_job(tmp_path / "job", {1: 25_000}, world=8)
    for p in paths[4:]:
        p.unlink()  # write_job wrote 8: keep 4
    report = _report(tmp_path / "job")
    (note,) = [f for f in report.findings if f.code == "traces.incomplete"]
    assert note.ranks == (4, 5, 6, 7) and "4 of 8" in note.title
    assert [f.ranks for f in report.findings if f.code == "traces.straggler"] == [(1,)]


def test_a_rank_traced_twice_is_read_once(tmp_path: Path) -> None:
    paths = write_job(tmp_path / "job", {})
    shutil.copy(paths[0], tmp_path / "job" / "copy_of_rank0.pt.trace.json")
    (tmp_path / "job" / "copy_of_rank0.pt.trace.json").write_text(paths[0].read_text() + " ")  # other bytes
    report = _report(tmp_path / "job")
    (section,) = report.rank_traces
    assert len(section["ranks"]) == 4 and len(section["duplicates"]) == 1
    assert any(f.code == "traces.incomplete" and "twice" in f.summary for f in report.findings)


def test_a_rank_that_skips_a_collective_is_a_hang_signature(tmp_path: Path) -> None:
    paths = write_job(tmp_path / "job", {})
    g = gloo_rank(3, steps=12)
    g["events"] = [
        e for e in g["events"] if not (e["name"] == "gloo:all_reduce" and e["args"]["External id"] == 1000 + 4 * 2 + 1)
    ]
    paths[3].write_text(kineto_text(g["header"], g["events"]))
    report = _report(tmp_path / "job")
    (f,) = [f for f in report.findings if f.code == "traces.incomplete"]
    assert f.ranks == (3,) and f.severity.label == "warning" and "hang" in f.title


def test_host_clock_offsets_come_from_collective_ends(tmp_path: Path) -> None:
    """Two hosts whose clocks are 2.5 s apart: the offset is measured, and the lateness (from waits
    on each rank's own clock) names the late rank all the same."""
    folder = tmp_path / "job"
    folder.mkdir()
    for r in range(4):
        g = gloo_rank(r, steps=12, late_us=25_000 if r == 3 else 0)
        if g["header"]["host_name"] == "node1":
            g["header"]["baseTimeNanoseconds"] += 2_500_000_000
        (folder / f"rank{r}.1.pt.trace.json").write_text(json.dumps({**g["header"], "traceEvents": g["events"]}))
    report = _report(folder)
    (section,) = report.rank_traces
    assert abs(section["clock_offsets_ms"]["node1"] - 2500) < 5 and section["clock_offsets_ms"]["node0"] == 0
    assert [f.ranks for f in report.findings if f.code == "traces.straggler"] == [(3,)]


def test_traces_beside_a_timeline_are_its_job(tmp_path: Path) -> None:
    from tests.builders import B, E, glued, meta

    write_job(tmp_path / "run" / "traces", {})
    (tmp_path / "run" / "timeline.json").write_text(
        glued(meta(1, "grad"), B("NEGOTIATE_ALLREDUCE", 10, 1), E(20, 1), B("ALLREDUCE", 20, 1), E(30, 1))
    )
    report = _report(tmp_path / "run")
    (job,) = report.jobs
    assert len(job["traces"]) == 4 and len(job["timelines"]) == 1


def test_traces_of_another_world_size_are_another_jobs(tmp_path: Path) -> None:
    write_job(tmp_path / "job", {1: 25_000})
    g = gloo_rank(0, steps=12, world=2)
    (tmp_path / "job" / "other.1.pt.trace.json").write_text(kineto_text(g["header"], g["events"]))
    report = _report(tmp_path / "job")
    (section,) = report.rank_traces
    assert len(section["ranks"]) == 4 and [Path(f).name for f in section["other_jobs"]] == ["other.1.pt.trace.json"]
    assert [f.ranks for f in report.findings if f.code == "traces.straggler"] == [(1,)]


def test_the_hosts_come_from_the_nccl_logs_when_the_traces_name_none(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    lines = []
    for r in range(4):
        g = gloo_rank(r, steps=12, late_us=25_000 if r == 2 else 0)
        del g["header"]["host_name"]
        (folder / f"rank{r}.1.pt.trace.json").write_text(kineto_text(g["header"], g["events"]))
        lines.append(f"gpu{r}:{100 + r}:{100 + r} [0] NCCL INFO NCCL version 2.18.3+cuda12.1")
        lines.append(
            f"gpu{r}:{100 + r}:{100 + r} [0] NCCL INFO comm 0x5{r} rank {r} nranks 4 cudaDev 0 busId 1000 "
            "commId 0xabc - Init COMPLETE"
        )
    (folder / "nccl.log").write_text("\n".join(lines) + "\n")
    report = _report(folder)
    (f,) = [f for f in report.findings if f.code == "traces.straggler"]
    assert f.ranks == (2,) and f.hosts == ("gpu2",)


def test_a_rank_in_several_files_is_one_rank(tmp_path: Path) -> None:
    """A profiler schedule with ``repeat`` writes each window to a file of its own: one rank's steps are
    read from all of them, and the straggler is judged over every step."""
    folder = tmp_path / "job"
    folder.mkdir()
    for r in range(4):
        for window in range(2):
            g = gloo_rank(r, steps=6, late_us=25_000 if r == 1 else 0, first=6 * window)
            name = f"rank{r}.{1795831457178876761 + window}.pt.trace.json"
            (folder / name).write_text(kineto_text(g["header"], g["events"]))
    report = _report(folder)
    (section,) = report.rank_traces
    assert [r["steps"] for r in section["ranks"]] == [12] * 4 and not section["duplicates"]
    assert [f.ranks for f in report.findings if f.code == "traces.straggler"] == [(1,)]
