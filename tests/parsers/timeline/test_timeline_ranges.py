"""A timeline tokenized in ranges (on several threads) and paired in file order gives exactly
the tables, issues and facts of the single pass: clean files of both layouts, damaged ones
(corrupt records, a ']' mid-file, ts going back across a cut, a cut file), ranges whose
start is not a record boundary at all, and every cut of a real file."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers.errors import InputError
from parsers.timeline import ParsedTimeline, TimelineParser, parse_timeline
from parsers.timeline.tokens import timeline_ranges, tokenize_range, tokenize_task
from sample_traces.generator.timeline import TimelineSpec, write_timeline
from tests.builders import B, E, X, cycle_start, glued, legacy, meta, write
from tests.conftest import CORPUS

RANGE_SIZES = (64, 700, 5000)


def _threads(tasks: list) -> list:
    with ThreadPoolExecutor(2) as ex:
        return list(ex.map(tokenize_task, tasks))


def _ranged(path: Path, range_bytes: int) -> ParsedTimeline:
    return parse_timeline(path, range_bytes=range_bytes, tokenized=_threads)


def _same(a: ParsedTimeline, b: ParsedTimeline) -> None:
    for name, table in a.tables.items():
        assert table.to_pylist() == b.tables[name].to_pylist(), name
    assert sorted((i.code, i.byte_offset, i.count, i.message) for i in a.issues) == sorted(
        (i.code, i.byte_offset, i.count, i.message) for i in b.issues
    )
    assert a.info == b.info


def _steps(n: int, pid: int = 1, t0: int = 1000) -> list[str]:
    out = []
    for k in range(n):
        t = t0 + 100 * k
        out += [
            B("NEGOTIATE_ALLREDUCE", t, pid),
            X(0, t + 1, pid),
            X(1, t + 2, pid),
            E(t + 3, pid),
            B("ALLREDUCE", t + 4, pid),
            B("NCCL_ALLREDUCE", t + 5, pid),
            E(t + 6, pid),
            E(t + 7, pid, "float32", "[4, 8]"),
            cycle_start(t + 8),
        ]
    return out


DAMAGED = {
    "corrupt_record": glued(
        meta(1, "grad/w"), *_steps(6), '{"ph": "B", "name": "x", "ts": ?, "pid": 1}', *_steps(6, t0=5000)
    ),
    "garbage_between": glued(meta(1, "grad/w"), *_steps(6))[:-1]
    + ",%%%%junk%%%%,"
    + glued(*_steps(4, t0=9000), header=False)[2:],
    "closed_mid_file": glued(meta(1, "grad/w"), *_steps(8)) + ' trailing {"ph": "B", "name": "y", "ts": 1, "pid": 1}',
    "ts_back": glued(meta(1, "grad/w"), *_steps(5, t0=9000), *_steps(5, t0=1000), *_steps(5, t0=500)),
    "cut_inside_record": glued(meta(1, "grad/w"), *_steps(8), close=False)[:-9],
    "unterminated": glued(meta(1, "grad/w"), *_steps(8), close=False),
    "legacy": legacy(meta(1, "grad/w"), *_steps(8)),
    "span_open_across_ranges": glued(
        meta(1, "grad/w"),
        meta(2, "grad/b"),
        B("ALLREDUCE", 10, 2),
        *_steps(12),
        B("NEGOTIATE_ALLREDUCE", 5000, 2),
        *_steps(6, t0=6000),
        X(3, 7000, 2),
        E(7001, 2),
        E(7002, 2, "int64", "[]"),
    ),
    # tensor names that hold a whole record boundary: ranges may start inside a string
    "false_boundaries": glued(
        *[meta(p, f'evil}},{{"ph": "i", "name": "fake", "ts": {p}}} {p}') for p in range(1, 4)],
        *_steps(4, pid=1),
        *_steps(4, pid=2),
        *_steps(4, pid=3),
    ),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
@pytest.mark.parametrize("range_bytes", RANGE_SIZES)
def test_damaged_and_odd_files_parse_the_same_in_ranges(tmp_path: Path, case: str, range_bytes: int) -> None:
    path = write(tmp_path, DAMAGED[case])
    _same(parse_timeline(path), _ranged(path, range_bytes))


class _Seen:
    """A byte sink that keeps what it is fed, per range."""

    def __init__(self) -> None:
        self.fed: list[tuple[int, bytes]] = []
        self.failed = 0
        self._lock = threading.Lock()

    def feed(self, at: int, data: memoryview) -> None:
        with self._lock:
            self.fed.append((at, bytes(data)))

    def fail(self) -> None:
        self.failed += 1


@pytest.mark.parametrize("case", sorted(DAMAGED))
@pytest.mark.parametrize("range_bytes", RANGE_SIZES)
def test_a_range_feeds_every_byte_of_it_to_its_sink_however_it_ends(
    tmp_path: Path, case: str, range_bytes: int
) -> None:
    """Ranges that stop at damage, at a ']' mid-file or in a cut record still feed all their bytes
    (those the tokenizer did not read too), in order: the input's hash is computed from them."""
    path = write(tmp_path, DAMAGED[case])
    data = path.read_bytes()
    tasks = timeline_ranges(str(path), 2, len(data), range_bytes)
    seen = _Seen()
    with ThreadPoolExecutor(2) as ex:
        list(ex.map(partial(tokenize_task, seen=seen), tasks))
    assert not seen.failed
    at = 2
    for start, piece in sorted(seen.fed):  # each range's pieces follow one another
        assert start == at and piece == data[start : start + len(piece)]
        at += len(piece)
    assert at == len(data)


class _Borrowing(_Seen):
    """A sink that borrows: it keeps each lent view with a copy of its bytes, and checks when the
    lender settles that the bytes are still those lent (the reader did not reuse its buffer)."""

    def __init__(self) -> None:
        super().__init__()
        self.lent: list[tuple[int, memoryview, bytes]] = []
        self.lends = 0
        self.changed = 0

    def lend(self, at: int, data: memoryview) -> None:
        with self._lock:
            self.lends += 1
            self.lent.append((at, data, bytes(data)))
            self.fed.append((at, bytes(data)))

    def settle(self, stop: int) -> None:
        with self._lock:
            for _at, view, copy in [x for x in self.lent if x[0] < stop]:
                self.changed += bytes(view) != copy
            self.lent = [x for x in self.lent if x[0] >= stop]


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_range_read_at_once_lends_its_bytes_until_it_is_tokenized(tmp_path: Path, case: str) -> None:
    """A range that fits a read (all of them here) lends its bytes instead of waiting for the
    sink to take them, and keeps them as they are until it settles, at its end: the next range
    on its thread reads into the same buffer. Every byte is lent once, in order."""
    path = write(tmp_path, DAMAGED[case])
    data = path.read_bytes()
    tasks = timeline_ranges(str(path), 2, len(data), 256)
    seen = _Borrowing()
    with ThreadPoolExecutor(2) as ex:
        list(ex.map(partial(tokenize_task, seen=seen), tasks))
    assert len(tasks) >= 10 and seen.lends >= len(tasks)
    assert not seen.failed and not seen.changed and not seen.lent  # each settled, its bytes unchanged
    assert b"".join(p for _, p in sorted(seen.fed)) == data[2:]


@pytest.mark.parametrize(
    "text",
    [
        glued(meta(1, "grad/w"), '{"ph": "B", "ts": ?}', *_steps(400)),  # stops at the damage
        glued(meta(1, "grad/w"), *_steps(2)) + " " * 30_000,  # closed, then blanks
    ],
    ids=["stopped", "closed"],
)
def test_a_range_that_ends_before_its_last_chunk_still_feeds_the_rest(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    data = path.read_bytes()
    seen = _Seen()
    r = tokenize_range(str(path), 2, len(data), chunk_bytes=4096, seen=seen)
    assert r.ending.kind in ("stopped", "closed") and r.ending.at < 4096  # the tokenizer read one chunk
    assert b"".join(p for _, p in sorted(seen.fed)) == data[2:] and not seen.failed


@pytest.mark.parametrize("sink", [_Seen, _Borrowing], ids=["fed", "lent"])
def test_a_range_the_file_no_longer_holds_fails_its_sink(tmp_path: Path, sink: type[_Seen]) -> None:
    path = write(tmp_path, DAMAGED["unterminated"])
    size = path.stat().st_size
    seen = sink()
    tokenize_range(str(path), 2, size + 100, seen=seen)  # the file was cut after it was planned
    assert seen.failed == 1 and sum(len(p) for _, p in seen.fed) == size - 2
    assert not isinstance(seen, _Borrowing) or (seen.lends == 1 and not seen.lent and not seen.changed)


def test_the_cases_are_cut_into_many_ranges_and_exercise_the_damage(tmp_path: Path) -> None:
    """Guard against a vacuous equality: the files make many ranges, and the damage shows."""
    for case, text in DAMAGED.items():
        path = write(tmp_path, text, f"{case}.json")
        assert len(timeline_ranges(str(path), 2, path.stat().st_size, 64)) >= 10, case
    codes = {
        case: {i.code for i in parse_timeline(write(tmp_path, DAMAGED[case], f"{case}.json")).issues}
        for case in DAMAGED
    }
    assert "timeline.corrupt_record" in codes["corrupt_record"]
    assert "timeline.corrupt_record" in codes["garbage_between"]
    assert "timeline.trailing_data" in codes["closed_mid_file"]
    assert "timeline.ts_not_monotonic" in codes["ts_back"]
    assert "timeline.truncated_record" in codes["cut_inside_record"]


def test_a_range_that_starts_inside_a_string_is_read_again_in_file_order(tmp_path: Path) -> None:
    path = write(tmp_path, DAMAGED["false_boundaries"])
    starts = [t[1] for t in timeline_ranges(str(path), 2, path.stat().st_size, 64)]
    data = path.read_bytes()
    inside_names = [
        s
        for s in starts
        if data.rfind(b'"evil', 0, s) > data.rfind(b'"args"', 0, s) >= 0
        and data.find(b'"}}', s) < data.find(b'"ph": "M"', s)
    ]
    assert inside_names, "the boundary search did not fall into a tensor name"
    parser = TimelineParser(path)
    rows = sum(t.num_rows for _, t in parser.batches_in_ranges(_threads, range_bytes=64))
    assert parser.rereads >= 1
    assert rows == sum(t.num_rows for n, t in parse_timeline(path).tables.items() if n != "tensors")


@pytest.mark.parametrize("layout", ["glued", "line_per_event"])
def test_generated_files_parse_the_same_in_ranges(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "t.json"
    write_timeline(path, TimelineSpec(ranks=4, tensors=6, steps=6, layout=layout, cache=False, mark_cycles=True))
    for range_bytes in RANGE_SIZES:
        _same(parse_timeline(path), _ranged(path, range_bytes))


def test_ranges_whose_strings_come_in_another_order_pair_through_the_maps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later range meets the file's strings (names, dtypes, shapes, markers) in another order
    than the file: its tokenizer's ids are not the file's, and the pairing reads them through
    the maps. Guards the check above from being vacuous: maps were used, and the tables match."""
    from parsers.timeline.tables import TimelineNames

    first = [B("NEGOTIATE_ALLREDUCE", 10, 1), E(11, 1), B("ALLREDUCE", 12, 1), E(13, 1, "float32", "[2]")]
    later = [cycle_start(99)]  # a marker first, then a new name, dtype and shape before the known ones
    for k in range(400):
        t = 100 + 10 * k
        later += [B("BROADCAST", t, 1), E(t + 1, 1, "int64", "[3, 3]"), B("ALLREDUCE", t + 2, 1)]
        later += [E(t + 3, 1, "float32", "[2]")]
    path = write(tmp_path, glued(meta(1, "grad/w"), *first, *later))
    mapped: list[bool] = []
    intern = TimelineNames.intern

    def watched(self: TimelineNames, strings: list[tuple[int, int, str]]) -> tuple[object, ...]:
        maps = intern(self, strings)
        mapped.append(any(len(m) for m in maps))
        return maps

    monkeypatch.setattr(TimelineNames, "intern", watched)
    _same(parse_timeline(path), _ranged(path, 512))
    assert any(mapped)


def test_a_file_that_is_not_a_timeline_fails_the_same_way(tmp_path: Path) -> None:
    path = write(tmp_path, "[\n" + "not json at all, " * 400)
    with pytest.raises(InputError) as whole:
        parse_timeline(path)
    with pytest.raises(InputError) as ranged:
        _ranged(path, 64)
    assert str(whole.value) == str(ranged.value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0.05, 1.0), range_bytes=st.integers(40, 3000))
def test_any_cut_of_a_real_file_parses_the_same_in_ranges(tmp_path: Path, cut: float, range_bytes: int) -> None:
    real = CORPUS / "horovod-cpu" / "d2_straggler_rank1_100ms_np2_nocache" / "timeline.json"
    data = real.read_bytes() if real.exists() else DAMAGED["span_open_across_ranges"].encode()
    path = write(tmp_path, data[: max(3, int(len(data) * cut))], "cut.json")
    _same(parse_timeline(path), _ranged(path, range_bytes))
