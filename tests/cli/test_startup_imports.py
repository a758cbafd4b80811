"""What a command imports: start-up is what a user waits for on every run, so ``--help``, a small
``report`` and an ``ingest`` load only what they use (checked in a fresh interpreter each)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

HEAVY = ("pyarrow", "pandas", "numba", "scipy", "ruptures", "plotly", "dash", "dask", "waitress")


@pytest.mark.parametrize("args", [["--help"], ["report", "--help"], ["slice", "--help"], ["serve", "--help"]])
def test_help_imports_no_heavy_library(args: list[str]) -> None:
    """Start-up is what a user waits for on every command: --help loads none of the analysis stack.
    (These checks run the click group, not ``main``, which leaves by ``os._exit`` before any print.)"""
    script = (
        "import sys\nfrom analyzer.cli import cli\nsys.argv = ['hvd-analyze', *sys.argv[1:]]\n"
        "try:\n    cli(prog_name='hvd-analyze')\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    res = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True)
    assert res.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    ("sample", "loaded"),
    [
        ("straggler_nocache", ["pandas", "pyarrow"]),  # 29 steady steps: too few to search for a slowdown
        ("healthy_np2", ["pandas", "pyarrow"]),  # 39: the change-point search runs, on its own code
    ],
)
def test_a_small_report_imports_only_what_it_uses(sample: str, loaded: list[str]) -> None:
    """``report -f json`` of a small timeline: the tables (pyarrow, pandas); never scipy or ruptures
    (the change-point search and its test are the analyzer's own), the app (plotly, dash,
    waitress), Dask, or a compiler at run time (numba); nor Parquet (20 ms): its temporary store
    is held in memory."""
    script = (
        "import sys\nfrom analyzer.cli import cli\n"
        "sys.argv = ['hvd-analyze', 'report', '-f', 'json', '-o', '/dev/null', sys.argv[1]]\n"
        "try:\n    cli(prog_name='hvd-analyze')\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "print('pyarrow.parquet' in sys.modules)\n"
    )
    path = ROOT / "sample_traces" / "captured" / sample
    res = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True)
    assert res.stdout.strip().splitlines()[-2:] == [str(loaded), "False"]


#: what an ingest of a timeline never needs: Arrow's compute functions (40 ms to import), the
#: renderers and findings (75 ms), the log parser (30 ms), the process pool (20 ms)
NOT_FOR_INGEST = (
    "pyarrow.compute",
    "analyzer.render.base",
    "analyzer.findings",
    "parsers.nccl.parser",
    "concurrent.futures.process",
)


def test_ingest_of_a_timeline_imports_only_what_it_uses(tmp_path: Path) -> None:
    """``ingest`` builds its Arrow tables from buffers (parsers.arrow): pyarrow's ``pa.array`` would
    import pandas (0.17 s) only to ask whether its input is a pandas object, and ``dictionary_encode``
    or a cast to the schema would import Arrow's compute module."""
    script = (
        "import sys\nfrom analyzer.cli import cli\n"
        "sys.argv = ['hvd-analyze', 'ingest', sys.argv[1], '-o', sys.argv[2], '-q']\n"
        "try:\n    cli(prog_name='hvd-analyze')\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        f"print(sorted(m for m in {NOT_FOR_INGEST!r} if m in sys.modules))\n"
    )
    path = ROOT / "sample_traces" / "captured" / "healthy_np2"
    res = subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "store")], capture_output=True, text=True, check=True
    )
    assert res.stdout.strip().splitlines()[-2:] == ["['pyarrow']", "[]"]
    assert (tmp_path / "store" / "manifest.json").is_file()


def test_ingest_of_an_nccl_log_does_not_import_pandas(tmp_path: Path) -> None:
    """The log parser's tables are built from buffers too (``parsers.arrow.column``): a worker that ingests
    logs never imports pandas (~50 MB and ~0.45 s a process)."""
    script = (
        "import sys\nfrom analyzer.cli import cli\n"
        "sys.argv = ['hvd-analyze', 'ingest', sys.argv[1], '-o', sys.argv[2], '-q']\n"
        "try:\n    cli(prog_name='hvd-analyze')\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pandas', 'parsers.nccl.parser') if m in sys.modules))\n"
    )
    path = ROOT / "sample_traces" / "synthetic" / "nccl_init_failure" / "job.log"
    res = subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "store")], capture_output=True, text=True, check=True
    )
    assert res.stdout.strip().splitlines()[-1] == "['parsers.nccl.parser']"  # the log was parsed here
    assert (tmp_path / "store" / "manifest.json").is_file()


def test_the_collector_skips_the_imports_objects() -> None:
    """A small ``report`` ran 178 garbage collections, 170 of them over the objects its imports make
    (0.045 s of 0.7 s). ``main`` raises the collector's threshold until the command has loaded its
    modules, then freezes what they made and puts Python's thresholds back."""
    script = (
        "import gc, sys\nruns = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(phase) if phase == 'stop' else None)\n"
        "from analyzer.cli import cli\nfrom analyzer.cli.options import DEFAULT_GC_THRESHOLDS, tune_process\n"
        "tune_process()\n"
        "sys.argv = ['hvd-analyze', 'report', '-f', 'json', '-o', '/dev/null', sys.argv[1]]\n"
        "try:\n    cli(prog_name='hvd-analyze')\nexcept SystemExit:\n    pass\n"
        "print(len(runs), gc.get_threshold() == DEFAULT_GC_THRESHOLDS, gc.get_freeze_count() > 10_000)\n"
    )
    path = ROOT / "sample_traces" / "captured" / "straggler_nocache"
    res = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True)
    collections, restored, frozen = res.stdout.strip().splitlines()[-1].split()
    assert int(collections) < 60
    assert (restored, frozen) == ("True", "True")
