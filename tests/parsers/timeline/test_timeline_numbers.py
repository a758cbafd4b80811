"""Numbers the tables cannot hold: a record whose ts or pid is beyond int64 (or a float that is
not finite) is unreadable and counted, never wrapped by int64 arithmetic into a plausible value; a
shape whose element count would overflow has no size. The compiled tokenizer and its
plain-Python reference agree on all of them (the reference's integers do not wrap)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.timeline import parse_timeline
from tests.builders import B, E, glued, meta, write
from tests.kernels.reference import parsed_tables, reference_parser

GOOD = [B("NEGOTIATE_ALLREDUCE", 1000, 1), E(1100, 1), B("ALLREDUCE", 1200, 1), E(1300, 1)]


def _with(record: str) -> str:
    return glued(meta(1, "grad.w"), GOOD[0], record, *GOOD[1:])


@pytest.mark.parametrize(
    "value",
    [
        "9223372036854775808",  # int64's max + 1: 19 digits, past the fast pass's 18
        "99999999999999999999999",  # would wrap in int64
        "-9223372036854775809",
        "1e400",  # valid JSON, an infinite double
        "-1.5e30",
        "12345678901234567890.5",
    ],
)
@pytest.mark.parametrize("key", ["ts", "pid"])
def test_a_ts_or_pid_out_of_range_makes_the_record_unreadable(tmp_path: Path, key: str, value: str) -> None:
    ts, pid = (value, "1") if key == "ts" else ("1050", value)
    record = f'{{"ph": "B", "name": "NEGOTIATE_BROADCAST", "ts": {ts}, "pid": {pid}}}'
    path = write(tmp_path, _with(record))
    parsed = parse_timeline(path)
    lost = [i for i in parsed.issues if i.code == "timeline.corrupt_record"]
    assert len(lost) == 1 and lost[0].count == 1, parsed.issues
    assert value.split(".")[0][:12] in lost[0].message  # the message shows the number
    spans = parsed.tables["spans"].to_pylist()
    assert [(s["name"], s["start_us"], s["end_us"]) for s in spans] == [
        ("NEGOTIATE_ALLREDUCE", 1000, 1100),
        ("ALLREDUCE", 1200, 1300),
    ]
    with reference_parser():
        reference = parsed_tables(path)
    assert reference == parsed_tables(path)


@pytest.mark.parametrize(
    ("value", "ts"),
    [
        ("999999999999999999", 999999999999999999),  # 18 digits: the fast pass
        ("9223372036854775807", 2**63 - 1),  # int64's max: the general parse
        ("1e-400", 0),
        ("1.5e3", 1500),
    ],
)
def test_numbers_just_within_range_are_read(tmp_path: Path, value: str, ts: int) -> None:
    path = write(tmp_path, _with(f'{{"ph": "i", "name": "CYCLE_START", "ts": {value}, "s": "g"}}'))
    parsed = parse_timeline(path)
    assert not [i for i in parsed.issues if i.code == "timeline.corrupt_record"]
    assert parsed.tables["markers"].column("ts_us").to_pylist() == [ts]
    with reference_parser():
        reference = parsed_tables(path)
    assert reference == parsed_tables(path)


def test_a_huge_number_in_args_is_skipped_with_its_value(tmp_path: Path) -> None:
    record = (
        '{"ph": "B", "name": "ALLREDUCE", "ts": 1050, "pid": 2, "args": {"big": 1e999, "n": 123456789012345678901234}}'
    )
    path = write(tmp_path, _with(record))
    parsed = parse_timeline(path)
    assert not [i for i in parsed.issues if i.code == "timeline.corrupt_record"]
    assert [s["pid"] for s in parsed.tables["spans"].to_pylist() if s["start_us"] == 1050] == [2]


@pytest.mark.parametrize(
    ("shape", "numel"),
    [
        ("[4, 8]", 32),
        ("[]", 1),
        ("[99999999999, 99999999999]", None),  # 10^22 elements: int64 would wrap
        ("[1, 99999999999999999999]", None),
        ("[72057594037927936]", 72057594037927936),  # 2^56 elements: the most it reads
        ("[72057594037927937]", None),  # more than any tensor
    ],
)
def test_a_shape_whose_size_would_overflow_has_none(tmp_path: Path, shape: str, numel: int | None) -> None:
    text = glued(meta(1, "grad.w"), B("ALLREDUCE", 1000, 1), E(1100, 1, "float32", shape))
    path = write(tmp_path, text)
    spans = parse_timeline(path).tables["spans"].to_pylist()
    assert [(s["numel"], s["bytes"]) for s in spans] == [(numel, None if numel is None else 4 * numel)]
    with reference_parser():
        reference = parsed_tables(path)
    assert reference == parsed_tables(path)
