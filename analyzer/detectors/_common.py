"""Small helpers shared by the timeline detectors: units, sources, impact."""

from __future__ import annotations

from typing import Literal, SupportsInt

from analyzer.findings import Impact, SourceRef
from analyzer.timeline.model import TimelineModel


def ms(us: float) -> str:
    """``12.3 ms`` (or ``1.25 s`` from one second on)."""
    return f"{us / 1e6:.2f} s" if abs(us) >= 1e6 else f"{us / 1e3:.1f} ms"


def at(model: TimelineModel, offset: SupportsInt) -> SourceRef:
    """A byte position in the model's timeline file."""
    return SourceRef(model.path, byte_offset=int(offset))


def step_impact(
    model: TimelineModel, saved_us: float, confidence: Literal["low", "medium", "high"], assumptions: str
) -> Impact | None:
    """Impact of saving ``saved_us`` per step, relative to the median steady step."""
    step = model.median_step_us
    if not step or saved_us <= 0:
        return None
    return Impact(
        seconds_per_step=saved_us / 1e6,
        fraction_of_step=min(1.0, saved_us / step),
        confidence=confidence,
        assumptions=assumptions,
    )
