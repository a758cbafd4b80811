"""What the ``hvd-analyze`` commands share: library errors as one message (exit 2), the options
several commands take, and how the process leaves. Errors become messages here, at the
command-line edge, and nowhere else."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import click

from analyzer.errors import HvdAnalyzeError


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
