"""A damaged run store is one message naming the damage, never a traceback, on report and on ingest."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from tests.conftest import ROOT

RUN = ROOT / "sample_traces" / "captured" / "straggler_nocache"
OTHER = ROOT / "sample_traces" / "synthetic" / "fusion_off"


def _manifest(store: Path, edit: Callable[[dict], object]) -> None:
    doc = json.loads((store / "manifest.json").read_text())
    (store / "manifest.json").write_text(json.dumps(edit(doc)))


def _part(store: Path, table: str = "ticks") -> Path:
    return next((store / "tables" / table).rglob("part-0.parquet"))


def _entry(store: Path, edit: Callable[[dict], None]) -> None:
    def change(doc: dict) -> dict:
        edit(doc["inputs"][0])
        return doc

    _manifest(store, change)


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "manifest a list": (lambda s: _manifest(s, lambda d: [d]), "a JSON list instead of an object"),
    "inputs null": (lambda s: _manifest(s, lambda d: {**d, "inputs": None}), "'inputs' is null or missing"),
    "entry not an object": (lambda s: _manifest(s, lambda d: {**d, "inputs": ["x"]}), "inputs[0] is a string"),
    "entry without a key": (lambda s: _entry(s, lambda e: e.pop("kind")), "inputs[0].kind is null or missing"),
    "entry without a hash": (
        lambda s: _entry(s, lambda e: e.pop("sha256")),
        "inputs[0] has no hash of its bytes (sha256 or blake3)",
    ),
    "entry with a wrong type": (lambda s: _entry(s, lambda e: e.update(size="big")), "inputs[0].size is a string"),
    "row count over int64": (
        lambda s: _entry(s, lambda e: e["rows"].update(spans=1 << 63)),
        "inputs[0].rows.spans is 9223372036854775808, not a count from 0 to 2^63 - 1",
    ),
    "negative size": (lambda s: _entry(s, lambda e: e.update(size=-1)), "inputs[0].size is -1, not a count"),
    "skipped not a list": (lambda s: _manifest(s, lambda d: {**d, "skipped": 3}), "'skipped' is a number"),
    "manifest not JSON": (lambda s: (s / "manifest.json").write_text("{"), "unreadable manifest"),
    "zero-byte part": (lambda s: _part(s).write_bytes(b""), "a damaged part of the run store"),
    "cut part": (lambda s: _part(s).write_bytes(_part(s).read_bytes()[:200]), "a damaged part of the run store"),
    "part with a wrong footer length": (
        lambda s: _part(s).write_bytes(_part(s).read_bytes()[:-8] + b"\xff\xff\xff\x7fPAR1"),
        "a damaged part of the run store",
    ),
    "part of another table": (
        lambda s: shutil.copy(_part(s, "spans"), _part(s, "ticks")),
        "a damaged part of the run store",
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_store_is_one_message(tmp_path: Path, damage: str) -> None:
    store = tmp_path / "store"
    assert CliRunner().invoke(cli, ["ingest", "-q", str(RUN), "-o", str(store)]).exit_code == 0
    harm, message = DAMAGE[damage]
    harm(store)
    for args in (["report", str(store)], ["ingest", "-q", str(OTHER), "-o", str(store)]):
        res = CliRunner().invoke(cli, args)
        if args[0] == "ingest" and "part" in damage:  # ingest does not read parts: it adds its input
            assert res.exit_code == 0
            continue
        assert res.exit_code == 2, (args, res.output, res.exception)
        assert res.stderr.startswith("hvd-analyze: error: ") and message in res.stderr, res.stderr
        assert ("--repair" if "part" in damage else "new store") in res.stderr


@pytest.mark.parametrize("damage", sorted(d for d in DAMAGE if "part" in d))
def test_ingest_repair_puts_a_damaged_part_back_from_its_input(tmp_path: Path, damage: str) -> None:
    clean, store = tmp_path / "clean", tmp_path / "store"
    for s in (clean, store):
        assert CliRunner().invoke(cli, ["ingest", "-q", str(RUN), "-o", str(s)]).exit_code == 0
    DAMAGE[damage][0](store)
    res = CliRunner().invoke(cli, ["ingest", "--repair", "-o", str(store)])
    assert res.exit_code == 0, res.output
    assert "damaged: " in res.stdout and "added " in res.stdout
    reports = [CliRunner().invoke(cli, ["report", "-f", "json", str(s)]) for s in (clean, store)]
    assert all(r.exit_code == 0 for r in reports), reports[1].output
    findings = [json.loads(r.stdout)["findings"] for r in reports]
    assert findings[0] == findings[1]  # the repaired store reads as the clean one
    again = CliRunner().invoke(cli, ["ingest", "--repair", "-o", str(store)])
    assert again.exit_code == 0 and "no damaged part" in again.stdout


def test_repair_says_which_inputs_are_lost_when_their_files_are_gone(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    store = tmp_path / "store"
    assert CliRunner().invoke(cli, ["ingest", "-q", str(run), "-o", str(store)]).exit_code == 0
    _part(store).write_bytes(b"")
    shutil.rmtree(run)
    res = CliRunner().invoke(cli, ["ingest", "--repair", "-o", str(store)])
    assert res.exit_code == 0 and "lost: " in res.stderr and "timeline.json" in res.stderr
    assert "holds no input yet" in CliRunner().invoke(cli, ["report", str(store)]).stderr  # readable, and empty


def _flip(part: Path, at: int, bit: int) -> None:
    data = bytearray(part.read_bytes())
    data[at] ^= bit
    part.write_bytes(bytes(data))


def test_flipped_bytes_in_parts_are_damage_that_repair_mends(tmp_path: Path) -> None:
    """One flipped bit at 24 places spread over the spans' and ticks' parts: each report reads as the
    clean store's or stops on a damaged part (never a crash, never other findings), and after
    ``ingest --repair`` every damaged store reports as the clean one."""
    clean = tmp_path / "clean"
    assert CliRunner().invoke(cli, ["ingest", "-q", str(RUN), "-o", str(clean)]).exit_code == 0
    want = json.loads(CliRunner().invoke(cli, ["report", "-f", "json", str(clean)]).stdout)["findings"]
    outcomes = []
    for i in range(24):
        table = ("spans", "ticks")[i % 2]
        store = tmp_path / f"s{i}"
        shutil.copytree(clean, store)
        part = _part(store, table)
        _flip(part, 4 + (part.stat().st_size - 12) * (i // 2) // 12, 1 << (i % 8))
        res = CliRunner().invoke(cli, ["report", "-f", "json", str(store)])
        assert res.exit_code in (0, 2), (i, res.output, res.exception)
        if res.exit_code == 0:
            assert json.loads(res.stdout)["findings"] == want, i  # a flip no reader uses (statistics, padding)
            outcomes.append("same")
            continue
        assert "a damaged part of the run store" in res.stderr and "--repair" in res.stderr, res.stderr
        fixed = CliRunner().invoke(cli, ["ingest", "--repair", "-o", str(store)])
        assert fixed.exit_code == 0 and "damaged: " in fixed.stdout, fixed.output
        again = CliRunner().invoke(cli, ["report", "-f", "json", str(store)])
        assert again.exit_code == 0 and json.loads(again.stdout)["findings"] == want, (i, again.output)
        outcomes.append("repaired")
    assert outcomes.count("repaired") >= 12, outcomes  # most flips land in pages, which checksums cover


def test_a_part_with_invalid_utf8_strings_is_damage_even_without_checksums(tmp_path: Path) -> None:
    """A part written without page checksums (as before they were written) whose tensor names hold
    bytes that are not UTF-8: the report names the damaged part at once, and repair finds it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    store = tmp_path / "store"
    assert CliRunner().invoke(cli, ["ingest", "-q", str(RUN), "-o", str(store)]).exit_code == 0
    part = _part(store, "spans")
    table = pq.read_table(part)
    at = table.schema.get_field_index("name")
    names = table.column(at).combine_chunks()
    words = [w.encode() for w in names.dictionary.to_pylist()]
    words[0] = b"\xff\xfe" + words[0]
    broken = pa.DictionaryArray.from_arrays(names.indices, pa.array(words, pa.binary()).view(pa.string()))
    pq.write_table(table.set_column(at, table.field(at), broken), part, write_page_checksum=False)
    res = CliRunner().invoke(cli, ["report", str(store)])
    assert res.exit_code == 2 and "a damaged part of the run store" in res.stderr and "Invalid UTF8" in res.stderr, (
        res.stderr
    )
    fixed = CliRunner().invoke(cli, ["ingest", "--repair", "-o", str(store)])
    assert fixed.exit_code == 0 and "damaged: " in fixed.stdout and "added " in fixed.stdout, fixed.output
    assert CliRunner().invoke(cli, ["report", str(store)]).exit_code == 0


def test_an_older_stores_part_without_a_newer_nullable_column_reads_it_as_nulls(tmp_path: Path) -> None:
    """A store written before ``watchdog_timeouts.global_rank`` existed: its part lacks the column, and
    the report reads it as unknown instead of calling the part damaged."""
    import pyarrow.parquet as pq

    log = ROOT / "sample_traces" / "synthetic" / "watchdog_behind" / "job.log"
    store = tmp_path / "store"
    assert CliRunner().invoke(cli, ["ingest", "-q", str(log), "-o", str(store)]).exit_code == 0
    part = _part(store, "watchdog_timeouts")
    pq.write_table(pq.read_table(part).drop_columns(["global_rank"]), part)
    res = CliRunner().invoke(cli, ["report", "-f", "json", str(store)])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["nccl"]["watchdog_timeouts"]
    assert rows and all(r["global_rank"] is None for r in rows)
