"""The NCCL_DEBUG and job-log importer: record headers of every release and launcher, message
classification, per-process state, chunked parsing of big logs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.lazy import lazy_names

if TYPE_CHECKING:
    from parsers.inputs import CHUNK_BYTES
    from parsers.nccl.chunks import ChunkMerger, chunk_ranges, parse_chunk
    from parsers.nccl.error_classes import CLASSES, classify_chain, classify_warn, remediation
    from parsers.nccl.parser import JobLogParser
    from parsers.nccl.rows import LogFacts

_FACE = {
    "JobLogParser": "parsers.nccl.parser",
    "LogFacts": "parsers.nccl.rows",
    "CHUNK_BYTES": "parsers.inputs",
    "ChunkMerger": "parsers.nccl.chunks",
    "chunk_ranges": "parsers.nccl.chunks",
    "parse_chunk": "parsers.nccl.chunks",
    "CLASSES": "parsers.nccl.error_classes",
    "classify_warn": "parsers.nccl.error_classes",
    "classify_chain": "parsers.nccl.error_classes",
    "remediation": "parsers.nccl.error_classes",
}

__all__ = [
    "JobLogParser",
    "LogFacts",
    "CHUNK_BYTES",
    "ChunkMerger",
    "chunk_ranges",
    "parse_chunk",
    "CLASSES",
    "classify_warn",
    "classify_chain",
    "remediation",
]

__getattr__ = lazy_names(__name__, _FACE)  # the names above, imported on first use
