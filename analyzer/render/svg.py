"""Charts as inline SVG for the HTML report: no script, no external resource, a few KB each.

The report is what gets attached to a ticket: it must open offline, print, and stay small (plotly's
bundle alone is 4.6 MB). The app keeps plotly (:mod:`analyzer.render.figures`) for interaction; here
every bar and point carries its numbers as an SVG ``<title>`` (the browser shows it on hover). Pure
functions of numbers the analyzer computed; every label is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

WIDTH, HEIGHT = 900, 280
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 36, 44
BLUE, PALE, RED, GREY = "#3b6ea5", "#9db7d5", "#c0392b", "#667"


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def nice_ticks(hi: float, n: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``hi`` (about ``n`` of them)."""
    if hi <= 0 or not math.isfinite(hi):
        return [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(math.ceil(hi / step - 1e-9) + 1)]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 or v == int(v) else f"{v:,.2g}" if abs(v) < 1 else f"{v:,.1f}"


def _frame(title: str, x_title: str, y_title: str, height: int = HEIGHT) -> list[str]:
    return [
        f"<svg viewBox='0 0 {WIDTH} {height}' class='chart' role='img' "
        f"aria-label='{_e(title)}' font-family='system-ui,sans-serif' font-size='12'>",
        f"<title>{_e(title)}</title>",
        f"<text x='{LEFT}' y='20' font-size='14' font-weight='600'>{_e(title)}</text>",
        f"<text x='{(LEFT + WIDTH - RIGHT) / 2}' y='{height - 6}' text-anchor='middle' fill='{GREY}'>{_e(x_title)}</text>",
        f"<text x='14' y='{(TOP + height - BOTTOM) / 2}' text-anchor='middle' fill='{GREY}' "
        f"transform='rotate(-90 14 {(TOP + height - BOTTOM) / 2})'>{_e(y_title)}</text>",
    ]


def _y_axis(ticks: list[float], y: Callable[[float], float]) -> list[str]:
    out = []
    for t in ticks:
        py = y(t)
        out.append(f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{py:.1f}' y2='{py:.1f}' stroke='#e4e6eb'/>")
        out.append(f"<text x='{LEFT - 6}' y='{py + 4:.1f}' text-anchor='end' fill='{GREY}'>{_fmt(t)}</text>")
    return out


def _x_axis(lo: float, hi: float, x: Callable[[float], float], n: int) -> list[str]:
    """About ``n`` round tick labels under the plot, from ``lo`` to ``hi``."""
    return [
        f"<text x='{x(lo + v):.1f}' y='{HEIGHT - BOTTOM + 16}' text-anchor='middle' fill='{GREY}'>{_fmt(lo + v)}</text>"
        for v in nice_ticks(hi - lo, n)
        if lo + v <= hi
    ]


def _scales(lo: float, hi: float, top: float) -> tuple[Callable[[float], float], Callable[[float], float]]:
    """Pixel x of a value in [lo, hi] and pixel y of a value in [0, top] (clipped), in the plot area."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + (v - lo) / (hi - lo) * plot_w

    def y(v: float) -> float:
        return TOP + plot_h - min(v, top) / top * plot_h

    return x, y


def histogram(
    edges: Sequence[float], counts: Sequence[int], title: str, x_title: str, mark: float | None = None
) -> str:
    """Bars over numeric bins ``edges`` (len(counts) + 1), y from 0; ``mark``: a dashed line (the median)."""
    if not counts:
        return ""
    lo, hi = edges[0], edges[-1] if edges[-1] > edges[0] else edges[0] + 1
    ticks = nice_ticks(max(counts))
    x, y = _scales(lo, hi, ticks[-1])
    out = _frame(title, x_title, "steps") + _y_axis(ticks, y)
    for a, b, c in zip(edges, edges[1:], counts, strict=False):
        out.append(
            f"<rect x='{x(a) + 0.5:.1f}' y='{y(c):.1f}' width='{max(x(b) - x(a) - 1, 1):.1f}' "
            f"height='{y(0) - y(c):.1f}' fill='{BLUE}'><title>{_fmt(a)} - {_fmt(b)}: {c}</title></rect>"
        )
    out += _x_axis(lo, hi, x, 6)
    if mark is not None and lo <= mark <= hi:
        out.append(
            f"<line x1='{x(mark):.1f}' x2='{x(mark):.1f}' y1='{TOP}' y2='{y(0):.1f}' stroke='{RED}' "
            f"stroke-dasharray='5 4'><title>median {_fmt(mark)}</title></line>"
        )
        out.append(_key([f"median {_fmt(mark)}"]))
    return "".join([*out, "</svg>"])


def _key(labels: Sequence[str]) -> str:
    """The dashed marks' labels, right-aligned between the title and the plot: never over the data."""
    return f"<text x='{WIDTH - RIGHT}' y='{TOP - 8}' text-anchor='end' fill='{RED}'>- - {_e(' · '.join(labels))}</text>"


def hbars(labels: Sequence[str], series: Sequence[tuple[str, Sequence[float], str]], title: str, x_title: str) -> str:
    """Horizontal bars, one row per label and one bar per series ``(name, values, colour)``."""
    if not labels:
        return ""
    per = 14 * len(series) + 8
    height = TOP + BOTTOM + per * len(labels)
    left = min(300, 16 + 8 * max(len(str(s)) for s in labels))
    top_v = max((v for _, vs, _ in series for v in vs), default=0.0)
    ticks = nice_ticks(top_v)
    plot_w = WIDTH - left - RIGHT

    def x(v: float) -> float:
        return left + v / ticks[-1] * plot_w

    out = _frame(title, x_title, "", height)
    for t in ticks:
        out.append(f"<line x1='{x(t):.1f}' x2='{x(t):.1f}' y1='{TOP}' y2='{height - BOTTOM}' stroke='#e4e6eb'/>")
        out.append(
            f"<text x='{x(t):.1f}' y='{height - BOTTOM + 16}' text-anchor='middle' fill='{GREY}'>{_fmt(t)}</text>"
        )
    for i, label in enumerate(labels):
        top = TOP + i * per + 4
        out.append(f"<text x='{left - 6}' y='{top + per / 2:.1f}' text-anchor='end'>{_e(label)}</text>")
        for j, (name, values, colour) in enumerate(series):
            v = values[i]
            out.append(
                f"<rect x='{left}' y='{top + 14 * j}' width='{max(x(v) - left, 0.5):.1f}' height='12' "
                f"fill='{colour}'><title>{_e(label)} {_e(name)}: {_fmt(v)}</title></rect>"
            )
    if len(series) > 1:
        for j, (name, _, colour) in enumerate(series):
            out.append(f"<rect x='{WIDTH - 160 + 80 * j}' y='10' width='10' height='10' fill='{colour}'/>")
            out.append(f"<text x='{WIDTH - 146 + 80 * j}' y='19'>{_e(name)}</text>")
    return "".join([*out, "</svg>"])


def line(
    xs: Sequence[float],
    ys: Sequence[float],
    title: str,
    x_title: str,
    y_title: str,
    marks: Sequence[tuple[float, str]] = (),
    spans: Sequence[tuple[float, float, str]] = (),
) -> str:
    """A series (``xs`` ascending) from y = 0, with horizontal ``marks`` (value, label) and shaded
    x ``spans`` (first, last, label)."""
    if not xs:
        return ""
    lo, hi = xs[0], xs[-1] if xs[-1] > xs[0] else xs[0] + 1
    ticks = nice_ticks(max(ys))
    x, y = _scales(lo, hi, ticks[-1])
    plot_h = HEIGHT - TOP - BOTTOM
    out = _frame(title, x_title, y_title) + _y_axis(ticks, y)
    for a, b, label in spans:
        out.append(
            f"<rect x='{x(a):.1f}' y='{TOP}' width='{max(x(b) - x(a), 2):.1f}' height='{plot_h}' fill='#fdebd0'>"
            f"<title>{_e(label)}</title></rect>"
        )
    points = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in zip(xs, ys, strict=True))
    out.append(f"<polyline points='{points}' fill='none' stroke='{BLUE}' stroke-width='1.5'/>")
    if len(xs) <= 400:  # a hover title per point while that stays small
        out += [
            f"<circle cx='{x(a):.1f}' cy='{y(b):.1f}' r='2.5' fill='{BLUE}'><title>{_fmt(a)}: {_fmt(b)}</title></circle>"
            for a, b in zip(xs, ys, strict=True)
        ]
    for v, label in marks:  # the lines carry their label as a hover title; the key above the plot names them
        out.append(
            f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y(v):.1f}' y2='{y(v):.1f}' stroke='{RED}' "
            f"stroke-dasharray='5 4'><title>{_e(label)}</title></line>"
        )
    if marks:
        out.append(_key([label for _, label in marks]))
    out += _x_axis(lo, hi, x, 8)
    return "".join([*out, "</svg>"])


def overlay(
    edges: Sequence[float], series: Sequence[tuple[str, Sequence[float], str]], title: str, x_title: str
) -> str:
    """Distributions over the same bins ``edges`` drawn over each other: one translucent bar set per
    series ``(name, shares, colour)``, shares in percent on y."""
    if len(edges) < 2 or not series:
        return ""
    lo, hi = edges[0], edges[-1] if edges[-1] > edges[0] else edges[0] + 1
    top = max((v for _, vs, _ in series for v in vs), default=0.0) * 100
    ticks = nice_ticks(top)
    x, y = _scales(lo, hi, ticks[-1])
    out = _frame(title, x_title, "% of steps") + _y_axis(ticks, y)
    for name, shares, colour in series:
        for a, b, v in zip(edges, edges[1:], shares, strict=False):
            if v > 0:
                out.append(
                    f"<rect class='bar' x='{x(a) + 0.5:.1f}' y='{y(v * 100):.1f}' width='{max(x(b) - x(a) - 1, 1):.1f}' "
                    f"height='{y(0) - y(v * 100):.1f}' fill='{colour}' fill-opacity='0.55'>"
                    f"<title>{_e(name)} {_fmt(a)} - {_fmt(b)}: {v:.0%}</title></rect>"
                )
    out += _x_axis(lo, hi, x, 6)
    for j, (name, _, colour) in enumerate(series):
        out.append(f"<rect x='{WIDTH - 200 + 100 * j}' y='10' width='10' height='10' fill='{colour}'/>")
        out.append(f"<text x='{WIDTH - 186 + 100 * j}' y='19'>{_e(name)}</text>")
    return "".join([*out, "</svg>"])
