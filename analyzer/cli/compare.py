"""``hvd-analyze compare BEFORE AFTER``: did the change help, and why (:mod:`analyzer.compare`).

Exit codes: 0 compared; 1 with ``--fail-on-regression`` when AFTER is significantly slower or has a
new finding at warning or above; 2 usage or input error.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from analyzer.cli.options import budget_option, errors, output_file
from analyzer.config import parse_size
from analyzer.errors import UsageError
from analyzer.render import format_for

if TYPE_CHECKING:
    from analyzer.compare.build import Side
    from analyzer.compare.types import CompareDocument
    from analyzer.config import AnalysisConfig

FORMATS = ("text", "md", "json", "html")
_EXTENSIONS = {".txt": "text", ".md": "md", ".markdown": "md", ".json": "json", ".html": "html", ".htm": "html"}


def _settings(values: tuple[str, ...], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        name, sep, value = v.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"{option} {v!r}: expected NAME=VALUE, e.g. HOROVOD_FUSION_THRESHOLD=67108864")
        out[name.strip()] = value.strip()
    return out


def _side(
    stack: contextlib.ExitStack,
    path: str,
    label: str,
    config: AnalysisConfig,
    job: str | None,
    declared: dict[str, str],
) -> Side:
    from analyzer import targets
    from analyzer.compare.sides import side_of
    from analyzer.context import Context
    from analyzer.store.discovery import discover
    from analyzer.store.run_store import RunStore, temporary_store

    if not Path(path).exists():
        raise UsageError(f"{label} {path}: no such file or folder")
    store_path = targets.report_store([path])
    if store_path is not None:
        store = RunStore.open(store_path)
        if not store.inputs:
            raise targets.nothing_to_analyse([path], [], store_path)
    else:
        store = stack.enter_context(temporary_store())
        inputs, skipped = discover([path])
        store.ingest(inputs, skipped)
        if not store.inputs:
            raise targets.nothing_to_analyse([path], skipped)
    return side_of(Context(store, config), label, path, job, declared)


def render(doc: CompareDocument, fmt: str) -> str:
    from analyzer.render.compare import render_json, render_markdown, render_text
    from analyzer.render.compare_html import render_html

    renderers: dict[str, Callable[[CompareDocument], str]] = {
        "text": render_text,
        "md": render_markdown,
        "json": render_json,
        "html": render_html,
    }
    return renderers[fmt](doc)


@click.command()
@click.argument("before", type=click.Path())
@click.argument("after", type=click.Path())
@click.option(
    "-f", "--format", "fmt", type=click.Choice(FORMATS), default=None, help="Format (default: from -o, else text)."
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write here ('-': standard output)."
)
@click.option(
    "--before-job", default=None, metavar="NAME", help="The job of BEFORE to compare (default: its main one)."
)
@click.option("--after-job", default=None, metavar="NAME", help="The job of AFTER to compare (default: its main one).")
@click.option(
    "--before-set",
    multiple=True,
    metavar="NAME=VALUE",
    help="A setting BEFORE ran with that its evidence does not show (repeatable).",
)
@click.option(
    "--after-set",
    multiple=True,
    metavar="NAME=VALUE",
    help="A setting AFTER ran with that its evidence does not show, e.g. the fix you applied (repeatable).",
)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 1 when AFTER is significantly slower, or has a new finding at warning or above.",
)
@click.option(
    "--min-effect",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    metavar="DELTA",
    help="The smallest |Cliff's delta| called a change (default 0.474, a large effect; 0.33: a medium one, "
    "for runs on quiet machines).",
)
@budget_option
def compare(
    before: str,
    after: str,
    fmt: str | None,
    output: str | None,
    before_job: str | None,
    after_job: str | None,
    before_set: tuple[str, ...],
    after_set: tuple[str, ...],
    fail_on_regression: bool,
    min_effect: float | None,
    memory_budget: str,
) -> None:
    """Compare two runs (stores, run folders or files): the step time's change and whether it is more than
    noise, where it comes from (phases, fusion, cycle, ranks, NCCL), the settings that changed, findings
    resolved or new, and whether BEFORE's suggested fixes did what they predicted."""
    from analyzer.compare.build import compare_sides
    from analyzer.config import AnalysisConfig

    with errors(output if output and output != "-" else "the temporary store (TMPDIR)"):
        chosen = format_for(fmt, output, _EXTENSIONS)
        config = AnalysisConfig(memory_budget=parse_size(memory_budget, "--memory-budget"))
        declared_b, declared_a = _settings(before_set, "--before-set"), _settings(after_set, "--after-set")
        with contextlib.ExitStack() as stack:
            side_b = _side(stack, before, "BEFORE", config, before_job, declared_b)
            side_a = _side(stack, after, "AFTER", config, after_job, declared_a)
        rule = config.thresholds.compare
        doc = compare_sides(side_b, side_a, rule if min_effect is None else replace(rule, min_effect=min_effect))
        text = render(doc, chosen)
        if output and output != "-":
            with output_file(output) as f:
                f.write(text.encode("utf-8"))
        else:
            click.echo(text, nl=False)
    if fail_on_regression:
        _fail_on_regression(doc)


def _fail_on_regression(doc: CompareDocument) -> None:
    reasons = []
    if doc["steps"]["direction"] == "slower":
        reasons.append("the step time is significantly slower")
    new = [f["key"] for f in doc["findings"] if f["change"] == "new" and f["severity_after"] in ("warning", "critical")]
    if new:
        reasons.append("new finding(s): " + ", ".join(new))
    if reasons:
        click.echo(f"hvd-analyze: --fail-on-regression: {'; '.join(reasons)}", err=True)
        sys.exit(1)
