"""Turn the paths a user gives into the list of inputs to ingest, recognised by content.

A directory is walked (sorted, hidden entries skipped); each file is sniffed. Files that
are not a known kind are listed as skipped with the reason, never silently ignored. A file
given alone must be recognisable, otherwise it is an :class:`InputError` naming its byte; files
given together (``report timeline.json stdout.txt``, loose files uploaded to the app) are read as
a folder's are: the ones that are not inputs are skipped and listed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from parsers.errors import InputError
from parsers.inputs import InputKind, sniff


@dataclass(frozen=True, slots=True)
class InputFile:
    path: Path
    kind: InputKind
    compressed: bool
    size: int


@dataclass(frozen=True, slots=True)
class SkippedFile:
    path: Path
    reason: str


def discover(paths: list[str | Path], alone: bool | None = None) -> tuple[list[InputFile], list[SkippedFile]]:
    """Recognise every input under ``paths``; ``alone``: whether a file there was given on its own (by
    default, when it is the only path), so that it must be an input.

    Raises:
        InputError: a path does not exist, cannot be read, or (a file given alone) is not a
            format hvd-analyze reads.
    """
    found: list[InputFile] = []
    skipped: list[SkippedFile] = []
    alone = len(paths) == 1 if alone is None else alone
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError(str(path), "no such file or directory")
        if path.is_dir():
            for sub in _walk(path):
                item = _classify(sub, explicit=False)
                if isinstance(item, InputFile):
                    found.append(item)
                else:
                    skipped.append(item)
        elif isinstance(item := _classify(path, explicit=alone), InputFile):
            found.append(item)
        else:
            skipped.append(item)
    return found, skipped


def recognise(path: Path) -> InputFile | SkippedFile:
    """What one file is, as a folder walk sees it (a file that is not an input is skipped, with the reason).

    Raises:
        InputError: the file cannot be read.
    """
    return _classify(path, explicit=False)


def _walk(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if "manifest.json" in filenames and "tables" in dirnames:  # a run store: not an input
            dirnames.clear()
            continue
        out += [Path(dirpath) / f for f in sorted(filenames) if not f.startswith(".")]
    return out


def _classify(path: Path, *, explicit: bool) -> InputFile | SkippedFile:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # reading a FIFO or a device would block or never end
            why = "not a regular file (a FIFO, a device or a socket): copy its content to a file first"
            if explicit:
                raise InputError(str(path), why)
            return SkippedFile(path, why)
        size = st.st_size
        if size == 0 and not explicit:
            return SkippedFile(path, "empty file (nothing to recognise it by)")
        found = sniff(path)
    except OSError as exc:
        if not explicit:  # one unreadable file (a dangling link, no permission) does not stop a folder
            return SkippedFile(path, f"cannot read: {exc.strerror or exc}")
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from exc
    if found.kind is InputKind.UNKNOWN:
        if explicit and found.candidate is not None:  # let its parser name the exact byte and problem
            return InputFile(path, found.candidate, found.compressed, size)
        if explicit:
            raise InputError(
                str(path),
                f"not an input hvd-analyze reads: {found.reason}",
                offset=0,
                hint="expected a Horovod timeline (the file named by HOROVOD_TIMELINE, a JSON array), a rank's "
                "PyTorch profiler trace (<worker>.<time>.pt.trace.json[.gz]) or a job log with NCCL_DEBUG=INFO "
                "output, PyTorch watchdog timeouts, Horovod stall warnings or an autotune CSV",
            )
        return SkippedFile(path, found.reason)
    return InputFile(path, found.kind, found.compressed, size)
