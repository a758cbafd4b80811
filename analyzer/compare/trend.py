"""``batch``'s per-job trend: when the same job appears in several runs, its step time over the runs
(in the order of the runs' names: name runs by date or sequence) and the run where a regression
started, each run tested against the one before it as ``compare`` does (:mod:`analyzer.compare.stats`).

A job is "the same" across runs by where it lies inside its run (the folder of its timeline relative
to the run's folder, ``.`` for a timeline at the run's top) and by what it is: the same gradient
tensors, ranks and bytes per step (:func:`analyzer.compare.sides.job_fingerprints`). Unrelated runs
that happen to sit at the same place get no trend.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TypedDict

import numpy as np

from analyzer.compare.stats import sample, step_shift
from analyzer.compare.types import Direction
from analyzer.config import CompareThresholds
from analyzer.report.model import AnalysisReport

#: steps kept per job and run for the trend's tests (evenly spaced over the run)
TREND_SAMPLE = 1000


class JobSteps(TypedDict):
    """One job of one run: its place in the run and a sample of its steady step times (ms)."""

    job: str
    fingerprint: str  # what the job is (its model and size): a trend joins only equal ones
    steps: int
    sample_ms: list[float]


class TrendPoint(TypedDict):
    run: str
    steps: int
    median_step_ms: float | None
    p90_step_ms: float | None
    vs_previous: Direction
    change_ms: float | None


class JobTrend(TypedDict):
    """A job found in several runs: its step time run by run and where it regressed."""

    job: str
    runs: list[TrendPoint]
    regression_started: str | None
    recovered: str | None


def job_steps(
    doc: AnalysisReport,
    steps_s: Mapping[str, Sequence[float]],
    run_path: str | None,
    fingerprints: Mapping[str, str],
) -> list[JobSteps]:
    """Each job of a run with a timeline: its folder relative to ``run_path`` (else to the folder all
    the run's jobs share), its main timeline's fingerprint (by input id in ``fingerprints``) and
    steady step times."""
    jobs = [j for j in doc.jobs if j["timelines"]]
    if not jobs:
        return []
    base = run_path if run_path and os.path.isdir(run_path) else os.path.dirname(run_path) if run_path else None
    base = os.path.abspath(base) if base else os.path.commonpath([os.path.abspath(j["folder"]) for j in jobs])
    ids = {e["path"]: e["id"] for e in doc.inputs}
    out: list[JobSteps] = []
    for j in jobs:
        main = max(j["timelines"], key=lambda t: len(steps_s.get(ids.get(t, ""), [])))
        durations = steps_s.get(ids.get(main, ""), [])
        kept = sample(np.asarray(durations, dtype=np.float64), TREND_SAMPLE) * 1e3
        out.append(
            {
                "job": os.path.relpath(os.path.abspath(j["folder"]), base),
                "fingerprint": fingerprints.get(ids.get(main, ""), ""),
                "steps": len(durations),
                "sample_ms": [round(float(v), 4) for v in kept],
            }
        )
    return out


def job_trends(runs: Sequence[tuple[str, Sequence[JobSteps]]], t: CompareThresholds | None = None) -> list[JobTrend]:
    """The trend of every job found in at least two of ``runs`` (``(run name, its jobs)`` in run order):
    the same place in its run and the same fingerprint."""
    t = t or CompareThresholds()
    by_job: dict[tuple[str, str], list[tuple[str, JobSteps]]] = {}
    for run, jobs in runs:
        for j in jobs:
            by_job.setdefault((j["job"], j["fingerprint"]), []).append((run, j))
    out: list[JobTrend] = []
    for (job, _), seen in sorted(by_job.items()):
        if len(seen) < 2:
            continue
        points: list[TrendPoint] = []
        started = recovered = None
        previous: np.ndarray | None = None
        for run, j in seen:
            ms = np.asarray(j["sample_ms"], dtype=np.float64)
            direction: Direction = "unknown"
            change = None
            if previous is not None:
                shift = step_shift(previous / 1e3, ms / 1e3, t)
                direction = shift["direction"]
                change = shift["median"]["delta_ms"] if shift["median"] else None
                if direction == "slower" and started is None:
                    started = run
                elif direction == "faster" and started is not None and recovered is None:
                    recovered = run
            points.append(
                {
                    "run": run,
                    "steps": j["steps"],
                    "median_step_ms": round(float(np.median(ms)), 4) if len(ms) else None,
                    "p90_step_ms": round(float(np.quantile(ms, 0.9)), 4) if len(ms) else None,
                    "vs_previous": direction,
                    "change_ms": change,
                }
            )
            previous = ms
        out.append({"job": job, "runs": points, "regression_started": started, "recovered": recovered})
    return out
