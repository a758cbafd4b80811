"""The NCCL section of the JSON report (``nccl``) as types; part of :mod:`analyzer.report.types`."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from analyzer.report.doc_base import Count, ErrorClass, Schema

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


class IncompleteRankDoc(TypedDict):
    rank: int
    host: str | None
    pid: int | None
    file: str
    line: int


class CommunicatorDoc(TypedDict):
    id: str
    comm_id: str | None
    grouping: Literal["commId", "nranks"]
    nranks: int
    ranks_started: list[int]
    ranks_complete: list[int]
    ranks_incomplete: list[IncompleteRankDoc]
    hosts: list[str]
    files: list[str]


class CauseDoc(TypedDict):
    """Where the root cause an error follows from was logged."""

    file: str
    line: int


# "class" is a Python keyword: the functional form
NcclErrorDoc = TypedDict(
    "NcclErrorDoc",
    {
        "class": ErrorClass,
        "host": str | None,
        "pid": int | None,
        "file": str,
        "line": int,
        "level": Literal["WARN", "chain", "framework"],
        "src": str | None,
        "message": str,
        "chain": list[str],
        "result_code": int | None,
        "remediation": str | None,
        "time": str | None,
        "role": Literal["root", "consequence"],
        "cause": CauseDoc | None,
    },
)


class WatchdogDoc(TypedDict):
    file: str
    line: int
    rank: int | None
    seq: int
    op: str
    numel_in: int | None
    numel_out: int | None
    timeout_ms: int
    ran_ms: int
    pg: str | None
    last_enqueued: int | None
    last_completed: int | None


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
