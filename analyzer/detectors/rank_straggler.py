"""``traces.straggler``: a rank later than its peers, from every rank's own profiler trace.

Signal: each matched collective's duration on each rank (NCCL kernels, Gloo's work, Horovod's
``synchronize()``), which holds the rank's wait for the last one: the first-ready rank's duration
minus a rank's is how much later it came (:mod:`analyzer.ranktraces.model`), per step the median over
the step's collectives. That is the one lateness model the timeline's ticks feed too, judged alike
(:func:`analyzer.lateness.judge`): the host's noise, a binomial test against the other ranks' rate,
stretches. It needs no rank-ready ticks, so it names the rank with Horovod's response cache on, and
no shared clock, so it holds across hosts.

Cause: on the rank's late steps, how much more it spent than its peers in data loading
(``enumerate(DataLoader)``) and host-to-device copies: the one that explains at least half of its
lateness, else its compute (forward, backward, optimizer: its work outside those).

Impact: the time the named ranks cost the run per step, averaged over every step of the traces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from analyzer.detectors._common import ms
from analyzer.detectors._lateness_words import median_wait, noise_words, when_hint
from analyzer.detectors.base import RankTracesDetector
from analyzer.findings import Evidence, Finding, Impact, Severity, SourceRef, Suggestion
from analyzer.lateness import Judgement, RankVerdict
from analyzer.ranktraces.model import RankTraceSet

if TYPE_CHECKING:  # detectors reach the store only through the context's methods
    from analyzer.context import Context
    from analyzer.jobs import Job

CODE = "traces.straggler"
#: a cause is named when the rank's excess in it explains at least this share of its lateness

CAUSE_WORDS = {
    "data": "data loading (its enumerate(DataLoader) time is higher than its peers')",
    "h2d": "host-to-device copies (its Memcpy HtoD time is higher than its peers')",
    "compute": "its own compute (forward, backward, optimizer): neither its data loading nor its copies explain it",
}


class RankStraggler(RankTracesDetector):
    name = "rank_straggler"
    code = CODE

    def check(self, s: RankTraceSet, ctx: Context, job: Job) -> list[Finding]:
        f = self.judged(s, ctx, job)
        return [] if f is None else [f]

    def judged(self, s: RankTraceSet, ctx: Context, job: Job) -> Finding | None:
        t = ctx.config.thresholds.straggler
        done = ctx.traces_judged(job)
        if done is None or done.judgement is None:
            return None
        view, step_us, j = done.view, done.step_us, done.judgement
        named = j.named
        if not named:
            return None
        ids = tuple(r.rank for r in named)
        loss = j.mean_loss_us(ids)
        when = j.pattern(ids, t)
        causes = {r.rank: _cause(s, j, r, t.cause_share) for r in named}
        hosts = tuple(sorted({h for r in ids if (h := s.host_of(r))}))
        who = ", ".join(f"{r} ({s.host_of(r)})" if s.host_of(r) else str(r) for r in ids)
        worst = named[0]
        fraction = min(1.0, loss / step_us)
        impact = Impact(
            seconds_per_step=loss / 1e6,
            fraction_of_step=fraction,
            confidence="high" if view.n_steps >= 10 else "medium",
            assumptions=f"the late rank(s) would join each collective when their peers do, over the {view.n_steps} "
            "profiled steps; the other ranks' speed is unchanged",
        )
        evidence = tuple(self._evidence(s, j, r, causes[r.rank], t) for r in named)
        evidence += (
            Evidence(
                summary=f"{view.source}: the other {len(j.ranks) - len(named)} rank(s): {noise_words(j)}; "
                f"confidence {j.confidence}",
                metrics={"host_noise_ms": j.noise_us / 1e3, "bar_ms": j.bar_us / 1e3, "floor_ms": j.floor_us / 1e3},
            ),
        )
        cause = causes[worst.rank]
        return Finding(
            code=CODE,
            severity=Severity.CRITICAL if fraction >= t.critical_share else Severity.WARNING,
            title=(
                f"Rank {who} is late {when.text} ({cause}): the run loses about {ms(loss)} per step to it"
                if len(ids) == 1
                else f"Ranks {who} are late: the run loses about {ms(loss)} per step to them"
            ),
            summary=(
                f"Per every rank's own profiler trace, rank {worst.rank}"
                f"{f' on {s.host_of(worst.rank)}' if s.host_of(worst.rank) else ''} joined the collectives later "
                f"than its peers {when.text}, by a median {ms(median_wait(j, worst))} on those steps (its peers "
                f"waited that long for it), beyond this job's noise ({noise_words(j)}). The cause the traces show: "
                f"{CAUSE_WORDS[cause]}. The job lost about {ms(loss)} per step over {view.n_steps} profiled steps "
                f"(median step {ms(step_us)})."
            ),
            detector=self.name,
            evidence=evidence,
            impact=impact,
            suggestions=_advice(s, ids, cause, when_hint(when)),
            ranks=ids,
            hosts=hosts,
            labels={
                **{f"rank{r.rank}_when": j.pattern((r.rank,), t).kind for r in named},
                **{f"rank{r}_cause": c for r, c in causes.items()},
            },
            job=job.id,
        )

    @staticmethod
    def _evidence(s: RankTraceSet, j: Judgement, r: RankVerdict, cause: str, t: object) -> Evidence:
        trace = s.trace_of(r.rank)
        medians = s.per_rank_medians().get(r.rank)
        return Evidence(
            summary=(
                f"rank {r.rank}: late in {r.late_count} of {r.steps} profiled steps, median wait of its peers "
                f"{ms(median_wait(j, r))} on those steps; bar {ms(r.bar_us)}"
                + (f", p = {r.p_value:.2g} under noise alone" if r.p_value < 1 else "")
                + f"; cause: {cause}"
            ),
            sources=() if trace is None else (SourceRef(trace.file),),
            metrics={
                "rank": float(r.rank),
                "late_steps": float(r.late_count),
                "steps": float(r.steps),
                "offset_ms": r.offset_us / 1e3,
                "bar_ms": r.bar_us / 1e3,
                "p_value": r.p_value,
                "loss_per_step_ms": j.mean_loss_us((r.rank,)) / 1e3,
                **({"median_step_ms": medians[0] / 1e3, "median_data_ms": medians[1] / 1e3} if medians else {}),
            },
        )


def _cause(s: RankTraceSet, j: Judgement, r: RankVerdict, share: float) -> str:
    """What the rank's late steps show it spent more on than its peers (module docstring)."""
    late_steps = j.view.steps[r.late]
    rows = np.isin(s.steps, late_steps)
    col = int(np.searchsorted(s.ranks, r.rank))
    if not rows.any() or col >= len(s.ranks) or int(s.ranks[col]) != r.rank:
        return "compute"
    others = np.arange(len(s.ranks)) != col
    lateness = float(np.nanmedian(j.loss_by_step((r.rank,))[r.late])) if r.late.any() else 0.0
    if lateness <= 0:
        return "compute"
    with np.errstate(all="ignore"):
        for name, m in (("data", s.data_us), ("h2d", s.h2d_us)):
            excess = np.nanmedian(m[rows, col] - np.nanmedian(m[rows][:, others], axis=1))
            if np.isfinite(excess) and excess >= share * lateness:
                return name
    return "compute"


def _advice(s: RankTraceSet, ids: tuple[int, ...], cause: str, hint: str) -> tuple[Suggestion, ...]:
    where = ", ".join(f"rank {r} on {s.host_of(r)}" if s.host_of(r) else f"rank {r}" for r in ids)
    first = {
        "data": Suggestion(
            action=f"Speed up {where}'s input pipeline{hint}: more DataLoader workers (num_workers), "
            "pin_memory, prefetching, or data on faster local storage.",
            rationale="Its DataLoader time exceeds its peers' by most of its lateness; every collective waits for it.",
        ),
        "h2d": Suggestion(
            action=f"Cut {where}'s host-to-device copies{hint}: pinned memory (pin_memory=True), non_blocking "
            "copies, or its PCIe/NUMA placement.",
            rationale="Its copies to the GPU take longer than its peers' by most of its lateness.",
        ),
        "compute": Suggestion(
            action=f"Find what is slower on {where}{hint}: CPU binding or oversubscription, GPU clocks or "
            "thermal throttling, other processes on the host, or a larger share of the work.",
            rationale="Its steps' own work, not its data loading or copies, makes it join the collectives late; "
            "tuning the collectives cannot hide it.",
        ),
    }[cause]
    return (
        first,
        Suggestion(action="If the host is degraded, exclude it from the job or give the rank less work."),
    )
