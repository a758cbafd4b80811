"""Run store: ingest, read back, idempotency, schema versions, interrupted ingests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from analyzer.errors import StoreError
from analyzer.store.discovery import discover
from analyzer.store.run_store import MANIFEST, RunStore
from parsers.errors import InputError
from parsers.schema import TABLES
from parsers.timeline import parse_timeline
from tests.builders import B, E, X, glued, meta, write


def _timeline(tmp_path: Path, name: str = "timeline.json", extra: int = 0) -> Path:
    parts = [
        meta(1, "allreduce.w"),
        B("NEGOTIATE_ALLREDUCE", 1, 1),
        X(0, 2, 1),
        X(1, 3, 1),
        E(3, 1),
        B("ALLREDUCE", 4 + extra, 1),
        E(9 + extra, 1, "float32", "[2, 3]"),
    ]
    return write(tmp_path, glued(*parts), name)


def test_ingest_then_read_every_table_back(tmp_path: Path) -> None:
    path = _timeline(tmp_path)
    store = RunStore.create_or_open(tmp_path / "store")
    rep = store.ingest(*discover([path]))
    assert len(rep.added) == 1
    entry = rep.added[0]
    direct = parse_timeline(path, input_id=entry["id"])
    reopened = RunStore.open(tmp_path / "store")
    for name in ("spans", "ticks", "tensors"):
        got = reopened.table(name).to_pandas()
        want = direct.tables[name].to_pandas()
        assert got.astype(str).equals(want.astype(str)), name
    manifest = json.loads((tmp_path / "store" / MANIFEST).read_text())
    assert manifest["schema_version"] == 3 and manifest["inputs"][0]["sha256"].startswith(entry["id"])
    assert entry["rows"] == {"spans": 2, "ticks": 2, "tensors": 1, "parse_issues": 0}
    assert entry["bucket"] == entry["id"]  # a bucket of one input is named by it
    part = tmp_path / "store" / "tables" / "spans" / "run=store" / f"bucket={entry['id']}" / "part-0.parquet"
    assert pq.read_table(part).column("input_id").to_pylist() == [entry["id"]] * 2


def test_reingest_is_idempotent_by_content(tmp_path: Path) -> None:
    a = _timeline(tmp_path, "a.json")
    copy = tmp_path / "renamed.json"
    shutil.copy(a, copy)
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([a]))
    rep = store.ingest(*discover([a, copy]))
    assert rep.added == [] and len(rep.unchanged) == 2
    assert len(store.inputs) == 1 and sorted(store.inputs[0]["paths"]) == sorted([str(a), str(copy)])
    assert store.table("spans").num_rows == 2
    other = _timeline(tmp_path, "b.json", extra=1)
    assert len(store.ingest(*discover([other])).added) == 1
    assert RunStore.open(tmp_path / "store").table("spans").num_rows == 4


def test_directory_walk_lists_what_it_skips(tmp_path: Path) -> None:
    _timeline(tmp_path)
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "empty.log").write_text("")
    inputs, skipped = discover([tmp_path])
    assert [i.path.name for i in inputs] == ["timeline.json"]
    assert sorted(s.path.name for s in skipped) == ["empty.log", "notes.txt"]


def test_explicit_unrecognised_file_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, "just some text", "notes.txt")
    with pytest.raises(InputError, match="notes.txt"):
        discover([path])


@pytest.mark.parametrize(("version", "needle"), [(0, "older hvd-analyze"), (4, "newer hvd-analyze"), ("x", "older")])
def test_other_schema_versions_say_what_is_needed(tmp_path: Path, version: object, needle: str) -> None:
    store = RunStore.create_or_open(tmp_path / "store")
    manifest = json.loads((store.root / MANIFEST).read_text())
    manifest["schema_version"] = version
    (store.root / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(StoreError) as err:
        RunStore.open(store.root)
    assert needle in str(err.value) and "reads version(s) 1, 2, 3" in str(err.value)


def test_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a run store"):
        RunStore.open(tmp_path)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("1")
    with pytest.raises(StoreError, match="not empty"):
        RunStore.create_or_open(tmp_path / "x")


def test_interrupted_ingest_leaves_the_store_consistent(tmp_path: Path) -> None:
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([_timeline(tmp_path)]))
    # what a killed ingest leaves behind: a hidden temporary partition and a half manifest
    junk = store.root / "tables" / "spans" / ".tmp-999-1"
    junk.mkdir()
    (junk / "part-0.parquet").write_bytes(b"PAR1 partial")
    (store.root / f".{MANIFEST}.tmp").write_text("{ half")
    reopened = RunStore.open(store.root)
    assert reopened.table("spans").num_rows == 2
    rep = reopened.ingest(*discover([_timeline(tmp_path, "b.json", extra=5)]))
    assert len(rep.added) == 1 and RunStore.open(store.root).table("spans").num_rows == 4


def test_missing_table_file_is_reported(tmp_path: Path) -> None:
    store = RunStore.create_or_open(tmp_path / "store")
    entry = store.ingest(*discover([_timeline(tmp_path)])).added[0]
    shutil.rmtree(store.part_path("spans", entry).parent)
    with pytest.raises(StoreError, match="ingest --repair"):
        RunStore.open(store.root).table("spans")
    from analyzer.store.repair import drop_damaged

    found = drop_damaged(store)
    assert [d.endswith(": missing") for d in found.damaged] == [True] and not found.lost
    store.ingest(found.reingest)
    assert RunStore.open(store.root).table("spans").num_rows == entry["rows"]["spans"]


def test_empty_tables_have_their_declared_schema(tmp_path: Path) -> None:
    store = RunStore.create_or_open(tmp_path / "store")
    for name in TABLES:
        assert store.table(name).num_rows == 0


def test_corpus_directory_ingests_without_errors(corpus: Path, tmp_path: Path) -> None:
    store = RunStore.create_or_open(tmp_path / "store")
    rep = store.ingest(*discover([corpus / "horovod-cpu", corpus / "horovod-public"]))
    kinds = [e["kind"] for e in rep.added]
    assert kinds.count("horovod_timeline") == 20 and kinds.count("job_log") == 2  # the two autotune logs
    assert all(e["rows"]["autotune"] > 0 for e in rep.added if e["kind"] == "job_log")
    assert all(e["issues"]["error"] == 0 for e in rep.added)
    assert store.table("spans").num_rows == sum(e["rows"].get("spans", 0) for e in rep.added)


def test_record_cut_after_good_ones_is_data_loss(tmp_path: Path) -> None:
    bad = write(
        tmp_path,
        glued(meta(1, "t"), *[B("ALLREDUCE", i, 1) + "," + E(i + 1, 1) for i in range(3000)], close=False)
        + ',{"ph": "B", "name": "'
        + "x" * (9 << 20),
        "bad.json",
    )
    store = RunStore.create_or_open(tmp_path / "store")
    rep = store.ingest(*discover([bad]))
    assert len(rep.added) == 1 and rep.added[0]["rows"]["spans"] == 3000
    assert rep.added[0]["issues"]["data_loss"] >= 1


def test_failed_ingest_leaves_no_partial_partition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([_timeline(tmp_path)]))

    def boom(self: object) -> None:
        raise InputError("x.json", "simulated failure after the batches were written")

    monkeypatch.setattr("parsers.timeline.parser.TimelineParser.tensors_table", boom)
    with pytest.raises(InputError, match="simulated"):
        store.ingest(*discover([_timeline(tmp_path, "b.json", extra=7)]))
    assert list((store.root / "tables").rglob(".tmp-*")) == []
    reopened = RunStore.open(store.root)
    assert len(reopened.inputs) == 1 and reopened.table("spans").num_rows == 2


def test_background_parsing_stops_when_the_consumer_does() -> None:
    """A write error ends consumption while the queue is full: the parsing thread must not hang.

    With one item taken and QUEUE_DEPTH more queued, the producer's next put (its end
    marker) finds the queue full and no consumer left.
    """
    import threading
    import time

    import pyarrow as pa

    from analyzer.store.parts import QUEUE_DEPTH, in_background

    batch = ("spans", pa.table({"x": [1]}))
    produced: list[int] = []

    def items():
        for i in range(QUEUE_DEPTH + 1):
            produced.append(i)
            yield batch

    def consume_one_then_stop() -> None:
        gen = in_background(items())
        next(gen)
        deadline = time.monotonic() + 5
        while len(produced) <= QUEUE_DEPTH and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # let the producer reach its final put on the full queue
        gen.close()

    t = threading.Thread(target=consume_one_then_stop, daemon=True)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive(), "the consumer hung waiting for the parsing thread"


def test_background_parsing_reraises_in_the_consumer() -> None:
    from analyzer.store.parts import in_background

    def failing():
        yield ("spans", None)
        raise InputError("x.json", "boom")

    gen = in_background(failing())  # type: ignore[arg-type]
    assert next(gen)[0] == "spans"
    with pytest.raises(InputError, match="boom"):
        next(gen)
