"""The Horovod timeline importer: a compiled tokenizer (bytes -> one row per record), B/E
pairing per pid, the Arrow tables, and the facts read off the content (layout, status,
version range, response cache).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.lazy import lazy_names

if TYPE_CHECKING:
    from parsers.timeline.facts import HorovodVersionFacts, TimelineFacts, TimelineInfo
    from parsers.timeline.parser import TimelineParser
    from parsers.timeline.tokens import RANGE_BYTES
    from parsers.timeline.whole import ParsedTimeline, parse_timeline

_FACE = {
    "TimelineParser": "parsers.timeline.parser",
    "parse_timeline": "parsers.timeline.whole",
    "ParsedTimeline": "parsers.timeline.whole",
    "TimelineInfo": "parsers.timeline.facts",
    "TimelineFacts": "parsers.timeline.facts",
    "HorovodVersionFacts": "parsers.timeline.facts",
    "RANGE_BYTES": "parsers.timeline.tokens",
}

__all__ = [
    "TimelineParser",
    "parse_timeline",
    "ParsedTimeline",
    "TimelineInfo",
    "TimelineFacts",
    "HorovodVersionFacts",
    "RANGE_BYTES",
]

__getattr__ = lazy_names(__name__, _FACE)  # the names above, imported on first use
