"""``compare_sides(before, after) -> CompareDocument``: two runs side by side, from their reports
and their steady step times. No I/O: the CLI (:mod:`analyzer.compare.sides`) and the app build
the :class:`Side` values, the renderers draw the document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from analyzer.compare.diff import (
    cycle_changes,
    finding_changes,
    fusion_changes,
    lateness_changes,
    nccl_changes,
    phase_changes,
    value_change,
)
from analyzer.compare.fixcheck import fix_checks
from analyzer.compare.settings import setting_changes, shown_settings
from analyzer.compare.stats import step_shift
from analyzer.compare.types import CompareDocument, FindingChangeDoc, FixCheckDoc, SideDoc, StepShiftDoc
from analyzer.config import CompareThresholds
from analyzer.errors import UsageError
from analyzer.report.job_view import report_for_job
from analyzer.report.model import AnalysisReport
from analyzer.version import __version__


@dataclass(frozen=True, slots=True)
class Side:
    """One run to compare: its report, the steady step times (seconds) of each of its timelines by
    input id, the job to compare (id or name; None: the job of the run's main timeline) and the
    settings the user declares for it."""

    label: str
    source: str
    report: AnalysisReport
    steps_s: Mapping[str, Sequence[float]]
    job: str | None = None
    declared: Mapping[str, str] = field(default_factory=dict)
    parts: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def narrowed(self) -> tuple[AnalysisReport, str | None]:
        """The report of the compared job, and that job's id."""
        jobs = self.report.jobs
        if self.job is not None:
            found = [j for j in jobs if self.job in (j["id"], j["name"])]
            if not found:
                names = ", ".join(j["name"] for j in jobs) or "none"
                raise UsageError(f"{self.label} ({self.source}) has no job {self.job!r}; its jobs: {names}")
            return report_for_job(self.report, found[0]["id"]), found[0]["id"]
        main = self.report.main_timeline
        with_traces = next((j for j in jobs if j["traces"]), None)
        job = next(
            (j for j in jobs if main and main["path"] in j["timelines"]), with_traces or (jobs[0] if jobs else None)
        )
        return (report_for_job(self.report, job["id"]), job["id"]) if job else (self.report, None)

    def split(self, report: AnalysisReport) -> Mapping[str, float]:
        """The mean step of ``report``'s main timeline split into its parts (empty: not known)."""
        tl = report.main_timeline
        return self.parts.get(tl["input_id"], {}) if tl else {}

    def steps(self, report: AnalysisReport) -> np.ndarray:
        """The step times of ``report``'s main timeline, else of its per-rank traces."""
        tl = report.main_timeline
        if tl is not None:
            return np.asarray(self.steps_s.get(tl["input_id"], []), dtype=np.float64)
        traces = report.rank_traces
        return np.asarray(self.steps_s.get(traces_key(traces[0]["job"]), []) if traces else [], dtype=np.float64)


def traces_key(job: str) -> str:
    """The key of a job's per-rank traces' step times in :attr:`Side.steps_s`."""
    return f"traces:{job}"


def _side_doc(side: Side, report: AnalysisReport, job: str | None, steps: int) -> SideDoc:
    name = next((j["name"] for j in side.report.jobs if j["id"] == job), None)
    tl = report.main_timeline
    return {
        "label": side.label,
        "source": side.source,
        "job": name,
        "timeline": tl["path"] if tl else None,
        "verdict": report.verdict()["status"],
        "steps": steps,
    }


def compare_sides(before: Side, after: Side, t: CompareThresholds | None = None) -> CompareDocument:
    """The comparison of ``after`` with ``before``."""
    t = t or CompareThresholds()
    doc_b, job_b = before.narrowed()
    doc_a, job_a = after.narrowed()
    steps_b, steps_a = before.steps(doc_b), after.steps(doc_a)
    shift = step_shift(steps_b, steps_a, t)
    seen_b, seen_a = shown_settings(doc_b, before.declared), shown_settings(doc_a, after.declared)
    findings = finding_changes(doc_b, doc_a)
    checks = fix_checks(doc_b, doc_a, seen_a, shift, t)
    split_b, split_a = before.split(doc_b), after.split(doc_a)
    return {
        "schema_version": 1,
        "tool": "hvd-analyze",
        "tool_version": __version__,
        "headline": headline(shift, checks, [f["change"] for f in findings if "warning" in _severities(f)]),
        "before": _side_doc(before, doc_b, job_b, len(steps_b)),
        "after": _side_doc(after, doc_a, job_a, len(steps_a)),
        "steps": shift,
        "step_split": [value_change(n, split_b.get(n), split_a.get(n)) for n in dict.fromkeys([*split_b, *split_a])],
        "phases": phase_changes(doc_b, doc_a),
        "fusion": fusion_changes(doc_b, doc_a),
        "cycle": cycle_changes(doc_b, doc_a),
        "lateness": lateness_changes(doc_b, doc_a),
        "nccl": nccl_changes(doc_b, doc_a),
        "settings": setting_changes(seen_b, seen_a),
        "findings": findings,
        "fix_check": checks,
    }


def _severities(f: FindingChangeDoc) -> set[str]:
    """``warning`` when the finding is at warning or above on either side (what the headline counts)."""
    return {
        "warning" if s in ("warning", "critical") else "info" for s in (f["severity_before"], f["severity_after"]) if s
    }


def headline(shift: StepShiftDoc, checks: Sequence[FixCheckDoc], changes: Sequence[str]) -> str:
    """One sentence: the step time's change and whether it is more than noise, then the fixes."""
    m = shift["median"]
    if m is None:
        first = f"Cannot tell whether the step time changed: {shift['note']}"
    else:
        move = f"median step {m['before_ms']:.3g} -> {m['after_ms']:.3g} ms ({(m['ratio'] - 1):+.0%})"
        if shift["significant"]:
            first = f"AFTER is {shift['direction']}: {move}, 95% interval {m['ci_low_ms']:+.3g} to {m['ci_high_ms']:+.3g} ms"
        else:
            first = f"No significant change of the step time: {move}, {shift['note']}"
    parts = [first]
    resolved, new = changes.count("resolved"), changes.count("new")
    if resolved or new:
        parts.append(f"{resolved} finding(s) at warning or above resolved, {new} new")
    verdicts = [c["verdict"] for c in checks if c["trigger"] in ("setting applied", "finding resolved")]
    if verdicts:
        parts.append("fix check: " + ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts)))
    return "; ".join(parts) + "."
