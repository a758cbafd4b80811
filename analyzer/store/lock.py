"""One writer per store: ``ingest`` holds an exclusive lock on ``STORE/.writer.lock`` while it writes.

Two ingests into one store at once would sweep each other's half-written buckets and each write a
manifest that lists only its own inputs. The second one is refused at once, with who holds the lock
(or, asked to, waits for it);
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
def writer_lock(root: Path, wait: bool = False) -> Iterator[None]:
    """Hold the store's writer lock for the duration of the block; ``wait``: until the writer
    holding it has finished, else fail at once.

    Raises:
        StoreError: another process holds it (and ``wait`` is false).
    """
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK, "a+", encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            f.seek(0)
            holder = (f.read().strip().splitlines() or ["another process"])[-1]
            raise StoreError(
                f"{root}: another hvd-analyze is writing to this store ({holder}); run this ingest again when it "
                "has finished (inputs already in the store are skipped), or with --wait to wait for it"
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
    wait_for_writer: bool

    def reload(self) -> None: ...


S = TypeVar("S", bound=_Store)
P = ParamSpec("P")
R = TypeVar("R")


def locked(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A store method that writes: it runs holding the writer lock, on the manifest as it is now."""

    @functools.wraps(method)
    def run(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with writer_lock(store.root, wait=store.wait_for_writer):
            store.reload()
            return method(store, *args, **kwargs)

    return run
