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


#: the parts of a step that add up to it (mean ms per steady step), what the step split shows
PARTS = ("wait for the last rank", "exposed communication", "the rest: compute, input, outside Horovod")


def step_parts(ctx: Context) -> dict[str, dict[str, float]]:
    """Per timeline (by input id), the mean steady step split into the wait for the last rank at the
    end of backward, the communication after it that nothing overlaps, and the rest (ms)."""
    out: dict[str, dict[str, float]] = {}
    for m in ctx.timelines():
        t = m.all_steps
        steady = t[t["steady"]]
        if steady.empty:
            continue
        mean = float(steady["duration_us"].mean()) / 1e3
        wait = float(steady["wait_us"].mean()) / 1e3
        exposed = float(steady["exposed_comm_us"].mean()) / 1e3
        out[m.input_id] = {
            PARTS[0]: round(wait, 4),
            PARTS[1]: round(exposed, 4),
            PARTS[2]: round(mean - wait - exposed, 4),
        }
    return out


def side_of(
    ctx: Context, label: str, source: str, job: str | None = None, declared: Mapping[str, str] | None = None
) -> Side:
    """``ctx``'s run analysed, as one side of a comparison."""
    doc = to_document(analyze_in(ctx))
    return Side(label, source, doc, step_samples(ctx), job, dict(declared or {}), step_parts(ctx))
