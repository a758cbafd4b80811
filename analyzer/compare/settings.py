"""The Horovod and NCCL settings a run shows, and how they changed between two runs.

A timeline never records the environment, but it shows some settings through their effects: the
response cache (rank ticks after the first step or not), the fusion threshold (bounds read off
the fused batches), the cycle time (regular ``CYCLE_START`` markers) and cycle marking itself.
NCCL echoes the ``NCCL_*`` variables set by the environment; an autotune log shows that Horovod
tuned. What the evidence cannot show, the user can declare (``compare --after-set K=V``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from analyzer.compare.types import SettingChangeDoc
from analyzer.report.model import AnalysisReport

DECLARED = "declared"


@dataclass(frozen=True, slots=True)
class Seen:
    """A setting as a run shows it: its exact value, or the numeric range [low, high) it lies in."""

    text: str
    source: str
    exact: str | None = None
    low: float | None = None
    high: float | None = None

    def admits(self, value: str) -> bool | None:
        """Whether the run is consistent with ``value`` (None: it cannot tell)."""
        if self.exact is not None:
            a, b = _number(self.exact), _number(value)
            return a == b if a is not None and b is not None else self.exact.strip() == value.strip()
        v = _number(value)
        if self.low is None or v is None:
            return None
        return self.low <= v < (self.high if self.high is not None else math.inf)


def _number(text: str) -> float | None:
    try:
        v = float(text.strip())
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def shown_settings(doc: AnalysisReport, declared: Mapping[str, str] | None = None) -> dict[str, Seen]:
    """What ``doc`` (one job's report) shows of the settings, then what the user ``declared``."""
    seen: dict[str, Seen] = {}
    tl = doc.main_timeline
    if tl is not None:
        facts = next((e["timeline"] for e in doc.inputs if e["id"] == tl["input_id"]), None)
        cache = facts["response_cache"] if facts else None
        if cache == "off":
            seen["HOROVOD_CACHE_CAPACITY"] = Seen("0 (the response cache is off)", "timeline", exact="0")
        elif cache == "on":
            seen["HOROVOD_CACHE_CAPACITY"] = Seen("> 0 (the response cache is on)", "timeline", low=1.0)
        fusion = tl["fusion"]
        low, high = fusion["threshold_lower_bytes"], fusion["threshold_upper_bytes"]
        if low is not None or high is not None:
            seen["HOROVOD_FUSION_THRESHOLD"] = Seen(
                fusion["threshold_text"] + " (read off the fused batches)",
                "timeline",
                low=float(low or 0),
                high=float(high) if high is not None else None,
            )
        cycle = tl["cycle"]
        if cycle is not None and cycle["confidence"] == "high":
            ms = cycle["cycle_ms"]
            seen["HOROVOD_CYCLE_TIME"] = Seen(
                f"about {ms:.3g} ms (CYCLE_START markers)", "timeline", low=ms * 0.85, high=ms * 1.15
            )
        if cycle is not None and cycle["method"] == "markers":
            seen["HOROVOD_TIMELINE_MARK_CYCLES"] = Seen(
                "1 (the timeline has CYCLE_START markers)", "timeline", exact="1"
            )
    nccl = doc.nccl
    if nccl is not None:
        values: dict[str, set[str]] = {}
        for p in nccl["processes"]:
            for var, value in p["env"].items():
                values.setdefault(var, set()).add(value)
        for var, vals in sorted(values.items()):
            one = next(iter(vals)) if len(vals) == 1 else None
            text = one if one is not None else ", ".join(sorted(vals)) + " (differs between processes)"
            seen[var] = Seen(text, "nccl log", exact=one)
        if nccl["autotune"] is not None:
            seen["HOROVOD_AUTOTUNE"] = Seen("1 (an autotune log)", "autotune log", exact="1")
    for var, value in (declared or {}).items():
        seen[var] = Seen(value, DECLARED, exact=value)
    return seen


def _changed(a: Seen, b: Seen) -> Literal["yes", "no", "unknown"]:
    if (a.exact, a.low, a.high) == (b.exact, b.low, b.high):
        return "no"  # the same evidence on both sides
    if a.exact is not None and b.exact is not None:
        return "no" if a.admits(b.exact) else "yes"
    exact, ranged = (a, b) if a.exact is not None else (b, a) if b.exact is not None else (None, None)
    if exact is not None and ranged is not None:
        return "yes" if ranged.admits(exact.exact or "") is False else "unknown"
    if a.low is not None and b.low is not None:
        a_high, b_high = a.high if a.high is not None else math.inf, b.high if b.high is not None else math.inf
        return "yes" if a_high <= b.low or b_high <= a.low else "unknown"
    return "unknown"


def setting_changes(before: Mapping[str, Seen], after: Mapping[str, Seen]) -> list[SettingChangeDoc]:
    """Every setting either side shows, changed ones first."""
    out: list[SettingChangeDoc] = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        out.append(
            {
                "name": name,
                "before": {"text": a.text, "source": a.source} if a else None,
                "after": {"text": b.text, "source": b.source} if b else None,
                "changed": _changed(a, b) if a and b else "unknown",
            }
        )
    order = {"yes": 0, "unknown": 1, "no": 2}
    return sorted(out, key=lambda c: order[c["changed"]])
