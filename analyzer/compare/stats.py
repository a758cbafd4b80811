"""Is a change of the step time more than noise? Quantile shifts with bootstrap intervals, the
Mann-Whitney test and Cliff's delta, on each side's steady step times.

Steps within one run are not independent (a slow phase of the machine slows many steps in a
row), and two runs on a shared machine differ by more than their steps' spread suggests. So a
change is called significant only when the test rejects *and* the effect is large: most steps of
one run are slower than most steps of the other (:class:`analyzer.config.CompareThresholds`).
Pure functions of arrays; seeded, so a comparison gives the same numbers every time.
"""

from __future__ import annotations

import numpy as np

from analyzer.compare.types import Direction, OverlayDoc, QuantileShiftDoc, StepShiftDoc
from analyzer.config import CompareThresholds
from analyzer.ranksum import p_two_sided

OVERLAY_BINS = 30


def sample(steps_s: np.ndarray, most: int) -> np.ndarray:
    """At most ``most`` of ``steps_s``, evenly spaced over the run (the order of steps is kept)."""
    if len(steps_s) <= most:
        return steps_s
    return steps_s[np.linspace(0, len(steps_s) - 1, most).round().astype(np.int64)]


def mann_whitney(before: np.ndarray, after: np.ndarray) -> tuple[float, float]:
    """Two-sided p-value (normal approximation, tie-corrected, continuity-corrected) and Cliff's delta
    (``P(after > before) - P(after < before)``)."""
    return p_two_sided(before, after, method="asymptotic")


def _quantile_shift(
    before: np.ndarray, after: np.ndarray, q: float, rng: np.random.Generator, draws: int
) -> QuantileShiftDoc:
    b, a = float(np.quantile(before, q)), float(np.quantile(after, q))
    boot_b = np.quantile(before[rng.integers(0, len(before), (draws, len(before)))], q, axis=1)
    boot_a = np.quantile(after[rng.integers(0, len(after), (draws, len(after)))], q, axis=1)
    low, high = np.quantile(boot_a - boot_b, [0.025, 0.975])
    return {
        "before_ms": round(b * 1e3, 4),
        "after_ms": round(a * 1e3, 4),
        "delta_ms": round((a - b) * 1e3, 4),
        "ratio": round(a / b, 4) if b > 0 else 0.0,
        "ci_low_ms": round(float(low) * 1e3, 4),
        "ci_high_ms": round(float(high) * 1e3, 4),
    }


def overlay(before: np.ndarray, after: np.ndarray, bins: int = OVERLAY_BINS) -> OverlayDoc:
    """Both distributions over shared bins (2nd to 98th percentile of both: one hung step does not
    squash the rest into a bar), as shares of each side's steps; the tails land in the end bins."""
    both = np.concatenate([before, after])
    if not len(both):
        return {"edges_ms": [], "before_share": [], "after_share": []}
    lo, hi = (float(v) for v in np.quantile(both, [0.02, 0.98]))
    if hi <= lo:
        lo, hi = lo * 0.9, lo * 1.1 + 1e-6
    edges = np.linspace(lo, hi, bins + 1)

    def shares(x: np.ndarray) -> list[float]:
        if not len(x):
            return [0.0] * bins
        counts, _ = np.histogram(np.clip(x, lo, hi), edges)
        return [round(float(c) / len(x), 5) for c in counts]

    return {
        "edges_ms": [round(float(e) * 1e3, 4) for e in edges],
        "before_share": shares(before),
        "after_share": shares(after),
    }


def rule_text(t: CompareThresholds) -> str:
    return (
        f"significant when the Mann-Whitney p < {t.alpha:g}, |Cliff's delta| >= {t.min_effect:g} and the "
        f"median's 95% interval excludes 0, with >= {t.min_steps} steady steps a side"
    )


def step_shift(before_s: np.ndarray, after_s: np.ndarray, t: CompareThresholds) -> StepShiftDoc:
    """The change from ``before_s`` to ``after_s`` (steady step times, seconds)."""
    before = sample(np.asarray(before_s, dtype=np.float64), t.max_sample)
    after = sample(np.asarray(after_s, dtype=np.float64), t.max_sample)
    shown = overlay(before, after)
    if min(len(before), len(after)) < t.min_steps:
        return {
            "direction": "unknown",
            "significant": False,
            "median": None,
            "p90": None,
            "mann_whitney_p": None,
            "cliffs_delta": None,
            "rule": rule_text(t),
            "note": f"too few steady steps to compare ({len(before)} before, {len(after)} after; "
            f"at least {t.min_steps} each)",
            "overlay": shown,
        }
    rng = np.random.default_rng(20261124)
    median = _quantile_shift(before, after, 0.5, rng, t.bootstrap)
    p90 = _quantile_shift(before, after, 0.9, rng, t.bootstrap)
    p, delta = mann_whitney(before, after)
    excludes_zero = median["ci_low_ms"] > 0 or median["ci_high_ms"] < 0
    significant = p < t.alpha and abs(delta) >= t.min_effect and excludes_zero
    direction: Direction = ("slower" if delta > 0 else "faster") if significant else "unchanged"
    if significant:
        note = "a large effect: most steps of one run are slower than most steps of the other"
    elif p >= t.alpha:
        note = f"within noise: p = {p:.2g} (the test does not tell the runs apart)"
    elif abs(delta) < t.min_effect:
        note = (
            f"a small effect (Cliff's delta {delta:+.2f}, p = {p:.2g}): the distributions overlap too much to "
            "call it more than run-to-run noise"
        )
    else:
        note = "the median's 95% interval includes no change"
    return {
        "direction": direction,
        "significant": significant,
        "median": median,
        "p90": p90,
        "mann_whitney_p": float(f"{p:.4g}"),
        "cliffs_delta": round(delta, 4),
        "rule": rule_text(t),
        "note": note,
        "overlay": shown,
    }
