"""Uploaded files made safe to ingest: size limits, archive checks, generated file names.

An upload arrives as a stream (the HTTP API, which the page's upload uses too): :func:`receive`
writes it to disk as it reads, refusing it past the size limit. :func:`save_upload` then moves it
under a folder with a generated name (the user's name is kept only as a label);
archives (``.zip``, ``.tar``, ``.tar.gz``/``.tgz``) are unpacked member by member after checking
every member: no absolute path, no ``..``, no link or device, no more than
:attr:`Limits.max_members` members, at most :attr:`Limits.max_total` bytes unpacked and at most
:attr:`Limits.max_ratio` times the archive's size (decompression bombs). Every refusal is an
:class:`UploadError` whose message names the upload and says what to do.
"""

from __future__ import annotations

import re
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from analyzer import DEFAULT_MEMORY_BUDGET, HvdAnalyzeError

GIB = 1 << 30
CHUNK = 1 << 20


class UploadError(HvdAnalyzeError):
    """An upload refused before ingestion (too big, unsafe archive, not decodable)."""


@dataclass(frozen=True, slots=True)
class Limits:
    max_upload: int = 2 * GIB  # bytes of one uploaded file
    max_total: int = 8 * GIB  # bytes unpacked from one archive
    max_ratio: float = 200.0  # unpacked / packed, per archive
    max_members: int = 10_000
    memory_budget: int = DEFAULT_MEMORY_BUDGET  # bytes one timeline's analysis may take (analyzer.timeline.load)


@dataclass(frozen=True, slots=True)
class SavedFile:
    path: Path  # generated: never derived from the user's name
    label: str  # the user's name (archive member names joined with '!'), shown as text only


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def too_big(name: str, size: float, limits: Limits) -> UploadError:
    return UploadError(
        f"{name}: {_human(size)} is over the upload limit of {_human(limits.max_upload)}; ingest it with "
        "`hvd-analyze ingest FILE -o STORE` and open the store, or start the app with a larger --max-upload"
    )


def receive(name: str, stream: IO[bytes], dst: Path, limits: Limits) -> int:
    """Copy ``stream`` to ``dst`` block by block (never the whole upload in memory); refused (and
    ``dst`` removed) when it passes the size limit. Returns the bytes written."""
    total = 0
    try:
        with open(dst, "wb") as out:
            while block := stream.read(CHUNK):
                total += len(block)
                if total > limits.max_upload:
                    raise too_big(name, total, limits)
                out.write(block)
    except BaseException:
        dst.unlink(missing_ok=True)
        raise
    return total


def is_archive(path: Path) -> str | None:
    """``zip`` or ``tar`` when the file is an archive (by content, not by name)."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    try:
        with tarfile.open(path, mode="r:*") as tf:
            return "tar" if tf.next() is not None else None
    except (tarfile.TarError, EOFError, OSError, ValueError):
        return None


#: the endings an archive's name loses when it names the folder it is unpacked into
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
NAME_CHARS = 64


def folder_name(name: str) -> str:
    """A user's folder (or archive) name made safe for this machine's file system, kept readable: the
    folders name the run's jobs (:mod:`analyzer.jobs`), so a job reads as the user named its folder."""
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    safe = re.sub(r"[^A-Za-z0-9._ -]", "_", name).strip(" .")[:NAME_CHARS]
    if re.fullmatch(r"input-\d+", safe):  # the app's own name for a file: a folder never takes it
        safe = f"folder {safe}"
    return safe or "folder"


def _unique(parent: Path, name: str, taken: set[Path]) -> Path:
    """``parent/name``, or ``parent/name-2``, ... when two of the user's names read the same once safe."""
    path, n = parent / name, 1
    while path in taken:
        n += 1
        path = parent / f"{name}-{n}"
    taken.add(path)
    return path


def save_upload(name: str, source: Path, folder: Path, limits: Limits, start: int = 0) -> list[SavedFile]:
    """Move the upload at ``source`` into ``folder`` as an ``input-NNN`` file, or unpack it there when it
    is an archive (``source`` is then removed). An archive is unpacked into a folder named after it and
    keeps its folder structure under the user's folder names made safe (:func:`folder_name`): the folders
    tell the run's jobs apart (:mod:`analyzer.jobs`) and name them."""
    folder.mkdir(parents=True, exist_ok=True)
    kind = is_archive(source)
    if kind is None:
        path = folder / f"input-{start:03d}"
        source.replace(path)
        return [SavedFile(path, name)]
    packed = source.stat().st_size
    members = (
        _zip_members(name, source, packed, limits) if kind == "zip" else _tar_members(name, source, packed, limits)
    )
    taken = set(folder.iterdir()) if folder.is_dir() else set()
    base = _unique(folder, folder_name(PurePosixPath(name).name), taken)
    dirs: dict[tuple[str, ...], Path] = {(): base}
    out: list[SavedFile] = []
    total = 0
    for i, (member, stream) in enumerate(members):
        parts = PurePosixPath(member).parts[:-1]
        for depth in range(1, len(parts) + 1):
            if parts[:depth] not in dirs:
                dirs[parts[:depth]] = _unique(dirs[parts[: depth - 1]], folder_name(parts[depth - 1]), taken)
        path = dirs[parts] / f"input-{start + i:03d}"
        path.parent.mkdir(parents=True, exist_ok=True)
        with stream, open(path, "wb") as dst:
            while block := stream.read(CHUNK):
                total += len(block)
                _check_total(name, total, packed, limits)
                dst.write(block)
        out.append(SavedFile(path, f"{name}!{member}"))
    if not out:
        raise UploadError(f"{name}: the archive holds no files; upload the run's timeline.json or logs")
    source.unlink(missing_ok=True)
    return out


def folder_labels(saved: list[SavedFile]) -> dict[str, str]:
    """The user's names of the generated folders of unpacked archives (``run.zip!runA/logs``)."""
    out: dict[str, str] = {}
    for f in saved:
        name, sep, member = f.label.partition("!")
        if not sep:
            continue
        parts = PurePosixPath(member).parts[:-1]
        p = f.path.parent
        for depth in range(len(parts), -1, -1):
            out[str(p)] = name + (f"!{'/'.join(parts[:depth])}" if depth else "")
            p = p.parent
    return out


def _check_total(name: str, total: int, packed: int, limits: Limits) -> None:
    if total > limits.max_total:
        raise UploadError(
            f"{name}: the archive unpacks to more than {_human(limits.max_total)}; "
            "ingest it with `hvd-analyze ingest` instead"
        )
    if total > max(packed, 1) * limits.max_ratio:
        raise UploadError(
            f"{name}: the archive unpacks to more than {limits.max_ratio:.0f} times its size "
            "(a decompression bomb?); refused"
        )


def _safe_member(name: str, member: str) -> str:
    p = PurePosixPath(member.replace("\\", "/"))
    if p.is_absolute() or member.startswith(("/", "\\")) or (len(member) > 1 and member[1] == ":"):
        raise UploadError(f"{name}: archive member {member!r} has an absolute path; refused (path traversal)")
    if ".." in p.parts:
        raise UploadError(
            f"{name}: archive member {member!r} climbs out of the archive with '..'; refused (path traversal)"
        )
    return str(p)


def _zip_members(name: str, source: Path, packed: int, limits: Limits) -> Iterator[tuple[str, IO[bytes]]]:
    try:
        zf = zipfile.ZipFile(source)  # read while the generator runs
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise UploadError(f"{name}: not a readable zip archive ({exc}); upload it again or unpack it") from exc
    files = [i for i in infos if not i.is_dir()]
    if len(files) > limits.max_members:
        raise UploadError(f"{name}: the archive holds {len(files)} files, over the limit of {limits.max_members}")
    declared = 0
    for info in files:
        _safe_member(name, info.filename)
        if (info.external_attr >> 16) & 0o170000 == 0o120000:
            raise UploadError(f"{name}: archive member {info.filename!r} is a symbolic link; refused")
        declared += info.file_size
        _check_total(name, declared, packed, limits)
    for info in files:
        yield _safe_member(name, info.filename), zf.open(info)


def _tar_members(name: str, source: Path, packed: int, limits: Limits) -> Iterator[tuple[str, IO[bytes]]]:
    try:
        tf = tarfile.open(source, mode="r:*")  # read while the generator runs
        infos = tf.getmembers()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise UploadError(f"{name}: not a readable tar archive ({exc}); upload it again or unpack it") from exc
    if len(infos) > limits.max_members:
        raise UploadError(f"{name}: the archive holds {len(infos)} members, over the limit of {limits.max_members}")
    declared = 0
    for info in infos:
        _safe_member(name, info.name)
        if info.issym() or info.islnk():
            raise UploadError(f"{name}: archive member {info.name!r} is a link; refused")
        if not (info.isfile() or info.isdir()):
            raise UploadError(f"{name}: archive member {info.name!r} is a device or special file; refused")
        declared += info.size
        _check_total(name, declared, packed, limits)
    for info in infos:
        if info.isfile():
            stream = tf.extractfile(info)
            assert stream is not None
            yield _safe_member(name, info.name), stream
