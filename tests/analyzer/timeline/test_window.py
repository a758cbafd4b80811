"""A timeline over the memory budget is analysed through a window (analyzer.timeline.load): the whole
run's step table is the one the whole model gives, row for row; the span-level model is the
whole model's first steps; the report says so; a timeline that fits is analysed whole."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.config import DEFAULT_MEMORY_BUDGET, AnalysisConfig
from analyzer.fleet import run_batch
from analyzer.report.assembly import analyze
from analyzer.report.views import timeline_views
from analyzer.store.discovery import discover
from analyzer.store.parallel import Executor
from analyzer.store.run_store import RunStore
from analyzer.timeline import load
from analyzer.timeline.load import (
    BASELINE_BYTES,
    MIN_DETAIL_STEPS,
    MIN_WINDOW_STEPS,
    analysed_model,
    budget_for_room,
    build_model,
    model_bytes,
)
from sample_traces.generator.timeline import TimelineSpec, write_timeline


def _store(root: Path, spec: TimelineSpec) -> tuple[RunStore, dict]:
    write_timeline(root / "timeline.json", spec)
    store = RunStore.create_or_open(root / "store")
    store.ingest(*discover([root / "timeline.json"]))
    store = RunStore.open(root / "store")
    return store, store.inputs[0]


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunStore, dict]:
    """300 steps, ticks on every negotiation, rank 5 late, the file cut inside its last step."""
    spec = TimelineSpec(
        ranks=8,
        tensors=12,
        steps=300,
        cache=False,
        straggler_ranks=(5,),
        straggler_delay_us=10_000,
        truncate_at=0.9995,
        seed=7,
    )
    return _store(tmp_path_factory.mktemp("long"), spec)


def _budget_for(entry: dict, steps: int, total_steps: int) -> int:
    """A budget whose head window holds about ``steps`` steps (3/4 of it goes to the head)."""
    return budget_for_room(int(model_bytes(entry) / total_steps * steps / 0.75) + 1)


def test_windowed_step_table_is_the_whole_models(long_run: tuple[RunStore, dict]) -> None:
    store, entry = long_run
    whole = build_model(store, entry)
    n = len(whole.steps)
    assert n >= 290
    assert not whole.steps["complete"].iloc[-1]  # the cut left the last step open
    for head in (MIN_DETAIL_STEPS, 57):
        model = analysed_model(store, entry, _budget_for(entry, head, n))
        assert model.window is not None
        k = model.window.steps
        assert head - 1 <= k <= head + 1
        assert model.window.run_steps == n and model.window.run_spans == entry["rows"]["spans"]
        pd.testing.assert_frame_equal(model.all_steps, whole.steps, obj=f"head {k}")
        pd.testing.assert_frame_equal(model.steps, whole.steps.iloc[:k], obj=f"head {k} steps")
        # the head holds exactly the spans of its steps (and the start-up before them)
        in_head = whole.spans["step"] < k
        assert model.window.spans == int(in_head.sum()) == len(model.spans)
        assert set(model.spans["span_id"]) == set(whole.spans.loc[in_head, "span_id"])
        assert model.batches["step"].max() == k - 1


def test_step_series_view_covers_every_step(long_run: tuple[RunStore, dict]) -> None:
    store, entry = long_run
    whole = build_model(store, entry)
    model = analysed_model(store, entry, _budget_for(entry, 30, len(whole.steps)))
    assert timeline_views(model)["step_series"] == timeline_views(whole)["step_series"]
    assert len(timeline_views(model)["step_series"]["step"]) > 250


def test_window_lateness_is_the_heads_ticks(long_run: tuple[RunStore, dict]) -> None:
    store, entry = long_run
    whole = build_model(store, entry)
    model = analysed_model(store, entry, _budget_for(entry, 40, len(whole.steps)))
    k = model.window.steps
    head_negs = whole.lateness.neg_step < k
    assert len(model.lateness) == int(np.diff(whole.lateness.bounds)[head_negs & whole.lateness.keep].sum()) > 0
    # the same ticks, ranks and lateness as the whole model's first steps (the head reads only
    # the ticks in its negotiations' span-id range)
    whole_rows = np.concatenate(
        [
            np.arange(whole.lateness.bounds[g], whole.lateness.bounds[g + 1])
            for g in np.flatnonzero(head_negs & whole.lateness.keep)
        ]
    )
    np.testing.assert_array_equal(model.lateness.rank, whole.lateness.rank[whole_rows])
    np.testing.assert_array_equal(model.lateness.lateness_us, whole.lateness.lateness_us[whole_rows])
    rows = {r.rank: r for r in model.steady_ranks}
    worst = model.steady_ranks[0]
    assert worst.rank == 5 and worst.last_share > 0.9 and rows[0].last_share < 0.2


def test_report_through_a_window_says_so(long_run: tuple[RunStore, dict]) -> None:
    store, entry = long_run
    n = len(build_model(store, entry).steps)
    budget = _budget_for(entry, 60, n)
    rep = analyze(store, config=AnalysisConfig(memory_budget=budget))
    section = rep.timelines[0]
    assert section["window"]["run_steps"] == n == section["steps"]["count"]
    assert section["window"]["budget_bytes"] == budget < section["window"]["estimate_bytes"]
    assert section["window"]["estimate_bytes"] == model_bytes(entry) + BASELINE_BYTES
    assert section["window"]["note"].startswith(
        f"span-level findings, phases, fusion, cycle and rank lateness read the first {section['window']['steps']} of 300 steps"
    )
    assert 58 <= section["window"]["steps"] <= 61  # the budget of 60 average steps, the start-up's spans counted
    assert any(f.code == "timeline.straggler" for f in rep.findings)
    whole = analyze(store)
    assert whole.timelines[0]["window"] is None
    assert whole.timelines[0]["steps"] == section["steps"]  # step statistics cover every step either way


def test_a_timeline_that_fits_is_analysed_whole(long_run: tuple[RunStore, dict]) -> None:
    store, entry = long_run
    model = analysed_model(store, entry, budget_for_room(model_bytes(entry)))
    assert model.window is None and model.run_steps is None
    assert analysed_model(store, entry, budget_for_room(model_bytes(entry)) - 2).window is not None
    assert len(model.steps) == len(build_model(store, entry).steps)


def test_window_of_a_timeline_sharing_its_bucket(tmp_path: Path) -> None:
    """Small inputs share a bucket's files: a window reads only its own input's rows."""
    (tmp_path / "in").mkdir()
    for name, seed in (("a.json", 1), ("b.json", 2)):
        write_timeline(tmp_path / "in" / name, TimelineSpec(ranks=4, tensors=6, steps=120, cache=False, seed=seed))
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([tmp_path / "in"]))
    store = RunStore.open(tmp_path / "store")
    a, b = store.inputs
    assert a["bucket"] == b["bucket"]
    for entry in (a, b):
        whole = build_model(store, entry)
        model = analysed_model(store, entry, _budget_for(entry, 25, len(whole.steps)))
        assert model.window is not None and model.window.steps < len(whole.steps) - 50
        pd.testing.assert_frame_equal(model.all_steps, whole.steps)
        assert set(model.spans["span_id"]) == set(whole.spans.loc[whole.spans["step"] < model.window.steps, "span_id"])


def test_few_huge_steps_are_analysed_whole(tmp_path: Path) -> None:
    """Fewer steps than the smallest head: nothing could be left out."""
    store, entry = _store(tmp_path, TimelineSpec(ranks=4, tensors=4, steps=MIN_DETAIL_STEPS - 5, cache=False))
    model = analysed_model(store, entry, 1)
    assert model.window is None and len(model.steps) == MIN_DETAIL_STEPS - 5


def test_batch_analyses_each_run_within_the_budget(tmp_path: Path) -> None:
    (tmp_path / "runs" / "job").mkdir(parents=True)
    write_timeline(tmp_path / "runs" / "job" / "timeline.json", TimelineSpec(ranks=4, tensors=6, steps=80, seed=5))
    for budget, windowed in ((1 << 10, True), (DEFAULT_MEMORY_BUDGET, False)):
        run_batch(tmp_path / "runs", tmp_path / f"out-{windowed}", Executor(jobs=1), memory_budget=budget)
        doc = json.loads((tmp_path / f"out-{windowed}" / "runs" / "job.json").read_text())
        assert (doc["timeline"]["window"] is not None) is windowed
        assert doc["timeline"]["steps"]["count"] == 80


def test_cli_memory_budget(long_run: tuple[RunStore, dict], tmp_path: Path) -> None:
    store, _ = long_run
    runner = CliRunner()
    res = runner.invoke(cli, ["report", str(store.root), "--memory-budget", "1M", "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["timeline"]["window"]["budget_bytes"] == 1 << 20
    res = runner.invoke(cli, ["report", str(store.root), "--memory-budget", "1M"])
    assert "Analysed through a window: span-level findings" in res.output
    res = runner.invoke(cli, ["report", str(store.root), "--memory-budget", "lots"])
    assert res.exit_code == 2
    assert "--memory-budget 'lots': expected a size such as 500M or 2G" in res.output


def test_input_batches_between_reads_only_the_range(long_run: tuple[RunStore, dict]) -> None:
    """``between`` keeps exactly the rows in range, in file order, and drops null ids."""
    store, entry = long_run
    ticks = store.input_table("ticks", entry["id"], ["negotiation_id", "rank", "ts_us"]).to_pandas()
    lo, hi = int(ticks["negotiation_id"].quantile(0.2)), int(ticks["negotiation_id"].quantile(0.4))
    got = pd.concat(
        [
            b.to_pandas()
            for b in store.input_batches(
                "ticks", entry["id"], ["rank", "ts_us"], batch_rows=1000, between=("negotiation_id", lo, hi)
            )
        ],
        ignore_index=True,
    )
    want = ticks.loc[ticks["negotiation_id"].between(lo, hi), ["rank", "ts_us"]].reset_index(drop=True)
    assert 0 < len(got) < len(ticks)
    pd.testing.assert_frame_equal(got, want)


def test_row_groups_outside_the_range_are_skipped(tmp_path: Path) -> None:
    """Row groups whose statistics rule the range out are not read; null-only groups neither."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from analyzer.store.parts import row_groups as _row_groups

    ids = pa.array([*range(1000), *([None] * 100)], pa.int64())
    pq.write_table(pa.table({"negotiation_id": ids}), tmp_path / "t.parquet", row_group_size=100)
    meta = pq.ParquetFile(tmp_path / "t.parquet").metadata
    assert meta.num_row_groups == 11
    assert _row_groups(meta, "negotiation_id", 150, 349) == [1, 2, 3]
    assert _row_groups(meta, "negotiation_id", 0, 99) == [0]
    assert _row_groups(meta, "negotiation_id", 5000, 6000) == []


def test_a_budget_under_the_baseline_windows_by_the_input_not_the_baseline(
    long_run: tuple[RunStore, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget below the process's own baseline (400 MiB < 450 MiB) used to leave no room at all: a
    small capture was cut into one-step windows, each a read of the store, 25-50x slower. The room is
    the input's now, and a window reads at least MIN_WINDOW_STEPS steps."""
    store, entry = long_run
    assert analysed_model(store, entry, 400 << 20).window is None  # a few MB of model: whole
    reads: list[int] = []
    real = load._window_steps

    def counted(*args: object, **kwargs: object) -> pd.DataFrame:
        reads.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(load, "_window_steps", counted)
    model = analysed_model(store, entry, 1 << 10)  # a budget nothing fits: the smallest head, then windows
    assert model.window is not None and model.window.steps == MIN_DETAIL_STEPS
    n = model.window.run_steps
    assert len(reads) == -(-(n - MIN_DETAIL_STEPS) // MIN_WINDOW_STEPS)  # ceil: windows of MIN_WINDOW_STEPS
    pd.testing.assert_frame_equal(model.all_steps, build_model(store, entry).steps)
