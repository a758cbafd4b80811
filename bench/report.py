"""End-to-end ``report`` benchmark: ingest + analysis + JSON report vs DuckDB's raw read_json.

    python bench/report.py [--mb 1024]

Same >= 1 GB synthetic timeline as bench/ingest.py (64 ranks, ticks on every negotiation),
each method in a fresh process. Ours = ``hvd-analyze report FILE -f json`` (temporary
store: parse, Parquet, step segmentation, batches, every detector, the report). Baseline =
DuckDB ``read_json`` of the raw events into Arrow, no analysis at all. Target (issue #4):
ours <= 2x the baseline's time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import big_timeline, entry, measure_all
from bench.ingest import duckdb_arrow


def ours(path: Path) -> None:
    from analyzer.render import RENDERERS
    from analyzer.report.assembly import analyze
    from analyzer.store.discovery import discover
    from analyzer.store.run_store import temporary_store

    with temporary_store() as store:
        store.ingest(*discover([path]))
        RENDERERS["json"].render(analyze(store))


METHODS = {"ours": ours, "duckdb": duckdb_arrow}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=1024, help="input size to generate (MB)")
    args = ap.parse_args()
    path = big_timeline(args.mb)
    results = measure_all(__file__, list(METHODS), path)
    ratio = results["ours"]["seconds"] / results["duckdb"]["seconds"]
    print(f"input: {results['ours']['input_mb']:.0f} MB")
    print(f"report / duckdb read_json time: {ratio:.2f}x  (target <= 2.0x)")


if __name__ == "__main__":
    entry(METHODS, main)
