"""Before/after pairs for ``hvd-analyze compare``: two scenarios of :mod:`capture` run back to back
(the same machine state for both), with what the comparison must say.

    python -m sample_traces.capture --pair NAME      # into sample_traces/compare/NAME/{before,after}

``tests/test_compare_captured.py`` checks every committed pair against its :class:`Pair`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pair:
    before: str  # scenario names of capture.SCENARIOS
    after: str
    about: str
    direction: str  # the step time's expected direction: faster, slower or unchanged
    fix: dict[str, str] = field(default_factory=dict)  # finding code of BEFORE -> fix-check verdict
    stopped_being_late: tuple[int, ...] = ()


PAIRS: dict[str, Pair] = {
    "straggler_removed": Pair(
        "straggler_nocache",
        "straggler_fixed",
        "Rank 1 sleeps 100 ms a step, then nobody sleeps (response cache off on both sides).",
        "faster",
        {"timeline.straggler": "as predicted"},
        stopped_being_late=(1,),
    ),
    "cycle_default": Pair(
        "cycle_long",
        "cycle_default",
        "HOROVOD_CYCLE_TIME=40, then Horovod's default 1 ms (cycle markers on both sides).",
        "faster",
        {"timeline.cycle_time_high": "as predicted"},
    ),
    "fusion_default": Pair(
        "fusion_tiny",
        "fusion_default",
        "HOROVOD_FUSION_THRESHOLD=1024, then Horovod's default. On Gloo over localhost a collective costs "
        "little more than the copies into the fusion buffer it saves, so the fix check finds the predicted "
        "saving is not there: the analyzer's estimate assumes a per-collective cost this transport does not have.",
        "unchanged",
        {"timeline.fusion_fragmented": "no effect", "timeline.tensor_over_fusion_threshold": "no effect"},
    ),
    "cache_off": Pair(
        "straggler_cached",
        "straggler_nocache",
        "A rank sleeps 100 ms a step with the response cache on (the late rank cannot be named), then the "
        "same job with HOROVOD_CACHE_CAPACITY=0 as the advice says: the step time stays, the straggler is named.",
        "unchanged",
        {"timeline.negotiation_wait": "diagnostic"},
    ),
    "healthy_again": Pair(
        "healthy_np2",
        "healthy_np2",
        "The same healthy job twice: noise is not a regression.",
        "unchanged",
    ),
}


def expected_md(name: str, pair: Pair) -> str:
    lines = [
        f"# {name}",
        "",
        pair.about,
        "",
        f"`before/` is scenario `{pair.before}`, `after/` is scenario `{pair.after}` (sample_traces/capture), "
        "captured back to back on the same machine.",
        "",
        "`hvd-analyze compare before after` must say:",
        f"- the step time: {pair.direction}"
        + (" (significant)" if pair.direction != "unchanged" else " (no significant change)"),
    ]
    lines += [f"- fix check of `{code}`: {verdict}" for code, verdict in pair.fix.items()]
    if not pair.fix:
        lines.append("- no fix-check row")
    if pair.stopped_being_late:
        lines.append(f"- rank(s) {', '.join(map(str, pair.stopped_being_late))} stopped being late")
    return "\n".join(lines) + "\n"
