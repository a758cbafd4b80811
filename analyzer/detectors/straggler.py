"""``timeline.straggler``: one or a few ranks are ready last, step after step.

Signal: rank-ready ticks of steady-state negotiations (response cache off, or evictions),
see :mod:`analyzer.timeline.lateness`. A rank is a straggler when, over at least
:data:`~analyzer.timeline.lateness.MIN_TICKED_STEPS` steady steps, it is among the last ready in at least
``straggler.min_last_share`` of the fully ticked negotiations **and** its median lateness
behind the median rank is at least ``straggler.min_late_us`` and ``straggler.min_late_share`` of
the median step. The magnitude test keeps balanced runs silent: there the last rank
changes, or is late by one cycle only (ranks processed in one cycle tick in rank order).
First-step ticks alone (response cache on) are warm-up and never confirm a straggler;
``timeline.negotiation_wait`` cites them as weak evidence.

Impact: per step, how much later than the median rank the stragglers were on the step's
last-completing negotiation (the step cannot end before it), median over steps.
"""

from __future__ import annotations

import numpy as np

from analyzer.detectors._common import at, ms, step_impact
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.timeline.lateness import (
    MIN_TICKED_STEPS,
    RankLateness,
    loss_by_step,
)
from analyzer.timeline.model import TimelineModel

CODE = "timeline.straggler"


class Straggler(TimelineDetector):
    name = "straggler"
    code = CODE
    requires = ("spans", "ticks")
    reads_rank_statistics = True

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        t = ctx.config.thresholds.straggler
        step_us = model.median_step_us
        lat = model.steady_lateness
        n_steps = len(lat.steps())
        if not step_us or n_steps < MIN_TICKED_STEPS:
            return None
        threshold = max(t.min_late_us, t.min_late_share * step_us)
        ranks = model.steady_ranks
        late = [r for r in ranks if r.last_share >= t.min_last_share and r.median_vs_median_us >= threshold]
        if not late:
            return None
        ids = tuple(r.rank for r in late)
        late_steps, per_step = loss_by_step(lat, ids)
        loss = float(np.median(per_step))
        when = _when(late_steps, _late(per_step, threshold))
        worst = late[0]
        impact = step_impact(
            model,
            loss,
            "high" if n_steps >= 10 else "medium",
            f"the late rank(s) would be ready when the median rank is (median over {n_steps} steps of their "
            "lateness on each step's last negotiation); the other ranks' speed is unchanged",
        )
        evidence = tuple(self._evidence(model, ctx.first_last_offset(model, lat, r.rank), r, n_steps) for r in late)
        others = [r for r in ranks if r.rank not in ids]
        if others:
            typical = float(np.median([r.median_us for r in others]))
            evidence += (
                Evidence(
                    f"the other {len(others)} rank(s): median lateness {ms(typical)} behind the first-ready rank",
                    metrics={"others_median_lateness_ms": typical / 1e3},
                ),
            )
        places = ctx.rank_places(model)
        hosts = tuple(sorted({places[r].host for r in ids if r in places}))
        who = ", ".join(f"{r} ({places[r].host})" if r in places else str(r) for r in ids)
        detail = ", ".join(
            f"{r} (on {places[r]}, per its NCCL log {places[r].file})" if r in places else str(r) for r in ids
        )
        where = "that host" if hosts else "its host (map rank to host with horovodrun --verbose or the job log)"
        target = f"host {', '.join(hosts)}" if hosts else "the rank's host"
        return Finding(
            code=CODE,
            severity=Severity.CRITICAL if impact and impact.fraction_of_step >= t.critical_share else Severity.WARNING,
            title=f"Rank{'s' if len(ids) > 1 else ''} {who} {'are' if len(ids) > 1 else 'is'} late: "
            f"steps wait about {ms(loss)} for {'them' if len(ids) > 1 else 'it'}, {when}",
            summary=(
                f"{model.path}: rank {worst.rank}{f' on {places[worst.rank]}' if worst.rank in places else ''} "
                f"is the last rank ready in {worst.last}/{worst.negotiations} "
                f"negotiations over {n_steps} steps (median {ms(worst.median_us)}, p90 {ms(worst.p90_us)} behind "
                f"the first-ready rank). Every allreduce waits for it; a step waits at its last negotiation, where "
                f"the late rank is a median {ms(loss)} behind the median rank, so the job loses about {ms(loss)} "
                f"per step (median step {ms(step_us)})."
            ),
            detector=self.name,
            evidence=evidence,
            impact=impact,
            suggestions=(
                Suggestion(
                    action=f"Find what is slower on rank {detail}: {where}, its input pipeline (data loading, "
                    "augmentation), CPU binding/oversubscription, GPU clocks or thermal throttling.",
                    rationale="A constant per-step delay on one rank before its gradients are ready is work "
                    "outside Horovod on that rank; tuning Horovod cannot hide it.",
                ),
                Suggestion(
                    action=f"If {target} is degraded, exclude it (horovodrun -H / --hostfile) or give the rank "
                    "less work.",
                ),
            ),
            ranks=ids,
            hosts=hosts,
        )

    @staticmethod
    def _evidence(model: TimelineModel, first: int | None, r: RankLateness, n_steps: int) -> Evidence:
        return Evidence(
            summary=(
                f"rank {r.rank}: last ready in {r.last}/{r.negotiations} fully ticked negotiations "
                f"({r.last_share:.0%}) over {n_steps} steady steps; lateness median {ms(r.median_us)}, "
                f"p90 {ms(r.p90_us)}; {ms(r.median_vs_median_us)} behind the median rank"
            ),
            sources=() if first is None else (at(model, first),),
            metrics={
                "rank": float(r.rank),
                "last": float(r.last),
                "negotiations": float(r.negotiations),
                "median_lateness_ms": r.median_us / 1e3,
                "p90_lateness_ms": r.p90_us / 1e3,
                "vs_median_ms": r.median_vs_median_us / 1e3,
            },
        )


#: a rank late on at least this share of the steps is late "every step" (noise makes a few exceptions)
EVERY_STEP_SHARE = 0.9


def _late(per_step: np.ndarray, threshold: float) -> np.ndarray:
    """The steps the rank(s) held up: a loss of at least half their typical loss when late (and at
    least the threshold), so that a few noisy steps of a healthy stretch do not count."""
    over = per_step[per_step >= threshold]
    bar = max(threshold, 0.5 * float(np.median(over))) if len(over) else threshold
    return per_step >= bar


def _when(steps: np.ndarray, late: np.ndarray) -> str:
    """When the rank(s) were late: every step, from a step on (late in nearly every step after it,
    rarely before), or in some of the steps."""
    n, k = len(late), int(late.sum())
    if not n or k >= EVERY_STEP_SHARE * n:
        return "every step"
    before = np.r_[0, np.cumsum(late)]  # late steps before each index
    for f in np.flatnonzero(late):
        after = (k - before[f]) / (n - f)
        if after >= EVERY_STEP_SHARE and (f == 0 or before[f] / f <= 1 - EVERY_STEP_SHARE):
            return f"from step {int(steps[f])} on ({k} of {n} steps)"
    return f"in {k} of {n} steps"
