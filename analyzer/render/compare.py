"""The compare document as text, Markdown and JSON (``hvd-analyze compare``). Every format draws
the same sections (:func:`compare_sections`); the HTML page adds the overlay chart
(:mod:`analyzer.render.compare_html`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from analyzer.compare.types import CompareDocument, SideDoc, ValueChangeDoc
from analyzer.findings import clip


@dataclass(frozen=True, slots=True)
class Section:
    title: str
    header: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    notes: list[str]

    @property
    def slug(self) -> str:
        """The section's id: its title up to a parenthesis, in lower case words joined by ``-``."""
        return "-".join(re.findall(r"[a-z0-9]+", self.title.split("(")[0].lower()))


def _n(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}g}"


def _signed(v: float | None) -> str:
    return "-" if v is None else f"{v:+.3g}"


def side_line(side: SideDoc) -> str:
    job = f", job {side['job']}" if side["job"] else ""
    timeline = f", timeline {side['timeline']}" if side["timeline"] else ", no timeline"
    return f"{side['label']}: {side['source']}{job}{timeline} ({side['verdict']}, {side['steps']} steady steps)"


def _values(rows: Sequence[ValueChangeDoc]) -> list[tuple[str, ...]]:
    return [(r["name"], _n(r["before"]), _n(r["after"]), _signed(r["delta"])) for r in rows]


def compare_sections(doc: CompareDocument) -> list[Section]:
    s = doc["steps"]
    step_rows = [
        (
            name,
            _n(q["before_ms"]),
            _n(q["after_ms"]),
            f"{_signed(q['delta_ms'])} ({q['ratio'] - 1:+.0%})",
            f"{_signed(q['ci_low_ms'])} to {_signed(q['ci_high_ms'])}",
        )
        for name, q in (("median", s["median"]), ("p90", s["p90"]))
        if q is not None
    ]
    tests = (
        [f"Mann-Whitney p = {s['mann_whitney_p']:.3g}; Cliff's delta {s['cliffs_delta']:+.2f}"]
        if s["mann_whitney_p"] is not None and s["cliffs_delta"] is not None
        else []
    )
    verdict = f"{'significant' if s['significant'] else 'not significant'}: {s['note']}"
    out = [
        Section(
            "Step time (ms)",
            ("", "before", "after", "change", "95% interval"),
            step_rows,
            [verdict, *tests, f"rule: {s['rule']}"],
        ),
        Section(
            "Where the change comes from: the step (mean ms)",
            ("part", "before", "after", "change"),
            _values(doc["step_split"]),
            [],
        ),
        Section(
            "Where the change comes from: phases (mean ms per step)",
            ("phase", "before", "after", "change"),
            _values(doc["phases"]),
            [],
        ),
        Section("Fusion and cycle", ("", "before", "after", "change"), _values(doc["fusion"] + doc["cycle"]), []),
    ]
    late = doc["lateness"]
    notes = []
    if late["stopped_being_late"]:
        notes.append("stopped being late: rank " + ", ".join(map(str, late["stopped_being_late"])))
    if late["started_being_late"]:
        notes.append("started being late: rank " + ", ".join(map(str, late["started_being_late"])))
    out.append(
        Section(
            "Per-rank lateness (median ms behind the first ready rank)",
            ("rank", "host", "before", "after", "late"),
            [
                (
                    str(r["rank"]),
                    r["host_after"] or r["host_before"] or "-",
                    _n(r["before_ms"]),
                    _n(r["after_ms"]),
                    f"{'yes' if r['late_before'] else 'no'} -> {'yes' if r['late_after'] else 'no'}",
                )
                for r in late["ranks"]
            ],
            notes,
        )
    )
    nccl = doc["nccl"]
    out.append(
        Section(
            "NCCL per host",
            ("host", "what", "before", "after"),
            [
                (c["host"], c["field"], ", ".join(c["before"]) or "-", ", ".join(c["after"]) or "-")
                for c in nccl["changes"]
            ]
            + [
                (e["host"] or "-", f"error {e['error_class']} ({e['change']})", "", clip(e["message"], 120))
                for e in nccl["errors"]
            ],
            [] if nccl["hosts_before"] or nccl["hosts_after"] else ["no NCCL log on either side"],
        )
    )
    out.append(
        Section(
            "Settings the runs show",
            ("setting", "before", "after", "changed"),
            [
                (
                    c["name"],
                    f"{c['before']['text']} [{c['before']['source']}]" if c["before"] else "-",
                    f"{c['after']['text']} [{c['after']['source']}]" if c["after"] else "-",
                    c["changed"],
                )
                for c in doc["settings"]
            ],
            [],
        )
    )
    out.append(
        Section(
            "Findings",
            ("change", "finding", "severity", "ms per step"),
            [
                (
                    f["change"],
                    f["key"],
                    f"{f['severity_before'] or '-'} -> {f['severity_after'] or '-'}",
                    f"{_n(f['impact_before_ms'])} -> {_n(f['impact_after_ms'])}",
                )
                for f in doc["findings"]
            ],
            [],
        )
    )
    out.append(
        Section(
            "Fix check",
            ("finding", "why", "settings", "predicted ms/step", "observed ms/step", "verdict", "note"),
            [
                (
                    c["code"],
                    c["trigger"],
                    " ".join(f"{k}={v} ({c['setting_status'][k]})" for k, v in c["settings"].items()) or "-",
                    f"{_n(c['predicted_ms'])} ({c['predicted_confidence']})" if c["predicted_ms"] is not None else "-",
                    _n(c["observed_ms"]),
                    c["verdict"],
                    c["note"],
                )
                for c in doc["fix_check"]
            ],
            [] if doc["fix_check"] else ["no finding of BEFORE had a fix to check"],
        )
    )
    return out


def _table_text(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [min(60, max(len(h), *(len(r[i]) for r in rows))) for i, h in enumerate(header)]

    def fmt(r: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()

    return ["  " + fmt(header), *("  " + fmt(r) for r in rows)]


def render_text(doc: CompareDocument) -> str:
    out = [
        f"hvd-analyze {doc['tool_version']} compare",
        "",
        side_line(doc["before"]),
        side_line(doc["after"]),
        "",
        doc["headline"],
    ]
    for sec in compare_sections(doc):
        out += ["", sec.title + ":"]
        out += _table_text(sec.header, sec.rows) if sec.rows else ["  (nothing)"]
        out += [f"  {n}" for n in sec.notes]
    return "\n".join(out) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(doc: CompareDocument) -> str:
    out = [
        "# hvd-analyze compare",
        "",
        f"- {side_line(doc['before'])}",
        f"- {side_line(doc['after'])}",
        "",
        f"**{doc['headline']}**",
    ]
    for sec in compare_sections(doc):
        out += ["", f"## {sec.title}", ""]
        if sec.rows:
            out.append("| " + " | ".join(sec.header) + " |")
            out.append("|" + "---|" * len(sec.header))
            out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in sec.rows]
        else:
            out.append("(nothing)")
        if sec.notes:
            out += ["", *[f"- {_md_cell(n)}" for n in sec.notes]]
    return "\n".join(out) + "\n"


def render_json(doc: CompareDocument) -> str:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
