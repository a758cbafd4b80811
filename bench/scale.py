"""Scale benchmark (issue #7), one run, same inputs: ingest vs the JSON baselines, a 5 GB timeline's
memory, and NCCL logs of 4096 ranks on 1 vs 2 processes vs a 2-worker Dask LocalCluster.

    python bench/scale.py [--mb 1024] [--big-mb 5120] [--skip-json] [--only-nccl] [--collectives 1000 4000]
                          [--combined-mb 1024]

1. The 1 GB timeline of bench/ingest.py, each method in a fresh process (time, MB/s, peak RSS):
   ours (``hvd-analyze ingest``), ``json.load`` + pandas, orjson + pandas, DuckDB ``read_json`` to
   Arrow, and the ``ijson`` streaming floor (iterate every event, build nothing).
2. The same generator at ``--big-mb`` (default 5 GB): our ingest's peak RSS (target <= 1 GB) and its
   rate against the 1 GB rate (target: not lower by more than 10%).
3. ``NCCL_DEBUG=INFO`` logs of 4096 ranks, one file per rank (512 hosts x 8 GPUs, ``--collectives``
   COLL lines per rank: 1000 make 200 KB per file, 802 MB in all; 4000 make 3.0 GB): ``ingest -j 1``,
   ``-j 2`` and ``--dask-workers 2``, each in a fresh process, ``--repeat`` rounds interleaved (a slow
   spell of a shared machine then hits every mode), best and median; and whether the three stores
   hold identical tables (per input). Target: Dask >= 1.7x the single-process rate. Each ratio is
   given twice: on the process's wall time, and on the time ``ingest`` reports for its own work
   (the interpreter's start-up, the same ~1 s in every mode, left out; a Dask cluster's start-up
   stays in).
4. One combined ``mpirun`` stdout of 1024 ranks (``--combined-mb``, default 1 GB, the log of
   bench/nccl_log.py), the same three modes: ``-j 2`` and Dask parse it in 32 MB chunks merged in
   file order (:mod:`parsers.nccl.chunks`), ``-j 1`` streams it in one pass; identical tables.
5. One timeline (``--timeline-mb``, default 1 GB, the file of part 1), the same three modes: ``-j 2``
   tokenizes it in 32 MB ranges on two threads, Dask on two workers, and this process pairs them in
   file order (:mod:`parsers.timeline.tokens`); ``-j 1`` streams it in one pass; identical tables.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import CACHE, big_nccl_log, big_timeline, entry, measure_in_child
from bench.ingest import duckdb_arrow, json_pandas, ours


def orjson_pandas(path: Path) -> None:
    import orjson
    import pandas as pd

    pd.DataFrame(orjson.loads(path.read_bytes()))


def ijson_floor(path: Path) -> None:
    import ijson

    with open(path, "rb") as f:
        for _ in ijson.items(f, "item"):
            pass


METHODS = {
    "ours": ours,
    "json+pandas": json_pandas,
    "orjson+pandas": orjson_pandas,
    "duckdb": duckdb_arrow,
    "ijson": ijson_floor,
}


def nccl_logs(collectives: int) -> Path:
    from sample_traces.generator.nccl import NcclLogSpec, write_nccl_log

    folder = CACHE / f"nccl_4096r_{collectives}coll_files"
    if not (folder / "gpu-node-511.24095.log").exists():
        write_nccl_log(folder, NcclLogSpec(hosts=512, gpus_per_host=8, collectives=collectives), per_rank=True)
    return folder


def _size(src: Path) -> int:
    return sum(f.stat().st_size for f in src.iterdir()) if src.is_dir() else src.stat().st_size


def ingest_cli(src: Path, store: Path, *opts: str) -> dict[str, float]:
    """``hvd-analyze ingest`` in a fresh process: its wall time from start to exit, and the time the
    command itself reports for the ingest (without the interpreter's start-up and imports, ~1 s,
    which are the same in every mode; a Dask cluster's start-up is inside it)."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "analyzer", "ingest", str(src), "-o", str(store), *opts],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    wall = time.perf_counter() - t
    own = float(re.search(r"^ingested .* in ([0-9.]+) s", out, re.MULTILINE).group(1))  # type: ignore[union-attr]
    size = _size(src)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return {"seconds": wall, "ingest_seconds": own, "mb_per_s": size / wall / 1e6, "max_child_rss_mb": rss / 1e6}


def tables_digest(store: Path) -> dict[str, list[str]]:
    """Per table, the sorted row digests of every input (buckets complete in any order)."""
    import hashlib

    from analyzer.store.run_store import RunStore
    from parsers.schema import TABLES

    rs = RunStore.open(store)
    out: dict[str, list[str]] = {}
    for name in TABLES:
        df = rs.table(name).to_pandas()
        df["input_id"] = df["input_id"].astype(str)
        out[name] = sorted(
            f"{iid}:{hashlib.sha256(g.to_csv(index=False).encode()).hexdigest()[:16]}"
            for iid, g in df.groupby("input_id", sort=False)
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--big-mb", type=int, default=5120)
    ap.add_argument("--skip-json", action="store_true", help="skip json.load+pandas (7 GB of RAM per GB)")
    ap.add_argument("--only-nccl", action="store_true", help="only parts 3, 4 and 5 (scaling)")
    ap.add_argument(
        "--repeat", type=int, default=3, help="part 3: runs per mode, interleaved (best and median reported)"
    )
    ap.add_argument(
        "--collectives",
        type=int,
        nargs="*",
        default=[1000],
        help="part 3: COLL lines per rank; one measurement per value (1000: 802 MB, 4000: 3.2 GB; none: skip)",
    )
    ap.add_argument("--combined-mb", type=int, default=1024, help="part 4: size of the combined log (0: skip)")
    ap.add_argument("--timeline-mb", type=int, default=1024, help="part 5: size of the timeline (0: skip)")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}")
    if not args.only_nccl:
        timelines(args)
    for n in args.collectives:
        folder = nccl_logs(n)
        scaling(folder, f"3. {len(list(folder.iterdir()))} NCCL logs (one per rank)", args.repeat, "Dask >= 1.7x")
    if args.combined_mb:
        scaling(big_nccl_log(args.combined_mb), "4. one combined NCCL log of 1024 ranks", args.repeat)
    if args.timeline_mb:
        scaling(big_timeline(args.timeline_mb), "5. one timeline, tokenized in ranges", args.repeat)


def timelines(args: argparse.Namespace) -> None:

    path = big_timeline(args.mb)
    print(f"\n1. {path.name} ({path.stat().st_size / 1e6:.0f} MB), each method in a fresh process")
    res = {}
    for m in METHODS:
        if m == "json+pandas" and args.skip_json:
            continue
        res[m] = r = measure_in_child(__file__, m, path)
        print(
            f"  {m:14s} {r['seconds']:7.2f} s {r['mb_per_s']:7.1f} MB/s  peak RSS {r['peak_rss_mb']:7.0f} MB",
            flush=True,
        )
    for m, r in res.items():
        if m != "ours":
            print(
                f"  ours vs {m}: {res['ours']['mb_per_s'] / r['mb_per_s']:.2f}x the rate, "
                f"{res['ours']['peak_rss_mb'] / r['peak_rss_mb']:.2f}x the memory"
            )

    big = big_timeline(args.big_mb)
    r = measure_in_child(__file__, "ours", big)
    print(
        f"\n2. {big.name} ({big.stat().st_size / 1e6:.0f} MB): ours {r['seconds']:.1f} s, {r['mb_per_s']:.0f} MB/s, "
        f"peak RSS {r['peak_rss_mb']:.0f} MB (target <= 1000 MB: {'met' if r['peak_rss_mb'] <= 1000 else 'NOT met'}); "
        f"rate {r['mb_per_s'] / res['ours']['mb_per_s']:.2f}x the {args.mb} MB rate (target >= 0.90)"
    )


def scaling(src: Path, title: str, repeat: int, target: str | None = None) -> None:
    size = _size(src)
    print(f"\n{title}, {size / 1e6:.0f} MB, `hvd-analyze ingest`:")
    modes = (("-j 1", ("-j", "1")), ("-j 2", ("-j", "2")), ("--dask-workers 2", ("--dask-workers", "2")))
    with tempfile.TemporaryDirectory() as d:
        tries: dict[str, list[dict[str, float]]] = {label: [] for label, _ in modes}
        for k in range(repeat):  # interleaved, so that a slow spell of a shared machine hits every mode
            for label, opts in modes:
                store = Path(d) / f"{label.replace(' ', '')}-{k}"
                tries[label].append(ingest_cli(src, store, *opts))
                if k:
                    shutil.rmtree(store)
        for label, runs in tries.items():
            secs = sorted(r["seconds"] for r in runs)
            own = sorted(r["ingest_seconds"] for r in runs)
            print(
                f"  {label:18s} best {secs[0]:6.1f} s {size / secs[0] / 1e6:6.1f} MB/s"
                f"  (median {statistics.median(secs):.1f} s, worst {secs[-1]:.1f} s; the ingest's own time: "
                f"best {own[0]:.1f} s, median {statistics.median(own):.1f} s)",
                flush=True,
            )
        same = len({json.dumps(tables_digest(Path(d) / f"{label.replace(' ', '')}-0")) for label in tries}) == 1

        def ratio(label: str, pick: Callable[[list[float]], float], key: str) -> float:
            return pick([r[key] for r in tries["-j 1"]]) / pick([r[key] for r in tries[label]])

        for label in ("-j 2", "--dask-workers 2"):
            for key, what in (("seconds", "process start to exit"), ("ingest_seconds", "the ingest's own time")):
                print(
                    f"  speed-up {label} ({what}): {ratio(label, min, key):.2f}x best against best, "
                    f"{ratio(label, statistics.median, key):.2f}x median against median ({repeat} runs each)"
                )
        print(f"  {f'target: {target}; ' if target else ''}identical tables: {same}")


if __name__ == "__main__":
    entry(METHODS, main)
