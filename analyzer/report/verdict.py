"""The verdict: what an SRE reads first. Healthy, degraded or failed; the key numbers; the one
thing to do; and, when nothing is wrong, what was checked and found fine.

It is computed from the report document alone (:func:`verdict`), so the whole run's report and a
report narrowed to one job (:mod:`analyzer.report.job_view`) get theirs the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from analyzer.report.types import LossDoc, VerdictDoc

#: Findings that mean the job failed or hung (at critical severity), not that it ran slowly.
FAILURE_CODES = frozenset(
    {"nccl.error", "nccl.watchdog_timeout", "horovod.stall", "nccl.init_incomplete", "job.worker_exit"}
)

#: What each detector's silence means, and which evidence it needs to mean it: a detector that
#: ran without a finding passed its check (its ``detector`` name -> (needs, text)).
PASSED: dict[str, tuple[str, str]] = {
    "truncated": ("timeline", "the timeline is complete: no step after its end is missing"),
    "straggler": ("ticks", "no rank is consistently the last one ready"),
    "negotiation_wait": ("timeline", "waiting for other ranks is a small share of the step"),
    "slowdown": ("steps", "step time holds steady over the run (no slowdown)"),
    "long_queue": ("timeline", "tensors do not wait long in Horovod's queue"),
    "fusion_fragmented": ("timeline", "tensor fusion works: gradients go out in few batches"),
    "tensor_over_fusion_threshold": ("timeline", "no tensor is larger than the fusion threshold"),
    "cycle_time_high": ("timeline", "the cycle time does not hold collectives back"),
    "startup_skew": ("timeline", "the ranks started together"),
    "init_overhead": ("timeline", "start-up takes a small share of the run"),
    "socket_fallback": ("nccl", "no process fell back to TCP sockets"),
    "ib_disabled": ("nccl", "InfiniBand is not disabled by NCCL_IB_DISABLE"),
    "no_gdrdma": ("nccl", "no InfiniBand process runs without GPUDirect RDMA"),
    "version_mismatch": ("nccl", "every process runs the same NCCL version"),
    "init_incomplete": ("nccl", "every communicator finished its initialisation"),
    "nccl_error": ("nccl", "no NCCL error"),
}
#: Detectors whose silence says nothing worth listing (their tables exist only when they fire,
#: or they judge wording, not health).
NOT_A_CHECK = frozenset({"release_wording", "watchdog_timeout", "horovod_stall", "autotune_result", "worker_exit"})

TOP_LOSSES = 3


def verdict_of(doc: Mapping[str, Any]) -> VerdictDoc:
    """The verdict of a report document (its ``verdict`` key is not read)."""
    findings: list[Mapping[str, Any]] = list(doc["findings"])
    serious = [f for f in findings if f["severity"] in ("warning", "critical")]
    failed = [f for f in serious if f["severity"] == "critical" and f["code"] in FAILURE_CODES]
    status: Literal["healthy", "degraded", "failed"] = "failed" if failed else "degraded" if serious else "healthy"
    top = (failed or serious)[0] if serious else None
    timeline, job = _timeline_of(doc, top)
    median = timeline["steps"]["median_s"] if timeline else None
    losses = [
        LossDoc(
            code=f["code"],
            ms_per_step=round(f["impact"]["seconds_per_step"] * 1e3, 3),
            fraction_of_step=f["impact"]["fraction_of_step"],
            confidence=f["impact"]["confidence"],
        )
        for f in serious
        if f.get("impact") and f["impact"]["seconds_per_step"] > 0
    ][:TOP_LOSSES]
    action = next((f["suggestions"][0] for f in (failed or serious) if f["suggestions"]), None)
    return {
        "status": status,
        "headline": _headline(status, top, median, findings) + (f" (job {job})" if job else ""),
        "median_step_ms": None if median is None else round(median * 1e3, 3),
        "steps_per_s": None if not median else round(1.0 / median, 3),
        "losses": losses,
        "action": None if action is None else action["action"],
        "action_env": {} if action is None else dict(action["env"]),
        "passed": passed_checks(doc),
    }


def _timeline_of(doc: Mapping[str, Any], top: Mapping[str, Any] | None) -> tuple[Any, str | None]:
    """The timeline whose step time the verdict quotes: in a run of several jobs, the main timeline of
    the top finding's job (and that job's name), so that a number never comes from another job."""
    jobs = doc.get("jobs", [])
    if len(jobs) < 2 or top is None or top.get("job") is None:
        return doc.get("timeline"), None
    job = next((j for j in jobs if j["id"] == top["job"]), None)
    if job is None:
        return doc.get("timeline"), None
    mine = [t for t in [doc.get("timeline"), *doc.get("other_timelines", [])] if t and t["path"] in job["timelines"]]
    return (mine[0] if mine else None), job["name"]


def _headline(status: str, top: Mapping[str, Any] | None, median: float | None, findings: list[Any]) -> str:
    if top is not None:
        hosts = [h for h in top.get("hosts", [])[:3] if h not in top["title"]]
        where = f" ({', '.join(hosts)})" if hosts else ""
        return f"{status.capitalize()}: {top['title']}{where}"
    step = f"median step {median * 1e3:,.1f} ms" if median else "no step timing in the inputs"
    notes = f"; {len(findings)} note(s)" if findings else ""
    return f"Healthy: {step}, nothing found that slows or breaks the job{notes}"


def passed_checks(doc: Mapping[str, Any]) -> list[str]:
    """The checks that ran on this report's evidence and found nothing, in detector order, and what
    the NCCL logs show of the network when no NCCL finding was made."""
    skipped = {s["detector"] for s in doc["skipped_detectors"]}
    fired = {f["detector"] for f in doc["findings"]}
    have = _evidence(doc)
    out = [
        text for name, (needs, text) in PASSED.items() if name not in skipped and name not in fired and needs in have
    ]
    if "nccl" in have and not any(f["code"].startswith("nccl.") for f in doc["findings"]):
        if network := _network_line(doc["nccl"]):
            out.append(network)
    return out


def _evidence(doc: Mapping[str, Any]) -> set[str]:
    have = set()
    timeline = doc.get("timeline")
    if timeline:
        have.add("timeline")
        if timeline["steps"]["steady"] >= 2:
            have.add("steps")
        if timeline["ranks"]["scope"] == "steady":
            have.add("ticks")
    nccl = doc.get("nccl")
    if nccl and nccl["processes"]:
        have.add("nccl")
    return have


def _network_line(nccl: Mapping[str, Any]) -> str | None:
    """``network: IB on all 4 hosts (GPUDirect RDMA on every process)`` when the logs agree."""
    procs = [p for p in nccl["processes"] if p["network"]]
    if not procs:
        return None
    nets = sorted({p["network"] for p in procs})
    hosts = sorted({p["host"] for p in procs if p["host"]})
    where = f"all {len(hosts)} host(s)" if hosts else f"all {len(procs)} process(es)"
    line = f"network: {' + '.join(nets)} on {where}"
    if all(p["gdrdma"] for p in procs):
        line += " (GPUDirect RDMA on every process)"
    return line
