"""A temporary store that holds its parts in memory (``report FILE`` within its memory budget)
reads back exactly what a store of Parquet files reads, and writes no part file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.errors import StoreError
from analyzer.store import held
from analyzer.store.discovery import InputFile, discover
from analyzer.store.ingest import ingest_runner
from analyzer.store.parallel import Executor
from analyzer.store.run_store import RunStore, temporary_store
from parsers.inputs import InputKind
from parsers.schema import TABLES
from tests.conftest import ROOT

SAMPLES = ROOT / "sample_traces" / "synthetic"
INPUTS = [SAMPLES / "nccl_socket_fallback" / "job.log", SAMPLES / "straggler_nocache" / "timeline.json"]


def _tables(store: RunStore) -> dict[str, list[dict[str, object]]]:
    return {name: store.table(name).to_pylist() for name in TABLES if store.has_table(name)}


def _part_files(store: RunStore) -> list[Path]:
    return sorted((store.root / "tables").rglob("*.parquet"))


def _ranged(root: Path) -> RunStore:
    """A store of INPUTS whose timeline is read in ranges of 4 KB (the big timelines' path)."""
    store = RunStore.create_or_open(root)
    store.ingest(*discover(INPUTS), runner=ingest_runner(Executor(), range_bytes=4096))
    return store


def test_a_held_store_reads_what_a_store_of_files_reads(tmp_path: Path) -> None:
    disk = _ranged(tmp_path / "disk")
    with temporary_store(hold=True) as store:
        store.ingest(*discover(INPUTS), runner=ingest_runner(Executor(), range_bytes=4096))
        assert _part_files(store) == []  # the folders are there, and no file in them
        assert (store.root / "tables" / "spans").is_dir()
        assert _tables(store) == _tables(disk)
        timeline = next(e for e in store.inputs if e["kind"] == "horovod_timeline")["id"]
        where = pc.field("start_us") >= 5_000_000
        assert store.input_table("spans", timeline, ["span_id", "name"], where).to_pylist() == (
            disk.input_table("spans", timeline, ["span_id", "name"], where).to_pylist()
        )
        between = ("negotiation_id", 10, 400)

        def ticks(s: RunStore) -> list[dict[str, object]]:
            cols = ["negotiation_id", "rank", "ts_us"]
            return [r for b in s.input_batches("ticks", timeline, cols, 100, between) for r in b.to_pylist()]

        assert ticks(store) and ticks(store) == ticks(disk)
        assert store.held is not None and store.held.get(store.part_path("spans", store.inputs[0])) is not None
    assert store.held is None  # let go with the store


def test_held_parts_and_part_files_read_together(tmp_path: Path) -> None:
    """Parts written elsewhere (worker processes) are files; the store reads both kinds."""
    both = RunStore.create_or_open(tmp_path / "both")
    log, timeline = discover(INPUTS)[0]
    both.ingest([log])  # a Parquet file
    both.held = held.HeldParts()
    both.ingest([timeline])  # held
    assert len(_part_files(both)) == len(both.inputs[0]["tables"])
    assert _tables(both) == _tables(_ranged(tmp_path / "disk"))


def test_held_parts_do_not_travel_to_a_worker_process() -> None:
    """Pickled (a task sent to a worker process), held parts are None: the worker writes Parquet."""
    import pickle

    parts = held.HeldParts({"ticks": ("rank",)})
    assert pickle.loads(pickle.dumps({"held": parts})) == {"held": None}


def test_rows_dropped_from_a_shared_bucket_leave_the_others(tmp_path: Path) -> None:
    """An input parsed twice at once is dropped from the bucket it shares (here, in memory)."""
    copy = tmp_path / "other.json"
    copy.write_bytes(INPUTS[1].read_bytes().replace(b"allreduce", b"allgather"))
    items = [InputFile(p, InputKind.HOROVOD_TIMELINE, False, p.stat().st_size) for p in (INPUTS[1], copy)]
    with temporary_store(hold=True) as store:
        store.ingest(items)
        first, second = store.inputs
        assert first["bucket"] == second["bucket"]  # two small inputs, one bucket
        store._drop_rows(second)
        assert store.input_table("spans", first["id"]).num_rows == first["rows"]["spans"]
        assert store.input_table("spans", second["id"]).num_rows == 0


@pytest.mark.parametrize(
    ("size", "compressed", "budget", "fits"),
    [
        (1 << 30, False, 4 << 30, True),  # the 1 GB bench timeline within the default budget
        (2 << 30, False, 4 << 30, False),
        (200 << 20, True, 4 << 30, False),  # ~2 GB once inflated
        (1 << 30, False, 1 << 30, False),
    ],
)
def test_a_report_holds_its_tables_only_within_its_memory_budget(
    size: int, compressed: bool, budget: int, fits: bool
) -> None:
    item = InputFile(Path("t.json"), InputKind.HOROVOD_TIMELINE, compressed, size)
    assert held.fits([item], budget) is fits


def test_a_dictionary_with_a_word_twice_reads_back_as_from_a_file(tmp_path: Path) -> None:
    """Arrow allows a word twice in a dictionary and a Parquet file reads back without it; a held
    part reads back the same (pandas refuses such a column)."""
    import pyarrow as pa

    from analyzer.store.parts import Writers, write_part
    from parsers.schema import arrow_schema

    schema = arrow_schema("markers")
    words = pa.array(["CYCLE_START", "CYCLE_START", "X"])
    cols = {
        f.name: pa.DictionaryArray.from_arrays(pa.array([0, 1, 2], pa.int32()), words).cast(f.type)
        if pa.types.is_dictionary(f.type)
        else pa.array([1, 2, 3], f.type)
        for f in schema
    }
    table = pa.table(cols, schema=schema)
    root = tmp_path / "store"
    parts = held.HeldParts()
    writers: Writers = {}
    write_part(root, writers, "markers", "t", table, parts)
    part = parts.get(root / "tables" / "markers" / "t" / "part-0.parquet")
    assert part is not None
    back = part.table()
    assert back.to_pandas()["name"].astype(str).tolist() == ["CYCLE_START", "CYCLE_START", "X"]
    for f in schema:
        if pa.types.is_dictionary(f.type):
            words_back = back.column(f.name).chunks[0].dictionary.to_pylist()
            assert len(words_back) == len(set(words_back))


def test_a_held_store_keeps_only_the_columns_its_reader_reads(tmp_path: Path) -> None:
    """Of a table named in ``keep``, a held store keeps those columns (and ``input_id``), which
    read back as from files; asking for another is an error that names what it keeps."""
    disk = _ranged(tmp_path / "disk")
    with temporary_store(hold=True, keep={"ticks": ("negotiation_id", "rank")}) as store:
        store.ingest(*discover(INPUTS), runner=ingest_runner(Executor(), range_bytes=4096))
        timeline = next(e for e in store.inputs if e["kind"] == "horovod_timeline")["id"]
        assert store.held is not None
        part = store.held.get(store.part_path("ticks", next(e for e in store.inputs if e["id"] == timeline)))
        assert part is not None and part.table().column_names == ["input_id", "negotiation_id", "rank"]

        def ticks(s: RunStore, cols: list[str]) -> list[dict[str, object]]:
            return [r for b in s.input_batches("ticks", timeline, cols, 100) for r in b.to_pylist()]

        assert ticks(store, ["rank", "negotiation_id"]) == ticks(disk, ["rank", "negotiation_id"]) != []
        assert store.table("spans").to_pylist() == disk.table("spans").to_pylist()  # a table not named: whole
        with pytest.raises(StoreError, match="keeps only input_id, negotiation_id, rank, not ts_us"):
            ticks(store, ["negotiation_id", "ts_us"])
        with pytest.raises(StoreError, match="not pid, tensor, ts_us, order, offset"):
            store.table("ticks")


def test_a_report_of_files_reads_only_what_its_held_store_keeps(tmp_path: Path) -> None:
    """``report FILE`` (held store, :data:`HELD_COLUMNS`) says what ``report STORE`` says, on a
    straggler sample whose findings read the ticks' lateness and their file offsets."""
    sample = SAMPLES / "straggler_nocache"
    store = tmp_path / "store"
    assert CliRunner().invoke(cli, ["ingest", str(sample), "-o", str(store), "-q"]).exit_code == 0
    docs = []
    for target in (sample, store):
        res = CliRunner().invoke(cli, ["report", str(target), "-f", "json"])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.output)
        docs.append({k: v for k, v in doc.items() if k not in ("store", "created")})
    assert any(f["code"] == "timeline.straggler" for f in docs[0]["findings"])
    assert docs[0] == docs[1]
