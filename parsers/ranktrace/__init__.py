"""Per-rank PyTorch profiler (Kineto) traces: ``RankTraceParser`` and the facts it gives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.lazy import lazy_names

if TYPE_CHECKING:
    from parsers.ranktrace.parser import RankTraceParser
    from parsers.ranktrace.types import RankTraceFacts, RankTraceFactsDoc

_FACE = {
    "RankTraceParser": "parsers.ranktrace.parser",
    "RankTraceFacts": "parsers.ranktrace.types",
    "RankTraceFactsDoc": "parsers.ranktrace.types",
}
__all__ = ["RankTraceParser", "RankTraceFacts", "RankTraceFactsDoc"]

__getattr__ = lazy_names(__name__, _FACE)
