"""When a straggler was late: every step, from a step on, one stretch it recovered from, a regular
period, or some steps (:func:`pattern`), in words a finding's title can carry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from analyzer.config import StragglerThresholds


@dataclass(frozen=True, slots=True)
class Pattern:
    """When the named ranks were late, in steps of the view."""

    text: str  # "every step", "from step 20 on", "on steps 15-34, then recovered", "every 4th step", "in 7 of 50 steps"
    kind: Literal["every_step", "from", "episode", "periodic", "some"]
    first_step: int
    last_step: int
    recovered: bool  # late no longer by the end of the view
    period: int | None  # steps between late steps, for a periodic one


def pattern(steps: np.ndarray, late: np.ndarray, t: StragglerThresholds) -> Pattern:
    """When the steps ``late`` marks were: every step, from a step on, one stretch after which the
    rank(s) recovered, a regular period, or some steps."""
    n, k = len(late), int(late.sum())
    at = np.flatnonzero(late)
    if not k:
        return Pattern("in no step", "some", 0, 0, False, None)
    first, last = int(steps[at[0]]), int(steps[at[-1]])
    share = t.every_step_share
    if k >= share * n:
        return Pattern("every step", "every_step", int(steps[0]), int(steps[-1]), False, None)
    a, b = _densest_stretch(late)
    inside = int(late[a : b + 1].sum())
    outside = k - inside
    if inside >= share * (b - a + 1) and outside <= (1 - share) * (n - (b - a + 1)):
        lo, hi = int(steps[a]), int(steps[b])
        if b == n - 1:
            return Pattern(f"from step {lo} on ({k} of {n} steps)", "from", lo, hi, False, None)
        return Pattern(
            f"on steps {lo}-{hi} ({inside} of {b - a + 1}), then no longer: recovered by step {int(steps[b + 1])}",
            "episode",
            lo,
            hi,
            True,
            None,
        )
    period = _period(steps[at], t.periodic_share)
    if period is not None:
        return Pattern(
            f"every {_ordinal(period)} step ({k} of {n} steps, steps {first}-{last})",
            "periodic",
            first,
            last,
            False,
            period,
        )
    return Pattern(f"in {k} of {n} steps (steps {first}-{last})", "some", first, last, False, None)


def _period(late_steps: np.ndarray, share: float) -> int | None:
    """The period of late steps that fall on a regular grid (every K-th step from some step): the
    commonest gap between them, when at least ``share`` of them sit on its grid and they fill at
    least ``share`` of the grid's places between the first and the last (a missed or an extra
    late step does not hide the period)."""
    if len(late_steps) < 3:
        return None
    gaps, counts = np.unique(np.diff(late_steps), return_counts=True)
    period = int(gaps[np.argmax(counts)])
    if period < 2:
        return None
    phases, hits = np.unique(late_steps % period, return_counts=True)
    phase, on_grid = int(phases[np.argmax(hits)]), int(hits.max())
    grid = late_steps[late_steps % period == phase]
    places = (int(grid[-1]) - int(grid[0])) // period + 1
    return period if on_grid >= share * len(late_steps) and on_grid >= share * places else None


def _densest_stretch(late: np.ndarray) -> tuple[int, int]:
    """The stretch of steps with the most late steps beyond non-late ones (Kadane on +1/-1)."""
    best, best_ab, run, start = -1, (0, 0), 0, 0
    for i, v in enumerate(np.where(late, 1, -1).tolist()):
        if run <= 0:
            run, start = v, i
        else:
            run += v
        if run > best:
            best, best_ab = run, (start, i)
    return best_ab


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
