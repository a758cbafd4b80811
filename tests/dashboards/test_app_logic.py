"""Callback logic without a browser: upload, progress, run list, and the content of every page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dash import dash_table, dcc, html

from analyzer.store.run_store import RunStore
from dashboards.app import create_app, poll_job, run_error, run_options
from dashboards.pages import PAGES, job_options, render_page
from dashboards.runs import RunLibrary
from dashboards.uploads import Limits
from tests.conftest import Validate
from tests.dashboards.helpers import (
    CACHED_STRAGGLER,
    REAL_STRAGGLER,
    SOCKET_LOG,
    XSS,
    hostile_timeline,
    post_files,
    tar_bytes,
    zip_bytes,
)


def _walk(node: Any) -> list[Any]:
    """Every component under ``node``."""
    out = [node]
    children = getattr(node, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, (str, int, float)):
            out += _walk(child)
    return out


def _by_id(page: Any, cid: str) -> Any:
    return next(c for c in _walk(page) if getattr(c, "id", None) == cid)


def _text(node: Any) -> str:
    parts = []
    for c in _walk(node):
        ch = getattr(c, "children", None)
        for x in ch if isinstance(ch, list) else [ch]:
            if isinstance(x, str):
                parts.append(x)
    return " ".join(parts)


def _upload(lib: RunLibrary, files: dict[str, bytes]) -> str:
    res = post_files(lib, files)
    assert res.status_code == 202, res.get_json()
    run_id = res.get_json()["id"]
    lib._jobs[run_id]  # the job exists at once
    for _ in range(1200):
        if poll_job(lib, run_id)["finished"]:
            return run_id
        import time

        time.sleep(0.05)
    raise AssertionError("ingestion did not finish in 60 s")


@pytest.fixture()
def lib(tmp_path: Path) -> RunLibrary:
    return RunLibrary(tmp_path / "runs-dir")


def test_upload_ingests_analyses_and_lists_the_run(lib: RunLibrary) -> None:
    run_id = _upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()})
    st = poll_job(lib, run_id)
    assert st == {"text": "Done: the run is ready.", "progress": 1.0, "finished": True, "failed": False}
    assert run_options(lib) == [{"label": "timeline.json", "value": run_id}]
    doc = lib.document(run_id)
    assert doc is not None and {f["code"] for f in doc["report"]["findings"]} >= {"timeline.straggler"}
    assert sorted(doc["labels"].values()) == ["timeline.json", "uploaded files"]  # the file, and its folder
    assert not (lib.root / "runs" / run_id / "uploads").exists()  # the uploaded copy is removed after ingest


def test_a_finished_job_is_never_listed_as_still_running(lib: RunLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    """Polling races the job thread: the moment a job reads finished, the run list must agree."""
    import time

    write = RunLibrary._write_meta

    def slow_final_write(self: RunLibrary, meta: dict[str, Any]) -> None:
        if meta["status"] in ("done", "failed"):
            time.sleep(0.3)  # a slow disk: the window a poll used to fall into
        write(self, meta)

    monkeypatch.setattr(RunLibrary, "_write_meta", slow_final_write)
    for files in ({"timeline.json": REAL_STRAGGLER.read_bytes()}, {"notes.txt": b"nothing to read"}):
        run_id = _upload(lib, files)
        status = lib.meta(run_id)["status"]
        assert status == ("done" if "timeline.json" in files else "failed")
        assert next(o["label"] for o in run_options(lib) if o["value"] == run_id) == (
            "timeline.json" if status == "done" else "notes.txt (failed)"
        )


def test_runs_persist_across_restarts(lib: RunLibrary, tmp_path: Path) -> None:
    run_id = _upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()})
    again = RunLibrary(lib.root)
    assert [o["value"] for o in run_options(again)] == [run_id]
    assert again.document(run_id) == lib.document(run_id)


def test_a_run_stored_by_an_older_release_says_so_instead_of_failing(lib: RunLibrary) -> None:
    """A stored report of an older shape (here: without the per-rank traces' key) reads as a page that
    says what to do, on every page and in the job selector, never a traceback."""
    import copy

    doc = lib.document(_upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()}))
    assert doc is not None
    old = copy.deepcopy(doc)
    del old["report"]["rank_traces"]  # type: ignore[misc]
    for page, _ in PAGES:
        if page not in ("step", "compare"):
            assert "older hvd-analyze" in _text(render_page(page, old))
    assert job_options(old) == ([], None)
    assert "older hvd-analyze" not in _text(render_page("overview", doc))


def test_overview_lists_findings_with_evidence_and_env(lib: RunLibrary, validated: Validate) -> None:
    run_id = _upload(lib, {"timeline.json": CACHED_STRAGGLER.read_bytes(), "job.log": SOCKET_LOG.read_bytes()})
    doc = lib.document(run_id)
    assert doc is not None
    validated(doc["report"])
    page = render_page("overview", doc)
    codes = [c.__dict__.get("data-code") for c in _walk(page) if getattr(c, "className", "").startswith("finding")]
    assert codes == [f["code"] for f in doc["report"]["findings"]]  # the report's order: Finding.sort_key
    assert "nccl.socket_fallback" in codes
    text = _text(page)
    assert "export NCCL_SOCKET_IFNAME=" in text or "export NCCL_IB_HCA=" in text
    assert "job.log" in text and "input-0" not in text  # users see their file names, not the app's copies


def test_steps_page_histogram_counts_every_steady_step(lib: RunLibrary) -> None:
    doc = lib.document(_upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()}))
    page = render_page("steps", doc)
    hist = _by_id(page, "step-histogram").figure
    steady = doc["report"]["timeline"]["steps"]["steady"]
    assert sum(hist.data[0].y) == steady == 29  # 30 steps in steps.csv; the first has no duration
    series = _by_id(page, "step-series").figure
    assert len(series.data[0].x) == 29


def test_steps_page_says_when_the_timeline_was_analysed_through_a_window(lib: RunLibrary) -> None:
    doc = lib.document(_upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()}))
    assert doc["report"]["timeline"]["window"] is None
    assert not [c for c in _walk(render_page("steps", doc)) if getattr(c, "id", None) == "window-note"]
    doc["report"]["timeline"]["window"] = {"note": "span-level findings ... read the first 20 of 30 steps"}
    note = _text(_by_id(render_page("steps", doc), "window-note"))
    assert note == "Analysed through a window: span-level findings ... read the first 20 of 30 steps"


def test_the_library_analyses_within_its_memory_budget(tmp_path: Path) -> None:
    """serve --memory-budget: a timeline over it is analysed through a window, step table whole."""
    small = RunLibrary(tmp_path / "runs-dir", Limits(memory_budget=64 << 10))  # under the model of a capture
    doc = small.document(_upload(small, {"timeline.json": REAL_STRAGGLER.read_bytes()}))
    window = doc["report"]["timeline"]["window"]
    assert window is not None and window["budget_bytes"] == 64 << 10
    assert window["run_steps"] == doc["report"]["timeline"]["steps"]["count"] > window["steps"]
    assert "Analysed through a window" in _text(_by_id(render_page("steps", doc), "window-note"))


def test_ranks_page_explains_missing_ticks_with_the_cache_on(lib: RunLibrary) -> None:
    cached = lib.document(_upload(lib, {"timeline.json": CACHED_STRAGGLER.read_bytes()}))
    page = render_page("ranks", cached)
    assert "HOROVOD_CACHE_CAPACITY=0" in _text(_by_id(page, "no-ticks"))
    nocache = lib.document(_upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()}))
    page = render_page("ranks", nocache)
    assert not [c for c in _walk(page) if getattr(c, "id", None) == "no-ticks"]
    box = _by_id(page, "rank-box").figure.data[0]
    assert list(box.x) == ["0", "1"] and box.median[1] > 50 > box.median[0]  # rank 1 sleeps 100 ms
    assert _by_id(page, "rank-heatmap").figure.data[0].z


def test_phases_page_has_a_sortable_tensor_table_and_fusion_figures(lib: RunLibrary) -> None:
    doc = lib.document(_upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()}))
    page = render_page("phases", doc)
    table = _by_id(page, "tensor-table")
    assert isinstance(table, dash_table.DataTable) and table.sort_action == "native"
    assert {r["tensor"] for r in table.data} >= {"allreduce.0.weight"}
    for gid in ("phase-breakdown", "batch-sizes", "cadence"):
        assert isinstance(_by_id(page, gid), dcc.Graph)


def test_nccl_page_shows_socket_fallback_per_host(lib: RunLibrary) -> None:
    doc = lib.document(_upload(lib, {"job.log": SOCKET_LOG.read_bytes()}))
    page = render_page("nccl", doc)
    rows = _by_id(page, "nccl-hosts").data
    assert rows and all(r["c4"] == "Socket" for r in rows)
    matrix = _by_id(page, "transport-matrix").figure.data[0]
    assert "network Socket" in matrix.x


def test_hostile_tensor_name_stays_a_string(lib: RunLibrary) -> None:
    doc = lib.document(_upload(lib, {"timeline.json": hostile_timeline()}))
    page = render_page("phases", doc)
    assert XSS in [r["tensor"] for r in _by_id(page, "tensor-table").data]
    assert all(not isinstance(c, html.Img) for c in _walk(page))


def test_a_corrupt_upload_fails_alone_with_a_message(lib: RunLibrary) -> None:
    good = _upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()})
    bad = _upload(lib, {"broken.json": b"\x00\x01garbage that is no timeline"})
    st = poll_job(lib, bad)
    assert st["failed"] and "broken.json" in st["text"] and "not an input hvd-analyze reads" in st["text"]
    assert "input-000" not in st["text"]
    assert run_error(lib, bad) is not None and run_error(lib, good) is None
    assert {o["value"] for o in run_options(lib)} == {good, bad}
    assert lib.document(good) is not None


def test_a_traversal_archive_is_refused(lib: RunLibrary) -> None:
    bad = _upload(lib, {"run.zip": zip_bytes({"../../evil.json": b"[]"})})
    st = poll_job(lib, bad)
    assert st["failed"] and "path traversal" in st["text"]
    assert not list(lib.root.rglob("evil.json"))


def test_an_upload_over_the_limit_is_refused_at_once(tmp_path: Path) -> None:
    small = RunLibrary(tmp_path, Limits(max_upload=1000))
    res = post_files(small, {"t.json": b"[" * 5000})
    assert res.status_code == 413 and "over the upload limit" in res.get_json()["error"] and run_options(small) == []
    assert not any((tmp_path / "incoming").iterdir())  # nothing of it stays on disk


def test_an_existing_store_is_shown_read_only(tmp_path: Path) -> None:
    from analyzer.store.discovery import discover

    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([REAL_STRAGGLER]))
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "store").rglob("*"))
    lib = RunLibrary(tmp_path / "app")
    run_id = lib.register_store(str(tmp_path / "store"), wait=True)
    assert lib.register_store(str(tmp_path / "store")) == run_id  # once
    assert lib.document(run_id)["report"]["timeline"]["steps"]["steady"] == 29
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "store").rglob("*")) == before


def test_every_page_renders_for_every_kind_of_run(lib: RunLibrary) -> None:
    runs = [
        _upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()}),
        _upload(lib, {"job.log": SOCKET_LOG.read_bytes()}),
    ]
    for run_id in runs:
        for page, _ in PAGES:
            json.dumps(render_page(page, lib.document(run_id)).to_plotly_json(), default=lambda o: o.to_plotly_json())
    assert "Choose a run" in _text(render_page("overview", None))


def test_create_app_does_no_work_until_asked(tmp_path: Path) -> None:
    app = create_app(tmp_path / "app")
    assert not (tmp_path / "app").exists()  # the folder is made by the first upload
    assert callable(app.layout)
    layout = app.layout()
    assert _by_id(layout, "run-list").options == []


def _finding_codes(doc: Any) -> list[tuple[str, str]]:
    return sorted((f["code"], f["severity"]) for f in doc["report"]["findings"])


def test_a_run_folder_archive_with_non_inputs_is_analysed_like_report(lib: RunLibrary, tmp_path: Path) -> None:
    """A real run folder holds env.txt, scripts and notes beside the inputs: skipped, as the CLI skips them."""
    from analyzer.render.jsonreport import to_document
    from analyzer.report.assembly import analyze
    from analyzer.store.discovery import discover
    from analyzer.store.run_store import temporary_store

    folder = REAL_STRAGGLER.parent
    members = {f"straggler_nocache/{p.name}": p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
    assert any(not n.endswith((".json", ".log", ".gz")) for n in members)  # env.txt, EXPECTED.md, ...
    doc = lib.document(_upload(lib, {"straggler_nocache.zip": zip_bytes(members)}))
    assert doc is not None
    with temporary_store() as store:
        store.ingest(*discover([folder]))
        alone = to_document(analyze(store))
    assert _finding_codes(doc) == sorted((f["code"], f["severity"]) for f in alone["findings"])


def test_the_pages_follow_the_selected_job(lib: RunLibrary) -> None:
    from dashboards.pages import job_options

    members = {
        "runs/straggler/timeline.json": REAL_STRAGGLER.read_bytes(),
        "runs/sockets/job.log": SOCKET_LOG.read_bytes(),
        "runs/sockets/timeline.json": (SOCKET_LOG.parent / "timeline.json").read_bytes(),
    }
    doc = lib.document(_upload(lib, {"two-jobs.zip": zip_bytes(members)}))
    assert doc is not None
    options, first = job_options(doc)
    labels = {o["label"].split(" (")[0]: o["value"] for o in options}
    assert set(labels) == {"two-jobs.zip!runs/straggler", "two-jobs.zip!runs/sockets"}
    assert first == labels["two-jobs.zip!runs/straggler"]  # the job of the most severe finding
    straggler, sockets = labels["two-jobs.zip!runs/straggler"], labels["two-jobs.zip!runs/sockets"]

    def codes(job: str) -> set[str]:
        return {c.__dict__.get("data-code") for c in _walk(render_page("overview", doc, job))} - {None}

    assert "timeline.straggler" in codes(straggler) and "nccl.socket_fallback" not in codes(straggler)
    assert "nccl.socket_fallback" in codes(sockets) and "timeline.straggler" not in codes(sockets)
    assert "runs/straggler/timeline.json" in _text(render_page("overview", doc, straggler))
    assert "runs/sockets" not in _text(render_page("overview", doc, straggler))
    assert "no NCCL_DEBUG output" in _text(render_page("nccl", doc, straggler))  # its job has no log
    assert _by_id(render_page("nccl", doc, sockets), "nccl-hosts").data
    steps_a, steps_b = (_text(_by_id(render_page("steps", doc, j), "steps-line")) for j in (straggler, sockets))
    assert steps_a != steps_b


def test_runs_are_named_after_the_archive_and_can_be_renamed_and_deleted(lib: RunLibrary, tmp_path: Path) -> None:
    from dashboards.app import delete_run, rename_run

    run_id = _upload(lib, {"straggler_nocache.tar.gz": tar_bytes({"t/timeline.json": REAL_STRAGGLER.read_bytes()})})
    assert run_options(lib) == [{"label": "straggler_nocache", "value": run_id}]
    options, status = rename_run(lib, run_id, "  rank 1  late ")
    assert options == [{"label": "rank 1 late", "value": run_id}] and status == "Renamed to rank 1 late."
    assert "Not renamed" in rename_run(lib, run_id, "   ")[1]
    broken = _upload(lib, {"broken.json": b"\x00\x01 no timeline"})
    assert lib.meta(broken)["status"] == "failed"
    options, shown, status = delete_run(lib, broken)  # a failed upload can be removed
    assert [o["value"] for o in options] == [run_id] and shown == run_id and status == "Deleted broken.json."
    assert not (lib.root / "runs" / broken).exists()
    from analyzer.store.discovery import discover

    store = RunStore.create_or_open(tmp_path / "kept")
    store.ingest(*discover([REAL_STRAGGLER]))
    shown_store = lib.register_store(str(tmp_path / "kept"), wait=True)
    delete_run(lib, shown_store)
    assert (tmp_path / "kept" / "manifest.json").is_file()  # a store the app only showed stays


def test_serve_path_twice_reuses_its_run(lib: RunLibrary, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "timeline.json").write_bytes(REAL_STRAGGLER.read_bytes())
    first = lib.submit_paths([str(folder)], wait=True)
    assert lib.submit_paths([str(folder)], wait=True) == first and len(run_options(lib)) == 1
    assert run_options(lib)[0]["label"] == "run"
    (folder / "job.log").write_bytes(SOCKET_LOG.read_bytes())  # other files: another run
    assert lib.submit_paths([str(folder)], wait=True) != first


def test_deep_links_open_a_run_page_and_job() -> None:
    from dashboards.app import deep_link

    options = [{"label": "a", "value": "r1"}, {"label": "b", "value": "r2"}]
    assert deep_link({"run": "r2", "page": "steps", "job": "job2"}, options) == {
        "run": "r2",
        "page": "steps",
        "job": "job2",
    }
    assert deep_link({"run": "gone", "page": "<script>"}, options) == {"run": "r1", "page": "overview", "job": None}


def test_a_run_cut_short_by_a_server_stop_is_failed_not_ingesting_for_good(tmp_path: Path) -> None:
    lib = RunLibrary(tmp_path / "app")
    run_id = _upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()})
    meta = lib.meta(run_id)
    assert meta is not None
    lib._write_meta({**meta, "status": "ingesting"})  # what a server killed mid-ingest leaves
    (lib.root / "runs" / run_id / "uploads").mkdir()
    restarted = RunLibrary(lib.root)
    (option,) = run_options(restarted)
    assert option["label"].endswith("(failed)")
    assert "server stopped" in (restarted.meta(run_id) or {}).get("error", "")
    assert not (lib.root / "runs" / run_id / "uploads").exists()


def test_an_upload_far_over_the_limit_is_answered_with_what_to_do(tmp_path: Path) -> None:
    app = create_app(tmp_path / "app", limits=Limits(max_upload=1000, max_total=4 << 20))
    client = app.server.test_client()
    res = client.post("/api/runs", data=b"x" * (10 << 20), content_type="application/octet-stream")
    assert res.status_code == 413
    assert "hvd-analyze ingest FILE -o STORE" in res.get_data(as_text=True)


def test_the_app_answers_only_to_its_host_names(tmp_path: Path) -> None:
    """DNS rebinding: a page on another site that resolves its name to 127.0.0.1 must not read the runs."""
    client = create_app(tmp_path / "app", hosts=("gpu-box.lan",)).server.test_client()
    assert client.get("/", headers={"Host": "127.0.0.1:8050"}).status_code == 200
    assert client.get("/", headers={"Host": "[::1]:8050"}).status_code == 200
    assert client.get("/", headers={"Host": "GPU-box.lan:8050"}).status_code == 200
    refused = client.get("/_dash-layout", headers={"Host": "evil.example:8050"})
    assert refused.status_code == 403 and "--allow-host evil.example" in refused.get_data(as_text=True)
    posted = client.post(
        "/_dash-update-component",
        json={},
        headers={"Host": "127.0.0.1:8050", "Origin": "http://evil.example"},
    )
    assert posted.status_code == 403 and "may not change" in posted.get_data(as_text=True)


def test_an_archive_of_per_rank_traces_names_the_late_rank_on_the_ranks_page(lib: RunLibrary) -> None:
    """An SRE uploads the folder of every rank's torch.profiler trace as one archive."""
    from tests.conftest import ROOT

    folder = ROOT / "sample_traces" / "ranks" / "ddp_straggler" / "r1" / "traces"
    run_id = _upload(lib, {"traces.tar.gz": tar_bytes({f"traces/{p.name}": p.read_bytes() for p in folder.iterdir()})})
    assert poll_job(lib, run_id)["failed"] is False
    doc = lib.document(run_id)
    assert doc is not None
    (f,) = [f for f in doc["report"]["findings"] if f["code"] == "traces.straggler"]
    assert f["ranks"] == [2]
    page = render_page("ranks", doc)
    assert "STRAGGLER" in str(_by_id(page, "trace-table").data)
