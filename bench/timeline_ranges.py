"""Where a timeline tokenized in ranges can go on more cores (issue #7), in one process:

    python bench/timeline_ranges.py [--mb 1024]

On the timeline of bench/ingest.py (``--mb``), parsing only (no Parquet, no hash), each part
timed on its own, one thread:

* baseline: the single pass (``TimelineParser.batches``: tokenize, pair, Arrow batches);
* tokenizing every 32 MB range (:func:`parsers.timeline.tokens.tokenize_task`): the work that
  ``-j N`` threads or Dask workers share;
* pairing the tokenized ranges in file order into the same Arrow batches: the work left to the
  coordinating thread, however many workers there are.

It prints each part's ratio to the baseline and the parse's speed-up bound on N cores,
``baseline / max((tokenizing + pairing) / N, pairing)`` (all the work spread over the cores, the
pairing one thread); then the same parse on 2 threads, measured. The
ingest also writes Parquet and hashes the file, on two more threads of the coordinator
(``bench/scale.py`` part 5 measures it whole).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import big_timeline


def _rows(batches: object) -> int:
    return sum(t.num_rows for _, t in batches)  # type: ignore[attr-defined]


def main() -> None:
    from analyzer.store.parallel import Executor
    from parsers.timeline import TimelineParser
    from parsers.timeline.tokens import timeline_ranges, tokenize_task

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=1024)
    args = ap.parse_args()
    path = big_timeline(args.mb)
    size = path.stat().st_size
    print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}; {path.name} ({size / 1e6:.0f} MB)")
    _rows(TimelineParser(path).batches())  # compiled kernels loaded, file in the page cache

    t = time.perf_counter()
    rows = _rows(TimelineParser(path).batches())
    base = time.perf_counter() - t

    parser = TimelineParser(path)
    tasks = timeline_ranges(str(path), 2, size)
    spent = [0.0]

    def timed(ts: list) -> Iterator:  # each range tokenized when the pairing asks for it, and timed alone
        for task in ts:
            t0 = time.perf_counter()
            r = tokenize_task(task)
            spent[0] += time.perf_counter() - t0
            yield r

    t = time.perf_counter()
    same = _rows(parser.batches_in_ranges(timed)) == rows
    tokenizing = spent[0]
    pairing = time.perf_counter() - t - tokenizing

    t = time.perf_counter()
    two = _rows(TimelineParser(path).batches_in_ranges(lambda ts: Executor(jobs=2).ordered(tokenize_task, ts)))
    threads = time.perf_counter() - t

    print(f"  single pass (baseline)      {base:6.2f} s  {size / base / 1e6:6.0f} MB/s  1.00x")
    print(
        f"  tokenizing {len(tasks):3d} ranges        {tokenizing:6.2f} s  {size / tokenizing / 1e6:6.0f} MB/s  "
        f"{tokenizing / base:.2f}x the baseline's time (shared by the workers)"
    )
    print(
        f"  pairing them in file order  {pairing:6.2f} s  {size / pairing / 1e6:6.0f} MB/s  "
        f"{pairing / base:.2f}x (the coordinating thread)"
    )
    for n in (2, 4, 8, 16):
        print(f"  bound on {n:2d} cores: {base / max((tokenizing + pairing) / n, pairing):.2f}x the single pass")
    print(
        f"  measured, 2 threads: {threads:.2f} s, {base / threads:.2f}x the single pass; same rows: "
        f"{same and two == rows}"
    )


if __name__ == "__main__":
    main()
