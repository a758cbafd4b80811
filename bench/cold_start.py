"""First use after ``pip install``: a fresh virtual environment per run, the package installed from
this checkout (its kernels compiled by the install), then whole ``hvd-analyze`` processes.

    python bench/cold_start.py [--installs 3]

Per install: the install's own time, the first ``report`` of sample_traces/captured/straggler_nocache
right after it (nothing cached anywhere yet), then three warm ``report`` runs and ``--help``;
medians over the installs. Targets (issue 23): first report <= 1.5 s, warm <= 1.0 s, --help <= 0.3 s.
pip uses its wheel cache for the dependencies, as a user's second environment would.
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

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_traces" / "captured" / "straggler_nocache"


#: as a user's Python runs: with bytecode caches (a sandbox may turn them off)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], cwd: Path | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=ENV)
    return time.perf_counter() - t


def one_install(base: Path) -> dict[str, float]:
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip, hvd = str(venv / "bin" / "pip"), str(venv / "bin" / "hvd-analyze")
    src = base / "src"  # a copy without build outputs: the install compiles the kernels itself
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", "build", "*.so", "*.c", ".git", "bench", "tests"))
    install = timed([pip, "install", "-q", str(src)])
    report = [hvd, "report", str(SAMPLE), "-f", "json", "-o", os.devnull]
    first = timed(report, cwd=base)
    warm = statistics.median(timed(report, cwd=base) for _ in range(3))
    help_s = statistics.median(timed([hvd, "--help"], cwd=base) for _ in range(3))
    return {"install_s": install, "first_report_s": first, "warm_report_s": warm, "help_s": help_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--installs", type=int, default=3)
    a = ap.parse_args()
    runs = []
    for i in range(a.installs):
        with tempfile.TemporaryDirectory(prefix="hvd-cold-") as d:
            r = one_install(Path(d))
            runs.append(r)
            print(f"install {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in r.items()), flush=True)
    medians = {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]}
    print("medians: " + json.dumps(medians))


if __name__ == "__main__":
    main()
