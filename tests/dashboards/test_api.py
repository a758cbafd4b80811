"""The HTTP API (POST/GET/DELETE /api/runs), access control, and the worker processes' limits."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from dashboards.api import Access
from dashboards.app import create_app
from dashboards.runs import RunLibrary
from dashboards.uploads import Limits
from dashboards.work import Work
from dashboards.worker import Budget, WorkerPool
from tests.dashboards.helpers import REAL_STRAGGLER, SOCKET_LOG, post_files


def _until_done(client: Any, run_id: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    for _ in range(1200):
        body = client.get(f"/api/runs/{run_id}", headers=headers or {}).get_json()
        if body["status"] in ("done", "failed"):
            return dict(body)
        time.sleep(0.05)
    raise AssertionError("the run did not finish in 60 s")


def test_a_file_posted_as_the_body_becomes_a_run_with_its_report(tmp_path: Path) -> None:
    """What a job's exit hook does: curl --data-binary @timeline.json 'http://host/api/runs?name=...'."""
    client = create_app(tmp_path / "app").server.test_client()
    res = client.post(
        "/api/runs?name=timeline.json", data=REAL_STRAGGLER.read_bytes(), content_type="application/octet-stream"
    )
    assert res.status_code == 202
    made = res.get_json()
    assert made["name"] == "timeline.json" and made["status"] == "queued"
    assert made["url"].endswith(f"/?run={made['id']}") and made["api"].endswith(f"/api/runs/{made['id']}")
    done = _until_done(client, made["id"])
    assert done["status"] == "done" and done["progress"] == 1.0 and done["files"] == ["timeline.json"]
    assert "timeline.straggler" in {f["code"] for f in done["report"]["findings"]}
    assert [r["id"] for r in client.get("/api/runs").get_json()["runs"]] == [made["id"]]
    assert client.delete(f"/api/runs/{made['id']}").status_code == 200
    assert client.get(f"/api/runs/{made['id']}").status_code == 404
    assert client.get("/api/runs").get_json() == {"runs": []}


def test_several_files_in_one_form_make_one_run(tmp_path: Path) -> None:
    lib = RunLibrary(tmp_path / "app")
    res = post_files(lib, {"timeline.json": REAL_STRAGGLER.read_bytes(), "job.log": SOCKET_LOG.read_bytes()})
    assert res.status_code == 202
    run_id = res.get_json()["id"]
    for _ in range(1200):
        if (lib.meta(run_id) or {}).get("status") in ("done", "failed"):
            break
        time.sleep(0.05)
    meta = lib.meta(run_id) or {}
    assert meta["status"] == "done" and sorted(meta["files"]) == ["job.log", "timeline.json"]
    assert not any((lib.root / "incoming").iterdir())  # the received files moved into the run


def test_bad_requests_get_a_json_error(tmp_path: Path) -> None:
    client = create_app(tmp_path / "app", limits=Limits(max_upload=1000)).server.test_client()
    empty = client.post("/api/runs", data=b"", content_type="application/octet-stream")
    assert empty.status_code == 400 and "carried no file" in empty.get_json()["error"]
    big = client.post("/api/runs?name=t.json", data=b"x" * 5000, content_type="application/octet-stream")
    assert big.status_code == 413 and "t.json: 4.9 KiB is over the upload limit" in big.get_json()["error"]
    assert client.get("/api/runs/20260101-000000-abcdef").status_code == 404
    assert client.get("/api/runs/..etc").status_code == 404  # never a path outside the runs


def test_a_token_guards_pages_and_api(tmp_path: Path) -> None:
    client = create_app(tmp_path / "app", access=Access(token="s3cret")).server.test_client()
    for path in ("/", "/api/runs", "/_dash-layout"):
        res = client.get(path)
        assert res.status_code == 401 and "access token" in res.get_data(as_text=True), path
    assert client.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/api/runs", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    first = client.get("/?token=s3cret")  # a browser opens the link once; the cookie keeps it
    assert first.status_code == 200 and "HttpOnly" in first.headers["Set-Cookie"]
    assert client.get("/_dash-layout").status_code == 200


def test_behind_an_authenticating_proxy_only_its_requests_are_served(tmp_path: Path) -> None:
    client = create_app(tmp_path / "app", access=Access(proxy_header="X-Forwarded-User")).server.test_client()
    refused = client.get("/api/runs")
    assert refused.status_code == 401 and "X-Forwarded-User" in refused.get_json()["error"]
    assert client.get("/api/runs", headers={"X-Forwarded-User": "sre"}).status_code == 200


def test_serve_on_a_public_address_needs_an_access_control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboards import front

    seen: dict[str, Any] = {}
    monkeypatch.setattr(front, "serve", lambda app, access, **kw: seen.update(kw, app=app))
    runs = ["serve", "--store-dir", str(tmp_path / "runs")]
    res = CliRunner().invoke(cli, [*runs, "--host", "0.0.0.0"])
    assert res.exit_code == 2 and "--token" in res.stderr and not seen
    res = CliRunner().invoke(cli, [*runs, "--host", "0.0.0.0"], env={"HVD_ANALYZE_TOKEN": "s3cret-s3cret-s3cret"})
    assert res.exit_code == 0, res.output
    client = seen["app"].test_client()
    assert client.get("/api/runs").status_code == 401
    res = CliRunner().invoke(cli, [*runs, "--host", "0.0.0.0", "--trusted-proxy-header", "X-Remote-User"])
    assert res.exit_code == 0, res.output
    assert seen["app"].test_client().get("/", headers={"X-Remote-User": "a"}).status_code == 200


def _pool_run(tmp_path: Path, budget: Budget, data: bytes, name: str = "t.json") -> tuple[str | None, list[Any]]:
    src = tmp_path / "received"
    src.write_bytes(data)
    (tmp_path / "run").mkdir()
    seen: list[Any] = []
    work = Work(str(tmp_path / "run"), Limits(), uploads=((name, str(src)),))
    out = WorkerPool(budget).run(work, lambda kind, value: seen.append((kind, value)))
    return out.error, seen


def test_a_run_past_its_memory_limit_fails_alone_with_the_limit_named(tmp_path: Path) -> None:
    error, _ = _pool_run(tmp_path, Budget(memory=64 << 20), REAL_STRAGGLER.read_bytes())
    assert error is not None and "over the limit of 64 MiB per run" in error and "--job-memory" in error


def test_a_run_past_its_time_limit_is_stopped(tmp_path: Path) -> None:
    # a millisecond: any run takes longer (a fifth of a second did not, once the analysis got faster)
    error, _ = _pool_run(tmp_path, Budget(seconds=0.001), REAL_STRAGGLER.read_bytes())
    assert error is not None and "time limit of 0 s" in error and "--job-timeout" in error


def test_runs_beyond_the_worker_count_wait_their_turn(tmp_path: Path) -> None:
    lib = RunLibrary(tmp_path / "app", budget=Budget(workers=1))
    first = post_files(lib, {"a.json": REAL_STRAGGLER.read_bytes()}).get_json()["id"]
    second = post_files(lib, {"b.json": REAL_STRAGGLER.read_bytes()}).get_json()["id"]
    stages = set()
    for _ in range(1200):
        a, b = (lib.meta(r) or {} for r in (first, second))
        if a.get("status") not in ("done", "failed"):
            stages.add(b.get("status"))
        if b.get("status") in ("done", "failed"):
            break
        time.sleep(0.02)
    assert stages == {"queued"}  # while the first ran, the second had not started
    assert (lib.meta(first) or {})["status"] == (lib.meta(second) or {})["status"] == "done"


def test_a_finished_run_offers_its_reports_and_steps_for_download(tmp_path: Path) -> None:
    from parsers.timeline import parse_timeline

    app = create_app(tmp_path / "app")
    client = app.server.test_client()
    made = client.post(
        "/api/runs?name=timeline.json", data=REAL_STRAGGLER.read_bytes(), content_type="application/octet-stream"
    ).get_json()
    assert _until_done(client, made["id"])["status"] == "done"
    base = f"/api/runs/{made['id']}"
    as_json = client.get(f"{base}/report.json")
    assert as_json.status_code == 200 and "attachment" in as_json.headers["Content-Disposition"]
    assert as_json.get_json()["verdict"]["status"] == "degraded"
    page = client.get(f"{base}/report.html")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "Rank 1 is late" in text and "<svg " in text
    assert "input-000" not in text and "timeline.json" in text  # the user's name, not the app's copy
    sliced = client.get(f"{base}/slice?steps=4:6")
    assert sliced.status_code == 200 and "steps-4-5" in sliced.headers["Content-Disposition"]
    out = tmp_path / "slice.json"
    out.write_bytes(sliced.get_data())
    assert len(parse_timeline(out).tables["spans"]) > 0
    assert client.get(f"{base}/slice?steps=999").status_code == 400
    assert client.get("/api/runs/20260101-000000-abcdef/report.html").status_code == 404


def test_the_step_view_draws_every_span_and_rank_tick_of_the_step(tmp_path: Path) -> None:
    from dashboards.stepview import step_view

    lib = RunLibrary(tmp_path / "app")
    run_id = post_files(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()}).get_json()["id"]
    for _ in range(1200):
        if (lib.meta(run_id) or {}).get("status") in ("done", "failed"):
            break
        time.sleep(0.05)
    view = step_view(lib, run_id, "slowest")
    gantt = next(c for c in view.children if getattr(c, "id", None) == "step-gantt")
    data = gantt.figure.data
    ticks = next(t for t in data if t.name == "rank ready")
    assert sorted(set(ticks.text)) == ["0", "1"] and len(ticks.text) == 2 * 6  # 2 ranks x 6 gradient tensors
    assert sum(len(t.x) for t in data if t.name != "rank ready") > 12
    assert view.to_plotly_json()["props"]["data-step"] == gantt.figure.layout.title.text.split()[1]
    link = next(c for c in view.children if getattr(c, "id", None) == "step-slice")
    assert link.href.startswith(f"api/runs/{run_id}/slice?steps=")
    assert "Choose a finished run" in str(step_view(lib, None, "median").to_plotly_json())
