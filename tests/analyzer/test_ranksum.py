"""The Mann-Whitney test written for the analyzer (:mod:`analyzer.ranksum`) gives scipy's p-values:
exact for small samples without ties, normal with both corrections otherwise."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from analyzer.ranksum import p_greater, p_two_sided, rank_sum

SIZES = [(3, 5), (7, 7), (1, 12), (7, 300), (8, 8), (10, 40), (200, 150)]


@pytest.mark.parametrize(("n1", "n2"), SIZES)
@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("shift", [0.0, 0.7, 3.0])
def test_p_values_equal_scipys(n1: int, n2: int, tied: bool, shift: float) -> None:
    rng = np.random.default_rng(n1 * 1000 + n2)
    first = rng.normal(10.0, 1.0, n1)
    second = rng.normal(10.0 + shift, 1.0, n2)
    if tied:  # step times rounded to the tick: many equal values
        first, second = first.round(), second.round()
    want_g = mannwhitneyu(second, first, alternative="greater").pvalue
    want_2 = mannwhitneyu(second, first, alternative="two-sided").pvalue
    assert p_greater(first, second) == pytest.approx(want_g, rel=1e-9, abs=1e-15)
    p, delta = p_two_sided(first, second)
    assert p == pytest.approx(want_2, rel=1e-9, abs=1e-15)
    assert delta == pytest.approx(2 * np.mean(second[:, None] > first) + np.mean(second[:, None] == first) - 1)


def test_identical_samples_are_no_evidence() -> None:
    same = np.full(20, 5.0)
    assert p_greater(same, same) == 1.0
    assert p_two_sided(same, same) == (1.0, 0.0)
    assert rank_sum(same, same).var == 0


def test_the_normal_approximation_on_request() -> None:
    """What :mod:`analyzer.compare` asks for, whatever the sizes."""
    first, second = np.array([1.0, 2.0, 3.0]), np.array([2.5, 4.0, 5.0, 6.0])
    want = mannwhitneyu(second, first, method="asymptotic").pvalue
    assert p_two_sided(first, second, method="asymptotic")[0] == pytest.approx(want, rel=1e-12)
