"""Hostile and broken inputs: each case with its exit code, its message and a time bound.

The cases of the safety audit that are inputs to the CLI are here, in one table. The others live
next to the code they exercise: damaged stores (``tests/analyzer/store/test_damaged_store.py``), two
writers, FIFOs, crashes and files changing while read (``tests/cli/test_cli.py``), archives and upload
limits (``tests/dashboards/test_uploads.py``), the app's access rules and worker limits
(``tests/dashboards/test_api.py``), byte mutations of NCCL logs (``tests/parsers/nccl/test_nccl_fuzz.py``).
Byte mutations of gzipped timelines and the app under hostile uploads are below.
"""

from __future__ import annotations

import gzip
import http.client
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli

ROOT = Path(__file__).resolve().parents[1]
STRAGGLER = ROOT / "sample_traces" / "captured" / "straggler_nocache" / "timeline.json"
CORPUS = ROOT.parent / "shared" / "corpus"


def _damaged(mb: float) -> bytes:
    """A real timeline repeated to ``mb`` MB with a byte of every 2 KB overwritten."""
    data = STRAGGLER.read_bytes().strip()[1:-1].rstrip(b",\n ")
    body = bytearray(b"[")
    while len(body) < mb * 1e6:
        body += data + b",\n"
    for i in range(2000, len(body) - 10, 2000):
        body[i] = ord("#")
    return bytes(body[:-2]) + b"]"


def _pid_record(pid: int) -> bytes:
    return f'[{{"ph": "B", "name": "ALLREDUCE", "pid": {pid}, "ts": 1}},{{"ph": "E", "pid": {pid}, "ts": 2}}]'.encode()


#: name, file name, content, exit code, text the output must hold, seconds it may take
CASES: list[tuple[str, str, Callable[[], bytes], int, str, float]] = [
    ("64 KiB without a newline", "a.json", lambda: b"a" * (64 << 10), 2, "not an input hvd-analyze reads", 20),
    ("a 64 MB line", "long.log", lambda: b"x" * (64 << 20), 2, "not an input hvd-analyze reads", 30),
    (
        "a 48 KB line of host-name characters in an NCCL log",
        "nccl.log",
        lambda: (
            b"h1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nh1:1:1 [0] NCCL INFO "
            + b"node-a.b-c" * 4800
            + b"\n"
        ),
        0,
        "nccl",
        20,
    ),
    ("pid 30,000,000 in a 108-byte timeline", "pid.json", lambda: _pid_record(30_000_000), 2, "pid 30000000", 20),
    ("pid 2^31", "pid.json", lambda: _pid_record(1 << 31), 2, "pid 2147483648", 20),
    ("pid 10^18", "pid.json", lambda: _pid_record(10**18), 2, "could hold at most", 20),
    (
        "ts at INT64_MAX",
        "ts.json",
        lambda: (
            b'[{"ph": "B", "name": "ALLREDUCE", "pid": 1, "ts": 9223372036854775807},'
            b'{"ph": "E", "pid": 1, "ts": 9223372036854775807}]'
        ),
        0,
        "1 spans",
        20,
    ),
    (
        "a 30 KB .gz inflating to 30 MB of newlines",
        "job.log.gz",
        lambda: gzip.compress(b"\n" * (30 << 20), 9),
        2,
        "found only whitespace",
        20,
    ),
    ("a timeline damaged every 2 KB (12 MB)", "dmg.json", lambda: _damaged(12), 0, "data_loss", 30),
    ("NUL bytes", "t.json", lambda: b"\0" * 4096, 2, "not an input", 20),
    (
        "a JSON object, not an array",
        "t.json",
        lambda: b'{"traceEvents": []}',
        2,
        "a Horovod timeline is a bare array",
        20,
    ),
]


@pytest.mark.parametrize(("name", "fname", "make", "code", "text", "seconds"), CASES, ids=[c[0] for c in CASES])
def test_hostile_input(
    tmp_path: Path, name: str, fname: str, make: Callable[[], bytes], code: int, text: str, seconds: float
) -> None:
    path = tmp_path / fname
    path.write_bytes(make())
    start = time.monotonic()
    res = CliRunner().invoke(cli, ["report", str(path)])
    took = time.monotonic() - start
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == code, res.output
    assert text in res.output, res.output
    assert "Traceback" not in res.output
    assert took < seconds, f"{name}: {took:.1f} s"


# -- byte mutations of gzipped timelines, under a memory limit ------------------------------------------

MUTATE = """
import gzip, json, random, resource, sys, time
resource.setrlimit(resource.RLIMIT_DATA, (3 << 30, 3 << 30))  # a runaway allocation fails, never the box
from parsers.errors import InputError
from parsers.timeline import parse_timeline
small, large = sys.argv[1].split(","), [p for p in sys.argv[4:]]
n, out = int(sys.argv[2]), sys.argv[3]
rng = random.Random(26)
worst, kinds = 0.0, {}
for i in range(n):
    src = large[i % len(large)] if large and i % 20 == 19 else small[i % len(small)]  # 1 in 20: a big one
    data = bytearray(open(src, "rb").read())
    for _ in range(rng.choice((1, 1, 2, 8))):
        data[rng.randrange(len(data))] = rng.randrange(256)
    path = f"{out}/m{i}.json.gz"
    open(path, "wb").write(data)
    t = time.monotonic()
    try:
        parse_timeline(path)
        kind = "read"
    except InputError:
        kind = "refused"
    worst = max(worst, time.monotonic() - t)
    kinds[kind] = kinds.get(kind, 0) + 1
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"worst_s": worst, "peak_bytes": peak, "kinds": kinds}))
"""


def test_byte_flips_of_gzipped_timelines_stay_within_2_gb_and_60_s(tmp_path: Path) -> None:
    """80 mutated .json.gz timelines (the project's captures, and the corpus's when present), each
    read or refused with an InputError (anything else fails the child), in a bounded process
    (``bench/mutations.py`` runs over a thousand, of logs and stores too)."""
    sources = []
    for src in sorted((ROOT / "sample_traces" / "captured").glob("*/timeline.json"))[:4]:
        gz = tmp_path / f"{src.parent.name}.json.gz"
        gz.write_bytes(gzip.compress(src.read_bytes()))
        sources.append(gz)
    large = [str(p) for p in sorted(CORPUS.glob("horovod-*/*/timeline.json.gz")) if p.stat().st_size < (8 << 20)]
    (tmp_path / "m").mkdir()
    args = [",".join(map(str, sources)), "80", str(tmp_path / "m"), *large[:2]]
    res = subprocess.run([sys.executable, "-c", MUTATE, *args], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert sum(got["kinds"].values()) == 80
    assert got["worst_s"] < 60 and got["peak_bytes"] < (2 << 30), got


# -- the app under hostile uploads -----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(field)


def start_serve(store: Path, *options: str, env: dict[str, str] | None = None) -> tuple[int, subprocess.Popen[bytes]]:
    """``hvd-analyze serve`` in a process of its own on a free port, once it accepts connections."""
    port = _free_port()
    script = "import sys; from analyzer.cli import main; sys.argv[0] = 'hvd-analyze'; main()"
    args = ["serve", "--store-dir", str(store), "--port", str(port), *options]
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return port, proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(proc.stderr.read().decode() if proc.stderr else "serve did not start")


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port, proc = start_serve(tmp_path / "runs", "--job-timeout", "120")
    yield port, proc
    proc.send_signal(signal.SIGINT)  # a clean stop: its workers stop with it
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(tmp_path / "runs", ignore_errors=True)  # a GB upload must not stay in pytest's tmp


def _request(
    port: int, method: str, path: str, body: object = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.monotonic()
    conn.request(method, path, body=body, headers=headers or {})
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, data, time.monotonic() - start


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures memory through /proc")
def test_the_app_answers_while_hostile_uploads_fail_alone(served: tuple[int, subprocess.Popen[bytes]]) -> None:
    port, _ = served
    ids = []
    for name, body in (("a.json", b"a" * (64 << 10)), ("pid.json", _pid_record(1 << 31))):
        status, data, _ = _request(port, "POST", f"/api/runs?name={name}", body)
        assert status == 202, data
        ids.append(json.loads(data)["id"])
    slowest = 0.0
    outcome: dict[str, dict[str, object]] = {}
    deadline = time.monotonic() + 120
    while len(outcome) < 2 and time.monotonic() < deadline:
        for path in ("/", "/_dash-layout", "/api/runs"):
            status, _, took = _request(port, "GET", path)
            assert status == 200
            slowest = max(slowest, took)
        for run_id in ids:
            body = json.loads(_request(port, "GET", f"/api/runs/{run_id}")[1])
            if body["status"] in ("done", "failed"):
                outcome[run_id] = body
        time.sleep(0.05)
    assert slowest < 1.0, f"a page took {slowest:.2f} s while hostile uploads were processed"
    first, second = (outcome[i] for i in ids)
    assert first["status"] == "failed" and "a.json" in str(first["error"]) and "not an input" in str(first["error"])
    assert second["status"] == "failed" and "pid 2147483648" in str(second["error"])


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="measures memory through /proc")
def test_a_1_gb_timeline_uploads_through_the_api_in_bounded_server_memory(
    served: tuple[int, subprocess.Popen[bytes]],
) -> None:
    port, proc = served
    record = STRAGGLER.read_bytes().strip()[1:-1].rstrip(b",\n ") + b",\n"
    size = 1 << 30
    reps = size // len(record)

    def body() -> Iterator[bytes]:
        yield b"["
        block = record * max(1, (4 << 20) // len(record))
        sent = 0
        while sent + len(block) <= reps * len(record):
            yield block
            sent += len(block)
        yield record * ((reps * len(record) - sent) // len(record))
        yield b"{}]"

    total = 1 + reps * len(record) + 3
    before = _rss(proc.pid)
    status, data, _ = _request(
        port,
        "POST",
        "/api/runs?name=big.json",
        body(),
        {"Content-Length": str(total), "Content-Type": "application/octet-stream"},
    )
    assert status == 202, data
    growth = _rss(proc.pid, "VmHWM") - before
    assert growth < 300 << 20, f"the server grew by {growth >> 20} MiB receiving 1 GB"
    run_id = json.loads(data)["id"]
    meta = json.loads(_request(port, "GET", f"/api/runs/{run_id}")[1])
    assert meta["status"] in ("queued", "unpacking", "ingesting", "analysing", "done")
