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
HIERARCHICAL = ("NCCL_REDUCESCATTER", "NCCL_REDUCE", "MEMCPY_IN_HOST_BUFFER", "MPI_ALLREDUCE",
                "MEMCPY_OUT_HOST_BUFFER", "NCCL_ALLGATHER", "NCCL_BCAST")


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
    seed: int = 42
    uptime_origin_us: int = 1_410_488_741_507  # line_per_event ts origin (host uptime)
    truncate_at: float | None = None  # keep this fraction of the bytes (cut mid-record)

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


def _batches(sizes: list[int], threshold: int) -> list[list[int]]:
    """Tensors in backward order (last layer first), greedily fused up to the threshold."""
    order = list(range(len(sizes)))[::-1]
    out: list[list[int]] = []
    cur: list[int] = []
    cur_bytes = 0
    for t in order:
        if cur and (threshold <= 0 or cur_bytes + sizes[t] > threshold):
            out.append(cur)
            cur, cur_bytes = [], 0
        cur.append(t)
        cur_bytes += sizes[t]
    if cur:
        out.append(cur)
    return out


def generate_events(spec: TimelineSpec, truth: GroundTruth) -> Iterator[tuple[int, int, str]]:
    """Yield (ts, pid, record) in file order; pid 0 = no tensor (markers)."""
    rnd = random.Random(spec.seed)
    sizes = spec.sizes()
    batches = _batches(sizes, spec.fusion_threshold)
    truth.batches_per_step = len(batches)
    t = 2_000_000
    seen_ticked: set[int] = set()
    nccl_ready = False
    cyc = spec.cycle_time_us
    for step in range(spec.steps):
        step_start = t
        events: list[tuple[int, int, str]] = []
        # each tensor's gradient becomes ready during backward; rank r adds jitter and delay
        ready0 = step_start + spec.compute_us // 2
        last_end = step_start
        for b_i, batch in enumerate(batches):
            base = ready0 + b_i * (spec.compute_us // (2 * len(batches)))
            neg_end = base
            for k, tensor in enumerate(batch):
                pid = tensor + 1
                rank_ready = [
                    base + k * 3 + rnd.randint(0, spec.jitter_us)
                    + (spec.straggler_delay_us if r in spec.straggler_ranks else 0)
                    for r in range(spec.ranks)
                ]
                first = min(rank_ready)
                # the coordinator sees requests once per cycle, ranks in ascending order
                seen = [first + ((rr - first) // cyc + 1) * cyc if rr > first else first for rr in rank_ready]
                end = max(seen) + 2
                events.append((first, pid, f'{{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": {first}, "pid": {pid}}}'))
                if not spec.cache or pid not in seen_ticked:
                    for r in sorted(range(spec.ranks), key=lambda r: (seen[r], r)):
                        events.append((seen[r], pid, f'{{"ph": "X", "name": "{r}", "ts": {seen[r]}, "pid": {pid}, "dur": 0}}'))
                        truth.ticks += 1
                    seen_ticked.add(pid)
                events.append((end, pid, f'{{"ph": "E", "ts": {end}, "pid": {pid}}}'))
                truth.spans += 1
                neg_end = max(neg_end, end)
            # the op: every tensor of the batch gets its own copy of each activity, a few us apart
            op_start = neg_end + rnd.randint(0, cyc)
            nbytes = sum(sizes[x] for x in batch)
            acts: list[tuple[str, int]] = [(a, 5 + rnd.randint(0, 20)) for a in GPU_ALLREDUCE[:2]]
            if not nccl_ready:
                acts.append(("INIT_NCCL", spec.init_nccl_us))
            acts.append(("QUEUE", spec.queue_us + rnd.randint(0, spec.queue_us // 4 + 1)))
            if len(batch) > 1:
                acts.append(("MEMCPY_IN_FUSION_BUFFER", 10 + nbytes // 50_000))
            wire = int(nbytes / spec.bandwidth_bytes_per_us) + 20
            if spec.hierarchical:
                acts += [(a, max(5, wire // len(HIERARCHICAL))) for a in HIERARCHICAL]
            else:
                acts.append(("NCCL_ALLREDUCE", wire))
            if len(batch) > 1:
                acts.append(("MEMCPY_OUT_FUSION_BUFFER", 10 + nbytes // 50_000))
            nccl_ready = True
            for k, tensor in enumerate(batch):
                events.append((op_start + k, tensor + 1, f'{{"ph": "B", "name": "ALLREDUCE", "ts": {op_start + k}, "pid": {tensor + 1}}}'))
            cur = op_start + len(batch)
            for name, dur in acts:
                for k, tensor in enumerate(batch):
                    events.append((cur + k, tensor + 1, f'{{"ph": "B", "name": "{name}", "ts": {cur + k}, "pid": {tensor + 1}}}'))
                cur += dur
                for k, tensor in enumerate(batch):
                    events.append((cur + k, tensor + 1, f'{{"ph": "E", "ts": {cur + k}, "pid": {tensor + 1}}}'))
                cur += len(batch) + 1
                truth.spans += len(batch)
            for k, tensor in enumerate(batch):
                shape, _ = _shape(sizes[tensor])
                events.append((cur + k, tensor + 1,
                               f'{{"ph": "E", "ts": {cur + k}, "pid": {tensor + 1}, "args": {{"dtype": "float32", "shape": "{shape}"}}}}'))
            truth.spans += len(batch)
            last_end = max(last_end, cur + len(batch))
        step_end = max(last_end, step_start + spec.compute_us) + 100
        if spec.mark_cycles:
            c = step_start
            while c < step_end:
                events.append((c, 0, f'{{"ph": "i", "name": "CYCLE_START", "ts": {c}, "s": "g"}}'))
                truth.markers += 1
                c += cyc
        events.sort(key=lambda e: e[0])  # stable: per-pid order is kept for equal ts
        truth.steps.append({"step": step, "start_us": step_start, "end_us": step_end,
                            "duration_us": step_end - step_start})
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
            f.write('{"name": "process_name", "ph": "M", "pid": 0, "args": '
                    '{"start_time_since_epoch_in_micros":1795331437366285}},\n')
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
                for m in (f'{{"name": "process_name", "ph": "M", "pid": {pid}, "args": {{"name": "allreduce.layer{pid}.weight"}}}}',
                          f'{{"name": "process_sort_index", "ph": "M", "pid": {pid}, "args": {{"sort_index": {pid}}}}}'):
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
