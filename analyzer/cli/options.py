"""What the ``hvd-analyze`` commands share: library errors as one message (exit 2), the options
several commands take, and how the process starts and leaves. Errors become messages here, at the
command-line edge, and nowhere else."""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

import click

from analyzer.errors import HvdAnalyzeError

#: The exit code of a failure inside hvd-analyze itself: neither a finding (1) nor bad input (2).
INTERNAL_ERROR = 3


class CliError(click.ClickException):
    """A library error shown as one message; exit code 2 (input or usage)."""

    exit_code = 2

    def show(self, file: object = None) -> None:
        click.echo(f"hvd-analyze: error: {self.format_message()}", err=True)


@contextmanager
def errors(writing: str | None = None) -> Iterator[None]:
    """Library errors as one message; ``writing``: the store or folder the command writes to."""
    try:
        yield
    except HvdAnalyzeError as exc:
        raise CliError(str(exc)) from exc
    except OSError as exc:  # disk full, permission denied on the output, ...
        where = f" {exc.filename}" if exc.filename else ""
        if exc.errno == errno.ENOSPC:
            target = writing or exc.filename or "the output"
            raise CliError(
                f"no space left on the device holding {target}: free space there, or write to another folder "
                "(-o); an interrupted ingest leaves a consistent store, and running it again continues it"
            ) from exc
        raise CliError(f"{exc.strerror or exc}{where}") from exc


@contextmanager
def output_file(path: str) -> Iterator[BinaryIO]:
    """``path`` opened for writing through a temporary file beside it, renamed over it once complete:
    a full disk or an error leaves the old file (or none), never a cut or 0-byte one."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            yield f
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def budget_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--memory-budget",
        default="4G",
        show_default=True,
        metavar="SIZE",
        help="Memory a timeline's analysis may take (K, M or G suffix). A timeline whose model would need more "
        "is analysed through a window: step times cover every step, span-level analyses its first steps "
        "(the report says which).",
    )(fn)


def scale_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--jobs``, ``--scheduler`` and ``--dask-workers``."""
    fn = click.option(
        "--dask-workers", type=int, default=None, help="Start a local Dask cluster of this many worker processes."
    )(fn)
    fn = click.option(
        "--scheduler",
        default=None,
        metavar="tcp://HOST:PORT",
        help="Run on this Dask cluster (its workers must see the same filesystem paths).",
    )(fn)
    return click.option(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="Local workers (default: all cores; 1: this process only): processes for files, runs "
        "and log chunks, threads for a big timeline's ranges.",
    )(fn)


#: the collector's thresholds as Python sets them
DEFAULT_GC_THRESHOLDS = gc.get_threshold()


def tune_process() -> None:
    """What the process is told before any command runs.

    OpenBLAS gets one thread unless the user says otherwise: no analysis multiplies matrices
    big enough to gain from more, and its idle threads spin on the cores that ingest's
    tokenizer, Parquet writer and hasher share (0.1 s of CPU per 300 MB ingested, measured).
    Set before anything imports numpy.

    The garbage collector looks at young objects every 200,000 allocations instead of 700 (mypy's
    setting for its command line) until the command has loaded its modules (:func:`imports_done`):
    the imports' objects live as long as the process. A report of a small timeline ran 170
    collections while importing, 0.045 s of its 0.7 s."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    gc.set_threshold(200_000, 30, 30)


def imports_done() -> None:
    """The command has loaded the modules it runs on: the collector leaves their objects out from
    now on (``gc.freeze``) and looks at new ones as often as Python does by default, so that a
    cycle holding a big array does not wait long to be freed."""
    gc.freeze()
    gc.set_threshold(*DEFAULT_GC_THRESHOLDS)


def leave(code: int) -> NoReturn:
    """Exit without tearing the interpreter down. Finalising the ~750 modules a report loads
    (pandas, pyarrow) takes 35-65 ms, a tenth of a small report, and there is nothing left to
    do: every command closes the files it wrote and shuts its pools, clusters and temporary
    stores in its own ``with`` blocks (a new command must too). What Python still buffers is
    flushed first."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    os._exit(code)
