"""Scale-out: process pools and a real Dask LocalCluster give the single-process results; an
interrupted ingest resumes; batch over a fleet lists exactly the runs with injected faults."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import analyzer.store.buckets
import analyzer.store.ingest
import analyzer.store.parallel
import analyzer.store.parts
import parsers.nccl.chunks
from analyzer.fleet import run_batch
from analyzer.store.discovery import discover
from analyzer.store.ingest import ingest_runner
from analyzer.store.local import NOTHING_LENT
from analyzer.store.parallel import Executor
from analyzer.store.run_store import RunStore
from parsers.nccl.chunks import chunk_ranges
from parsers.schema import TABLES
from sample_traces.generator.nccl import NcclLogSpec, write_nccl_log
from sample_traces.generator.timeline import TimelineSpec, write_timeline

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    write_nccl_log(d / "logs", NcclLogSpec(hosts=8, gpus_per_host=4, network="Socket", collectives=20), per_rank=True)
    write_timeline(d / "timeline.json", TimelineSpec(ranks=8, tensors=8, steps=10, cache=False, seed=3))
    return d


def _tables(store: RunStore) -> dict[str, pd.DataFrame]:
    """Every table, rows in a canonical order (inputs complete in any order on workers)."""
    out = {}
    for name in TABLES:
        df = store.table(name).to_pandas()
        df["input_id"] = df["input_id"].astype(str)  # partitions are concatenated in manifest order
        df["_row"] = df.groupby("input_id").cumcount()
        out[name] = df.sort_values(["input_id", "_row"]).reset_index(drop=True)
    return out


def _ingest(root: Path, src: Path, executor: Executor | None) -> RunStore:
    store = RunStore.create_or_open(root)
    store.ingest(*discover([src]), runner=ingest_runner(executor) if executor else None)
    return RunStore.open(root)


def _same(a: RunStore, b: RunStore) -> None:
    assert sorted(e["id"] for e in a.inputs) == sorted(e["id"] for e in b.inputs)
    ta, tb = _tables(a), _tables(b)
    for name in TABLES:
        pd.testing.assert_frame_equal(ta[name], tb[name], check_categorical=False, obj=name)


@pytest.fixture
def small_buckets(monkeypatch: pytest.MonkeyPatch) -> int:
    """Buckets of 64 KB (the coordinator plans them; workers follow the plan): the 32 per-rank
    logs make several buckets and the timeline streams into its own."""
    monkeypatch.setattr(analyzer.store.buckets, "BUCKET_BYTES", 64 * 1024)
    return 64 * 1024


def test_process_pool_and_dask_give_the_single_process_tables(tmp_path: Path, inputs: Path, small_buckets: int) -> None:
    single = _ingest(tmp_path / "single", inputs, None)
    assert len(single.inputs) == 33 and single.table("nccl_processes").num_rows == 32
    buckets = {e["bucket"] for e in single.inputs}
    assert 4 <= len(buckets) < 33  # grouped, not one per input
    timeline = next(e for e in single.inputs if e["kind"] == "horovod_timeline")
    assert timeline["size"] >= small_buckets and timeline["bucket"] == timeline["id"]  # streamed, alone
    on_disk = {p.parent.name for p in (tmp_path / "single" / "tables").glob("*/run=single/bucket=*/part-0.parquet")}
    assert on_disk == {f"bucket={b}" for b in buckets}
    _same(single, _ingest(tmp_path / "pool", inputs, Executor(jobs=2)))
    _same(single, _ingest(tmp_path / "dask", inputs, Executor(dask_workers=2)))
    assert {e["bucket"] for e in RunStore.open(tmp_path / "dask").inputs} == buckets  # the same plan everywhere


def test_a_big_log_parsed_in_chunks_on_workers_gives_the_single_process_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_buckets: int
) -> None:
    """A combined mpirun log is cut into chunks parsed by workers and merged here: the same
    manifest entry (id, sha256, rows, issues) and the same tables as streaming it here."""
    src = tmp_path / "src"
    src.mkdir()
    (log,) = write_nccl_log(
        src / "job.log",
        NcclLogSpec(
            hosts=4, gpus_per_host=4, wording="2.26", link="RoCE", collectives=60, completion_error_rank=5, seed=2
        ),
    )
    size = log.stat().st_size
    assert size > 8 * 16 * 1024
    merged: list[int] = []

    class Counting(parsers.nccl.chunks.ChunkMerger):
        def add(self, index: int, chunk: object) -> None:  # type: ignore[override]
            merged.append(index)
            super().add(index, chunk)  # type: ignore[arg-type]

    monkeypatch.setattr(parsers.nccl.chunks, "ChunkMerger", Counting)  # ingest imports it when a log comes
    tapering = analyzer.store.parallel._tapering
    handed: list[list[object]] = []

    def recording(items, weight, workers, most):  # type: ignore[no-untyped-def]
        groups = tapering(items, weight, workers, most)
        handed.extend(groups)
        return groups

    monkeypatch.setattr(analyzer.store.parallel, "_tapering", recording)
    single = _ingest(tmp_path / "single", src, None)
    assert not merged
    for name, executor in (("pool", Executor(jobs=2)), ("dask", Executor(dask_workers=2))):
        root = tmp_path / name
        RunStore.create_or_open(root).ingest(*discover([src]), runner=ingest_runner(executor, chunk_bytes=16 * 1024))
        chunked = RunStore.open(root)
        assert sorted(merged) == list(range(len(chunk_ranges(log, size, 16 * 1024))))  # every chunk on a worker
        assert handed and all(len(g) == 1 for g in handed), [len(g) for g in handed]  # one chunk a task: a worker
        handed.clear()  # holds one chunk's parser at a time
        merged.clear()
        _same(single, chunked)
        (a,), (b,) = single.inputs, chunked.inputs
        assert (a["run"], b["run"]) == ("single", name)  # each store's folder name
        same = {k: v for k, v in a.items() if k not in ("ingested_at", "run")}
        assert same == {k: v for k, v in b.items() if k not in ("ingested_at", "run")}
        assert b["sha256"] == hashlib.sha256(log.read_bytes()).hexdigest()


def _worker_settings(_: list[int]) -> list[tuple[object, object, object]]:
    import os

    import dask

    return [
        (
            os.environ.get("MALLOC_TRIM_THRESHOLD_"),
            dask.config.get("distributed.worker.profile.enabled"),
            dask.config.get("distributed.scheduler.work-stealing"),
        )
    ]


def test_local_dask_workers_run_without_the_profiler_and_the_trim_threshold() -> None:
    """What made Dask workers slower than a process pool (measured in bench/scale.py) is off."""
    assert list(Executor(dask_workers=1).map(_worker_settings, [0], weight=lambda _: 1)) == [(None, False, False)]


def _parent(_: list[int]) -> list[int]:
    import os

    return [os.getppid()]


def test_local_dask_workers_are_not_forked_from_this_threaded_process() -> None:
    """A worker forked from a process whose other threads (the cluster's event loop, a hash) hold a lock
    can wait on it for ever: workers come from a fork server, whose only child they are."""
    import os

    (parent,) = Executor(dask_workers=1).map(_parent, [0], weight=lambda _: 1)
    assert parent != os.getpid()


def test_ingest_tasks_taper_to_single_buckets() -> None:
    """Buckets go out a few per task while much is left, one per task at the end, none twice."""
    from analyzer.store.ingest import TASK_BYTES
    from analyzer.store.parallel import _tapering

    sizes = [16 << 20] * 45 + [3 << 20, 900 << 20]  # 45 full buckets, a small one, one big input
    groups = _tapering(list(range(len(sizes))), sizes.__getitem__, 2, TASK_BYTES)
    assert sorted(i for g in groups for i in g) == list(range(len(sizes)))
    assert groups[0] == [46]  # the big input first, alone
    weights = [sum(sizes[i] for i in g) for g in groups]
    assert all(w <= TASK_BYTES for w in weights[1:])
    assert len(groups[1]) == 4 and [len(g) for g in groups[-4:]] == [1, 1, 1, 1]
    assert len(groups) < len(sizes) / 2
    assert weights[1:] == sorted(weights[1:], reverse=True)


def test_interrupted_ingest_is_consistent_and_resumes(
    tmp_path: Path, inputs: Path, monkeypatch: pytest.MonkeyPatch, small_buckets: int
) -> None:
    real = analyzer.store.buckets.write_bucket
    calls = []

    def crashing(root: Path, bucket, progress=None, input_id=None, local=NOTHING_LENT):  # type: ignore[no-untyped-def]
        calls.append(bucket)
        if len(calls) == 4:  # dies after writing the 4th bucket, before the manifest lists it
            real(root, bucket, progress, input_id, local)
            (root / "tables" / "spans" / f"{analyzer.store.parts.TMP_PREFIX}dead").mkdir(parents=True, exist_ok=True)
            raise KeyboardInterrupt
        return real(root, bucket, progress, input_id, local)

    monkeypatch.setattr("analyzer.store.run_store.write_bucket", crashing)
    store = RunStore.create_or_open(tmp_path / "store")
    with pytest.raises(KeyboardInterrupt):
        store.ingest(*discover([inputs]))
    done = RunStore.open(tmp_path / "store")
    listed = sum(len(b.inputs) for b in calls[:3])
    assert len(done.inputs) == listed  # what completed is in the manifest, readable as is
    assert done.table("nccl_processes").num_rows == len([e for e in done.inputs if e["kind"] == "job_log"])
    monkeypatch.setattr("analyzer.store.run_store.write_bucket", real)
    rep = done.ingest(*discover([inputs]))
    assert len(rep.unchanged) == listed and len(rep.added) == 33 - listed
    assert not list((tmp_path / "store" / "tables").rglob(f"{analyzer.store.parts.TMP_PREFIX}*"))
    resumed = RunStore.open(tmp_path / "store")
    folders = {str(p.relative_to(p.parents[1])) for p in (tmp_path / "store" / "tables").glob("*/*/*")}
    assert folders == {f"run=store/bucket={e['bucket']}" for e in resumed.inputs}  # the unlisted 4th bucket was swept
    _same(resumed, _ingest(tmp_path / "clean", inputs, None))


def _fleet(root: Path, n: int) -> tuple[set[str], set[str], set[str]]:
    """``n`` tiny runs; every 7th has a straggler, every 11th falls back to sockets, every 23rd
    slows down half-way (every rank 20 ms later from step 30 of 60)."""
    stragglers, sockets, slowdowns = set(), set(), set()
    for i in range(n):
        name = f"job-{i:03d}"
        d = root / name
        d.mkdir(parents=True)
        strag = i % 7 == 3
        slow = (
            {"steps": 60, "slow_from_step": 30, "slow_ranks": (0, 1, 2, 3), "slow_delay_us": 20_000}
            if i % 23 == 8
            else {}
        )
        write_timeline(
            d / "timeline.json",
            TimelineSpec(
                ranks=4,
                tensors=6,
                cache=False,
                seed=i,
                straggler_ranks=(1,) if strag else (),
                straggler_delay_us=20_000 if strag else 0,
                **{"steps": 10, **slow},
            ),
        )
        if slow:
            slowdowns.add(name)
        if i % 11 == 5:
            write_nccl_log(d / "job.log", NcclLogSpec(hosts=2, gpus_per_host=2, network="Socket", seed=i))
            sockets.add(name)
        if strag:
            stragglers.add(name)
    return stragglers, sockets, slowdowns


def test_batch_over_200_runs_lists_exactly_the_injected_faults(tmp_path: Path) -> None:
    stragglers, sockets, slowdowns = _fleet(tmp_path / "runs", 200)
    (tmp_path / "runs" / "job-broken").mkdir()
    (tmp_path / "runs" / "job-broken" / "timeline.json").write_bytes(b"\x00\x01 not a timeline")
    fleet = run_batch(tmp_path / "runs", tmp_path / "out", Executor(jobs=2))
    assert fleet["runs"] == 201 and fleet["analysed"] == 200
    assert {r["run"] for r in fleet["stragglers"]} == stragglers and all(r["ranks"] == [1] for r in fleet["stragglers"])
    assert {r["run"] for r in fleet["socket_fallback"]} == sockets
    assert {r["run"] for r in fleet["with_findings"]} == stragglers | sockets | slowdowns
    assert [r["run"] for r in fleet["failed"]] == ["job-broken"] and "not an input" in fleet["failed"][0]["error"]
    regressions = fleet["worst_regressions"]
    assert {r["run"] for r in regressions} == slowdowns and len(slowdowns) == 9
    assert all(r["onset_step"] == 30 and 1.2 < r["ratio"] < 1.45 for r in regressions)  # 20 ms on ~60 ms steps
    assert [r["lost_s"] for r in regressions] == sorted((r["lost_s"] for r in regressions), reverse=True)
    assert len(list((tmp_path / "out" / "runs").glob("*.json"))) == 200
    md = (tmp_path / "out" / "fleet.md").read_text()
    assert all(f"`{r}`" in md for r in stragglers | sockets | slowdowns)
    worst = regressions[0]
    assert f"- `{worst['run']}`: {worst['ratio']:.2f}x from step 30 ({worst['baseline_ms']:.1f} → " in md


def test_batch_on_dask_equals_batch_here(tmp_path: Path) -> None:
    _fleet(tmp_path / "runs", 16)  # job-008 slows down
    here = run_batch(tmp_path / "runs", tmp_path / "a", Executor(jobs=1))
    dask = run_batch(tmp_path / "runs", tmp_path / "b", Executor(dask_workers=2))
    assert here == dask
    ra = json.loads((tmp_path / "a" / "runs" / "job-003.json").read_text())
    rb = json.loads((tmp_path / "b" / "runs" / "job-003.json").read_text())
    assert ra["findings"] == rb["findings"]


def test_a_big_timeline_tokenized_in_ranges_on_workers_gives_the_single_process_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_buckets: int
) -> None:
    """A timeline is cut into ranges tokenized on threads (``--jobs``) or Dask workers and
    paired here in file order: the same manifest entry (id, sha256, rows, issues, facts) and
    the same tables as streaming it here."""
    src = tmp_path / "src"
    src.mkdir()
    path = src / "timeline.json"
    write_timeline(path, TimelineSpec(ranks=8, tensors=8, steps=12, cache=False, seed=5, truncate_at=0.9))
    size = path.stat().st_size
    assert size > small_buckets  # a bucket of its own, streamed
    ranges: list[int] = []
    real = analyzer.store.ingest.write_ranged_timeline

    def counting(root: Path, item: object, tokenized: Any, *args: Any) -> Any:
        def count(tasks: list[Any]) -> Any:
            for r in tokenized(tasks):
                ranges.append(r.start)
                yield r

        return real(root, item, count, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(analyzer.store.ingest, "write_ranged_timeline", counting)
    single = _ingest(tmp_path / "single", src, None)
    assert single.inputs[0]["timeline"]["status"] == "truncated"
    for name, executor in (("threads", Executor(jobs=2)), ("dask", Executor(dask_workers=2))):
        root = tmp_path / name
        steps: list[int] = []
        RunStore.create_or_open(root).ingest(
            *discover([src]), progress=steps.append, runner=ingest_runner(executor, range_bytes=16 * 1024)
        )
        assert sum(steps) == size and len(steps) > 3  # reported range by range
        ranged = RunStore.open(root)
        assert len(ranges) >= size // (16 * 1024) - 1 and ranges == sorted(ranges)  # paired in file order
        ranges.clear()
        _same(single, ranged)
        (a,), (b,) = single.inputs, ranged.inputs
        same = {k: v for k, v in a.items() if k not in ("ingested_at", "run")}
        assert same == {k: v for k, v in b.items() if k not in ("ingested_at", "run")}
        assert b["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_big_logs_chunks_go_out_in_file_order() -> None:
    """A log's chunks differ in size by a line's bytes: they go out in file order (and come back nearly so), so
    the coordinator merges them as they come instead of holding those after a late one."""
    import random

    from analyzer.store.ingest import TASK_BYTES
    from analyzer.store.parallel import _tapering
    from parsers.inputs import CHUNK_BYTES

    rng = random.Random(61)
    sizes = [CHUNK_BYTES + rng.randrange(-(64 << 10), 64 << 10) for _ in range(32)] + [5 << 20]
    groups = _tapering(list(range(len(sizes))), sizes.__getitem__, 2, TASK_BYTES)
    assert [i for g in groups for i in g] == list(range(len(sizes)))
    assert max(map(len, groups)) == 2 and len(groups[-1]) == 1  # a few to a task while much is left


def _own_pid(items: list[int]) -> list[int]:
    import os

    return [os.getpid() for _ in items]


def test_the_workers_are_gone_before_the_last_results_are_used() -> None:
    """The process pool ends before its last results reach the caller (a big log's merge and write come after
    them): its workers' memory is not held through that work."""
    import os

    pids: list[int] = []
    for pid in Executor(jobs=2).map(_own_pid, list(range(8)), weight=lambda _: 1):
        pids.append(pid)
        if len(pids) == 8:  # the last result, while the caller works on it
            for worker in set(pids):
                with pytest.raises(ProcessLookupError):
                    os.kill(worker, 0)
    assert len(pids) == 8 and os.getpid() not in pids
