"""What hvd-analyze reads: bytes of Horovod timelines and NCCL / job logs in, Arrow tables and
counted parse issues out. Imports nothing of ``analyzer`` or ``dashboards``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.lazy import lazy_names

if TYPE_CHECKING:
    from parsers.errors import HvdAnalyzeError, InputError, SchemaError
    from parsers.inputs import ByteSource, GunzipStream, InputKind, open_binary, sniff
    from parsers.issues import IssueCounts, IssueSeverity, IssueSink, ParseIssue
    from parsers.nccl.parser import JobLogParser
    from parsers.timeline.parser import TimelineParser
    from parsers.timeline.whole import ParsedTimeline, parse_timeline

_FACE = {
    "InputKind": "parsers.inputs",
    "sniff": "parsers.inputs",
    "open_binary": "parsers.inputs",
    "GunzipStream": "parsers.inputs",
    "ByteSource": "parsers.inputs",
    "HvdAnalyzeError": "parsers.errors",
    "InputError": "parsers.errors",
    "SchemaError": "parsers.errors",
    "IssueSeverity": "parsers.issues",
    "IssueSink": "parsers.issues",
    "ParseIssue": "parsers.issues",
    "IssueCounts": "parsers.issues",
    "TimelineParser": "parsers.timeline.parser",
    "parse_timeline": "parsers.timeline.whole",
    "ParsedTimeline": "parsers.timeline.whole",
    "JobLogParser": "parsers.nccl.parser",
}

__all__ = [
    "InputKind",
    "sniff",
    "open_binary",
    "GunzipStream",
    "ByteSource",
    "HvdAnalyzeError",
    "InputError",
    "SchemaError",
    "IssueSeverity",
    "IssueSink",
    "ParseIssue",
    "IssueCounts",
    "TimelineParser",
    "parse_timeline",
    "ParsedTimeline",
    "JobLogParser",
]

__getattr__ = lazy_names(__name__, _FACE)  # the names above, imported on first use
