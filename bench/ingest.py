"""Timeline ingest benchmark: our full ingest vs json.load+pandas vs DuckDB, same file, same run.

    python bench/ingest.py [--mb 1024] [--skip-json]

Each method runs in a fresh process (so peak RSS is its own). Ours = parse + B/E pairing +
Parquet store (the ``hvd-analyze ingest`` path). Targets (issue #2): >= 1.0x DuckDB's
rate (stretch 1.5x), >= 4x json+pandas, peak RSS <= 0.5x the input size.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import big_timeline, entry, measure_all


def ours(path: Path) -> None:
    from analyzer.store.discovery import discover
    from analyzer.store.run_store import RunStore

    with tempfile.TemporaryDirectory() as d:
        store = RunStore.create_or_open(Path(d) / "store")
        store.ingest(*discover([path]))


def json_pandas(path: Path) -> None:
    import json

    import pandas as pd

    with open(path, encoding="utf-8") as f:
        events = json.load(f)
    pd.DataFrame(events)


def duckdb_arrow(path: Path) -> None:
    import duckdb

    cols = "{ph: 'VARCHAR', name: 'VARCHAR', ts: 'BIGINT', pid: 'BIGINT', dur: 'BIGINT', s: 'VARCHAR', args: 'JSON'}"
    con = duckdb.connect()
    con.sql(
        f"SELECT * FROM read_json('{path}', format='array', columns={cols}, maximum_object_size=104857600)"
    ).fetch_arrow_table()


METHODS = {"ours": ours, "json+pandas": json_pandas, "duckdb": duckdb_arrow}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=1024, help="input size to generate (MB)")
    ap.add_argument("--skip-json", action="store_true", help="skip the slow json.load+pandas baseline")
    args = ap.parse_args()
    path = big_timeline(args.mb)
    results = measure_all(__file__, [m for m in METHODS if not (m == "json+pandas" and args.skip_json)], path)
    ours_r = results["ours"]
    print(f"input: {ours_r['input_mb']:.0f} MB")
    print(
        f"ours / duckdb rate:      {ours_r['mb_per_s'] / results['duckdb']['mb_per_s']:.2f}x  (target >= 1.0x, stretch 1.5x)"
    )
    if "json+pandas" in results:
        print(
            f"ours / json+pandas rate: {ours_r['mb_per_s'] / results['json+pandas']['mb_per_s']:.2f}x  (target >= 4x)"
        )
    print(f"ours peak RSS / input:   {ours_r['peak_rss_mb'] / ours_r['input_mb']:.2f}x  (target <= 0.5x)")


if __name__ == "__main__":
    entry(METHODS, main)
