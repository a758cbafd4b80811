"""Step segmentation, batches, lateness and the per-step table on inline blueprints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analyzer.context import Context
from analyzer.store.discovery import discover
from analyzer.store.run_store import RunStore
from analyzer.timeline.batches import estimate_threshold
from analyzer.timeline.lateness import rank_summary
from analyzer.timeline.model import TimelineModel
from tests.builders import B, E, X, glued, meta, write


def _model(tmp_path: Path, *records: str) -> TimelineModel:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = write(tmp_path, glued(*records))
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([path]))
    (model,) = Context(store).timelines()
    return model


def _step(t0: int, ranks_late: dict[int, int] | None = None, fuse: bool = True, ticks: bool = True) -> list[str]:
    """One step of two gradients (pids 1, 2) negotiated by 2 ranks, then reduced."""
    late = ranks_late or {}
    out = []
    for pid, off in ((1, 0), (2, 100)):
        t = t0 + off
        out.append(B("NEGOTIATE_ALLREDUCE", t, pid))
        if ticks:
            out += [X(0, t + late.get(0, 0), pid), X(1, t + 5 + late.get(1, 0), pid)]
        out.append(E(t + 10 + max(late.values(), default=0), pid))
    s = t0 + 1000 + max(late.values(), default=0)
    if fuse:
        out += [
            B("ALLREDUCE", s, 1),
            B("ALLREDUCE", s + 1, 2),
            B("MEMCPY_IN_FUSION_BUFFER", s + 2, 1),
            B("MEMCPY_IN_FUSION_BUFFER", s + 3, 2),
            E(s + 50, 1),
            E(s + 51, 2),
            B("NCCL_ALLREDUCE", s + 52, 1),
            B("NCCL_ALLREDUCE", s + 53, 2),
            E(s + 500, 1),
            E(s + 501, 2),
            E(s + 510, 1, "float32", "[256]"),
            E(s + 511, 2, "float32", "[1024, 1024]"),
        ]
    else:
        for pid in (1, 2):
            out += [
                B("ALLREDUCE", s, pid),
                B("NCCL_ALLREDUCE", s + 1, pid),
                E(s + 400, pid),
                E(s + 410, pid, "float32", "[256]"),
            ]
            s += 420
    return out


def _run(steps: int, period: int = 10_000, **kw: object) -> list[str]:
    records = [meta(1, "allreduce.b"), meta(2, "allreduce.w")]
    for k in range(steps):
        records += _step(1_000_000 + k * period, **kw)  # type: ignore[arg-type]
    return records


def test_steps_recur_and_durations_are_end_to_end(tmp_path: Path) -> None:
    m = _model(tmp_path, *_run(6))
    assert (m.segmentation.method, m.segmentation.confidence, m.segmentation.gradient_tensors) == (
        "recurrence",
        "high",
        2,
    )
    assert list(m.steps["step"]) == list(range(6))
    assert m.steps["duration_us"].isna().tolist() == [True] + [False] * 5
    assert (m.steps["duration_us"].dropna() == 10_000).all()
    assert m.median_step_us == 10_000
    first = m.steps.iloc[1]
    assert first["tensors"] == 2 and first["batches"] == 1 and first["bytes"] == (256 + 1024 * 1024) * 4
    assert first["comm_us"] == 511  # the two copies of the fused op count once
    assert first["negotiation_us"] == 20  # two 10 us negotiations; the gap between them is not counted
    assert first["wait_us"] == 10  # the last one to end (pid 2) waited 10 us for its last rank


def test_wait_us_is_the_last_negotiations_wait_for_the_late_rank(tmp_path: Path) -> None:
    m = _model(tmp_path, *_run(4, ranks_late={1: 300}))
    assert m.steps["wait_us"].tolist() == [310] * 4  # rank 1 ticks 300 us late: pid 2's negotiation ends last
    assert m.steps["negotiation_us"].tolist() == [410] * 4  # the union: pid 1 [0, 310) and pid 2 [100, 410)


def test_wait_us_is_the_negotiation_that_ends_last_not_the_longest(tmp_path: Path) -> None:
    records = [meta(1, "allreduce.b"), meta(2, "allreduce.w")]
    for k in range(4):
        t = 1_000_000 + k * 10_000
        records += [
            B("NEGOTIATE_ALLREDUCE", t, 1),
            X(0, t, 1),
            X(1, t + 500, 1),
            E(t + 500, 1),  # long, ends first
            B("NEGOTIATE_ALLREDUCE", t + 600, 2),
            X(0, t + 600, 2),
            X(1, t + 610, 2),
            E(t + 610, 2),
        ]
        for pid in (1, 2):
            s = t + 1000 + pid * 500
            records += [
                B("ALLREDUCE", s, pid),
                B("NCCL_ALLREDUCE", s + 1, pid),
                E(s + 400, pid),
                E(s + 410, pid, "float32", "[256]"),
            ]
    m = _model(tmp_path, *records)
    assert m.steps["wait_us"].tolist() == [10] * 4


def test_unfused_ops_are_separate_batches_and_threshold_is_bracketed(tmp_path: Path) -> None:
    m = _model(tmp_path, *_run(5, fuse=False))
    assert m.steady["batches"].tolist() == [2] * 4
    est = estimate_threshold(m.batches[m.batches["step"].isin(m.steady["step"])])
    assert est.fused_batches == 0 and est.upper_bytes == 1024 + 1024  # two [256] float32 that did not fuse


def test_fused_ops_are_one_batch(tmp_path: Path) -> None:
    m = _model(tmp_path, *_run(5))
    est = estimate_threshold(m.batches)
    assert est.fused_batches == 5 and est.lower_bytes == (256 + 1024 * 1024) * 4 and est.upper_bytes is None


def test_lateness_names_the_last_rank(tmp_path: Path) -> None:
    m = _model(tmp_path, *_run(5, ranks_late={1: 3000}))
    lat = m.lateness
    (r0, r1) = sorted(rank_summary(lat), key=lambda r: r.rank)
    assert r1.last == r1.negotiations == 10 and r1.median_us == 3005 and r0.last == 0
    vs = np.concatenate([lat.vs_median_us(g) for g in np.flatnonzero(lat.ticked)])
    assert np.allclose(vs[lat.rank[lat.mask] == 1], 3005)


def test_cut_step_is_incomplete_and_has_no_duration(tmp_path: Path) -> None:
    records = _run(4) + [B("NEGOTIATE_ALLREDUCE", 1_040_000, 1), E(1_040_010, 1)]
    m = _model(tmp_path, *records)
    assert len(m.steps) == 5
    last = m.steps.iloc[-1]
    assert not last["complete"] and pd.isna(last["duration_us"])
    assert m.steady["step"].tolist() == [1, 2, 3]


def test_single_pass_and_empty_files(tmp_path: Path) -> None:
    one = _model(tmp_path / "a", meta(1, "t"), B("ALLREDUCE", 1, 1), E(2, 1))
    assert one.segmentation.method == "single" and len(one.steps) == 1 and one.steady.empty
    empty = _model(tmp_path / "b")
    assert empty.segmentation.method == "none" and empty.steps.empty and empty.median_step_us is None


def test_startup_skew_names_a_rank_only_when_its_lateness_explains_the_wait(tmp_path: Path) -> None:
    """Boundary of startup.share_to_name: ticks 0.2 ms apart in a 500 ms wait name nobody."""
    from analyzer.config import StartupThresholds
    from analyzer.detectors.startup_skew import StartupSkew
    from tests.analyzer.timeline.in_memory import MemoryEvidence, model_in_memory

    def skew(late_us: int) -> Any:
        records = [meta(1, "broadcast.w"), B("NEGOTIATE_BROADCAST", 0, 1), X(0, 500_000 - late_us, 1), X(1, 500_000, 1)]
        records += [E(500_000, 1), B("BROADCAST", 500_010, 1), E(500_100, 1)]
        for step in range(4):  # a few steps after it, so that the broadcast comes before the first step
            t = 600_000 + step * 100_000
            records += [B("NEGOTIATE_ALLREDUCE", t, 2), X(0, t, 2), X(1, t + 10, 2), E(t + 20, 2)]
            records += [B("ALLREDUCE", t + 30, 2), E(t + 90, 2, "float32", "[4]")]
        path = write(tmp_path, glued(meta(2, "grad"), *records), f"skew{late_us}.json")
        model, ticks = model_in_memory(path)
        return StartupSkew().check(model, MemoryEvidence(ticks))

    named = skew(int(500_000 * StartupThresholds().share_to_name) + 1000)
    assert named is not None and named.ranks == (1,)
    anonymous = skew(200)
    assert anonymous is not None and anonymous.ranks == () and "do not tell which rank" in str(anonymous.evidence)


def test_horovods_default_fusion_threshold_follows_the_release_range() -> None:
    """What the over-threshold check assumes when no batch bounds the threshold from above (the real
    run f_manysmall_onebig of the corpus exercises the finding: tests/analyzer/detectors/test_diagnosis_corpus_more.py)."""
    from analyzer.timeline.fusion import DEFAULT_THRESHOLD, OLD_DEFAULT_THRESHOLD, default_threshold

    def version(low: str, high: str) -> dict[str, Any]:
        return {"horovod_version": {"low": low, "high": high, "text": f"{low} - {high}", "evidence": []}}

    assert default_threshold(version("0.16.0", "0.20.0")) == (OLD_DEFAULT_THRESHOLD, "0.16.0 - 0.20.0")
    assert default_threshold(version("0.22.0", "0.28.1"))[0] == DEFAULT_THRESHOLD == 128 << 20
    assert default_threshold(version("0.20.1", "0.28.1"))[0] == DEFAULT_THRESHOLD  # across 0.21: the larger
    assert default_threshold({})[0] == DEFAULT_THRESHOLD  # nothing known: the larger, a tensor over it is over both


def test_ranks_that_tick_in_one_cycle_tie_and_none_of_them_is_last(tmp_path: Path) -> None:
    """Rank 0 processes a cycle's requests in rank order, a few us apart: that order is no lateness."""
    from analyzer.timeline.lateness import SAME_CYCLE_US
    from tests.analyzer.timeline.in_memory import model_in_memory

    def lasts(late_us: int) -> dict[int, int]:
        records = [meta(1, "grad")]
        for step in range(8):
            t = step * 100_000
            ticks = [X(r, t + 5 * r + (late_us if r == 3 else 0), 1) for r in range(4)]
            records += [B("NEGOTIATE_ALLREDUCE", t, 1), *ticks, E(t + 20 + late_us, 1)]
            records += [B("ALLREDUCE", t + 40 + late_us, 1), E(t + 90 + late_us, 1, "float32", "[4]")]
        model, _ = model_in_memory(write(tmp_path, glued(*records), f"ties{late_us}.json"))
        return {r.rank: r.last for r in rank_summary(model.lateness)}

    assert set(lasts(0).values()) == {0}  # all in one cycle: a tie, nobody last
    late = lasts(SAME_CYCLE_US + 500)
    assert late[3] == 8 and late[0] == late[1] == late[2] == 0
