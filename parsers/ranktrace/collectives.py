"""A rank's collectives from the one evidence source its trace has (:mod:`parsers.ranktrace.parser`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from parsers.ranktrace import names
from parsers.ranktrace.tables import Collective
from parsers.ranktrace.types import JsonObject, Seen

StepAt = Callable[[float], int | None]


def collectives_of(seen: Seen, step_at: StepAt) -> tuple[list[Collective], str]:
    """The collectives and their source: NCCL/RCCL kernels, else Gloo's work, else Horovod's
    ``synchronize()``, else the CPU-side NCCL calls (no wait); ``none`` when there are none."""
    if seen.kernels:
        out = [_kernel(k, seen.launches, step_at) for k in seen.kernels]
        source = "nccl_kernel"
    elif seen.gloo:
        out = [_annotation(e, "gloo", step_at) for e in seen.gloo]
        _enqueued(out, seen.enqueues)
        source = "gloo"
    elif (synced := _synchronize(seen.optimizer, step_at)) is not None:
        out, source = synced, "horovod_sync"
    elif seen.nccl_cpu:
        out = [_annotation(e, "enqueue", step_at) for e in seen.nccl_cpu]
        source = "enqueue"
    else:
        return [], "none"
    return _ordered(out), source


def _kernel(k: JsonObject, launches: dict[int, float], step_at: StepAt) -> Collective:
    args = event_args(k)
    ts, dur = float(k["ts"]), float(k["dur"])
    corr = args.get("correlation")
    launch = launches.get(corr) if isinstance(corr, int) else None
    op = args.get("Collective name")
    dtype = args.get("dtype") if isinstance(args.get("dtype"), str) else None
    nelems = args.get("In msg nelems")
    size = names.dtype_bytes(dtype)
    return Collective(
        step=step_at(launch if launch is not None else ts),
        order=0,
        pg=_text(args.get("Process Group Name")),
        seq=_seq(args),
        op=names.op_name(op) if isinstance(op, str) and op else (names.kernel_op(str(k["name"])) or "unknown"),
        dtype=dtype,
        bytes=nelems * size if isinstance(nelems, int) and size and 0 <= nelems < (1 << 56) else None,
        enqueue_us=None if launch is None else round(launch),
        start_us=round(ts),
        dur_us=round(dur),
        source="nccl_kernel",
        lane=f"stream {args.get('stream', k.get('tid'))}",
    )


def _annotation(e: JsonObject, source: str, step_at: StepAt) -> Collective:
    args = event_args(e)
    ts, dur = float(e["ts"]), float(e["dur"])
    return Collective(
        step=step_at(ts),
        order=0,
        pg=_text(args.get("Process Group Name")),
        seq=_seq(args),
        op=names.op_name(str(e["name"])),
        dtype=args.get("dtype") if isinstance(args.get("dtype"), str) else None,
        bytes=None,
        enqueue_us=round(ts) if source == "enqueue" else None,
        start_us=round(ts),
        dur_us=round(dur),
        source=source,
        lane=f"thread {e.get('tid')}",
    )


def _enqueued(out: list[Collective], enqueues: list[JsonObject]) -> None:
    """Give each Gloo collective the time its ``c10d::<op>_`` call asked for it: the n-th call of an op
    is its n-th collective (Gloo runs them in the order asked; their ids do not link them), paired only
    when the counts agree."""
    by_op: dict[str, list[float]] = {}
    for e in enqueues:
        by_op.setdefault(names.op_name(str(e["name"])), []).append(float(e["ts"]))
    for op, times in by_op.items():
        mine = sorted((i for i, c in enumerate(out) if c.op == op), key=lambda i: out[i].start_us)
        if len(mine) != len(times):
            continue
        for i, t in zip(mine, sorted(times), strict=True):
            c = out[i]
            if t <= c.start_us + 1:
                out[i] = replace(c, enqueue_us=round(t))


def _synchronize(spans: list[tuple[float, float, int]], step_at: StepAt) -> list[Collective] | None:
    """Horovod's ``synchronize()``: in a step, the outer of two nested ``Optimizer.step#`` spans of a
    thread (``hvd.DistributedOptimizer.step`` waits for the allreduces, then calls the wrapped
    optimizer's ``step``); None unless most steps show the nesting."""
    ordered = sorted(spans, key=lambda s: (s[2], s[0], -s[1]))
    out: list[Collective] = []
    for (t0, d0, tid0), (t1, d1, tid1) in zip(ordered, ordered[1:], strict=False):
        if tid0 == tid1 and t0 <= t1 and t1 + d1 <= t0 + d0 + 1e-3 and d0 > d1:
            wait = round(d0 - d1)
            out.append(_sync(step_at(t0), round(t0), wait, tid0))
    steps = {step_at(t) for t, _, _ in spans} - {None}
    return out if out and len(out) * 2 >= max(len(steps), 1) else None


def _sync(step: int | None, start: int, wait: int, tid: int) -> Collective:
    return Collective(
        step, 0, None, None, "synchronize", None, None, None, start, wait, "horovod_sync", f"thread {tid}"
    )


def _ordered(out: list[Collective]) -> list[Collective]:
    """Each collective's place among the rank's collectives of its step and group, by start."""
    out.sort(key=lambda c: (c.start_us, c.lane))
    seen: dict[tuple[int | None, str | None], int] = {}
    placed = []
    for c in out:
        key = (c.step, c.pg)
        placed.append(replace(c, order=seen.get(key, 0)))
        seen[key] = seen.get(key, 0) + 1
    return placed


def _text(v: object) -> str | None:
    return str(v) if isinstance(v, str | int) and not isinstance(v, bool) and str(v) else None


def _seq(args: JsonObject) -> int | None:
    return whole(args.get("Seq", args.get("seq")))


def whole(v: object) -> int | None:
    """A rank, world size, pid, clock base, sequence number or correlation id: a non-negative integer
    within an int64 column, else unknown (a longer one is damage, not a value)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < (1 << 62) else None


def event_args(e: JsonObject) -> JsonObject:
    """An event's ``args`` (empty when it has none, or something else under the key)."""
    args = e.get("args")
    return args if isinstance(args, dict) else {}
