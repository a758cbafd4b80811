"""A log's biggest tables kept as Arrow record batches while it is read (``parsers.nccl.kept``): whatever the
batch size, the tables, issues and counts are those of rows kept as tuples, in one pass or in chunks."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from parsers.nccl import kept
from parsers.nccl.kept import KeptRows, table_rows
from parsers.nccl.rows import BareVersion, EnvRow
from tests.parsers.nccl.test_nccl_chunks import KITCHEN_SINK, chunked, single


@pytest.fixture
def tiny_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept, "BATCH", 2)


def _logs(corpus: Path) -> list[Path]:
    logs = sorted((corpus / "nccl").glob("*.log"))[::4] + sorted((corpus / "nccl-more2").glob("*.log"))[::4]
    assert len(logs) > 20
    return logs


def test_batches_of_any_size_give_the_tables_of_tuples(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = tmp_path / "job.log"
    sink.write_text(KITCHEN_SINK)
    for path in [sink, *_logs(corpus)]:
        want = single(path)
        monkeypatch.setattr(kept, "BATCH", 2)
        got = single(path)
        monkeypatch.setattr(kept, "BATCH", 1 << 16)
        assert got == want, path.name


def test_chunks_of_batches_merge_into_the_single_pass(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = tmp_path / "job.log"
    sink.write_text(KITCHEN_SINK)
    for path in [sink, *_logs(corpus)[:6]]:
        want = single(path)
        monkeypatch.setattr(kept, "BATCH", 2)
        tables, issues, info, n, _ = chunked(path, 997, random.Random(7))
        monkeypatch.setattr(kept, "BATCH", 1 << 16)
        assert n >= 1 and (tables, issues, info) == want, path.name


def test_rows_come_back_in_order_from_batches_and_tuples(tiny_batches: None) -> None:
    rows = table_rows(EnvRow, "nccl_env")
    for i in range(5):
        rows.append(EnvRow("h", 7, i + 1, f"NCCL_X{i}", str(i)))
    assert len(rows) == 5 and len(rows.batches) == 2 and len(rows.rows) == 1
    assert [r.line for r in rows] == [1, 2, 3, 4, 5] and all(isinstance(r, EnvRow) for r in rows)
    later = table_rows(EnvRow, "nccl_env")
    later.extend(EnvRow("g", 8, n, "NCCL_Y", "1") for n in (1, 2, 3))
    rows.absorb(later, base=10)  # a later chunk's lines, counted from 0 there
    assert [(r.host, r.line) for r in rows] == [("h", n) for n in range(1, 6)] + [("g", 11), ("g", 12), ("g", 13)]
    table, wrong = rows.table()
    assert wrong is None and table.num_rows == 8 and table.column("line").to_pylist() == [1, 2, 3, 4, 5, 11, 12, 13]


def test_numbers_out_of_range_in_several_batches_are_one_count(tiny_batches: None) -> None:
    rows = KeptRows(
        BareVersion,
        pa.schema([pa.field("line", pa.int32(), nullable=False), ("outer", pa.string()), ("msg", pa.string())]),
    )
    for line in (1, 2**40, 3, 2**41, 2**42):
        rows.append(BareVersion(line, "", "NCCL version 2.18.3+cuda12.2"))
    table, wrong = rows.table()
    assert table.column("line").to_pylist() == [1, 3]  # a row whose line its column cannot hold is dropped
    assert wrong is not None and (wrong.count, wrong.column, wrong.value) == (3, "line", 2**40)


def test_the_errors_table_made_in_slices_is_the_table_made_at_once(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nccl_errors`` is made a slice of rows at a time (:data:`parsers.nccl.arrow_tables.SLICE`): slices of
    two rows give the tables and issues of one slice, a number out of range in a later slice included."""
    from parsers.nccl import arrow_tables

    sink = tmp_path / "job.log"
    sink.write_text(KITCHEN_SINK)
    damaged = tmp_path / "damaged.log"  # the third error's pid is past int64: said once, with the count of both
    warn = "h{n}:{pid}:2 [0] misc/socket.cc:{n} NCCL WARN Net : Connection closed by remote peer\n"
    damaged.write_text("".join(warn.format(n=n, pid=pid) for n, pid in enumerate([5, 6, 1 << 70, 7, 1 << 71])))
    many = ("040-", "207-", "217-", "056-")  # the corpus's logs of the most errors
    logs = [
        sink,
        damaged,
        *(p for d in ("nccl", "nccl-more2") for p in sorted((corpus / d).glob("*.log")) if p.name.startswith(many)),
    ]
    assert sum(len(single(p)[0].get("nccl_errors", [])) > 2 for p in logs) >= 3
    for path in logs:
        want = single(path)
        monkeypatch.setattr(arrow_tables, "SLICE", 2)
        got = single(path)
        monkeypatch.setattr(arrow_tables, "SLICE", 1 << 14)
        assert got == want, path.name
    issues = single(damaged)[1]
    assert any("2 number(s) too large" in str(i) for i in issues), issues


def test_a_batch_checked_at_once_is_the_batch_checked_value_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A column's least and greatest number decide it when they are in range; any other column is read value by
    value, with the same result: random columns of ints (some past int32 or negative into uint8), Nones, bools,
    lists of them, and texts where a number belongs."""
    schema = pa.schema(
        [
            pa.field("line", pa.int64(), nullable=False),
            ("dev", pa.int32()),
            pa.field("small", pa.uint8(), nullable=False),
            ("devs", pa.list_(pa.int32())),
        ]
    )
    rng = random.Random(48)

    def value() -> object:
        return rng.choice([0, 1, 7, -1, 255, 256, 2**31, -(2**31) - 1, 2**63, None, True, "x"])

    def column(n: int, lists: bool) -> list[object]:
        if lists:
            return [[value() for _ in range(rng.randrange(3))] if rng.random() < 0.8 else None for _ in range(n)]
        return [value() for _ in range(n)]

    decided_at_once = 0
    for _ in range(400):
        n = rng.randrange(1, 6)
        quiet = rng.random() < 0.5  # a batch of plain numbers in range, as nearly every batch is
        data = {
            "line": [rng.randrange(1, 10**6) for _ in range(n)],
            "dev": [rng.choice([0, 3, None]) for _ in range(n)] if quiet else column(n, False),
            "small": [rng.choice([0, 200, True]) for _ in range(n)] if quiet else column(n, False),
            "devs": [[0, 1], None, []][:n] if quiet else column(n, True),
        }
        data["devs"] += [None] * (n - len(data["devs"]))
        fast = kept.checked({k: list(v) for k, v in data.items()}, schema)
        decided_at_once += fast[1] is None
        with monkeypatch.context() as m:
            m.setattr(kept, "_all_in_range", lambda values, limits, lists: False)
            assert kept.checked({k: list(v) for k, v in data.items()}, schema) == fast
    assert decided_at_once > 150
