"""The app as a new user meets it (issue 41): the HTML report downloads with the default relative store
folder; jobs, runs and tables read as the user named and measured them; the bars end full."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import pytest

from analyzer import Finding, Impact, Severity, Suggestion
from analyzer.render import figures, svg
from dashboards.app import create_app, run_options
from dashboards.pages import job_options
from dashboards.runs import Job, RunLibrary, run_labels
from dashboards.tuning import tuning
from tests.dashboards.helpers import REAL_STRAGGLER, SOCKET_LOG, zip_bytes
from tests.dashboards.test_api import _until_done
from tests.dashboards.test_app_logic import _upload


def test_the_html_report_downloads_with_a_relative_store_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve`` defaults to a relative --store-dir: it means the working folder, not the package's."""
    monkeypatch.chdir(tmp_path)
    client = create_app("hvd-analyze-runs").server.test_client()
    made = client.post(
        "/api/runs?name=timeline.json", data=REAL_STRAGGLER.read_bytes(), content_type="application/octet-stream"
    ).get_json()
    assert _until_done(client, made["id"])["status"] == "done"
    page = client.get(f"/api/runs/{made['id']}/report.html")
    assert page.status_code == 200 and "Rank 1 is late" in page.get_data(as_text=True)


def test_jobs_of_an_archive_are_named_by_its_folders(tmp_path: Path) -> None:
    lib = RunLibrary(tmp_path / "runs-dir")
    members = {
        "mixed/straggler/timeline.json": REAL_STRAGGLER.read_bytes(),
        "mixed/sockets/job.log": SOCKET_LOG.read_bytes(),
        "mixed/sockets/timeline.json": (SOCKET_LOG.parent / "timeline.json").read_bytes(),
    }
    run_id = _upload(lib, {"mixed.zip": zip_bytes(members)})
    doc = lib.document(run_id)
    assert doc is not None
    names = sorted(j["name"] for j in doc["report"]["jobs"])
    assert names == ["sockets", "straggler"]  # the user's folders, never a generated d000
    options, _ = job_options(doc)
    labels = [o["label"] for o in options]
    assert all(label.startswith("mixed.zip!mixed/") for label in labels), labels
    assert not any(os.sep + "runs-dir" in label or "uploads" in label for label in labels)
    assert "(job d0" not in doc["report"]["verdict"]["headline"]


def test_runs_of_the_same_name_are_told_apart(tmp_path: Path) -> None:
    runs: list[dict[str, Any]] = [
        {"id": "a", "name": "timeline.json", "created": 1_800_000_000.0},
        {"id": "b", "name": "timeline.json", "created": 1_800_000_060.0},
        {"id": "c", "name": "other", "created": 1_800_000_060.0},
        {"id": "d", "name": "twin", "created": 1_800_000_000.0},
        {"id": "e", "name": "twin", "created": 1_800_000_000.2},
    ]
    labels = run_labels(runs)
    assert labels["c"] == "other" and labels["a"] != labels["b"]
    assert labels["a"] == "timeline.json (made 2027-01-15 08:00:00 UTC)"
    assert labels["d"] != labels["e"] and "run d" in labels["d"]
    lib = RunLibrary(tmp_path / "lib")
    first = _upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()})
    second = _upload(lib, {"timeline.json": REAL_STRAGGLER.read_bytes()})
    shown = {o["value"]: o["label"] for o in run_options(lib)}
    assert shown[first] != shown[second]


def test_the_transport_matrix_leaves_empty_cells_empty() -> None:
    nccl: Any = {
        "processes": [
            {"host": "h1", "transports": ["P2P/IPC"], "network": "IB"},
            {"host": "h2", "transports": [], "network": "Socket"},
        ]
    }
    fig = figures.transport_matrix(nccl)
    texts = [cell for trace in fig.data for row in trace.text for cell in row]
    assert "null" not in texts and "None" not in texts and "" in texts and "1" in texts


def test_the_steps_page_says_what_to_tune_and_no_advice_on_a_low_confidence_estimate() -> None:
    def finding(code: str, ms: float, confidence: Literal["low", "medium", "high"]) -> Finding:
        return Finding(
            code,
            Severity.WARNING,
            code,
            "",
            code,
            impact=Impact(ms / 1e3, 0.1, confidence, ""),
            suggestions=(Suggestion(f"fix {code}", {"HOROVOD_X": "1"}),),
        )

    (heading, listing) = tuning([finding("small", 2, "high"), finding("big", 9, "medium"), finding("guess", 5, "low")])
    text = str(listing)
    assert "largest win per step first" in str(heading)
    assert text.index("'big'") < text.index("'guess'") < text.index("'small'")
    assert "fix big" in text and "fix small" in text and "fix guess" not in text
    assert "too uncertain to advise a setting" in text
    assert tuning([]) == []


def test_the_bar_is_full_once_ingest_is_over() -> None:
    job = Job("r", stage="analysing", done_bytes=10, total_bytes=40)  # a .gz counts its packed bytes
    assert job.as_dict()["progress"] == 1.0
    assert Job("r", stage="ingesting", done_bytes=10, total_bytes=40).as_dict()["progress"] == 0.25


def test_dashed_marks_are_labelled_above_the_plot_not_over_the_series() -> None:
    chart = svg.line([1, 2, 3], [100.0, 120.0, 110.0], "Step time", "step", "ms", marks=[(110.0, "median 110 ms")])
    label = chart[chart.index("- - median 110 ms") - 80 :]
    y = float(label.split("y='")[1].split("'")[0])
    assert y < svg.TOP  # between the title and the plot
    hist = svg.histogram([0.0, 1.0, 2.0], [3, 4], "Steps", "ms", mark=1.0)
    assert "- - median 1" in hist


def test_a_bug_on_one_run_fails_that_run_with_words_not_a_python_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = RunLibrary(tmp_path / "lib")

    def broken(*args: object, **kwargs: object) -> None:
        raise UnboundLocalError("cannot access local variable 'cause'")

    monkeypatch.setattr(lib.pool, "run", broken)
    meta_id = lib.submit_upload([("timeline.json", _received(tmp_path))], wait=True)
    error = (lib.meta(meta_id) or {}).get("error") or ""
    assert error.startswith("internal error in hvd-analyze (UnboundLocalError: ") and "a bug, not a problem" in error


def _received(tmp_path: Path) -> Path:
    folder = tmp_path / "incoming"
    folder.mkdir()
    (folder / "f").write_bytes(REAL_STRAGGLER.read_bytes())
    return folder / "f"


def test_a_folder_named_like_the_apps_files_does_not_collide(tmp_path: Path) -> None:
    from dashboards.uploads import folder_name

    assert folder_name("input-000") == "folder input-000" and folder_name("..") == "folder"
    assert folder_name("run.tar.gz") == "run" and folder_name("a/b<c>") == "a_b_c_"
    lib = RunLibrary(tmp_path / "lib")
    members = {"timeline.json": REAL_STRAGGLER.read_bytes(), "input-000/notes.txt": b"hello\n"}
    run_id = _upload(lib, {"run.zip": zip_bytes(members)})
    assert (lib.meta(run_id) or {}).get("status") == "done"
