"""Synthetic Horovod timelines with ground truth, for what CPU capture runs cannot produce.

The writer copies Horovod's own byte format (``horovod/common/timeline.cc``): key order
``ph, name, ts, pid``, ``", "`` separators, anonymous ``E``, ``X`` rank ticks with
``"dur": 0``, ``CYCLE_START`` instants without pid, metadata written lazily before a
tensor's first event. Layouts:

* ``glued`` (>=0.20.1): ``[\\n`` + pid-0 header lines, events joined by ``,``, metadata
  lines ending ``},\\n``, the file closed by ``]``;
* ``line_per_event`` (<=0.20.0): ``[\\n`` then one ``{...},\\n`` per record, never closed,
  ``ts`` counting from host uptime (the 0.16-0.20.0 bug).

Everything is deterministic for a given :class:`TimelineSpec` (``random.Random(seed)``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

GPU_ALLREDUCE = ("WAIT_FOR_DATA", "WAIT_FOR_OTHER_TENSOR_DATA", "QUEUE")
HIERARCHICAL = (
    "NCCL_REDUCESCATTER",
    "NCCL_REDUCE",
    "MEMCPY_IN_HOST_BUFFER",
    "MPI_ALLREDUCE",
    "MEMCPY_OUT_HOST_BUFFER",
    "NCCL_ALLGATHER",
    "NCCL_BCAST",
)


@dataclass(frozen=True)
class TimelineSpec:
    """What to generate. Times in microseconds unless the name says otherwise."""

    ranks: int = 8
    tensors: int = 16
    steps: int = 20
    tensor_bytes: tuple[int, ...] = ()  # per tensor; default: a realistic spread
    layout: str = "glued"  # glued | line_per_event
    cache: bool = True  # response cache on: ticks only on each tensor's first negotiation
    compute_us: int = 50_000  # forward + backward per step
    straggler_ranks: tuple[int, ...] = ()
    straggler_delay_us: int = 0
    jitter_us: int = 300  # per-rank readiness noise
    queue_us: int = 200  # QUEUE per op (GPU stream backlog)
    bandwidth_bytes_per_us: float = 10_000.0  # NCCL_ALLREDUCE speed (10 GB/s)
    fusion_threshold: int = 128 * 1024 * 1024
    cycle_time_us: int = 1_000
    mark_cycles: bool = False
    hierarchical: bool = False
    init_nccl_us: int = 450_000
    waves: int = 4  # gradient arrival groups per step (tensors of one wave are ready together)
    op_overhead_us: int = 20  # fixed cost of one collective
    startup_skew_us: int = 0  # >0: broadcast_parameters first, the last rank this late
    seed: int = 42
    uptime_origin_us: int = 1_410_488_741_507  # line_per_event ts origin (host uptime)
    truncate_at: float | None = None  # keep this fraction of the bytes (cut mid-record)
    # a change part-way through the run (timeline.slowdown), in steps [slow_from_step, slow_until_step)
    slow_from_step: int | None = None
    slow_until_step: int | None = None  # None: to the end
    slow_ranks: tuple[int, ...] = ()  # these ranks' gradients are ready slow_delay_us later
    slow_delay_us: int = 0
    slow_bandwidth_bytes_per_us: float | None = None  # NCCL_ALLREDUCE speed in those steps

    def slow(self, step: int) -> bool:
        """Whether ``step`` is in the slow stretch."""
        return self.slow_from_step is not None and self.slow_from_step <= step < (
            self.slow_until_step if self.slow_until_step is not None else step + 1
        )

    def sizes(self) -> list[int]:
        if self.tensor_bytes:
            return list(self.tensor_bytes) + [self.tensor_bytes[-1]] * (self.tensors - len(self.tensor_bytes))
        rnd = random.Random(self.seed)
        return [4 * rnd.choice((64, 512, 1024, 4096, 65536, 262144, 1048576)) for _ in range(self.tensors)]


@dataclass
class GroundTruth:
    spec: dict[str, object]
    steps: list[dict[str, int]] = field(default_factory=list)
    records: int = 0
    spans: int = 0
    ticks: int = 0
    markers: int = 0
    batches_per_step: int = 0
    bytes_written: int = 0
    truncated: bool = False


def _shape(nbytes: int) -> tuple[str, int]:
    numel = max(1, nbytes // 4)
    if numel >= 4096 and numel % 1024 == 0:
        return f"[{numel // 1024}, 1024]", numel
    return f"[{numel}]", numel


def _waves(n_tensors: int, waves: int) -> list[list[int]]:
    """Tensors in backward order (last layer first), split into ``waves`` arrival groups."""
    order = list(range(n_tensors))[::-1]
    waves = max(1, min(waves, n_tensors))
    size = -(-n_tensors // waves)
    return [order[i : i + size] for i in range(0, n_tensors, size)]


def _fuse(wave: list[int], sizes: list[int], threshold: int) -> list[list[int]]:
    """Greedy fusion of one wave's tensors up to the threshold (Horovod's FuseResponses)."""
    out: list[list[int]] = []
    cur: list[int] = []
    cur_bytes = 0
    for t in wave:
        if cur and (threshold <= 0 or cur_bytes + sizes[t] > threshold):
            out.append(cur)
            cur, cur_bytes = [], 0
        cur.append(t)
        cur_bytes += sizes[t]
    if cur:
        out.append(cur)
    return out


class _Clock:
    """Horovod's background loop: coordinator events happen at cycle boundaries."""

    def __init__(self, origin: int, cycle: int) -> None:
        self.origin, self.cycle = origin, max(1, cycle)

    def next(self, t: int) -> int:
        """The first cycle boundary at or after ``t``."""
        return self.origin + -(-(t - self.origin) // self.cycle) * self.cycle


def _negotiation(
    events: list[tuple[int, int, str]],
    clock: _Clock,
    pid: int,
    name: str,
    ready: list[int],
    ticked: bool,
    truth: GroundTruth,
) -> int:
    """B at the cycle of the first ready rank, one X per rank at its cycle, E after the last."""
    seen = [clock.next(r) for r in ready]
    first = min(seen)
    events.append((first, pid, f'{{"ph": "B", "name": "{name}", "ts": {first}, "pid": {pid}}}'))
    if ticked:
        for k, r in enumerate(sorted(range(len(ready)), key=lambda r: (seen[r], r))):
            ts = seen[r] + k // 8  # ranks processed in one cycle tick a few us apart, ascending
            events.append((ts, pid, f'{{"ph": "X", "name": "{r}", "ts": {ts}, "pid": {pid}, "dur": 0}}'))
            truth.ticks += 1
    end = max(seen) + 2 + len(ready) // 8
    events.append((end, pid, f'{{"ph": "E", "ts": {end}, "pid": {pid}}}'))
    truth.spans += 1
    return end


def _op(
    events: list[tuple[int, int, str]],
    spec: TimelineSpec,
    rnd: random.Random,
    batch: list[int],
    sizes: list[int],
    start: int,
    first_op: bool,
    truth: GroundTruth,
    bandwidth: float,
) -> int:
    """One fused batch: every tensor gets its own copy of the op and activity records."""
    nbytes = sum(sizes[x] for x in batch)
    acts: list[tuple[str, int]] = [(a, 5 + rnd.randint(0, 20)) for a in GPU_ALLREDUCE[:2]]
    if first_op:
        acts.append(("INIT_NCCL", spec.init_nccl_us))
    acts.append(("QUEUE", spec.queue_us + rnd.randint(0, spec.queue_us // 4 + 1)))
    if len(batch) > 1:
        acts.append(("MEMCPY_IN_FUSION_BUFFER", 10 + nbytes // 50_000))
    wire = int(nbytes / bandwidth) + spec.op_overhead_us
    if spec.hierarchical:
        acts += [(a, max(5, wire // len(HIERARCHICAL))) for a in HIERARCHICAL]
    else:
        acts.append(("NCCL_ALLREDUCE", wire))
    if len(batch) > 1:
        acts.append(("MEMCPY_OUT_FUSION_BUFFER", 10 + nbytes // 50_000))
    for k, tensor in enumerate(batch):
        events.append(
            (start + k, tensor + 1, f'{{"ph": "B", "name": "ALLREDUCE", "ts": {start + k}, "pid": {tensor + 1}}}')
        )
    cur = start + len(batch)
    for name, dur in acts:
        for k, tensor in enumerate(batch):
            events.append(
                (cur + k, tensor + 1, f'{{"ph": "B", "name": "{name}", "ts": {cur + k}, "pid": {tensor + 1}}}')
            )
        cur += dur
        for k, tensor in enumerate(batch):
            events.append((cur + k, tensor + 1, f'{{"ph": "E", "ts": {cur + k}, "pid": {tensor + 1}}}'))
        cur += len(batch) + 1
        truth.spans += len(batch)
    for k, tensor in enumerate(batch):
        shape, _ = _shape(sizes[tensor])
        events.append(
            (
                cur + k,
                tensor + 1,
                f'{{"ph": "E", "ts": {cur + k}, "pid": {tensor + 1}, "args": {{"dtype": "float32", "shape": "{shape}"}}}}',
            )
        )
    truth.spans += len(batch)
    return cur + len(batch)


def _startup(
    spec: TimelineSpec, rnd: random.Random, clock: _Clock, t: int, truth: GroundTruth
) -> tuple[list[tuple[int, int, str]], int]:
    """broadcast_parameters: one NEGOTIATE_BROADCAST + BROADCAST per tensor, the last rank late by startup_skew_us."""
    events: list[tuple[int, int, str]] = []
    n = spec.tensors
    for i in range(n):
        pid = n + 1 + i
        ready = [
            t + rnd.randint(0, spec.jitter_us) + (spec.startup_skew_us if r == spec.ranks - 1 else 0)
            for r in range(spec.ranks)
        ]
        end = _negotiation(events, clock, pid, "NEGOTIATE_BROADCAST", ready, True, truth)
        start = end + 3
        events.append((start, pid, f'{{"ph": "B", "name": "BROADCAST", "ts": {start}, "pid": {pid}}}'))
        events.append((start + 1, pid, f'{{"ph": "B", "name": "NCCL_BCAST", "ts": {start + 1}, "pid": {pid}}}'))
        events.append((start + 40, pid, f'{{"ph": "E", "ts": {start + 40}, "pid": {pid}}}'))
        events.append((start + 42, pid, f'{{"ph": "E", "ts": {start + 42}, "pid": {pid}}}'))
        truth.spans += 2
        t = start + 50
    return events, t


def generate_events(spec: TimelineSpec, truth: GroundTruth) -> Iterator[tuple[int, int, str]]:
    """Yield (ts, pid, record) in file order; pid 0 = no tensor (markers)."""
    rnd = random.Random(spec.seed)
    sizes = spec.sizes()
    waves = _waves(spec.tensors, spec.waves)
    truth.batches_per_step = sum(len(_fuse(w, sizes, spec.fusion_threshold)) for w in waves)
    t = 2_000_000
    clock = _Clock(t, spec.cycle_time_us)
    ticked: set[int] = set()
    first_op = True
    if spec.startup_skew_us:
        events, t = _startup(spec, rnd, clock, t, truth)
        events.sort(key=lambda e: e[0])
        yield from events
    for step in range(spec.steps):
        step_start = t
        events: list[tuple[int, int, str]] = []
        slow = spec.slow(step)
        late = set(spec.slow_ranks) if slow else set()
        bandwidth = (
            (spec.slow_bandwidth_bytes_per_us or spec.bandwidth_bytes_per_us) if slow else spec.bandwidth_bytes_per_us
        )
        # backward: wave w's gradients become ready at the same time on a rank (plus jitter and delay)
        ready0 = step_start + spec.compute_us // 2
        free = step_start  # the GPU stream is free from here
        for w_i, wave in enumerate(waves):
            base = ready0 + w_i * (spec.compute_us // (2 * len(waves)))
            neg_end = base
            for tensor in wave:
                pid = tensor + 1
                ready = [
                    base
                    + rnd.randint(0, spec.jitter_us)
                    + (spec.straggler_delay_us if r in spec.straggler_ranks else 0)
                    + (spec.slow_delay_us if r in late else 0)
                    for r in range(spec.ranks)
                ]
                tick = not spec.cache or pid not in ticked
                ticked.add(pid)
                neg_end = max(neg_end, _negotiation(events, clock, pid, "NEGOTIATE_ALLREDUCE", ready, tick, truth))
            for batch in _fuse(wave, sizes, spec.fusion_threshold):
                start = max(neg_end + 5 + rnd.randint(0, 20), free)
                free = _op(events, spec, rnd, batch, sizes, start, first_op, truth, bandwidth)
                first_op = False
        step_end = max(free, step_start + spec.compute_us) + 100
        if spec.mark_cycles:
            c = clock.next(step_start)
            while c < step_end:
                events.append((c, 0, f'{{"ph": "i", "name": "CYCLE_START", "ts": {c}, "s": "g"}}'))
                truth.markers += 1
                c += spec.cycle_time_us
        events.sort(key=lambda e: e[0])  # stable: per-pid order is kept for equal ts
        truth.steps.append(
            {"step": step, "start_us": step_start, "end_us": step_end, "duration_us": step_end - step_start}
        )
        yield from events
        t = step_end


def write_timeline(path: str | Path, spec: TimelineSpec) -> GroundTruth:
    """Write the timeline to ``path`` and its ground truth to ``path + '.truth.json'``."""
    truth = GroundTruth(spec=asdict(spec))
    path = Path(path)
    glued = spec.layout == "glued"
    offset = 0 if glued else spec.uptime_origin_us
    names: set[int] = set()
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("[\n")
        if glued:
            f.write(
                '{"name": "process_name", "ph": "M", "pid": 0, "args": '
                '{"start_time_since_epoch_in_micros":1795331437366285}},\n'
            )
            f.write('{"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}},\n')
        # glued: the writer overwrites the previous ']' with ',' before every record;
        # metadata lines end '},\n', events end '}' (then ']' until the next record)
        need_comma = False
        buf: list[str] = []
        for ts, pid, rec in generate_events(spec, truth):
            if offset:
                rec = rec.replace(f'"ts": {ts}', f'"ts": {ts + offset}', 1)
            if pid and pid not in names:
                names.add(pid)
                tname = (
                    f"allreduce.layer{pid}.weight"
                    if pid <= spec.tensors
                    else f"broadcast.layer{pid - spec.tensors}.weight"
                )
                for m in (
                    f'{{"name": "process_name", "ph": "M", "pid": {pid}, "args": {{"name": "{tname}"}}}}',
                    f'{{"name": "process_sort_index", "ph": "M", "pid": {pid}, "args": {{"sort_index": {pid}}}}}',
                ):
                    buf.append(("," if need_comma else "") + m + ",\n")
                    need_comma = False
                    truth.records += 1
            if glued:
                buf.append(("," if need_comma else "") + rec)
                need_comma = True
            else:
                buf.append(rec + ",\n")
            truth.records += 1
            if len(buf) > 4096:
                f.write("".join(buf))
                buf.clear()
        if glued:
            buf.append("]")
        f.write("".join(buf))
    size = path.stat().st_size
    if spec.truncate_at is not None:
        keep = int(size * spec.truncate_at)
        with open(path, "r+b") as f:
            f.truncate(keep)
        truth.truncated = True
        size = keep
    truth.bytes_written = size
    Path(str(path) + ".truth.json").write_text(json.dumps(asdict(truth), indent=1))
    return truth
