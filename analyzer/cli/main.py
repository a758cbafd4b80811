"""``hvd-analyze`` command line. Thin: parse arguments, call the library, map errors.

Exit codes: 0 ok; 1 a finding at or above ``--fail-on``; 2 usage or input error.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from analyzer.cli.batch import batch as batch_command
from analyzer.cli.compare import compare as compare_command
from analyzer.cli.options import (
    INTERNAL_ERROR,
    budget_option,
    errors,
    imports_done,
    leave,
    output_file,
    scale_options,
    tune_process,
)
from analyzer.cli.serve import serve as serve_command
from analyzer.config import parse_size
from analyzer.render import RENDERERS, renderer_for
from analyzer.version import __version__

if TYPE_CHECKING:  # the store (pyarrow, the parsers) loads when a command runs: --help stays fast
    from analyzer.context import Context
    from analyzer.findings import Finding
    from analyzer.store.discovery import InputFile, SkippedFile
    from analyzer.store.hashing import EarlyHashes
    from analyzer.store.manifest import ManifestEntry
    from analyzer.store.parallel import Executor
    from analyzer.store.run_store import IngestReport, RunStore


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hvd-analyze")
def cli() -> None:
    """Diagnose distributed training jobs from Horovod timelines, NCCL_DEBUG logs and job logs."""


@dataclass(frozen=True, slots=True)
class Found:
    """The inputs under the paths given, the files that are not, and the hashes started early."""

    inputs: list[InputFile]
    skipped: list[SkippedFile]
    early: EarlyHashes


def _discover(paths: tuple[str, ...], timelines: bool = True) -> Found:
    """The inputs under ``paths``, the big ones' hash started at once on a thread of its own
    (:class:`analyzer.store.hashing.EarlyHashes`, of ``timelines`` or not): before the store and the
    parsers load, so that it runs on the core their imports leave idle."""
    from analyzer.store.discovery import discover
    from analyzer.store.hashing import EarlyHashes

    inputs, skipped = discover(list(paths)) if paths else ([], [])
    return Found(inputs, skipped, EarlyHashes.of_inputs(inputs, timelines))


def _ingest(
    found: Found,
    store: RunStore,
    quiet: bool,
    executor: Executor | None = None,
    also: list[InputFile] | None = None,
) -> IngestReport:
    from analyzer.store.ingest import ingest_pieces, ingest_runner

    inputs, skipped = list(found.inputs), found.skipped
    inputs += [i for i in also or [] if i.path not in {j.path for j in inputs}]
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

            return store.ingest(inputs, skipped, progress=advance, runner=runner, early=found.early)
    return store.ingest(inputs, skipped, runner=runner, early=found.early)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
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
@click.option(
    "--wait", is_flag=True, help="Wait while another hvd-analyze writes to the store (default: fail at once)."
)
@click.option(
    "--repair",
    is_flag=True,
    help="Drop the store's damaged parts (cut, emptied, another table's) and ingest their inputs again from "
    "where they were ingested from; PATHS are then optional.",
)
@scale_options
def ingest(
    paths: tuple[str, ...],
    store_dir: str,
    quiet: bool,
    run: str | None,
    wait: bool,
    repair: bool,
    jobs: int | None,
    scheduler: str | None,
    dask_workers: int | None,
) -> None:
    """Ingest timelines and logs (files or folders, recognised by content) into a Parquet run store.

    Files are parsed in parallel (--jobs, or on Dask); an interrupted ingest leaves the store
    consistent, and running it again continues with the files not yet in the store."""
    if not paths and not repair:
        raise click.UsageError("give the files or folders to ingest (or --repair to repair the store)")
    began = time.perf_counter()
    with errors(f"the store {store_dir}"):
        found = _discover(paths, timelines=False)  # before the store loads: see _discover
        from analyzer.store.manifest import digest
        from analyzer.store.parallel import executor_from_options
        from analyzer.store.run_store import RunStore

        executor = executor_from_options(jobs, scheduler, dask_workers)
        store = RunStore.open(store_dir) if repair and not paths else RunStore.create_or_open(store_dir, run=run)
        store.wait_for_writer = wait
        again = _repair(store, quiet) if repair else []
        rep = _ingest(found, store, quiet, executor, also=again)
    seconds = time.perf_counter() - began
    if quiet:
        return
    for entry in rep.added:
        issues = entry["issues"]
        click.echo(
            f"added {entry['path']} ({_what(entry)}; issues: {issues['error']} error, "
            f"{issues['data_loss']} data_loss, {issues['info']} info)"
        )
    for entry in rep.unchanged:
        algorithm, hexdigest = digest(entry)
        click.echo(f"unchanged {entry['path']} (already in the store, {algorithm} {hexdigest[:16]})")
    for s in rep.skipped:
        click.echo(f"skipped {s.path}: {s.reason}")
    size = sum(e["size"] for e in rep.added)
    click.echo(
        f"ingested {len(rep.added)} input(s), {size / 1e6:,.1f} MB in {seconds:.2f} s "
        f"({size / 1e6 / max(seconds, 1e-9):,.1f} MB/s)"
    )
    click.echo(f"store: {store_dir} ({len(store.inputs)} input(s))")


def _what(entry: ManifestEntry) -> str:
    """An ingested input in a few words: a timeline's status and spans, a log's records."""
    if (tl := entry.get("timeline")) is not None:
        return f"timeline, {tl['status']}, {entry['rows'].get('spans', 0):,} spans, {entry['rows'].get('ticks', 0):,} ticks"
    log = entry.get("log")
    if log is None:
        return entry["kind"]
    signals = [
        (log["records"], "NCCL record(s)"),
        (log["processes"], "process(es)"),
        (log["watchdog_timeouts"], "watchdog timeout(s)"),
        (log["stall_ranks"], "stalled rank(s)"),
        (log["autotune_rows"], "autotune row(s)"),
    ]
    said = ", ".join(f"{n:,} {what}" for n, what in signals if n)
    return f"log, {log['lines']:,} lines{', ' + said if said else ', nothing hvd-analyze reads'}"


def _repair(store: RunStore, quiet: bool) -> list[InputFile]:
    """Drop the damaged parts of ``store``; the inputs to ingest again."""
    from analyzer.store.repair import drop_damaged

    found = drop_damaged(store)
    if not quiet:
        for why in found.damaged:
            click.echo(f"damaged: {why}")
        if not found.damaged:
            click.echo(f"no damaged part in {store.root}")
    for path in found.lost:
        click.echo(f"lost: {path}: its file is gone or changed; ingest it again when you have it", err=True)
    return found.reingest


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
    help="Exit 1 when a finding at or above this severity is found (with -f junit: the failing cases; default "
    "warning there).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar while ingesting.")
@budget_option
def report(
    paths: tuple[str, ...], fmt: str | None, output: str | None, fail_on: str | None, quiet: bool, memory_budget: str
) -> None:
    """Analyse a run store, or input files/folders (ingested into a temporary store), and write a report.

    A temporary store keeps its tables in memory when they fit the memory budget (2x the inputs + 0.45 GB)."""
    from analyzer import targets

    with errors(output if output and output != "-" else "the temporary store (TMPDIR)"):
        renderer = renderer_for(fmt, output, fail_on)
        store_path = targets.report_store(paths)
        found = _discover(paths) if store_path is None else None  # before the rest loads: see _discover
        # imported here: pandas and the detectors take 0.3 s, which ingest does not need
        from analyzer.config import AnalysisConfig
        from analyzer.report.assembly import HELD_COLUMNS, analyze
        from analyzer.store.parallel import executor_from_options
        from analyzer.store.run_store import RunStore, temporary_store

        imports_done()
        config = AnalysisConfig(memory_budget=parse_size(memory_budget, "--memory-budget"))
        if store_path is not None:
            store = RunStore.open(store_path)
            if not store.inputs:
                raise targets.nothing_to_analyse(paths, [], store_path)
            result = analyze(store, config=config)
        else:
            assert found is not None
            from analyzer.store.held import fits

            # a big timeline's ranges on every core, as ingest does; its tables held in memory
            # when they fit the memory budget (no Parquet written and read back)
            with temporary_store(hold=fits(found.inputs, config.memory_budget), keep=HELD_COLUMNS) as store:
                rep = _ingest(found, store, quiet, executor_from_options(None, None, None))
                if not store.inputs:
                    raise targets.nothing_to_analyse(paths, rep.skipped)
                result = analyze(store, config=config)
        text = renderer.render(result)
        if output and output != "-":
            with output_file(output) as f:
                f.write(text.encode("utf-8"))
            v = result.verdict()
            click.echo(f"wrote the {renderer.name} report to {output}: {v['headline']}", err=True)
        else:
            click.echo(text, nl=False)
    _fail_on(fail_on, list(result.findings))


def _fail_on(level: str | None, findings: list[Finding]) -> None:
    """Exit 1 naming the findings at or above ``level`` (``--fail-on``), if any."""
    if level is None:
        return
    from analyzer.findings import Severity

    tripped = [f for f in findings if f.severity >= Severity.parse(level)]
    if tripped:
        named = ", ".join(f"{f.code} ({f.severity.label})" for f in tripped[:8])
        more = f" and {len(tripped) - 8} more" if len(tripped) > 8 else ""
        click.echo(f"hvd-analyze: --fail-on {level}: {len(tripped)} finding(s): {named}{more}", err=True)
        sys.exit(1)


@cli.command(name="slice")
@click.argument("path", type=click.Path(exists=True))
@click.option(
    "--steps",
    "spec",
    default="median",
    show_default=True,
    help="Steps to keep: A:B (A to B-1), A, A:, :B, slowest or median (of the steady steps).",
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The Chrome trace to write.")
@click.option(
    "--timeline",
    "which",
    default=None,
    metavar="PATH",
    help="Which timeline, by path or file name (default: the one with most spans).",
)
@click.option(
    "--ranks",
    "ranks",
    is_flag=True,
    help="Slice the per-rank profiler traces (every rank a process, on one clock) even when there is a timeline.",
)
@budget_option
def slice_command(path: str, spec: str, output: str, which: str | None, ranks: bool, memory_budget: str) -> None:
    """Write some steps of a timeline (a file, a run folder or a store) as a Chrome trace for Perfetto or
    chrome://tracing, with each rank's readiness as a track; any file size, in bounded memory. Without a
    timeline (or with --ranks), the steps of every rank's profiler trace, each rank a process, their
    clocks aligned."""
    from analyzer import targets
    from analyzer.config import AnalysisConfig
    from analyzer.context import Context
    from analyzer.slicing import chrome_trace, main_timeline, step_window
    from analyzer.store.run_store import RunStore, temporary_store

    with errors(output):
        config = AnalysisConfig(memory_budget=parse_size(memory_budget, "--memory-budget"))
        store_path = targets.report_store([path])
        with contextlib.ExitStack() as stack:
            if store_path is not None:
                store = RunStore.open(store_path)
            else:
                store = stack.enter_context(temporary_store())
                _ingest(_discover((path,)), store, quiet=True)
            ctx = Context(store, config)
            if ranks or (which is None and not any(e["kind"] == "horovod_timeline" for e in store.inputs)):
                _slice_ranks(ctx, spec, output, path)
                return
            entry = main_timeline(store, which, path)
            window = step_window(ctx, entry, spec)

            def hosts_of(world: int) -> dict[int, str]:
                return {r: p.host for r, p in ctx.places(entry["id"], world).items()}

            with output_file(output) as f:
                for piece in chrome_trace(store, entry, window, hosts_of):
                    f.write(piece)
    click.echo(f"wrote steps {window.first}-{window.last} of {entry['path']} to {output}", err=True)


def _slice_ranks(ctx: Context, spec: str, output: str, where: str) -> None:
    """``slice`` of the per-rank traces of the run's first job that has them."""
    from analyzer.errors import UsageError
    from analyzer.rank_slicing import pick_steps, rank_chrome_trace

    traces = next((t for j in ctx.jobs().jobs if (t := ctx.rank_traces(j)) is not None and t.traces), None)
    if traces is None:
        raise UsageError(
            f"no Horovod timeline and no per-rank profiler trace with a rank in {where}: nothing has steps"
        )
    first, last = pick_steps(traces, spec)
    with output_file(output) as f:
        for piece in rank_chrome_trace(traces, first, last):
            f.write(piece)
    click.echo(f"wrote steps {first}-{last} of {len(traces.traces)} rank(s) to {output}", err=True)


cli.add_command(serve_command)
cli.add_command(compare_command)
cli.add_command(batch_command)


def main() -> None:
    """Console-script entry point. A failure inside hvd-analyze exits 3 with one message (the
    traceback with HVD_ANALYZE_DEBUG=1), so that CI tells it from a finding (1) or bad input (2)."""
    tune_process()
    try:
        cli(prog_name="hvd-analyze")
    except SystemExit as done:  # click ends every command so, with its exit code
        if done.code is None or isinstance(done.code, int):
            leave(done.code or 0)
        raise
    except KeyboardInterrupt:  # pragma: no cover - interactive
        click.echo("hvd-analyze: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # the last resort: one message and its own exit code
        if os.environ.get("HVD_ANALYZE_DEBUG"):
            raise
        click.echo(
            f"hvd-analyze: internal error: {type(exc).__name__}: {exc}. This is a bug in hvd-analyze, not in "
            "your input: rerun with HVD_ANALYZE_DEBUG=1 for the traceback and report it with the command line.",
            err=True,
        )
        sys.exit(INTERNAL_ERROR)
