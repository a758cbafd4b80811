"""A timeline model is a value: built from tables in memory, no store, and judged by a detector."""

from __future__ import annotations

from pathlib import Path

from analyzer.config import AnalysisConfig, StragglerThresholds, Thresholds
from analyzer.context import Context
from analyzer.detectors.straggler import Straggler
from analyzer.store.discovery import discover
from analyzer.store.run_store import RunStore
from tests.analyzer.timeline.in_memory import MemoryEvidence, model_in_memory
from tests.builders import B, E, X, glued, meta, write
from tests.conftest import ROOT

SAMPLE = ROOT / "sample_traces" / "synthetic" / "straggler_nocache" / "timeline.json"


def _steps(n: int, late_rank: int, late_us: int) -> list[str]:
    """``n`` steps of two gradients negotiated by 4 ranks; ``late_rank`` ticks ``late_us`` late."""
    out = [meta(1, "allreduce.b"), meta(2, "allreduce.w")]
    for k in range(n):
        t0 = 1_000_000 + k * 100_000
        for pid in (1, 2):
            t = t0 + pid * 100
            out.append(B("NEGOTIATE_ALLREDUCE", t, pid))
            out += [X(r, t + r + (late_us if r == late_rank else 0), pid) for r in range(4)]
            out.append(E(t + late_us + 10, pid))
        s = t0 + late_us + 1_000
        out += [B("ALLREDUCE", s, 1), B("ALLREDUCE", s + 1, 2), E(s + 500, 1), E(s + 501, 2)]
    return out


def test_straggler_detector_runs_on_a_model_built_in_memory(tmp_path: Path) -> None:
    path = write(tmp_path, glued(*_steps(12, late_rank=2, late_us=20_000)))
    model, ticks = model_in_memory(path)
    assert model.window is None and model.tick_range is None
    assert len(model.steps) == 12 and model.median_step_us == 100_000
    finding = Straggler().check(model, MemoryEvidence(ticks))
    assert finding is not None and finding.ranks == (2,)
    assert finding.title.startswith("Rank 2 is late")
    (source,) = finding.evidence[0].sources
    # the first steady step is step 1 (step 0 has no step before it): its pid 1 tick of rank 2
    assert source.byte_offset == path.read_bytes().index(b'{"ph": "X", "name": "2", "ts": 1120102')
    # the thresholds are the config's: a higher bar silences the same model
    strict = AnalysisConfig(thresholds=Thresholds(straggler=StragglerThresholds(min_late_us=30_000)))
    assert Straggler().check(model, MemoryEvidence(ticks, strict)) is None


def test_in_memory_model_gives_the_finding_the_store_gives(tmp_path: Path) -> None:
    model, ticks = model_in_memory(SAMPLE)
    in_memory = Straggler().check(model, MemoryEvidence(ticks))
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([str(SAMPLE)]))
    ctx = Context(store)
    (stored_model,) = ctx.timelines()
    from_store = Straggler().check(stored_model, ctx)
    assert in_memory is not None and from_store is not None
    assert in_memory.ranks == from_store.ranks and in_memory.title == from_store.title
    assert in_memory.evidence == from_store.evidence and in_memory.impact == from_store.impact
    assert model.steps.drop(columns=[]).equals(stored_model.steps)
