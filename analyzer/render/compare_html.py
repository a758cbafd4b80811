"""The compare document as one self-contained HTML page: the verdict, the two step-time
distributions overlaid (inline SVG), and the sections of :func:`analyzer.render.compare.compare_sections`.
Every user string is escaped."""

from __future__ import annotations

from html import escape

from analyzer.compare.types import CompareDocument
from analyzer.render.compare import compare_sections, side_line
from analyzer.render.html import CSS
from analyzer.render.svg import BLUE, RED, overlay


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def render_html(doc: CompareDocument) -> str:
    s = doc["steps"]
    status = "degraded" if s["direction"] == "slower" else "healthy" if s["direction"] == "faster" else ""
    ov = s["overlay"]
    chart = overlay(
        ov["edges_ms"],
        [("before", ov["before_share"], BLUE), ("after", ov["after_share"], RED)],
        "Step time: before and after",
        "step time (ms)",
    )
    out = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<title>hvd-analyze compare</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>hvd-analyze compare</h1>",
        f"<ul><li>{_e(side_line(doc['before']))}</li><li>{_e(side_line(doc['after']))}</li></ul>",
        f"<section class='verdict {status}' id='verdict'><h2>{_e(doc['headline'])}</h2></section>",
        f"<figure id='overlay'>{chart}</figure>" if chart else "",
    ]
    for sec in compare_sections(doc):
        out.append(f"<h2 id='{sec.slug}'>{_e(sec.title)}</h2>")
        if sec.rows:
            out.append(
                "<table><tr>"
                + "".join(f"<th>{_e(h)}</th>" for h in sec.header)
                + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in sec.rows)
                + "</table>"
            )
        else:
            out.append("<p class='muted'>(nothing)</p>")
        out += [f"<p class='muted'>{_e(n)}</p>" for n in sec.notes]
    out.append(f"<p class='muted'>hvd-analyze {_e(doc['tool_version'])}</p></body></html>")
    return "\n".join(out) + "\n"
