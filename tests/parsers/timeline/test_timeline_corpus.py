"""Acceptance on the real timelines in ../shared/corpus (skipped when it is absent).

horovod-cpu: span counts, unclosed-B counts and per-activity medians must match the
``analysis.txt`` next to each timeline (exact counts, medians within 1%).
horovod-public: the counts stated in SOURCES.md and the format spec.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from parsers.issues import IssueSeverity
from parsers.timeline import parse_timeline

ACTIVITY_RE = re.compile(r"^\s+([A-Z_]+)\s+count=\s*(\d+) dur_us median=\s*(\d+)", re.MULTILINE)
UNCLOSED_RE = re.compile(r"unclosed B at end: \[(.*)\]")
PH_RE = re.compile(r"ph counts=\{(.*?)\}")


def cpu_timelines(corpus: Path) -> list[Path]:
    return sorted(corpus.glob("horovod-cpu/*/timeline*.json"))


def test_every_cpu_timeline_matches_its_analysis(corpus: Path) -> None:
    files = cpu_timelines(corpus)
    assert len(files) >= 14
    for path in files:
        parsed = parse_timeline(path)
        assert not [i for i in parsed.issues if i.severity == IssueSeverity.ERROR], path
        analysis = (path.parent / "analysis.txt").read_text()
        spans = parsed.tables["spans"].to_pandas()
        closed = spans[spans["closed"]]
        stats = closed.groupby("name", observed=True)["dur_us"].agg(["count", "median"])
        expected = ACTIVITY_RE.findall(analysis)
        assert expected, path
        for name, count, median in expected:
            assert stats.loc[name, "count"] == int(count), (path, name)
            assert abs(stats.loc[name, "median"] - float(median)) <= 0.01 * float(median) + 0.5, (path, name)
        unclosed = UNCLOSED_RE.search(analysis)[1]
        expected_open = re.findall(r"\('([^']*)', '([^']*)'\)", unclosed)
        got_open = spans[~spans["closed"]]
        assert sorted(zip(got_open["tensor"], got_open["name"], strict=True)) == sorted(expected_open), path
        ph = dict(re.findall(r"'(\w)': (\d+)", PH_RE.search(analysis)[1]))
        assert parsed.info.counts["ticks"] == int(ph.get("X", 0)), path
        assert parsed.info.counts["markers"] == int(ph.get("i", 0)), path
        assert len(spans) == int(ph["B"]), path


def test_cpu_timelines_facts(corpus: Path) -> None:
    for path in cpu_timelines(corpus):
        info = parse_timeline(path).info
        assert info.layout == "glued" and info.status == "closed", path
        assert info.version.low == (0, 20, 1), path
        assert info.start_time_since_epoch_us is not None and not info.uptime_origin
        cache = (
            "off" if path.parent.name.startswith("d2_") else ("unknown" if path.parent.name.startswith("i_") else "on")
        )
        if cache != "unknown":
            assert info.cache.response_cache == cache, path


@pytest.mark.parametrize(
    ("name", "status", "layout", "records", "ticks", "markers"),
    [
        ("andrewor14-tf-logs-e2205b9-horovod_timeline.json", "unterminated", "line_per_event", None, 673 * 4, 13999),
        ("andrewor14-tf-logs-72f32f9-horovod_timeline.json", "unterminated", "line_per_event", None, 673 * 12, 0),
        ("alcf-workshop-timeline_gpu_n1.json", "closed", "glued", 23163, None, 22784),
        ("alcf-workshop-timeline_cpu_n1.json", "closed", "glued", None, None, 0),
        ("cipherdoc34-pytorch_horovod_profiling-1838b40-test.json", "closed", "glued", 4188, None, 0),
    ],
)
def test_public_timelines(
    corpus: Path, name: str, status: str, layout: str, records: int | None, ticks: int | None, markers: int
) -> None:
    parsed = parse_timeline(corpus / "horovod-public" / name)
    info = parsed.info
    assert (info.status, info.layout) == (status, layout)
    assert not [i for i in parsed.issues if i.severity != IssueSeverity.INFO]
    spans = parsed.tables["spans"].to_pandas()
    assert spans["closed"].all() and info.max_depth <= 2  # 0 orphans, 0 unclosed, depth <= 2
    if records is not None:
        assert info.records == records
    if ticks is not None:
        assert info.counts["ticks"] == ticks
    assert info.counts["markers"] == markers
    if layout == "line_per_event":
        assert info.uptime_origin and info.version.high == (0, 20, 0)


def test_issue_fragment_is_read_without_errors(corpus: Path) -> None:
    parsed = parse_timeline(corpus / "horovod-public" / "horovod-issue-321-snippet.json")
    assert {i.code for i in parsed.issues} == {"timeline.headless_fragment", "timeline.unterminated"}
    assert all(i.severity == IssueSeverity.INFO for i in parsed.issues)
