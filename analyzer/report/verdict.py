"""The verdict: what an SRE reads first. Healthy, degraded or failed; the key numbers; the one
thing to do; and, when nothing is wrong, what was checked and found fine.

It is computed from the typed report alone (:func:`verdict_of`), so the whole run's report and a
report narrowed to one job (:mod:`analyzer.report.job_view`) get theirs the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from analyzer.findings import Finding, Severity, Skipped
from analyzer.report.types import (
    InputDoc,
    JobDoc,
    LossDoc,
    NcclSection,
    RankTracesDoc,
    TimelineSection,
    VerdictDoc,
)
from parsers.nccl.net_plugins import is_internal_socket, is_rdma

#: Findings that mean the job failed or hung (at critical severity), not that it ran slowly.
FAILURE_CODES = frozenset(
    {"nccl.error", "nccl.watchdog_timeout", "horovod.stall", "nccl.init_incomplete", "job.worker_exit", "nccl.ras"}
)


@dataclass(frozen=True, slots=True)
class Check:
    """What a detector's silence means: ``text`` is listed as passed only when the detector ran,
    did not fire, every kind of evidence in ``needs`` is in the report (:func:`evidence_of`), and no
    finding of ``contradicted_by`` says otherwise."""

    text: str
    needs: frozenset[str]
    contradicted_by: frozenset[str] = frozenset()


def _check(text: str, *needs: str, contradicted_by: tuple[str, ...] = ()) -> Check:
    return Check(text, frozenset(needs), frozenset(contradicted_by))


#: The check of each detector (its ``detector`` name), in the order they are listed. Evidence kinds:
#: ``timeline`` steady steps; ``steps`` two or more; ``closed`` the timeline's closing ``]`` read (its
#: end is known); ``ranks`` two or more ranks seen; ``ticks`` per-rank ticks in steady steps; ``unticked``
#: steady negotiations without them (the response cache on); ``fusion`` two or more gradients per step;
#: ``nccl`` a process that chose its network (its init went that far); ``net`` every process's network read, none Socket; ``rdma`` a process
#: on an RDMA network with its GPUDirect state read; ``versions`` two or more processes' versions, all one;
#: ``comms`` communicator init lines; ``rank_waits`` per-rank traces of two or more ranks whose collectives'
#: waits were read over three steps or more.
PASSED: dict[str, Check] = {
    "truncated": _check("the timeline is complete: no step after its end is missing", "closed", "timeline"),
    "straggler": _check("no rank is consistently the last one ready", "ticks", "ranks"),
    "rank_straggler": _check("no rank joins the collectives late, per every rank's own trace", "rank_waits"),
    "negotiation_wait": _check(
        "waiting for other ranks is a small share of the step",
        "unticked",
        "ranks",
        contradicted_by=("timeline.straggler", "traces.straggler", "horovod.stall"),
    ),
    "slowdown": _check("step time holds steady over the run (no slowdown)", "steps"),
    "long_queue": _check("tensors do not wait long in Horovod's queue", "timeline", "ranks"),
    "fusion_fragmented": _check("tensor fusion works: gradients go out in few batches", "fusion", "ranks"),
    "tensor_over_fusion_threshold": _check("no tensor is larger than the fusion threshold", "fusion", "ranks"),
    "cycle_time_high": _check("the cycle time does not hold collectives back", "timeline", "ranks"),
    "startup_skew": _check("the ranks started together", "timeline", "ranks"),
    "init_overhead": _check("start-up takes a small share of the run", "steps"),
    "socket_fallback": _check("no process fell back to TCP sockets", "net"),
    "ib_disabled": _check("InfiniBand is not disabled by NCCL_IB_DISABLE", "nccl"),
    "no_gdrdma": _check("no InfiniBand process runs without GPUDirect RDMA", "rdma"),
    "version_mismatch": _check("every process runs the same NCCL version", "versions"),
    "init_incomplete": _check("every communicator finished its initialisation", "comms"),
    "nccl_error": _check("no NCCL error", "nccl", contradicted_by=("nccl.watchdog_timeout",)),
}
#: Detectors whose silence says nothing worth listing (their tables exist only when they fire,
#: or they judge wording, not health).
NOT_A_CHECK = frozenset(
    {
        "release_wording",
        "watchdog_timeout",
        "horovod_stall",
        "autotune_result",
        "worker_exit",
        "rank_coverage",
        "ras_report",
    }
)


TOP_LOSSES = 3
Status = Literal["healthy", "degraded", "failed", "inconclusive"]


class Judged(Protocol):
    """What the verdict reads of a report (:class:`analyzer.report.model.AnalysisReport`)."""

    @property
    def inputs(self) -> Sequence[InputDoc]: ...
    @property
    def findings(self) -> Sequence[Finding]: ...
    @property
    def skipped(self) -> Sequence[Skipped]: ...
    @property
    def timelines(self) -> Sequence[TimelineSection]: ...
    @property
    def nccl(self) -> NcclSection | None: ...
    @property
    def jobs(self) -> Sequence[JobDoc]: ...
    @property
    def rank_traces(self) -> Sequence[RankTracesDoc]: ...


def verdict_of(report: Judged) -> VerdictDoc:
    """The verdict of a report, from its findings and the evidence its sections hold."""
    findings = report.findings
    serious = [f for f in findings if f.severity >= Severity.WARNING]
    failed = [f for f in serious if f.severity is Severity.CRITICAL and f.code in FAILURE_CODES]
    passed = passed_checks(report)
    status: Status = "failed" if failed else "degraded" if serious else "healthy" if passed else "inconclusive"
    if serious and not failed and all(f.labels.get("unconfirmed") == "true" for f in serious):
        status = "inconclusive"  # a failure NCCL often goes on after, that the inputs end on: nothing shows harm yet
    top = (failed or serious)[0] if serious else None
    timeline, job = _timeline_of(report, top)
    median = timeline["steps"]["median_s"] if timeline else _traces_median_s(report, top)
    same_job = [f for f in serious if top is None or f.job == top.job]  # the quoted step's job
    losses = [
        LossDoc(
            code=f.code,
            ms_per_step=round(f.impact.seconds_per_step * 1e3, 3),
            fraction_of_step=f.impact.fraction_of_step,
            confidence=f.impact.confidence,
        )
        for f in same_job
        if f.impact is not None and f.impact.seconds_per_step > 0
    ][:TOP_LOSSES]
    action = next((f.suggestions[0] for f in (failed or serious) if f.suggestions), None)
    return {
        "status": status,
        "headline": _headline(status, top, median, len(findings), report) + (f" (job {job})" if job else ""),
        "median_step_ms": None if median is None else round(median * 1e3, 3),
        "steps_per_s": None if not median else round(1.0 / median, 3),
        "losses": losses,
        "action": None if action is None else action.action,
        "action_env": {} if action is None else dict(action.env),
        "passed": passed,
    }


def _timeline_of(report: Judged, top: Finding | None) -> tuple[TimelineSection | None, str | None]:
    """The timeline whose step time the verdict quotes: in a run of several jobs, the main timeline of
    the top finding's job (and that job's name), so that a number never comes from another job."""
    main = report.timelines[0] if report.timelines else None
    jobs = report.jobs
    if len(jobs) < 2 or top is None or top.job is None:
        return main, None
    job = next((j for j in jobs if j["id"] == top.job), None)
    if job is None:
        return main, None
    mine = [t for t in report.timelines if t["path"] in job["timelines"]]
    return (mine[0] if mine else None), job["name"]


def _traces_median_s(report: Judged, top: Finding | None) -> float | None:
    """Without a timeline, the median step of the per-rank traces (of the top finding's job, if it has them)."""
    sections = [s for s in report.rank_traces if s["steps"]]
    mine = [s for s in sections if top is not None and s["job"] == top.job] or sections
    median_ms = mine[0]["median_step_ms"] if mine else None
    return median_ms / 1e3 if median_ms else None


def _headline(status: str, top: Finding | None, median: float | None, n_findings: int, report: Judged) -> str:
    if top is not None:
        hosts = [h for h in top.hosts if h not in top.title]
        where = f" ({', '.join(hosts[:3])}{f' and {len(hosts) - 3} more' if len(hosts) > 3 else ''})" if hosts else ""
        return f"{status.capitalize()}: {top.title}{where}"
    notes = f"; {n_findings} note(s)" if n_findings else ""
    if status == "inconclusive":
        return f"Inconclusive: {_too_little(report)}, too little to judge the job by{notes}"
    step = f"median step {median * 1e3:,.1f} ms" if median else "no step timing in the inputs"
    return f"Healthy: {step}, nothing found that slows or breaks the job{notes}"


def _too_little(report: Judged) -> str:
    """What the inputs of a report without a passed check hold, in a few words."""
    parts = []
    if report.timelines:
        timeline = report.timelines[0]
        steps, ranks = timeline["steps"]["count"], timeline["ranks"]["count"]
        who = f"{ranks} rank{'s' if ranks != 1 else ''}" if ranks else "ranks unknown"
        parts.append(f"a timeline of {steps} step{'s' if steps != 1 else ''} ({who})")
    nccl = report.nccl
    if nccl and nccl["processes"]:
        parts.append(f"NCCL records of {len(nccl['processes'])} process(es) without their network or init lines")
    for traces in report.rank_traces:
        parts.append(f"per-rank traces of {len(traces['ranks'])} rank(s) and {traces['steps']} step(s)")
    return " and ".join(parts) or "no step, rank or NCCL process in the inputs"


def passed_checks(report: Judged) -> list[str]:
    """The checks that ran on this report's evidence, found nothing and agree with every finding,
    in detector order, and what the NCCL logs show of the network when no NCCL finding was made."""
    skipped = {s.detector for s in report.skipped}
    fired = {f.detector for f in report.findings}
    codes = {f.code for f in report.findings}
    have = evidence_of(report)
    out = [
        c.text
        for name, c in PASSED.items()
        if name not in skipped and name not in fired and c.needs <= have and not c.contradicted_by & codes
    ]
    if report.nccl and "nccl" in have and not any(c.startswith("nccl.") for c in codes):
        if network := _network_line(report.nccl):
            out.append(network)
    return out


def evidence_of(report: Judged) -> set[str]:
    """The kinds of evidence the report holds (see :data:`PASSED`), read from the same sections the
    findings' numbers come from."""
    have: set[str] = set()
    timeline = report.timelines[0] if report.timelines else None
    if timeline and timeline["steps"]["steady"] >= 1:
        have.add("timeline")
        if timeline["steps"]["steady"] >= 2:
            have.add("steps")
        if timeline["ranks"]["count"] >= 2:
            have.add("ranks")
        have.add("ticks" if timeline["ranks"]["scope"] == "steady" else "unticked")
        if (timeline["fusion"]["tensors_per_step"] or 0) >= 2:
            have.add("fusion")
        facts = next((i["timeline"] for i in report.inputs if i["id"] == timeline["input_id"]), None)
        if facts is not None and facts["status"] == "closed":
            have.add("closed")
    nccl = report.nccl
    if nccl and nccl["processes"]:
        procs = nccl["processes"]
        if any(p["network"] for p in procs):  # a process that got as far as choosing its network
            have.add("nccl")
        if all(p["network"] for p in procs) and not any(is_internal_socket(p["network"] or "") for p in procs):
            have.add("net")
        if any(is_rdma(p["network"] or "") and p["gdrdma"] is not None for p in procs):
            have.add("rdma")
        versions = [p["version"] for p in procs if p["version"]]
        if len(versions) >= 2 and len(set(versions)) == 1:  # several jobs' processes may differ: no claim then
            have.add("versions")
        if nccl["communicators"]:
            have.add("comms")
    for traces in report.rank_traces:
        timed = [r for r in traces["ranks"] if r["lateness_ms"] is not None]
        if len(timed) >= 2 and traces["steps"] >= 3 and traces["confidence"] != "none":
            have.add("rank_waits")
    return have


def _network_line(nccl: NcclSection) -> str | None:
    """``network: IB on all 4 hosts (GPUDirect RDMA on every process)`` when the logs agree."""
    procs = [p for p in nccl["processes"] if p["network"]]
    if not procs:
        return None
    nets = sorted({p["network"] for p in procs if p["network"]})
    hosts = sorted({p["host"] for p in procs if p["host"]})
    if len(hosts) == 1:
        where = f"its one host ({hosts[0]})"
    elif hosts:
        where = f"all {len(hosts)} hosts"
    else:
        where = "its one process" if len(procs) == 1 else f"all {len(procs)} processes"
    line = f"network: {' + '.join(nets)} on {where}"
    if all(p["gdrdma"] for p in procs):
        line += " (GPUDirect RDMA on every process)"
    return line
