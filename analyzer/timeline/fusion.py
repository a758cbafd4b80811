"""What-if arithmetic for tensor fusion: per-batch overhead and the batch count a threshold gives.

* :func:`batch_overhead_us`: the fixed cost of one collective, the intercept of a
  least-squares line of batch duration against batch bytes over the steady batches
  (clipped to [0, median batch duration]).
* :func:`expected_batches`: replays each steady step with another threshold. Tensors
  whose negotiations ended within one cycle of each other were ready together and can
  share a batch; within such a group they are packed in arrival order up to the
  threshold (Horovod's ``FuseResponses``). Returns the median batches per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from analyzer.timeline.model import TimelineModel

MIB = 1024 * 1024
DEFAULT_THRESHOLD = 128 * MIB  # HOROVOD_FUSION_THRESHOLD default since 0.21 (64 MiB before)
OLD_DEFAULT_THRESHOLD = 64 * MIB  # before 0.21


def default_threshold(facts: Mapping[str, Any]) -> tuple[int, str]:
    """Horovod's default ``HOROVOD_FUSION_THRESHOLD`` for the release range a timeline allows, and
    how that range was read. A range across 0.21 gives the larger default: a tensor over it is over
    either."""
    version = facts.get("horovod_version") or {}
    high = tuple(int(p) for p in str(version.get("high", "99")).split(".") if p.isdigit())
    text = str(version.get("text") or "a Horovod release the file does not narrow down")
    if high and high < (0, 21):
        return OLD_DEFAULT_THRESHOLD, text
    return DEFAULT_THRESHOLD, text


def batch_overhead_us(model: TimelineModel) -> float | None:
    b = model.steady_batches.dropna(subset=["bytes", "dur_us"])
    if len(b) < 3:
        return None
    x = b["bytes"].to_numpy(dtype=float)
    y = b["dur_us"].to_numpy(dtype=float)
    if np.ptp(x) == 0:
        return float(np.median(y))
    _, intercept = np.polyfit(x, y, 1)
    return float(np.clip(intercept, 0.0, np.median(y)))


def expected_batches(model: TimelineModel, threshold: int, cycle_us: float) -> float | None:
    """Median batches per steady step if the fusion threshold were ``threshold`` bytes."""
    ops = model.steady_ops.dropna(subset=["ready_us"])
    if ops.empty:
        return None
    counts = []
    for _, rows in ops.sort_values(["step", "ready_us"]).groupby("step", sort=False):
        counts.append(
            _pack(
                rows["ready_us"].to_numpy(),
                rows["bytes"].fillna(0).to_numpy(),
                rows["name"].to_numpy(),
                threshold,
                cycle_us,
            )
        )
    return float(np.median(counts))


def _pack(ready: np.ndarray, nbytes: np.ndarray, names: np.ndarray, threshold: int, cycle_us: float) -> int:
    batches = 0
    group_start = -np.inf
    open_bytes: dict[object, float] = {}
    for t, b, name in zip(ready, nbytes, names, strict=True):
        if t - group_start > cycle_us:
            group_start = t
            open_bytes = {}
        cur = open_bytes.get(name)
        if cur is None or threshold <= 0 or cur + b > threshold:
            batches += 1
            open_bytes[name] = b
        else:
            open_bytes[name] = cur + b
    return batches


def suggested_threshold(largest_bytes: float) -> int:
    """The default, or the next power-of-two MiB that holds ``largest_bytes`` twice."""
    need = max(DEFAULT_THRESHOLD, 2 * largest_bytes)
    return int(MIB * 2 ** int(np.ceil(np.log2(need / MIB))))
