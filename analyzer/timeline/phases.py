"""Where a step's time goes: per-step union time of each phase.

Phases are ``NEGOTIATE`` (all ``NEGOTIATE_*`` spans: waiting for every rank to be
ready), each activity name (``QUEUE``, ``WAIT_FOR_DATA``, ``MEMCPY_IN_FUSION_BUFFER``,
``NCCL_ALLREDUCE``, ``GLOO_ALLREDUCE``, ...), and ``outside Horovod``: the part of the
step (between two synchronisation points) that no Horovod span covers, i.e. compute and
input on rank 0 that does not overlap communication. Each phase is the union of its
spans across pids, so a fused batch counts once. Phases overlap each other (negotiation
of one tensor runs while another is reduced), so they do not add up to the step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzer.timeline.model import TimelineModel
from analyzer.timeline.steps import union_of

NEGOTIATE = "NEGOTIATE"
OUTSIDE = "outside Horovod"


@dataclass(frozen=True, slots=True)
class Phase:
    name: str
    median_us: float
    mean_us: float
    share_of_step: float  # median_us / median step
    steps: int


def phase_table(model: TimelineModel) -> pd.DataFrame:
    """Per steady step and phase: union time in us (columns step, phase, us)."""
    steady = model.steady
    if steady.empty:
        return pd.DataFrame(
            {"step": pd.Series(dtype="int64"), "phase": pd.Series(dtype="object"), "us": pd.Series(dtype="int64")}
        )
    n = int(model.steps["step"].max()) + 1
    end = model.steps["end_us"].to_numpy(dtype=float, na_value=np.nan)
    lo = np.r_[np.nan, end[:-1]]
    window_lo = np.where(np.isnan(lo), 0, lo).astype(np.int64)
    window_hi = np.where(np.isnan(end), 0, end).astype(np.int64)
    spans = model.spans
    # arrays, not a frame with a phase column: 1.7 M strings per GB of timeline made into a column
    # and grouped cost 0.4 s, against codes and masks
    inside = spans["step"].to_numpy() >= 0
    step, start, end_us = (spans[c].to_numpy()[inside] for c in ("step", "start_us", "end_us"))
    negotiate = (spans["kind"] == "negotiate").to_numpy()[inside]
    activity = (spans["kind"] == "activity").to_numpy()[inside]
    name = spans["name"].astype("category")  # typed_spans' codes: factorized as ints, not 1.7 M strings
    codes, found = pd.factorize(name.cat.codes.to_numpy()[inside][activity])
    names = name.cat.categories[found]
    rows_of: dict[str, np.ndarray] = {NEGOTIATE: np.flatnonzero(negotiate)}
    at = np.flatnonzero(activity)
    for k, name in enumerate(names):  # an activity named like a phase joins it, as a group by name did
        mine = at[codes == k]
        rows_of[str(name)] = np.union1d(rows_of[str(name)], mine) if str(name) in rows_of else mine
    steady_steps = steady["step"].to_numpy()
    rows = []
    for name in sorted(rows_of):
        r = rows_of[name]
        if not len(r):
            continue
        totals = union_of(step[r], start[r], end_us[r], window_lo, window_hi, n)
        rows.append(pd.DataFrame({"step": steady_steps, "phase": name, "us": totals[steady_steps]}))
    covered = union_of(step, start, end_us, window_lo, window_hi, n)
    dur = steady["duration_us"].to_numpy(dtype=np.int64)
    rows.append(
        pd.DataFrame({"step": steady_steps, "phase": OUTSIDE, "us": np.maximum(dur - covered[steady_steps], 0)})
    )
    return pd.concat(rows, ignore_index=True)


def phase_summary(model: TimelineModel) -> list[Phase]:
    """Median and mean per steady step of every phase, largest first."""
    table = phase_table(model)
    step = model.median_step_us
    if table.empty or not step:
        return []
    out = [
        Phase(str(name), float(g["us"].median()), float(g["us"].mean()), float(g["us"].median()) / step, len(g))
        for name, g in table.groupby("phase", sort=False)
    ]
    return sorted(out, key=lambda p: (-p.median_us, -p.mean_us, p.name))
