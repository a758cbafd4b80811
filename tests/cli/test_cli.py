"""The CLI edge: exit codes, format inference, errors as one message (no traceback)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from sample_traces.generator.timeline import TimelineSpec, write_timeline
from tests.builders import B, E, glued, meta, write
from tests.conftest import validate_report


@pytest.fixture
def cut(tmp_path: Path) -> Path:
    path = tmp_path / "cut.json"
    write_timeline(path, TimelineSpec(ranks=2, tensors=3, steps=3, truncate_at=0.6))
    return path


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write(tmp_path, glued(meta(1, "t"), B("ALLREDUCE", 1, 1), E(2, 1)), "good.json")


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_ingest_then_report_on_the_store(tmp_path: Path, cut: Path) -> None:
    code, out, _ = run("ingest", str(cut), "-o", str(tmp_path / "s"))
    assert code == 0 and "added" in out and "truncated" in out
    size = cut.stat().st_size / 1e6
    assert re.search(rf"^ingested 1 input\(s\), {size:,.1f} MB in [0-9.]+ s \([0-9.,]+ MB/s\)$", out, re.MULTILINE)
    code, out, _ = run("ingest", str(cut), "-o", str(tmp_path / "s"))
    assert code == 0 and "unchanged" in out and "ingested 0 input(s), 0.0 MB" in out
    code, out, _ = run("report", str(tmp_path / "s"), "--format", "json")
    doc = validate_report(json.loads(out))
    assert [f["code"] for f in doc["findings"]] == ["timeline.truncated"]
    assert doc["timeline"]["steps"]["count"] > 0


@pytest.mark.parametrize(
    ("ext", "marker"),
    [
        (".html", "<!DOCTYPE html>"),
        (".md", "# hvd-analyze report"),
        (".json", '{"schema_version"'),
        (".txt", "hvd-analyze 0.1.0 report"),
    ],
)
def test_format_follows_the_output_extension(tmp_path: Path, cut: Path, ext: str, marker: str) -> None:
    out = tmp_path / f"report{ext}"
    code, _, _ = run("report", str(cut), "-o", str(out), "-q")
    assert code == 0
    text = out.read_text()
    assert text.replace("\n", "").replace(" ", "").startswith(marker.replace(" ", "")), text[:80]
    if ext == ".json":
        validate_report(json.loads(text))


def test_unknown_extension_is_a_usage_error(tmp_path: Path, cut: Path) -> None:
    code, _, err = run("report", str(cut), "-o", str(tmp_path / "r.pdf"))
    assert code == 2 and "cannot tell the format" in err


@pytest.mark.parametrize(("fail_on", "expected"), [("warning", 1), ("info", 1), ("critical", 0), (None, 0)])
def test_fail_on(cut: Path, fail_on: str | None, expected: int) -> None:
    args = ["report", str(cut), "-q"] + (["--fail-on", fail_on] if fail_on else [])
    assert run(*args)[0] == expected


def test_clean_input_passes_the_gate(good: Path) -> None:
    code, out, _ = run("report", str(good), "--fail-on", "info")
    assert code == 0 and "No findings." in out


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"\x00\x01\x02garbage", "not an input"),
        (b'{"traceEvents": []}', "JSON object"),
        (b"[" + b"9" * (10 * 1024 * 1024), "expected a trace event object"),
    ],
    ids=["binary", "object", "10MB-token"],
)
def test_bad_input_is_one_message_and_exit_2(tmp_path: Path, content: bytes, needle: str) -> None:
    path = write(tmp_path, content, "bad.json")
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "report", str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("hvd-analyze: error: ") and str(path) in proc.stderr and needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_path_and_bad_store(tmp_path: Path) -> None:
    assert run("report", str(tmp_path / "nope"))[0] == 2
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "manifest.json").write_text('{"schema_version": 99, "tool_version": "9.0"}')
    code, _, err = run("report", str(tmp_path / "s"))
    assert code == 2 and "newer hvd-analyze" in err


def test_help_lists_commands() -> None:
    code, out, _ = run("--help")
    assert code == 0 and "ingest" in out and "report" in out


def test_cut_gzip_input_is_reported_not_a_crash(tmp_path: Path, good: Path) -> None:
    import gzip

    data = gzip.compress(good.read_bytes() * 1)  # tiny: the cut lands in the first block
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) - 12])
    code, out, err = run("report", str(path), "-f", "json", "-q")
    # nothing survived the cut: nothing to analyse, said with what was lost, never "Healthy"
    assert code == 2 and not out, out
    assert "nothing to analyse" in err and f"{path}: read as a Horovod timeline" in err
    assert "1 loss(es) of data: the file is cut or damaged" in err and "Traceback" not in err


def test_batch_and_scale_options(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from analyzer.cli import cli
    from sample_traces.generator.timeline import TimelineSpec, write_timeline

    runs = tmp_path / "runs"
    for i, strag in enumerate((False, True)):
        (runs / f"job-{i}").mkdir(parents=True)
        write_timeline(
            runs / f"job-{i}" / "timeline.json",
            TimelineSpec(
                ranks=4,
                tensors=6,
                steps=10,
                cache=False,
                straggler_ranks=(2,) if strag else (),
                straggler_delay_us=20_000 if strag else 0,
            ),
        )
    res = CliRunner().invoke(cli, ["batch", str(runs), "-o", str(tmp_path / "out"), "-j", "1", "--fail-on", "critical"])
    assert res.exit_code == 1 and "2 runs: 2 analysed, 0 failed; 1 with findings" in res.output
    assert "`job-1`: rank(s) 2" in (tmp_path / "out" / "fleet.md").read_text()
    for i in range(2):  # each run's report is the JSON report
        validate_report(json.loads((tmp_path / "out" / "runs" / f"job-{i}.json").read_text()))
    res = CliRunner().invoke(
        cli, ["ingest", str(runs), "-o", str(tmp_path / "s"), "--scheduler", "tcp://x:1", "--dask-workers", "2"]
    )
    assert res.exit_code == 2 and "exclude each other" in res.output
    res = CliRunner().invoke(cli, ["batch", str(tmp_path / "nothing"), "-o", str(tmp_path / "o2")])
    assert res.exit_code == 2 and "not a folder" in res.output


def test_batch_keeps_stores_that_read_as_one_dataset_by_run(tmp_path: Path) -> None:
    """``--keep-stores``: a store per run under OUTPUT/stores, its tables in run=<run>; the
    stores of the fleet are one hive-partitioned dataset, and a rerun reuses them."""
    import duckdb

    runs = tmp_path / "runs"
    for i in range(3):
        (runs / f"job-{i}").mkdir(parents=True)
        write_timeline(runs / f"job-{i}" / "timeline.json", TimelineSpec(ranks=2, tensors=3, steps=4, seed=i))
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["batch", str(runs), "-o", str(out), "-j", "1", "--keep-stores"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (out / "stores").iterdir()) == ["job-0", "job-1", "job-2"]
    rows = duckdb.sql(
        f"select run, count(*) from read_parquet('{out}/stores/*/tables/spans/*/*/*.parquet', "
        "hive_partitioning=true) group by run order by run"
    ).fetchall()
    assert [r[0] for r in rows] == ["job-0", "job-1", "job-2"] and all(r[1] > 0 for r in rows)
    before = (out / "stores" / "job-0" / "manifest.json").read_text()
    assert CliRunner().invoke(cli, ["batch", str(runs), "-o", str(out), "-j", "1", "--keep-stores"]).exit_code == 0
    after = json.loads((out / "stores" / "job-0" / "manifest.json").read_text())
    assert [e["sha256"] for e in after["inputs"]] == [e["sha256"] for e in json.loads(before)["inputs"]]


def test_ingest_run_names_the_partition(tmp_path: Path, good: Path) -> None:
    code, _, _ = run("ingest", str(good), "-o", str(tmp_path / "s"), "--run", "job-7.a")
    assert code == 0
    assert [p.name for p in (tmp_path / "s" / "tables" / "spans").iterdir()] == ["run=job-7.a"]
    code, out, err = run("ingest", str(good), "-o", str(tmp_path / "s"), "--run", "other")
    assert code == 2 and "holds run 'job-7.a'" in err + out
    code, out, err = run("ingest", str(good), "-o", str(tmp_path / "t"), "--run", "a/b")
    assert code == 2 and "letters, digits" in err + out and not (tmp_path / "t").exists()


def test_nothing_analysed_is_exit_2_with_what_was_found(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run("report", str(tmp_path / "empty"), "--fail-on", "info")
    assert code == 2 and "nothing to analyse" in err and "no files in it" in err
    pngs = tmp_path / "pngs"
    pngs.mkdir()
    for i in range(7):
        (pngs / f"plot{i}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    code, _, err = run("report", str(pngs))
    assert code == 2 and "7 file(s), none a Horovod timeline" in err and "plot0.png" in err and "2 more" in err
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "manifest.json").write_text('{"schema_version": 3, "run": "s", "inputs": []}')
    code, _, err = run("report", str(tmp_path / "s"))
    assert code == 2 and "holds no input yet" in err


def test_stores_are_reported_one_at_a_time_and_never_dropped(tmp_path: Path, good: Path, cut: Path) -> None:
    s1, s2 = str(tmp_path / "s1"), str(tmp_path / "s2")
    assert run("ingest", str(good), "-o", s1)[0] == 0 and run("ingest", str(cut), "-o", s2)[0] == 0
    code, out, err = run("report", s1, s2)
    assert code == 2 and "2 run stores given" in err and "batch" in err and out == ""
    code, _, err = run("report", s1, str(cut))
    assert code == 2 and f"{s1} is a run store" in err and f"ingest {cut} -o {s1}" in err
    code, _, err = run("report", str(tmp_path / "s1" / "tables"))
    assert code == 2 and "lies inside the run store" in err


def test_fail_on_names_the_findings_that_tripped_it(cut: Path) -> None:
    code, _, err = run("report", str(cut), "-q", "--fail-on", "info")
    assert code == 1
    (line,) = [x for x in err.splitlines() if "--fail-on" in x]
    assert line.startswith("hvd-analyze: --fail-on info: ") and "timeline.truncated (" in line


def test_batch_exit_codes(tmp_path: Path, good: Path) -> None:
    junk = tmp_path / "junk"
    for name in ("a", "b"):
        (junk / name).mkdir(parents=True)
        (junk / name / "notes.txt").write_text("nothing here\n")
    res = CliRunner().invoke(cli, ["batch", str(junk), "-o", str(tmp_path / "o1")])
    assert res.exit_code == 2 and "no run of" in res.stderr
    mixed = tmp_path / "mixed"
    (mixed / "ok").mkdir(parents=True)
    (mixed / "ok" / "t.json").write_bytes(good.read_bytes())
    (mixed / "bad").mkdir()
    (mixed / "bad" / "notes.txt").write_text("nothing here\n")
    res = CliRunner().invoke(cli, ["batch", str(mixed), "-o", str(tmp_path / "o2")])
    assert res.exit_code == 1 and "1 run(s) failed: bad" in res.stderr
    res = CliRunner().invoke(cli, ["batch", str(mixed), "-o", str(tmp_path / "o3"), "--allow-failures"])
    assert res.exit_code == 0


def test_batch_on_one_run_says_so(tmp_path: Path, good: Path) -> None:
    one = tmp_path / "run"
    one.mkdir()
    (one / "timeline.json").write_bytes(good.read_bytes())
    (one / "job.log").write_text("h:1:1 [0] NCCL INFO Using network IB\n")
    res = CliRunner().invoke(cli, ["batch", str(one), "-o", str(tmp_path / "o")])
    assert res.exit_code == 2 and "looks like one run" in res.stderr and f"report {one}" in res.stderr
    assert run("ingest", str(one), "-o", str(tmp_path / "s"))[0] == 0
    res = CliRunner().invoke(cli, ["batch", str(tmp_path / "s"), "-o", str(tmp_path / "o")])
    assert res.exit_code == 2 and "is one run store" in res.stderr


def test_a_second_writer_is_refused_while_the_first_holds_the_store(tmp_path: Path, good: Path, cut: Path) -> None:
    import fcntl

    store = tmp_path / "s"
    assert run("ingest", str(good), "-o", str(store))[0] == 0
    with open(store / ".writer.lock", "a+") as held:  # what a running ingest holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242 since 2026-11-23 10:00:00\n")
        held.flush()
        code, _, err = run("ingest", str(cut), "-o", str(store))
        assert code == 2 and "another hvd-analyze is writing to this store (pid 4242" in err
        assert run("report", str(store))[0] == 0  # readers take no lock
    assert run("ingest", str(cut), "-o", str(store))[0] == 0  # free again: the ingest goes on
    assert "cut.json" in run("report", str(store))[1]


def test_a_second_writer_with_wait_waits_for_the_first(tmp_path: Path, good: Path, cut: Path) -> None:
    import fcntl
    import threading
    import time

    store = tmp_path / "s"
    assert run("ingest", str(good), "-o", str(store))[0] == 0
    held = open(store / ".writer.lock", "a+")  # released by the timer below
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    threading.Timer(1.0, held.close).start()  # the first writer finishes in a second
    start = time.monotonic()
    assert run("ingest", "--wait", str(cut), "-o", str(store))[0] == 0
    assert time.monotonic() - start >= 0.9  # it waited, then wrote
    assert "cut.json" in run("report", str(store))[1]


def test_special_files_and_bad_options_are_usage_errors(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, _, err = run("report", str(fifo))  # reading it would block forever
    assert code == 2 and "not a regular file" in err
    code, _, err = run("report", str(tmp_path), "--memory-budget", "inf")
    assert code == 2 and "expected a size" in err
    assert CliRunner().invoke(cli, ["serve", "--port", "99999"]).exit_code == 2


def test_a_crash_inside_hvd_analyze_exits_3_with_one_message(tmp_path: Path, good: Path) -> None:
    script = (
        "import sys, analyzer.report.assembly as a\n"
        "def boom(*args, **kwargs): raise RuntimeError('kaboom')\n"
        "a.analyze = boom\n"
        f"sys.argv = ['hvd-analyze', 'report', {str(good)!r}]\n"
        "from analyzer.cli import main\nmain()\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert (
        proc.stderr.startswith("hvd-analyze: internal error: RuntimeError: kaboom")
        and "HVD_ANALYZE_DEBUG" in proc.stderr
    )


def test_the_console_script_leaves_with_its_exit_code_and_every_byte_of_output(tmp_path: Path, cut: Path) -> None:
    """``main`` leaves by ``os._exit`` (no interpreter teardown): output through a pipe is complete,
    files are whole, and exit codes are click's (0, 1 for --fail-on, 2 for bad input)."""
    exe = str(Path(sys.executable).with_name("hvd-analyze"))
    text = subprocess.run([exe, "report", "-f", "md", str(cut)], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and text.stdout.startswith("# hvd-analyze") and text.stdout.endswith("\n")
    doc = subprocess.run([exe, "report", "-f", "json", str(cut)], capture_output=True, text=True, timeout=120)
    assert doc.returncode == 0 and json.loads(doc.stdout)["inputs"]  # the whole document, parsed
    out = tmp_path / "r.html"
    gate = subprocess.run(
        [exe, "report", str(cut), "-o", str(out), "--fail-on", "info"], capture_output=True, timeout=120
    )
    assert gate.returncode == 1 and out.read_text(encoding="utf-8").rstrip().endswith("</html>")
    bad = subprocess.run([exe, "report", str(tmp_path / "none")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no such file" in bad.stderr


def test_an_unreadable_file_in_a_folder_is_skipped_not_fatal(tmp_path: Path, good: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "t.json").write_bytes(good.read_bytes())
    (run_dir / "gone.log").symlink_to(tmp_path / "nowhere.log")  # a dangling link
    code, out, _ = run("report", str(run_dir), "-f", "json")
    assert code == 0
    skipped = json.loads(out)["skipped_files"]
    assert [s["path"].split("/")[-1] for s in skipped] == ["gone.log"] and "cannot read" in skipped[0]["reason"]


def test_a_full_disk_names_the_store_and_the_remedy(
    tmp_path: Path, good: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from analyzer.store.run_store import RunStore

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(RunStore, "ingest", full)
    code, _, err = run("ingest", str(good), "-o", str(tmp_path / "s"))
    assert code == 2 and f"no space left on the device holding the store {tmp_path / 's'}" in err
    assert "running it again continues it" in err


def test_a_file_that_grows_while_it_is_ingested_is_refused_and_can_be_ingested_later(tmp_path: Path) -> None:
    from analyzer.store.discovery import discover
    from analyzer.store.run_store import RunStore
    from parsers.errors import InputError

    log = tmp_path / "job.log"
    log.write_text("h:1:1 [0] NCCL INFO Using network IB\n")
    found = discover([log])
    with open(log, "a") as f:  # the job is still writing it
        f.write("h:1:1 [0] NCCL INFO Using network Socket\n")
    store = RunStore.create_or_open(tmp_path / "s")
    with pytest.raises(InputError, match="changed while it was read"):
        store.ingest(*found)
    assert RunStore.open(tmp_path / "s").inputs == []  # nothing half-listed
    assert run("ingest", str(log), "-o", str(tmp_path / "s"))[0] == 0  # once complete
    assert len(RunStore.open(tmp_path / "s").inputs) == 1


def test_serve_runs_on_a_production_wsgi_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import waitress
    from waitress.server import BaseWSGIServer

    from dashboards.front import CONNECTION_LIMIT

    seen: dict[str, object] = {}

    class Server(BaseWSGIServer):  # type: ignore[misc] # what create_server returns, without a socket
        def __init__(self) -> None:
            self._map: dict[int, object] = {}

        def run(self) -> None:
            seen["ran"] = True

    def create_server(app: object, **kw: object) -> Server:
        seen.update(kw, app=app)
        seen["server"] = server = Server()
        return server

    monkeypatch.setattr(waitress, "create_server", create_server)
    res = CliRunner().invoke(cli, ["serve", "--store-dir", str(tmp_path / "runs"), "--port", "8123", "--threads", "4"])
    assert res.exit_code == 0, res.output
    assert (seen["host"], seen["port"], seen["threads"]) == ("127.0.0.1", 8123, 4)
    assert seen["max_request_body_size"] == seen["app"].config["MAX_CONTENT_LENGTH"]  # type: ignore[attr-defined]
    assert seen["connection_limit"] == CONNECTION_LIMIT and seen["ran"]
    channel = seen["server"].channel_class  # type: ignore[attr-defined]
    assert channel.parser_class.__name__ == "GuardedParser"  # the headers are checked before the body
