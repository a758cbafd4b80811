"""Shared benchmark plumbing: cached inputs and one fresh process per measured method."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sample_traces.generator.timeline import TimelineSpec, write_timeline

CACHE = Path(__file__).resolve().parent / ".cache"


def big_timeline(target_mb: int) -> Path:
    """A >=0.20.1 GPU timeline of about ``target_mb`` MB: 64 ranks, ticks on every negotiation."""
    CACHE.mkdir(exist_ok=True)
    steps = max(1, round(target_mb / 0.49))  # ~0.49 MB per step with 100 tensors x 64 ranks
    path = CACHE / f"timeline_64r_{target_mb}mb.json"
    if not path.exists():
        t = time.perf_counter()
        write_timeline(path, TimelineSpec(ranks=64, tensors=100, steps=steps, cache=False, seed=1))
        print(
            f"generated {path.name}: {path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s",
            file=sys.stderr,
        )
    return path


def big_nccl_log(target_mb: int) -> Path:
    """An interleaved NCCL_DEBUG=INFO stdout of about ``target_mb`` MB: init blocks of 1024 ranks
    (128 hosts x 8 GPUs) then one COLL line per rank per collective."""
    from sample_traces.generator.nccl import NcclLogSpec, log_size_for, write_nccl_log

    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"nccl_1024r_{target_mb}mb.log"
    if not path.exists():
        base = NcclLogSpec(hosts=128, gpus_per_host=8)
        colls = max(1, round(target_mb * 1e6 / (base.nranks * log_size_for(base))))
        t = time.perf_counter()
        write_nccl_log(path, NcclLogSpec(hosts=128, gpus_per_host=8, collectives=colls))
        print(
            f"generated {path.name}: {path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s",
            file=sys.stderr,
        )
    return path


def measure_in_child(script: str, method: str, path: Path) -> dict[str, float]:
    """Run ``script --child METHOD PATH`` in a fresh interpreter; it prints one JSON line."""
    out = subprocess.run(
        [sys.executable, script, "--child", method, str(path)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_all(script: str, methods: list[str], path: Path) -> dict[str, dict[str, float]]:
    """Measure each method in its own fresh process, printing one line per method as it ends."""
    results = {}
    for name in methods:
        results[name] = r = measure_in_child(script, name, path)
        print(
            f"{name:12s} {r['seconds']:7.2f} s  {r['mb_per_s']:7.1f} MB/s  peak RSS {r['peak_rss_mb']:7.0f} MB "
            f"({r['peak_rss_mb'] / r['input_mb']:.2f}x input)",
            flush=True,
        )
    return results


def child_main(methods: dict[str, Callable[[Path], object]]) -> None:
    method, path = sys.argv[2], Path(sys.argv[3])
    t = time.perf_counter()
    methods[method](path)
    wall = time.perf_counter() - t
    rss = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) * 1024
    size = os.path.getsize(path)
    print(
        json.dumps(
            {
                "method": method,
                "seconds": wall,
                "mb_per_s": size / wall / 1e6,
                "peak_rss_mb": rss / 1e6,
                "input_mb": size / 1e6,
            }
        )
    )


def entry(methods: dict[str, Callable[[Path], object]], main: Callable[[], None]) -> None:
    """A benchmark script's entry: ``--child METHOD PATH`` measures one method, else ``main()``."""
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(methods)
    else:
        main()
