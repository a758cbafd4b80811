"""The report's JSON shape as types: the one source of ``report.schema.json``, and the types of the
sections the typed report (:class:`analyzer.report.model.AnalysisReport`) holds.

Every key of the JSON report is declared here once (a parser's facts, declared beside their
parser, are reused as they are). The builders (:mod:`analyzer.report.timeline_section`,
:mod:`analyzer.report.nccl_section`, :meth:`analyzer.report.model.AnalysisReport.to_document`)
return these types and mypy checks every reader; :mod:`analyzer.report.json_schema` turns them into the JSON Schema shipped with the
package (``tests/test_docs.py`` checks the committed file is the generated one). Constraints a
type cannot say (a minimum, an enum that is data, a description) ride along as a
:data:`typing.Annotated` dict of JSON Schema keywords.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from analyzer.report.doc_base import Count as Count
from analyzer.report.doc_base import ErrorClass as ErrorClass
from analyzer.report.doc_base import Schema as Schema
from analyzer.report.doc_base import Severity as Severity
from analyzer.report.nccl_types import AutotuneDoc as AutotuneDoc
from analyzer.report.nccl_types import CauseDoc as CauseDoc
from analyzer.report.nccl_types import CommunicatorDoc as CommunicatorDoc
from analyzer.report.nccl_types import IncompleteRankDoc as IncompleteRankDoc
from analyzer.report.nccl_types import NcclErrorDoc as NcclErrorDoc
from analyzer.report.nccl_types import NcclSection as NcclSection
from analyzer.report.nccl_types import ProcessDoc as ProcessDoc
from analyzer.report.nccl_types import StallDoc as StallDoc
from analyzer.report.nccl_types import VersionDoc as VersionDoc
from analyzer.report.nccl_types import WatchdogDoc as WatchdogDoc
from analyzer.report.rank_types import RankRowDoc as RankRowDoc
from analyzer.report.rank_types import RankTracesDoc as RankTracesDoc
from analyzer.report.view_types import StepSeriesView
from parsers.inputs import InputKindName as InputKindName
from parsers.nccl.rows import LogFacts as LogFacts
from parsers.ranktrace.types import RankTraceFactsDoc as RankTraceFacts
from parsers.timeline.facts import HorovodVersionFacts as HorovodVersionFacts
from parsers.timeline.facts import TimelineFacts as TimelineFacts

# -- inputs ------------------------------------------------------------------------------------


class IssueCountsDoc(TypedDict):
    info: Count
    data_loss: Count
    error: Count


class InputDoc(TypedDict):
    id: str
    path: str
    kind: InputKindName
    size: Count
    sha256: str | None  # the hash of its bytes: sha256 under 16 MB, else blake3 (the other is None)
    blake3: str | None
    rows: dict[str, Count]
    issues: IssueCountsDoc
    timeline: TimelineFacts | None
    log: LogFacts | None
    rank_trace: RankTraceFacts | None


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
    host: Annotated[str | None, Schema({"description": "the host the job's NCCL logs put this rank on"})]
    negotiations: Count
    last: Count
    median_lateness_ms: float
    p90_lateness_ms: float
    vs_median_ms: float


class RankNoiseDoc(TypedDict):
    """The host's noise in the ranks' lateness (analyzer.lateness): how late a rank must be beyond its
    peers to count as late in a step, and whether that bar was low enough to tell (confidence low:
    the bar reached straggler.noisy_share of the median step)."""

    steps: int
    noise_ms: float
    bar_ms: float
    floor_ms: float
    confidence: Literal["high", "medium", "low"]


class RanksDoc(TypedDict):
    scope: Literal["steady", "first_negotiations", "none"]
    count: Annotated[Count, Schema({"description": "ranks with ticks; ranks[] lists at most 4,096 of them"})]
    oversized: Annotated[
        Count, Schema({"description": "negotiations naming more than 2^20 ranks: left out of the statistics"})
    ]
    ranks: list[RankDoc]
    noise: RankNoiseDoc | None


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
    low_ms: float
    high_ms: float
    confidence: Annotated[
        Literal["high", "medium", "low"],
        Schema(
            {
                "description": "high: regular CYCLE_START markers; medium: the coordinator's responses never closer "
                "than a floor that many sit at (the cycle, read within low_ms-high_ms); low: the file's rhythm only "
                "(read as unknown)"
            }
        ),
    ]


class TimelineSection(TypedDict):
    """Diagnosis data of one timeline (``timeline``, ``other_timelines[]``)."""

    input_id: str
    path: str
    segmentation: SegmentationDoc
    steps: StepsDoc
    series: Annotated[
        StepSeriesView,
        Schema({"description": "step time over the run: every step, or each bucket's fastest and slowest (note)"}),
    ]
    window: WindowDoc | None
    phases: list[PhaseDoc]
    ranks: RanksDoc
    fusion: FusionDoc
    cycle: CycleDoc | None


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
    traces: Annotated[list[str], Schema({"description": "its ranks' profiler traces"})]
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


class LossDoc(TypedDict):
    """Time per step a finding costs (its what-if impact)."""

    code: str
    ms_per_step: Annotated[float, Schema({"minimum": 0})]
    fraction_of_step: Annotated[float, Schema({"minimum": 0, "maximum": 1})]
    confidence: Literal["low", "medium", "high"]


class VerdictDoc(TypedDict):
    """What to read first (analyzer.report.verdict): the status, the key numbers, the one thing to do."""

    status: Annotated[
        Literal["healthy", "degraded", "failed", "inconclusive"],
        Schema(
            {
                "description": "failed: the job died or hung; degraded: a warning or worse; healthy: neither, and "
                "at least one check passed on evidence the inputs hold; inconclusive: neither, and no check had "
                "its evidence (too little input to judge)"
            }
        ),
    ]
    headline: str
    median_step_ms: float | None
    steps_per_s: float | None
    losses: Annotated[
        list[LossDoc], Schema({"description": "the costliest findings' time per step (they may overlap)"})
    ]
    action: Annotated[str | None, Schema({"description": "the first suggestion of the most severe finding"})]
    action_env: dict[str, str]
    passed: Annotated[list[str], Schema({"description": "checks that ran on this evidence and found nothing"})]


class ReportDocument(TypedDict):
    """The JSON report (``report -f json``)."""

    schema_version: Literal[1]
    tool: Literal["hvd-analyze"]
    tool_version: str
    store: str
    verdict: VerdictDoc
    summary: SummaryDoc
    inputs: list[InputDoc]
    jobs: list[JobDoc]
    timeline: TimelineSection | None
    other_timelines: list[TimelineSection]
    nccl: NcclSection | None
    rank_traces: list[RankTracesDoc]
    findings: list[FindingDoc]
    skipped_detectors: list[SkippedDetectorDoc]
    parse_issues: list[ParseIssueDoc]
    skipped_files: list[SkippedFileDoc]
