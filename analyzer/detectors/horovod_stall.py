"""``horovod.stall``: Horovod's stall inspector saw tensors waiting for missing ranks.

Signal: ``One or more tensors were submitted ... Missing ranks:`` followed by
``RANK[!]: [tensors]`` lines. ``!`` marks ranks stalled past
``HOROVOD_STALL_SHUTDOWN_TIME_SECONDS`` (Horovod shuts down): critical.
"""

from __future__ import annotations

from analyzer.detectors._logs import listed, src
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel

CODE = "horovod.stall"


class HorovodStall(LogDetector):
    name = "horovod_stall"
    code = CODE
    requires = ("horovod_stalls",)
    why_required = "no job log with Horovod stall-inspector warnings was ingested"

    def check(self, model: NcclModel) -> list[Finding]:
        s = model.horovod_stalls
        if s.empty:
            return []
        ranks = sorted({int(r) for r in s["rank"]})
        tensors = sorted({t for lst in s["tensors"] for t in lst})
        shutdown = bool(s["shutdown"].any())
        evidence = tuple(
            Evidence(
                summary=f"rank {int(r.rank)}{' (past the shutdown time)' if r.shutdown else ''} had not "
                f"submitted {listed(list(r.tensors), 6)}{' ...' if r.more else ''}",
                sources=(src(r.file, r.line),),
            )
            for r in s.drop_duplicates("rank").itertuples()
        )[:12]
        return [
            Finding(
                code=CODE,
                severity=Severity.CRITICAL if shutdown else Severity.WARNING,
                title=f"Horovod stall: rank(s) {listed([str(r) for r in ranks])} did not submit "
                f"{len(tensors)} tensor(s)",
                summary=(
                    f"Horovod's stall inspector reported {len(s)} missing-rank entr(y/ies): rank(s) "
                    f"{listed([str(r) for r in ranks])} never submitted {listed(tensors, 4)} while the other ranks "
                    "waited. Either those ranks are slow or stuck (data loading, a crash), or ranks submit "
                    "different tensors (conditional code paths), which deadlocks."
                ),
                detector=self.name,
                evidence=evidence,
                suggestions=(
                    Suggestion(
                        action=f"Inspect rank(s) {listed([str(r) for r in ranks])}: are they alive (py-spy dump), "
                        "and do all ranks run the same model code and the same number of steps?"
                    ),
                    Suggestion(
                        action="Let Horovod stop the job instead of hanging when a stall persists.",
                        env={"HOROVOD_STALL_CHECK_TIME_SECONDS": "60", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "600"},
                    ),
                ),
                ranks=tuple(ranks),
            )
        ]
