"""``timeline.fusion_fragmented``: gradients go out one collective each instead of fused.

Signal, over the steady steps (medians): at least ``fusion.min_tensors`` gradient tensors
per step, batches per step at least ``fusion.min_batch_ratio`` of the tensors, and at least
``fusion.min_singleton_share`` of the batches hold a single tensor. Causes, told apart by
the threshold bracket of :func:`analyzer.timeline.batches.estimate_threshold`:

* ``HOROVOD_FUSION_THRESHOLD=0`` or a threshold of a few KB (a value given in MB where
  bytes are expected is the classic): the bracket is below 1 MiB;
* tensors arriving one cycle late (threshold large, but each cycle has one tensor ready).

Impact: (batches now - batches with the suggested setting) x the per-batch fixed cost
(:mod:`analyzer.timeline.fusion`), capped at the step's communication time.
"""

from __future__ import annotations

import numpy as np

from analyzer.detectors._common import at, ms, step_impact
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.timeline.cycles import DEFAULT_CYCLE_US
from analyzer.timeline.fusion import (
    MIB,
    batch_overhead_us,
    expected_batches,
    suggested_threshold,
)
from analyzer.timeline.model import TimelineModel

CODE = "timeline.fusion_fragmented"


class FusionFragmented(TimelineDetector):
    name = "fusion_fragmented"
    code = CODE

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        t = ctx.config.thresholds.fusion
        steady = model.steady
        batches = model.steady_batches
        if steady.empty or batches.empty:
            return None
        tensors = float(steady["tensors"].median())
        per_step = float(steady["batches"].median())
        singles = float((batches["tensors"] == 1).mean())
        if tensors < t.min_tensors or per_step < t.min_batch_ratio * tensors or singles < t.min_singleton_share:
            return None
        est = model.fusion_estimate
        known = model.cycle is not None and model.cycle.confident
        cycle_us = model.cycle.cycle_us if model.cycle is not None and known else DEFAULT_CYCLE_US
        small = est.upper_bytes is not None and est.upper_bytes < t.small_threshold
        step_bytes = float(steady["bytes"].median()) if steady["bytes"].notna().any() else 0.0
        if small or est.fused_batches == 0:
            threshold = suggested_threshold(float(batches["bytes"].max() or 0))
            env = {"HOROVOD_FUSION_THRESHOLD": str(threshold)}
            action = (
                f"Set HOROVOD_FUSION_THRESHOLD={threshold} (bytes: {threshold // MIB} MiB; Horovod's default "
                "since 0.21 is 134217728). The value is in bytes: '64' means 64 B, not 64 MB "
                "(horovodrun --fusion-threshold-mb takes MB)."
            )
            expected = expected_batches(model, threshold, cycle_us)
            cause = f"the fusion threshold in effect is {est.text()}"
        elif known:  # the cycle in effect is measured: the advice raises it, never lowers it
            new_cycle = max(t.late_cycle_ms, 2 * cycle_us / 1e3)
            env = {"HOROVOD_CYCLE_TIME": f"{new_cycle:g}"}
            action = (
                f"Tensors arrive one cycle apart, so each cycle has one ready: raise HOROVOD_CYCLE_TIME from "
                f"{cycle_us / 1e3:g} to {new_cycle:g} ms so that a cycle collects several (or try horovodrun --autotune)."
            )
            expected = expected_batches(model, 1 << 40, new_cycle * 1e3)
            cause = (
                f"the threshold ({est.text()}) is not the limit: tensors are ready one cycle apart "
                f"with the cycle time in effect of {cycle_us / 1e3:g} ms"
            )
        else:  # no markers: the cycle in effect is unknown, so no value is advised
            env = {"HOROVOD_TIMELINE_MARK_CYCLES": "1"}
            action = (
                "Tensors arrive in separate cycles, so each cycle has one ready. This timeline does not show the "
                "cycle time in effect: rerun with HOROVOD_TIMELINE_MARK_CYCLES=1 to record it, then raise "
                "HOROVOD_CYCLE_TIME above it so that a cycle collects several (or try horovodrun --autotune)."
            )
            expected = None
            cause = f"the threshold ({est.text()}) is not the limit: tensors are ready one cycle apart"
        overhead = batch_overhead_us(model)
        saved = 0.0
        if overhead is not None and expected is not None:
            saved = min(max(per_step - expected, 0.0) * overhead, float(steady["comm_us"].median()))
        first = batches.sort_values("start_us").iloc[0]
        sp = model.spans
        first_op = sp[(sp["kind"] == "op") & (sp["batch"] == first["batch"])]["start_offset"].min()
        evidence = [
            Evidence(
                summary=(
                    f"{per_step:.0f} batches per step for {tensors:.0f} gradient tensors; {singles:.0%} of "
                    f"{len(batches)} steady batches hold one tensor; {step_bytes / MIB:.2f} MiB reduced per "
                    f"step; fusion threshold in effect {est.text()}"
                ),
                sources=(at(model, first_op),),
                metrics={
                    "batches_per_step": per_step,
                    "tensors_per_step": tensors,
                    "singleton_share": singles,
                    "threshold_lower_bytes": float(est.lower_bytes or 0),
                    "threshold_upper_bytes": float(est.upper_bytes or np.nan),
                },
            ),
        ]
        if est.upper_evidence is not None:
            a, b = est.upper_evidence
            ob = sp[(sp["kind"] == "op") & (sp["batch"] == b)]["start_offset"].min()
            evidence.append(
                Evidence(
                    summary=f"batch {b} was ready before batch {a} started but was not fused "
                    f"with it: the threshold is below {est.upper_bytes:,} bytes",
                    sources=(at(model, ob),),
                )
            )
        if overhead is not None:
            evidence.append(
                Evidence(
                    summary=f"each collective costs about {ms(overhead)} besides its bytes "
                    "(intercept of duration vs bytes over the steady batches)",
                    metrics={"batch_overhead_ms": overhead / 1e3},
                )
            )
        impact = step_impact(
            model,
            saved,
            "medium" if overhead else "low",
            f"{expected:.0f} batches per step instead of {per_step:.0f} (tensors ready in the same "
            f"cycle fused up to the threshold), each saving the fixed per-collective cost"
            if expected is not None
            else "not estimable",
        )
        return Finding(
            code=CODE,
            severity=Severity.WARNING,
            title=f"Tensor fusion is not working: {per_step:.0f} collectives per step for {tensors:.0f} tensors",
            summary=(
                f"{model.path}: {singles:.0%} of the batches hold a single tensor; {cause}. Every collective "
                "pays a fixed latency, so many small ones waste the step"
                + (
                    f"; with the suggested setting about {expected:.0f} batches per step are expected."
                    if expected is not None
                    else "."
                )
            ),
            detector=self.name,
            evidence=tuple(evidence),
            impact=impact,
            suggestions=(
                Suggestion(
                    action=action,
                    env=env,
                    rationale="Fusion copies ready tensors into one buffer and reduces them with one collective.",
                ),
            ),
        )
