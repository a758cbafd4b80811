"""sha256 of inputs, computed off the parsing thread's path where that pays."""

from __future__ import annotations

import hashlib
import io
import queue
import threading
from pathlib import Path
from typing import Any, BinaryIO, cast

FILE_BLOCK = 8 << 20


class HashingReader:
    """A raw file that hashes every byte read through it and counts them.

    ``threaded``: hash in a thread of its own. hashlib releases the GIL on large buffers, so
    this takes the hashing off the parsing thread's path (0.6 s per GB here) when a core is
    free for it, at the cost of a thread and a copy of each block; worth it for a big input
    that streams, not for the small inputs of a bucket (a thread per 200 KB log costs about
    what hashing it does, and several worker processes leave no core free anyway).
    """

    def __init__(self, raw: BinaryIO, threaded: bool = True) -> None:
        self.raw = raw
        self.pos = 0
        self._sha = hashlib.sha256()
        self._blocks: queue.Queue[bytes | None] | None = None
        self._thread: threading.Thread | None = None
        if threaded:
            self._blocks = queue.Queue(maxsize=8)
            self._thread = threading.Thread(target=self._hash, name="hvd-analyze-sha256", daemon=True)
            self._thread.start()

    def _hash(self) -> None:
        assert self._blocks is not None
        while (block := self._blocks.get()) is not None:
            self._sha.update(block)

    def readinto(self, b: Any) -> int:
        # every binary file object Python opens has readinto; typeshed's BinaryIO does not declare it
        n = cast(io.RawIOBase, self.raw).readinto(b)
        if n:
            self._take(memoryview(b)[:n])
        return n or 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        if data:
            self._take(data)
        return data

    def _take(self, block: bytes | memoryview) -> None:
        """Hash ``block`` here, or hand the hashing thread a copy (the reader reuses its buffer;
        ``bytes`` of a ``bytes`` is the same object, no copy)."""
        if self._blocks is None:
            self._sha.update(block)
        else:
            self._blocks.put(bytes(block))
        self.pos += len(block)

    def readable(self) -> bool:
        return True

    def hexdigest(self) -> str:
        """Wait for the hashing thread and return the sha256 of everything read."""
        self.finish()
        return self._sha.hexdigest()

    def finish(self) -> None:
        if self._blocks is not None and self._thread is not None and self._thread.is_alive():
            self._blocks.put(None)
            self._thread.join()

    def close(self) -> None:
        self.finish()
        self.raw.close()


def file_sha256(path: str | Path) -> str:
    """sha256 of a whole file (hashlib releases the GIL: a thread can do this beside parsing)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(FILE_BLOCK):
            h.update(block)
    return h.hexdigest()
