"""``nccl.socket_fallback``: inter-node traffic runs over TCP sockets (NET/Socket).

Signal: a process whose inter-node connections go ``via NET/Socket`` (or that said
``Using network Socket`` / listed only ``NET/Socket`` interfaces) in a job that spans
several hosts or has inter-node connection lines. Not when the user disabled IB
(``NCCL_IB_DISABLE=1``: ``nccl.ib_disabled``). **Critical** when InfiniBand/RoCE was
present or expected: HCAs listed, an IB/EFA net plugin loaded, an IPoIB bootstrap
interface, ``NCCL_IB_HCA`` set; the finding quotes the reason NCCL gave (libibverbs
missing, ``NET/IB : No device found``). With a Horovod timeline in the same store, the
finding adds what communication costs per step there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from analyzer.detectors._logs import IB_INTERFACE, hosts, listed, src, who
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Impact, Severity, Suggestion
from analyzer.nccl.model import NcclModel
from analyzer.timeline.model import TimelineModel
from parsers.nccl.net_plugins import is_internal_socket

if TYPE_CHECKING:
    from analyzer.context import Context

CODE = "nccl.socket_fallback"


class SocketFallback(LogDetector):
    name = "socket_fallback"
    code = CODE

    def detect(self, ctx: Context) -> list[Finding]:
        """Per job: its logs, and its timeline if any (what sockets cost there), never another job's."""
        return [
            replace(f, job=job.id)
            for job in ctx.jobs().jobs
            if job.logs
            for f in self.check(ctx.nccl(job), ctx.timelines(job))
        ]

    def check(self, model: NcclModel, timelines: Sequence[TimelineModel] = ()) -> list[Finding]:
        p = model.processes
        if p.empty:
            return []
        conns = model.nccl_connections
        multi_host = len(hosts(p)) > 1 or (not conns.empty and (conns["kind"] == "NET").any())
        # NCCL's own socket transport, not a TCP plugin chosen on purpose (FastSocket, GPUDirect-TCPX)
        internal = p["net"].map(is_internal_socket)
        sock = p[internal & ~p["ib_disabled"]]
        if sock.empty or not multi_host:
            return []
        env = model.nccl_env
        hca_env = env[env["var"] == "NCCL_IB_HCA"]["value"].tolist() if not env.empty else []
        expected, reasons = self._ib_expected(p, sock, hca_env)
        hcas = sorted({h.split(":")[0] for lst in p["ib_hcas"] for h in lst})
        ifaces = sorted(
            {i.split(":")[0] for lst in sock["socket_interfaces"] for i in lst}
            | {b.split(":")[0] for b in sock["bootstrap_interface"] if isinstance(b, str)}
        )
        evidence = [
            Evidence(
                summary=f"{len(sock)} process(es) on {len(hosts(sock))} host(s) send inter-node traffic over "
                f"NET/Socket ({listed([who(r.host, r.pid) for r in sock.itertuples()])})"
                + (f" via interface(s) {', '.join(ifaces)}" if ifaces else ""),
                sources=tuple(src(r.file, r.first_line) for r in sock.head(3).itertuples()),
                metrics={"processes": float(len(sock)), "hosts": float(len(hosts(sock)))},
            )
        ]
        evidence += [Evidence(summary=r) for r in reasons]
        impact, timeline_ev = self._timeline_cost(timelines)
        if timeline_ev:
            evidence.append(timeline_ev)
        suggestions = []
        if hcas or hca_env:
            suggestions.append(
                Suggestion(
                    action="Make the IB/RoCE devices usable inside the job (expose /dev/infiniband to the container, "
                    "install rdma-core/libibverbs, load the HCA drivers) and select them explicitly.",
                    env={"NCCL_IB_HCA": ",".join(hcas) if hcas else hca_env[0]},
                    rationale="NCCL falls back to sockets silently when it cannot open verbs or finds no active port.",
                )
            )
        else:
            suggestions.append(
                Suggestion(
                    action="If the hosts have InfiniBand/RoCE or EFA, expose the devices to the job (/dev/infiniband, "
                    "rdma-core, the aws-ofi-nccl plugin for EFA); NCCL_DEBUG=INFO then shows 'Using network IB'.",
                    rationale="Without a usable RDMA device NCCL uses TCP sockets, typically several times slower.",
                )
            )
        if ifaces:
            ipoib = [i for i in ifaces if IB_INTERFACE.match(i)]
            first = next((lst[0].split(":")[0] for lst in sock["socket_interfaces"] if len(lst)), ifaces[0])
            suggestions.append(
                Suggestion(
                    action="Until RDMA works, keep sockets on "
                    + ("the IPoIB interface" if ipoib else "the interface NCCL picked first")
                    + " and open more sockets per peer.",
                    env={
                        "NCCL_SOCKET_IFNAME": ipoib[0] if ipoib else first,
                        "NCCL_SOCKET_NTHREADS": "4",
                        "NCCL_NSOCKS_PERTHREAD": "4",
                    },
                    rationale="IPoIB usually carries far more than an Ethernet management port; several sockets per "
                    "peer are needed to fill a fast link."
                    if ipoib
                    else "Several sockets per peer are needed to fill a fast link.",
                )
            )
        return [
            Finding(
                code=CODE,
                severity=Severity.CRITICAL if expected else Severity.WARNING,
                title="Inter-node NCCL traffic uses TCP sockets"
                + (" although InfiniBand/RoCE was expected" if expected else ""),
                summary=(
                    f"NCCL chose NET/Socket for inter-node transfers on {len(hosts(sock))} host(s)"
                    + (f": {reasons[0]}" if reasons else "")
                    + ". Allreduce over sockets is usually several "
                    "times slower than over RDMA."
                ),
                detector=self.name,
                evidence=tuple(evidence),
                impact=impact,
                suggestions=tuple(suggestions),
                hosts=hosts(sock),
            )
        ]

    @staticmethod
    def _ib_expected(p: pd.DataFrame, sock: pd.DataFrame, hca_env: list[str]) -> tuple[bool, list[str]]:
        reasons = []
        expected = False
        if sock["verbs_missing"].any():
            reasons.append("NCCL could not open libibverbs.so (no RDMA userspace in this environment)")
        if sock["ib_no_device"].any():
            reasons.append("NCCL reported 'NET/IB : No device found' (verbs present, no usable port)")
        listed_hcas = sorted({h for lst in p["ib_hcas"] for h in lst})
        if listed_hcas:
            expected = True
            reasons.append(f"IB/RoCE devices were listed by NCCL: {', '.join(listed_hcas)}")
        plugins = sorted({x for x in p["plugin"] if isinstance(x, str)})
        if plugins:
            expected = True
            reasons.append(f"a net plugin was present: {', '.join(plugins)}")
        ib_ifs = sorted(
            {b.split(":")[0] for b in p["bootstrap_interface"] if isinstance(b, str) and IB_INTERFACE.match(b)}
        )
        if ib_ifs:
            expected = True
            reasons.append(f"the bootstrap interface is IPoIB ({', '.join(ib_ifs)}): the hosts have InfiniBand")
        if hca_env:
            expected = True
            reasons.append(f"NCCL_IB_HCA is set ({hca_env[0]})")
        return expected, reasons

    @staticmethod
    def _timeline_cost(timelines: Sequence[TimelineModel]) -> tuple[Impact | None, Evidence | None]:
        """What communication costs per step in the store's timeline, if there is one."""
        models = [m for m in timelines if len(m.steady)]
        if not models:
            return None, None
        m = max(models, key=lambda m: len(m.steady))
        steady = m.steady
        exposed = float(steady["exposed_comm_us"].median())
        step = m.median_step_us or 0.0
        comm = float(steady["comm_us"].median())
        ev = Evidence(
            summary=f"the timeline {m.path} spends a median {comm / 1e3:.1f} ms per step in communication, "
            f"{exposed / 1e3:.1f} ms of it after the last gradient was ready (step "
            f"{step / 1e3:.1f} ms)",
            metrics={"comm_ms": comm / 1e3, "exposed_comm_ms": exposed / 1e3, "step_ms": step / 1e3},
        )
        speedup = m.thresholds.nccl.socket_speedup  # the analysis's configuration, which the model carries
        saved = exposed * (1 - 1 / speedup)
        if not step or saved <= 0:
            return None, ev
        return Impact(
            seconds_per_step=saved / 1e6,
            fraction_of_step=min(1.0, saved / step),
            confidence="low",
            assumptions=f"RDMA moves the same bytes at least {speedup:.0f}x faster than TCP "
            "sockets, and only the communication exposed after the last gradient shortens "
            "the step",
        ), ev
