"""Upload safety: size limit, archive traversal, links, devices, decompression bombs; names never paths."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from dashboards.uploads import Limits, UploadError, decode, save_upload
from tests.dashboards.helpers import REAL_STRAGGLER, data_url, tar_bytes, zip_bytes


def test_decode_refuses_over_the_limit_before_decoding() -> None:
    with pytest.raises(UploadError, match=r"big\.json: 2\.0 KiB is over the upload limit of 1\.0 KiB"):
        decode("big.json", data_url(b"x" * 2048), Limits(max_upload=1024))
    assert decode("ok.json", data_url(b"[]"), Limits(max_upload=1024)) == b"[]"


def test_decode_refuses_what_is_not_a_data_url() -> None:
    with pytest.raises(UploadError, match="no file data"):
        decode("a.json", "hello", Limits())
    with pytest.raises(UploadError, match="not valid base64"):
        decode("a.json", "data:x;base64,@@@", Limits())


def test_a_plain_file_gets_a_generated_name(tmp_path: Path) -> None:
    saved = save_upload("../../etc/passwd", b"[]", tmp_path, Limits())
    assert [(s.path, s.label) for s in saved] == [(tmp_path / "input-000", "../../etc/passwd")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input-000"]


def test_gzip_json_is_a_file_not_an_archive(tmp_path: Path) -> None:
    saved = save_upload("timeline.json.gz", gzip.compress(b"[{}]"), tmp_path, Limits())
    assert len(saved) == 1 and gzip.decompress(saved[0].path.read_bytes()) == b"[{}]"


@pytest.mark.parametrize("make", [zip_bytes, tar_bytes])
def test_archive_members_are_unpacked_under_generated_names(tmp_path: Path, make) -> None:
    data = REAL_STRAGGLER.read_bytes()
    saved = save_upload(
        "run.zip", make({"run/timeline.json": data, "run/logs/job.log": b"hello\n"}), tmp_path, Limits()
    )
    assert [s.label for s in saved] == ["run.zip!run/timeline.json", "run.zip!run/logs/job.log"]
    assert [s.path.name for s in saved] == ["input-000", "input-001"]
    assert saved[0].path.read_bytes() == data


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
