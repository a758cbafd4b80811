"""Why a detector did not run, in terms of what the run's inputs actually hold.

A table is absent for two reasons: no input of its kind was ingested, or the inputs were ingested
and had nothing of that kind to say. The second is not a skip: NCCL logs without a WARN mean no NCCL
error, logs that echo no ``NCCL_*`` setting mean none was set (NCCL echoes the ones that are), a job
log without watchdog timeouts or stall warnings had none. :func:`skip_reason` tells them apart.
"""

from __future__ import annotations

from analyzer.store.run_store import RunStore

#: tables that logs produce only when the event happened: with logs ingested, absent means "none"
EVENT_TABLES = frozenset({"nccl_errors", "watchdog_timeouts", "horovod_stalls", "nccl_env", "worker_exits", "nccl_ras"})

_WHY = {
    "spans": "no Horovod timeline was ingested",
    "ticks": "the timeline has no rank-ready ticks at all (they come from negotiations; a file cut before "
    "any, or written with the response cache's negotiation skipped from the start)",
    "nccl_processes": "the job logs hold no NCCL_DEBUG=INFO records (run with NCCL_DEBUG=INFO to get them)",
    "nccl_comm_ranks": "the NCCL logs show no communicator init lines (NCCL_DEBUG_SUBSYS must include INIT)",
    "autotune": "no Horovod autotune log (HOROVOD_AUTOTUNE_LOG) was ingested",
}


def skip_reason(requires: tuple[str, ...], store: RunStore, why_required: str) -> str | None:
    """Why a detector needing ``requires`` cannot run on ``store`` (None: it can, or its tables are
    absent only because the ingested logs had nothing of the kind, which is a result, not a skip)."""
    missing = [t for t in requires if not store.has_table(t)]
    if not missing:
        return None
    has_logs = any(e["kind"] == "job_log" for e in store.inputs)
    missing = [t for t in missing if not (has_logs and t in EVENT_TABLES)]
    if not missing:
        return None
    if "spans" in missing or (not has_logs and any(t.startswith("nccl") for t in missing)):
        reasons = [why_required]  # no input of the kind at all: the detector's own words
    else:
        reasons = [_WHY.get(t, why_required) for t in missing]
    return f"needs table(s) {', '.join(missing)}: {'; '.join(dict.fromkeys(reasons))}"
