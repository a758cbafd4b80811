"""``timeline.straggler``: a rank ready later than its peers, more often than the host's noise explains.

Signal: rank-ready ticks of steady-state negotiations (response cache off, or evictions), reduced
to the ranks' lateness per step (:class:`analyzer.lateness.StepLateness`) and judged by
:func:`analyzer.lateness.judging`: a rank is named when its lateness beyond its peers' in the same
steps stands out from the noise (the peers' spread and its own jitter) in more steps than noise
alone explains, or rises above its usual level for a stretch of steps. The coordinator's
own-tick advantage is modelled (it is nobody's peer), and a whole-job slowdown moves every rank
alike, so it names nobody. First-step ticks alone (response cache on) are warm-up and never
confirm a straggler; ``timeline.negotiation_wait`` cites them as weak evidence.

Impact: the time the named ranks cost the run per step, averaged over every steady step (their
late steps times the median wait of those steps); when they were late: every step, from a step
on, a stretch they recovered from, a regular period, or some steps.
"""

from __future__ import annotations

from analyzer.detectors._common import at, ms, step_impact
from analyzer.detectors._lateness_words import median_wait as _median_wait
from analyzer.detectors._lateness_words import noise_words as _noise_words
from analyzer.detectors._lateness_words import when_hint as _when_hint
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.lateness import Judgement, Pattern, RankVerdict, judge
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
        view = model.step_lateness
        if not step_us or view.n_steps < t.min_steps:
            return None
        j = judge(view, step_us, t)
        named = j.named
        if ctx.autotuned(model):
            # the autotuner changes the cycle time (the ticks' resolution) and the fusion threshold as it
            # goes: a rank late in some steps or a stretch of them is confounded with its changes
            named = tuple(r for r in named if r.steady)
        if not named:
            return None
        ids = tuple(r.rank for r in named)
        loss = j.mean_loss_us(ids)
        when = j.pattern(ids, t)
        late = int(j.late_mask(ids).sum())
        impact = step_impact(
            model,
            loss,
            "high" if view.n_steps >= 10 else "medium",
            f"the late rank(s) would be ready when their peers are: {late} late step(s) of {view.n_steps}, each "
            f"waiting a median {ms(loss * view.n_steps / max(late, 1))}, spread over every step; the other "
            "ranks' speed is unchanged",
        )
        lat = model.steady_lateness
        evidence = tuple(
            self._evidence(model, ctx.first_last_offset(model, lat, r.rank), j, r, j.pattern((r.rank,), t))
            for r in named
        )
        evidence += (self._noise(j),)
        places = ctx.rank_places(model)
        hosts = tuple(sorted({places[r].host for r in ids if r in places}))
        who = ", ".join(f"{r} ({places[r].host})" if r in places else str(r) for r in ids)
        detail = ", ".join(
            f"{r} (on {places[r]}, per its NCCL log {places[r].file})" if r in places else str(r) for r in ids
        )
        where = "that host" if hosts else "its host (map rank to host with horovodrun --verbose or the job log)"
        target = f"host {', '.join(hosts)}" if hosts else "the rank's host"
        plural = len(ids) > 1
        worst = named[0]
        severe = impact is not None and impact.fraction_of_step >= t.critical_share
        return Finding(
            code=CODE,
            severity=Severity.CRITICAL if severe else Severity.WARNING,
            title=(
                f"Rank {who} is late {when.text}: the run loses about {ms(loss)} per step to it"
                if not plural
                else f"Ranks {who} are late ("
                + "; ".join(f"{r.rank} {j.pattern((r.rank,), t).text}" for r in named)
                + f"): the run loses about {ms(loss)} per step to them"
            ),
            summary=(
                f"{model.path}: rank {worst.rank}{f' on {places[worst.rank]}' if worst.rank in places else ''} "
                f"was ready later than its peers {when.text}, by a median {ms(_median_wait(j, worst))} on those "
                f"steps, beyond what this host's noise explains ({_noise_words(j)}). Every allreduce waits for "
                f"the last rank, so the job lost about {ms(loss)} per step over the {view.n_steps} steady steps "
                f"(median step {ms(step_us)})."
            ),
            detector=self.name,
            evidence=evidence,
            impact=impact,
            suggestions=(
                Suggestion(
                    action=f"Find what is slower on rank {detail}{_when_hint(when)}: {where}, its input pipeline "
                    "(data loading, augmentation), CPU binding/oversubscription, GPU clocks or thermal throttling.",
                    rationale="A delay on one rank before its gradients are ready is work outside Horovod on "
                    "that rank; tuning Horovod cannot hide it.",
                ),
                Suggestion(
                    action=f"If {target} is degraded, exclude it (horovodrun -H / --hostfile) or give the rank "
                    "less work.",
                ),
            ),
            ranks=ids,
            hosts=hosts,
            labels={f"rank{r.rank}_when": j.pattern((r.rank,), t).kind for r in named},
        )

    @staticmethod
    def _evidence(model: TimelineModel, first: int | None, j: Judgement, r: RankVerdict, when: Pattern) -> Evidence:
        rule = (
            f"its median lateness beyond its peers, {ms(r.offset_us)}, clears the bar of {ms(r.bar_us)}"
            if r.steady
            else f"late (at least {ms(r.bar_us)} above its usual level) in {r.late_count} steps"
            + (f", p = {r.p_value:.2g} under noise alone" if r.p_value < 1 else "")
        )
        return Evidence(
            summary=(
                f"rank {r.rank}: {rule}; late {when.text} over {r.steps} steady steps, "
                f"median wait {ms(_median_wait(j, r))} on those steps"
            ),
            sources=() if first is None else (at(model, first),),
            metrics={
                "rank": float(r.rank),
                "late_steps": float(r.late_count),
                "steps": float(r.steps),
                "offset_ms": r.offset_us / 1e3,
                "noise_ms": r.noise_us / 1e3,
                "bar_ms": r.bar_us / 1e3,
                "p_value": r.p_value,
                "loss_per_step_ms": j.mean_loss_us((r.rank,)) / 1e3,
                "first_late_step": float(when.first_step),
                "last_late_step": float(when.last_step),
            },
        )

    @staticmethod
    def _noise(j: Judgement) -> Evidence:
        quiet = [r for r in j.ranks if not r.named]
        return Evidence(
            summary=f"the other {len(quiet)} rank(s): {_noise_words(j)}; confidence {j.confidence}",
            metrics={"host_noise_ms": j.noise_us / 1e3, "bar_ms": j.bar_us / 1e3, "floor_ms": j.floor_us / 1e3},
        )
