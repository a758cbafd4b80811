"""What one rank's trace says of its rank, host and job (the manifest's ``rank_trace`` facts), and the events
its parser keeps (:class:`Seen`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict


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


#: a JSON object of a trace (an event, its ``args``, the trace's header) as JSON gives it: its keys and
#: their types vary by event kind and Kineto release, so a reader checks each field it reads
#: (:func:`parsers.ranktrace.collectives.whole`, ``event_args``). The one ``dict[str, Any]`` of the package.
JsonObject = dict[str, Any]


@dataclass
class Seen:
    """The wanted events of one trace, by kind, as they came."""

    steps: list[tuple[int, float, float, int]] = field(default_factory=list)  # step, ts, dur, tid
    kernels: list[JsonObject] = field(default_factory=list)
    launches: dict[int, float] = field(default_factory=dict)  # correlation -> launch ts
    gloo: list[JsonObject] = field(default_factory=list)
    nccl_cpu: list[JsonObject] = field(default_factory=list)
    enqueues: list[JsonObject] = field(default_factory=list)  # c10d::<op>_
    optimizer: list[tuple[float, float, int]] = field(default_factory=list)
    data: list[tuple[float, float]] = field(default_factory=list)
    h2d: list[tuple[float, float]] = field(default_factory=list)
    pids: dict[int, int] = field(default_factory=dict)
    bad: int = 0  # wanted events with a time or step number out of range: skipped
    bad_name: str = ""  # the first such event's name
