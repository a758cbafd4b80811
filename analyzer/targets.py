"""What ``report`` was pointed at: one run store or input paths, checked before any work.

``report`` reads one run: a store, or input files and folders. Several stores, or a store mixed with
paths, are refused with what to do instead (nothing is dropped silently), and so is a run in which
nothing could be analysed (``batch``'s folder of runs is checked by :func:`analyzer.fleet.find_runs`).
The messages name the paths and the next command to type.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from analyzer.errors import UsageError
from analyzer.store.discovery import SkippedFile
from analyzer.store.manifest import MANIFEST_NAME as MANIFEST

SHOWN_SKIPPED = 5


def is_store(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).is_file()


def enclosing_store(path: str | Path) -> Path | None:
    """The run store ``path`` lies inside of (``STORE/tables/...``), if any."""
    p = Path(path).resolve()
    return next((parent for parent in p.parents if is_store(parent)), None)


def report_store(paths: Sequence[str]) -> Path | None:
    """The store ``report`` reads, or None for input paths (ingested into a temporary store).

    Raises:
        UsageError: several stores, a store mixed with input paths, or a path inside a store.
    """
    stores = [p for p in paths if is_store(p)]
    if len(stores) > 1:
        raise UsageError(
            f"{len(stores)} run stores given ({', '.join(stores)}): `report` reads one run at a time; report each "
            "store on its own, or analyse them side by side with `hvd-analyze batch FOLDER -o OUT` (one store or "
            "run folder per sub-folder)"
        )
    if stores and len(paths) > 1:
        others = [p for p in paths if p not in stores]
        raise UsageError(
            f"{stores[0]} is a run store and {', '.join(others)} {'is' if len(others) == 1 else 'are'} not: add the "
            f"inputs to the store first (`hvd-analyze ingest {' '.join(others)} -o {stores[0]}`), then "
            f"`hvd-analyze report {stores[0]}`"
        )
    for p in paths:
        if not stores and (inside := enclosing_store(p)) is not None:
            raise UsageError(f"{p} lies inside the run store {inside}: `hvd-analyze report {inside}` reads it")
    return Path(stores[0]) if stores else None


def nothing_to_analyse(paths: Sequence[str], skipped: Sequence[SkippedFile], store: Path | None = None) -> UsageError:
    """The error of a run in which no input was found: what was looked at and why each file was left."""
    if store is not None:
        return UsageError(f"the run store {store} holds no input yet: `hvd-analyze ingest PATH -o {store}` adds some")
    where = ", ".join(paths)
    if not skipped:
        return UsageError(f"nothing to analyse in {where}: no files in it")
    reasons = "; ".join(f"{s.path.name}: {s.reason}" for s in skipped[:SHOWN_SKIPPED])
    more = f"; and {len(skipped) - SHOWN_SKIPPED} more" if len(skipped) > SHOWN_SKIPPED else ""
    return UsageError(
        f"nothing to analyse in {where}: {len(skipped)} file(s), none a Horovod timeline, NCCL_DEBUG log or job "
        f"log ({reasons}{more})"
    )
