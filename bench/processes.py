"""What a user waits for: whole ``hvd-analyze`` processes (start-up included) against DuckDB's whole
process reading the same timeline, interleaved, medians of several runs, on two timeline shapes.

    python bench/processes.py [--mb 300,1024] [--shapes default,dense] [--runs 5] [--report]

Shapes (``sample_traces.generator``, cached in bench/.cache): ``default`` 64 ranks x 100 tensors
and ``dense`` 64 ranks x 200 tensors, both with the response cache off (rank ticks on every
negotiation). Per file and run, in this order: ``hvd-analyze ingest FILE -o STORE -q``; DuckDB's
``read_json(FILE, format='array')`` in a ``python -c`` process counting the records (a read, which
DuckDB may do without building columns it does not need); with ``--report`` the whole
``hvd-analyze report FILE -f json`` (temporary store: ingest and analysis); DuckDB again, ``COPY
... TO`` a zstd Parquet file (the conversion ``ingest`` does: every field, written). Each
process's wall time and its own peak RSS (``wait4``).

Before each timed process the bench reads the input once, so that every process finds it in the
page cache: this VM's kernel pages out file cache left idle for about a minute (DAMON), and
whichever process came first after a pause read part of the file from disk (0.07-0.09 GB of a
1 GB input, measured with ``ru_inblock``) and left it cached for the next one.

The figures go to stdout and to bench/.cache/processes.json: medians of each method, their
ratios, and the ratio of each run's own pair of processes (``*_per_run``, their median as
``*_paired``): the two ran seconds apart, so a box whose speed drifts between runs moves both.
Targets (issue 23): ingest >= 1.5x DuckDB's rate at 1 GB and >= 1.2x at 300 MB on both shapes,
peak RSS <= 0.5x the input at 1 GB; report end to end <= 1.0x DuckDB's time to read the file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import CACHE
from sample_traces.generator.timeline import TimelineSpec, write_timeline

ROOT = Path(__file__).resolve().parents[1]
HVD = str(Path(sys.executable).with_name("hvd-analyze"))
SHAPES = {"default": 100, "dense": 200}  # tensors; 64 ranks, cache off
MB_PER_STEP = {"default": 0.49, "dense": 0.98}


def timeline(shape: str, mb: int) -> Path:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"timeline_{shape}_64r_{mb}mb.json"
    if not path.exists():
        steps = max(1, round(mb / MB_PER_STEP[shape]))
        t = time.perf_counter()
        write_timeline(path, TimelineSpec(ranks=64, tensors=SHAPES[shape], steps=steps, cache=False, seed=1))
        print(
            f"generated {path.name}: {path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s", flush=True
        )
    return path


#: as a user's Python runs: writing and reading bytecode caches (a sandbox may turn them off, which
#: makes every import compile its module again: 0.1 s more per process here)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def warm(path: Path) -> None:
    """Read ``path`` once, into the page cache (outside any timed process)."""
    with open(path, "rb", buffering=0) as f:
        while f.read(16 << 20):
            pass


def run(cmd: list[str], warm_first: Path | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of the process ``cmd`` alone (``warm_first``: an input to
    read into the page cache just before)."""
    if warm_first is not None:
        warm(warm_first)
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode() if proc.stderr else status}")
    return wall, usage.ru_maxrss / 1024


def duckdb_count(path: Path) -> list[str]:
    query = f"select count(*) from read_json('{path}', format='array')"
    return [sys.executable, "-c", f"import duckdb; duckdb.sql({query!r}).fetchall()"]


def duckdb_parquet(path: Path, out: Path) -> list[str]:
    query = f"copy (select * from read_json('{path}', format='array')) to '{out}' (format parquet, compression zstd)"
    return [sys.executable, "-c", f"import duckdb; duckdb.sql({query!r})"]


def paired(row: dict[str, object], name: str, ratios: list[float]) -> None:
    """Each run's ratio of ``name`` and their median, into ``row``."""
    row[f"{name}_per_run"] = [round(r, 2) for r in ratios]
    row[f"{name}_paired"] = round(statistics.median(ratios), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", default="300,1024")
    ap.add_argument("--shapes", default="default,dense")
    # five: a median of three moved with one run on a stretch where this shared box slowed down
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--report", action="store_true", help="also time `report -f json` of the ingested store")
    a = ap.parse_args()
    # the bytecode caches, written once as after an install: a small report imports what ingest does, and more
    run([HVD, "report", str(ROOT / "sample_traces" / "captured" / "healthy_np2"), "-f", "json", "-o", os.devnull])
    results = []
    for mb in (int(x) for x in a.mb.split(",")):
        for shape in a.shapes.split(","):
            path = timeline(shape, mb)
            size = path.stat().st_size / 1e6
            samples: dict[str, list[tuple[float, float]]] = {
                "ingest": [],
                "duckdb": [],
                "duckdb_parquet": [],
                "report": [],
            }
            for _ in range(a.runs):
                work = Path(tempfile.mkdtemp(prefix="bench-store-"))
                try:
                    samples["ingest"].append(run([HVD, "ingest", str(path), "-o", str(work / "s"), "-q"], path))
                    samples["duckdb"].append(run(duckdb_count(path), path))
                    if a.report:  # right after DuckDB's count, the figure it is compared with
                        samples["report"].append(run([HVD, "report", str(path), "-f", "json", "-o", os.devnull], path))
                    samples["duckdb_parquet"].append(run(duckdb_parquet(path, work / "d.parquet"), path))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
            row: dict[str, object] = {"shape": shape, "mb": round(size), "runs": a.runs}
            for name, s in samples.items():
                if s:
                    row[f"{name}_s"] = round(statistics.median(w for w, _ in s), 2)
                    row[f"{name}_rss_mb"] = round(statistics.median(r for _, r in s))
            row["ingest_vs_duckdb"] = round(float(row["duckdb_s"]) / float(row["ingest_s"]), 2)  # type: ignore[arg-type]
            row["ingest_vs_duckdb_parquet"] = round(float(row["duckdb_parquet_s"]) / float(row["ingest_s"]), 2)  # type: ignore[arg-type]
            if a.report:
                row["report_vs_duckdb"] = round(float(row["report_s"]) / float(row["duckdb_s"]), 2)  # type: ignore[arg-type]
            paired(
                row,
                "ingest_vs_duckdb",
                [d / i for (i, _), (d, _) in zip(samples["ingest"], samples["duckdb"], strict=True)],
            )
            if a.report:
                paired(
                    row,
                    "report_vs_duckdb",
                    [r / d for (r, _), (d, _) in zip(samples["report"], samples["duckdb"], strict=True)],
                )
            row["ingest_rss_vs_input"] = round(float(row["ingest_rss_mb"]) / size, 2)  # type: ignore[arg-type]
            print(json.dumps(row), flush=True)
            results.append(row)
    (CACHE / "processes.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
