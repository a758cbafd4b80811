"""``timeline.truncated``: fires on lost content, stays silent on complete files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzer.detectors import ALL_DETECTORS
from analyzer.errors import NothingAnalysable
from analyzer.findings import Severity
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import RunStore
from sample_traces.generator.timeline import TimelineSpec, write_timeline
from tests.builders import B, E, glued, meta, write
from tests.conftest import ROOT

SAMPLES = ROOT / "sample_traces" / "synthetic"


def _report(tmp_path: Path, *paths: Path):
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover(list(paths)))
    return analyze(store)


def test_cut_generated_timeline_is_reported_with_counts(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    write_timeline(path, TimelineSpec(ranks=4, tensors=6, steps=5, truncate_at=0.73))
    report = _report(tmp_path, path)
    (f,) = [f for f in report.findings if f.code == "timeline.truncated"]
    assert f.severity is Severity.WARNING
    codes = {e.summary.split(" x")[0] for e in f.evidence}
    assert {"timeline.truncated_record", "timeline.unclosed_spans"} <= codes
    assert "a record cut by the end of the file" in f.summary and "spans whose E never came" in f.summary
    assert all(s.file == str(path) and s.byte_offset is not None for e in f.evidence for s in e.sources)
    assert f.suggestions and "hvd.stop_timeline()" in f.suggestions[0].action


def test_complete_timelines_produce_no_finding(tmp_path: Path) -> None:
    ok = write(tmp_path, glued(meta(1, "t"), B("ALLREDUCE", 1, 1), E(2, 1)))
    gen = tmp_path / "gen.json"
    write_timeline(gen, TimelineSpec(ranks=2, tensors=3, steps=2))
    report = _report(tmp_path, ok, gen)
    assert [f for f in report.findings if f.code == "timeline.truncated"] == []
    # only the log and per-rank trace detectors, for lack of logs and traces
    assert all("log" in s.reason or "profiler trace" in s.reason for s in report.skipped)


def test_skipped_with_reason_when_no_timeline(tmp_path: Path) -> None:
    report = _report(tmp_path, SAMPLES / "nccl_healthy_ib" / "job.log")
    timeline = [s for s in report.skipped if "timeline" in s.reason]
    assert all("no Horovod timeline" in s.reason for s in timeline)
    assert {s.detector for s in timeline} == {d.name for d in ALL_DETECTORS if "spans" in d.requires}
    assert not [f for f in report.findings if f.code == "timeline.truncated"]
    assert "the timeline is complete: no step after its end is missing" not in report.verdict()["passed"]


def test_a_store_without_inputs_is_nothing_to_analyse_not_healthy(tmp_path: Path) -> None:
    with pytest.raises(NothingAnalysable, match="nothing to analyse in the run store .*: no input"):
        analyze(RunStore.create_or_open(tmp_path / "store"))


def test_e1_sigkill_run(corpus: Path, tmp_path: Path) -> None:
    e1 = corpus / "horovod-cpu" / "e1_killed_sigkill_whole_job_np2" / "timeline.json"
    a1 = corpus / "horovod-cpu" / "a1_baseline_mlp_np2" / "timeline.json"
    report = _report(tmp_path, e1, a1)
    cut = [f for f in report.findings if f.code == "timeline.truncated"]
    assert [f.evidence[0].sources[0].file for f in cut] == [str(e1)]
    assert cut[0].evidence[0].metrics["count"] == 1


def _without_last_ends(path: Path, k: int) -> None:
    """Drop the last ``k`` records (E events) of a glued timeline and close it again: what Horovod
    0.28.1 leaves when its writer is not drained at exit."""
    text = path.read_text().rstrip().removesuffix("]")
    cut = len(text)
    for _ in range(k):
        cut = text.rindex(',{"ph": "E"', 0, cut)
    path.write_text(text[:cut] + "]")


def test_a_lost_writer_tail_is_info_and_a_cut_step_is_a_warning(tmp_path: Path) -> None:
    from analyzer.store.run_store import temporary_store

    def truncated(path: Path) -> Any:
        with temporary_store() as store:
            store.ingest(*discover([path]))
            return next(f for f in analyze(store).findings if f.code == "timeline.truncated")

    tail = tmp_path / "tail.json"
    write_timeline(tail, TimelineSpec(ranks=2, tensors=4, steps=6, cache=False))
    _without_last_ends(tail, 2)  # the last op of the last step never closed: every earlier step complete
    f = truncated(tail)
    assert f.severity is Severity.INFO and "writer's unflushed tail" in f.title
    cut = tmp_path / "cut.json"
    write_timeline(cut, TimelineSpec(ranks=2, tensors=4, steps=6, cache=False, truncate_at=0.6))
    f = truncated(cut)  # cut in the middle of the run: steps are missing
    assert f.severity is Severity.WARNING and "the end of the run is missing" in f.title
