"""The HTML report's charts of one timeline, as inline SVG (:mod:`analyzer.render.svg`): step time
over the run, the step-time histogram, where a step goes, and per-rank lateness."""

from __future__ import annotations

from analyzer.render import svg
from analyzer.report.rank_types import RankTracesDoc
from analyzer.report.types import TimelineSection

_SCOPE = {
    "steady": "steady-state negotiations",
    "first_negotiations": "first negotiations only (warm-up)",
    "none": "no rank ticks in this file",
}


def charts(section: TimelineSection) -> list[str]:
    """Every chart the section has data for, in reading order."""
    steps, series = section["steps"], section["series"]
    out = []
    if series["step"]:
        marks = [
            (v * 1e3, f"{name} {v * 1e3:,.1f} ms")
            for name, v in (("median", steps["median_s"]), ("p90", steps["p90_s"]))
            if v
        ]
        spans = [
            (s["first"], s["last"], f"slower: steps {s['first']}-{s['last']}, median {s['ms']:,.1f} ms")
            for s in series["slow"]
        ]
        title = "Step time over the run" + (f" ({series['note']})" if series["note"] else "")
        out.append(svg.line(series["step"], series["ms"], title, "step", "ms", marks, spans))
    hist = steps["histogram"]
    if hist["counts"]:
        out.append(
            svg.histogram(
                [e * 1e3 for e in hist["edges_s"]],
                hist["counts"],
                f"Step time ({steps['steady']} steady steps of {steps['count']})",
                "step time (ms)",
                None if steps["median_s"] is None else steps["median_s"] * 1e3,
            )
        )
    if section["phases"]:
        phases = section["phases"]
        out.append(
            svg.hbars(
                [f"{p['phase']} ({p['share_of_step']:.0%})" for p in phases],
                [("median ms per step", [p["median_ms"] for p in phases], svg.BLUE)],
                "Where a step goes (median per step; phases overlap)",
                "ms per step",
            )
        )
    ranks = section["ranks"]["ranks"]
    if ranks:
        out.append(
            svg.hbars(
                [f"rank {r['rank']}" + (f" ({r['host']})" if r.get("host") else "") for r in ranks],
                [
                    ("median", [r["median_lateness_ms"] for r in ranks], svg.BLUE),
                    ("p90", [r["p90_lateness_ms"] for r in ranks], svg.PALE),
                ],
                f"Rank lateness behind the first-ready rank ({_SCOPE[section['ranks']['scope']]})",
                "ms",
            )
        )
    return out


def trace_charts(section: RankTracesDoc) -> list[str]:
    """The per-rank traces' chart: each rank's median step and how late it joined the collectives."""
    ranks = section["ranks"]
    if not ranks:
        return []
    return [
        svg.hbars(
            [
                f"rank {r['rank']}" + (f" ({r['host']})" if r["host"] else "") + (" STRAGGLER" if r["named"] else "")
                for r in ranks
            ],
            [
                ("median step", [r["median_step_ms"] for r in ranks], svg.PALE),
                ("late by (median)", [r["lateness_ms"] or 0.0 for r in ranks], svg.BLUE),
            ],
            "Each rank's step and lateness (traces)",
            "ms",
        )
    ]
