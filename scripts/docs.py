"""Regenerate the generated parts of the docs, or check them (``--check``, used by the tests).

* docs/cli.md: every command's ``--help`` (the README links to it).
* docs/detectors.md: every finding code (:mod:`analyzer.detectors.catalogue`): its severities, signal,
  what to do and its thresholds, with their defaults read from :class:`analyzer.config.Thresholds`;
  then every threshold, its default and its meaning.
* README.md, between ``<!-- detectors:start -->`` and ``<!-- detectors:end -->``: the codes, a line
  each, linking to docs/detectors.md.
* docs/schema.md: the store's tables (:mod:`parsers.schema`).
* analyzer/report/report.schema.json: the report's JSON Schema (:mod:`analyzer.report.json_schema`).
* analyzer/compare/compare.schema.json: the JSON Schema of ``compare -f json``.

Usage: ``python scripts/docs.py`` (write) or ``python scripts/docs.py --check`` (exit 1 and name
what differs).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

from click.testing import CliRunner

from analyzer.cli import cli
from analyzer.config import Thresholds
from analyzer.detectors.catalogue import CODES, CodeDoc, filled
from analyzer.report.json_schema import compare_schema, report_schema
from parsers.schema import render_markdown

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 100


def cli_reference() -> str:
    """The ``--help`` of the command group and of each command, as Markdown."""
    runner = CliRunner()
    out = []
    for args in ([], *([name] for name in cli.commands)):
        result = runner.invoke(cli, [*args, "--help"], prog_name="hvd-analyze", terminal_width=WIDTH)
        if result.exit_code != 0:
            raise RuntimeError(f"hvd-analyze {' '.join(args)} --help failed: {result.output}")
        out += [
            f"### `hvd-analyze{''.join(' ' + a for a in args)}`" if args else "### `hvd-analyze`",
            "",
            "```text",
            result.output.rstrip(),
            "```",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


CLI_DOC_HEAD = """# Command reference

Each `hvd-analyze` command's `--help`, generated from the code (`python scripts/docs.py`; a test fails
when it is stale). The [README](../README.md) says what the commands are for and shows them at work.

"""


def _value(v: object) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def threshold_table(groups: tuple[str, ...] | None = None) -> str:
    """One row per threshold (of ``groups``, else of all): ``group.field``, its default, what it means."""
    rows = ["| threshold | default | meaning |", "|---|---|---|"]
    for group in dataclasses.fields(Thresholds):
        if groups is not None and group.name not in groups:
            continue
        for f in dataclasses.fields(getattr(Thresholds(), group.name)):
            rows.append(f"| `{group.name}.{f.name}` | {_value(f.default)} | {f.metadata['doc']} |")
    return "\n".join(rows) + "\n"


def _anchor(code: str) -> str:
    """The GitHub anchor of the heading `` `code` ``: its dots dropped."""
    return code.replace(".", "")


DETECTORS_HEAD = """# Finding codes

Generated from `analyzer/detectors/catalogue.py` and `analyzer/config.py` (`python scripts/docs.py`; a
test fails when it is stale). Finding codes are a stable public contract: CI gates (`--fail-on`) and
dashboards key on them. Every number below is the default of a threshold in `AnalysisConfig.thresholds`.

A detector whose input is absent is listed as skipped with what was missing (no timeline; logs without
NCCL records; no communicator init lines). Logs that were ingested but had nothing of a kind to report
(no WARN, no echoed `NCCL_*` setting, no watchdog timeout) are a result, not a skip: that check passed.
Findings of one job that explain each other say so (a long QUEUE next to a socket fallback names it and
its fix). Everything before a loss is still analysed. Impacts are what-if estimates from the per-step
table (the step if the straggler were as early as the on-time ranks, if the exposed `QUEUE` time
vanished, if fusion produced the expected batch count), each stated with its assumptions; a
low-confidence one carries no advice.

"""


def detectors_reference() -> str:
    """docs/detectors.md: each code's section, then the whole threshold table."""
    t = Thresholds()
    out = [DETECTORS_HEAD.rstrip() + "\n"]
    for c in CODES:
        out += [
            f"## `{c.code}`",
            "",
            f"{c.summary[0].upper()}{c.summary[1:]}.",
            "",
            f"- **Severity:** {filled(c.severity, t)}",
            f"- **Signal:** {filled(c.signal, t)}",
            f"- **What to do:** {filled(c.action, t)}",
            "",
        ]
        if c.thresholds:
            out += [threshold_table(c.thresholds)]
    out += ["## Every threshold", "", threshold_table()]
    return "\n".join(out)


def detector_list(codes: tuple[CodeDoc, ...] = CODES) -> str:
    """The README's list: each code, a line, linked to its section of docs/detectors.md."""
    return "\n".join(f"- [`{c.code}`](docs/detectors.md#{_anchor(c.code)}): {c.summary}" for c in codes) + "\n"


def _between(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        raise RuntimeError(f"README.md has no <!-- {name}:start --> ... <!-- {name}:end --> block")
    return pattern.sub(lambda m: m.group(1) + "\n" + body + "\n" + m.group(2), text)


def generated() -> dict[Path, str]:
    """Every generated file, as it should be."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    readme = _between(readme, "detectors", detector_list())
    return {
        ROOT / "README.md": readme,
        ROOT / "docs" / "cli.md": CLI_DOC_HEAD + cli_reference(),
        ROOT / "docs" / "detectors.md": detectors_reference(),
        ROOT / "docs" / "schema.md": render_markdown(),
        ROOT / "analyzer" / "report" / "report.schema.json": json.dumps(report_schema(), indent=1) + "\n",
        ROOT / "analyzer" / "compare" / "compare.schema.json": json.dumps(compare_schema(), indent=1) + "\n",
    }


def main(argv: list[str]) -> int:
    stale = []
    for path, text in generated().items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        if "--check" in argv:
            stale.append(path.relative_to(ROOT).as_posix())
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale: " + ", ".join(stale) + " (run: python scripts/docs.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
