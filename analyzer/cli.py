"""``hvd-analyze`` command line. Thin: parse arguments, call the library, map errors.

Exit codes: 0 ok; 1 a finding at or above ``--fail-on``; 2 usage or input error.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from analyzer import __version__, targets
from analyzer.config import parse_size
from analyzer.errors import HvdAnalyzeError
from analyzer.findings import Finding, Severity
from analyzer.render import RENDERERS, renderer_for
from analyzer.store.discovery import discover
from analyzer.store.ingest import ingest_pieces, ingest_runner
from analyzer.store.parallel import Executor, executor_from_options
from analyzer.store.run_store import MANIFEST, IngestReport, RunStore, temporary_store


class CliError(click.ClickException):
    """A library error shown as one message; exit code 2 (input or usage)."""

    exit_code = 2

    def show(self, file: object = None) -> None:
        click.echo(f"hvd-analyze: error: {self.format_message()}", err=True)


@contextmanager
def _errors(writing: str | None = None) -> Iterator[None]:
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hvd-analyze")
def cli() -> None:
    """Diagnose distributed training jobs from Horovod timelines, NCCL_DEBUG logs and job logs."""


def _ingest(paths: tuple[str, ...], store: RunStore, quiet: bool, executor: Executor | None = None) -> IngestReport:
    inputs, skipped = discover(list(paths))
    total = sum(i.size for i in inputs)
    show = not quiet and sys.stderr.isatty()
    runner = (
        ingest_runner(executor) if executor is not None and executor.pays_off(ingest_pieces(inputs), total) else None
    )
    if show:
        from tqdm import tqdm

        with tqdm(total=total, unit="B", unit_scale=True, desc="ingest", file=sys.stderr) as bar:

            def advance(n: int) -> None:
                bar.update(n)

            return store.ingest(inputs, skipped, progress=advance, runner=runner)
    return store.ingest(inputs, skipped, runner=runner)


def _scale_options(fn: Callable[..., Any]) -> Callable[..., Any]:
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


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "-o",
    "--output",
    "store_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Store folder (created if missing; inputs already in it are skipped).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary.")
@click.option(
    "--run",
    "run",
    default=None,
    metavar="NAME",
    help="The run's name, its tables' run=NAME partition (default: the store folder's name).",
)
@_scale_options
def ingest(
    paths: tuple[str, ...],
    store_dir: str,
    quiet: bool,
    run: str | None,
    jobs: int | None,
    scheduler: str | None,
    dask_workers: int | None,
) -> None:
    """Ingest timelines and logs (files or folders, recognised by content) into a Parquet run store.

    Files are parsed in parallel (--jobs, or on Dask); an interrupted ingest leaves the store
    consistent, and running it again continues with the files not yet in the store."""
    began = time.perf_counter()
    with _errors(f"the store {store_dir}"):
        executor = executor_from_options(jobs, scheduler, dask_workers)
        store = RunStore.create_or_open(store_dir, run=run)
        rep = _ingest(paths, store, quiet, executor)
    seconds = time.perf_counter() - began
    if quiet:
        return
    for entry in rep.added:
        tl: dict[str, Any] = dict(entry.get("timeline") or {})
        issues = entry["issues"]
        click.echo(
            f"added {entry['path']} ({tl.get('status')}, {entry['rows'].get('spans', 0)} spans, "
            f"{entry['rows'].get('ticks', 0)} ticks; issues: {issues['error']} error, "
            f"{issues['data_loss']} data_loss, {issues['info']} info)"
        )
    for entry in rep.unchanged:
        click.echo(f"unchanged {entry['path']} (already in the store, sha256 {entry['sha256'][:16]})")
    if rep.skipped:
        click.echo(f"skipped {len(rep.skipped)} file(s) not recognised as inputs (see {Path(store_dir) / MANIFEST})")
    size = sum(e["size"] for e in rep.added)
    click.echo(
        f"ingested {len(rep.added)} input(s), {size / 1e6:,.1f} MB in {seconds:.2f} s "
        f"({size / 1e6 / max(seconds, 1e-9):,.1f} MB/s)"
    )
    click.echo(f"store: {store_dir} ({len(store.inputs)} input(s))")


def _budget_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--memory-budget",
        default="4G",
        show_default=True,
        metavar="SIZE",
        help="Memory a timeline's analysis may take (K, M or G suffix). A timeline whose model would need more "
        "is analysed through a window: step times cover every step, span-level analyses its first steps "
        "(the report says which).",
    )(fn)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(sorted(RENDERERS)),
    default=None,
    help="Report format (default: from the -o extension, else text).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the report here ('-' or absent: standard output).",
)
@click.option(
    "--fail-on",
    type=click.Choice(["info", "warning", "critical"]),
    default=None,
    help="Exit 1 when a finding at or above this severity is found.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar while ingesting.")
@_budget_option
def report(
    paths: tuple[str, ...], fmt: str | None, output: str | None, fail_on: str | None, quiet: bool, memory_budget: str
) -> None:
    """Analyse a run store, or input files/folders (ingested into a temporary store), and write a report."""
    # imported here: pandas, numba and the detectors take 0.3 s, which ingest does not need
    from analyzer.config import AnalysisConfig
    from analyzer.report.assembly import analyze

    with _errors(output if output and output != "-" else "the temporary store (TMPDIR)"):
        renderer = renderer_for(fmt, output)
        config = AnalysisConfig(memory_budget=parse_size(memory_budget, "--memory-budget"))
        store_path = targets.report_store(paths)
        if store_path is not None:
            store = RunStore.open(store_path)
            if not store.inputs:
                raise targets.nothing_to_analyse(paths, [], store_path)
            result = analyze(store, config=config)
        else:
            with temporary_store() as store:
                rep = _ingest(paths, store, quiet)
                if not store.inputs:
                    raise targets.nothing_to_analyse(paths, rep.skipped)
                result = analyze(store, config=config)
        text = renderer.render(result)
        if output and output != "-":
            Path(output).write_text(text, encoding="utf-8")
        else:
            click.echo(text, nl=False)
    _fail_on(fail_on, list(result.findings))


@cli.command()
@click.argument("runs_dir", type=click.Path(file_okay=False))
@click.option(
    "-o",
    "--output",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for runs/<run>.json and the fleet summary (fleet.json, fleet.md).",
)
@click.option(
    "--fail-on",
    type=click.Choice(["info", "warning", "critical"]),
    default=None,
    help="Exit 1 when any run has a finding at or above this severity.",
)
@click.option(
    "--keep-stores",
    is_flag=True,
    help="Keep each run's store in OUTPUT/stores/<run> (tables partitioned by run: one dataset for "
    "DuckDB, Spark, Dask); a rerun reuses them.",
)
@click.option(
    "--allow-failures", is_flag=True, help="Exit 0 even when some runs could not be analysed (at least one was)."
)
@_scale_options
@_budget_option
def batch(
    runs_dir: str,
    out_dir: str,
    fail_on: str | None,
    keep_stores: bool,
    allow_failures: bool,
    jobs: int | None,
    scheduler: str | None,
    dask_workers: int | None,
    memory_budget: str,
) -> None:
    """Analyse every run in RUNS_DIR (one sub-folder or file per run): one report each and a fleet summary.
    Each worker analyses one run at a time within --memory-budget."""
    from analyzer.fleet import run_batch

    with _errors(out_dir):
        budget = parse_size(memory_budget, "--memory-budget")
        fleet = run_batch(
            runs_dir,
            out_dir,
            executor_from_options(jobs, scheduler, dask_workers),
            keep_stores=keep_stores,
            memory_budget=budget,
        )
    click.echo(
        f"{fleet['runs']} runs: {fleet['analysed']} analysed, {len(fleet['failed'])} failed; "
        f"{len(fleet['with_findings'])} with findings at warning or above, {len(fleet['socket_fallback'])} "
        f"socket fallback, {len(fleet['stragglers'])} with stragglers; see {Path(out_dir) / 'fleet.md'}"
    )
    if not fleet["analysed"]:
        click.echo(
            f"hvd-analyze: error: no run of {runs_dir} could be analysed (see {Path(out_dir) / 'fleet.md'})", err=True
        )
        sys.exit(2)
    if fleet["failed"] and not allow_failures:
        click.echo(
            f"hvd-analyze: {len(fleet['failed'])} run(s) failed: {', '.join(r['run'] for r in fleet['failed'][:8])} "
            "(--allow-failures to exit 0 anyway)",
            err=True,
        )
        sys.exit(1)
    if fail_on:
        tripped = [
            f"{r['run']} ({r['worst']})"
            for r in fleet["with_findings"]
            if r["worst"] is not None and Severity.parse(r["worst"]) >= Severity.parse(fail_on)
        ]
        if tripped:
            click.echo(f"hvd-analyze: --fail-on {fail_on}: {len(tripped)} run(s): {', '.join(tripped[:8])}", err=True)
            sys.exit(1)


def _fail_on(level: str | None, findings: list[Finding]) -> None:
    """Exit 1 naming the findings at or above ``level`` (``--fail-on``), if any."""
    if level is None:
        return
    tripped = [f for f in findings if f.severity >= Severity.parse(level)]
    if tripped:
        named = ", ".join(f"{f.code} ({f.severity.label})" for f in tripped[:8])
        more = f" and {len(tripped) - 8} more" if len(tripped) > 8 else ""
        click.echo(f"hvd-analyze: --fail-on {level}: {len(tripped)} finding(s): {named}{more}", err=True)
        sys.exit(1)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (the app has no login: keep it on localhost unless it is behind one).",
)
@click.option("--port", default=8050, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--store-dir",
    default="hvd-analyze-runs",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where uploaded runs are stored (they persist across restarts).",
)
@click.option(
    "--max-upload", default="2G", show_default=True, help="Largest file one upload may carry (K, M or G suffix)."
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="A host name the app answers to besides localhost and --host (repeatable); any other Host header is "
    "refused (DNS rebinding), and so are changes from pages of other origins.",
)
@click.option(
    "--threads",
    default=8,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Requests served at once by the app's WSGI server (waitress); ingests run on threads of their own.",
)
@_budget_option
def serve(
    paths: tuple[str, ...],
    host: str,
    port: int,
    store_dir: str,
    max_upload: str,
    allow_hosts: tuple[str, ...],
    threads: int,
    memory_budget: str,
) -> None:
    """Start the web app. PATHS: run stores to show, or files/folders to ingest as a new run."""
    from dashboards.app import create_app
    from dashboards.uploads import Limits

    with _errors():
        limits = Limits(
            max_upload=parse_size(max_upload, "--max-upload"),
            memory_budget=parse_size(memory_budget, "--memory-budget"),
        )
        stores = [p for p in paths if (Path(p) / MANIFEST).is_file()]
        files = [p for p in paths if p not in stores]
        served = () if host in ("0.0.0.0", "::") else (host,)  # a wildcard address names no host
        app = create_app(store_dir, stores=stores, paths=files or None, limits=limits, hosts=served + allow_hosts)
    import waitress  # a production WSGI server, not Flask's development one

    click.echo(f"hvd-analyze: serving http://{host}:{port}/ (runs in {store_dir}; Ctrl-C stops)", err=True)
    waitress.serve(
        app.server,
        host=host,
        port=port,
        threads=threads,
        max_request_body_size=app.server.config["MAX_CONTENT_LENGTH"],  # beyond it: the app's 413 message
        ident="hvd-analyze",
    )


#: The exit code of a failure inside hvd-analyze itself: neither a finding (1) nor bad input (2).
INTERNAL_ERROR = 3


def main() -> None:
    """Console-script entry point. A failure inside hvd-analyze exits 3 with one message (the
    traceback with HVD_ANALYZE_DEBUG=1), so that CI tells it from a finding (1) or bad input (2)."""
    try:
        cli(prog_name="hvd-analyze")
    except KeyboardInterrupt:  # pragma: no cover - interactive
        click.echo("hvd-analyze: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the last resort: one message and its own exit code
        if os.environ.get("HVD_ANALYZE_DEBUG"):
            raise
        click.echo(
            f"hvd-analyze: internal error: {type(exc).__name__}: {exc}. This is a bug in hvd-analyze, not in "
            "your input: rerun with HVD_ANALYZE_DEBUG=1 for the traceback and report it with the command line.",
            err=True,
        )
        sys.exit(INTERNAL_ERROR)
