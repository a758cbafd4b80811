"""``timeline.slowdown``: the step time rose part-way through the run.

Signal: change points of the whole run's steady step durations (:mod:`analyzer.timeline.changepoints`):
a later stretch of at least ``slowdown.min_segment_steps`` steps (and 5% of them) runs at least
``slowdown.min_ratio`` times slower than every steady step before it (their median), and significantly
so (Mann-Whitney at ``slowdown.max_p``; the numbers are :class:`analyzer.config.SlowdownThresholds`). Covers every step, also when the span-level analyses read a window of a timeline
too big for memory. A throttled GPU, a degraded link or a noisy neighbour starts at a moment;
the run-wide statistics of the other detectors average it away.

What the added time is spent on (:func:`analyzer.timeline.changepoints.attribute`): waiting for a late
rank at the end of backward, exposed communication, or every rank computing slower alike.
When rank ticks cover the slow steps (``HOROVOD_CACHE_CAPACITY=0``), the rank(s) that became
late are named: last ready in at least ``slowdown.min_last_share`` of the slow steps' negotiations,
and later behind the median rank than before by at least half the added wait.

When the job's autotune log is in the run, the stretches are the autotuner's trials (info). Without it,
the timeline itself can show parameters changing: the fused batches fit no single fusion threshold and
their sizes differ between the baseline and the slow stretches; the finding then says so (autotune
or a changed ``HOROVOD_FUSION_THRESHOLD``) instead of blaming the ranks' compute.

Impact: the time the slow stretches took beyond the baseline's speed, per steady step of
the run (medium confidence: medians, and it assumes the cause can be removed).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import numpy as np

from analyzer.detectors._common import ms
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Impact, Severity, SourceRef, Suggestion
from analyzer.timeline.changepoints import Attribution, Segment, Slowdown, attribute
from analyzer.timeline.lateness import (
    SAME_CYCLE_US,
    Lateness,
    RankLateness,
    rank_summary,
)
from analyzer.timeline.model import TimelineModel
from analyzer.timeline.steps import steady_durations

CODE = "timeline.slowdown"
CAUSE_TEXT = {
    "wait": "waiting for late rank(s) at the end of backward",
    "exposed": "communication after backward (nothing overlaps it)",
    "compute": "every rank computing slower alike, before its gradients are ready",
}


def duration_text(us: float) -> str:
    """``850 ms``, ``12.4 s``, ``7.5 min`` or ``2.3 h``."""
    s = us / 1e6
    return ms(us) if s < 10 else f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


class StepSlowdown(TimelineDetector):
    name = "slowdown"
    code = CODE

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        found = model.slowdown
        if found is None:
            return None
        finding = self._finding(ctx, model, found)
        if ctx.autotuned(model):
            return _autotune_trials(finding, found)
        changed = threshold_changed(model, found)
        return _parameter_trials(finding, found, changed) if changed else finding

    def _finding(self, ctx: TimelineEvidence, model: TimelineModel, s: Slowdown) -> Finding:
        t = ctx.config.thresholds.slowdown
        run = model.all_steps
        split = attribute(run, s)
        late = self._late_ranks(ctx, model, s, split) if split.cause == "wait" else None
        median_us = float(np.median(steady_durations(run)))
        per_step = s.lost_us / s.steady_steps
        base, onset = s.baseline, s.onset
        when = self._when(model, onset.first_step)
        if len(s.slow) == 1:
            course = f"it took {ms(onset.median_us)}, " + (
                f"until step {onset.last_step:,} (then back to {ms(s.after[0].median_us)})"
                if s.recovered
                else "to the end of the run"
            )
        else:
            course = (
                f"it ran slow in {len(s.slow)} stretches ("
                + "; ".join(f"steps {g.first_step:,}–{g.last_step:,}: {ms(g.median_us)}" for g in s.slow)
                + "), "
                + ("then recovered" if s.recovered else "the last one to the end of the run")
            )
        cause = CAUSE_TEXT[split.cause]
        who = f"rank{'s' if late and len(late) > 1 else ''} {', '.join(str(r.rank) for r in late)}" if late else ""
        title = (
            f"Step time rose {s.ratio - 1:.0%} from step {onset.first_step:,} "
            f"({ms(base.median_us)} → {ms(onset.median_us)}): "
            + (f"{who} became late" if late else cause.split(" (")[0].split(",")[0])
        )
        summary = (
            f"{model.path}: the run held {ms(base.median_us)} per step (median, steps "
            f"{base.first_step:,}–{base.last_step:,}); from step {onset.first_step:,} ({when}) {course}. "
            f"The {s.slow_steps:,} slow steps cost {duration_text(s.lost_us)} in all. "
            f"The added {ms(split.added_us)} per step is mostly {cause}."
        )
        evidence: tuple[Evidence, ...] = (self._segments_evidence(ctx, model, s), self._split_evidence(split))
        if late:
            evidence += tuple(self._rank_evidence(r, before) for r, before in late.items())
        return Finding(
            code=CODE,
            severity=Severity.CRITICAL if per_step >= t.critical_share * median_us else Severity.WARNING,
            title=title,
            summary=summary,
            detector=self.name,
            evidence=evidence,
            impact=Impact(
                seconds_per_step=per_step / 1e6,
                fraction_of_step=min(1.0, per_step / median_us),
                confidence="medium",
                assumptions=f"the {s.slow_steps:,} slow steps would run at the "
                f"{ms(base.median_us)} median of steps {base.first_step:,}–{base.last_step:,}; "
                f"spread over all {s.steady_steps:,} steady steps",
            ),
            suggestions=self._suggestions(model, split, late, when),
            ranks=tuple(r.rank for r in late) if late else (),
        )

    # -- evidence -----------------------------------------------------------------------------
    @staticmethod
    def _when(model: TimelineModel, step: int) -> str:
        """When ``step`` started: UTC when the file has Horovod's start-time header, and into the run."""
        run = model.all_steps
        start = int(run.loc[run["step"] == step, "start_us"].iloc[0])
        into = f"{duration_text(start - int(run['start_us'].iloc[0]))} after the first step"
        epoch = model.facts.get("start_time_since_epoch_us")
        if epoch is None:
            return into
        at = datetime.fromtimestamp((int(epoch) + start) / 1e6, tz=UTC)
        return f"{at:%Y-%m-%d %H:%M:%S} UTC, {into}"

    @staticmethod
    def _segments_evidence(ctx: TimelineEvidence, model: TimelineModel, s: Slowdown) -> Evidence:
        def line(g: Segment) -> str:
            return f"steps {g.first_step:,}–{g.last_step:,}: {ms(g.median_us)}{' (slow)' if g in s.slow else ''}"

        first = ctx.first_span_offset(model, s.onset.first_step)
        listed = s.segments if len(s.segments) <= ctx.config.thresholds.slowdown.max_listed else s.slow
        more = "" if listed is s.segments else f" (the {len(s.slow)} slow ones of {len(s.segments)} stretches)"
        return Evidence(
            summary=(
                f"baseline {ms(s.baseline.median_us)}: the median of the steady steps before step "
                f"{s.onset.first_step:,}; median step time per stretch between change points{more}: "
                + "; ".join(map(line, listed))
            ),
            sources=() if first is None else (SourceRef(model.path, byte_offset=int(first)),),
            metrics={
                "baseline_ms": s.baseline.median_us / 1e3,
                "onset_ms": s.onset.median_us / 1e3,
                "ratio": s.ratio,
                "onset_step": float(s.onset.first_step),
                "worst_ms": s.worst.median_us / 1e3,
                "slow_steps": float(s.slow_steps),
                "lost_s": s.lost_us / 1e6,
            },
        )

    @staticmethod
    def _split_evidence(a: Attribution) -> Evidence:
        return Evidence(
            summary=(
                f"added median time per step {ms(a.added_us)}: wait for the last rank at the end of backward "
                f"{a.wait_us / 1e3:+.1f} ms, exposed communication {a.exposed_us / 1e3:+.1f} ms, compute up to "
                f"the first rank's last gradient {a.compute_us / 1e3:+.1f} ms"
            ),
            metrics={
                "added_ms": a.added_us / 1e3,
                "wait_ms": a.wait_us / 1e3,
                "exposed_ms": a.exposed_us / 1e3,
                "compute_ms": a.compute_us / 1e3,
            },
        )

    @staticmethod
    def _rank_evidence(r: RankLateness, before: float | None) -> Evidence:
        was = "no ticks before" if before is None else f"{ms(before)} before"
        return Evidence(
            summary=(
                f"rank {r.rank} in the slow steps: last ready in {r.last}/{r.negotiations} negotiations "
                f"({r.last_share:.0%}), {ms(r.median_vs_median_us)} behind the median rank ({was})"
            ),
            metrics={
                "rank": float(r.rank),
                "last_share": r.last_share,
                "vs_median_ms": r.median_vs_median_us / 1e3,
                **({} if before is None else {"vs_median_before_ms": before / 1e3}),
            },
        )

    # -- which rank -----------------------------------------------------------------------------
    @staticmethod
    def _late_ranks(
        ctx: TimelineEvidence, model: TimelineModel, s: Slowdown, split: Attribution
    ) -> dict[RankLateness, float | None] | None:
        """The ranks that became late in the slow steps, with their lateness behind the median
        rank in the baseline (None: no ticks there); None when ticks do not cover the slow steps."""
        first, last = s.onset.first_step, s.slow[-1].last_step
        head: Lateness = model.lateness  # a window's: its first steps, where the baseline starts
        lat = head
        if model.window is not None and first >= model.window.steps:  # beyond the detail: read those steps
            lat = ctx.lateness_of_steps(model, first, last)

        def between(ticks: Lateness, a: int, b: int) -> Lateness:
            return ticks.where_negotiations((ticks.neg_step >= a) & (ticks.neg_step <= b))

        slow = between(lat, first, last)
        if len(slow.steps()) < ctx.config.thresholds.straggler.min_steps:
            return None
        before = {
            r.rank: r.median_vs_median_us
            for r in rank_summary(between(head, s.baseline.first_step, s.baseline.last_step))
        }
        threshold = max(SAME_CYCLE_US, 0.5 * split.wait_us)
        return {
            r: before.get(r.rank)
            for r in rank_summary(slow)
            if r.last_share >= ctx.config.thresholds.slowdown.min_last_share
            and r.median_vs_median_us - before.get(r.rank, 0.0) >= threshold
        }

    # -- what to do ------------------------------------------------------------------------------
    @staticmethod
    def _suggestions(
        model: TimelineModel, split: Attribution, late: dict[RankLateness, float | None] | None, when: str
    ) -> tuple[Suggestion, ...]:
        if split.cause == "wait" and late:
            who = ", ".join(str(r.rank) for r in late)
            return (
                Suggestion(
                    action=f"Look at what changed on rank {who}'s host at {when}: GPU clocks and temperature "
                    "(nvidia-smi -q -d PERFORMANCE,TEMPERATURE; thermal or power throttling), other processes "
                    "on the host, its input pipeline. Map rank to host with horovodrun --verbose or the job log.",
                    rationale="The rank was on time before; a delay that starts at one moment on one rank is a change "
                    "on its host, not in Horovod's settings.",
                ),
            )
        if split.cause == "wait":
            covered = model.facts.get("steady_state_ticks") is True
            return (
                Suggestion(
                    action=(
                        "Rank ticks cover these steps but no single rank is late in most of them: the late rank "
                        "changes. Look for host-wide contention (shared storage, network) starting at " + when + "."
                    )
                    if covered
                    else (
                        "Rerun with HOROVOD_CACHE_CAPACITY=0 for a while past the step where it slowed down: the "
                        "response cache removes the rank ticks that name the late rank. Meanwhile compare GPU clocks "
                        f"and temperatures across hosts around {when}."
                    ),
                    env={} if covered else {"HOROVOD_CACHE_CAPACITY": "0"},
                    rationale="The last negotiation of each step waits longer for its slowest rank: one or more ranks "
                    "finish backward later than the others since then.",
                ),
            )
        if split.cause == "exposed":
            return (
                Suggestion(
                    action=f"The collectives got slower at {when}: check the network then (NIC errors and link flaps "
                    "in the hosts' logs, other traffic on shared links), and whether NCCL changed transport "
                    "(NCCL_DEBUG=INFO: NET/IB vs NET/Socket; see the nccl.* findings).",
                    env={"NCCL_DEBUG": "INFO"},
                    rationale="The time after the last gradient is ready, which is communication nothing overlaps, "
                    "grew; the ranks were not later than before.",
                ),
            )
        return (
            Suggestion(
                action=f"Every rank got slower alike at {when}: look at the input pipeline (data loading, storage "
                "throughput, cache eviction), a change in the work per step (sequence length, curriculum, "
                "evaluation inside the loop) or host-wide throttling on all nodes.",
                rationale="Neither waiting for a late rank nor communication grew: the ranks take longer to produce "
                "their gradients.",
            ),
        )


def _autotune_trials(f: Finding, s: Slowdown) -> Finding:
    """The slowdown of a run whose job ran Horovod's autotuner: its step-time changes are the tuner
    trying cycle times and thresholds, not a regression; info, no rank blamed, no advice but to
    judge the run once tuning is over."""
    return replace(
        f,
        severity=Severity.INFO,
        title=f"Step time changed while Horovod's autotuner tried parameters ({len(s.slow)} slower stretch(es))",
        summary=f.summary.split(" The added ")[0]
        + " The job ran Horovod's autotuner (its autotune log is in the run): it samples cycle times and fusion "
        "thresholds for a few steps each, and these stretches are its trials, not a slowdown of the job.",
        impact=None,
        ranks=(),
        suggestions=(
            Suggestion(
                action="Judge the step time once tuning is over (horovod.autotune_result says whether it finished), "
                "or in a run with the tuned values fixed and HOROVOD_AUTOTUNE unset."
            ),
        ),
    )


def threshold_changed(model: TimelineModel, s: Slowdown) -> str | None:
    """What shows that Horovod's fusion threshold changed with the step time, or None: the batches
    fit no single threshold (:class:`~analyzer.timeline.batches.FusionEstimate`'s bounds conflict)
    and the largest fused batch per step differs between the baseline and the slower stretches."""
    est = model.fusion_estimate
    if est.lower_bytes is None or est.upper_bytes is None or est.upper_bytes > est.lower_bytes:
        return None
    b = model.batches
    largest = b[(b["step"] >= 0) & (b["tensors"] >= 2)].groupby("step")["bytes"].max()
    steps = largest.index.to_numpy()
    base_in = (steps >= s.baseline.first_step) & (steps <= s.baseline.last_step)
    slow_in = np.zeros(len(steps), bool)
    for seg in s.slow:
        slow_in |= (steps >= seg.first_step) & (steps <= seg.last_step)
    if not base_in.any() or not slow_in.any():
        return None
    before, during = float(np.median(largest[base_in])), float(np.median(largest[slow_in]))
    if max(before, during) < model.thresholds.slowdown.batch_change * min(before, during):
        return None
    return (
        f"the batches fit no single fusion threshold, and the largest fused batch of a step was "
        f"{before / 2**20:,.1f} MiB (median) before the change and {during / 2**20:,.1f} MiB in the slower stretches"
    )


def _parameter_trials(f: Finding, s: Slowdown, changed: str) -> Finding:
    """The slowdown of a run whose timeline shows Horovod's parameters changing with the step time
    and no autotune log: autotune's trials, or a changed threshold; the ranks' compute is not blamed."""
    return replace(
        f,
        severity=Severity.WARNING,
        title=f"Step time changed with Horovod's fusion threshold ({len(s.slow)} slower stretch(es)): autotune?",
        summary=f.summary.split(" The added ")[0]
        + f" But {changed}: Horovod's parameters changed during the run. That is what its autotuner does "
        "(HOROVOD_AUTOTUNE=1 tries fusion thresholds and cycle times a few steps each), and these stretches "
        "would then be its trials; no autotune log is in the run to confirm it.",
        impact=None,
        ranks=(),
        hosts=(),
        suggestions=(
            Suggestion(
                action="If the job ran with HOROVOD_AUTOTUNE=1, judge the step time once tuning is over, or rerun "
                "with the tuned values fixed; HOROVOD_AUTOTUNE_LOG records every trial (add the file to the run).",
                env={"HOROVOD_AUTOTUNE_LOG": "autotune.csv"},
            ),
            Suggestion(
                action="If it did not autotune, find what ran part of the job with another HOROVOD_FUSION_THRESHOLD "
                "(a restart with other settings, a per-phase override)."
            ),
        ),
    )
