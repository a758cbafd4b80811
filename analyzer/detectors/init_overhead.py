"""``timeline.init_overhead`` (info): one-off set-up inside collectives.

``INIT_NCCL`` (communicator creation; a few hundred ms is normal, seconds point at slow
bootstrap networking) and ``INIT_FUSION_BUFFER`` (fusion buffer allocation; again after
the first step only when autotune changes the threshold). Signal: the set-up total
is at least ``startup.min_init_us``. No per-step impact: the cost is paid
once, and excluded from the steady-state statistics of the other detectors.
"""

from __future__ import annotations

from analyzer.detectors._common import at, ms
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.timeline.model import TimelineModel
from analyzer.timeline.steps import INIT_ACTIVITIES

CODE = "timeline.init_overhead"


class InitOverhead(TimelineDetector):
    name = "init_overhead"
    code = CODE

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        t = ctx.config.thresholds.startup
        sp = model.spans
        init = sp[(sp["kind"] == "activity") & sp["name"].isin(INIT_ACTIVITIES) & sp["closed"]]
        if init.empty:
            return None
        # names as strings: grouped in their own order, and only the names found
        init = init.assign(d=init["end_us"] - init["start_us"], name=init["name"].astype(str))
        # a fused batch writes one copy per tensor: count each batch once
        per = (
            init.groupby(["name", "batch"], dropna=False)
            .agg(d=("d", "max"), off=("start_offset", "min"), step=("step", "min"))
            .reset_index()
        )
        total = float(per["d"].sum())
        nccl = per[per["name"].isin(["INIT_NCCL", "NCCL_INIT"])]
        if total < t.min_init_us:
            return None
        evidence = []
        for name, rows in per.groupby("name"):
            later = int((rows["step"] > 0).sum())
            first = rows.sort_values("off").iloc[0]
            evidence.append(
                Evidence(
                    summary=f"{name}: {len(rows)} time(s), {ms(float(rows['d'].sum()))} in all, longest "
                    f"{ms(float(rows['d'].max()))}" + (f"; {later} after the first step" if later else ""),
                    sources=(at(model, first["off"]),),
                    metrics={"count": float(len(rows)), "total_ms": float(rows["d"].sum()) / 1e3},
                )
            )
        slow = not nccl.empty and float(nccl["d"].max()) >= t.slow_nccl_init_us
        suggestions = (
            (
                Suggestion(
                    action="NCCL communicator creation over 5 s usually means slow bootstrap: check "
                    "NCCL_SOCKET_IFNAME points at a routable interface and read the "
                    "NCCL_DEBUG=INFO log for the time between 'Bootstrap' and 'Init COMPLETE'.",
                    env={"NCCL_DEBUG": "INFO"},
                ),
            )
            if slow
            else ()
        )
        return Finding(
            code=CODE,
            severity=Severity.INFO,
            title=f"One-off set-up inside collectives: {ms(total)}",
            summary=(
                f"{model.path}: "
                + ", ".join(f"{e.summary.split(':')[0]}" for e in evidence)
                + f" took {ms(total)} in all. This is paid once, not per step, and is left out of the "
                "steady-state step statistics."
            ),
            detector=self.name,
            evidence=tuple(evidence),
            suggestions=suggestions,
        )
