"""Write the reports of every sample, capture and corpus input to a folder, for before/after diffs.

A refactor that should change no behaviour is checked by running this before and after it and
comparing the two folders (``diff -r BEFORE AFTER``)::

    .venv/bin/python scripts/report_snapshot.py /tmp/before
    ... change the code ...
    .venv/bin/python scripts/report_snapshot.py /tmp/after && diff -r /tmp/before /tmp/after

Each input set (a sample or capture folder, a corpus run folder or file) is reported through the
real command line, in this process, as JSON, text and Markdown. What differs from one run to the
next by design is blanked: the temporary store's path and creation times.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner

from analyzer.cli import cli

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
FORMATS = ("json", "text", "md")
_VOLATILE = [
    (re.compile(r"/tmp/[^\"'\s)]*"), "<tmp>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
]


def input_sets() -> Iterator[tuple[str, Path]]:
    """(name, path) of every input set: samples and captures, then the corpus when present."""
    for group in ("synthetic", "captured"):
        for folder in sorted((ROOT / "sample_traces" / group).iterdir()):
            if folder.is_dir():
                yield f"{group}.{folder.name}", folder
    if not CORPUS.is_dir():
        return
    for group in sorted(CORPUS.iterdir()):
        if not group.is_dir():
            continue
        for item in sorted(group.iterdir()):
            if item.name in ("README.md", "EXPECTED.md", "SOURCES.md", "expected.json", "build"):
                continue
            yield f"{group.name}.{item.name}", item


def snapshot(out: Path, only: str | None = None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    runner = CliRunner()
    count = 0
    for name, path in input_sets():
        if only and only not in name:
            continue
        for fmt in FORMATS:
            with tempfile.TemporaryDirectory() as tmp:
                target = Path(tmp) / f"report.{fmt}"
                result = runner.invoke(cli, ["report", "-q", "-f", fmt, "-o", str(target), str(path)])
                text = target.read_text(encoding="utf-8") if target.exists() else ""
            text += f"\n--- exit {result.exit_code}\n{result.output}"
            for pattern, blank in _VOLATILE:
                text = pattern.sub(blank, text)
            (out / f"{name}.{fmt}").write_text(text, encoding="utf-8")
        count += 1
        print(f"{name}: exit {result.exit_code}", file=sys.stderr)
    return count


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: report_snapshot.py OUT_DIR [NAME_SUBSTRING]")
    n = snapshot(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) == 3 else None)
    print(f"{n} input sets reported to {sys.argv[1]}", file=sys.stderr)
