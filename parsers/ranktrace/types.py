"""What one rank's trace says of its rank, host and job: the manifest's ``rank_trace`` facts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TypedDict


class RankGroupDoc(TypedDict):
    """A process group of ``distributedInfo.pg_config``: its name and its global ranks."""

    name: str
    ranks: list[int]


class RankTraceFactsDoc(TypedDict):
    """:class:`RankTraceFacts` as stored in the manifest (JSON)."""

    rank: int | None
    rank_from: str | None
    world_size: int | None
    backend: str | None
    host: str | None
    pid: int | None
    worker: str | None
    trace_id: str | None
    base_ns: int | None
    nccl_version: str | None
    device: str | None
    groups: list[RankGroupDoc]
    events: int
    source: str
    steps: int
    collectives: int


@dataclass
class RankTraceFacts:
    """Who wrote a trace and what it holds. ``rank_from``: ``distributedInfo``, ``file name`` or None
    (unknown); ``source``: the collectives' evidence (``nccl_kernel``, ``gloo``, ``horovod_sync``,
    ``enqueue``: CPU-side calls without their wait, ``none``)."""

    rank: int | None = None
    rank_from: str | None = None
    world_size: int | None = None
    backend: str | None = None
    host: str | None = None
    pid: int | None = None
    worker: str | None = None
    trace_id: str | None = None
    base_ns: int | None = None
    nccl_version: str | None = None
    device: str | None = None
    groups: list[RankGroupDoc] = field(default_factory=list)
    events: int = 0
    source: str = "none"
    steps: int = 0
    collectives: int = 0

    def to_dict(self) -> RankTraceFactsDoc:
        out: RankTraceFactsDoc = asdict(self)  # type: ignore[assignment]  # the same fields, by construction
        return out
