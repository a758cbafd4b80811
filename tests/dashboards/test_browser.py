"""The app in a real browser (Debian's /usr/bin/chromium driven by Playwright).

``scripts/install-test-deps.sh`` (run by the README's test command) installs chromium; without
it these tests skip with that hint. Screenshots of every page go to ``tests/artifacts/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.dashboards.conftest import TIMEOUT
from tests.dashboards.helpers import (
    REAL_STRAGGLER,
    ROOT,
    SOCKET_LOG,
    XSS,
    hostile_timeline,
    tar_bytes,
    zip_bytes,
)

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = pytest.mark.slow


def _upload(page: Any, name: str, data: bytes, mime: str = "application/json") -> None:
    """Choose a file as a user does: click the drop zone, answer the file chooser."""
    with page.expect_file_chooser() as chooser:
        page.click("#upload-choose")
    chooser.value.set_files(files=[{"name": name, "mimeType": mime, "buffer": data}])


def _wait_status(page: Any, text: str) -> str:
    page.wait_for_function(
        "t => document.querySelector('#upload-status').innerText.includes(t)", arg=text, timeout=TIMEOUT
    )
    return str(page.inner_text("#upload-status"))


def _tab(page: Any, label: str) -> None:
    page.get_by_text(label, exact=True).click()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)


def _verdict_first(page: Any, status: str, headline: str) -> None:
    """The verdict is the first thing on the Overview, above the findings."""
    page.wait_for_selector(f"#page-overview > #verdict[data-status={status}]")
    assert page.evaluate("document.querySelector('#page-overview').firstElementChild.id") == "verdict"
    assert headline in page.inner_text("#verdict")


def test_a_healthy_run_opens_on_its_verdict_and_the_checks_it_passed(page: Any) -> None:
    healthy = REAL_STRAGGLER.parents[1] / "healthy_np4" / "timeline.json"
    _upload(page, "timeline.json", healthy.read_bytes())
    _wait_status(page, "Done")
    _verdict_first(page, "healthy", "Healthy: median step")
    assert "tensor fusion works" in page.inner_text("#verdict")
    _shot(page, "verdict-healthy")


def test_real_timeline_upload_shows_straggler_and_every_step(page: Any) -> None:
    _upload(page, "timeline.json", REAL_STRAGGLER.read_bytes())
    _wait_status(page, "Done")
    page.wait_for_selector('.finding[data-code="timeline.straggler"]')
    assert "Rank 1 is late" in page.inner_text('.finding[data-code="timeline.straggler"]')
    _verdict_first(page, "degraded", "Degraded: Rank 1 is late")
    _shot(page, "overview")

    _tab(page, "Steps")
    page.wait_for_selector("#step-histogram .main-svg")
    counts = page.evaluate("document.querySelector('#step-histogram .js-plotly-plot').data[0].y")
    assert sum(counts) == 29  # steps.csv has 30 steps per rank; the first has no duration
    assert page.locator("#step-histogram .bars .point").count() == len(counts)
    assert "29 steady steps of 30" in page.inner_text("#step-histogram")
    page.wait_for_selector("#step-series .main-svg")
    _shot(page, "steps")

    _tab(page, "Ranks")
    page.wait_for_selector("#rank-box .main-svg")
    page.wait_for_selector("#rank-heatmap .main-svg")
    _shot(page, "ranks")

    _tab(page, "Phases & fusion")
    page.wait_for_selector("#tensor-table")
    page.wait_for_selector("#phase-breakdown .main-svg")
    _shot(page, "phases")


def test_nccl_page_shows_the_socket_fallback_row(page: Any) -> None:
    _upload(page, "job.log", SOCKET_LOG.read_bytes(), "text/plain")
    _wait_status(page, "Done")
    page.wait_for_selector('.finding[data-code="nccl.socket_fallback"]')
    _tab(page, "NCCL")
    page.wait_for_selector("#nccl-hosts")
    rows = page.locator("#nccl-hosts tr").all_inner_texts()
    assert any("gpu-node-000" in r and "Socket" in r and "NET/Socket" in r for r in rows), rows
    page.wait_for_selector("#transport-matrix .main-svg")
    _shot(page, "nccl")


def test_corrupt_upload_shows_an_error_and_the_app_keeps_working(page: Any) -> None:
    _upload(page, "broken.json", b"\x00\x01 this is no timeline")
    text = _wait_status(page, "Failed")
    assert "broken.json" in text and "not an input hvd-analyze reads" in text
    assert "error" in (page.get_attribute("#upload-status", "class") or "")
    _shot(page, "corrupt-upload")
    _upload(page, "timeline.json", REAL_STRAGGLER.read_bytes())
    _wait_status(page, "Done")
    page.wait_for_selector('.finding[data-code="timeline.straggler"]')


def test_zip_with_parent_entries_is_refused(page: Any) -> None:
    _upload(page, "run.zip", zip_bytes({"run/timeline.json": b"[]", "../../etc/evil.json": b"[]"}), "application/zip")
    text = _wait_status(page, "Failed")
    assert "run.zip" in text and "path traversal" in text
    _shot(page, "zip-traversal")


def test_hostile_tensor_name_is_shown_literally(page: Any) -> None:
    _upload(page, "timeline.json", hostile_timeline())
    _wait_status(page, "Done")
    _tab(page, "Phases & fusion")
    page.wait_for_selector("#tensor-table")
    page.wait_for_function("t => document.querySelector('#tensor-table').innerText.includes(t)", arg=XSS)
    assert page.locator("img[src=x]").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    _shot(page, "hostile-name")


def test_pages_follow_the_selected_job(page: Any) -> None:
    members = {
        "runs/straggler/timeline.json": REAL_STRAGGLER.read_bytes(),
        "runs/straggler/env.txt": b"HOROVOD_CACHE_CAPACITY=0\n",
        "runs/sockets/job.log": SOCKET_LOG.read_bytes(),
        "runs/sockets/timeline.json": (SOCKET_LOG.parent / "timeline.json").read_bytes(),
    }
    _upload(page, "two-jobs.zip", zip_bytes(members), "application/zip")
    _wait_status(page, "Done")
    page.wait_for_selector("#job-bar", state="visible")
    # the job of the most severe finding is shown first
    page.wait_for_selector('.finding[data-code="timeline.straggler"]')
    assert page.locator('.finding[data-code="nccl.socket_fallback"]').count() == 0
    page.click("#job-select")
    page.get_by_text("two-jobs.zip!runs/sockets", exact=False).last.click()
    page.wait_for_selector('.finding[data-code="nccl.socket_fallback"]')
    assert page.locator('.finding[data-code="timeline.straggler"]').count() == 0
    _tab(page, "NCCL")
    page.wait_for_selector("#nccl-hosts")
    _tab(page, "Steps")
    page.wait_for_selector("#steps-line")
    sockets_steps = page.inner_text("#steps-line")
    page.click("#job-select")
    page.get_by_text("two-jobs.zip!runs/straggler", exact=False).last.click()
    page.wait_for_function(
        "() => { const e = document.querySelector('#steps-line'); return e && e.innerText.includes('median 121.'); }"
    )
    assert "median 63." in sockets_steps  # the other job's timeline was shown before
    page.wait_for_selector("#step-histogram .main-svg")
    _shot(page, "jobs")


def _report_codes(folder: Path) -> list[str]:
    from analyzer.report.assembly import analyze
    from analyzer.store.discovery import discover
    from analyzer.store.run_store import temporary_store

    with temporary_store() as store:
        store.ingest(*discover([folder]))
        return sorted(f.code for f in analyze(store).findings)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_a_run_folder_archive_gives_the_findings_of_report(page: Any, kind: str) -> None:
    folder = REAL_STRAGGLER.parent  # timeline, steps.csv, env.txt, EXPECTED.md, stdout, ...
    members = {f"{folder.name}/{p.name}": p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
    data = zip_bytes(members) if kind == "zip" else tar_bytes(members)
    _upload(page, f"{folder.name}.{kind}", data, "application/octet-stream")
    _wait_status(page, "Done")
    page.wait_for_selector(".finding")
    shown = sorted(page.eval_on_selector_all(".finding", "els => els.map(e => e.dataset.code)"))
    assert shown == _report_codes(folder)
    assert page.get_by_text(folder.name).count() >= 1  # the run is named after the archive (and when, beside a twin)


def test_rename_delete_and_deep_links(page: Any, server: str) -> None:
    _upload(page, "timeline.json", REAL_STRAGGLER.read_bytes())
    _wait_status(page, "Done")
    _tab(page, "Ranks")
    page.wait_for_selector("#rank-box .main-svg")
    url = page.url
    assert "run=" in url and "page=ranks" in url
    page.fill("#run-name", "straggler after the fix")
    page.click("#rename")
    page.wait_for_selector("text=Renamed to straggler after the fix.")
    assert page.get_by_text("straggler after the fix", exact=True).count() == 1

    other = page.context.new_page()  # a deep link opens that run on that page
    other.set_default_timeout(TIMEOUT)
    other.goto(url)
    other.wait_for_selector("#rank-box .main-svg")
    assert "straggler after the fix" in other.inner_text(".runs")
    other.close()

    page.click("#delete")  # the confirmation dialog is accepted
    page.wait_for_selector("text=Deleted straggler after the fix.")
    assert page.get_by_text("straggler after the fix", exact=True).count() == 0


def test_the_html_report_renders_offline(browser: Any, tmp_path: Path) -> None:
    """The report attached to a ticket opens with no network: every chart drawn, nothing fetched."""
    from click.testing import CliRunner

    from analyzer.cli import cli

    out = tmp_path / "report.html"
    assert CliRunner().invoke(cli, ["report", str(REAL_STRAGGLER.parent), "-o", str(out)]).exit_code == 0
    ctx = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
    requests: list[str] = []
    page = ctx.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    assert requests == [out.as_uri()]  # the file itself, nothing else
    assert page.locator("svg.chart").count() == 4
    box = page.locator("svg.chart").first.bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 150  # drawn, at the page's width
    assert page.locator("#verdict").inner_text().startswith("Degraded: Rank 1 is late")
    page.screenshot(path=str(ARTIFACTS / "report-offline.png"), full_page=True)
    ctx.close()


def test_the_step_view_opens_on_the_slowest_step_and_its_slice_downloads(page: Any, tmp_path: Path) -> None:
    from parsers.timeline import parse_timeline

    _upload(page, "timeline.json", REAL_STRAGGLER.read_bytes())
    _wait_status(page, "Done")
    _tab(page, "Step view")
    page.wait_for_selector("#step-pick")
    page.locator("#step-pick").click()
    page.get_by_text("the slowest step", exact=True).click()
    page.wait_for_function(
        "() => (document.querySelector('#step-gantt .js-plotly-plot')?.layout?.title?.text || '').includes('slowest')"
    )
    ticks = page.evaluate(
        "() => document.querySelector('#step-gantt .js-plotly-plot').data.find(t => t.name === 'rank ready').text"
    )
    assert sorted(set(ticks)) == ["0", "1"] and len(ticks) == 12  # every rank's tick of every gradient
    step = page.get_attribute("#step-view", "data-step")
    title = page.evaluate("() => document.querySelector('#step-gantt .js-plotly-plot').layout.title.text")
    assert step is not None and title.startswith(f"Step {step} (the slowest step)")
    _shot(page, "step-view")
    with page.expect_download() as dl:
        page.click("#step-slice")
    out = tmp_path / "slice.json"
    dl.value.save_as(out)
    spans = parse_timeline(out).tables["spans"]  # valid JSON our own parser reads back
    assert len(spans) > 0 and len(parse_timeline(out).tables["ticks"]) == 12


def test_a_click_on_the_step_chart_opens_that_step_and_tables_export_csv(page: Any, tmp_path: Path) -> None:
    _upload(page, "timeline.json", REAL_STRAGGLER.read_bytes())
    _wait_status(page, "Done")
    _tab(page, "Steps")
    page.wait_for_selector("#step-table")
    with page.expect_download() as dl:
        page.locator("#step-table .export").click()
    out = tmp_path / "steps.csv"
    dl.value.save_as(out)
    lines = out.read_text(encoding="utf-8-sig").splitlines()  # a BOM, so that spreadsheets read UTF-8
    assert lines[0] == "step,step time ms,steady" and len(lines) == 1 + 29
    page.wait_for_selector("#step-series .main-svg")
    page.evaluate(
        """() => {
            const gd = document.querySelector('#step-series .js-plotly-plot');
            gd.emit('plotly_click', {points: [{x: 7, y: gd.data[0].y[6], curveNumber: 0, pointNumber: 6}]});
        }"""
    )
    page.wait_for_selector("#step-view[data-step='7'] .main-svg")
    title = page.evaluate("() => document.querySelector('#step-gantt .js-plotly-plot').layout.title.text")
    assert title.startswith("Step 7 (step)")


def test_the_compare_page_overlays_two_runs_and_checks_the_fix(page: Any) -> None:
    pair = ROOT / "sample_traces" / "compare" / "straggler_removed"
    _upload(page, "before.json", (pair / "before" / "timeline.json").read_bytes())
    _wait_status(page, "Done")
    _upload(page, "after.json", (pair / "after" / "timeline.json").read_bytes())
    _wait_status(page, "Done")
    _tab(page, "Compare")
    page.wait_for_selector("#compare-overlay .js-plotly-plot")
    names = page.evaluate("() => document.querySelector('#compare-overlay .js-plotly-plot').data.map(t => t.name)")
    assert names == ["before", "after"]
    shares = page.evaluate(
        "() => document.querySelector('#compare-overlay .js-plotly-plot').data.map(t => t.y.reduce((a, b) => a + b, 0))"
    )
    assert [round(s) for s in shares] == [100, 100]  # each run's steps, as shares
    assert "AFTER is faster" in page.inner_text("#compare-headline")
    fix = page.inner_text("#fix-check")
    assert "timeline.straggler" in fix and "finding resolved" in fix and "as predicted" in fix
    _shot(page, "compare")
    # the pickers swap the runs: now AFTER is the slower one
    picked = page.locator("#page-content")
    page.locator("#compare-before").click()
    picked.get_by_role("option", name="after.json").click()
    page.locator("#compare-after").click()
    picked.get_by_role("option", name="before.json").click()
    page.wait_for_function("() => document.querySelector('#compare-headline')?.innerText.includes('AFTER is slower')")
