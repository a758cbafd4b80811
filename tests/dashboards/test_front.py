"""The server in front of the app (``dashboards/front.py``), run as ``serve`` runs it: a body is refused
on its headers before it is stored, and slow clients do not starve the pages (issue 46, points 4-5)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_hostile import _request, start_serve

TOKEN = "front-test-token-0123456789"
pytestmark = pytest.mark.slow


@pytest.fixture()
def guarded(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """``serve --token`` on a free port, its temporary files (waitress' spooled bodies) in a folder of its own."""
    spool = tmp_path / "tmp"
    spool.mkdir()
    port, proc = start_serve(tmp_path / "runs", "--token", TOKEN, env={**os.environ, "TMPDIR": str(spool)})
    yield port, spool
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


def _spooled(spool: Path) -> int:
    return sum(p.stat().st_size for p in spool.rglob("*") if p.is_file())


def test_an_upload_without_the_token_is_refused_before_its_body_is_stored(guarded: tuple[int, Path]) -> None:
    port, spool = guarded
    declared = 300 << 20
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(
            f"POST /api/runs?name=big.json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/octet-stream\r\nContent-Length: {declared}\r\n\r\n".encode()
        )
        sent = 0
        try:
            while sent < 8 << 20:  # keep sending, as an attacker would, until the server has answered
                s.sendall(b"x" * (256 << 10))
                sent += 256 << 10
        except OSError:  # the server answered and closed: the rest is never read
            pass
        answer = s.recv(4096).decode("latin-1")
    assert answer.startswith("HTTP/1.1 401"), answer[:200]
    assert "access token" in answer
    assert _spooled(spool) < 1 << 20  # nothing of the body was kept
    ok = _request(port, "GET", "/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok[0] == 200


def test_120_slow_clients_do_not_keep_a_page_load_above_a_second(guarded: tuple[int, Path]) -> None:
    port, _ = guarded
    slow = []
    try:
        for _ in range(120):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(
                f"POST /api/runs?name=t.json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
                "Content-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n[".encode()
            )
            slow.append(s)
        for s in slow:  # one more byte each: they are all alive and slow
            s.sendall(b" ")
        status, _, took = _request(port, "GET", "/", headers={"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and took < 1.0, f"the page took {took:.2f} s beside 120 slow uploads"
    finally:
        for s in slow:
            s.close()
