"""What the ``hvd-analyze`` commands share: library errors as one message (exit 2) and the options
several commands take. Errors become messages here, at the command-line edge, and nowhere else."""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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
