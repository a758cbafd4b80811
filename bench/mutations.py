"""Mutations of real inputs: no internal error, no run over 30 s, none over 1 GB (issue 46).

    python bench/mutations.py [--n 1000] [--jobs 2] [--seed 46]

Each mutation is one whole ``hvd-analyze report`` process (start-up included) on one mutated copy of
a real input, or on a run store with one flipped bit; its wall time and peak resident memory come
from ``wait4``. Exit 0 (a report) and 2 (a message naming the damage) are answers; exit 3 (an
internal error), a signal, more than 30 s or more than 1 GB are failures: each is printed, and its
input kept under ``bench/.cache/mutations/failed``.

Sources, read where they are (never copied into the project): the project's captured timelines and
NCCL logs, and when ``../shared/corpus`` is there, its NCCL logs and its Horovod timelines under
8 MB. Mutations of a file: 1, 2 or 8 random bytes overwritten; one number replaced by an
out-of-range one (2^31, 2^63, -1, 10^30, ...); a line deleted, doubled or cut; the file cut at a
random byte; one line repeated 10,000 times; any of these gzipped. Stores: a bit of a Parquet
part flipped.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
FAILED = ROOT / "bench" / ".cache" / "mutations" / "failed"
LIMIT_S, LIMIT_BYTES, KILL_S = 30.0, 1 << 30, 120.0
DATA_LIMIT = 3 << 30  # a runaway allocation fails its run (exit 3), never the box
HOSTILE_NUMBERS = [b"2147483648", b"9223372036854775807", b"18446744073709551616", b"-1", b"1" + b"0" * 30, b"0"]
NUMBER = re.compile(rb"\d+")
SCRIPT = "import sys; from analyzer.cli import main; sys.argv[0] = 'hvd-analyze'; main()"


def sources() -> dict[str, list[Path]]:
    """The real files mutated, by kind."""
    logs = sorted((ROOT / "sample_traces").rglob("*.log"))
    timelines = sorted((ROOT / "sample_traces" / "captured").glob("*/timeline.json*"))
    if CORPUS.is_dir():
        logs += sorted(p for d in sorted(CORPUS.glob("nccl*")) for p in d.glob("*.log"))
        timelines += sorted(
            p
            for pattern in ("horovod-public/*.json", "horovod-cpu*/*/timeline.json*")
            for p in CORPUS.glob(pattern)
            if p.stat().st_size < 8 << 20
        )
    return {"log": logs, "timeline": timelines}


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """``data`` with one mutation, and its name."""
    buf = bytearray(data)
    how = rng.choice(["bytes", "bytes", "number", "number", "line", "cut", "repeat"])
    if how == "bytes" and buf:
        k = rng.choice((1, 2, 8))
        for _ in range(k):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        return bytes(buf), f"{k} byte(s)"
    if how == "number" and (numbers := list(NUMBER.finditer(data))):
        m = rng.choice(numbers)
        return data[: m.start()] + rng.choice(HOSTILE_NUMBERS) + data[m.end() :], "number out of range"
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    if how == "line":
        what = rng.choice(("deleted", "doubled", "cut"))
        if what == "deleted":
            del lines[i]
        elif what == "doubled":
            lines.insert(i, lines[i])
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        return b"\n".join(lines), f"line {what}"
    if how == "repeat":  # up to 10,000 times, and 16 MB (a glued timeline is one line of megabytes)
        k = max(2, min(10_000, (16 << 20) // (len(lines[i]) + 1)))
        return b"\n".join([*lines[:i], *[lines[i]] * k, *lines[i:]]), f"line repeated {k:,} times"
    return data[: rng.randrange(len(data) + 1)], "cut"


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: str
    source: str
    mutation: str
    code: int  # exit status; -N: killed by signal N
    seconds: float
    peak_bytes: int
    tail: str

    @property
    def failed(self) -> bool:
        return self.code not in (0, 2) or self.seconds > LIMIT_S or self.peak_bytes > LIMIT_BYTES


def report(target: Path, kind: str, source: Path, mutation: str) -> Outcome:
    """One ``hvd-analyze report`` process on ``target``: its exit, time and peak memory (measured by
    ``/usr/bin/time``: a child forked from this harness would inherit its high-water mark)."""
    peak = target.with_name(target.name + ".peak")
    began = time.monotonic()
    command = ["/usr/bin/time", "-q", "-f", "%M", "-o", str(peak), sys.executable, "-c", SCRIPT, "report", str(target)]
    proc = subprocess.Popen(
        ["sh", "-c", f"ulimit -d {DATA_LIMIT >> 10}; exec " + " ".join(shlex.quote(c) for c in command)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the killer ends the report with its /usr/bin/time
    )
    killer = _Killer(proc, KILL_S)
    _, err = proc.communicate()
    killer.cancel()
    seconds = time.monotonic() - began
    kib = peak.read_text().split()[-1] if peak.exists() else ""
    peak.unlink(missing_ok=True)
    code = -signal.SIGKILL if killer.fired else proc.returncode
    tail = err.decode(errors="replace")[-400:]
    return Outcome(kind, str(source), mutation, code, seconds, int(kib) * 1024 if kib.isdigit() else 0, tail)


class _Killer:
    """Kills a process group still running after ``seconds`` (counted as a run over the limit)."""

    def __init__(self, proc: subprocess.Popen[bytes], seconds: float) -> None:
        self.fired = False
        self._pid = proc.pid
        self._timer = threading.Timer(seconds, self._kill)
        self._timer.start()

    def _kill(self) -> None:
        self.fired = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._pid, signal.SIGKILL)

    def cancel(self) -> None:
        self._timer.cancel()


def file_case(i: int, kind: str, source: Path, rng: random.Random, work: Path) -> Outcome:
    raw = source.read_bytes()
    data = gzip.decompress(raw) if source.suffix == ".gz" else raw
    data, what = mutate(data, rng)
    zipped = rng.random() < 0.2
    suffix = {"log": ".log", "timeline": ".json"}[kind] + (".gz" if zipped else "")
    target = work / f"m{i}{suffix}"
    target.write_bytes(gzip.compress(data, 1) if zipped else data)
    out = report(target, kind, source, what + (", gzipped" if zipped else ""))
    if out.failed:
        FAILED.mkdir(parents=True, exist_ok=True)
        shutil.copy(target, FAILED / target.name)
    target.unlink()
    return out


def store_case(i: int, base: Path, rng: random.Random, work: Path) -> Outcome:
    store = work / f"s{i}"
    shutil.copytree(base, store)
    part = rng.choice(sorted(store.rglob("*.parquet")))
    buf = bytearray(part.read_bytes())
    at = rng.randrange(len(buf))
    buf[at] ^= 1 << rng.randrange(8)
    part.write_bytes(bytes(buf))
    out = report(store, "store", part.relative_to(store), f"bit flipped at byte {at}")
    if out.failed:
        FAILED.mkdir(parents=True, exist_ok=True)
        shutil.copytree(store, FAILED / store.name, dirs_exist_ok=True)
    shutil.rmtree(store)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="mutations in all (default 1000)")
    ap.add_argument("--jobs", type=int, default=2, help="processes at a time (default 2)")
    ap.add_argument("--seed", type=int, default=46)
    args = ap.parse_args()
    found = sources()
    print(f"sources: {len(found['log'])} logs, {len(found['timeline'])} timelines", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = work / "base"
        run = ROOT / "sample_traces" / "captured" / "straggler_nocache"
        subprocess.run([sys.executable, "-c", SCRIPT, "ingest", "-q", str(run), "-o", str(base)], cwd=ROOT, check=True)
        plans = []
        rng = random.Random(args.seed)
        for i in range(args.n):
            kind = rng.choices(["log", "timeline", "store"], weights=(45, 45, 10))[0]
            seed = rng.randrange(1 << 30)
            plans.append((i, kind, rng.choice(found[kind]) if kind != "store" else None, seed))

        def run_one(plan: tuple[int, str, Path | None, int]) -> Outcome:
            i, kind, source, seed = plan
            r = random.Random(seed)
            return store_case(i, base, r, work) if source is None else file_case(i, kind, source, r, work)

        began = time.monotonic()
        outcomes: list[Outcome] = []
        with ThreadPoolExecutor(args.jobs) as pool:
            for out in pool.map(run_one, plans):
                outcomes.append(out)
                if out.failed:
                    print(
                        f"FAILED {out.kind} {out.source} ({out.mutation}): exit {out.code}, {out.seconds:.1f} s, "
                        f"{out.peak_bytes / 1e6:.0f} MB\n  {out.tail.strip()[-300:]}",
                        file=sys.stderr,
                    )
                if len(outcomes) % 100 == 0:
                    print(f"{len(outcomes)} done, {time.monotonic() - began:.0f} s", file=sys.stderr)
    summary = {
        "mutations": len(outcomes),
        "by_kind": dict(Counter(o.kind for o in outcomes)),
        "exit_codes": {str(k): v for k, v in sorted(Counter(o.code for o in outcomes).items())},
        "failed": sum(o.failed for o in outcomes),
        "over_30_s": sum(o.seconds > LIMIT_S for o in outcomes),
        "over_1_gb": sum(o.peak_bytes > LIMIT_BYTES for o in outcomes),
        "worst_s": round(max(o.seconds for o in outcomes), 2),
        "median_s": round(statistics.median(o.seconds for o in outcomes), 2),
        "worst_peak_mb": round(max(o.peak_bytes for o in outcomes) / 1e6),
        "wall_s": round(time.monotonic() - began),
    }
    print(json.dumps(summary, indent=1))
    sys.exit(1 if summary["failed"] else 0)


if __name__ == "__main__":
    main()
