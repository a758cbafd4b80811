"""The audit's small breaks (issue 46, point 9): input strings in Plotly labels are text, an origin is
scheme, host and port, a token is long enough to resist guessing, and an output is whole or absent."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.cli.options import output_file
from analyzer.render.gantt import step_gantt
from dashboards.api import host_refused
from tests.conftest import ROOT

LINK = '<a href="http://evil.example/">weights</a>'


def test_a_tensor_named_like_a_link_is_text_in_the_step_view() -> None:
    fig = step_gantt([(1, "ALLREDUCE", 0, 10)], [(1, 0, 5)], {1: LINK}, "Step 3")
    labels = [y for trace in fig.data for y in trace.y]
    assert all("<a" not in str(y) and "&lt;a href=" in str(y) for y in labels)
    bars = step_gantt([(1, LINK, 0, 10)], [], {1: "w"}, "Step 3").data[0]
    assert "<a" not in str(bars.customdata[0])


@pytest.mark.parametrize(
    ("origin", "refused"),
    [
        ("http://localhost:8050", False),
        ("http://localhost:9999", True),  # another app on the same host is another origin
        ("https://localhost:8050", True),
        ("http://evil.example", True),
        (None, False),  # a request that is not from a page (curl, the job's exit hook)
    ],
)
def test_an_origin_is_its_scheme_host_and_port(origin: str | None, refused: bool) -> None:
    why = host_refused("localhost:8050", origin, "POST", {"localhost"}, "http")
    assert (why is not None) is refused
    assert host_refused("localhost:8050", origin, "GET", {"localhost"}, "http") is None  # reading is not changing


def test_a_short_token_is_refused(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["serve", "--token", "x", "--store-dir", str(tmp_path)])
    assert res.exit_code == 2 and "at least 16 characters" in res.stderr


def test_an_output_is_whole_or_absent(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("the last good report")
    with pytest.raises(OSError), output_file(str(target)) as f:
        f.write(b"<html>half")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert target.read_text() == "the last good report" and [p.name for p in tmp_path.iterdir()] == ["report.html"]
    fresh = tmp_path / "new.json"
    res = CliRunner().invoke(
        cli, ["report", "-o", str(fresh), "-f", "json", str(ROOT / "sample_traces/captured/straggler_nocache")]
    )
    assert res.exit_code == 0 and fresh.read_text().startswith("{")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.json", "report.html"]  # no temporary file left
