"""Run real Horovod scenarios on localhost and keep everything they leave behind.

    sample_traces/capture/build_horovod.sh            # once: Horovod 0.28.1 + torch CPU in a venv
    python -m sample_traces.capture [--venv DIR] [--out sample_traces/captured] [SCENARIO ...]
    python -m sample_traces.capture --repeat r2 [SCENARIO ...]   # into sample_traces/stability/<scenario>/r2/

Each scenario runs ``horovodrun --gloo -np N -H localhost:N`` with ``train.py`` and writes to
``OUT/<scenario>/``: the rank-0 ``timeline.json`` (gzipped when over 1 MB), ``stdout.txt``,
``stderr.txt``, ``command.sh`` (the exact command with its env), ``env.txt`` (exit code, wall
time, Horovod/torch versions), ``steps.csv`` (every rank's measured steps: ``rank,step,
step_time_s,start_epoch_us,end_epoch_us,sleep_s``), ``autotune.csv`` where the scenario
tunes, and ``EXPECTED.md`` (what the analyzer must find; ``tests/test_captured.py`` checks it).
The outputs are committed as they come out; nothing is edited afterwards.

``--pair NAME`` captures the two scenarios of a compare pair back to back into
``sample_traces/compare/NAME/{before,after}/`` (:mod:`sample_traces.capture.pairs`).

``--repeat TAG`` captures a scenario again into ``sample_traces/stability/<scenario>/<TAG>/`` with its
timeline always gzipped: the stability set (``tests/test_stability.py``), where every capture of a
scenario must give the same verdict as the first.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_VENV = Path.home() / ".cache" / "hvd-analyze" / "horovod-venv"
GZIP_OVER = 1 << 20


@dataclass(frozen=True)
class Scenario:
    np: int
    about: str
    expect: tuple[str, ...]  # finding codes, exactly
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    kill_after_s: float | None = None  # SIGKILL the whole job after this many seconds
    timeline: bool = True  # HOROVOD_TIMELINE=<out>/timeline.json (False: dynamic timeline from train.py)
    median_check: bool = True  # False where parameters change during the run (autotune)
    late: dict[int, str] = field(default_factory=dict)  # straggler rank -> when (every_step, from, episode, periodic)
    maybe: tuple[str, ...] = ()  # codes a capture may give or not, as its evidence allows (said in EXPECTED.md)


SCENARIOS: dict[str, Scenario] = {
    "healthy_np2": Scenario(2, "MLP, 2 ranks, defaults (fusion 64 MiB, cycle 1 ms, response cache on).", ()),
    "healthy_np4": Scenario(
        4, "CNN, 4 ranks on 2 cores (oversubscribed), defaults.", (), ("--model", "cnn", "--steps", "30")
    ),
    "straggler_cached": Scenario(
        2,
        "Rank 1 sleeps 100 ms before backward every step; response cache on (no steady-state ticks).",
        ("timeline.negotiation_wait",),
        ("--sleep-rank", "1", "--sleep-s", "0.1", "--steps", "30"),
    ),
    "straggler_nocache": Scenario(
        2,
        "Rank 1 sleeps 100 ms every step; HOROVOD_CACHE_CAPACITY=0, so every negotiation carries rank ticks.",
        ("timeline.straggler",),
        ("--sleep-rank", "1", "--sleep-s", "0.1", "--steps", "30"),
        {"HOROVOD_CACHE_CAPACITY": "0"},
        late={1: "every_step"},
    ),
    "fusion_off": Scenario(
        2,
        "CNN with HOROVOD_FUSION_THRESHOLD=0: one collective per gradient.",
        ("timeline.fusion_fragmented",),
        ("--model", "cnn"),
        {"HOROVOD_FUSION_THRESHOLD": "0"},
    ),
    "fusion_tiny": Scenario(
        2,
        "CNN with a 1 KiB fusion threshold: only the smallest gradients fuse, and every weight is over the threshold.",
        ("timeline.fusion_fragmented", "timeline.tensor_over_fusion_threshold"),
        ("--model", "cnn"),
        {"HOROVOD_FUSION_THRESHOLD": "1024"},
    ),
    "cycle_long": Scenario(
        2,
        "HOROVOD_CYCLE_TIME=40 ms with cycle markers, on a short MLP step.",
        ("timeline.cycle_time_high",),
        ("--batch", "8"),
        {"HOROVOD_CYCLE_TIME": "40", "HOROVOD_TIMELINE_MARK_CYCLES": "1"},
    ),
    "over_threshold": Scenario(
        2,
        "An MLP with two 32 MiB gradients and HOROVOD_FUSION_THRESHOLD=16 MiB: they always run alone while "
        "the other gradients fuse (a 20 ms cycle lets gradients ready together meet in one cycle). Gradients "
        "computed far apart still run in separate cycles, so fusion is fragmented too.",
        ("timeline.fusion_fragmented", "timeline.tensor_over_fusion_threshold"),
        ("--big-layer", "8192"),
        {"HOROVOD_FUSION_THRESHOLD": "16777216", "HOROVOD_CYCLE_TIME": "20"},
    ),
    "over_default": Scenario(
        2,
        "An MLP with two 147 MB gradients (a 36000-wide layer) and Horovod's default fusion threshold (128 MiB): "
        "nothing in the run sets it, so only Horovod's default says they are over it. The huge layers' backward "
        "keeps the other gradients far apart, so even a 5 ms cycle fuses few of them: fusion is fragmented too.",
        ("timeline.fusion_fragmented", "timeline.tensor_over_fusion_threshold"),
        ("--big-layer", "36000", "--steps", "20", "--batch", "8"),
        {"HOROVOD_CYCLE_TIME": "5"},
    ),
    # what real jobs have and the set lacked (issue 22)
    "cycle_5ms": Scenario(
        2,
        "HOROVOD_CYCLE_TIME=5 without cycle markers: the cycle time is reported within 25% or as unknown, "
        "and no advice rests on an unknown one. Where the coordinator's responses show the cycle (a floor they "
        "are never closer than), it is a fifth of the ~20 ms step: timeline.cycle_time_high.",
        (),
        ("--batch", "8"),
        {"HOROVOD_CYCLE_TIME": "5"},
        maybe=("timeline.cycle_time_high",),
    ),
    "cycle_20ms": Scenario(
        2,
        "HOROVOD_CYCLE_TIME=20 without cycle markers: the coordinator's responses are never closer than ~16 ms, "
        "which shows the cycle (reported within 25%), half of the ~35 ms step: timeline.cycle_time_high.",
        ("timeline.cycle_time_high",),
        ("--batch", "8"),
        {"HOROVOD_CYCLE_TIME": "20"},
    ),
    "fusion_2mib": Scenario(
        2,
        "HOROVOD_FUSION_THRESHOLD=2 MiB and two 4 MiB gradients (an extra 1024-wide layer): they run alone, "
        "and the gradients computed apart go out in separate collectives (fusion fragmented).",
        ("timeline.fusion_fragmented", "timeline.tensor_over_fusion_threshold"),
        ("--big-layer", "1024"),
        {"HOROVOD_FUSION_THRESHOLD": "2097152"},
    ),
    "straggler_partial_np4": Scenario(
        4,
        "4 ranks; rank 2 sleeps 100 ms a step from step 20 of 40 on (response cache off): late half the run.",
        ("timeline.straggler",),
        ("--steps", "40", "--sleep-rank", "2", "--sleep-s", "0.1", "--sleep-from", "20"),
        {"HOROVOD_CACHE_CAPACITY": "0"},
        late={2: "from"},
    ),
    "autotune_finished": Scenario(
        2,
        "HOROVOD_AUTOTUNE=1 with a short tuning (1 warm-up sample, 5 steps a sample, 5 Bayesian samples) "
        "that finishes: its best set is the advice.",
        ("horovod.autotune_result",),
        ("--steps", "1200", "--batch", "8"),
        {
            "HOROVOD_AUTOTUNE": "1",
            "HOROVOD_AUTOTUNE_LOG": "{out}/autotune.csv",
            "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1",
            "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "5",
            "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "5",
        },
        median_check=False,
    ),
    # noisy-host straggler scenarios (issue 43): 4 ranks on 2 cores, response cache off, so every
    # negotiation carries every rank's ready tick and the host's CPU contention jitters them
    "noisy_healthy_np4": Scenario(
        4,
        "4 ranks on 2 cores, response cache off, identical work on every rank: the non-coordinator ranks' "
        "ready ticks lag rank 0's by the CPU contention alone. No rank may be named.",
        (),
        ("--steps", "50"),
        {"HOROVOD_CACHE_CAPACITY": "0"},
    ),
    "straggler_intermittent_np4": Scenario(
        4,
        "4 ranks on 2 cores, response cache off; rank 3 sleeps 150 ms before backward on every 4th step "
        "(steps 0, 4, 8, ...): an intermittent straggler, named with how often it is late.",
        ("timeline.straggler",),
        ("--steps", "60", "--sleep-rank", "3", "--sleep-s", "0.15", "--sleep-every", "4"),
        {"HOROVOD_CACHE_CAPACITY": "0"},
        late={3: "periodic"},
    ),
    "straggler_recovers_np4": Scenario(
        4,
        "4 ranks on 2 cores, response cache off; rank 1 sleeps 100 ms a step on steps 15-34 of 60 only: "
        "a straggler that recovers, named with its steps.",
        ("timeline.straggler",),
        ("--steps", "60", "--sleep-rank", "1", "--sleep-s", "0.1", "--sleep-from", "15", "--sleep-to", "35"),
        {"HOROVOD_CACHE_CAPACITY": "0"},
        late={1: "episode"},
    ),
    "slowdown_all_np4": Scenario(
        4,
        "4 ranks on 2 cores, response cache off; every rank sleeps 60 ms a step from step 30 of 60: a "
        "whole-job slowdown, which blames no rank.",
        ("timeline.slowdown",),
        ("--steps", "60", "--sleep-all", "--sleep-s", "0.06", "--sleep-from", "30"),
        {"HOROVOD_CACHE_CAPACITY": "0"},
    ),
    # the "after" halves of the compare pairs (sample_traces/compare/): a finding's fix applied
    "straggler_fixed": Scenario(
        2,
        "straggler_nocache with its slow rank fixed: no rank sleeps; HOROVOD_CACHE_CAPACITY=0 as before.",
        (),
        ("--steps", "30"),
        {"HOROVOD_CACHE_CAPACITY": "0"},
    ),
    "fusion_default": Scenario(
        2,
        "fusion_tiny and fusion_off with the fusion threshold back at Horovod's default: CNN, 2 ranks, defaults.",
        (),
        ("--model", "cnn"),
    ),
    "cycle_default": Scenario(
        2,
        "cycle_long with the cycle time back at Horovod's default (1 ms), cycle markers on.",
        (),
        ("--batch", "8"),
        {"HOROVOD_TIMELINE_MARK_CYCLES": "1"},
    ),
    "collectives_mix": Scenario(2, "allgather, broadcast and alltoall after every step.", (), ("--extra-collectives",)),
    "killed_sigkill": Scenario(
        2,
        "The whole job is killed with SIGKILL in the middle of training.",
        ("timeline.truncated",),
        ("--steps", "100000"),
        kill_after_s=25.0,
    ),
    "dynamic_timeline": Scenario(
        2,
        "HOROVOD_TIMELINE=DYNAMIC; train.py calls hvd.start_timeline() after 5 steps and stops it at the end.",
        (),
        ("--dynamic-timeline", "{out}/timeline.json", "--batch", "256"),
        {"HOROVOD_TIMELINE": "DYNAMIC"},
        timeline=False,
    ),
    "autotune": Scenario(
        2,
        "HOROVOD_AUTOTUNE=1 with HOROVOD_AUTOTUNE_LOG: the autotuner's samples and its best set.",
        ("horovod.autotune_result",),
        ("--steps", "400", "--batch", "8"),
        {"HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": "{out}/autotune.csv"},
        median_check=False,
    ),
}


def expected_md(name: str, sc: Scenario) -> str:
    run_line = (
        f"Real Horovod run: `horovodrun --gloo -np {sc.np}` on localhost "
        "(see command.sh, env.txt; steps.csv is every rank's own timing)."
    )
    lines = [f"# {name}", "", sc.about, "", run_line, "", "The analyzer must find:"]
    besides = (
        "besides the start-up findings (`timeline.startup_skew`, `timeline.init_overhead`, info) and "
        "`timeline.truncated` for the E records Horovod 0.28.1 loses at a clean exit (its writer does not "
        "drain its queue at shutdown)"
        if "timeline.truncated" not in sc.expect
        else "besides the start-up findings (`timeline.startup_skew`, `timeline.init_overhead`, info)"
    )
    lines.append(
        f"- exactly these findings {besides}: " + ", ".join(f"`{c}`" for c in sc.expect) + "."
        if sc.expect
        else f"- no finding {besides}."
    )
    if sc.maybe:
        lines.append(
            "- and possibly " + ", ".join(f"`{c}`" for c in sc.maybe) + ", where the capture's evidence shows it."
        )
    words = {
        "every_step": "every step",
        "from": "from its first late step on",
        "episode": "in one stretch, then recovered",
        "periodic": "at a regular period",
    }
    for rank, when in sc.late.items():
        lines.append(
            f"- `timeline.straggler` naming rank {rank}, late {words[when]}, with an impact within 25% of "
            "the injected delay per steady step (steps.csv's sleep_s)."
        )
    if sc.median_check:
        lines.append(
            "- a median step time within 10% of steps.csv's (steps >= 1: the interval between the ends of "
            "consecutive steps on the rank that ended last)."
        )
    return "\n".join(lines) + "\n"


def run(name: str, sc: Scenario, venv: Path, out_root: Path, tag: str | None = None, into: Path | None = None) -> None:
    out = into or (out_root / name / tag if tag else out_root / name)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = out / ".work"
    work.mkdir()
    env = {k: v.replace("{out}", str(out)) for k, v in sc.env.items()}
    if sc.timeline:
        env["HOROVOD_TIMELINE"] = str(out / "timeline.json")
    args = [a.replace("{out}", str(out)) for a in sc.args]
    cmd = [
        str(venv / "bin" / "horovodrun"),
        "--gloo",
        "-np",
        str(sc.np),
        "-H",
        f"localhost:{sc.np}",
        str(venv / "bin" / "python"),
        str(HERE / "train.py"),
        *args,
        "--out",
        str(work),
    ]
    full_env = {**os.environ, **env, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    (out / "command.sh").write_text(
        " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items())) + " " + shlex.join(cmd) + "\n"
    )
    start = time.time()
    with open(out / "stdout.txt", "wb") as so, open(out / "stderr.txt", "wb") as se:
        proc = subprocess.Popen(cmd, env=full_env, stdout=so, stderr=se, start_new_session=True)
        try:
            code = proc.wait(timeout=sc.kill_after_s or 900)
            killed = None
        except subprocess.TimeoutExpired:
            killed = time.time()
            os.killpg(proc.pid, signal.SIGKILL)
            # horovodrun starts each worker in its own session: kill them by their unique --out path
            subprocess.run(["pkill", "-KILL", "-f", str(work)], check=False)
            code = proc.wait()
    wall = time.time() - start
    _steps(work, out / "steps.csv")
    shutil.rmtree(work)
    for f in out.glob("*.json"):
        if f.stat().st_size > (0 if tag else GZIP_OVER):  # a repeat keeps the stability set small
            with open(f, "rb") as src, gzip.GzipFile(f.with_suffix(".json.gz"), "wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
            f.unlink()
    probe = "import horovod, torch; print(horovod.__version__, torch.__version__)"
    versions = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=False
    ).stdout.split()
    (out / "env.txt").write_text(
        "\n".join(
            [
                f"scenario={name}",
                f"np={sc.np}",
                *(f"{k}={v}" for k, v in sorted(env.items())),
                f"exit_code={code}",
                f"wall_s={wall:.1f}",
                f"horovod={versions[0] if versions else '?'}",
                f"torch={versions[1] if len(versions) > 1 else '?'}",
                f"python={sys.version.split()[0]}",
                f"sigkill_epoch_us={int(killed * 1e6)}" if killed else "sigkill_epoch_us=",
                "",
            ]
        )
    )
    (out / "EXPECTED.md").write_text(expected_md(name, sc))
    print(f"{name}: exit {code}, {wall:.0f} s", flush=True)


def _steps(work: Path, dest: Path) -> None:
    rows = []
    for part in sorted(work.glob("steps_rank*.csv")):
        with open(part, newline="") as f:
            rows += [r for r in csv.reader(f) if r]
    rows.sort(key=lambda r: (int(r[1]), int(r[0])))
    with open(dest, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rank", "step", "step_time_s", "start_epoch_us", "end_epoch_us", "sleep_s"])
        w.writerows(rows)


def capture_pair(name: str, venv: Path) -> None:
    """Both scenarios of the compare pair ``name``, one right after the other."""
    from sample_traces.capture.pairs import PAIRS
    from sample_traces.capture.pairs import expected_md as pair_md

    pair = PAIRS[name]
    folder = HERE.parent / "compare" / name
    for side, scenario in (("before", pair.before), ("after", pair.after)):
        run(scenario, SCENARIOS[scenario], venv, folder, into=folder / side)
    (folder / "EXPECTED.md").write_text(pair_md(name, pair))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--out", type=Path, default=HERE.parent / "captured")
    ap.add_argument("--repeat", metavar="TAG", help="capture again into sample_traces/stability/<scenario>/TAG/")
    ap.add_argument(
        "--pair", metavar="NAME", help="capture a compare pair back to back into sample_traces/compare/NAME/"
    )
    ap.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    a = ap.parse_args()
    if not (a.venv / "bin" / "horovodrun").exists():
        sys.exit(f"{a.venv}: no Horovod there; run sample_traces/capture/build_horovod.sh {a.venv} first")
    if a.pair:
        capture_pair(a.pair, a.venv)
        return
    out = HERE.parent / "stability" if a.repeat else a.out
    for name in a.scenarios:
        run(name, SCENARIOS[name], a.venv, out, a.repeat)


if __name__ == "__main__":
    main()
