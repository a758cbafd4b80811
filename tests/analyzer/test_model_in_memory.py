"""A timeline model is a value: built from tables in memory, no store, and judged by a detector."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from analyzer.config import AnalysisConfig, StragglerThresholds, Thresholds
from analyzer.context import Context
from analyzer.detectors.straggler import Straggler
from analyzer.store.discovery import discover
from analyzer.store.run_store import RunStore
from analyzer.timeline.lateness import NO_OFFSET, Lateness, first_last_offsets, table_chunks
from analyzer.timeline.model import InputIdentity, TimelineModel, model_from_tables
from parsers.timeline import parse_timeline
from tests.builders import B, E, X, glued, meta, write

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "synthetic" / "straggler_nocache" / "timeline.json"


@dataclass
class MemoryEvidence:
    """What a timeline detector asks beyond its model, answered from the ticks table in memory."""

    ticks: pa.Table
    config: AnalysisConfig = field(default_factory=AnalysisConfig)

    def first_last_offset(self, model: TimelineModel, lat: Lateness, rank: int) -> int | None:
        out = first_last_offsets(lat, table_chunks(lambda cols: self.ticks.select(cols).to_batches()))
        return int(out[rank]) if rank < len(out) and out[rank] != NO_OFFSET else None

    def first_span_offset(self, model: TimelineModel, step: int) -> int | None:
        raise AssertionError("the straggler detector does not ask for a step's offset")

    def lateness_of_steps(self, model: TimelineModel, first: int, last: int) -> Lateness:
        raise AssertionError("the straggler detector does not read beyond its model")


def _in_memory(path: Path) -> tuple[TimelineModel, pa.Table]:
    parsed = parse_timeline(path, input_id="mem")
    t = parsed.tables
    of = InputIdentity("mem", str(path), parsed.info.to_dict())
    return model_from_tables(of, t["spans"], t["ticks"], t["markers"]), t["ticks"]


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
    model, ticks = _in_memory(path)
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
    model, ticks = _in_memory(SAMPLE)
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
