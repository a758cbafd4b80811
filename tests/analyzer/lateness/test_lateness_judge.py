"""The ranks' lateness model (analyzer.lateness): stragglers told from a noisy host's jitter.

Runs are simulated as per-step readiness times of every rank: a shared step time, per-rank jitter
with heavy tails, the coordinator's own-tick advantage (the others' ticks lag it by their
background thread's scheduling delay), a few steps where the host holds one rank back, and the
straggler under test. Lateness is read as the timeline records it: behind the first-ready rank.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from analyzer.config import StragglerThresholds
from analyzer.lateness import StepLateness, from_readings, judge
from analyzer.lateness.judging import binomial_tail
from analyzer.lateness.when import pattern

T = StragglerThresholds()
STEP_US = 150_000.0


def _view(ready: np.ndarray, first_step: int = 1, coordinator: int | None = 0) -> StepLateness:
    late = ready - np.nanmin(ready, axis=1, keepdims=True)
    steps = np.arange(first_step, first_step + ready.shape[0])
    return StepLateness(steps, np.arange(ready.shape[1]), late, coordinator, "simulated")


def _healthy(
    rng: np.random.Generator, steps: int, ranks: int, jitter_us: float = 4_000.0, lag_us: float = 15_000.0
) -> np.ndarray:
    """Readiness per step and rank (us) of a healthy job on a loaded host."""
    ready = rng.standard_t(3, (steps, ranks)) * jitter_us  # heavy-tailed compute jitter
    ready[:, 1:] += rng.uniform(0, lag_us, (steps, ranks - 1))  # the non-coordinators' scheduling lag
    held = rng.random((steps, ranks)) < 0.03  # the host holds a rank back now and then
    ready += held * rng.exponential(2 * lag_us, (steps, ranks))
    return np.round(ready / 1_000) * 1_000  # ticks at one cycle's resolution


def _named(ready: np.ndarray, **over: float) -> tuple[int, ...]:
    t = replace(T, **over) if over else T
    return tuple(r.rank for r in judge(_view(ready), STEP_US, t).named)


def test_healthy_noisy_runs_name_nobody_in_at_least_99_percent() -> None:
    """The stated false-positive rate: 600 simulated healthy runs (2 to 16 ranks, 15 to 200
    steps, heavy-tailed jitter, coordinator advantage, random hold-ups); at most 1% name a rank."""
    rng = np.random.default_rng(43)
    shapes = [(int(rng.integers(15, 200)), int(rng.choice([2, 3, 4, 6, 8, 16]))) for _ in range(600)]
    blamed = sum(bool(_named(_healthy(rng, s, r, jitter_us=rng.uniform(500, 8_000)))) for s, r in shapes)
    assert blamed <= 6, blamed


def test_a_whole_job_slowdown_names_nobody() -> None:
    rng = np.random.default_rng(1)
    ready = _healthy(rng, 60, 4)
    ready[30:] += 60_000  # every rank slower alike from step 30
    ready[30:] += rng.normal(0, 6_000, (30, 4))  # and noisier
    assert _named(ready) == ()


def test_a_steady_straggler_is_named_every_step_with_its_cost() -> None:
    rng = np.random.default_rng(2)
    ready = _healthy(rng, 50, 4)
    ready[:, 2] += 80_000
    j = judge(_view(ready), STEP_US, T)
    assert [r.rank for r in j.named] == [2] and j.verdict(2).steady
    assert j.pattern((2,), T).text == "every step"
    assert j.mean_loss_us((2,)) == pytest.approx(80_000, rel=0.25)


def test_the_coordinator_late_is_named_among_two_ranks() -> None:
    rng = np.random.default_rng(3)
    ready = _healthy(rng, 40, 2)
    ready[:, 0] += 80_000
    assert _named(ready) == (0,)


def test_an_intermittent_straggler_is_named_with_its_period_and_mean_cost() -> None:
    """Late by 150 ms on every 4th step: its median lateness is the healthy ranks', its cost is a
    quarter of 150 ms per step."""
    rng = np.random.default_rng(4)
    ready = _healthy(rng, 60, 4)
    ready[::4, 3] += 150_000
    j = judge(_view(ready, first_step=0), STEP_US, T)
    assert [r.rank for r in j.named] == [3]
    when = j.pattern((3,), T)
    assert when.kind == "periodic" and when.period == 4 and when.text.startswith("every 4th step (15 of 60 steps")
    assert j.mean_loss_us((3,)) == pytest.approx(150_000 / 4, rel=0.25)


def test_a_straggler_that_recovers_is_named_with_its_steps() -> None:
    rng = np.random.default_rng(5)
    ready = _healthy(rng, 60, 4)
    ready[14:34, 1] += 100_000  # steps 15-34
    j = judge(_view(ready), STEP_US, T)
    assert [r.rank for r in j.named] == [1]
    when = j.pattern((1,), T)
    assert when.kind == "episode" and when.recovered and (when.first_step, when.last_step) == (15, 34)
    assert "recovered" in when.text
    assert j.mean_loss_us((1,)) == pytest.approx(100_000 * 20 / 60, rel=0.25)


def test_a_straggler_that_began_mid_run_is_named_from_that_step() -> None:
    rng = np.random.default_rng(6)
    ready = _healthy(rng, 50, 4, jitter_us=8_000)
    ready[19:, 2] += 80_000
    j = judge(_view(ready), STEP_US, T)
    assert [r.rank for r in j.named] == [2]
    when = j.pattern((2,), T)
    assert when.kind == "from" and when.first_step == 20 and not when.recovered


def test_a_rank_always_trailing_by_the_scheduling_delay_is_not_late() -> None:
    """Two ranks: the non-coordinator lags by up to 30 ms in every step, the coordinator's advantage."""
    rng = np.random.default_rng(7)
    ready = np.zeros((50, 2))
    ready[:, 1] = rng.uniform(8_000, 36_000, 50)
    assert _named(ready) == ()


# --- every threshold at its boundary -------------------------------------------------------------


def _two_level(late_us: float, late_steps: int, steps: int = 40, ranks: int = 4) -> np.ndarray:
    """Quiet ranks with a little jitter of their own; rank 1 late by ``late_us`` on its first
    ``late_steps`` steps, spaced out."""
    ready = np.zeros((steps, ranks))
    ready[:, 1:] = 1_000.0 * ((np.arange(steps)[:, None] + np.arange(ranks - 1)) % 3)
    late = slice(0, late_steps * 3, 3)
    ready[late, 1:] = 0.0
    ready[late, 1] = late_us  # exactly late_us beyond its peers there
    return ready


def test_boundary_min_late_us() -> None:
    ready = _two_level(20_000, 8)
    assert _named(ready, min_late_us=20_000, min_late_share=0.0) == (1,)
    assert _named(ready, min_late_us=20_001, min_late_share=0.0) == ()


def test_boundary_min_late_share() -> None:
    ready = _two_level(20_000, 8)
    share = 20_000 / STEP_US
    assert _named(ready, min_late_us=0, min_late_share=share) == (1,)
    assert _named(ready, min_late_us=0, min_late_share=share * 1.001) == ()


def test_boundary_noise_z() -> None:
    """Late by 20 ms against peers that spread a known sigma: named while noise_z x sigma <= 20 ms."""
    ready = _two_level(20_000, 8)
    j = judge(_view(ready), STEP_US, replace(T, min_late_us=0, min_late_share=0.0))
    sigma = j.verdict(1).noise_us
    assert sigma > 0
    z = 20_000 / sigma
    assert _named(ready, min_late_us=0, min_late_share=0.0, noise_z=z * 0.999) == (1,)
    assert _named(ready, min_late_us=0, min_late_share=0.0, noise_z=z * 1.001) == ()


def test_boundary_min_late_steps() -> None:
    ready = _two_level(50_000, 9)
    assert _named(ready, min_late_steps=9) == (1,)
    assert _named(ready, min_late_steps=10) == ()


def test_boundary_alpha_and_the_null_rate() -> None:
    """Named while the binomial chance of its late steps at the null rate is at most alpha / ranks compared."""
    ready = _two_level(50_000, 8)
    p = binomial_tail(40, 8, T.per_step_false_rate)
    compared = 3  # the pool: every rank but the coordinator
    assert _named(ready, alpha=p * compared * 1.001) == (1,)
    assert _named(ready, alpha=p * compared * 0.999) == ()
    # a higher null rate makes the same count ordinary
    assert _named(ready, per_step_false_rate=0.2) == ()


def test_boundary_min_stretch_steps() -> None:
    """A stretch of late steps too short for the per-step test (a wide bar) is named once it is as long
    as min_stretch_steps."""
    ready = np.zeros((60, 4))
    ready[:, 1:] = np.tile([0.0, 4_000.0, 8_000.0], (60, 1))[:, np.random.default_rng(8).permutation(3)]
    ready[20:32, 2] += 30_000  # 12 steps
    over = {"per_step_false_rate": 0.5}  # the per-step test alone names nobody
    assert _named(ready, min_stretch_steps=12, **over) == (2,)
    assert _named(ready, min_stretch_steps=13, **over) == ()


def test_boundary_every_step_share() -> None:
    steps = np.arange(1, 21)
    late = np.ones(20, bool)
    late[:2] = False  # 18 of 20
    assert pattern(steps, late, replace(T, every_step_share=0.9)).kind == "every_step"
    assert pattern(steps, late, replace(T, every_step_share=0.91)).kind != "every_step"


def test_boundary_noisy_share() -> None:
    """Confidence is low when the bar a rank must clear reaches noisy_share of the median step."""
    ready = _two_level(50_000, 8)
    j = judge(_view(ready), STEP_US, T)
    share = j.bar_us / STEP_US
    assert judge(_view(ready), STEP_US, replace(T, noisy_share=share)).confidence == "low"
    assert judge(_view(ready), STEP_US, replace(T, noisy_share=share * 1.001)).confidence == "high"


def test_readings_reduce_to_the_median_per_step_and_rank() -> None:
    view = from_readings(
        np.array([1, 1, 1, 1, 2, 2]),
        np.array([0, 1, 1, 1, 0, 1]),
        np.array([0, 5, 9, 7, 3, 0]),
        0,
        "test",
    )
    assert view.steps.tolist() == [1, 2] and view.ranks.tolist() == [0, 1]
    assert view.typical_us.tolist() == [[0.0, 7.0], [3.0, 0.0]]


def test_binomial_tail_matches_its_definition() -> None:
    from math import comb

    for n, k, p in [(10, 3, 0.05), (40, 6, 0.05), (30, 0, 0.1), (20, 20, 0.5), (50, 2, 0.05)]:
        exact = sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))
        assert binomial_tail(n, k, p) == pytest.approx(exact, rel=1e-9, abs=1e-300)
