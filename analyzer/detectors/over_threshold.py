"""``timeline.tensor_over_fusion_threshold``: a gradient larger than the threshold runs alone.

Horovod only fuses while the batch stays within ``HOROVOD_FUSION_THRESHOLD``; a tensor
bigger than that (bytes from its op's E ``dtype`` and ``shape``) always gets its own
collective. Signal: fusion works elsewhere (some batch holds >= 2 tensors), and a
gradient tensor (a) runs as a single-tensor batch in at least ``over_threshold.min_alone_share``
of the steady steps, (b) is larger than the largest fused batch (the threshold's lower
bound), and (c) either is at least the threshold's upper bound, less ``over_threshold.bound_slack``
of its size (the bound is a batch that did not take a gradient ready in time: a 6 MiB gradient
that refused a 3 KB one is over any threshold but one in that 3 KB sliver; Horovod's default for
the file's release range, 128 MiB since 0.21 and 64 MiB before, when no batch bounds it from
above: the finding says it assumed so), or is more than twice the
largest fused batch and was not alone for lack of company: in at least
``over_threshold.min_company_share`` of those steps another op of the same type was already ready
when it started, yet ran separately. (A tensor just under the threshold, like 1024-byte
weights with ``HOROVOD_FUSION_THRESHOLD=1024``, cannot fuse either, but is not over it:
that is ``timeline.fusion_fragmented``.)

Impact: the per-collective fixed cost times the batches per step these tensors add (at
most one each), low confidence.
"""

from __future__ import annotations

import pandas as pd

from analyzer.detectors._common import at, ms, step_impact
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.timeline.cycles import DEFAULT_CYCLE_US
from analyzer.timeline.fusion import (
    MIB,
    batch_overhead_us,
    default_threshold,
    expected_batches,
    suggested_threshold,
)
from analyzer.timeline.model import TimelineModel

CODE = "timeline.tensor_over_fusion_threshold"


class TensorOverFusionThreshold(TimelineDetector):
    name = "tensor_over_fusion_threshold"
    code = CODE

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        t = ctx.config.thresholds.over_threshold
        est = model.fusion_estimate
        ops = model.steady_ops
        if est.lower_bytes is None or ops.empty:
            return None
        sizes = model.batches.set_index("batch")["tensors"]
        ops = ops.assign(alone=sizes.reindex(ops["batch"]).to_numpy() == 1)
        grads = ops[ops["pid"].isin(model.gradient_pids)]
        per = grads.groupby("pid").agg(
            tensor=("tensor", "first"),
            bytes=("bytes", "max"),
            alone=("alone", "mean"),
            n=("alone", "size"),
            offset=("start_offset", "min"),
        )
        per = per[(per["alone"] >= t.min_alone_share) & (per["bytes"] > est.lower_bytes)]
        if per.empty:
            return None
        per["company"] = _company_share(grads[grads["pid"].isin(per.index)], ops).reindex(per.index).fillna(0.0)
        upper = est.upper_bytes
        assumed = None
        default, release = default_threshold(model.facts)
        if est.lower_bytes <= default and (upper is None or default < upper):
            # the run's batches allow Horovod's default and nothing shows another setting: assume it
            upper, assumed = default, (default, release)
        # over the upper bound, or so close under it that only a threshold in a sliver of its size would hold it
        certain = per["bytes"] * (1 + t.bound_slack) >= upper if upper is not None else False
        likely = (per["bytes"] > 2 * est.lower_bytes) & (per["company"] >= t.min_company_share)
        over = per[certain | likely]
        if over.empty:
            return None
        over = over.sort_values("bytes", ascending=False)
        threshold = suggested_threshold(float(over["bytes"].max()))
        now = float(model.steady["batches"].median())
        expected = expected_batches(model, threshold, model.cycle.cycle_us if model.cycle else DEFAULT_CYCLE_US)
        overhead = batch_overhead_us(model)
        # each over-threshold tensor adds at most one batch per step
        saved = (
            min(max(now - expected, 0.0), float(len(over))) * overhead
            if expected is not None and overhead is not None
            else 0.0
        )
        impact = step_impact(
            model,
            saved,
            "low",
            f"{expected:.0f} batches per step instead of {now:.0f} with a {threshold // MIB} MiB "
            "threshold, each saving the fixed per-collective cost"
            if expected is not None
            else "",
        )
        names = ", ".join(str(name) for name in over["tensor"].head(3))
        return Finding(
            code=CODE,
            severity=Severity.WARNING if impact and impact.fraction_of_step >= 0.05 else Severity.INFO,
            title=f"{len(over)} tensor(s) larger than the fusion threshold always run alone",
            summary=(
                f"{model.path}: {names}{' ...' if len(over) > 3 else ''} ({over['bytes'].max() / MIB:.1f} MiB "
                f"largest) exceed the fusion threshold in effect ({est.text()}"
                + (
                    f"; assumed Horovod's default of {assumed[0] // MIB} MiB for {assumed[1]}, since the run shows "
                    "no other setting"
                    if assumed
                    else ""
                )
                + "), so each takes its own collective while other gradients ready at the same time go in another."
            ),
            detector=self.name,
            evidence=tuple(
                Evidence(
                    summary=(
                        f"{row.tensor}: {int(row.bytes):,} bytes, alone in {row.alone:.0%} of {row.n} steady "
                        f"steps; another gradient was ready but ran separately in {row.company:.0%}"
                    ),
                    sources=(at(model, row.offset),),
                    metrics={"bytes": float(row.bytes), "alone_share": float(row.alone)},
                )
                for row in over.head(10).itertuples()
            )
            + (
                (
                    Evidence(
                        summary=f"per-collective fixed cost about {ms(overhead)}",
                        metrics={"batch_overhead_ms": overhead / 1e3},
                    ),
                )
                if overhead is not None
                else ()
            ),
            impact=impact,
            suggestions=(
                Suggestion(
                    action=f"Set HOROVOD_FUSION_THRESHOLD={threshold} ({threshold // MIB} MiB, in bytes) so these tensors "
                    f"fit in a batch with their neighbours; expect about "
                    f"{expected:.0f} batches per step."
                    if expected is not None
                    else f"Set HOROVOD_FUSION_THRESHOLD={threshold} ({threshold // MIB} MiB, in bytes).",
                    env={"HOROVOD_FUSION_THRESHOLD": str(threshold)},
                    rationale="The fusion buffer is allocated once at that size per device; make sure GPU memory "
                    "allows it.",
                ),
            ),
        )


def _company_share(cand: pd.DataFrame, ops: pd.DataFrame) -> pd.Series:
    """Per candidate pid: share of its ops for which another op of the same name and step
    was ready when it started, yet started later in another batch."""
    left = cand[["pid", "step", "name", "batch", "start_us"]].reset_index(drop=True).assign(i=lambda d: d.index)
    right = ops[["step", "name", "batch", "start_us", "ready_us"]]
    pairs = left.merge(right, on=["step", "name"], suffixes=("", "_o"))
    hit = (
        (pairs["batch_o"] != pairs["batch"])
        & (pairs["start_us_o"] >= pairs["start_us"])
        & (pairs["ready_us"] <= pairs["start_us"])
    )
    had = hit.groupby(pairs["i"]).any().reindex(left["i"], fill_value=False).to_numpy()
    return pd.Series(had, index=left["pid"]).groupby(level=0).mean()
