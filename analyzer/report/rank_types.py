"""The report's per-rank traces section, as types (``rank_traces`` in the JSON report)."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from analyzer.report.doc_base import Count, Schema


class RankRowDoc(TypedDict):
    """One rank as its own trace shows it (medians over its profiled steps)."""

    rank: int
    host: str | None
    file: str
    steps: Count
    median_step_ms: float
    median_data_ms: Annotated[float, Schema({"description": "in enumerate(DataLoader) annotations"})]
    median_h2d_ms: Annotated[float, Schema({"description": "in host-to-device copies (Memcpy HtoD)"})]
    median_comm_ms: Annotated[float, Schema({"description": "with a collective in flight, waits included"})]
    lateness_ms: Annotated[
        float | None, Schema({"description": "median lateness behind the first-ready rank (null: no waits recorded)"})
    ]
    late_steps: Count
    named: Annotated[bool, Schema({"description": "named a straggler (traces.straggler)"})]


class RankTracesDoc(TypedDict):
    """A job's per-rank profiler traces: its ranks, how their collectives matched, their clocks."""

    job: str
    source: Annotated[str, Schema({"description": "the collectives' evidence, in words"})]
    world_size: int | None
    ranks: list[RankRowDoc]
    missing_ranks: Annotated[list[int], Schema({"description": "ranks of the world without a trace"})]
    missing_collectives: Annotated[
        dict[str, Count], Schema({"description": "rank -> collectives its peers ran in steps all have, it did not"})
    ]
    duplicates: Annotated[list[str], Schema({"description": "traces of a rank already traced over the same steps"})]
    unranked: Annotated[list[str], Schema({"description": "traces whose rank is unknown"})]
    other_jobs: Annotated[list[str], Schema({"description": "traces of another world size: another job's"})]
    matched_share: Annotated[float, Schema({"description": "share of collectives every traced rank ran"})]
    steps: Count
    median_step_ms: float
    clock_offsets_ms: Annotated[dict[str, float], Schema({"description": "host -> clock offset from the first host"})]
    noise_ms: float | None
    bar_ms: float | None
    confidence: Literal["high", "medium", "low", "none"]
