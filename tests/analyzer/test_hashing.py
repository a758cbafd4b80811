"""An input's sha256 is started as soon as the CLI has found its inputs (:func:`hash_soon`), and
whoever needs it later takes that result instead of hashing the file again; a file that changed
meanwhile is hashed anew."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

import analyzer.store.hashing as hashing
from analyzer.cli import cli
from analyzer.store.buckets import BUCKET_BYTES
from analyzer.store.run_store import RunStore
from tests.builders import B, E, X, glued, meta


def test_an_early_hash_is_taken_once(tmp_path: Path) -> None:
    path = tmp_path / "a.bin"
    path.write_bytes(b"x" * 100_000)
    hashing.hash_soon([path])
    assert hashing.file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert hashing.hashed_soon(path) is None  # taken: a second caller hashes again


def test_a_file_changed_after_its_early_hash_is_hashed_anew(tmp_path: Path) -> None:
    path = tmp_path / "a.bin"
    path.write_bytes(b"x" * 100_000)
    hashing.hash_soon([path])
    with path.open("ab") as f:  # a job still writing it
        f.write(b"more")
    assert hashing.file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_early_hashing_covers_the_inputs_of_their_own_bucket() -> None:
    assert hashing.EARLY_BYTES == BUCKET_BYTES


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ingest_hashes_a_big_input_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """A 17 MB timeline (its own bucket; with 2 jobs, still the single pass below 256 MB): one
    pass of sha256 over it, by the early hash, and the manifest holds that hash."""
    step = [B("NEGOTIATE_ALLREDUCE", 10, 1), X(0, 11, 1), X(1, 12, 1), E(12, 1), B("ALLREDUCE", 13, 1), E(20, 1)]
    text = glued(meta(1, "allreduce.w"), *(step * 120_000))
    path = tmp_path / "timeline.json"
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size >= hashing.EARLY_BYTES
    hashed = [0]  # bytes through every sha256 of analyzer.store.hashing (the early one, HashingReader's)

    class Counted:
        def __init__(self) -> None:
            self.h = hashlib.sha256()

        def update(self, data: bytes) -> None:
            hashed[0] += len(data)
            self.h.update(data)

        def hexdigest(self) -> str:
            return self.h.hexdigest()

    monkeypatch.setattr(hashing, "hashlib", SimpleNamespace(sha256=Counted))
    res = CliRunner().invoke(cli, ["ingest", str(path), "-o", str(tmp_path / "store"), "-q", "-j", jobs])
    monkeypatch.undo()
    assert res.exit_code == 0, res.output
    assert hashed[0] == path.stat().st_size
    (entry,) = RunStore.open(tmp_path / "store").inputs
    assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
