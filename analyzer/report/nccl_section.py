"""The report's ``nccl`` section: processes, communicators, errors, watchdog timeouts,
Horovod stalls and the autotune result, from :class:`analyzer.nccl.model.NcclModel`."""

from __future__ import annotations

import functools
import typing
from typing import Any, cast

import pandas as pd

from analyzer.nccl.model import NcclModel, opt_int
from analyzer.report.types import (
    AutotuneDoc,
    CommunicatorDoc,
    NcclErrorDoc,
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
        # rows of the log tables, whose columns are these types' keys (the JSON Schema checks them in tests)
        "versions": cast(list[VersionDoc], [_clean(r, VersionDoc) for r in model.nccl_versions.to_dict("records")]),
        "communicators": cast(list[CommunicatorDoc], model.communicators),
        "errors": cast(list[NcclErrorDoc], model.classified_errors[:MAX_ERRORS]),
        "watchdog_timeouts": cast(
            list[WatchdogDoc], [_clean(r, WatchdogDoc) for r in model.watchdog_timeouts.to_dict("records")]
        ),
        "horovod_stalls": cast(list[StallDoc], [_clean(r, StallDoc) for r in model.horovod_stalls.to_dict("records")]),
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


@functools.cache
def _int_keys(doc: type) -> frozenset[str]:
    """The keys a row type declares as whole numbers (``int`` or ``int | None``)."""
    return frozenset(k for k, t in typing.get_type_hints(doc).items() if t is int or t == int | None)


def _clean(row: dict[str, Any], doc: type) -> dict[str, Any]:
    """A table row as its ``doc`` type has it: nulls as None, numpy values as Python's, and whole
    numbers as ints (a column with a null comes out of pandas as floats: a SeqNum is never 7752.0)."""
    ints = _int_keys(doc)
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, float) and pd.isna(v):
            out[k] = None
        elif k in ints and isinstance(v, float):
            out[k] = int(v)
        elif hasattr(v, "tolist"):
            out[k] = v.tolist()
        elif hasattr(v, "item"):
            out[k] = v.item()
        else:
            out[k] = v
    return out
