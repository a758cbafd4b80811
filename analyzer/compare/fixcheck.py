"""The fix check: for each finding of BEFORE whose suggested setting AFTER shows (or that AFTER no
longer has), the predicted saving next to the observed change of the median step, and a verdict.

Settings that only gather evidence (the response cache off for rank ticks, NCCL_DEBUG, cycle
markers) promise no speed: their verdict is ``diagnostic``, with what AFTER learnt that BEFORE
could not say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from analyzer.compare.diff import finding_key
from analyzer.compare.settings import DECLARED, Seen
from analyzer.compare.types import FixCheckDoc, FixTrigger, FixVerdict, StepShiftDoc
from analyzer.config import CompareThresholds
from analyzer.findings import Finding, Severity, Suggestion
from analyzer.report.model import AnalysisReport

#: settings that gather evidence and promise no speed
DIAGNOSTIC = frozenset(
    {
        "HOROVOD_CACHE_CAPACITY",
        "HOROVOD_TIMELINE",
        "HOROVOD_TIMELINE_MARK_CYCLES",
        "HOROVOD_AUTOTUNE_LOG",
        "HOROVOD_STALL_CHECK_TIME_SECONDS",
        "NCCL_DEBUG",
        "NCCL_DEBUG_SUBSYS",
        "NCCL_DEBUG_FILE",
        "NCCL_TRACE_BUFFER_SIZE",
        "NCCL_DUMP_ON_TIMEOUT",
    }
)

Status = Literal["applied", "not applied", "not shown", "declared"]


def _status(name: str, value: str, after: Mapping[str, Seen]) -> Status:
    seen = after.get(name)
    if seen is None:
        return "not shown"
    ok = seen.admits(value)
    if ok is None:
        return "not shown"
    if not ok:
        return "not applied"
    return "declared" if seen.source == DECLARED else "applied"


def _pick(f: Finding, after: Mapping[str, Seen]) -> tuple[Suggestion | None, dict[str, Status]]:
    """The first suggestion with settings that AFTER shows applied; else the first with settings."""
    first: tuple[Suggestion | None, dict[str, Status]] = (None, {})
    for s in f.suggestions:
        if not s.env:
            continue
        status = {k: _status(k, v, after) for k, v in s.env.items()}
        if all(v in ("applied", "declared") for v in status.values()):
            return s, status
        if first[0] is None:
            first = (s, status)
    return first


def _learnt(before: AnalysisReport, after: AnalysisReport) -> str:
    keys = {finding_key(f) for f in before.findings}
    new = [f for f in after.findings if finding_key(f) not in keys and f.severity is not Severity.INFO]
    if not new:
        return "AFTER shows no finding BEFORE did not"
    named = [f.code + (f" (rank {', '.join(map(str, f.ranks))})" if f.ranks else "") for f in new]
    return "AFTER adds " + "; ".join(named)


def fix_checks(
    before: AnalysisReport,
    after: AnalysisReport,
    seen_after: Mapping[str, Seen],
    shift: StepShiftDoc,
    t: CompareThresholds,
) -> list[FixCheckDoc]:
    """One row per finding of BEFORE with a suggested setting (warning or worse, or applied) or with a
    predicted impact that AFTER resolved."""
    after_keys = {finding_key(f) for f in after.findings}
    rows: list[FixCheckDoc] = []
    done: set[str] = set()
    for f in before.findings:
        key = finding_key(f)
        if key in done:
            continue
        done.add(key)
        resolved = key not in after_keys
        suggestion, status = _pick(f, seen_after)
        applied = bool(status) and all(v in ("applied", "declared") for v in status.values())
        predicted = round(f.impact.seconds_per_step * 1e3, 3) if f.impact else None
        if applied:
            trigger: FixTrigger = "setting applied"
        elif resolved and predicted is not None:
            trigger = "finding resolved"
        elif status and f.severity is not Severity.INFO:
            trigger = "setting not applied" if "not applied" in status.values() else "setting not shown"
        else:
            continue
        verdict, observed, note = _verdict(trigger, suggestion, predicted, shift, t)
        if trigger == "setting applied" and verdict == "diagnostic":
            note = _learnt(before, after)
        if f.impact and f.impact.confidence == "low" and verdict not in ("diagnostic", "not applied", "not shown"):
            note += "; the prediction was a low-confidence estimate"
        rows.append(
            {
                "code": f.code,
                "title": f.title,
                "trigger": trigger,
                "settings": dict(suggestion.env) if suggestion else {},
                "setting_status": status,
                "predicted_ms": predicted,
                "predicted_confidence": f.impact.confidence if f.impact else None,
                "observed_ms": observed,
                "verdict": verdict,
                "finding_after": "resolved" if resolved else "persisting",
                "note": note,
            }
        )
    shared = [
        r["code"]
        for r in rows
        if r["trigger"] in ("setting applied", "finding resolved") and r["verdict"] != "diagnostic"
    ]
    if len(shared) > 1:
        for r in rows:
            if r["code"] in shared:
                others = ", ".join(c for c in shared if c != r["code"])
                r["note"] += f"; the same change also addressed {others}: the observed change is theirs too"
    return rows


def _verdict(
    trigger: FixTrigger,
    suggestion: Suggestion | None,
    predicted: float | None,
    shift: StepShiftDoc,
    t: CompareThresholds,
) -> tuple[FixVerdict, float | None, str]:
    median = shift["median"]
    observed = round(-median["delta_ms"], 3) if median else None
    if trigger == "setting not applied":
        return "not applied", observed, "AFTER shows a value other than the suggested one"
    if trigger == "setting not shown":
        return "not shown", observed, "AFTER's evidence does not show this setting (declare it with --after-set)"
    if trigger == "setting applied" and suggestion and all(k in DIAGNOSTIC for k in suggestion.env):
        return "diagnostic", observed, ""
    if shift["direction"] == "unknown" or observed is None:
        return "untestable", observed, shift["note"]
    if shift["direction"] == "slower":
        return "worse", observed, f"the median step is {-observed:.3g} ms slower, and significantly"
    if shift["direction"] == "unchanged":
        return "no effect", observed, f"no significant change of the step time ({shift['note']})"
    if predicted is None:
        return "improved", observed, "the finding gave no estimate to hold it against"
    if observed >= t.as_predicted * predicted:
        return "as predicted", observed, f"saved {observed:.3g} ms of the {predicted:.3g} ms predicted"
    return "partly", observed, f"saved {observed:.3g} ms of the {predicted:.3g} ms predicted"
