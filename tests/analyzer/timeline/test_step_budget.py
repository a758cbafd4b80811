"""Steps of very different sizes against the memory budget (analyzer.timeline.load): windows are cut
by each step's own spans, not by the average step, and a step that no window of the budget can hold
is refused with the budget that would do, never read whole past the budget."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.errors import OverBudget
from analyzer.store.discovery import discover
from analyzer.store.run_store import RunStore
from analyzer.timeline import load
from analyzer.timeline.load import analysed_model, budget_for_room, build_model, model_bytes


def _timeline(path: Path, spans_per_step: list[int]) -> Path:
    """A closed timeline of one tensor: a negotiation opens each step, followed by that step's
    ALLREDUCE spans (B/E pairs, 2 us apart)."""
    out, ts = ['[\n{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "allreduce.w"}},\n'], 1000
    for n in spans_per_step:
        out.append(
            f'{{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": {ts}, "pid": 1}},{{"ph": "E", "ts": {ts + 5}, "pid": 1}},'
        )
        ts += 10
        for _ in range(n):
            out.append(
                f'{{"ph": "B", "name": "ALLREDUCE", "ts": {ts}, "pid": 1}},{{"ph": "E", "ts": {ts + 1}, "pid": 1}},'
            )
            ts += 2
    out.append(
        f'{{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": {ts}, "pid": 1}},{{"ph": "E", "ts": {ts + 1}, "pid": 1}}\n]\n'
    )
    path.write_text("".join(out))
    return path


def _store(tmp_path: Path, spans_per_step: list[int]) -> tuple[RunStore, dict]:
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([_timeline(tmp_path / "timeline.json", spans_per_step)]))
    store = RunStore.open(tmp_path / "store")
    return store, store.inputs[0]


@pytest.fixture
def small_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows keep their minimum steps only up to 64 KiB of model here (64 MiB in use), so that
    steps of a few thousand spans stand for steps of millions."""
    monkeypatch.setattr(load, "FLOOR_BYTES", 64 << 10)


@pytest.mark.usefixtures("small_floor")
def test_two_huge_steps_over_the_budget_are_refused_with_the_budget_that_would_do(tmp_path: Path) -> None:
    store, entry = _store(tmp_path, [4000, 4000])
    budget = budget_for_room(model_bytes(entry) // 2)  # the head's room holds 3/8 of the timeline
    with pytest.raises(OverBudget) as err:
        analysed_model(store, entry, budget)
    msg = str(err.value)
    assert msg.startswith(f"{entry['path']}: the first step with the start-up alone holds 4,00")
    assert "memory budget leaves for one window of whole steps" in msg and "--memory-budget 1G or more" in msg
    assert analysed_model(store, entry, budget_for_room(model_bytes(entry))).window is None  # the budget named does


@pytest.mark.usefixtures("small_floor")
def test_one_huge_step_among_small_ones_is_windowed_around_or_refused(tmp_path: Path) -> None:
    """400 steps of 40 spans and step 300 of 3,000: a budget whose windows hold step 300 gives the whole
    model's step table, cut by each step's spans (by the average step, step 300 would share a window
    with 64 others: almost twice the room); a budget whose windows cannot hold it names that step."""
    sizes = [40] * 400
    sizes[300] = 3000
    store, entry = _store(tmp_path, sizes)
    whole = build_model(store, entry)
    per_span = model_bytes(entry) / entry["rows"]["spans"]
    roomy = budget_for_room(int(3100 * per_span / (1 - load.DETAIL_SHARE)))
    model = analysed_model(store, entry, roomy)
    assert model.window is not None and 20 <= model.window.steps < 300
    pd.testing.assert_frame_equal(model.all_steps, whole.steps)
    tight = budget_for_room(int(2000 * per_span / (1 - load.DETAIL_SHARE)))
    with pytest.raises(OverBudget, match="step 300 alone holds 3,00"):
        analysed_model(store, entry, tight)


def test_the_cli_refuses_a_step_over_the_budget_in_one_message(tmp_path: Path) -> None:
    """The default floor (64 MiB of model) and two steps of 150,000 spans: 100 MB of budget refuses,
    naming the input and the budget that would do; the default budget analyses it whole."""
    path = _timeline(tmp_path / "timeline.json", [150_000, 150_000])
    res = CliRunner().invoke(cli, ["report", str(path), "--memory-budget", "100M"])
    assert res.exit_code == 2 and res.stderr.startswith(f"hvd-analyze: error: {path}: the first step"), res.output
    assert "--memory-budget 1G or more" in res.stderr and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["report", str(path), "-f", "json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["timeline"]["window"] is None


def test_tables_held_in_memory_count_against_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``report FILE`` keeps its store's tables in memory beside the analysis: the model gets the budget
    less what they hold (8 M spans held took 1.6 GB of a 4 GB budget, and the whole model then went
    past it), and the report's estimate counts them."""
    store, entry = _store(tmp_path, [40] * 300)
    need = model_bytes(entry)
    budget = budget_for_room(need)
    assert analysed_model(store, entry, budget).window is None  # it fits alone
    model = analysed_model(store, entry, budget, held=need // 2)
    assert model.window is not None and model.window.estimate_bytes == need + load.BASELINE_BYTES + need // 2
    seen: list[int] = []
    real = load.analysed_model

    def spy(*args: object) -> object:
        seen.append(int(args[5]))  # type: ignore[call-overload]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(load, "analysed_model", spy)
    assert CliRunner().invoke(cli, ["report", str(tmp_path / "timeline.json")]).exit_code == 0
    assert seen and seen[0] > 0  # the held parts' bytes
    assert CliRunner().invoke(cli, ["report", str(store.root)]).exit_code == 0
    assert seen[-1] == 0  # a store on disk holds nothing in memory
