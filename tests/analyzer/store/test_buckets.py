"""Buckets: several small inputs per Parquet file, big ones alone; repeated bytes and clashing
ids are resolved by the store; version-1 stores (one folder per input) stay readable."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import analyzer.store.buckets
from analyzer.store.buckets import Bucket, plan_buckets
from analyzer.store.discovery import discover
from analyzer.store.run_store import MANIFEST, RunStore
from parsers.schema import TABLES
from sample_traces.generator.nccl import NcclLogSpec, write_nccl_log
from tests.builders import B, E, meta


def _logs(folder: Path, hosts: int = 4) -> list[Path]:
    write_nccl_log(folder, NcclLogSpec(hosts=hosts, gpus_per_host=2, network="Socket", collectives=5), per_rank=True)
    return sorted(folder.iterdir())


def _bucket_ids(root: Path, table: str, bucket: str) -> list[str]:
    (part,) = (root / "tables" / table).glob(f"run=*/bucket={bucket}/part-0.parquet")
    return pq.read_table(part).column("input_id").to_pylist()


def test_plan_groups_small_inputs_in_natural_order_and_big_ones_alone(tmp_path: Path) -> None:
    for name, size in [("node-10.log", 30), ("node-2.log", 30), ("node-1.log", 30), ("big.json", 100)]:
        (tmp_path / name).write_bytes(b"x" * size)
    from analyzer.store.discovery import InputFile
    from parsers.inputs import InputKind

    items = [
        InputFile(tmp_path / n, InputKind.JOB_LOG, False, (tmp_path / n).stat().st_size)
        for n in ("node-10.log", "node-2.log", "node-1.log", "big.json")
    ]
    plan = plan_buckets(items, bucket_bytes=64)
    assert plan[0] == Bucket((items[3],), stream=True)
    assert [[i.path.name for i in b.inputs] for b in plan[1:]] == [["node-1.log", "node-2.log"], ["node-10.log"]]
    assert not any(b.stream for b in plan[1:])


def test_small_inputs_share_a_bucket_and_read_back_per_input(tmp_path: Path) -> None:
    paths = _logs(tmp_path / "logs")
    store = RunStore.create_or_open(tmp_path / "store")
    rep = store.ingest(*discover([tmp_path / "logs"]))
    assert len(rep.added) == 8 and len({e["bucket"] for e in rep.added}) == 1
    bucket = rep.added[0]["bucket"]
    assert sorted(set(_bucket_ids(store.root, "nccl_processes", bucket))) == sorted(e["id"] for e in rep.added)
    one = next(e for e in rep.added if e["path"] == str(paths[3]))
    mine = store.input_table("nccl_processes", one["id"])
    assert mine.num_rows == 1 and "input_id" not in mine.column_names
    whole = store.table("nccl_processes").to_pandas()
    assert len(whole) == 8 and whole["input_id"].nunique() == 8


def test_same_bytes_in_one_bucket_are_stored_once(tmp_path: Path) -> None:
    paths = _logs(tmp_path / "logs", hosts=1)
    shutil.copy(paths[0], tmp_path / "logs" / "copy.log")
    store = RunStore.create_or_open(tmp_path / "store")
    rep = store.ingest(*discover([tmp_path / "logs"]))
    assert len(rep.added) == 2 and len(rep.unchanged) == 1
    assert sorted(rep.unchanged[0]["paths"]) == sorted([str(paths[0]), str(tmp_path / "logs" / "copy.log")])
    assert store.table("nccl_processes").num_rows == 2


def test_same_bytes_in_two_buckets_keep_one_copy_of_the_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _logs(tmp_path / "logs", hosts=2)
    shutil.copy(paths[0], tmp_path / "logs" / "zz-copy.log")  # sorts last: another bucket
    monkeypatch.setattr(analyzer.store.buckets, "BUCKET_BYTES", paths[0].stat().st_size * 2 + 1)
    store = RunStore.create_or_open(tmp_path / "store")
    rep = store.ingest(*discover([tmp_path / "logs"]))
    assert len(rep.added) == 4 and len(store.inputs) == 4
    assert store.table("nccl_processes").num_rows == 4
    on_disk = [
        i
        for p in (store.root / "tables" / "nccl_processes").glob("run=store/bucket=*/part-0.parquet")
        for i in pq.read_table(p).column("input_id").to_pylist()
    ]
    assert sorted(on_disk) == sorted(e["id"] for e in store.inputs)  # the second copy's rows were removed


def test_every_input_is_listed_under_the_sha256_of_its_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small inputs are hashed as they are read, a streamed one in a thread beside its parser, a
    compressed one over its compressed bytes: each entry's sha256 is that of the file (all are
    under 16 MB: BLAKE3 is for bigger ones, tests/analyzer/store/test_hashing.py)."""
    logs = _logs(tmp_path / "in", hosts=1)
    packed = tmp_path / "in" / "packed.log.gz"
    packed.write_bytes(gzip.compress(logs[0].read_bytes() + b"\n"))
    big = _big_timeline(tmp_path / "in" / "big.json", tail=5)
    monkeypatch.setattr(analyzer.store.buckets, "BUCKET_BYTES", big.stat().st_size)  # the timeline streams
    store = RunStore.create_or_open(tmp_path / "store")
    rep = store.ingest(*discover([tmp_path / "in"]))
    assert {Path(e["path"]).name for e in rep.added} == {p.name for p in (*logs, packed, big)}
    for e in rep.added:
        assert e.get("sha256") == hashlib.sha256(Path(e["path"]).read_bytes()).hexdigest(), e["path"]
        assert "blake3" not in e
    streamed = next(e for e in rep.added if e["path"] == str(big))
    assert streamed["bucket"] == streamed["id"] != streamed["sha256"][:16]  # alone, under its prefix id


def _big_timeline(path: Path, tail: int) -> Path:
    """A timeline of about 3 KB whose first 2 KB never change and whose last span does."""
    events = [meta(1, "allreduce.w")] + [B("ALLREDUCE", 10 * i, 1) + ",\n" + E(10 * i + 5, 1) for i in range(40)]
    events.append(B("ALLREDUCE", 1000, 1) + ",\n" + E(1000 + tail, 1))
    path.write_text("[\n" + ",\n".join(events) + "\n]\n")
    return path


def test_big_inputs_with_the_same_size_and_prefix_get_distinct_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "in").mkdir()
    a = _big_timeline(tmp_path / "in" / "a.json", tail=5)
    b = _big_timeline(tmp_path / "in" / "b.json", tail=7)
    assert a.stat().st_size == b.stat().st_size and a.read_bytes() != b.read_bytes()
    monkeypatch.setattr(analyzer.store.buckets, "BUCKET_BYTES", 1024)
    monkeypatch.setattr(analyzer.store.buckets, "ID_PREFIX_BYTES", 2048)
    store = RunStore.create_or_open(tmp_path / "store")
    rep = store.ingest(*discover([tmp_path / "in"]))
    ids = [e["id"] for e in rep.added]
    assert len(rep.added) == 2 and len(set(ids)) == 2
    second = rep.added[1]
    assert second["id"] == second["sha256"][:16] and second["bucket"] == second["id"]
    spans = store.table("spans").to_pandas()
    assert spans.groupby(spans["input_id"].astype(str)).size().to_dict() == {i: 41 for i in ids}
    folders = {str(p.relative_to(p.parents[1])) for p in (store.root / "tables").glob("*/*/*")}
    assert folders == {f"run=store/bucket={i}" for i in ids}


def test_version_1_stores_are_read_and_extended(tmp_path: Path) -> None:
    _logs(tmp_path / "logs", hosts=1)
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([tmp_path / "logs"]))
    want = {n: store.table(n).num_rows for n in TABLES}
    # rewrite it as version 1 wrote it: one folder per input, named by its id, no input_id column
    manifest = json.loads((store.root / MANIFEST).read_text())
    for e in manifest["inputs"]:
        for name in e["tables"]:
            t = pq.read_table(store.part_path(name, e))
            rows = t.filter(pc.equal(t["input_id"].cast("string"), e["id"])).drop_columns(["input_id"])
            (store.root / "tables" / name / f"input_id={e['id']}").mkdir()
            pq.write_table(rows, store.root / "tables" / name / f"input_id={e['id']}" / "part-0.parquet")
    for e in manifest["inputs"]:
        for name in e["tables"]:
            shutil.rmtree(store.part_path(name, e).parents[1], ignore_errors=True)  # run=<run>
        del e["bucket"], e["run"]
    del manifest["run"]
    manifest["schema_version"] = 1
    (store.root / MANIFEST).write_text(json.dumps(manifest))
    old = RunStore.open(store.root)
    assert {n: old.table(n).num_rows for n in TABLES} == want
    e0 = old.inputs[0]
    assert old.input_table("nccl_processes", e0["id"]).num_rows == 1
    _logs(tmp_path / "more", hosts=2)
    old.ingest(*discover([tmp_path / "more"]))
    mixed = RunStore.open(store.root)
    assert mixed.manifest["schema_version"] == 3 and len(mixed.inputs) == 6
    assert mixed.table("nccl_processes").num_rows == 6 and {bool(e.get("bucket")) for e in mixed.inputs} == {
        True,
        False,
    }
    assert (store.root / "tables" / "nccl_processes" / f"input_id={e0['id']}").is_dir()  # not swept


def test_pandas_duckdb_and_dask_read_the_store_as_a_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's claim: a hive-partitioned dataset that other tools read as is."""
    import dask.dataframe as dd
    import duckdb
    import pandas as pd

    paths = _logs(tmp_path / "logs", hosts=4)
    monkeypatch.setattr(analyzer.store.buckets, "BUCKET_BYTES", paths[0].stat().st_size * 3)
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([tmp_path / "logs"]))
    want = store.table("nccl_processes").to_pandas()
    want_ids = sorted(want["input_id"].astype(str))
    folder = store.root / "tables" / "nccl_processes"
    assert len(list(folder.glob("run=store/bucket=*"))) == 3  # 8 logs, 3 to a bucket
    got = pd.read_parquet(folder)
    assert (
        sorted(got["input_id"].astype(str)) == want_ids
        and set(got["bucket"].astype(str)) == {e["bucket"] for e in store.inputs}
        and set(got["run"].astype(str)) == {"store"}
    )
    rows = duckdb.sql(
        f"select input_id, bucket, host, pid, run from read_parquet('{folder}/*/*/*.parquet', "
        "hive_partitioning=true) order by input_id"
    ).fetchall()
    assert [r[0] for r in rows] == want_ids and {r[4] for r in rows} == {"store"}
    assert sorted((r[2], r[3]) for r in rows) == sorted(zip(want["host"].astype(str), want["pid"], strict=True))
    ddf = dd.read_parquet(str(folder))
    assert sorted(ddf["input_id"].astype(str).compute()) == want_ids


def test_version_2_stores_are_read_and_extended(tmp_path: Path) -> None:
    """Version 2 had no run level (``tables/<table>/bucket=<name>``): read as is, and an
    ingest adds run=<run> buckets beside the old ones (which stay)."""
    _logs(tmp_path / "logs", hosts=1)
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([tmp_path / "logs"]))
    want = store.table("nccl_processes").to_pandas()
    manifest = json.loads((store.root / MANIFEST).read_text())
    for e in manifest["inputs"]:
        for name in e["tables"]:
            part = store.part_path(name, e)
            if part.parent.exists():
                os.replace(part.parent, part.parents[2] / part.parent.name)
        del e["run"]
    for folder in (store.root / "tables").glob("*/run=*"):
        folder.rmdir()
    del manifest["run"]
    manifest["schema_version"] = 2
    (store.root / MANIFEST).write_text(json.dumps(manifest))
    old = RunStore.open(store.root)
    assert old.run == "store"
    pd.testing.assert_frame_equal(old.table("nccl_processes").to_pandas(), want)
    _logs(tmp_path / "more", hosts=2)
    old.ingest(*discover([tmp_path / "more"]))
    mixed = RunStore.open(store.root)
    assert mixed.manifest["schema_version"] == 3 and mixed.manifest["run"] == "store" and len(mixed.inputs) == 6
    assert mixed.table("nccl_processes").num_rows == 6
    levels = {p.name.split("=")[0] for p in (store.root / "tables" / "nccl_processes").iterdir()}
    assert levels == {"bucket", "run"}  # the old buckets were not swept
