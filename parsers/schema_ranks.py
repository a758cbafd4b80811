"""The tables of per-rank profiler traces (:mod:`parsers.ranktrace`), declared as :mod:`parsers.schema`
declares the others (which adds them to ``TABLES``).

One rank × collective table holds what every per-collective source gives (the trace's NCCL kernels,
Gloo's work, Horovod's ``synchronize()``; later PyTorch's Flight Recorder or NCCL's profiler plugin):
a collective's place (step, process group, sequence number or order), what it moved and when it ran
on the rank's own clock. How long a rank waited at it is an analysis across ranks
(:mod:`analyzer.ranktraces`), not a column.
"""

from __future__ import annotations

import pyarrow as pa

from parsers.columns import INPUT, STR_DICT, TableSpec
from parsers.columns import col as _c

_RANK = _c("rank", pa.int64(), "global rank (null when neither the trace nor its file name states it)", null=True)

RANK_TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        TableSpec(
            "rank_traces",
            "One row per per-rank profiler trace: who wrote it and what its collectives' evidence is.",
            (
                INPUT,
                _RANK,
                _c("rank_from", pa.string(), "distributedInfo | file name (null: rank unknown)", null=True),
                _c("world_size", pa.int64(), "the job's ranks, per distributedInfo", null=True),
                _c("backend", pa.string(), "nccl | gloo | ... per distributedInfo", null=True),
                _c("host", pa.string(), "host_name, else the host of the <host>_<pid> worker name", null=True),
                _c("pid", pa.int64(), "process id (worker name, else the events' pid)", null=True),
                _c("worker", pa.string(), "worker name of a <worker>.<time>.pt.trace.json file name", null=True),
                _c("trace_id", pa.string(), "the profiler's trace id", null=True),
                _c("base_ns", pa.int64(), "baseTimeNanoseconds: ts is relative to it", null=True, unit="ns"),
                _c("nccl_version", pa.string(), "per distributedInfo", null=True),
                _c("device", pa.string(), "first GPU of deviceProperties", null=True),
                _c(
                    "groups",
                    pa.string(),
                    'process groups as JSON [{"name": ..., "ranks": [global ranks]}, ...]',
                    null=True,
                ),
                _c(
                    "source",
                    pa.string(),
                    "the collectives' evidence: nccl_kernel | gloo | horovod_sync | enqueue | none",
                ),
                _c("events", pa.int64(), "events in the trace"),
            ),
        ),
        TableSpec(
            "rank_steps",
            "One row per ProfilerStep#N of a rank: its span and what it spent on data, copies and collectives.",
            (
                INPUT,
                _RANK,
                _c("step", pa.int64(), "N of ProfilerStep#N"),
                _c("start_us", pa.int64(), "start on the rank's own clock", unit="us"),
                _c("dur_us", pa.int64(), "step time", unit="us"),
                _c("data_us", pa.int64(), "in enumerate(DataLoader) annotations", unit="us"),
                _c("h2d_us", pa.int64(), "in host-to-device copies (Memcpy HtoD)", unit="us"),
                _c(
                    "comm_us",
                    pa.int64(),
                    "in the step's collectives (waits included; 0 for enqueue-only evidence)",
                    unit="us",
                ),
            ),
        ),
        TableSpec(
            "rank_collectives",
            "One row per collective and rank: the rank x collective table every per-collective source feeds.",
            (
                INPUT,
                _RANK,
                _c("step", pa.int64(), "N of the ProfilerStep#N it was asked for in (null: outside them)", null=True),
                _c("order", pa.int64(), "its place among the rank's collectives of the step and group, by start"),
                _c("pg", STR_DICT, "process group name (null: not in the trace)", null=True),
                _c("seq", pa.int64(), "the group's sequence number (null: not in the trace)", null=True),
                _c(
                    "op",
                    STR_DICT,
                    "all_reduce | all_gather | reduce_scatter | broadcast | all_to_all | send_recv | ...",
                ),
                _c("dtype", STR_DICT, "element type", null=True),
                _c("bytes", pa.int64(), "input size", null=True, unit="bytes"),
                _c(
                    "enqueue_us",
                    pa.int64(),
                    "when the rank asked for it (c10d call or kernel launch)",
                    null=True,
                    unit="us",
                ),
                _c("start_us", pa.int64(), "start on the rank's own clock", unit="us"),
                _c("dur_us", pa.int64(), "duration, waiting for the other ranks included", unit="us"),
                _c("source", STR_DICT, "nccl_kernel | gloo | horovod_sync | enqueue"),
                _c("lane", STR_DICT, "the stream or thread it ran on"),
            ),
        ),
    )
}
