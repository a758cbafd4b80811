"""Everything on disk: the run store (Parquet tables and manifest.json), finding inputs,
planning and writing buckets, parallel ingest (processes, threads, Dask), hashing. It knows
no analysis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.lazy import lazy_names

if TYPE_CHECKING:
    from analyzer.store.discovery import InputFile, SkippedFile, discover, recognise
    from analyzer.store.ingest import ingest_pieces, ingest_runner
    from analyzer.store.manifest import Manifest, ManifestEntry, SkippedEntry
    from analyzer.store.parallel import Executor, executor_from_options
    from analyzer.store.parts import safe_name
    from analyzer.store.run_store import MANIFEST, IngestReport, RunStore, temporary_store

_FACE = {
    "RunStore": "analyzer.store.run_store",
    "IngestReport": "analyzer.store.run_store",
    "MANIFEST": "analyzer.store.run_store",
    "temporary_store": "analyzer.store.run_store",
    "safe_name": "analyzer.store.parts",
    "discover": "analyzer.store.discovery",
    "recognise": "analyzer.store.discovery",
    "InputFile": "analyzer.store.discovery",
    "SkippedFile": "analyzer.store.discovery",
    "Manifest": "analyzer.store.manifest",
    "ManifestEntry": "analyzer.store.manifest",
    "SkippedEntry": "analyzer.store.manifest",
    "Executor": "analyzer.store.parallel",
    "executor_from_options": "analyzer.store.parallel",
    "ingest_runner": "analyzer.store.ingest",
    "ingest_pieces": "analyzer.store.ingest",
}

__all__ = [
    "recognise",
    "RunStore",
    "IngestReport",
    "MANIFEST",
    "temporary_store",
    "safe_name",
    "discover",
    "InputFile",
    "SkippedFile",
    "Manifest",
    "ManifestEntry",
    "SkippedEntry",
    "Executor",
    "executor_from_options",
    "ingest_runner",
    "ingest_pieces",
]

__getattr__ = lazy_names(__name__, _FACE)  # the names above, imported on first use
