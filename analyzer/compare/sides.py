"""A :class:`~analyzer.compare.build.Side` from a run store: its report and the steady step times of
each timeline (the one place the comparison reads a store)."""

from __future__ import annotations

from collections.abc import Mapping

from analyzer.compare.build import Side
from analyzer.context import Context
from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze_in
from analyzer.timeline.steps import steady_durations


def step_samples(ctx: Context) -> dict[str, list[float]]:
    """The steady step times (seconds) of every timeline of ``ctx``'s store, by input id."""
    return {m.input_id: (steady_durations(m.all_steps) / 1e6).tolist() for m in ctx.timelines()}


def side_of(
    ctx: Context, label: str, source: str, job: str | None = None, declared: Mapping[str, str] | None = None
) -> Side:
    """``ctx``'s run analysed, as one side of a comparison."""
    doc = to_document(analyze_in(ctx))
    return Side(label, source, doc, step_samples(ctx), job, dict(declared or {}))
