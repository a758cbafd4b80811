"""``hvd-analyze batch RUNS_DIR -o OUT``: one report per run and a fleet summary (:mod:`analyzer.fleet`).

Exit codes: 0 every run analysed; 1 some run failed on its input, or a finding at or above ``--fail-on``;
2 no run could be analysed, or usage; 3 a run failed by a bug in hvd-analyze (its report is missing,
every other run's and the fleet summary are written). ``--allow-failures``: 0 when at least one run was
analysed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from analyzer.cli.options import INTERNAL_ERROR, budget_option, errors, scale_options
from analyzer.config import parse_size


@click.command()
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
@scale_options
@budget_option
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
    from analyzer.store.parallel import executor_from_options

    with errors(out_dir):
        budget = parse_size(memory_budget, "--memory-budget")
        fleet = run_batch(
            runs_dir,
            out_dir,
            executor_from_options(jobs, scheduler, dask_workers),
            keep_stores=keep_stores,
            memory_budget=budget,
        )
    left_out = f"; {len(fleet['not_runs'])} entry(ies) not a run, left out" if fleet["not_runs"] else ""
    click.echo(
        f"{fleet['runs']} runs: {fleet['analysed']} analysed, {len(fleet['failed'])} failed; "
        f"{len(fleet['with_findings'])} with findings at warning or above, {len(fleet['socket_fallback'])} "
        f"socket fallback, {len(fleet['stragglers'])} with stragglers{left_out}; see {Path(out_dir) / 'fleet.md'}"
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
        # a bug in hvd-analyze (3) is told from a run's bad input (1), as `report` does
        sys.exit(INTERNAL_ERROR if any(r["internal"] for r in fleet["failed"]) else 1)
    if fail_on:
        from analyzer.findings import Severity

        tripped = [
            f"{r['run']} ({r['worst']})"
            for r in fleet["with_findings"]
            if r["worst"] is not None and Severity.parse(r["worst"]) >= Severity.parse(fail_on)
        ]
        if tripped:
            click.echo(f"hvd-analyze: --fail-on {fail_on}: {len(tripped)} run(s): {', '.join(tripped[:8])}", err=True)
            sys.exit(1)
