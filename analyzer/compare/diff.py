"""Where a change comes from: phase by phase, fusion, cycle, per-rank lateness, NCCL per host, and
the findings resolved, new or persisting. Pure functions of two (one-job) report documents."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from analyzer.compare.types import (
    ErrorChangeDoc,
    FindingChangeDoc,
    HostChangeDoc,
    LatenessDoc,
    NcclChangeDoc,
    RankChangeDoc,
    ValueChangeDoc,
)
from analyzer.findings import Finding
from analyzer.report.model import AnalysisReport
from analyzer.report.types import NcclSection

#: findings that say a rank is late on the steps (start-up skew is once per run: not lateness)
LATE_CODES = frozenset({"timeline.straggler"})


def value_change(name: str, before: float | None, after: float | None) -> ValueChangeDoc:
    delta = round(after - before, 4) if before is not None and after is not None else None
    return {"name": name, "before": before, "after": after, "delta": delta}


def phase_changes(before: AnalysisReport, after: AnalysisReport) -> list[ValueChangeDoc]:
    """Mean ms per step of every phase either side has (means add up to the step; medians do not),
    the largest change first."""
    b = {p["phase"]: p["mean_ms"] for t in before.timelines[:1] for p in t["phases"]}
    a = {p["phase"]: p["mean_ms"] for t in after.timelines[:1] for p in t["phases"]}
    rows = [value_change(n, b.get(n, 0.0), a.get(n, 0.0)) for n in b | a]  # a phase one side lacks took 0 there
    return sorted(rows, key=lambda r: -abs(r["delta"] or 0.0))


def _fusion(doc: AnalysisReport) -> tuple[float | None, float | None, float | None]:
    f = doc.main_timeline["fusion"] if doc.main_timeline else None
    return (f["batches_per_step"], f["tensors_per_step"], f["singleton_share"]) if f else (None, None, None)


def fusion_changes(before: AnalysisReport, after: AnalysisReport) -> list[ValueChangeDoc]:
    names = ("fused batches per step", "tensors per step", "share of batches with one tensor")
    return [value_change(n, b, a) for n, b, a in zip(names, _fusion(before), _fusion(after), strict=True)]


def cycle_changes(before: AnalysisReport, after: AnalysisReport) -> list[ValueChangeDoc]:
    """The cycle time where markers measure it (an estimate from the file's rhythm is not a value)."""
    cb, ca = (t["cycle"] if (t := d.main_timeline) else None for d in (before, after))
    b = cb["cycle_ms"] if cb and cb["confidence"] == "high" else None
    a = ca["cycle_ms"] if ca and ca["confidence"] == "high" else None
    return [value_change("cycle time (ms, CYCLE_START markers)", b, a)] if b is not None or a is not None else []


def _late(findings: Iterable[Finding]) -> set[int]:
    return {r for f in findings if f.code in LATE_CODES for r in f.ranks}


def lateness_changes(before: AnalysisReport, after: AnalysisReport) -> LatenessDoc:
    rb = {r["rank"]: r for t in before.timelines[:1] for r in t["ranks"]["ranks"]}
    ra = {r["rank"]: r for t in after.timelines[:1] for r in t["ranks"]["ranks"]}
    late_b, late_a = _late(before.findings), _late(after.findings)
    rows: list[RankChangeDoc] = []
    for rank in sorted(set(rb) | set(ra) | late_b | late_a):
        b, a = rb.get(rank), ra.get(rank)
        rows.append(
            {
                "rank": rank,
                "host_before": b["host"] if b else None,
                "host_after": a["host"] if a else None,
                "before_ms": b["median_lateness_ms"] if b else None,
                "after_ms": a["median_lateness_ms"] if a else None,
                "late_before": rank in late_b,
                "late_after": rank in late_a,
            }
        )
    return {
        "ranks": rows,
        "stopped_being_late": sorted(late_b - late_a),
        "started_being_late": sorted(late_a - late_b),
    }


HostField = Literal["version", "network", "transports", "gdrdma", "present"]


def _per_host(section: NcclSection | None) -> dict[str, dict[HostField, list[str]]]:
    out: dict[str, dict[HostField, set[str]]] = {}
    for p in section["processes"] if section else []:
        host = p["host"] or f"(no host) {p['file']}"
        h = out.setdefault(host, {"version": set(), "network": set(), "transports": set(), "gdrdma": set()})
        if p["version"]:
            h["version"].add(p["version"])
        if p["network"]:
            h["network"].add(p["network"])
        h["transports"].update(p["transports"])
        if p["gdrdma"] is not None:
            h["gdrdma"].add("on" if p["gdrdma"] else "off")
    return {host: {k: sorted(v) for k, v in fields.items()} for host, fields in out.items()}


def nccl_changes(before: AnalysisReport, after: AnalysisReport) -> NcclChangeDoc:
    """Per host: what changed in NCCL's version, network, transports and GPUDirect RDMA; hosts that
    came or went; errors (by class and host) that are new or gone."""
    hb, ha = _per_host(before.nccl), _per_host(after.nccl)
    changes: list[HostChangeDoc] = []
    for host in sorted(set(hb) | set(ha)):
        if host not in hb or host not in ha:
            changes.append(
                {
                    "host": host,
                    "field": "present",
                    "before": ["yes" if host in hb else "no"],
                    "after": ["yes" if host in ha else "no"],
                }
            )
            continue
        fields: tuple[HostField, ...] = ("version", "network", "transports", "gdrdma")
        for field in fields:
            if hb[host][field] != ha[host][field] and hb[host][field] and ha[host][field]:
                changes.append({"host": host, "field": field, "before": hb[host][field], "after": ha[host][field]})
    eb, ea = _errors(before.nccl), _errors(after.nccl)
    errors: list[ErrorChangeDoc] = [
        {"error_class": k[0], "host": k[1], "change": "new", "message": ea[k]}
        for k in sorted(set(ea) - set(eb), key=str)
    ]
    errors += [
        {"error_class": k[0], "host": k[1], "change": "gone", "message": eb[k]}
        for k in sorted(set(eb) - set(ea), key=str)
    ]
    return {"hosts_before": sorted(hb), "hosts_after": sorted(ha), "changes": changes, "errors": errors}


def _errors(section: NcclSection | None) -> dict[tuple[str, str | None], str]:
    out: dict[tuple[str, str | None], str] = {}
    for e in section["errors"] if section else []:
        if e["role"] == "root":
            out.setdefault((e["class"], e["host"]), e["message"])
    return out


def finding_key(f: Finding) -> str:
    """What matches a finding across runs: its code, and its class or verdict where it has one."""
    extra = f.labels.get("class") or f.labels.get("verdict")
    return f"{f.code}[{extra}]" if extra else f.code


def _impact_ms(f: Finding | None) -> float | None:
    return round(f.impact.seconds_per_step * 1e3, 3) if f and f.impact else None


def finding_changes(before: AnalysisReport, after: AnalysisReport) -> list[FindingChangeDoc]:
    """Findings resolved (BEFORE only), new (AFTER only) and persisting (both), by :func:`finding_key`;
    a key found several times on a side is matched by its most severe finding."""
    fb: dict[str, Finding] = {}
    fa: dict[str, Finding] = {}
    for side, found in ((fb, before.findings), (fa, after.findings)):
        for f in found:  # the report lists the most severe and costly first
            side.setdefault(finding_key(f), f)
    rows: list[FindingChangeDoc] = []
    for key in [*fb, *(k for k in fa if k not in fb)]:
        b, a = fb.get(key), fa.get(key)
        either = b or a
        assert either is not None
        rows.append(
            {
                "code": either.code,
                "key": key,
                "change": "persisting" if b and a else "resolved" if b else "new",
                "severity_before": b.severity.label if b else None,
                "severity_after": a.severity.label if a else None,
                "title": either.title,
                "impact_before_ms": _impact_ms(b),
                "impact_after_ms": _impact_ms(a),
            }
        )
    order = {"new": 0, "resolved": 1, "persisting": 2}
    return sorted(rows, key=lambda r: order[r["change"]])
