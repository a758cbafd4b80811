"""Analysis memory on huge timelines (issue #7): ``report``'s peak RSS within a memory budget vs whole.

    python bench/analysis.py [--mb 1024 5120 20480] [--budget 4G]

Each timeline of bench/common.py's generator (64 ranks, ticks on every negotiation: the worst case,
~1 GB of model per GB of file) is ingested once into ``bench/.cache/<name>.store``. Then, each in a
fresh process, the whole analysis (``analyze`` + the JSON report) runs twice on it: with an unlimited
budget (the whole model in memory; skipped where its estimate exceeds 3/4 of this machine's memory)
and with ``--budget`` (what ``--memory-budget`` sets). Printed per size: wall time, peak RSS, the
steps the span-level analyses read, and the budgeted run's peak as a ratio of the whole run's.
Target: the budgeted peak stays within the budget (which counts the interpreter's own ~0.45 GB),
whatever the timeline's size, and its step statistics equal the whole run's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import big_timeline

UNLIMITED = 1 << 60


def child(store_dir: str, budget: int) -> None:
    from analyzer.config import AnalysisConfig
    from analyzer.render import RENDERERS
    from analyzer.report.assembly import analyze
    from analyzer.store.run_store import RunStore

    t = time.perf_counter()
    rep = analyze(RunStore.open(store_dir), config=AnalysisConfig(memory_budget=budget))
    RENDERERS["json"].render(rep)
    wall = time.perf_counter() - t
    tl = rep.timelines[0]
    print(
        json.dumps(
            {
                "seconds": wall,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
                "window_steps": tl["window"]["steps"] if tl["window"] else None,
                "steps": tl["steps"],
                "findings": sorted(f.code for f in rep.findings),
            }
        )
    )


def measure(store: Path, budget: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(store), str(budget)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def store_for(path: Path) -> Path:
    store = path.with_suffix(".store")
    if not (store / "manifest.json").exists():
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "analyzer", "ingest", str(path), "-o", str(store), "-q"], check=True)
        print(f"  ingested {path.name} in {time.perf_counter() - t:.0f} s", flush=True)
    return store


def main() -> None:
    from analyzer.cli.main import _size
    from analyzer.store.run_store import RunStore
    from analyzer.timeline.load import model_bytes

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, nargs="+", default=[1024, 5120, 20480])
    ap.add_argument("--budget", default="4G")
    args = ap.parse_args()
    budget = _size(args.budget, "--budget")
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    print(
        f"machine: {os.cpu_count()} cores, {ram / 2**30:.0f} GiB; {time.strftime('%Y-%m-%d')}; "
        f"budget {budget / 2**30:.1f} GiB"
    )
    for mb in args.mb:
        path = big_timeline(mb)
        store = store_for(path)
        need = model_bytes(RunStore.open(store).inputs[0])
        print(f"\n{path.name}: {path.stat().st_size / 1e9:.1f} GB, whole model ~{need / 2**30:.1f} GiB", flush=True)
        runs = {}
        for label, b in (("whole", UNLIMITED), ("budget", budget)):
            if label == "whole" and need > 0.75 * ram:
                print(
                    f"  {label:7s} skipped: would need ~{need / 2**30:.0f} GiB of this machine's {ram / 2**30:.0f} GiB",
                    flush=True,
                )
                continue
            runs[label] = r = measure(store, b)
            window = f"span-level: first {r['window_steps']:,} steps" if r["window_steps"] else "span-level: all steps"
            print(
                f"  {label:7s} {r['seconds']:7.1f} s  peak RSS {r['peak_rss_mb']:7.0f} MB  "
                f"{r['steps']['count']:,} steps (median {r['steps']['median_s'] * 1e3:.2f} ms); {window}",
                flush=True,
            )
        if len(runs) == 2:
            w, b_ = runs["whole"], runs["budget"]
            print(
                f"  budget vs whole: {b_['peak_rss_mb'] / w['peak_rss_mb']:.2f}x the peak, "
                f"{b_['seconds'] / w['seconds']:.2f}x the time; same step statistics: {w['steps'] == b_['steps']}; "
                f"same findings: {w['findings'] == b_['findings']}"
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
