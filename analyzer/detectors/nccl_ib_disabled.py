"""``nccl.ib_disabled``: NCCL_IB_DISABLE=1 forces TCP sockets for inter-node traffic.

Signal: NCCL echoed ``NCCL_IB_DISABLE set by environment to 1.``. Warning when the job
spans several hosts (the setting then costs bandwidth), info on one host (only the
socket transport for a future multi-node run is affected).
"""

from __future__ import annotations

from analyzer.detectors._logs import hosts, listed, src, who
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel

CODE = "nccl.ib_disabled"


class IbDisabled(LogDetector):
    name = "ib_disabled"
    code = CODE
    requires = ("nccl_env",)

    def check(self, model: NcclModel) -> list[Finding]:
        env = model.nccl_env
        off = env[(env["var"] == "NCCL_IB_DISABLE") & (env["value"].str.strip() == "1")]
        if off.empty:
            return []
        p = model.processes
        multi = len(hosts(p)) > 1 if not p.empty else False
        procs = listed(sorted({who(r.host, r.pid) for r in off.itertuples()}))
        return [
            Finding(
                code=CODE,
                severity=Severity.WARNING if multi else Severity.INFO,
                title="InfiniBand is disabled by NCCL_IB_DISABLE=1",
                summary=(
                    f"NCCL_IB_DISABLE=1 on {procs}: NCCL will not use InfiniBand/RoCE and sends inter-node "
                    "traffic over TCP sockets"
                    + (
                        " in this multi-host job."
                        if multi
                        else " (this log shows one host, so only a multi-node run pays)."
                    )
                ),
                detector=self.name,
                evidence=(
                    Evidence(
                        summary=f"NCCL_IB_DISABLE set by environment to 1 ({len(off)} process(es))",
                        sources=tuple(src(r.file, r.line) for r in off.head(3).itertuples()),
                    ),
                ),
                suggestions=(
                    Suggestion(
                        action="Remove NCCL_IB_DISABLE (often left over from debugging or a copied launch script) unless "
                        "the hosts really have no usable RDMA device.",
                        env={"NCCL_IB_DISABLE": "0"},
                        rationale="With IB enabled NCCL picks the HCAs itself and falls back to sockets only when none "
                        "works.",
                    ),
                ),
                hosts=hosts(off),
            )
        ]
