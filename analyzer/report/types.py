"""The report's JSON shape as types: the one source of ``report.schema.json`` and of what the
renderers and the app may read.

Every key of the JSON report is declared here once. The builders
(:mod:`analyzer.report.timeline_section`, :mod:`analyzer.report.nccl_section`,
:meth:`analyzer.findings.AnalysisReport.to_dict`) return these types and mypy checks every
reader; :mod:`analyzer.report.json_schema` turns them into the JSON Schema shipped with the
package (``tests/test_docs.py`` checks the committed file is the generated one). Constraints a
type cannot say (a minimum, an enum that is data, a description) ride along as a
:data:`typing.Annotated` dict of JSON Schema keywords.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from parsers.nccl.error_classes import CLASSES


@dataclass(frozen=True, eq=False)  # hashed by identity: typing hashes the metadata of Annotated
class Schema:
    """Extra JSON Schema keywords of an :data:`typing.Annotated` type."""

    keywords: dict[str, Any]


Count = Annotated[int, Schema({"minimum": 0})]
Severity = Literal["info", "warning", "critical"]
ErrorClass = Annotated[str, Schema({"enum": list(CLASSES)})]


# -- inputs ------------------------------------------------------------------------------------


class IssueCountsDoc(TypedDict):
    info: Count
    data_loss: Count
    error: Count


class HorovodVersionDoc(TypedDict):
    low: str
    high: str
    text: str
    evidence: list[str]
    conflict: bool


class TimelineFactsDoc(TypedDict):
    """What a timeline is, read off its content (``inputs[].timeline``)."""

    status: Literal["closed", "unterminated", "truncated", "empty"]
    layout: Literal["glued", "line_per_event", "unknown"]
    records: Count
    bytes_read: Count
    start_time_since_epoch_us: int | None
    first_ts_us: int | None
    last_ts_us: int | None
    uptime_origin: bool
    max_depth: Count
    horovod_version: HorovodVersionDoc | None
    steady_state_ticks: bool | None
    response_cache: Literal["on", "off", "unknown"] | None
    response_cache_reason: str | None
    counts: dict[str, Count]


LogFactsDoc = Annotated[
    dict[str, Count],
    Schema({"description": "line and record counts of a job log (lines, records, processes, foreign_lines, ...)"}),
]


InputKindName = Literal["horovod_timeline", "job_log"]


class InputDoc(TypedDict):
    id: str
    path: str
    kind: InputKindName
    size: Count
    sha256: str
    rows: dict[str, Count]
    issues: IssueCountsDoc
    timeline: TimelineFactsDoc | None
    log: LogFactsDoc | None


# -- the timeline section ------------------------------------------------------------------------


class SegmentationDoc(TypedDict):
    method: Literal["recurrence", "single", "none"]
    source: Literal["negotiate", "op", ""]
    gradient_tensors: Count
    confidence: Literal["high", "medium", "low"]
    note: str


class HistogramDoc(TypedDict):
    edges_s: list[float]
    counts: list[Count]


class StepsDoc(TypedDict):
    count: Count
    steady: Count
    median_s: float | None
    p10_s: float | None
    p90_s: float | None
    mean_s: float | None
    histogram: HistogramDoc


class WindowDoc(TypedDict):
    steps: Annotated[int, Schema({"minimum": 1})]
    run_steps: Annotated[int, Schema({"minimum": 1})]
    spans: Count
    run_spans: Count
    estimate_bytes: Count
    budget_bytes: Count
    note: str


class PhaseDoc(TypedDict):
    phase: str
    median_ms: float
    mean_ms: float
    share_of_step: float


class RankDoc(TypedDict):
    rank: Count
    negotiations: Count
    last: Count
    median_lateness_ms: float
    p90_lateness_ms: float
    vs_median_ms: float


class RanksDoc(TypedDict):
    scope: Literal["steady", "first_negotiations", "none"]
    ranks: list[RankDoc]


class FusionDoc(TypedDict):
    batches_per_step: float | None
    tensors_per_step: float | None
    singleton_share: float | None
    threshold_lower_bytes: int | None
    threshold_upper_bytes: int | None
    threshold_text: str


class CycleDoc(TypedDict):
    cycle_ms: float
    method: Literal["markers", "bursts"]
    samples: Count
    regularity: float


class TimelineSection(TypedDict):
    """Diagnosis data of one timeline (``timeline``, ``other_timelines[]``)."""

    input_id: str
    path: str
    segmentation: SegmentationDoc
    steps: StepsDoc
    window: WindowDoc | None
    phases: list[PhaseDoc]
    ranks: RanksDoc
    fusion: FusionDoc
    cycle: CycleDoc | None


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


# -- findings and the document ------------------------------------------------------------------------


class SourceDoc(TypedDict):
    file: str
    byte_offset: int | None
    line: int | None


class EvidenceDoc(TypedDict):
    summary: str
    sources: list[SourceDoc]
    metrics: dict[str, float]


class ImpactDoc(TypedDict):
    seconds_per_step: Annotated[float, Schema({"minimum": 0})]
    fraction_of_step: Annotated[float, Schema({"minimum": 0, "maximum": 1})]
    confidence: Literal["low", "medium", "high"]
    assumptions: str


class SuggestionDoc(TypedDict):
    action: str
    env: dict[str, str]
    rationale: str


class JobDoc(TypedDict):
    """One job of the run: a folder of timelines and the logs tied to it (analyzer.jobs)."""

    id: str
    name: str
    folder: str
    timelines: list[str]
    logs: list[str]
    tied_by: Annotated[str, Schema({"description": "why these logs belong to this job, or why a log is unassigned"})]


class FindingDoc(TypedDict):
    code: str
    severity: Severity
    title: str
    summary: str
    detector: str
    job: Annotated[str | None, Schema({"description": "the id of the job (jobs[].id) whose evidence it rests on"})]
    ranks: list[Count]
    hosts: list[str]
    labels: Annotated[
        dict[str, str],
        Schema(
            {
                "description": "short string facts about the finding, e.g. "
                '{"class": "ib_completion_error"} for nccl.error'
            }
        ),
    ]
    evidence: list[EvidenceDoc]
    impact: ImpactDoc | None
    suggestions: list[SuggestionDoc]


class ParseIssueDoc(TypedDict):
    file: str
    byte_offset: int | None
    severity: Literal["info", "data_loss", "error"]
    code: str
    message: str
    count: Count


class SkippedDetectorDoc(TypedDict):
    detector: str
    reason: str


class SkippedFileDoc(TypedDict):
    path: str
    reason: str


class BySeverityDoc(TypedDict):
    info: Count
    warning: Count
    critical: Count


class SummaryDoc(TypedDict):
    findings: Count
    by_severity: BySeverityDoc
    worst: Severity | None


class ReportDocument(TypedDict):
    """The JSON report (``report -f json``)."""

    schema_version: Literal[1]
    tool: Literal["hvd-analyze"]
    tool_version: str
    store: str
    summary: SummaryDoc
    inputs: list[InputDoc]
    jobs: list[JobDoc]
    timeline: TimelineSection | None
    other_timelines: list[TimelineSection]
    nccl: NcclSection | None
    findings: list[FindingDoc]
    skipped_detectors: list[SkippedDetectorDoc]
    parse_issues: list[ParseIssueDoc]
    skipped_files: list[SkippedFileDoc]
