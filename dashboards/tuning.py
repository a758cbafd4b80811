"""The Steps page's "what to tune": the findings that cost step time, the largest win first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import dcc, html

from analyzer import Finding
from analyzer.render.base import export_lines


def tuning(findings: Sequence[Finding]) -> list[Any]:
    """What to change to win step time: the findings with a cost per step, the largest first, each
    with its estimate, its confidence and the setting to try (a low-confidence one says so)."""
    costly = sorted(
        ((f, f.impact) for f in findings if f.impact is not None and f.impact.seconds_per_step > 0 and f.suggestions),
        key=lambda fi: -fi[1].seconds_per_step,
    )
    if not costly:
        return []
    items = []
    for i, (f, impact) in enumerate(costly):
        low = impact.confidence == "low"
        body: list[Any] = [
            html.Strong(f.title),
            html.P(
                f"wins up to {impact.seconds_per_step * 1e3:,.1f} ms per step "
                f"({impact.fraction_of_step:.0%} of the step), {impact.confidence} confidence"
                + (": too uncertain to advise a setting; its finding on the Overview says what was seen" if low else "")
            ),
        ]
        env = "" if low else "\n".join(export_lines(s.env for s in f.suggestions))
        if not low:
            body.append(html.P([html.Strong("Try: "), f.suggestions[0].action]))
        if env:
            body.append(
                html.Div(
                    [html.Pre(env, id=f"tune-env-{i}"), dcc.Clipboard(target_id=f"tune-env-{i}", title="copy")],
                    className="env",
                )
            )
        items.append(html.Li(body, **{"data-code": f.code}))
    return [html.H3("What to tune (largest win per step first)"), html.Ol(items, id="tuning")]
