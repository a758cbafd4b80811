"""The report's ``nccl`` section: processes, communicators, errors, watchdog timeouts,
Horovod stalls and the autotune result, from :class:`analyzer.nccl.model.NcclModel`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analyzer.nccl.model import NcclModel, opt_int
from analyzer.report.types import (
    AutotuneDoc,
    NcclSection,
    ProcessDoc,
    StallDoc,
    VersionDoc,
    WatchdogDoc,
)

MAX_ERRORS = 500


def nccl_section(model: NcclModel) -> NcclSection | None:
    """None when the store holds no job log."""
    if model.empty:
        return None
    procs = model.processes
    return {
        "hosts": sorted({h for h in procs["host"] if isinstance(h, str)}) if not procs.empty else [],
        "processes": [_process(r) for r in procs.itertuples(index=False)],
        "versions": [_version(r) for r in model.nccl_versions.itertuples(index=False)],
        "communicators": model.communicators,
        "errors": model.classified_errors[:MAX_ERRORS],
        "watchdog_timeouts": [_watchdog(r) for r in model.watchdog_timeouts.itertuples(index=False)],
        "horovod_stalls": [_stall(r) for r in model.horovod_stalls.itertuples(index=False)],
        "autotune": autotune_result(model),
    }


def _process(r: Any) -> ProcessDoc:
    interfaces = ([r.bootstrap_interface] if isinstance(r.bootstrap_interface, str) else []) + [
        i for i in r.socket_interfaces if i != r.bootstrap_interface
    ]
    return {
        "host": r.host if isinstance(r.host, str) else None,
        "pid": opt_int(r.pid),
        "file": r.file,
        "first_line": int(r.first_line),
        "cuda_devs": [int(d) for d in r.cuda_devs],
        "ranks": list(r.ranks),
        "nranks": list(r.nranks),
        "version": r.version if isinstance(r.version, str) else None,
        "version_source": r.version_source if isinstance(r.version_source, str) else None,
        "version_range": [r.wording_min, r.wording_max] if isinstance(r.wording_min, str) else None,
        "network": r.net if isinstance(r.net, str) else None,
        "transports": list(r.transports),
        "interfaces": interfaces,
        "ib_hcas": list(r.ib_hcas),
        "gdrdma": bool(r.gdrdma) if isinstance(r.gdrdma, bool) else None,
        "init_complete": bool(r.init_complete),
        "warns": int(r.warns),
        "env": {str(k): str(v) for k, v in r.env.items()},
    }


def autotune_result(model: NcclModel) -> AutotuneDoc | None:
    """The best autotune row: the last row when tuning finished (Horovod appends the best
    set, identical to an earlier row), else the highest score."""
    a = model.autotune
    if a.empty:
        return None
    rows = a.sort_values(["file", "line"])
    last = rows.iloc[-1]
    earlier = rows.iloc[:-1]
    params = ["hierarchical_allreduce", "hierarchical_allgather", "cycle_time_ms", "fusion_threshold_mb"]
    finished = bool(len(earlier)) and bool((earlier[params] == last[params]).all(axis=1).any())
    best = last if finished else rows.loc[rows["score"].idxmax()]
    return {
        "file": str(best["file"]),
        "line": int(best["line"]),
        "rows": len(rows),
        "finished": finished,
        "layout": str(best["layout"]),
        "cycle_time_ms": float(best["cycle_time_ms"]),
        "fusion_threshold_mb": float(best["fusion_threshold_mb"]),
        "score": float(best["score"]),
        "hierarchical_allreduce": bool(best["hierarchical_allreduce"]),
        "hierarchical_allgather": bool(best["hierarchical_allgather"]),
        "cache_enabled": None if pd.isna(best["cache_enabled"]) else bool(best["cache_enabled"]),
    }


# rows of the log tables (pandas' itertuples: a column with a null comes out as floats, NaN for null)
def _version(r: Any) -> VersionDoc:
    return {
        "file": str(r.file),
        "host": _text(r.host),
        "pid": opt_int(r.pid),
        "line": int(r.line),
        "version": str(r.version),
        "cuda": str(r.cuda),
        "source": str(r.source),
    }


def _watchdog(r: Any) -> WatchdogDoc:
    return {
        "file": str(r.file),
        "line": int(r.line),
        "rank": opt_int(r.rank),
        "global_rank": opt_int(r.global_rank),
        "seq": opt_int(r.seq),  # a SeqNum is never 7752.0
        "op": str(r.op),
        "numel_in": opt_int(r.numel_in),
        "numel_out": opt_int(r.numel_out),
        "timeout_ms": int(r.timeout_ms),
        "ran_ms": int(r.ran_ms),
        "pg": _text(r.pg),
        "last_enqueued": opt_int(r.last_enqueued),
        "last_completed": opt_int(r.last_completed),
    }


def _stall(r: Any) -> StallDoc:
    return {
        "file": str(r.file),
        "line": int(r.line),
        "rank": int(r.rank),
        "shutdown": bool(r.shutdown),
        "tensors": [str(t) for t in r.tensors],
        "more": bool(r.more),
    }


def _text(v: object) -> str | None:
    return v if isinstance(v, str) else None
