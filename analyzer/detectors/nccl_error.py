"""``nccl.error``: NCCL failures, one finding per root-cause class.

Signal: WARN records classified by :mod:`parsers.nccl.error_classes` (benign warnings such as a
missing libibverbs on a machine without IB are left out), error chains seen without their WARN
and framework reports of failed calls, attributed to root causes by :mod:`analyzer.nccl.incidents`.
A finding names its root cause (class, process, rank when known, the first WARN with its
``FILE:LINE``) and lists what followed from it (other ranks' closed sockets, result chains,
failed proxy operations, framework wrappers) as evidence, not as findings of their own.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Any

from analyzer.detectors._logs import abnormal_exits, listed, seq_said, src, who
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion, clip
from analyzer.nccl.incidents import ClassifiedError, Incident, peer_gone
from analyzer.nccl.model import NcclModel
from parsers.nccl import gloo_errors
from parsers.nccl.error_classes import remediation

CODE = "nccl.error"
#: the classes whose title names them otherwise than "NCCL <class>": failures not NCCL's own, NCCL's crash
NOT_NCCLS = {
    "gpu_fault": "GPU fault",
    "nccl_crash": "NCCL crashed",
    "rendezvous_unreachable": "Rendezvous store unreachable",
    "rendezvous_port_in_use": "Rendezvous port in use",
    "rendezvous_incomplete": "Rendezvous incomplete",
    "horovod_shutdown": "Horovod stopped",
    "horovod_mismatch": "Horovod collective mismatch",
    "gpu_oom": "GPU out of memory",
    "dataloader_died": "DataLoader worker died",
    "gloo_peer_lost": "Gloo peer lost",
    "gloo_timeout": "Gloo timeout",
    "gloo_connect": "Gloo could not connect",
    "gloo_interface": "Gloo interface not found",
    "gloo_mismatch": "Gloo collective mismatch",
}
TITLE_CHARS = 90  # of the root cause's message in the title; the summary has it whole
ROOT_EVIDENCE = 6  # root errors cited (one per process)
CONSEQUENCE_EVIDENCE = 4  # consequences cited one by one; the rest are counted
#: why an unconfirmed root cause is one (``nccl_errors.unconfirmed``: :meth:`parsers.nccl.failures.Failures.settle`)
UNCONFIRMED = (
    "NCCL often goes on after this (a network plugin or InfiniBand probe that fails, then another network), and "
    "nothing after it in the log shows whether this process did: no network chosen, connection or Init COMPLETE, "
    "and no later error, abort, framework report or worker exit. The log, or this excerpt of it, ends first."
)
#: the directories of a source file deep in a build tree (``/opt/conda/conda-bld/…/c10d/ProcessGroupNCCL.cpp``, in a
#: framework's report): the title keeps the file; shorter paths (``/dev/shm/…``, ``NET/IB/0``) stay whole
_LONG_PATH = re.compile(r"(?<![\w/.])(?:\.{1,2})?/(?:[\w.+-]+/){3,}(?=[\w+-]+\.\w+)")


#: the classes of reports that follow from something else by their nature: Horovod's shutdown follows from a rank
#: that raised or left, a Gloo peer lost or waited for from the peer's end; when the launcher reports a worker's
#: abnormal end, that end is the cause
CONSEQUENCES = frozenset({"horovod_shutdown", *gloo_errors.CONSEQUENCES})
AFTER_AN_END = "It follows from the worker's end the launcher reports (see job.worker_exit), the cause."


#: the reporters of a process's own report of the signal that ended it (Python's faulthandler, UCX's and Open MPI's
#: handlers): an abort they report is what an uncaught exception ends in, a Gloo error's own among them
SELF_REPORTERS = frozenset({"python", "ucx", "open-mpi"})
SIGABRT = 6


def _a_worker_died(model: NcclModel, but_own_aborts: bool = False) -> bool:
    """Whether a launcher reports a worker's abnormal end (a signal, or a non-zero exit code); ``but_own_aborts``:
    other than a process's own report that it aborted (the end a Gloo error it raised may have caused itself)."""
    if model.worker_exits.empty:
        return False
    bad = abnormal_exits(model.worker_exits)
    if but_own_aborts:
        bad = bad[~(bad["launcher"].isin(SELF_REPORTERS) & (bad["signal"] == SIGABRT))]
    return not bad.empty


class NcclError(LogDetector):
    name = "nccl_error"
    code = CODE
    requires = ("nccl_errors",)

    def check(self, model: NcclModel) -> list[Finding]:
        incidents = model.incidents
        ranks = _ranks(model)
        out = [_finding(i, ranks, secondary=len(incidents) > 1 and all(map(peer_gone, i.roots))) for i in incidents]
        # a report that is a consequence by its nature follows from that end; a Gloo peer's loss not from an abort the
        # process reports of itself, which its own uncaught Gloo error may have caused
        died, peer_died = _a_worker_died(model), _a_worker_died(model, but_own_aborts=True)
        out = [
            replace(f, severity=Severity.WARNING, summary=f"{f.summary.removeprefix('Root cause: ')} {AFTER_AN_END}")
            if i.cls in CONSEQUENCES and (peer_died if i.cls in gloo_errors.CONSEQUENCES else died)
            else f
            for i, f in zip(incidents, out, strict=True)
        ]
        w = model.watchdog_timeouts
        if out and not w.empty:  # the framework's timeouts follow from the job's first root cause
            first = w.sort_values(["file", "line"]).iloc[0]
            timeouts = Evidence(
                summary=f"consequence: {len(w)} PyTorch watchdog timeout(s), first {first['op']}"
                f"{seq_said(first['seq'])} (see nccl.watchdog_timeout)",
                sources=(src(first["file"], first["line"]),),
            )
            out[0] = replace(out[0], evidence=(*out[0].evidence, timeouts))
        return out


def _finding(incident: Incident, ranks: dict[tuple[Any, ...], list[int]], secondary: bool) -> Finding:
    cls, roots, after = incident.cls, incident.roots, incident.consequences
    first = roots[0]
    rank = ranks.get((first["file"], first["host"], first["pid"]), [])
    where = who(first["host"], first["pid"]) + (f" (rank {listed([str(r) for r in rank])})" if rank else "")
    at = f" at {first['src']}" if first["src"] else ""
    text = first["message"][:200]
    if first["level"] == "chain":  # its WARN went unlogged: say what the frames show
        text = f"a result chain without its WARN ({' <- '.join(first['chain'][:4])})"
    others = sorted({who(e["host"], e["pid"]) for e in roots[1:]} - {who(first["host"], first["pid"])})
    known = first["host"] is not None or first["pid"] is not None  # a framework's report may not say its process
    summary = f"Root cause: {cls}{f' on {where}' if known else ''}{at}: {text}"
    summary += "" if summary.endswith((".", "!", "?")) else "."  # what follows is a sentence of its own
    if others:
        summary += f" The same on {listed(others)}."
    if after:
        procs = {who(e["host"], e["pid"]) for e in after if e["host"] is not None or e["pid"] is not None}
        summary += (
            f" {len(after)} later error(s) follow from it"
            + (f" on {listed(sorted(procs))}" if procs else "")
            + f" ({_kinds(after)})."
        )
    evidence = [_evidence(e, "root cause") for e in _first_per_process(roots)[:ROOT_EVIDENCE]]
    evidence += [_evidence(e, "consequence") for e in _first_per_process(after)[:CONSEQUENCE_EVIDENCE]]
    fixes = list(dict.fromkeys(e["remediation"] for e in roots if e["level"] != "chain" and e["remediation"]))
    fixes = [f for f in fixes or [remediation(cls)] if f]
    unconfirmed = all(e["unconfirmed"] for e in roots)
    if unconfirmed:  # the log ends before it shows whether NCCL went on: say so, and what would tell
        said = summary.removeprefix("Root cause: ")
        summary = f"Possible root cause, unconfirmed: {said}{'' if said.endswith('.') else '.'} {UNCONFIRMED}"
        fixes = [_read_on(first), *(f"If it did fail: {f}" for f in fixes)]
    return Finding(
        code=CODE,
        severity=Severity.WARNING if secondary or unconfirmed else Severity.CRITICAL,
        title=f"{NOT_NCCLS.get(cls) or 'NCCL ' + cls.replace('_', ' ')}{', unconfirmed' if unconfirmed else ''}: "
        f"{clip(_LONG_PATH.sub('…/', text), TITLE_CHARS)}",
        summary=summary,
        detector=NcclError.name,
        evidence=tuple(evidence),
        suggestions=tuple(Suggestion(action=f) for f in fixes[:3] if f),
        ranks=tuple(rank),
        hosts=tuple(sorted({e["host"] for e in roots if e["host"]})),
        labels={"class": cls}
        | ({"root_src": first["src"]} if first["src"] else {})
        | ({"unconfirmed": "true"} if unconfirmed else {}),
    )


def _read_on(first: ClassifiedError) -> str:
    """What tells whether an unconfirmed failure was one: the lines of its process after it."""
    return (
        f"Read what {who(first['host'], first['pid'])} logged after line {first['line']} of {first['file']} (the whole "
        "log, not an excerpt): 'Using network …', connections ('via NET/…', 'via P2P/…') or 'Init COMPLETE' mean NCCL "
        "went on and this was a failed probe; another error, an abort or the job ending mean it was fatal."
    )


def _evidence(e: ClassifiedError, role: str) -> Evidence:
    chain = f" -> {' <- '.join(e['chain'][:6])}" if e["chain"] else ""
    return Evidence(
        summary=f"{role}, {who(e['host'], e['pid'])}: {e['message'][:300]}{chain}",
        sources=(src(e["file"], e["line"]),),
        metrics={"result_code": float(e["result_code"])} if e["result_code"] is not None else {},
    )


def _kinds(errs: list[ClassifiedError]) -> str:
    """``3 result chains, 2 peer gone, 1 framework report``."""
    kinds: Counter[str] = Counter(
        "result chains"
        if e["level"] == "chain"
        else "framework reports"
        if e["level"] == "framework"
        else "peers gone"
        if peer_gone(e)
        else "warnings"
        for e in errs
    )
    return ", ".join(f"{n} {k}" for k, n in kinds.most_common())


def _ranks(model: NcclModel) -> dict[tuple[Any, ...], list[int]]:
    procs = model.processes
    if procs.empty:
        return {}
    return {
        (r.file, r.host if isinstance(r.host, str) else None, None if r.pid != r.pid else int(r.pid)): list(r.ranks)
        for r in procs.itertuples(index=False)
        if r.pid is None or r.pid == r.pid
    }


def _first_per_process(errs: list[ClassifiedError]) -> list[ClassifiedError]:
    seen = set()
    out = []
    for e in errs:
        key = (e["host"], e["pid"], e["message"][:60])
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out
