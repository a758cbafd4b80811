"""A :class:`~analyzer.compare.build.Side` from a run store: its report and the steady step times of
each timeline (the one place the comparison reads a store)."""

from __future__ import annotations

from collections.abc import Mapping

from analyzer.compare.build import Side, traces_key
from analyzer.context import Context
from analyzer.report.assembly import analyze_in
from analyzer.timeline.steps import steady_durations


def job_fingerprints(ctx: Context) -> dict[str, str]:
    """What makes two timelines the same job, by input id: a digest of the gradient tensors' names
    (the model), the ranks seen and the bytes reduced per steady step (its size). ``batch`` draws a
    trend only across runs whose jobs share it (:func:`analyzer.compare.trend.job_trends`)."""
    import hashlib

    out: dict[str, str] = {}
    for m in ctx.timelines():
        tensors = ctx.store.input_table("tensors", m.input_id, columns=["pid", "tensor"]).to_pydict()
        grads = set(m.gradient_pids.tolist())
        names = sorted(str(n) for p, n in zip(tensors["pid"], tensors["tensor"], strict=True) if p in grads)
        ranks = int(m.lateness.rank.max(initial=-1)) + 1  # fully ticked negotiations name ranks 0..n-1
        per_step = m.steady["bytes"].median() if not m.steady.empty and m.steady["bytes"].notna().any() else None
        key = "\n".join([*names, f"ranks={ranks}", f"bytes={None if per_step is None else int(per_step)}"])
        out[m.input_id] = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    return out


def step_samples(ctx: Context) -> dict[str, list[float]]:
    """The steady step times (seconds) of every timeline of ``ctx``'s store, by input id, and of every job's
    per-rank traces, by ``traces:<job id>`` (per profiled step, its slowest rank's: everyone waits for it)."""
    out = {m.input_id: (steady_durations(m.all_steps) / 1e6).tolist() for m in ctx.timelines()}
    for job in ctx.jobs().jobs:
        traces = ctx.rank_traces(job)
        if traces is not None and traces.step_us.size:
            out[traces_key(job.id)] = [float(v) / 1e6 for v in traces.slowest_step_us() if v == v]
    return out


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
    return Side(label, source, analyze_in(ctx), step_samples(ctx), job, dict(declared or {}), step_parts(ctx))
