"""The typed shape of ``manifest.json``: what a store says about its run and each input.

The JSON on disk is unchanged by these types; they let mypy check every reader. Stores of
schema versions 1 and 2 have the same entry keys (only their folder layout differs,
:mod:`analyzer.store.run_store`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NotRequired, TypedDict

from analyzer.store.hashing import file_sha256
from parsers.issues import IssueCounts
from parsers.nccl.rows import LogFacts
from parsers.timeline.facts import TimelineFacts


class ManifestEntry(TypedDict):
    """One ingested input."""

    id: str  # 16 hex digits: the input_id column of its rows
    path: str
    paths: list[str]  # every name these bytes were ingested under
    size: int
    sha256: str
    kind: str  # parsers.inputs.InputKind value
    compressed: bool
    ingested_at: str
    tables: list[str]
    rows: dict[str, int]
    issues: IssueCounts
    bucket: NotRequired[str]  # schema 2 and 3: the bucket folder that holds its rows
    run: NotRequired[str]
    timeline: NotRequired[TimelineFacts]  # kind horovod_timeline
    log: NotRequired[LogFacts]  # kind nccl_log / job_log


class SkippedEntry(TypedDict):
    """A file given to ingest that is not an input, with the reason."""

    path: str
    reason: str


class Manifest(TypedDict):
    schema_version: int
    run: NotRequired[str]
    tool: NotRequired[str]
    tool_version: str
    created_at: str
    updated_at: str
    inputs: list[ManifestEntry]
    skipped: list[SkippedEntry]


def known_entry(path: Path, size: int, sizes: set[int], by_sha: dict[str, ManifestEntry]) -> ManifestEntry | None:
    """The entry with the same bytes as the file at ``path``, checked cheaply (size) then by full sha256."""
    if size not in sizes:
        return None
    return by_sha.get(file_sha256(path))
