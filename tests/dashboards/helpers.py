"""Inputs for the dashboard tests: uploads as the page sends them, a hostile tensor name, archives."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path
from typing import Any

from flask import Flask

from dashboards import api
from dashboards.api import Access
from dashboards.runs import RunLibrary

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_traces"
REAL_STRAGGLER = SAMPLES / "captured" / "straggler_nocache" / "timeline.json"
CACHED_STRAGGLER = SAMPLES / "captured" / "straggler_cached" / "timeline.json"
SOCKET_LOG = SAMPLES / "synthetic" / "nccl_socket_fallback" / "job.log"
XSS = "<img src=x onerror=alert(1)>"


def post_files(library: RunLibrary, files: dict[str, bytes], access: Access | None = None) -> Any:
    """POST ``files`` to ``/api/runs`` as the page's upload does (multipart); the Flask response."""
    server = Flask("hvd-analyze-test")
    api.install(server, library, access or Access())
    form = {"file": [(io.BytesIO(data), name) for name, data in files.items()]}
    return server.test_client().post("/api/runs", data=form, content_type="multipart/form-data")


def hostile_timeline() -> bytes:
    """A real timeline in which one tensor is named like an HTML injection."""
    text = REAL_STRAGGLER.read_text()
    assert '"allreduce.0.weight"' in text
    return text.replace('"allreduce.0.weight"', f'"{XSS}"').encode()


def zip_bytes(members: dict[str, bytes], symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = 0o120777 << 16
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def tar_bytes(members: dict[str, bytes], link: str | None = None, device: str | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tf.addfile(info)
        if device:
            info = tarfile.TarInfo(device)
            info.type = tarfile.CHRTYPE
            tf.addfile(info)
    return buf.getvalue()
