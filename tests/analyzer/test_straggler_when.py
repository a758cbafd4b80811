"""When a straggler was late: every step, from a step on, or in some steps; a few noisy steps of a
healthy stretch (a rank a little late by chance) do not make it "late from the start"."""

from __future__ import annotations

import numpy as np

from analyzer.detectors.straggler import _late, _when

THRESHOLD = 8_000.0  # us


def _per_step(late_from: int, n: int = 40, noise: tuple[int, ...] = ()) -> np.ndarray:
    rng = np.random.default_rng(late_from)
    per = rng.uniform(0, 2_000, n)
    per[late_from:] = rng.uniform(90_000, 130_000, n - late_from)
    for s in noise:
        per[s] = 20_000.0  # over the detector's threshold, far under the late steps' loss
    return per


def test_a_rank_late_throughout_is_late_every_step() -> None:
    per = _per_step(0)
    per[7] = 0.0  # one step where it happened to be on time
    assert _when(np.arange(40), _late(per, THRESHOLD)) == "every step"


def test_a_rank_that_turned_late_is_late_from_that_step_despite_noise_before() -> None:
    per = _per_step(20, noise=(4, 12, 18))
    assert _when(np.arange(40) + 100, _late(per, THRESHOLD)) == "from step 120 on (20 of 40 steps)"


def test_a_rank_late_every_other_step_is_late_in_some_steps() -> None:
    per = np.where(np.arange(40) % 2 == 0, 100_000.0, 500.0)
    assert _when(np.arange(40), _late(per, THRESHOLD)) == "in 20 of 40 steps"
