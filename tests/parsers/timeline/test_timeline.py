"""Inline blueprints: a literal timeline snippet in, the expected rows and issues out."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from parsers.errors import InputError
from parsers.timeline import parse_timeline
from tests.builders import B, E, X, cycle_start, glued, legacy, meta, write


def spans(parsed):
    return parsed.tables["spans"].to_pandas().sort_values("span_id").reset_index(drop=True)


def codes(parsed) -> dict[str, int]:
    return {i.code: i.count for i in parsed.issues}


def test_one_allreduce_step_pairs_negotiation_op_and_activities(tmp_path: Path) -> None:
    text = glued(
        meta(1, "allreduce.fc1.weight"),
        B("NEGOTIATE_ALLREDUCE", 10, 1),
        X(1, 11, 1),
        X(0, 15, 1),
        E(15, 1),
        B("ALLREDUCE", 20, 1),
        B("QUEUE", 21, 1),
        E(25, 1),
        B("NCCL_ALLREDUCE", 26, 1),
        E(40, 1),
        E(41, 1, "float32", "[172, 4096]"),
    )
    p = parse_timeline(write(tmp_path, text))
    s = spans(p)
    assert list(s["name"]) == ["NEGOTIATE_ALLREDUCE", "ALLREDUCE", "QUEUE", "NCCL_ALLREDUCE"]
    assert list(s["kind"]) == ["negotiate", "op", "activity", "activity"]
    assert list(s["depth"]) == [0, 0, 1, 1]
    assert list(s["dur_us"]) == [5, 21, 4, 14]
    assert set(s["tensor"]) == {"allreduce.fc1.weight"}
    op = s[s.name == "ALLREDUCE"].iloc[0]
    assert (op["dtype"], op["shape"], op["numel"], op["bytes"]) == (
        "float32",
        "[172, 4096]",
        172 * 4096,
        172 * 4096 * 4,
    )
    assert list(s[s.kind == "activity"]["op_id"]) == [op.span_id, op.span_id]
    assert s.loc[0, "op_id"] != s.loc[0, "op_id"]  # negotiation: no op (NaN)
    t = p.tables["ticks"].to_pandas()
    assert list(t["rank"]) == [1, 0] and list(t["order"]) == [0, 1]
    assert set(t["negotiation_id"]) == {s.loc[0, "span_id"]}
    assert p.info.status == "closed" and p.info.layout == "glued"
    assert p.info.start_time_since_epoch_us == 1700000000000000
    assert p.issues == []


def test_markers_have_no_pid_and_do_not_disturb_pairing(tmp_path: Path) -> None:
    text = glued(cycle_start(5), meta(1, "t"), B("ALLREDUCE", 6, 1), cycle_start(7), E(8, 1, "float32", "[]"))
    p = parse_timeline(write(tmp_path, text))
    assert list(p.tables["markers"].to_pandas()["ts_us"]) == [5, 7]
    s = spans(p)
    assert list(s["dur_us"]) == [2] and s.loc[0, "numel"] == 1


def test_negotiate_inside_open_op_is_flagged(tmp_path: Path) -> None:
    """Horovod #316: the next NEGOTIATE begins inside the still-open op."""
    text = glued(meta(1, "t"), B("ALLREDUCE", 1, 1), B("NEGOTIATE_ALLREDUCE", 2, 1), E(3, 1), E(4, 1))
    p = parse_timeline(write(tmp_path, text))
    s = spans(p)
    assert list(s["kind"]) == ["op", "negotiate"] and list(s["depth"]) == [0, 1]
    assert codes(p)["timeline.negotiate_inside_op"] == 1


def test_adasum_depth_three_nesting(tmp_path: Path) -> None:
    text = glued(
        meta(1, "t"),
        B("ADASUM", 1, 1),
        B("MPI_ADASUM_ALLREDUCE", 2, 1),
        B("MPI_ALLREDUCE", 3, 1),
        E(4, 1),
        B("MPI_ALLREDUCE", 5, 1),
        E(6, 1),
        E(7, 1),
        E(8, 1, "float32", "[4]"),
    )
    p = parse_timeline(write(tmp_path, text))
    s = spans(p)
    assert list(s["depth"]) == [0, 1, 2, 2]
    assert p.info.max_depth == 3
    root = s.loc[0, "span_id"]
    assert list(s["op_id"]) == [root] * 4
    assert list(s["parent_id"][2:]) == [s.loc[1, "span_id"]] * 2
    assert p.info.version.low >= (0, 19, 0)


def test_missing_end_events_become_unclosed_spans(tmp_path: Path) -> None:
    text = glued(meta(1, "t"), B("ALLREDUCE", 1, 1), B("GLOO_ALLREDUCE", 2, 1), E(3, 1))
    p = parse_timeline(write(tmp_path, text))
    s = spans(p)
    assert list(s["closed"]) == [False, True]
    assert s.loc[0, "end_us"] != s.loc[0, "end_us"]  # null
    assert codes(p)["timeline.unclosed_spans"] == 1


def test_orphan_end_is_counted_and_dropped(tmp_path: Path) -> None:
    text = glued(meta(1, "t"), E(1, 1), B("ALLREDUCE", 2, 1), E(3, 1))
    p = parse_timeline(write(tmp_path, text))
    assert len(spans(p)) == 1
    assert codes(p)["timeline.orphan_end"] == 1


def test_legacy_layout_is_unterminated_by_design(tmp_path: Path) -> None:
    text = legacy(
        meta(1, "t"),
        B("NEGOTIATE_ALLREDUCE", 1410488741507, 1),
        X(0, 1410488741508, 1),
        E(1410488741509, 1),
        cycle_start(1410488741510),
    )
    p = parse_timeline(write(tmp_path, text))
    assert p.info.status == "unterminated" and p.info.layout == "line_per_event"
    assert p.info.uptime_origin
    assert p.info.version.low == (0, 16, 0) and p.info.version.high == (0, 20, 0)
    issue = next(i for i in p.issues if i.code == "timeline.unterminated")
    assert issue.severity == "info"


def test_modern_file_without_closing_bracket_lost_data(tmp_path: Path) -> None:
    text = glued(meta(1, "t"), B("ALLREDUCE", 1, 1), E(2, 1), close=False) + ","
    p = parse_timeline(write(tmp_path, text))
    issue = next(i for i in p.issues if i.code == "timeline.unterminated")
    assert issue.severity == "data_loss"


def test_cut_inside_a_record_keeps_everything_before_it(tmp_path: Path) -> None:
    full = glued(meta(1, "t"), B("ALLREDUCE", 1, 1), E(2, 1), B("ALLREDUCE", 3, 1), E(4, 1))
    cut = full[: full.rindex('{"ph": "E"') + 12]
    p = parse_timeline(write(tmp_path, cut))
    s = spans(p)
    assert list(s["closed"]) == [True, False]
    issue = next(i for i in p.issues if i.code == "timeline.truncated_record")
    assert issue.severity == "data_loss" and issue.byte_offset == full.rindex('{"ph": "E"')
    assert p.info.status == "truncated"


@pytest.mark.parametrize("content", [b"", b"[\n", b"[", b"  \n", b"\xef\xbb\xbf[\n"])
def test_empty_timelines(tmp_path: Path, content: bytes) -> None:
    p = parse_timeline(write(tmp_path, content))
    assert p.info.status == "empty"
    assert [i.code for i in p.issues] == ["timeline.empty"]
    assert p.tables["spans"].num_rows == 0


def test_gzip_input_is_read_transparently(tmp_path: Path) -> None:
    text = glued(meta(1, "t"), B("ALLREDUCE", 1, 1), E(2, 1))
    path = tmp_path / "timeline.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    assert len(spans(parse_timeline(path))) == 1


def test_unescaped_quote_in_tensor_name_is_tolerated(tmp_path: Path) -> None:
    text = glued(meta(1, 'allreduce.my"odd"name'), B("ALLREDUCE", 1, 1), E(2, 1))
    p = parse_timeline(write(tmp_path, text))
    assert set(spans(p)["tensor"]) == {'allreduce.my"odd"name'}
    assert codes(p)["timeline.unescaped_quote"] >= 1


def test_hostile_tensor_name_is_kept_literally(tmp_path: Path) -> None:
    name = "<img src=x onerror=alert(1)>"
    p = parse_timeline(write(tmp_path, glued(meta(1, name), B("ALLREDUCE", 1, 1), E(2, 1))))
    assert p.tables["tensors"].to_pandas()["tensor"].tolist() == [name]


def test_small_chunks_give_identical_tables(tmp_path: Path) -> None:
    parts = [meta(1, "a"), meta(2, "b" * 300)]
    for step in range(200):
        t = step * 100
        parts += [
            B("NEGOTIATE_ALLREDUCE", t, 1),
            X(1, t + 1, 1),
            X(0, t + 2, 1),
            E(t + 2, 1),
            B("ALLREDUCE", t + 3, 2),
            B("QUEUE", t + 4, 2),
            E(t + 5, 2),
            E(t + 6, 2, "float16", "[8, 8]"),
            cycle_start(t + 7),
        ]
    path = write(tmp_path, glued(*parts))
    big, small = parse_timeline(path), parse_timeline(path, chunk_bytes=4096)
    for name in ("spans", "ticks", "markers", "tensors"):
        assert big.tables[name].to_pandas().equals(small.tables[name].to_pandas()), name
    assert big.info.records == small.info.records == 2 + 4 + 200 * 9


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00binary", "binary data"),
        (b"hello world, not json", "expected '['"),
        (b'{"traceEvents": []}', "JSON object"),
        (b"[" + b"7" * (10 * 1024 * 1024) + b"]", "expected a trace event object"),
        (b'["' + b"a" * (10 * 1024 * 1024) + b'"]', "expected a trace event object"),
        (b"[1, 2, 3]", "expected a trace event object"),
    ],
    ids=["binary", "garbage", "json-object", "10MB-number", "10MB-string", "array-of-numbers"],
)
def test_not_a_timeline_raises_one_clear_input_error(tmp_path: Path, content: bytes, expected: str) -> None:
    path = write(tmp_path, content, "bad.json")
    with pytest.raises(InputError) as err:
        parse_timeline(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_oversized_first_record_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, b'[{"ph": "B", "name": "' + b"x" * (9 * 1024 * 1024), "big.json")
    with pytest.raises(InputError, match="larger than 8 MiB"):
        parse_timeline(path, chunk_bytes=1 << 20)


def test_corrupt_record_mid_file_is_skipped_and_counted(tmp_path: Path) -> None:
    text = glued(meta(1, "t"), B("ALLREDUCE", 1, 1), E(2, 1), '{"ph": "B", "name": @@@}', B("ALLREDUCE", 3, 1), E(4, 1))
    p = parse_timeline(write(tmp_path, text))
    assert len(spans(p)) == 2
    assert next(i for i in p.issues if i.code == "timeline.corrupt_record").severity == "data_loss"


def test_unknown_phases_and_keys_are_counted(tmp_path: Path) -> None:
    """A phase no trace format has (a damaged byte) is a lost record; another tool's trace events
    (counters, async, flow: what `hvd-analyze slice` adds) are skipped with a note."""
    text = glued(
        meta(1, "t"),
        '{"ph": "Q", "name": "ctr", "ts": 1, "pid": 1}',
        '{"ph": "C", "name": "ctr", "ts": 1, "pid": 1, "args": {"a": 1.5}}',
        '{"ph": "b", "name": "async", "ts": 1, "pid": 1, "id": 7}',
        '{"ph": "B", "name": "ALLREDUCE", "ts": 2, "pid": 1, "tid": 3, "extra": [1, {"a": 2}]}',
        E(3, 1),
    )
    p = parse_timeline(write(tmp_path, text))
    c = codes(p)
    assert c["timeline.unknown_phase"] == 1 and c["timeline.foreign_event"] == 2
    assert c["timeline.unknown_key"] == 2  # B's tid and extra (one record), b's id
    severity = {i.code: i.severity for i in p.issues}
    assert severity["timeline.unknown_phase"] == "data_loss" and severity["timeline.foreign_event"] == "info"
    assert len(spans(p)) == 1


def test_headless_fragment_is_read_with_a_note(tmp_path: Path) -> None:
    text = B("ALLREDUCE", 1, 1) + ",\n" + E(2, 1) + ",\n"
    p = parse_timeline(write(tmp_path, text))
    assert len(spans(p)) == 1 and "timeline.headless_fragment" in codes(p)


def test_response_cache_verdict(tmp_path: Path) -> None:
    def run(ticks_every_time: bool) -> str:
        parts = [meta(1, "t")]
        for step in range(3):
            t = step * 10
            parts.append(B("NEGOTIATE_ALLREDUCE", t, 1))
            if ticks_every_time or step == 0:
                parts += [X(0, t + 1, 1), X(1, t + 2, 1)]
            parts += [E(t + 2, 1), B("ALLREDUCE", t + 3, 1), E(t + 4, 1)]
        return parse_timeline(write(tmp_path, glued(*parts), f"c{ticks_every_time}.json")).info.cache.response_cache

    assert run(True) == "off" and run(False) == "on"


def test_metadata_issue_offsets_are_file_offsets_in_later_chunks(tmp_path: Path) -> None:
    parts = [meta(1, "a")] + [B("ALLREDUCE", t, 1) + "," + E(t + 1, 1) for t in range(0, 400, 2)]
    bad_meta = '{"name": "process_labels", "ph": "M", "pid": 1, "args": {"labels": "x"}},\n'
    text = glued(*parts, bad_meta, B("ALLREDUCE", 500, 1), E(501, 1))
    path = write(tmp_path, text)
    for chunk in (4096, 1 << 20):  # the record lies well past the first 4 KiB chunk
        p = parse_timeline(path, chunk_bytes=chunk)
        issue = next(i for i in p.issues if i.code == "timeline.unknown_metadata")
        assert issue.byte_offset == text.index('{"name": "process_labels"'), chunk


def test_cut_gzip_stream_is_read_up_to_the_damage(tmp_path: Path) -> None:
    parts = [meta(1, "t")] + [B("ALLREDUCE", t, 1) + "," + E(t + 1, 1) for t in range(0, 20000, 2)]
    packed = gzip.compress(glued(*parts).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(packed[: len(packed) // 2])
    p = parse_timeline(path)
    s = spans(p)
    assert 0 < len(s) < 10000 and s["closed"].sum() >= len(s) - 1
    c = {i.code: i.severity for i in p.issues}
    assert c["timeline.gzip_cut"] == "data_loss"
    assert "timeline.truncated_record" in c or "timeline.unterminated" in c


def test_a_pid_beyond_what_the_file_can_hold_is_refused_not_allocated(tmp_path: Path) -> None:
    """The pairer indexes arrays by pid: 30,000,000 in a 100-byte file used to take 3.5 GB."""
    path = write(tmp_path, glued(meta(1, "t"), B("ALLREDUCE", 1, 30_000_000), E(2, 30_000_000)), "pid.json")
    with pytest.raises(InputError, match="pid 30000000") as err:
        parse_timeline(path)
    assert err.value.offset is not None and err.value.offset > 0
    named = write(tmp_path, glued(meta(100_000_000, "t"), meta(1, "u"), B("ALLREDUCE", 1, 1), E(2, 1)), "m.json")
    parsed = parse_timeline(named)  # a metadata record with such a pid is dropped, the rest is read
    assert codes(parsed)["timeline.bad_metadata"] == 1 and len(spans(parsed)) == 1


def test_a_timeline_damaged_throughout_is_read_in_linear_work(tmp_path: Path) -> None:
    """Thousands of unreadable records (a flipped byte in each): each is skipped in place, and the
    rows read between them are handed out in a few tables, not one table per damaged record."""
    from parsers.timeline import TimelineParser

    records = [meta(1, "t")]
    for k in range(3000):
        records += [B("ALLREDUCE", 10 * k + 1, 1), E(10 * k + 2, 1), '{"ph": "B", "name": @@@}']
    path = write(tmp_path, glued(*records))
    parser = TimelineParser(path, chunk_bytes=1 << 20)
    tables = list(parser.batches())
    assert sum(len(t) for k, t in tables if k == "spans") == 3000  # every readable span
    assert len([k for k, _ in tables if k == "spans"]) <= 2
    lost = {i.code: i.count for i in parser.issues}
    assert lost["timeline.corrupt_record"] == 3000


def test_repeated_metadata_names_each_tensor_once_in_the_dictionary(tmp_path: Path) -> None:
    """A file pasted twice, or a resumed run, names its pids again: each tensor name is one word of the
    tensor columns' dictionary (a reader such as pandas refuses a dictionary with a word twice)."""
    parts = [meta(1, "grad.a"), meta(2, "grad.b"), meta(1, "grad.a"), meta(2, "grad.b"), meta(1, "grad.a")]
    parts += [B("NEGOTIATE_ALLREDUCE", 1, 1), X(0, 2, 1), E(3, 1), B("NEGOTIATE_ALLREDUCE", 1, 2), E(3, 2)]
    tables = parse_timeline(write(tmp_path, glued(*parts))).tables
    for name in ("spans", "ticks"):
        col = tables[name].column("tensor")
        for chunk in col.chunks:
            words = chunk.dictionary.to_pylist()
            assert len(words) == len(set(words)), (name, words)
    assert tables["ticks"].column("tensor").to_pylist() == ["grad.a"]
    assert sorted(tables["spans"].column("tensor").to_pylist()) == ["grad.a", "grad.b"]


def test_a_parser_asked_for_some_columns_builds_only_those(tmp_path: Path) -> None:
    """``columns`` (what a store held for a report keeps): the tables it names have those
    columns and ``input_id``, with the values of the whole tables; the others are whole."""
    import pyarrow as pa

    from parsers.timeline import TimelineParser

    path = write(tmp_path, glued(meta(1, "grad/w"), *_ticked_steps(5)))
    whole = parse_timeline(path).tables
    parser = TimelineParser(path, columns={"ticks": ("ts_us", "rank"), "spans": ("span_id", "bytes")})
    got: dict[str, list[pa.Table]] = {}
    for name, batch in parser.batches():
        got.setdefault(name, []).append(batch)
    ticks, spans = pa.concat_tables(got["ticks"]), pa.concat_tables(got["spans"])
    assert ticks.column_names == ["input_id", "rank", "ts_us"]  # the schema's order
    assert spans.column_names == ["input_id", "span_id", "bytes"]
    assert ticks.to_pylist() == whole["ticks"].select(ticks.column_names).to_pylist() != []
    assert spans.to_pylist() == whole["spans"].select(spans.column_names).to_pylist() != []
    assert pa.concat_tables(got["markers"]).equals(whole["markers"])


def _ticked_steps(n: int) -> list[str]:
    out = []
    for k in range(n):
        t = 1000 + 100 * k
        out += [B("NEGOTIATE_ALLREDUCE", t, 1), X(0, t + 1, 1), X(1, t + 2, 1), E(t + 3, 1)]
        out += [B("ALLREDUCE", t + 4, 1), E(t + 7, 1, "float32", "[4, 8]"), cycle_start(t + 8)]
    return out
