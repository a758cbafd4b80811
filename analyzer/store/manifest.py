"""The typed shape of ``manifest.json``: what a store says about its run and each input.

The JSON on disk is unchanged by these types; they let mypy check every reader. Stores of
schema versions 1 and 2 have the same entry keys (only their folder layout differs,
:mod:`analyzer.store.run_store`). An entry holds its input's hash under ``sha256`` or ``blake3``
(:func:`analyzer.store.hashing.algorithm_for`; stores written by a version before BLAKE3 hold sha256 only):
:func:`digest` reads either.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict, get_args

from analyzer.store.hashing import ALGORITHMS, Algorithm, EarlyHashes, file_digest
from parsers.inputs import InputKindName
from parsers.issues import IssueCounts

if TYPE_CHECKING:  # the parsers' facts: names in annotations only (the timeline's loads numpy)
    from parsers.nccl.rows import LogFacts
    from parsers.ranktrace.types import RankTraceFactsDoc
    from parsers.timeline.facts import TimelineFacts

MANIFEST_NAME = "manifest.json"


class ManifestEntry(TypedDict):
    """One ingested input."""

    id: str  # 16 hex digits: the input_id column of its rows
    path: str
    paths: list[str]  # every name these bytes were ingested under
    size: int
    sha256: NotRequired[str]  # the hash of its bytes: one of the two (analyzer.store.hashing)
    blake3: NotRequired[str]
    kind: InputKindName
    compressed: bool
    ingested_at: str
    tables: list[str]
    rows: dict[str, int]
    issues: IssueCounts
    bucket: NotRequired[str]  # schema 2 and 3: the bucket folder that holds its rows
    run: NotRequired[str]
    timeline: NotRequired[TimelineFacts]  # kind horovod_timeline
    log: NotRequired[LogFacts]  # kind nccl_log / job_log
    rank_trace: NotRequired[RankTraceFactsDoc]  # kind rank_trace


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


def digest(entry: ManifestEntry) -> tuple[Algorithm, str]:
    """The hash of an entry's bytes: which one, and its hex digits."""
    if "blake3" in entry:
        return "blake3", entry["blake3"]
    return "sha256", entry["sha256"]


class KnownInputs:
    """A store's entries by the hash of their bytes: which input is already stored."""

    def __init__(self, entries: Iterable[ManifestEntry]) -> None:
        self._by_digest: dict[tuple[Algorithm, str], ManifestEntry] = {}
        self._sizes: dict[int, set[Algorithm]] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: ManifestEntry) -> None:
        key = digest(entry)
        self._by_digest[key] = entry
        self._sizes.setdefault(entry["size"], set()).add(key[0])

    def same_bytes(self, entry: ManifestEntry) -> ManifestEntry | None:
        """The known entry of the bytes that ``entry`` was made of (under another name)."""
        return self._by_digest.get(digest(entry))

    def of_file(self, path: Path, size: int, early: EarlyHashes | None = None) -> ManifestEntry | None:
        """The entry with the same bytes as the file at ``path``, checked cheaply (size) then by
        the whole file's hash, in each algorithm that entries of that size were hashed with (an
        older store hashed big inputs with sha256)."""
        for algorithm in sorted(self._sizes.get(size, ())):
            if (entry := self._by_digest.get((algorithm, file_digest(path, algorithm, early)))) is not None:
                return entry
        return None


#: every count a manifest holds (sizes, rows, issues) is below this: readers take them as int64
COUNT_LIMIT = 1 << 63

#: What every entry must hold, and of which JSON type (the keys readers index without a default).
_ENTRY_TYPES: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "path": str,
    "paths": list,
    "size": int,
    "kind": str,
    "tables": list,
    "rows": dict,
    "issues": dict,
}


def checked(manifest: object, path: Path) -> Manifest:
    """``manifest`` (parsed from ``path``) if it has the shape readers rely on.

    Raises:
        StoreError: naming the first key that is missing or of the wrong type.
    """
    from typing import cast

    from analyzer.errors import StoreError

    def damaged(what: str) -> StoreError:
        return StoreError(
            f"{path}: a damaged manifest ({what}); ingest the inputs into a new store "
            "(`hvd-analyze ingest PATH -o NEW_STORE`)"
        )

    if not isinstance(manifest, dict):
        raise damaged(f"a JSON {type(manifest).__name__} instead of an object")
    inputs = manifest.get("inputs", [])
    if not isinstance(inputs, list):
        raise damaged(f"'inputs' is {json_type(inputs)}, not a list")
    for i, entry in enumerate(inputs):
        if not isinstance(entry, dict):
            raise damaged(f"inputs[{i}] is {json_type(entry)}, not an object")
        for key, kind in _ENTRY_TYPES.items():
            if not isinstance(entry.get(key), kind) or (kind is int and isinstance(entry.get(key), bool)):
                raise damaged(f"inputs[{i}].{key} is {json_type(entry.get(key))}")
        if entry["kind"] not in get_args(InputKindName):
            raise damaged(f"inputs[{i}].kind is {entry['kind']!r}, not one of {', '.join(get_args(InputKindName))}")
        if not any(isinstance(entry.get(a), str) for a in ALGORITHMS):
            raise damaged(f"inputs[{i}] has no hash of its bytes ({' or '.join(ALGORITHMS)})")
        counts = {"size": entry["size"]} | {f"rows.{k}": v for k, v in entry["rows"].items()}
        counts |= {f"issues.{k}": v for k, v in entry["issues"].items()}
        for key, value in counts.items():
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < COUNT_LIMIT:
                shown = value if isinstance(value, int) else json_type(value)
                raise damaged(f"inputs[{i}].{key} is {shown}, not a count from 0 to 2^63 - 1")
    if not isinstance(manifest.get("skipped", []), list):
        raise damaged(f"'skipped' is {json_type(manifest.get('skipped'))}, not a list")
    manifest.setdefault("inputs", [])
    manifest.setdefault("skipped", [])
    return cast(Manifest, manifest)


def json_type(value: object) -> str:
    """How a JSON value reads in a message: ``missing``, ``null``, ``a string``, ..."""
    if value is None:
        return "null or missing"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def write_manifest(root: Path, manifest: Manifest) -> None:
    """Replace ``root``'s manifest atomically (readers see the old one or the whole new one)."""
    import datetime as dt
    import os

    import orjson

    manifest["updated_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    tmp = root / f".{MANIFEST_NAME}.tmp"
    # orjson: 10 ms for the 4 MB manifest of 4096 inputs, where json.dumps takes 150 ms
    tmp.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    os.replace(tmp, root / MANIFEST_NAME)
