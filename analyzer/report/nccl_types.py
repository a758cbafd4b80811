"""The NCCL section of the JSON report (``nccl``) as types; part of :mod:`analyzer.report.types`."""

from __future__ import annotations

from typing import Annotated, TypedDict

from analyzer.nccl.incidents import CauseDoc as CauseDoc
from analyzer.nccl.incidents import ClassifiedError
from analyzer.nccl.model import Communicator, IncompleteRank
from analyzer.report.doc_base import Count, Schema

# -- the NCCL section ------------------------------------------------------------------------------


class ProcessDoc(TypedDict):
    host: str | None
    pid: int | None
    file: str
    first_line: int
    cuda_devs: list[int]
    ranks: list[int]
    nranks: list[int]
    version: str | None
    version_source: str | None
    version_range: Annotated[list[str], Schema({"minItems": 2, "maxItems": 2})] | None
    network: str | None
    transports: list[str]
    interfaces: list[str]
    ib_hcas: list[str]
    gdrdma: bool | None
    init_complete: bool
    warns: Count
    env: Annotated[
        dict[str, str], Schema({"description": "NCCL_* variables the process echoed ('... set by environment to ...')"})
    ]


class VersionDoc(TypedDict):
    file: str
    host: str | None
    pid: int | None
    line: int
    version: str
    cuda: str
    source: str


IncompleteRankDoc = IncompleteRank  # declared once, by the model (analyzer.nccl.model)
CommunicatorDoc = Communicator


NcclErrorDoc = ClassifiedError  # one declaration, the model's (analyzer.nccl.incidents)


class WatchdogDoc(TypedDict):
    """A ``watchdog_timeouts`` row (the parser's :class:`parsers.nccl.rows.WatchdogRow`) and its file."""

    line: int
    rank: (
        int | None
    )  # the launcher's ``[rankN]:`` when it tags the line, else PyTorch's ``[Rank N]`` (within the group)
    global_rank: int | None  # the job's rank: the launcher's tag, the default group's rank, or the group's membership
    seq: int | None
    op: str
    numel_in: int | None
    numel_out: int | None
    timeout_ms: int
    ran_ms: int
    pg: str | None
    last_enqueued: int | None
    last_completed: int | None
    file: str


class StallDoc(TypedDict):
    file: str
    line: int
    rank: int
    shutdown: bool
    tensors: list[str]
    more: bool


class AutotuneDoc(TypedDict):
    file: str
    line: int
    rows: int
    finished: bool
    layout: str
    cycle_time_ms: float
    fusion_threshold_mb: float
    score: float
    hierarchical_allreduce: bool
    hierarchical_allgather: bool
    cache_enabled: bool | None


class NcclSection(TypedDict):
    """NCCL / job-log facts over every log of the store (``nccl``)."""

    hosts: list[str]
    processes: list[ProcessDoc]
    versions: list[VersionDoc]
    communicators: list[CommunicatorDoc]
    errors: list[NcclErrorDoc]
    watchdog_timeouts: list[WatchdogDoc]
    horovod_stalls: list[StallDoc]
    autotune: AutotuneDoc | None
