"""The state of this machine, to read the other benchmarks' figures against: what fresh memory
and a read from the page cache cost right now.

    python bench/machine.py [--mb 512] [--rounds 4]

* **fresh memory**: seconds per GB to touch anonymous memory the process never had (one write per
  4 KiB page), faulted on demand, with transparent huge pages (``MADV_HUGEPAGE``, as numpy asks for
  big arrays), and populated in bulk (``MADV_POPULATE_WRITE``); then the same memory touched again
  (it stays in the process: what reusing a buffer costs).
* **page cache**: GB/s reading a cached file of the bench inputs with ``readinto`` into one buffer.
* **Python**: seconds for ``sum(range(30_000_000))``, the interpreter's speed (imports and the
  analysis's Python work scale with it).

On this project's VM fresh memory cost 0.8-1.1 s per GB however it was faulted (2026-11-24),
against about 0.1-0.2 s on a bare machine: a report of a 1 GB timeline touches ~1.3 GB of it. The
Python loop took 0.71-0.85 s that day, when the warm small report took 1.1-1.2 s (0.67 s in an
earlier session of the same day with the same code).
"""

from __future__ import annotations

import argparse
import mmap
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from bench.common import CACHE

PAGE = 4096
MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)  # Linux 5.14


def fresh(size: int, how: str) -> tuple[float, float]:
    """Seconds per GB to get ``size`` bytes of fresh memory written (``how``: demand, huge,
    populate), and to write them once more."""
    m = mmap.mmap(-1, size)
    try:
        a = np.frombuffer(m, np.uint8)
        t = time.perf_counter()
        if how == "huge":
            m.madvise(mmap.MADV_HUGEPAGE)
        if how == "populate":
            m.madvise(MADV_POPULATE_WRITE)
        a[::PAGE] = 1
        first = time.perf_counter() - t
        t = time.perf_counter()
        a[::PAGE] = 2
        again = time.perf_counter() - t
        del a
    finally:
        m.close()
    return first * 1e9 / size, again * 1e9 / size


def cached_read(path: Path) -> float:
    """GB/s of reading ``path`` (read once before, so from the page cache)."""
    buf = bytearray(16 << 20)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(view):
            pass
        f.seek(0)
        n = 0
        t = time.perf_counter()
        while k := f.readinto(view):
            n += k
    return n / 1e9 / (time.perf_counter() - t)


def python_speed() -> float:
    """Seconds of a pure-Python loop (best of 3)."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        sum(range(30_000_000))
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    size = a.mb << 20
    print(f"python, sum(range(30_000_000)): {python_speed():.2f} s")
    for how in ("demand", "huge", "populate"):
        runs = [fresh(size, how) for _ in range(a.rounds)]
        print(
            f"fresh memory, {how:8s}: {statistics.median(r[0] for r in runs):.2f} s/GB"
            f" (again: {statistics.median(r[1] for r in runs):.3f} s/GB)"
        )
    inputs = sorted(CACHE.glob("timeline_*.json"), key=lambda p: p.stat().st_size)
    if inputs:
        print(f"page cache read, {inputs[-1].name}: {cached_read(inputs[-1]):.1f} GB/s")


if __name__ == "__main__":
    main()
