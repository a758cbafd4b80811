"""``timeline.long_queue``: ops wait in ``QUEUE`` (GPU stream / NCCL backlog) most of the time.

``QUEUE`` is the time a GPU op waits behind earlier work on its stream, usually the
previous NCCL collective: a slow or saturated network. It is told apart from
``WAIT_FOR_DATA`` / ``WAIT_FOR_OTHER_TENSOR_DATA`` (the framework's compute has not
produced the tensor yet: not a communication problem) and from ``INIT_NCCL`` /
``INIT_FUSION_BUFFER`` (one-off set-up, reported by ``timeline.init_overhead``): steps
with set-up work are left out. Signal, over the remaining steady steps (medians): the
per-step union of ``QUEUE`` is at least ``long_queue.min_step_share`` of the step and
``long_queue.min_comm_share`` of the communication time, and longer than the waits for data.

Impact: the ``QUEUE`` time after the step's last negotiation ended (nothing else runs
then), median per step: what the step would lose if the backlog disappeared.
"""

from __future__ import annotations

import numpy as np

from analyzer.detectors._common import at, ms, step_impact
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.timeline.model import TimelineModel
from analyzer.timeline.steps import step_windows, union_per_step

CODE = "timeline.long_queue"
WAIT_NAMES = ("WAIT_FOR_DATA", "WAIT_FOR_OTHER_TENSOR_DATA")


class LongQueue(TimelineDetector):
    name = "long_queue"
    code = CODE

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        t = ctx.config.thresholds.long_queue
        step_us = model.median_step_us
        steps = model.steps
        use = steps[steps["steady"] & (steps["init_us"] == 0)]
        sp = model.spans
        activity = (sp["kind"] == "activity").to_numpy()
        cols = ["step", "start_us", "end_us", "start_offset", "tensor"]  # a filter of these columns only
        queue_rows = sp.loc[activity & (sp["name"] == "QUEUE").to_numpy(), cols]
        if not step_us or use.empty or queue_rows.empty:
            return None
        n = len(steps)
        lo, ready, hi = step_windows(steps)
        idx = use["step"].to_numpy()
        queue = union_per_step(queue_rows, lo, hi, n)[idx]
        exposed = union_per_step(queue_rows, ready, hi, n)[idx]
        wait = union_per_step(sp.loc[activity & sp["name"].isin(WAIT_NAMES).to_numpy(), cols], lo, hi, n)[idx]
        comm = use["comm_us"].to_numpy()
        q, w, c, x = (float(np.median(a)) for a in (queue, wait, comm, exposed))
        if q < t.min_step_share * step_us or q < t.min_comm_share * c or q <= w:
            return None
        longest = queue_rows.assign(d=queue_rows["end_us"] - queue_rows["start_us"]).sort_values("d").iloc[-1]
        return Finding(
            code=CODE,
            severity=Severity.WARNING,
            title=f"Ops wait {ms(q)} per step in QUEUE behind earlier GPU/NCCL work ({q / c:.0%} of communication)",
            summary=(
                f"{model.path}: over {len(use)} steady steps, collectives spent a median {ms(q)} per step in QUEUE "
                f"({q / step_us:.0%} of the {ms(step_us)} step, {q / c:.0%} of the {ms(c)} of communication), "
                f"against {ms(w)} waiting for data. The stream is backed up with earlier collectives: the network "
                "or NCCL's transport is slower than the gradients arrive. This is not compute (WAIT_FOR_DATA) "
                "and not one-off set-up (steps with INIT_NCCL/INIT_FUSION_BUFFER are excluded)."
            ),
            detector=self.name,
            evidence=(
                Evidence(
                    summary=f"QUEUE median {ms(q)}/step, of which {ms(x)} after the last gradient was ready; "
                    f"WAIT_FOR_DATA {ms(w)}/step; communication {ms(c)}/step",
                    sources=(at(model, queue_rows["start_offset"].min()),),
                    metrics={
                        "queue_ms": q / 1e3,
                        "exposed_queue_ms": x / 1e3,
                        "wait_for_data_ms": w / 1e3,
                        "comm_ms": c / 1e3,
                        "steps": float(len(use)),
                    },
                ),
                Evidence(
                    summary=f"longest QUEUE: {ms(float(longest['d']))} on {longest['tensor']}",
                    sources=(at(model, longest["start_offset"]),),
                ),
            ),
            impact=step_impact(
                model,
                x,
                "low",
                "the QUEUE time after the last gradient was ready would vanish with a network that "
                "keeps up; QUEUE overlapping backward costs nothing and is not counted",
            ),
            suggestions=(
                Suggestion(
                    action="Check which transport NCCL uses on every host: rerun with NCCL_DEBUG=INFO and ingest "
                    "the logs (hvd-analyze reports socket fallbacks and the interfaces NCCL chose). Pin the "
                    "fast fabric with NCCL_SOCKET_IFNAME / NCCL_IB_HCA.",
                    env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"},
                ),
                Suggestion(
                    action="More NCCL streams do not help: HOROVOD_NUM_NCCL_STREAMS only moves the wait from QUEUE "
                    "into NCCL_ALLREDUCE (Horovod #1544). Reduce the bytes instead: fp16 gradient "
                    "compression (hvd.Compression.fp16) halves them.",
                ),
            ),
        )
