"""Regenerate the generated parts of the docs, or check them (``--check``, used by the tests).

* docs/cli.md: every command's ``--help`` (the README links to it).
* README.md, between ``<!-- thresholds:start -->`` and ``<!-- thresholds:end -->``: every detector
  threshold of :class:`analyzer.config.Thresholds`, its default and its meaning.
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


def threshold_table() -> str:
    """One row per threshold: ``detector group.field``, its default, what it means."""
    rows = ["| threshold | default | meaning |", "|---|---|---|"]
    for group in dataclasses.fields(Thresholds):
        for f in dataclasses.fields(getattr(Thresholds(), group.name)):
            rows.append(f"| `{group.name}.{f.name}` | {_value(f.default)} | {f.metadata['doc']} |")
    return "\n".join(rows) + "\n"


def _between(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        raise RuntimeError(f"README.md has no <!-- {name}:start --> ... <!-- {name}:end --> block")
    return pattern.sub(lambda m: m.group(1) + "\n" + body + "\n" + m.group(2), text)


def generated() -> dict[Path, str]:
    """Every generated file, as it should be."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    readme = _between(readme, "thresholds", threshold_table())
    return {
        ROOT / "README.md": readme,
        ROOT / "docs" / "cli.md": CLI_DOC_HEAD + cli_reference(),
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
