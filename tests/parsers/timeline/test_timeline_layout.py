"""The tokenizer reads Horovod's own byte layout in one fast pass and everything else through its
general parse (:func:`parsers.timeline._tokenize._canonical`). Both must give the same rows: each
record below is parsed as Horovod writes it and again with a second blank after ``"ph":``, which
the fast pass never takes (and which keeps ``{"ph"``, where reading resumes after a bad record). The records are the layout itself and its near misses: what must fall back."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from parsers.timeline import parse_timeline

OFFSETS = {"start_offset", "end_offset", "offset", "byte_offset"}

#: a negotiation and an op with their ticks, then each near miss of the fast layout
RECORDS = [
    '{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "allreduce.fc1.weight"}}',
    '{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 10, "pid": 1}',
    '{"ph": "X", "name": "1", "ts": 11, "pid": 1, "dur": 0}',
    '{"ph": "X", "name": "0", "ts": 15, "pid": 1, "dur": 0}',
    '{"ph": "E", "ts": 15, "pid": 1}',
    '{"ph": "B", "name": "ALLREDUCE", "ts": 20, "pid": 1}',
    '{"ph": "B", "name": "NCCL_ALLREDUCE", "ts": 21, "pid": 1}',
    '{"ph": "E", "ts": 40, "pid": 1}',
    '{"ph": "E", "ts": 41, "pid": 1, "args": {"dtype": "float32", "shape": "[172, 4096]"}}',
    '{"ph": "i", "name": "CYCLE_START", "ts": 42, "s": "g"}',
    '{"ph": "B", "name": "a\\"b", "ts": 50, "pid": 2}',  # an escape in the name
    '{"ph": "B", "name": "a"b", "ts": 51, "pid": 2}',  # Horovod's unescaped quote
    '{"ph": "B", "name": "a",b", "ts": 52, "pid": 2}',  # ... followed by a comma
    '{"ph": "E", "ts": 53.5, "pid": 2}',  # a float
    '{"ph": "E", "ts": -54, "pid": 2}',  # a sign
    '{"ph": "B", "name": "Q", "ts": 55, "pid": -2}',
    '{"ph": "X", "name": "3", "ts": 56, "pid": 2, "dur": "0"}',  # a string duration
    '{"ph": "X", "name": "3", "ts": 57, "pid": 2, "dur": 0.5}',
    '{"ph": "X", "name": "3", "ts": 58, "pid": 2, "dur": 0, "tid": 1}',  # a key after
    '{"ph": "E", "ts": 59}',  # no pid
    '{"ph": "E", "pid": 2}',  # no ts
    '{"ph": "XX", "name": "1", "ts": 60, "pid": 2}',  # a phase of two letters
    '{"ph": "", "ts": 61, "pid": 2}',
    '{"ph": """, "ts": 62, "pid": 2}',
    '{"ph": "\\\\", "ts": 63, "pid": 2}',
    '{"ph": "\\", "ts": 63, "pid": 2}',  # an escaped quote closes nothing
    '{"ph": "B", "name": "", "ts": 64, "pid": 3}',
    '{"ph": "B", "name": "\u00e9\u4e2d", "ts": 65, "pid": 3}',
    '{"ph": "E", "ts": 99999999999999999999, "pid": 3}',  # wraps as in the general parse
    '{"ph": "E", "ts": 66, "pid": 3 }',
    '{"ph": "E", "ts": 67, "pid": 3, "dur": 0 , "args": {}}',
]


def _without_offsets(table: pa.Table) -> pa.Table:
    return table.drop_columns([c for c in table.column_names if c in OFFSETS])


def _parsed(path: Path, records: list[str]) -> tuple[dict[str, pa.Table], dict[str, int]]:
    path.write_text("[\n" + ",\n".join(records) + "\n]\n", encoding="utf-8")
    p = parse_timeline(path)
    return {k: _without_offsets(t) for k, t in p.tables.items()}, {i.code: i.count for i in p.issues}


@pytest.mark.parametrize("glue", [",\n", ","])
def test_horovods_layout_and_its_near_misses_parse_as_the_general_parse_does(tmp_path: Path, glue: str) -> None:
    records = RECORDS if glue == ",\n" else [r.replace("\n", "") for r in RECORDS]
    fast, fast_issues = _parsed(tmp_path / "fast.json", records)
    general, general_issues = _parsed(tmp_path / "general.json", [r.replace('{"ph": ', '{"ph":  ', 1) for r in records])
    assert fast_issues == general_issues
    for name, table in fast.items():
        assert table.equals(general[name]), name
    # the layout itself was read: the negotiation's two ticks, the spans by name
    assert fast["ticks"].column("rank").to_pylist()[:2] == [1, 0]
    assert {"NEGOTIATE_ALLREDUCE", "ALLREDUCE", "NCCL_ALLREDUCE"} <= set(fast["spans"].column("name").to_pylist())


@pytest.mark.parametrize("cut", range(1, len(RECORDS[2])))
def test_a_record_cut_anywhere_in_the_layout_is_a_cut_not_a_row(tmp_path: Path, cut: int) -> None:
    """The fast pass never reads past the buffer: a tick cut at any byte is the file's cut end."""
    head = ",".join(RECORDS[:2])
    path = tmp_path / "cut.json"
    path.write_text("[" + head + "," + RECORDS[2][:cut], encoding="utf-8")
    p = parse_timeline(path)
    assert p.info.status == "truncated"
    assert p.tables["ticks"].num_rows == 0
