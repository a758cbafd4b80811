"""Per-rank profiler traces: hvd-analyze's whole ``report`` against HTA (HolisticTraceAnalysis) loading the
same traces and running its straggler and communication analyses, as whole processes, interleaved,
medians of several runs, on two sizes; and hvd-analyze alone on 8 ranks of 500 MB (bounded memory).

    python bench/rank_traces.py [--mb 10,40] [--big-mb 500] [--runs 3] [--hta /tmp/htavenv/bin/python]

The traces are generated here (cached in bench/.cache/ranks_<mb>mb/): 8 ranks of a GPU job as Kineto
writes them (its layout: an event over a few lines), each step with CPU operators, their kernel
launches, compute kernels on stream 7, host-to-device copies and NCCL allreduce kernels
(``ncclKernel_AllReduce_RING_LL_Sum_float``: HTA's straggler analysis keys on that prefix) on stream
20 whose durations hold each rank's wait; rank 5 is 30 ms late every step.

Per size and run, in this order: ``hvd-analyze report DIR -f json -o OUT`` (ingest on its process pool
and the analysis); HTA in a ``python -c`` process of its own environment (``pip install
holistictraceanalysis``: kept out of the project's, it pins its own pandas): ``TraceAnalysis(trace_dir=
DIR)``, ``get_potential_stragglers()``, ``get_comm_comp_overlap(visualize=False)``. Each process's wall
time and the peak RSS of its whole process tree (sampled every 20 ms: hvd-analyze's workers count).
Targets (issue 44): >= 10x faster than HTA and <= 0.3x its peak memory; 8 x 500 MB ranks in <= 1 GB.
Figures go to stdout and bench/.cache/rank_traces.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import CACHE

HVD = str(Path(sys.executable).with_name("hvd-analyze"))
RANKS = 8
LATE_RANK, LATE_US = 5, 30_000
STEP_US = 200_000
BYTES_PER_STEP = 38_000  # about, per rank (60 operators with their launches and kernels)


def _event(e: dict[str, Any]) -> str:
    """One event in Kineto's layout; values already formatted (numbers may be ``%d`` placeholders)."""
    args = e.pop("args", None)
    head = ", ".join(f'"{k}": {v}' for k, v in e.items())
    inner = "" if args is None else ", ".join(f'"{k}": {v}' for k, v in args.items())
    body = "" if args is None else ',\n    "args": {\n      ' + inner + "\n    }"
    return "  {\n    " + head + body + "\n  }"


def _launch(pid: int, args: dict[str, str]) -> dict[str, Any]:
    """A kernel launch on the CPU (``%d`` placeholders for its ts and ``args``)."""
    q = json.dumps
    return {
        "ph": q("X"),
        "cat": q("cuda_runtime"),
        "name": q("cudaLaunchKernel"),
        "pid": pid,
        "tid": pid,
        "ts": "%d",
        "dur": 10,
        "args": args,
    }


def _step_template(rank: int) -> tuple[str, int]:
    """The text of one step of ``rank`` with ``%d`` where the step's numbers go, and how many correlation
    ids a step uses: per step, the numbers are (t0 + offset) or (corr + offset), in order (:func:`write_rank`)."""
    pid = 1000 + rank
    q = json.dumps
    events = [
        {
            "ph": q("X"),
            "cat": q("user_annotation"),
            "name": '"ProfilerStep#%d"',
            "pid": pid,
            "tid": pid,
            "ts": "%d",
            "dur": STEP_US - 100,
            "args": {"External id": "%d"},
        },
    ]
    for op in range(60):
        events += [
            {
                "ph": q("X"),
                "cat": q("cpu_op"),
                "name": q(f"aten::op{op % 12}"),
                "pid": pid,
                "tid": pid,
                "ts": "%d",
                "dur": 900,
                "args": {"External id": "%d", "Ev Idx": "%d"},
            },
            _launch(pid, {"External id": "%d", "correlation": "%d"}),
            {
                "ph": q("X"),
                "cat": q("kernel"),
                "name": q(f"void compute_kernel_{op % 12}<float>(float*)"),
                "pid": 0,
                "tid": 7,
                "ts": "%d",
                "dur": 800,
                "args": {"External id": "%d", "correlation": "%d", "stream": 7, "device": 0},
            },
        ]
    events.append(
        {
            "ph": q("X"),
            "cat": q("gpu_memcpy"),
            "name": q("Memcpy HtoD (Pinned -> Device)"),
            "pid": 0,
            "tid": 7,
            "ts": "%d",
            "dur": 300,
            "args": {"correlation": "%d", "stream": 7},
        }
    )
    for _ in range(4):
        events += [
            _launch(pid, {"correlation": "%d"}),
            {
                "ph": q("X"),
                "cat": q("kernel"),
                "name": q("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"),
                "pid": 0,
                "tid": 20,
                "ts": "%d",
                "dur": "%d",
                "args": {"correlation": "%d", "stream": 20, "device": 0},
            },
        ]
    return ",\n".join(_event(e) for e in events), 61 + 4


def _step_numbers(rank: int, s: int, corr: int) -> tuple[int, ...]:
    """The numbers of :func:`_step_template`'s placeholders for step ``s`` (correlation ids from ``corr``)."""
    t0 = 1_000_000 + s * STEP_US
    late = LATE_US if rank == LATE_RANK else 0
    out: list[int] = [s, t0, corr]
    for op in range(60):
        t, c = t0 + 100 + op * 1_000, corr + op
        out += [t, c, c, t + 100, c, c, t + 200, c, c]
    out += [t0 + 150, corr + 60]
    for k in range(4):
        start, c = t0 + 70_000 + k * 20_000 + late, corr + 61 + k
        out += [start - 50, c, start, 40_000 - late + (rank * 37 + s * 11 + k * 5) % 900, c]
    return tuple(out)


def write_rank(path: Path, rank: int, steps: int) -> None:
    """One rank's trace in Kineto's layout (module docstring)."""
    template, per_step = _step_template(rank)
    with open(path, "w") as f:
        f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],\n')
        f.write(f'  "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {RANKS}}},\n')
        f.write(f'  "host_name": "node{rank // 4}",\n  "baseTimeNanoseconds": 1700000000000000000,\n')
        f.write('  "traceEvents": [\n')
        for s in range(steps):
            f.write(("" if s == 0 else ",\n") + template % _step_numbers(rank, s, 1 + s * per_step))
        f.write('\n],\n  "traceName": "bench"\n}\n')


def traces(mb: int) -> Path:
    folder = CACHE / f"ranks_{mb}mb"
    if not folder.exists():
        tmp = folder.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        steps = max(2, mb * 1_000_000 // BYTES_PER_STEP)
        for r in range(RANKS):
            write_rank(tmp / f"rank{r}.1.pt.trace.json", r, steps)
        tmp.rename(folder)
        print(
            f"generated {folder.name}: {RANKS} x {(folder / 'rank0.1.pt.trace.json').stat().st_size / 1e6:.0f} MB",
            flush=True,
        )
    return folder


def run(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and the peak RSS (MB) of ``cmd``'s process tree."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    top = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            tree = [top, *top.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    wall = time.perf_counter() - t
    out, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])} failed: {err[-2000:]}")
    return wall, peak / 1e6


def hta_cmd(python: str, folder: Path) -> list[str]:
    code = (
        "from hta.trace_analysis import TraceAnalysis\n"
        f"a = TraceAnalysis(trace_dir={str(folder)!r})\n"
        "print('stragglers', a.get_potential_stragglers())\n"
        "print(a.get_comm_comp_overlap(visualize=False))\n"
    )
    return [python, "-c", code]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", default="10,40", help="MB per rank of the side-by-side sizes")
    ap.add_argument("--big-mb", type=int, default=500, help="MB per rank of the bounded-memory run (0: none)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hta", default="/tmp/htavenv/bin/python", help="a Python with holistictraceanalysis")
    a = ap.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        for mb in (int(x) for x in a.mb.split(",")):
            folder = traces(mb)
            ours, theirs = [], []
            for _ in range(a.runs):
                ours.append(run([HVD, "report", str(folder), "-f", "json", "-o", str(out)]))
                named = [f["ranks"] for f in json.loads(out.read_text())["findings"] if f["code"] == "traces.straggler"]
                assert named == [[LATE_RANK]], named
                theirs.append(run(hta_cmd(a.hta, folder)))
            row = {
                "hvd_s": statistics.median(w for w, _ in ours),
                "hvd_mb": statistics.median(m for _, m in ours),
                "hta_s": statistics.median(w for w, _ in theirs),
                "hta_mb": statistics.median(m for _, m in theirs),
            }
            row["speedup"] = row["hta_s"] / row["hvd_s"]
            row["memory_ratio"] = row["hvd_mb"] / row["hta_mb"]
            results[f"{RANKS}x{mb}MB"] = row
            print(f"{RANKS} x {mb} MB: {json.dumps({k: round(v, 3) for k, v in row.items()})}", flush=True)
        if a.big_mb:
            folder = traces(a.big_mb)
            wall, peak = run([HVD, "report", str(folder), "-f", "json", "-o", str(out)])
            results[f"{RANKS}x{a.big_mb}MB_hvd_only"] = {"hvd_s": wall, "hvd_mb": peak}
            print(f"{RANKS} x {a.big_mb} MB, hvd-analyze alone: {wall:.1f} s, peak {peak:.0f} MB", flush=True)
    (CACHE / "rank_traces.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
