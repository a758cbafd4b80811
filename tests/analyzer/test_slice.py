"""``hvd-analyze slice``: a few steps as a Chrome trace that reads back into the same spans and ticks."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from parsers.timeline import TimelineParser, parse_timeline
from sample_traces.generator.nccl import NcclLogSpec, write_nccl_log
from sample_traces.generator.timeline import TimelineSpec, write_timeline

ROOT = Path(__file__).resolve().parents[2]
STRAGGLER = ROOT / "sample_traces" / "synthetic" / "straggler_nocache" / "timeline.json"  # 8 ranks, rank 5 late
SPAN_KEY = ["pid", "name", "start_us", "end_us"]


def _slice(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["slice", *args])
    return res.exit_code, res.output


def _spans(path: Path, lo: int, hi: int) -> list[tuple[int, str, int, int]]:
    """Spans starting in [lo, hi] (every one of a small file, streamed from a big one)."""
    out = []
    parser = TimelineParser(path)
    for name, table in parser.batches():
        if name != "spans":
            continue
        d = table.select(SPAN_KEY).to_pydict()
        out += [row for row in zip(*(d[k] for k in SPAN_KEY), strict=True) if lo <= row[2] <= hi]
    return sorted(out)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(STRAGGLER, folder / "timeline.json")
    write_nccl_log(folder / "job.log", NcclLogSpec(hosts=2, gpus_per_host=4))
    return folder


def test_a_slice_reads_back_into_the_same_spans_ticks_and_steps(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "slice.json"
    code, msg = _slice(str(run), "--steps", "3:5", "-o", str(out))
    assert code == 0 and "wrote steps 3-4 of" in msg, msg
    events = json.loads(out.read_text())  # valid JSON: what chrome://tracing and Perfetto load
    sliced = parse_timeline(out)
    spans = sliced.tables["spans"].select(SPAN_KEY).to_pylist()
    lo, hi = min(s["start_us"] for s in spans), max(s["start_us"] for s in spans)
    whole = _spans(STRAGGLER, lo, hi)
    assert sorted(tuple(s.values()) for s in spans) == whole and len(whole) > 0
    ticks = sorted(tuple(t.values()) for t in sliced.tables["ticks"].select(["pid", "rank", "ts_us"]).to_pylist())
    full = parse_timeline(STRAGGLER).tables
    starts = dict(zip(full["spans"]["span_id"].to_pylist(), full["spans"]["start_us"].to_pylist(), strict=True))
    expected = sorted(
        (t["pid"], t["rank"], t["ts_us"])
        for t in full["ticks"].to_pylist()
        if lo <= starts[t["negotiation_id"]] <= hi  # the ticks of the negotiations that start in the steps
    )
    assert ticks == expected and len(ticks) == 8 * 16 * 2  # every rank's tick of every tensor of two steps
    assert {i.severity for i in sliced.issues} <= {"info"}  # nothing of Horovod's is lost in a slice
    counters = {e["name"] for e in events if e.get("ph") == "C"}
    assert "rank 5 (gpu-node-001) late (us)" in counters and len(counters) == 8  # a track per rank, with its host
    report = CliRunner().invoke(cli, ["report", "-f", "json", str(out)])
    assert json.loads(report.stdout)["timeline"]["steps"]["count"] == 2


def test_slowest_and_median_pick_those_steps(run: Path, tmp_path: Path) -> None:
    doc = json.loads(CliRunner().invoke(cli, ["report", "-f", "json", str(run)]).stdout)
    assert doc["timeline"]["steps"]["count"] > 3
    for spec in ("slowest", "median"):
        code, msg = _slice(str(run), "--steps", spec, "-o", str(tmp_path / f"{spec}.json"))
        assert code == 0 and "wrote steps " in msg
        first, _, last = msg.split("wrote steps ")[1].split(" of")[0].partition("-")
        assert first == last  # one step
    # the slowest step's slice lasts at least as long as the median step's
    spans = {s: parse_timeline(tmp_path / f"{s}.json").tables["spans"] for s in ("slowest", "median")}
    length = {s: t["end_us"].to_pylist()[-1] - min(t["start_us"].to_pylist()) for s, t in spans.items()}
    assert length["slowest"] >= length["median"]


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--steps", "99:100"], "this run has steps 0 to"),
        (["--steps", "5:3"], "this run has steps 0 to"),
        (["--steps", "a:b"], "expected A:B"),
        (["--timeline", "other.json"], "no Horovod timeline named other.json"),
    ],
)
def test_steps_that_name_nothing_are_usage_errors(run: Path, tmp_path: Path, args: list[str], text: str) -> None:
    code, msg = _slice(str(run), *args, "-o", str(tmp_path / "s.json"))
    assert code == 2 and text in msg and "Traceback" not in msg


def test_a_log_alone_has_no_steps_to_slice(run: Path, tmp_path: Path) -> None:
    code, msg = _slice(str(run / "job.log"), "-o", str(tmp_path / "s.json"))
    assert code == 2 and "no Horovod timeline" in msg


def _peak_rss_of(args: list[str]) -> int:
    """Peak resident bytes of one ``hvd-analyze`` process (start-up included)."""
    script = "import sys; from analyzer.cli import main; sys.argv[0] = 'hvd-analyze'; main()"
    code = f"import resource, subprocess, sys; subprocess.run([sys.executable, '-c', {script!r}, *sys.argv[1:]], check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, check=True)
    return int(res.stdout.split()[-1]) * 1024


@pytest.mark.slow
def test_a_slice_of_a_300_mb_timeline_takes_the_memory_of_the_slice_not_of_the_file(tmp_path: Path) -> None:
    big, small = tmp_path / "big.json", tmp_path / "small.json"
    truth = write_timeline(big, TimelineSpec(ranks=16, tensors=64, steps=2500, cache=False))
    assert truth.bytes_written > 250e6
    write_timeline(small, TimelineSpec(ranks=16, tensors=64, steps=40, cache=False))
    for path in (big, small):
        assert CliRunner().invoke(cli, ["ingest", "-q", str(path), "-o", str(tmp_path / path.stem)]).exit_code == 0
    peaks = {}
    for name in ("big", "small"):
        out = tmp_path / f"{name}-slice.json"
        peaks[name] = _peak_rss_of(["slice", str(tmp_path / name), "--steps", "20:23", "-o", str(out)])
    growth = peaks["big"] - peaks["small"]
    assert growth < 200 << 20, f"slicing a {truth.bytes_written / 1e6:.0f} MB timeline took {growth >> 20} MiB more"
    spans = parse_timeline(tmp_path / "big-slice.json").tables["spans"].select(SPAN_KEY).to_pylist()
    lo, hi = min(s["start_us"] for s in spans), max(s["start_us"] for s in spans)
    assert sorted(tuple(s.values()) for s in spans) == _spans(big, lo, hi)  # the same steps, read from the whole file
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 < 2 << 30  # the reference streamed too
