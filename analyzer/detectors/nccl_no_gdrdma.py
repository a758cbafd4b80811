"""``nccl.no_gdrdma``: an RDMA network (InfiniBand, RoCE, EFA) without GPUDirect RDMA.

Signal: a process whose NET connections run over an RDMA network (IB/RoCE, an IB plugin, Libfabric:
:mod:`parsers.nccl.net_plugins`) and none of
them carries ``/GDRDMA``, or that printed ``GPU Direct RDMA Disabled``. Data then takes a
detour through host memory on every transfer.
"""

from __future__ import annotations

import pandas as pd

from analyzer.detectors._logs import hosts, listed, src, who
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel
from parsers.nccl.net_plugins import is_rdma, network

CODE = "nccl.no_gdrdma"


#: the RDMA fabric each network family is, in a title's words
FABRICS = {"IB": "InfiniBand", "Libfabric": "EFA (Libfabric)"}


def _fabric(nets: pd.Series) -> str:
    """The fabric the processes' networks run on (``InfiniBand``, ``EFA (Libfabric)``), or ``RDMA`` for several."""
    families = {f.family for f in map(network, nets.dropna()) if f is not None}
    named = {FABRICS.get(f, "RDMA") for f in families} or {"InfiniBand"}  # 'GPU Direct RDMA Disabled': IB's words
    return named.pop() if len(named) == 1 else "RDMA"


class NoGdrdma(LogDetector):
    name = "no_gdrdma"
    code = CODE

    def check(self, model: NcclModel) -> list[Finding]:
        p = model.processes
        if p.empty:
            return []
        # RDMA networks only: NCCL's and the plugins' IB, RoCE and Libfabric; not TCP plugins (FastSocket, TCPX)
        # nor a network the table does not know
        rdma = p["net"].map(is_rdma)
        plain = p[rdma & p["gdrdma"].eq(False)]  # False, not None (unknown)
        disabled = p[p["gdr_disabled"]]
        if plain.empty and disabled.empty:
            return []
        bad = plain if not plain.empty else disabled
        conns = model.nccl_connections
        evidence = []
        if not plain.empty:
            net = conns[(conns["kind"] == "NET") & ~conns["gdr"]]
            evidence.append(
                Evidence(
                    summary=f"{int(net['connections'].sum())} inter-node connection line(s) via "
                    f"{', '.join(sorted(set(net['detail'])))} without /GDRDMA on "
                    f"{listed(sorted({who(r.host, r.pid) for r in plain.itertuples()}))}",
                    sources=tuple(src(r.file, r.first_line) for r in net.head(3).itertuples()),
                )
            )
        if not disabled.empty:
            evidence.append(
                Evidence(
                    summary=f"NCCL printed 'GPU Direct RDMA Disabled' on "
                    f"{listed(sorted({who(r.host, r.pid) for r in disabled.itertuples()}))} (the NIC is too far "
                    "from the GPU for the current NCCL_NET_GDR_LEVEL, or the peer-memory module is missing)",
                    sources=tuple(src(r.file, r.first_line) for r in disabled.head(3).itertuples()),
                )
            )
        return [
            Finding(
                code=CODE,
                severity=Severity.WARNING,
                title=f"{_fabric(bad['net'])} without GPUDirect RDMA: transfers go through host memory",
                summary=(
                    f"{len(bad)} process(es) use {', '.join(sorted(set(bad['net'].dropna())))} without GPUDirect "
                    "RDMA, so every inter-node transfer is staged in host memory, costing bandwidth and CPU."
                ),
                detector=self.name,
                evidence=tuple(evidence),
                suggestions=(
                    Suggestion(
                        action="Load the GPU peer-memory kernel module on every host (sudo modprobe "
                        "nvidia-peermem; older stacks: nv_peer_mem) or use DMA-BUF (Linux >= 5.12, "
                        "CUDA >= 11.7), then check that channel lines show /GDRDMA.",
                        rationale="NCCL enables GDR only when the NIC can register GPU memory.",
                    ),
                    Suggestion(
                        action="If the NIC is not on the GPU's PCIe switch, allow GDR across the CPU for a test "
                        "and compare bus bandwidth (nccl-tests).",
                        env={"NCCL_NET_GDR_LEVEL": "PHB"},
                    ),
                ),
                hosts=hosts(bad),
            )
        ]
