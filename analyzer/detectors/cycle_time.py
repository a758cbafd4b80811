"""``timeline.cycle_time_high``: Horovod's cycle is a large share of the step.

Horovod's background loop looks for ready tensors once per cycle
(``HOROVOD_CYCLE_TIME``), so every gradient waits for the next cycle boundary, and the
last one of a step does so with nothing left to overlap. Signal: the cycle estimate of
:mod:`analyzer.timeline.cycles` (regular markers: regularity >= ``cycle.min_regularity``; or,
without markers, the coordinator's responses never closer than a floor many of them sit at) is
at least ``cycle.min_cycle_us`` and ``cycle.min_step_share`` of the median step.

Impact: half the difference between the current and the suggested cycle per step (the
expected wait of the step's last gradient for the next cycle), low confidence.
"""

from __future__ import annotations

from analyzer.detectors._common import at, ms, step_impact
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.timeline.model import TimelineModel

CODE = "timeline.cycle_time_high"


def suggested_cycle_ms(step_us: float) -> float:
    """2% of the step, between 1 ms (the default since Horovod 0.21) and 5 ms, in 0.5 ms steps."""
    return max(1.0, min(5.0, round(step_us / 1e3 * 0.02 * 2) / 2))


class CycleTimeHigh(TimelineDetector):
    name = "cycle_time_high"
    code = CODE

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        t = ctx.config.thresholds.cycle
        step_us = model.median_step_us
        cycle = model.cycle
        if not step_us or cycle is None or not cycle.confident:
            return None  # markers, or responses never closer than a floor (analyzer.timeline.cycles)
        if cycle.method == "markers" and cycle.regularity < t.min_regularity:
            return None
        if cycle.cycle_us < max(t.min_cycle_us, t.min_step_share * step_us):
            return None
        new_ms = suggested_cycle_ms(step_us)
        saved = max(cycle.cycle_us - new_ms * 1e3, 0.0) / 2
        how = (
            "the median spacing of CYCLE_START markers"
            if cycle.method == "markers"
            else "the spacing of the coordinator's responses, never closer than "
            f"{ms(cycle.low_us)} and mostly {ms(cycle.low_us)}-{ms(cycle.high_us)} apart at their closest "
            "(no CYCLE_START markers in the file)"
        )
        first = model.spans.loc[model.spans["step"] >= 0, "start_offset"].min()
        return Finding(
            code=CODE,
            severity=Severity.WARNING,
            title=f"Horovod's cycle ({ms(cycle.cycle_us)}) is {cycle.cycle_us / step_us:.0%} of the step",
            summary=(
                f"{model.path}: from {how}, the background loop runs every {ms(cycle.cycle_us)}, against a "
                f"{ms(step_us)} median step. Every gradient waits for the next cycle to be negotiated and "
                "reduced; the step's last one waits with nothing to overlap."
            ),
            detector=self.name,
            evidence=(
                Evidence(
                    summary=f"cycle {ms(cycle.cycle_us)} ({ms(cycle.low_us)}-{ms(cycle.high_us)}) from "
                    f"{cycle.samples} gaps ({cycle.method}, confidence {cycle.confidence}, "
                    f"{cycle.regularity:.0%} of the gaps a whole number of cycles)",
                    sources=(at(model, first),),
                    metrics={
                        "cycle_ms": cycle.cycle_us / 1e3,
                        "step_ms": step_us / 1e3,
                        "regularity": cycle.regularity,
                    },
                ),
            ),
            impact=step_impact(
                model,
                saved,
                "low",
                f"the step's last gradient waits half a cycle on average: {ms(cycle.cycle_us / 2)} "
                f"now, {ms(new_ms * 500)} with {new_ms:g} ms",
            ),
            suggestions=(
                Suggestion(
                    action=f"Set HOROVOD_CYCLE_TIME={new_ms:g} (milliseconds). Shorter cycles fuse fewer tensors per "
                    "batch; check timeline.fusion_fragmented on the next run, or let horovodrun --autotune pick.",
                    env={"HOROVOD_CYCLE_TIME": f"{new_ms:g}"},
                ),
            ),
        )
