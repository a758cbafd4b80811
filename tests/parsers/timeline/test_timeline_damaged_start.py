"""A damaged byte in a timeline's first record, or in its opening ``[``, costs that record, not the file
(issue 46, point 7): the sniffer and the tokenizer decide on the first intact records, and the loss is a
counted ``timeline.corrupt_record``. What is not a timeline (another profiler's trace, text) stays refused."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from analyzer.store.discovery import discover
from parsers.errors import InputError
from parsers.inputs import InputKind, sniff
from parsers.timeline import parse_timeline
from tests.conftest import CORPUS, ROOT

GLUED = ROOT / "sample_traces" / "captured" / "straggler_nocache" / "timeline.json"  # >= 0.20.1 layout
STRUCTURE = {bytes([c]) for c in b'{}:,"'}
LEGACY = ROOT / "sample_traces" / "synthetic" / "legacy_line_per_event" / "timeline.json"  # <= 0.20.0 layout


@pytest.mark.parametrize("source", [GLUED, LEGACY], ids=["glued", "line_per_event"])
def test_every_byte_of_the_first_record_damaged_costs_that_record_only(source: Path, tmp_path: Path) -> None:
    data = source.read_bytes()
    whole = parse_timeline(source).tables["spans"].num_rows
    first_record_end = data.index(b"\n", 3) + 1
    for pos in range(first_record_end):
        damaged = bytearray(data)
        damaged[pos] = ord("#") if damaged[pos] != ord("#") else ord("@")
        path = tmp_path / f"d{pos}.json"
        path.write_bytes(bytes(damaged))
        assert sniff(path).kind is InputKind.HOROVOD_TIMELINE, pos
        parsed = parse_timeline(path)
        assert parsed.tables["spans"].num_rows == whole, pos  # the first record is metadata: no span lost
        if data[pos : pos + 1] in STRUCTURE:  # the record can no longer be read: skipped and counted
            assert [i for i in parsed.issues if i.code != "timeline.unterminated"], pos


def test_a_damaged_start_in_a_gzip_and_in_a_folder_is_read_too(tmp_path: Path) -> None:
    data = bytearray(GLUED.read_bytes())
    data[0] = ord("#")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "timeline.json.gz").write_bytes(gzip.compress(bytes(data)))
    found, skipped = discover([tmp_path / "run"])
    assert [f.kind for f in found] == [InputKind.HOROVOD_TIMELINE] and not skipped
    issues = {i.code: i for i in parse_timeline(found[0].path).issues}
    assert "first bytes are damaged" in issues["timeline.corrupt_record"].message


@pytest.mark.parametrize(
    "text",
    [
        b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a"}, {"ph": "X", "name": "b"}, {"ph": "X"}]}',
        b'#notes\n{"ph": "B" is how a record starts\n',
        b"# just text\nnothing here\n",
    ],
)
def test_what_is_not_a_timeline_stays_refused(text: bytes, tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(text)
    assert sniff(path).kind is not InputKind.HOROVOD_TIMELINE
    with pytest.raises(InputError):
        parse_timeline(path)


def test_profiler_traces_of_the_corpus_are_not_taken_for_damaged_timelines(corpus: Path) -> None:
    traces = sorted((corpus / "kineto-public").rglob("*.json*"))
    assert traces and all(sniff(p).kind is InputKind.RANK_TRACE for p in traces)  # each rank's own trace
    assert CORPUS.is_dir()
