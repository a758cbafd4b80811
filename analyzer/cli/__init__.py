"""The ``hvd-analyze`` command line: the composition root, where errors become messages and exit codes.

``main`` is the console script; ``cli`` the click group (``ingest``, ``report``, ``slice``, ``compare``,
``batch``, ``serve``). One module per command family (:mod:`analyzer.cli.main`: ingest, report and slice;
:mod:`analyzer.cli.compare`, :mod:`analyzer.cli.batch`, :mod:`analyzer.cli.serve`) and the options and
process set-up they share (:mod:`analyzer.cli.options`). Only ``serve`` imports the web app, inside
the command.
"""

from __future__ import annotations

from analyzer.cli.main import cli, main

__all__ = ["cli", "main"]
