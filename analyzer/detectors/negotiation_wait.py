"""``timeline.negotiation_wait``: some rank is late every step, but the file cannot say which.

With the response cache on (Horovod's default), a steady-state ``NEGOTIATE_*`` span runs
from the cycle in which the first rank asked for the tensor to the cycle in which the
last one did, and carries no rank ticks. A rank that is late for **every** gradient
therefore shows as a floor under all of a step's negotiations. Signal: in at least 90%
of the steady steps (the 10th percentile), the step's **shortest** gradient negotiation
is at least ``negotiation_wait.min_floor_us`` and ``negotiation_wait.min_floor_share`` of the median step. Random
skew (oversubscribed or noisy ranks, one grouped negotiation per step) makes some steps'
negotiations short, so it stays silent. Skipped when steady-state ticks exist (``timeline.straggler`` names the
rank then). First-step ticks are cited as weak evidence only: the first step is warm-up.

Impact: the floor per step (median), the time every step waits for the late rank.
"""

from __future__ import annotations

from analyzer.detectors._common import at, ms, step_impact
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.timeline.lateness import rank_summary
from analyzer.timeline.model import TimelineModel

CODE = "timeline.negotiation_wait"


class NegotiationWait(TimelineDetector):
    name = "negotiation_wait"
    code = CODE

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        t = ctx.config.thresholds.negotiation_wait
        step_us = model.median_step_us
        steady = model.steady["step"]
        min_steps = ctx.config.thresholds.straggler.min_steps
        if not step_us or len(steady) < min_steps:
            return None
        if model.steady_ticked_steps >= min_steps:
            return None  # ranks are named by the ticks: timeline.straggler's job
        sp = model.spans
        neg = sp[
            (sp["kind"] == "negotiate") & sp["closed"] & sp["step"].isin(steady) & sp["pid"].isin(model.gradient_pids)
        ]
        if neg.empty:
            return None
        dur = neg["end_us"] - neg["start_us"]
        per_step = dur.groupby(neg["step"])
        floors = per_step.min()
        floor = float(floors.median())
        typical = float(per_step.median().median())
        if float(floors.quantile(0.1)) < max(t.min_floor_us, t.min_floor_share * step_us):
            return None
        longest = neg.loc[dur.idxmax()]
        evidence = [
            Evidence(
                summary=(
                    f"{len(neg)} gradient negotiations over {len(per_step)} steady steps without rank ticks: "
                    f"the shortest per step is {ms(floor)} (median), a typical one {ms(typical)}; median "
                    f"step {ms(step_us)}"
                ),
                sources=(at(model, neg.sort_values("start_offset").iloc[0]["start_offset"]),),
                metrics={
                    "floor_ms": floor / 1e3,
                    "floor_p10_ms": float(floors.quantile(0.1)) / 1e3,
                    "typical_ms": typical / 1e3,
                    "step_ms": step_us / 1e3,
                    "negotiations": float(len(neg)),
                },
            ),
            Evidence(
                summary=f"longest: {longest['name']} of {longest['tensor']} took "
                f"{ms(float(longest['end_us'] - longest['start_us']))}",
                sources=(at(model, longest["start_offset"]),),
            ),
        ]
        weak = self._first_step_ticks(model, ctx)
        if weak is not None:
            evidence.append(weak)
        return Finding(
            code=CODE,
            severity=Severity.WARNING,
            title=f"Some rank arrives about {ms(floor)} late every step; this file cannot name it",
            summary=(
                f"{model.path}: every gradient negotiation of a step lasts at least {ms(floor)} (median over "
                f"{len(per_step)} steps, {floor / step_us:.0%} of the {ms(step_us)} step): the ranks are out of step "
                "and all wait for the slowest one. With the response cache on, steady-state negotiations carry "
                "no per-rank ticks, so the late rank cannot be named from this timeline."
            ),
            detector=self.name,
            evidence=tuple(evidence),
            impact=step_impact(
                model,
                floor,
                "medium",
                "the late rank would be ready with the others (the floor of every step's "
                "negotiations disappears); the work it does late is not on the others' path",
            ),
            suggestions=(
                Suggestion(
                    action=f"Rerun about {t.rerun_steps} steps with the response cache off and the timeline on, then "
                    "run hvd-analyze on that timeline: every negotiation then carries rank ticks and "
                    "timeline.straggler names the late rank.",
                    env={"HOROVOD_CACHE_CAPACITY": "0"},
                    rationale="The cache replaces per-rank requests by a bit vector after the first step; "
                    "disabling it costs a little negotiation time, so do it for a diagnostic run only.",
                ),
                Suggestion(
                    action="Or add NCCL_DEBUG=INFO / job logs of the same run: a rank whose log shows stalls or "
                    "slow input names itself.",
                    env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": "nccl.%h.%p.log"},
                ),
            ),
        )

    @staticmethod
    def _first_step_ticks(model: TimelineModel, ctx: TimelineEvidence) -> Evidence | None:
        lat = model.lateness
        lat = lat.where_negotiations(lat.neg_step >= 0)
        ranks = rank_summary(lat)
        if not ranks or ranks[0].median_vs_median_us <= 0:
            return None
        r = ranks[0]
        first = ctx.first_last_offset(model, lat, r.rank)
        return Evidence(
            summary=(
                f"weak evidence (warm-up, uncached negotiations only): rank {r.rank} was last ready in "
                f"{r.last}/{r.negotiations} ticked negotiations, median {ms(r.median_us)} behind the first"
            ),
            sources=(at(model, first),) if first is not None else (),
            metrics={"rank": float(r.rank), "median_lateness_ms": r.median_us / 1e3},
        )
