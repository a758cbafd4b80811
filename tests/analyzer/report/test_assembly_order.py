"""The detectors that read the ranks' statistics run after the others and after the timeline
sections (which are built while those statistics are computed on a thread), yet the report lists
findings and skipped detectors in the detectors' own order."""

from __future__ import annotations

from typing import Any

import pytest

from analyzer.config import AnalysisConfig
from analyzer.context import Context
from analyzer.findings import Finding, Severity
from analyzer.report import assembly
from analyzer.report.assembly import analyze_in
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from tests.conftest import ROOT

SAMPLE = ROOT / "sample_traces" / "synthetic" / "straggler_nocache"


class Probe:
    """A detector that records when it ran and reports one finding of the same weight as every other."""

    why_required = "no Horovod timeline was ingested"

    def __init__(self, name: str, requires: tuple[str, ...], ranks: bool, ran: list[str]) -> None:
        self.name, self.code, self.requires, self.reads_rank_statistics, self._ran = name, name, requires, ranks, ran

    def detect(self, ctx: Context) -> list[Finding]:
        self._ran.append(self.name)
        if self.reads_rank_statistics:  # the thread's result, as the straggler detector reads it
            assert all(m.steady_ranks for m in ctx.timelines())
        return [Finding(self.code, Severity.WARNING, self.name, "", self.name)]


def test_findings_keep_the_detectors_order_whatever_order_they_run_in(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    section = assembly.timeline_section

    def recorded(*args: Any) -> Any:
        ran.append("section")
        return section(*args)

    monkeypatch.setattr(assembly, "timeline_section", recorded)
    probes = [
        Probe("reads_ranks", ("spans", "ticks"), True, ran),
        Probe("needs_logs", ("nccl_processes",), False, ran),  # skipped: no log here
        Probe("plain", ("spans",), False, ran),
        Probe("also_reads_ranks", ("spans",), True, ran),
        Probe("also_needs_logs", ("nccl_errors",), False, ran),
    ]
    with temporary_store() as store:
        store.ingest(*discover([SAMPLE]))
        report = analyze_in(Context(store, AnalysisConfig()), probes)
    assert ran == ["plain", "section", "reads_ranks", "also_reads_ranks"]
    assert [f.detector for f in report.findings] == ["reads_ranks", "plain", "also_reads_ranks"]
    assert [s.detector for s in report.skipped] == ["needs_logs", "also_needs_logs"]
