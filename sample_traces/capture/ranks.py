"""Capture real jobs' per-rank profiler traces: PyTorch DDP (Gloo) and Horovod, on CPU, on localhost.

    python -m sample_traces.capture.ranks [--venv DIR] [--repeat TAG] [SCENARIO ...]

Each scenario runs :mod:`sample_traces.capture.ddp_train` on 4 ranks (``torch.distributed.run`` for DDP,
``horovodrun --gloo`` for Horovod) and writes ``sample_traces/ranks/<scenario>/<TAG>/`` (``--repeat TAG``,
``r1`` by default; every scenario is captured as ``r1``, ``r2`` and ``r3``): ``traces/`` (each rank's ``<worker>.<time_ns>.pt.trace.json``,
gzipped), ``steps.csv`` (every rank's own timing of each profiled step: ``rank,step,step_time_s,
start_epoch_us,end_epoch_us,sleep_s``), ``command.sh``, ``env.txt`` and ``EXPECTED.md``; Horovod
scenarios also the rank-0 ``timeline.json.gz``. ``tests/test_rank_traces.py`` checks every capture.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent / "ranks"
DEFAULT_VENV = Path.home() / ".cache" / "hvd-analyze" / "horovod-venv"
NP = 4


@dataclass(frozen=True)
class RankScenario:
    about: str
    late: tuple[int, ...]  # the ranks the analysis must name (and only them)
    when: str = ""  # their pattern: every_step, periodic, ...
    cause: str = ""  # compute | data: what the traces must give as the cause
    args: tuple[str, ...] = ()
    horovod: bool = False
    env: dict[str, str] = field(default_factory=dict)
    drop: tuple[int, ...] = ()  # ranks whose trace is left out (a partial set)
    slowdown: bool = False  # every rank slower: timeline-free whole-job slowdown, nobody named


_STEPS = ("--steps", "20")
SCENARIOS: dict[str, RankScenario] = {
    "ddp_healthy": RankScenario("DDP, Gloo, 4 ranks on 2 cores, nothing injected.", (), args=_STEPS),
    "ddp_straggler": RankScenario(
        "DDP: rank 2 sleeps 80 ms in its forward pass every step.",
        (2,),
        "every_step",
        "compute",
        ("--sleep-rank", "2", "--sleep-s", "0.08", *_STEPS),
    ),
    "ddp_intermittent": RankScenario(
        "DDP: rank 1 sleeps 150 ms in its forward pass on every 4th step, over 32 profiled steps (8 late: with "
        "fewer, 1 late step in 4 is at the edge of what this oversubscribed host's noise explains).",
        (1,),
        "periodic",
        "compute",
        ("--sleep-rank", "1", "--sleep-s", "0.15", "--sleep-every", "4", "--steps", "32"),
    ),
    "ddp_slowdown": RankScenario(
        "DDP: every rank sleeps 80 ms every step (a whole-job slowdown).",
        (),
        args=("--sleep-all", "--sleep-s", "0.08", *_STEPS),
        slowdown=True,
    ),
    "ddp_dataloader": RankScenario(
        "DDP: rank 3 spends 80 ms more loading its batch every step (inside enumerate(DataLoader)).",
        (3,),
        "every_step",
        "data",
        ("--sleep-rank", "3", "--sleep-s", "0.08", "--sleep-in", "data", "--worker-names", *_STEPS),
    ),
    "ddp_imbalance": RankScenario(
        "DDP: rank 1 computes an 8x larger batch than its peers (a real compute imbalance, no sleep).",
        (1,),
        "every_step",
        "compute",
        ("--imbalance-rank", "1", "--imbalance-x", "8", "--batch", "256", "--width", "1024", *_STEPS),
    ),
    "ddp_partial": RankScenario(
        "DDP: rank 2 sleeps 80 ms every step; rank 3's trace is left out (a partial set of ranks).",
        (2,),
        "every_step",
        "compute",
        ("--sleep-rank", "2", "--sleep-s", "0.08", *_STEPS),
        drop=(3,),
    ),
    "hvd_cached_straggler": RankScenario(
        "Horovod 0.28.1 (Gloo), response cache on (the default): rank 2 sleeps 80 ms every step. The "
        "timeline cannot name it; the per-rank traces do.",
        (2,),
        "every_step",
        "compute",
        ("--horovod", "--sleep-rank", "2", "--sleep-s", "0.08", "--worker-names", *_STEPS),
        horovod=True,
    ),
}


def run(name: str, sc: RankScenario, venv: Path, tag: str) -> Path:
    dest = ROOT / name / tag
    if dest.exists():
        shutil.rmtree(dest)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"hvd-ranks-{name}-{tag}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    script = str(HERE / "ddp_train.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", **sc.env}
    if sc.horovod:
        env["HOROVOD_TIMELINE"] = str(work / "timeline.json")
        cmd = [str(venv / "bin" / "horovodrun"), "--gloo", "-np", str(NP), "-H", f"localhost:{NP}"]
        cmd += [str(venv / "bin" / "python"), script]
    else:
        cmd = [str(venv / "bin" / "python"), "-m", "torch.distributed.run", "--nproc_per_node", str(NP)]
        cmd += ["--master_port", str(29500 + os.getpid() % 400), script]
    cmd += [*sc.args, "--out", str(work)]
    t0 = time.time()
    done = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=600)
    wall = time.time() - t0
    if done.returncode:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"{name}: the job failed (exit {done.returncode})")
    (dest / "traces").mkdir(parents=True)
    for trace in sorted((work / "traces").glob("*.pt.trace.json")):
        if _rank_of(trace) in sc.drop:
            continue
        with open(trace, "rb") as src, gzip.open(dest / "traces" / (trace.name + ".gz"), "wb", compresslevel=9) as out:
            shutil.copyfileobj(src, out)
    if sc.horovod:
        with (
            open(work / "timeline.json", "rb") as src,
            gzip.open(dest / "timeline.json.gz", "wb", compresslevel=9) as out,
        ):
            shutil.copyfileobj(src, out)
    rows = []
    for f in sorted(work.glob("steps_rank*.csv")):
        rows += list(csv.reader(open(f)))
    with open(dest / "steps.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("rank", "step", "step_time_s", "start_epoch_us", "end_epoch_us", "sleep_s"))
        w.writerows(sorted(rows, key=lambda r: (int(r[0]), int(r[1]))))
    (dest / "command.sh").write_text(
        " ".join(f"{k}={shlex.quote(v)}" for k, v in sc.env.items()) + " " + shlex.join(cmd) + "\n"
    )
    (dest / "env.txt").write_text(f"exit={done.returncode}\nwall_s={wall:.1f}\n{_versions(venv)}")
    (dest / "EXPECTED.md").write_text(expected_md(name, sc))
    shutil.rmtree(work, ignore_errors=True)
    return dest


def _rank_of(trace: Path) -> int | None:
    import json

    with open(trace, "rb") as f:
        head = f.read(1 << 16).decode(errors="replace")
    at = head.find('"distributedInfo"')
    if at < 0:
        return None
    line = head[at:].split("\n", 1)[0].rstrip().rstrip(",")
    try:
        return int(json.loads("{" + line + "}")["distributedInfo"]["rank"])
    except (ValueError, KeyError):
        return None


def _versions(venv: Path) -> str:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import torch; print('torch=' + torch.__version__)"],
        capture_output=True,
        text=True,
    ).stdout
    return out


def expected_md(name: str, sc: RankScenario) -> str:
    who = (
        "no rank named (a whole-job slowdown)"
        if sc.slowdown
        else "no rank named"
        if not sc.late
        else f"rank(s) {', '.join(map(str, sc.late))} named, and only them, late {sc.when}, cause {sc.cause}"
    )
    lines = [
        f"# {name}",
        "",
        sc.about,
        "",
        f"Real run on localhost, {NP} ranks, torch.profiler traces of every rank (see command.sh, env.txt; "
        "steps.csv is every rank's own timing).",
        "",
        "The analyzer must find:",
        f"- from the per-rank traces: {who};",
        "- every rank's median step time within 5% of steps.csv's.",
    ]
    if sc.drop:
        lines.insert(-1, f"- the missing rank(s) {', '.join(map(str, sc.drop))} named as missing;")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*")
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--repeat", default="r1", help="the capture's folder: <scenario>/<TAG>/ (r1, r2, r3)")
    a = ap.parse_args()
    for name in a.scenarios or list(SCENARIOS):
        print(f"{name} ...", flush=True)
        print(f"  -> {run(name, SCENARIOS[name], a.venv, a.repeat)}", flush=True)


if __name__ == "__main__":
    main()
