"""The browser tests' fixtures: the app served on a free local port, Debian's chromium driven by
Playwright, and a page open on the app (``test_browser.py``, ``test_browser_first_use.py``)."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboards.app import create_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT = 90_000  # ms: ingestion on a loaded 2-core CI box


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from werkzeug.serving import make_server

    app = create_app(tmp_path_factory.mktemp("app-runs"))
    srv = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_port}/"
    srv.shutdown()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip("no chromium: run scripts/install-test-deps.sh (the README's test command does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser: Any, server: str) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.dialogs = []  # type: ignore[attr-defined]
    pg.on("dialog", lambda d: _answer(pg, d))
    pg.set_default_timeout(TIMEOUT)
    pg.goto(server)
    pg.wait_for_selector("#upload")
    yield pg
    ctx.close()


def _answer(page: Any, dialog: Any) -> None:
    """Accept the app's own delete confirmation; record and dismiss any other dialog (an injected alert)."""
    if dialog.message.startswith("Delete this run"):
        dialog.accept()
    else:
        page.dialogs.append(dialog.message)
        dialog.dismiss()
