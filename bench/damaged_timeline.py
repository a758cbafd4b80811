"""Damaged timelines: ingest must stay linear in the file's size however many records are unreadable.

    python bench/damaged_timeline.py [--mb 6 48] [--repeat 3]

For each size, a real capture (``sample_traces/captured/straggler_nocache``) repeated to that size
is written twice: intact, and with one byte of every 2 KB overwritten (a damaged record every few
records). Whole ``hvd-analyze ingest`` processes (start-up included) run on both, interleaved,
``--repeat`` times; the script prints the medians and MB/s. Issue 26 measured 143 s for a damaged
6 MB file before the resync stopped copying the buffer and rows stopped making one table per
damaged record.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "sample_traces" / "captured" / "straggler_nocache" / "timeline.json"


def write(path: Path, mb: float, damaged: bool) -> None:
    record = SOURCE.read_bytes().strip()[1:-1].rstrip(b",\n ") + b",\n"
    body = bytearray(b"[")
    while len(body) < mb * 1e6:
        body += record
    if damaged:
        for i in range(2000, len(body) - 10, 2000):
            body[i] = ord("#")
    path.write_bytes(bytes(body[:-2]) + b"]")


def ingest(path: Path, store: Path) -> float:
    shutil.rmtree(store, ignore_errors=True)
    exe = Path(sys.executable).parent / "hvd-analyze"
    t = time.perf_counter()
    subprocess.run([str(exe), "ingest", str(path), "-o", str(store), "-q"], check=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, nargs="+", default=[6, 48])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for mb in args.mb:
            files = {kind: d / f"{kind}-{mb:g}.json" for kind in ("intact", "damaged")}
            for kind, path in files.items():
                write(path, mb, kind == "damaged")
            times: dict[str, list[float]] = {k: [] for k in files}
            for _ in range(args.repeat):
                for kind, path in files.items():
                    times[kind].append(ingest(path, d / "store"))
            for kind, ts in times.items():
                med = statistics.median(ts)
                print(
                    f"{mb:6g} MB {kind:8s} median {med:6.2f} s  {mb / med:6.1f} MB/s  ({', '.join(f'{t:.2f}' for t in ts)})"
                )


if __name__ == "__main__":
    main()
