"""Timeline models built from a file's parsed tables in memory (no store), and the evidence their
detectors ask for, answered from the same tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from analyzer.config import AnalysisConfig
from analyzer.nccl.ranks import RankPlace
from analyzer.timeline.lateness import NO_OFFSET, Lateness, first_last_offsets, table_chunks
from analyzer.timeline.model import InputIdentity, TimelineModel, model_from_tables
from parsers.timeline import parse_timeline


@dataclass
class MemoryEvidence:
    """What a timeline detector asks beyond its model, answered from the ticks table in memory.
    Only the straggler's tick offsets are served: a detector that asks for more fails the test."""

    ticks: pa.Table
    config: AnalysisConfig = field(default_factory=AnalysisConfig)

    def first_last_offset(self, model: TimelineModel, lat: Lateness, rank: int) -> int | None:
        out = first_last_offsets(lat, table_chunks(lambda cols: self.ticks.select(cols).to_batches()))
        return int(out[rank]) if rank < len(out) and out[rank] != NO_OFFSET else None

    def first_span_offset(self, model: TimelineModel, step: int) -> int | None:
        raise AssertionError("these timeline detectors do not ask for a step's offset")

    def lateness_of_steps(self, model: TimelineModel, first: int, last: int) -> Lateness:
        raise AssertionError("these timeline detectors do not read beyond their model")

    def rank_places(self, model: TimelineModel) -> dict[int, RankPlace]:
        return {}  # a timeline alone: no NCCL log names the hosts

    def autotuned(self, model: TimelineModel) -> bool:
        return False  # a timeline alone: no autotune log


def model_in_memory(path: Path) -> tuple[TimelineModel, pa.Table]:
    """The whole model of the timeline at ``path`` and its ticks table, parsed in memory."""
    parsed = parse_timeline(path, input_id="mem")
    t = parsed.tables
    of = InputIdentity("mem", str(path), parsed.info.to_dict())
    return model_from_tables(of, t["spans"], t["ticks"], t["markers"]), t["ticks"]
