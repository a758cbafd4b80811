"""What an ingest may use only in the process that runs it: the store's parts held in memory
(:class:`~analyzer.store.held.HeldParts`) and the hashes started early
(:class:`~analyzer.store.hashing.EarlyHashes`). The store makes one per ingest and hands it down to
what parses and writes its buckets. Pickled (a task sent to a worker process or a Dask worker), it
is empty: a worker writes Parquet files and hashes what it reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.store.hashing import EarlyHashes
from analyzer.store.held import HeldParts


@dataclass(frozen=True, slots=True)
class Local:
    held: HeldParts | None = None
    early: EarlyHashes | None = None

    def __reduce__(self) -> tuple[object, ...]:
        return (Local, ())


#: nothing lent: a worker's, or an ingest without held parts or early hashes
NOTHING_LENT = Local()
