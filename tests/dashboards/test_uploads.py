"""Upload safety: size limit, archive traversal, links, devices, decompression bombs; names never paths."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from dashboards.uploads import CHUNK, Limits, UploadError, receive
from dashboards.uploads import save_upload as save_path
from tests.dashboards.helpers import REAL_STRAGGLER, tar_bytes, zip_bytes


class _Reads(io.BytesIO):
    """A request body that records the largest read asked of it."""

    largest = 0

    def read(self, n: int | None = -1) -> bytes:
        self.largest = max(self.largest, n if n is not None and n >= 0 else 1 << 62)
        return super().read(n)


def test_receive_streams_to_disk_and_refuses_past_the_limit(tmp_path: Path) -> None:
    body = _Reads(b"x" * (3 * CHUNK))
    assert receive("t.json", body, tmp_path / "ok", Limits()) == 3 * CHUNK
    assert body.largest == CHUNK  # block by block, never the whole body at once
    with pytest.raises(UploadError, match=r"big\.json: 2\.0 KiB is over the upload limit of 1\.0 KiB"):
        receive("big.json", io.BytesIO(b"x" * 2048), tmp_path / "big", Limits(max_upload=1024))
    assert not (tmp_path / "big").exists()  # nothing of a refused upload stays


def save_upload(name: str, data: bytes, folder: Path, limits: Limits) -> list:
    """Save ``data`` as the request would have received it (a file next to ``folder``)."""
    source = folder.parent / f"received-{name.replace('/', '_')}"
    source.write_bytes(data)
    return save_path(name, source, folder, limits)


def test_a_plain_file_gets_a_generated_name(tmp_path: Path) -> None:
    saved = save_upload("../../etc/passwd", b"[]", tmp_path / "up", Limits())
    assert [(s.path, s.label) for s in saved] == [(tmp_path / "up" / "input-000", "../../etc/passwd")]
    assert sorted(p.name for p in (tmp_path / "up").iterdir()) == ["input-000"]
    assert not (tmp_path / "etc").exists()


def test_gzip_json_is_a_file_not_an_archive(tmp_path: Path) -> None:
    saved = save_upload("timeline.json.gz", gzip.compress(b"[{}]"), tmp_path / "up", Limits())
    assert len(saved) == 1 and gzip.decompress(saved[0].path.read_bytes()) == b"[{}]"


@pytest.mark.parametrize("make", [zip_bytes, tar_bytes])
def test_archive_members_are_unpacked_under_generated_names(tmp_path: Path, make) -> None:
    data = REAL_STRAGGLER.read_bytes()
    saved = save_upload(
        "run.zip", make({"run/timeline.json": data, "run/logs/job.log": b"hello\n"}), tmp_path / "up", Limits()
    )
    assert [s.label for s in saved] == ["run.zip!run/timeline.json", "run.zip!run/logs/job.log"]
    assert [s.path.name for s in saved] == ["input-000", "input-001"]
    assert saved[0].path.read_bytes() == data
    assert not list(tmp_path.glob("received-*"))  # the archive itself is removed once unpacked


@pytest.mark.parametrize("member", ["../evil.json", "a/../../evil.json", "/etc/evil.json", "..\\evil.json"])
@pytest.mark.parametrize("make", [zip_bytes, tar_bytes])
def test_traversal_is_refused_and_nothing_is_written(tmp_path: Path, make, member: str) -> None:
    with pytest.raises(UploadError, match="path traversal"):
        save_upload("bad.zip", make({"ok.json": b"[]", member: b"[]"}), tmp_path / "up", Limits())
    assert not any((tmp_path / "up").iterdir())
    assert not (tmp_path / "evil.json").exists()


def test_links_and_devices_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UploadError, match="symbolic link"):
        save_upload("l.zip", zip_bytes({"a.json": b"[]"}, symlink="link"), tmp_path, Limits())
    with pytest.raises(UploadError, match="is a link"):
        save_upload("l.tgz", tar_bytes({"a.json": b"[]"}, link="link"), tmp_path, Limits())
    with pytest.raises(UploadError, match="device or special file"):
        save_upload("d.tgz", tar_bytes({"a.json": b"[]"}, device="dev/sda"), tmp_path, Limits())


@pytest.mark.parametrize("make", [zip_bytes, tar_bytes])
def test_decompression_bombs_are_refused(tmp_path: Path, make) -> None:
    bomb = make({"zeros.json": b"\0" * (4 << 20)})
    assert len(bomb) < (4 << 20) / 100
    with pytest.raises(UploadError, match="times its size"):
        save_upload("bomb", bomb, tmp_path, Limits(max_ratio=100))
    with pytest.raises(UploadError, match="unpacks to more than 1.0 MiB"):
        save_upload("big", bomb, tmp_path, Limits(max_total=1 << 20, max_ratio=1e9))


def test_too_many_members(tmp_path: Path) -> None:
    with pytest.raises(UploadError, match="holds 3 files, over the limit of 2"):
        save_upload("m.zip", zip_bytes({f"{i}.json": b"[]" for i in range(3)}), tmp_path, Limits(max_members=2))
