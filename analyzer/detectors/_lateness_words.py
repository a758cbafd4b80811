"""How the straggler findings, from any evidence of rank lateness, put the lateness model's answers in words."""

from __future__ import annotations

import numpy as np

from analyzer.detectors._common import ms
from analyzer.lateness import Judgement, Pattern, RankVerdict


def median_wait(j: Judgement, r: RankVerdict) -> float:
    """What the steps the rank was late in waited for it, their median."""
    waits = j.loss_by_step((r.rank,))[r.late]
    return float(np.median(waits)) if len(waits) else 0.0


def noise_words(j: Judgement) -> str:
    return (
        f"ranks' lateness spread {ms(j.noise_us)} (sigma) around their peers' median, so a rank must be "
        f"{ms(j.bar_us)} later than its peers to count as late in a step"
    )


def when_hint(when: Pattern) -> str:
    if when.kind == "episode":
        return f" during steps {when.first_step}-{when.last_step} (it recovered afterwards)"
    if when.kind == "from":
        return f" from step {when.first_step} on (what changed then)"
    if when.kind == "periodic":
        return f" every {when.period} steps (a periodic task: checkpointing, logging, evaluation, data reshuffles)"
    return ""
