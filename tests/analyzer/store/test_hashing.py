"""An input's hash: sha256 below 16 MB, BLAKE3 from there (:func:`algorithm_for`). A big input's
hash is started as soon as the CLI has found its inputs (:class:`EarlyHashes`), and whoever needs it
later takes that result instead of hashing the file again (a timeline ingested in ranges takes
over where the early hash got to); a file that changed meanwhile is hashed anew. Stores that
hashed big inputs with sha256 still recognise their bytes."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from pathlib import Path
from unittest import mock

import blake3
import pytest
from click.testing import CliRunner

import analyzer.store.hashing as hashing
from analyzer.cli import cli
from analyzer.store.buckets import BUCKET_BYTES
from analyzer.store.discovery import discover
from analyzer.store.ingest import ingest_runner
from analyzer.store.parallel import Executor
from analyzer.store.run_store import RunStore
from tests.builders import B, E, X, glued, meta


def test_the_hash_is_sha256_below_16_mb_and_blake3_from_there() -> None:
    assert [hashing.algorithm_for(n) for n in (0, (16 << 20) - 1, 16 << 20, 5 << 30)] == [
        "sha256",
        "sha256",
        "blake3",
        "blake3",
    ]


@pytest.mark.parametrize("algorithm", ["sha256", "blake3"])
def test_a_file_digest_is_the_reference_hash_of_its_bytes(tmp_path: Path, algorithm: hashing.Algorithm) -> None:
    """Across the reader's 8 MB blocks, in the algorithm asked for (an older store's)."""
    path = tmp_path / "a.bin"
    data = bytes(range(256)) * (hashing.FILE_BLOCK // 256 * 2 + 3)
    path.write_bytes(data)
    want = hashlib.sha256(data) if algorithm == "sha256" else blake3.blake3(data)
    assert hashing.file_digest(path, algorithm) == want.hexdigest()


def test_an_early_hash_is_taken_once(tmp_path: Path) -> None:
    path = tmp_path / "a.bin"
    path.write_bytes(b"x" * 100_000)
    early = hashing.EarlyHashes()
    early.start([path])
    assert hashing.file_digest(path, early=early) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert early.hashed(path) is None  # taken: a second caller hashes again


def test_a_file_changed_after_its_early_hash_is_hashed_anew(tmp_path: Path) -> None:
    path = tmp_path / "a.bin"
    path.write_bytes(b"x" * 100_000)
    early = hashing.EarlyHashes()
    early.start([path])
    with path.open("ab") as f:  # a job still writing it
        f.write(b"more")
    assert hashing.file_digest(path, early=early) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_early_hashing_covers_the_inputs_of_their_own_bucket() -> None:
    assert hashing.BIG_BYTES == BUCKET_BYTES


def _count_hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The algorithm of every byte :mod:`analyzer.store.hashing` hashes from now on, in a list."""
    hashed: list[str] = []
    new_hasher = hashing.new_hasher

    class Counted:
        def __init__(self, algorithm: hashing.Algorithm) -> None:
            self.algorithm = algorithm
            self.h = new_hasher(algorithm)

        def update(self, data: bytes | memoryview, /) -> None:
            hashed.extend([self.algorithm] * len(data))
            self.h.update(data)

        def hexdigest(self) -> str:
            return self.h.hexdigest()

    monkeypatch.setattr(hashing, "new_hasher", Counted)
    return hashed


def _big_timeline(tmp_path: Path) -> Path:
    """A 17 MB timeline: its own bucket, hashed with BLAKE3."""
    step = [B("NEGOTIATE_ALLREDUCE", 10, 1), X(0, 11, 1), X(1, 12, 1), E(12, 1), B("ALLREDUCE", 13, 1), E(20, 1)]
    path = tmp_path / "timeline.json"
    path.write_text(glued(meta(1, "allreduce.w"), *(step * 120_000)), encoding="utf-8")
    assert path.stat().st_size >= hashing.BIG_BYTES
    return path


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ingest_hashes_a_big_input_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """A 17 MB timeline (its own bucket; with 2 jobs, still the single pass below 32 MB): one
    pass of BLAKE3 over it, from the parse's own reads, and the manifest holds that hash."""
    path = _big_timeline(tmp_path)
    hashed = _count_hashed(monkeypatch)
    res = CliRunner().invoke(cli, ["ingest", str(path), "-o", str(tmp_path / "store"), "-q", "-j", jobs])
    monkeypatch.undo()
    assert res.exit_code == 0, res.output
    assert len(hashed) == path.stat().st_size and set(hashed) == {"blake3"}
    (entry,) = RunStore.open(tmp_path / "store").inputs
    assert entry.get("blake3") == blake3.blake3(path.read_bytes()).hexdigest() and "sha256" not in entry


def test_a_store_that_hashed_a_big_input_with_sha256_still_knows_its_bytes(tmp_path: Path) -> None:
    """A store written before big inputs were hashed with BLAKE3: its entry holds the sha256. The
    same bytes, under their name or another, are recognised and not stored twice; new bytes of
    the same size are."""
    path = _big_timeline(tmp_path)
    store = tmp_path / "store"
    assert CliRunner().invoke(cli, ["ingest", str(path), "-o", str(store), "-q"]).exit_code == 0
    manifest = json.loads((store / "manifest.json").read_text())
    entry = manifest["inputs"][0]
    del entry["blake3"]
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (store / "manifest.json").write_text(json.dumps(manifest))
    copy = tmp_path / "copy" / "renamed.json"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    res = CliRunner().invoke(cli, ["ingest", str(path), str(copy), "-o", str(store)])
    assert res.exit_code == 0, res.output
    assert f"unchanged {path} (already in the store, sha256 {entry['sha256'][:16]})" in res.output
    (kept,) = RunStore.open(store).inputs
    assert kept["paths"] == [str(path), str(copy)] and kept["sha256"] == entry["sha256"]
    other = tmp_path / "other" / "timeline.json"
    other.parent.mkdir()
    other.write_bytes(path.read_bytes().replace(b'"ts": 20', b'"ts": 21', 1))
    assert other.stat().st_size == path.stat().st_size
    assert CliRunner().invoke(cli, ["ingest", str(other), "-o", str(store), "-q"]).exit_code == 0
    assert [e.get("blake3") is not None for e in RunStore.open(store).inputs] == [False, True]


def _fed(digest: hashing.RangeDigest, data: bytes, pieces: list[tuple[int, int]]) -> None:
    """Feed ``data[a:b]`` for each piece, each on a thread of its own, all started at once."""
    threads = [threading.Thread(target=digest.feed, args=(a, memoryview(data)[a:b])) for a, b in pieces]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads), "a feeder still waits"


def test_a_range_digest_hashes_ranges_fed_out_of_order_once_each(tmp_path: Path) -> None:
    """Threads feed their ranges in any order (here the last first) and overlapping (a range read
    again): the digest is the file's, each byte hashed once."""
    data = bytes(range(256)) * 40_000
    path = tmp_path / "a.bin"
    path.write_bytes(data)
    digest = hashing.RangeDigest(path, len(data))
    digest.head(1000)
    _fed(digest, data, [(9_000_000, len(data)), (5_000_000, 9_000_000), (1000, 5_000_000), (4_000_000, 6_000_000)])
    with mock.patch.object(hashing, "_digest_of", side_effect=AssertionError("read the file again")):
        assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_range_digest_takes_lent_bytes_without_waiting_and_settles_once_they_are_hashed(tmp_path: Path) -> None:
    """Bytes lent before their turn wait in the digest, not in the lender; the thread that lends
    the bytes before them hashes both, in order; a lender's ``settle``, and the hash, return only
    once the bytes are hashed, even while another thread is still hashing them."""
    data = bytes(range(256)) * 4_000
    path = tmp_path / "a.bin"
    path.write_bytes(data)
    half = len(data) // 2
    digest = hashing.RangeDigest(path, len(data))
    hashing_started, go_on = threading.Event(), threading.Event()
    real = digest._hash_of

    class Slow:
        def update(self, block: bytes | memoryview, /) -> None:
            hashing_started.set()
            assert go_on.wait(10)
            real.update(block)

        def hexdigest(self) -> str:
            return real.hexdigest()

    digest._hash_of = Slow()
    digest.lend(half, memoryview(data)[half:])  # not its turn: returns at once, nothing hashed
    assert not hashing_started.is_set()
    first = threading.Thread(target=digest.lend, args=(0, memoryview(data)[:half]))
    first.start()  # its turn: hashes its bytes, then the half lent before
    assert hashing_started.wait(10)
    settled = threading.Thread(target=digest.settle, args=(len(data),))
    settled.start()
    hexdigest: list[str] = []
    with mock.patch.object(hashing, "_digest_of", side_effect=AssertionError("read the file again")):
        asked = threading.Thread(target=lambda: hexdigest.append(digest.hexdigest()))
        asked.start()  # every byte is lent: the hash waits for the hashing, it does not read the file
        settled.join(timeout=0.2)
        assert settled.is_alive() and asked.is_alive()  # the bytes are still being hashed
        go_on.set()
        for t in (first, settled, asked):
            t.join(timeout=10)
            assert not t.is_alive()
    assert hexdigest == [hashlib.sha256(data).hexdigest()]


@pytest.mark.parametrize("how", ["failed", "short"])
def test_a_range_digest_missing_bytes_hashes_the_file_anew(tmp_path: Path, how: str) -> None:
    """A feeder that failed (waking those waiting behind it), or bytes that stop short of the
    file's end: the hash is read from the file, never made of what came."""
    data = b"x" * 100_000
    path = tmp_path / "a.bin"
    path.write_bytes(data)
    digest = hashing.RangeDigest(path, len(data))
    if how == "failed":
        waiting = threading.Thread(target=digest.feed, args=(50_000, memoryview(data)[50_000:]))
        waiting.start()
        digest.fail()
        waiting.join(timeout=10)
        assert not waiting.is_alive()
    else:
        digest.head(50_000)
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("early", [False, True], ids=["ingest", "report"])
def test_ingest_of_a_timeline_in_ranges_hashes_it_from_the_tokenizers_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, early: bool
) -> None:
    """A big timeline tokenized in ranges on two threads: every byte hashed once, by BLAKE3, from
    the ranges' reads (the file is not read for its hash), and the manifest holds that hash. As
    ``report FILE`` does, hashed early while the modules load: the ranges go on from where that
    hash got to, every byte still hashed once in all."""
    path = _big_timeline(tmp_path)
    inputs, skipped = discover([str(path)])
    hashed = _count_hashed(monkeypatch)
    monkeypatch.setattr(hashing, "_digest_of", mock.Mock(side_effect=AssertionError("read the file again")))
    started = hashing.EarlyHashes.of_inputs(inputs) if early else None
    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(inputs, skipped, runner=ingest_runner(Executor(jobs=2), range_bytes=1 << 20), early=started)
    monkeypatch.undo()
    assert len(hashed) == path.stat().st_size and set(hashed) == {"blake3"}
    (entry,) = RunStore.open(tmp_path / "store").inputs
    assert entry.get("blake3") == blake3.blake3(path.read_bytes()).hexdigest()


def test_an_early_hash_stopped_midway_hands_over_what_it_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked to stop after its first block, the early hash hands over the hash of that block and
    its length; a range digest going on from there gives the file's hash without reading it again."""
    data = bytes(range(256)) * 4_000
    path = tmp_path / "a.bin"
    path.write_bytes(data)
    monkeypatch.setattr(hashing, "FILE_BLOCK", 100_000)
    job = hashing._Job(str(path))
    new_hasher = hashing.new_hasher

    def stopping(algorithm: hashing.Algorithm) -> hashing.Hasher:
        h = new_hasher(algorithm)

        class Stops:
            def update(self, block: bytes | memoryview, /) -> None:
                h.update(block)
                job.stop.set()  # as EarlyHashes.take_over does while the block is hashed

            def hexdigest(self) -> str:
                return h.hexdigest()

        return Stops()

    monkeypatch.setattr(hashing, "new_hasher", stopping)
    job.run()
    assert not job.future.done()
    begun, at = job.handed.result()
    assert at == 100_000
    digest = hashing.RangeDigest(path, len(data), (begun, at))
    digest.head(1000)  # before what was hashed: skipped
    _fed(digest, data, [(50_000, 700_000), (700_000, len(data))])
    monkeypatch.setattr(hashing, "_digest_of", mock.Mock(side_effect=AssertionError("read the file again")))
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


def test_taking_over_an_early_hash_gives_its_hash_or_where_it_stopped(tmp_path: Path) -> None:
    """Whether the early hash is done, stopped midway or not yet begun, what it hands over plus the
    rest fed to a range digest is the file's hash; a second caller gets nothing."""
    data = bytes(range(256)) * 200_000
    path = tmp_path / "a.bin"
    path.write_bytes(data)
    hashes = hashing.EarlyHashes()
    hashes.start([path])
    early = hashes.take_over(path)
    assert early is not None
    if isinstance(early, str):
        assert early == hashing.file_digest(path, "blake3")
    else:
        digest = hashing.RangeDigest(path, len(data), early)
        _fed(digest, data, [(0, len(data))])
        assert digest.hexdigest() == blake3.blake3(data).hexdigest()
    assert hashes.take_over(path) is None


def test_early_hashes_do_not_travel_to_a_worker_process() -> None:
    import pickle

    assert pickle.loads(pickle.dumps([hashing.EarlyHashes()])) == [None]


def test_an_early_hash_that_failed_is_not_handed_over(tmp_path: Path) -> None:
    path = tmp_path / "gone.bin"
    path.write_bytes(b"x" * 100)
    job = hashing._Job(str(path))
    path.unlink()
    job.run()
    assert isinstance(job.future.exception(), FileNotFoundError)
    key = ("k", 0, 0)
    with mock.patch.object(hashing, "_key", return_value=key):
        early = hashing.EarlyHashes()
        early.jobs[key] = job
        assert early.take_over(path) is None
