"""Two runs compared (``hvd-analyze compare``, the app's compare page): the step time's change and
whether it is more than noise, where it comes from, what changed in the settings and NCCL, the
findings resolved or new, and the fix check of BEFORE's suggestions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.lazy import lazy_names

if TYPE_CHECKING:
    from analyzer.compare.build import Side, compare_sides
    from analyzer.compare.sides import side_of, step_parts, step_samples
    from analyzer.compare.types import CompareDocument

_FACE = {
    "Side": "analyzer.compare.build",
    "compare_sides": "analyzer.compare.build",
    "side_of": "analyzer.compare.sides",
    "step_samples": "analyzer.compare.sides",
    "step_parts": "analyzer.compare.sides",
    "CompareDocument": "analyzer.compare.types",
}

__all__ = ["Side", "compare_sides", "side_of", "step_samples", "step_parts", "CompareDocument"]

__getattr__ = lazy_names(__name__, _FACE)  # the names above, imported on first use
