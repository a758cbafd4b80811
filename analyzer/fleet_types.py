"""The shapes of ``batch``'s output (:mod:`analyzer.fleet`): a run's summary, the fleet summary
(``fleet.json``) and their parts."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from analyzer.compare.trend import JobSteps, JobTrend


class FindingBrief(TypedDict):
    code: str
    severity: str
    title: str
    ranks: list[int]
    hosts: list[str]


class SlowdownBrief(TypedDict):
    """What the fleet summary keeps of a ``timeline.slowdown`` finding."""

    ratio: float
    onset_step: int
    baseline_ms: float
    onset_ms: float
    lost_s: float
    title: str


class RunSummary(TypedDict):
    """One run of a batch: ``status`` ``ok`` (the other keys but ``error``) or ``failed`` (``error``)."""

    run: str
    status: Literal["ok", "failed"]
    error: NotRequired[str]
    internal: NotRequired[bool]  # failed by a bug in hvd-analyze, not by its input
    report: NotRequired[str]
    worst: NotRequired[str | None]
    findings: NotRequired[list[FindingBrief]]
    median_step_ms: NotRequired[float | None]
    p90_step_ms: NotRequired[float | None]
    slowdown: NotRequired[SlowdownBrief | None]
    jobs: NotRequired[list[JobSteps]]  # for the trends; not written to fleet.json


class CodeHit(TypedDict):
    run: str
    ranks: list[int]
    hosts: list[str]
    title: str


class FailedRun(TypedDict):
    run: str
    error: str
    internal: bool  # a bug in hvd-analyze, not the run's input


class FaultyRun(TypedDict):
    run: str
    worst: str | None
    codes: list[str]


class Regression(SlowdownBrief):
    """A run's slowdown in the fleet's worst regressions: the finding's figures, the run, its median step."""

    run: str
    median_step_ms: float | None


class SlowRun(TypedDict):
    run: str
    median_step_ms: float | None


class FleetSummary(TypedDict):
    """``fleet.json``'s ``fleet``: what the fleet of runs shows."""

    runs: int
    analysed: int
    failed: list[FailedRun]
    not_runs: list[NotARun]
    with_findings: list[FaultyRun]
    socket_fallback: list[CodeHit]
    stragglers: list[CodeHit]
    worst_regressions: list[Regression]
    slowest_steps: list[SlowRun]
    trends: list[JobTrend]


class NotARun(TypedDict):
    """An entry of the runs folder that is not a run (a README beside the runs), with the reason."""

    path: str
    reason: str


#: endings a run given as one file loses in its name (``run_b.json`` is the run ``run_b``)
