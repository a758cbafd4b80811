"""One writer per store: ``ingest`` holds an exclusive lock on ``STORE/.writer.lock`` while it writes.

Two ingests into one store at once would sweep each other's half-written buckets and each write a
manifest that lists only its own inputs. The second one is refused at once, with who holds the lock;
readers (``report``, the app) take no lock, since a store is only ever changed by renames.
"""

from __future__ import annotations

import fcntl
import functools
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from analyzer.errors import StoreError

LOCK = ".writer.lock"


@contextmanager
def writer_lock(root: Path) -> Iterator[None]:
    """Hold the store's writer lock for the duration of the block.

    Raises:
        StoreError: another process holds it.
    """
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK, "a+", encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = (f.read().strip().splitlines() or ["another process"])[-1]
            raise StoreError(
                f"{root}: another hvd-analyze is writing to this store ({holder}); wait until it has finished, "
                "then run this ingest again: inputs already in the store are skipped"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class _Store(Protocol):
    root: Path

    def reload(self) -> None: ...


S = TypeVar("S", bound=_Store)
P = ParamSpec("P")
R = TypeVar("R")


def locked(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A store method that writes: it runs holding the writer lock, on the manifest as it is now."""

    @functools.wraps(method)
    def run(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with writer_lock(store.root):
            store.reload()
            return method(store, *args, **kwargs)

    return run
