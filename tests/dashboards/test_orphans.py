"""A worker ends with the server that owns its run (issue 46, point 8): killed, the server no longer
watches the worker's time and memory, and a restarted server has marked the run failed, so the worker
must not go on for minutes and then write into a run it no longer owns."""

from __future__ import annotations

import multiprocessing as mp
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dashboards.worker import watch_owner
from tests.dashboards.helpers import REAL_STRAGGLER
from tests.test_hostile import _request, start_serve


def _busy_worker(owner: int, seconds: float, out: str) -> None:
    """What a worker does meanwhile: a long analysis, then its writes."""
    threading.Thread(target=watch_owner, args=(owner, seconds), daemon=True).start()
    time.sleep(30)
    Path(out).write_text("written after the owner was gone")


def _wait_gone(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` ends within ``seconds`` (a zombie, ended but not yet reaped, has)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("why", ["owner killed", "time limit"])
def test_a_worker_ends_without_writing_when_its_owner_is_gone_or_its_time_is_up(tmp_path: Path, why: str) -> None:
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    out = tmp_path / "analysis.json"
    seconds = 60.0 if why == "owner killed" else 1.0
    worker = mp.get_context("spawn").Process(target=_busy_worker, args=(owner.pid, seconds, str(out)))
    worker.start()
    try:
        time.sleep(1.5)
        if why == "owner killed":
            owner.send_signal(signal.SIGKILL)
            owner.wait(10)
        worker.join(10)
        assert worker.exitcode == 3 and not out.exists()
    finally:
        owner.kill()
        if worker.is_alive():
            worker.kill()


def _descendants(pid: int) -> set[int]:
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = {c for c, parent in parents.items() if parent == p}
        out |= kids
        todo += list(kids)
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the workers through /proc")
def test_the_workers_of_a_killed_server_end_with_it(tmp_path: Path) -> None:
    port, server = start_serve(tmp_path / "runs")
    try:
        big = b"[" + REAL_STRAGGLER.read_bytes().strip()[1:-1] * 1000 + b"]"  # ~5 s of work
        assert _request(port, "POST", "/api/runs?name=big.json", big)[0] == 202
        deadline = time.monotonic() + 20
        while not (workers := _descendants(server.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert workers, "no worker started"
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        # none goes on: each ends by its owner check (0.5 s) or, while it reports, by the broken pipe
        alive = [pid for pid in workers if not _wait_gone(pid, 2)]
        assert not alive, f"processes {alive} outlived their server"
        time.sleep(5)
        assert not list((tmp_path / "runs").rglob("analysis.json"))  # nothing written into the run
    finally:
        server.kill()
