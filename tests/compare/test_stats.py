"""The step-time test of ``compare``: the Mann-Whitney p-value and Cliff's delta against scipy's and
a direct count, and the significance rule on shifts, noise and too few steps."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from analyzer.compare.stats import mann_whitney, overlay, sample, step_shift
from analyzer.config import CompareThresholds

T = CompareThresholds()


@pytest.mark.parametrize("seed", range(6))
def test_mann_whitney_matches_scipy_and_a_direct_count(seed: int) -> None:
    rng = np.random.default_rng(seed)
    before = rng.normal(20, 3, 40).round(1)  # rounded: ties on purpose
    after = rng.normal(20 + seed, 3, 35).round(1)
    p, delta = mann_whitney(before, after)
    want = mannwhitneyu(after, before, alternative="two-sided", method="asymptotic", use_continuity=True)
    assert p == pytest.approx(want.pvalue, rel=1e-9)
    direct = ((after[:, None] > before[None, :]).sum() - (after[:, None] < before[None, :]).sum()) / (40 * 35)
    assert delta == pytest.approx(direct)


def test_every_step_the_same_on_both_sides_is_no_change() -> None:
    assert mann_whitney(np.full(10, 0.02), np.full(12, 0.02)) == (1.0, 0.0)


def test_a_clear_shift_is_significant_in_its_direction() -> None:
    rng = np.random.default_rng(1)
    before = rng.normal(0.120, 0.005, 30)
    after = rng.normal(0.025, 0.003, 30)
    s = step_shift(before, after, T)
    assert (s["direction"], s["significant"]) == ("faster", True)
    assert (
        s["median"] is not None and s["median"]["ci_low_ms"] < s["median"]["delta_ms"] < s["median"]["ci_high_ms"] < 0
    )
    assert s["cliffs_delta"] == -1.0
    back = step_shift(after, before, T)
    assert (back["direction"], back["significant"]) == ("slower", True)


def test_a_small_consistent_shift_is_noise_not_a_regression() -> None:
    """Two runs of one job on a shared machine: the second a bit slower with much overlap. The test
    rejects (p small) but the effect is small: not significant, and the note says why."""
    rng = np.random.default_rng(2)
    before = rng.lognormal(np.log(0.020), 0.25, 400)
    after = rng.lognormal(np.log(0.0215), 0.25, 400)
    s = step_shift(before, after, T)
    assert s["mann_whitney_p"] is not None and s["mann_whitney_p"] < T.alpha
    assert s["cliffs_delta"] is not None and abs(s["cliffs_delta"]) < T.min_effect
    assert (s["direction"], s["significant"]) == ("unchanged", False)
    assert "small effect" in s["note"]


def test_a_run_compared_with_itself_has_no_change() -> None:
    steps = np.random.default_rng(3).normal(0.05, 0.01, 50)
    s = step_shift(steps, steps, T)
    assert (s["direction"], s["significant"], s["mann_whitney_p"]) == ("unchanged", False, 1.0)
    assert s["median"] is not None and s["median"]["delta_ms"] == 0


def test_too_few_steps_cannot_be_tested() -> None:
    s = step_shift(np.array([0.1, 0.11, 0.12]), np.array([0.01] * 20), T)
    assert (s["direction"], s["significant"], s["median"]) == ("unknown", False, None)
    assert "too few steady steps" in s["note"] and "3 before" in s["note"]


def test_the_bootstrap_is_seeded_and_long_runs_are_sampled_evenly() -> None:
    rng = np.random.default_rng(4)
    before, after = rng.normal(0.1, 0.01, 20_000), rng.normal(0.09, 0.01, 20_000)
    assert step_shift(before, after, T) == step_shift(before, after, T)
    picked = sample(np.arange(10_000.0), 100)
    assert len(picked) == 100 and picked[0] == 0 and picked[-1] == 9_999 and np.all(np.diff(picked) > 0)


def test_the_overlay_shares_sum_to_one_and_a_hung_step_does_not_squash_the_bins() -> None:
    before = np.r_[np.full(99, 0.020), 30.0]  # one step hung for 30 s
    after = np.full(50, 0.021)
    o = overlay(before, after)
    assert sum(o["before_share"]) == pytest.approx(1.0) and sum(o["after_share"]) == pytest.approx(1.0)
    assert o["edges_ms"][-1] < 1000  # the bins span the steps, not the hang
