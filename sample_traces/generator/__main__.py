"""Regenerate the committed synthetic samples: ``python -m sample_traces.generator [OUT_DIR]``.

Deterministic: the same code writes the same bytes (``tests/test_samples.py`` checks that
the committed files are exactly this program's output, and that the analyzer finds
exactly the ``expect``-ed codes in each; ``EXPECTED.md`` is written from the same data).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from sample_traces.generator.nccl import NcclLogSpec, write_nccl_log
from sample_traces.generator.timeline import TimelineSpec, write_timeline

MIB = 1024 * 1024


@dataclass(frozen=True)
class Sample:
    spec: TimelineSpec | None  # written as timeline.json
    about: str
    expect: tuple[str, ...] = ()  # finding codes, exactly
    notes: tuple[str, ...] = ()
    log: NcclLogSpec | None = None  # written as job.log (NCCL_DEBUG=INFO stdout of the same job)


SAMPLES: dict[str, Sample] = {
    "healthy_glued": Sample(
        TimelineSpec(ranks=8, tensors=16, steps=30, mark_cycles=True, seed=11),
        "Horovod >= 0.20.1 layout (glued, closed by `]`), NCCL GPU ops, 8 ranks, 16 tensors in 4 arrival waves, "
        "30 steps of about 50 ms, response cache on, cycle markers every 1 ms. The negative control of every "
        "detector.",
        notes=(
            "layout `glued`, status `closed`, Horovod version range starting at 0.20.1; response cache `on`",
            "30 steps; no parse issue",
        ),
    ),
    "legacy_line_per_event": Sample(
        TimelineSpec(ranks=4, tensors=8, steps=20, layout="line_per_event", cache=False, seed=12),
        "Horovod 0.16-0.20.0 layout: one record per line, never closed, `ts` from host uptime, no cache "
        "(ticks on every negotiation) and no straggler.",
        notes=(
            "layout `line_per_event`, status `unterminated` (info), uptime origin",
            "ticks on every negotiation of 4 balanced ranks: still no `timeline.straggler`",
        ),
    ),
    "truncated_glued": Sample(
        TimelineSpec(ranks=4, tensors=8, steps=20, truncate_at=0.8, seed=13),
        "Horovod >= 0.20.1 layout cut at 80% of its bytes, inside a record (as a node failure or a full disk "
        "leaves it).",
        expect=("timeline.truncated",),
        notes=(
            "status `truncated`, a `timeline.truncated_record` data_loss issue at the cut, unclosed spans",
            "the steps before the cut are still analysed",
        ),
    ),
    "straggler_nocache": Sample(
        TimelineSpec(
            ranks=8, tensors=16, steps=30, cache=False, straggler_ranks=(5,), straggler_delay_us=30_000, seed=14
        ),
        "Rank 5 is ready 30 ms after the others every step; `HOROVOD_CACHE_CAPACITY=0`, so every negotiation "
        "carries rank ticks.",
        expect=("timeline.straggler",),
        notes=("`timeline.straggler` names rank 5 with a median lateness of about 30 ms",),
    ),
    "straggler_cached": Sample(
        TimelineSpec(ranks=8, tensors=16, steps=30, straggler_ranks=(5,), straggler_delay_us=30_000, seed=15),
        "The same straggler with the response cache on: steady-state negotiations carry no ticks.",
        expect=("timeline.negotiation_wait",),
        notes=(
            (
                "`timeline.negotiation_wait` of about 30 ms with the `HOROVOD_CACHE_CAPACITY=0` suggestion; "
                "no `timeline.straggler`"
            ),
        ),
    ),
    "long_queue": Sample(
        TimelineSpec(ranks=8, tensors=16, steps=30, queue_us=15_000, seed=16),
        "Every NCCL op waits about 15 ms in QUEUE (a saturated network): communication outlasts backward.",
        expect=("timeline.long_queue",),
        notes=("`timeline.long_queue`, not WAIT_FOR_DATA; the INIT_NCCL step is left out",),
    ),
    "fusion_off": Sample(
        TimelineSpec(ranks=8, tensors=32, steps=30, fusion_threshold=0, op_overhead_us=400, seed=17),
        "`HOROVOD_FUSION_THRESHOLD=0`: 32 gradients, one collective each.",
        expect=("timeline.fusion_fragmented",),
        notes=("`timeline.fusion_fragmented` suggesting `HOROVOD_FUSION_THRESHOLD=134217728` (bytes)",),
    ),
    "over_threshold": Sample(
        TimelineSpec(
            ranks=8,
            tensors=16,
            steps=30,
            waves=2,
            fusion_threshold=64 * MIB,
            tensor_bytes=(4 * MIB,) * 5 + (96 * MIB,) + (4 * MIB,) * 10,
            op_overhead_us=2_000,
            seed=18,
        ),
        "A 96 MiB gradient with a 64 MiB fusion threshold: it always runs alone while its 4 MiB neighbours fuse.",
        expect=("timeline.tensor_over_fusion_threshold",),
        notes=(
            (
                "`timeline.tensor_over_fusion_threshold` naming `allreduce.layer6.weight` and suggesting "
                "`HOROVOD_FUSION_THRESHOLD=268435456`"
            ),
        ),
    ),
    "cycle_time_high": Sample(
        TimelineSpec(
            ranks=8, tensors=16, steps=30, cycle_time_us=20_000, compute_us=100_000, mark_cycles=True, seed=19
        ),
        "`HOROVOD_CYCLE_TIME=20` with a ~100 ms step: each cycle is a fifth of the step.",
        expect=("timeline.cycle_time_high",),
        notes=("`timeline.cycle_time_high` with a cycle of 20 ms from the CYCLE_START markers",),
    ),
    "startup_and_init": Sample(
        TimelineSpec(ranks=8, tensors=16, steps=30, startup_skew_us=400_000, init_nccl_us=2_000_000, seed=20),
        "broadcast_parameters waits 400 ms for rank 7, and INIT_NCCL takes 2 s.",
        expect=("timeline.init_overhead", "timeline.startup_skew"),
        notes=("`timeline.startup_skew` naming rank 7 and `timeline.init_overhead`, both info",),
    ),
    "slowdown_rank_late": Sample(
        TimelineSpec(
            ranks=4,
            tensors=8,
            steps=100,
            cache=False,
            slow_from_step=60,
            slow_ranks=(2,),
            slow_delay_us=25_000,
            seed=22,
        ),
        "Rank 2 becomes 25 ms late from step 60 on (a GPU that starts throttling); `HOROVOD_CACHE_CAPACITY=0`, "
        "so the slow steps' ticks name it: the step times rise (a slowdown) and the ranks' lateness names rank 2 "
        "from step 60 on (a straggler), each finding citing the other.",
        expect=("timeline.slowdown", "timeline.straggler"),
        notes=(
            "`timeline.slowdown` from step 60 (about 50 ms to 70 ms), the added time on waiting for a late "
            "rank, rank 2 named, its onset in UTC from the start-time header",
            "`timeline.straggler` naming rank 2 late from step 60 on",
        ),
    ),
    "nccl_healthy_ib": Sample(
        None,
        "NCCL 2.19.3 over InfiniBand with GPUDirect RDMA, 2 hosts x 8 GPUs, mpirun-prefixed stdout: the negative "
        "control of every NCCL detector.",
        log=NcclLogSpec(hosts=2, gpus_per_host=8, seed=31),
        notes=(
            (
                "16 processes on 2 hosts, network `IB`, transports `NET/IB/GDRDMA` and `P2P/IPC/read`, every "
                "rank reached Init COMPLETE"
            ),
        ),
    ),
    "nccl_socket_fallback": Sample(
        TimelineSpec(ranks=16, tensors=16, steps=30, queue_us=8_000, seed=32),
        "The hosts have InfiniBand (IPoIB bootstrap interface `ib0`) but the container lacks libibverbs: NCCL "
        "silently uses TCP sockets between 4 hosts. The Horovod timeline of the same job shows the cost.",
        expect=("nccl.socket_fallback", "timeline.long_queue"),
        log=NcclLogSpec(hosts=4, gpus_per_host=4, network="Socket", seed=33),
        notes=(
            (
                "`nccl.socket_fallback` (critical) citing the missing libibverbs and the IPoIB interface, "
                "suggesting `NCCL_SOCKET_IFNAME=ib0` (IPoIB) meanwhile, with the timeline's exposed communication per step"
            ),
            "`timeline.long_queue` from the timeline",
        ),
    ),
    "nccl_ib_disabled": Sample(
        None,
        "`NCCL_IB_DISABLE=1` left in a launch script of a 2-host job: sockets by choice, not a fallback.",
        expect=("nccl.ib_disabled",),
        log=NcclLogSpec(hosts=2, gpus_per_host=4, network="Socket", ib_disable_env=True, seed=34),
        notes=("`nccl.ib_disabled` (warning: several hosts); no `nccl.socket_fallback`",),
    ),
    "nccl_no_gdrdma": Sample(
        None,
        "InfiniBand without GPUDirect RDMA (nvidia-peermem not loaded): inter-node channels lack `/GDRDMA`.",
        expect=("nccl.no_gdrdma",),
        log=NcclLogSpec(hosts=2, gpus_per_host=8, gdr=False, seed=35),
        notes=("`nccl.no_gdrdma` naming the NET/IB connections",),
    ),
    "nccl_init_failure": Sample(
        None,
        "Rank 9 gets a RoCE completion error (status 12, retry exceeded) during connection setup and rank 13 "
        "hangs: neither reaches Init COMPLETE.",
        expect=("nccl.error", "nccl.init_incomplete"),
        log=NcclLogSpec(hosts=2, gpus_per_host=8, completion_error_rank=9, stuck_ranks=(13,), seed=36),
        notes=(
            "`nccl.error` of class `ib_completion_error` with its chain and the retry/GID/PFC remediation",
            "`nccl.init_incomplete` naming ranks 9 and 13 on `gpu-node-001`",
        ),
    ),
    "watchdog_behind": Sample(
        None,
        "PyTorch watchdog timeouts after init: rank 3 stopped at SeqNum 4100 while the others reached 4117.",
        expect=("nccl.watchdog_timeout",),
        log=NcclLogSpec(hosts=1, gpus_per_host=8, watchdog_behind_rank=3, seed=37),
        notes=("`nccl.watchdog_timeout` with verdict `behind` naming rank 3",),
    ),
}


def expected_md(name: str, sample: Sample) -> str:
    lines = [f"# {name}", "", sample.about, "", "The analyzer must find:"]
    lines += [f"- {n};" for n in sample.notes]
    if sample.expect:
        lines.append("- exactly these findings: " + ", ".join(f"`{c}`" for c in sample.expect) + ".")
    else:
        lines.append("- no finding at all.")
    return "\n".join(lines) + "\n"


def generate(out: Path) -> list[Path]:
    written = []
    for name, sample in SAMPLES.items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        if sample.spec is not None:
            write_timeline(folder / "timeline.json", sample.spec)
            written.append(folder / "timeline.json")
        if sample.log is not None:
            write_nccl_log(folder / "job.log", sample.log)
            written.append(folder / "job.log")
        (folder / "EXPECTED.md").write_text(expected_md(name, sample), encoding="utf-8")
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "synthetic"
    for p in generate(target):
        print(p)
