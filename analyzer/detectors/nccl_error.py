"""``nccl.error``: NCCL failures, one finding per error class.

Signal: WARN records classified by :mod:`parsers.nccl.error_classes` (benign warnings such as a
missing libibverbs on a machine without IB are left out) and error chains seen without
their WARN. The finding names the hosts and processes, cites the first occurrences with
their chains, and gives the class's remediation.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from analyzer.detectors._logs import listed, src, who
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel
from parsers.nccl.error_classes import remediation

CODE = "nccl.error"
SECONDARY = {"remote_process_exited", "socket_error"}  # usually the echo of another rank's failure


class NcclError(LogDetector):
    name = "nccl_error"
    code = CODE
    requires = ("nccl_errors",)

    def check(self, model: NcclModel) -> list[Finding]:
        by_class: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e in model.classified_errors:
            by_class[e["class"]].append(e)
        remedies = model.nccl_errors.set_index("message")["remediation"].to_dict() if by_class else {}
        out = []
        for cls, errs in by_class.items():
            procs = sorted({who(e["host"], e["pid"]) for e in errs})
            hosts = tuple(sorted({e["host"] for e in errs if e["host"]}))
            first = errs[0]
            evidence = tuple(
                Evidence(
                    summary=f"{who(e['host'], e['pid'])}: {e['message'][:300]}"
                    + (f" -> {' <- '.join(e['chain'][:6])}" if e["chain"] else ""),
                    sources=(src(e["file"], e["line"]),),
                    metrics={"result_code": float(e["result_code"])} if e["result_code"] is not None else {},
                )
                for e in _first_per_process(errs)[:6]
            )
            fixes = list(dict.fromkeys(remedies.get(e["message"], "") for e in errs if e["level"] == "WARN"))
            fixes = [f for f in fixes if f] or [remediation(cls)]
            out.append(
                Finding(
                    code=CODE,
                    severity=Severity.WARNING if cls in SECONDARY and len(by_class) > 1 else Severity.CRITICAL,
                    title=f"NCCL {cls.replace('_', ' ')}: {first['message'][:90]}",
                    summary=(
                        f"{len(errs)} {cls} error(s) on {listed(procs)}; first at {first['file']}:{first['line']}: "
                        f"{first['message'][:200]}"
                    ),
                    detector=self.name,
                    evidence=evidence,
                    suggestions=tuple(Suggestion(action=f) for f in fixes[:3]),
                    hosts=hosts,
                    labels={"class": cls},
                )
            )
        return out


def _first_per_process(errs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = set()
    out = []
    for e in errs:
        key = (e["host"], e["pid"], e["message"][:60])
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out
