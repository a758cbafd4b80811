"""The detector contract.

A detector is a plain object with a ``name``, the ``requires`` tuple of store tables it
reads (perfetto's data checks), and ``detect(ctx) -> list[Finding]``. It computes; it
never prints, plots or logs, and it reads only what :class:`analyzer.context.Context`
hands it (models, tables, evidence offsets, its thresholds in ``ctx.config``), never the
store itself. :func:`analyzer.report.assembly.analyze` skips a detector whose tables
are absent and records why, instead of running it on empty data.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from analyzer.findings import Finding

if TYPE_CHECKING:  # detectors reach the store only through the context's methods
    from collections.abc import Mapping

    from analyzer.config import AnalysisConfig
    from analyzer.context import Context
    from analyzer.jobs import Job
    from analyzer.nccl.model import NcclModel
    from analyzer.nccl.ranks import RankPlace
    from analyzer.ranktraces.model import RankTraceSet
    from analyzer.timeline.lateness import Lateness
    from analyzer.timeline.model import TimelineModel


class TimelineEvidence(Protocol):
    """What a timeline detector may ask beyond its model: its thresholds and the evidence
    the model does not hold. :class:`analyzer.context.Context` reads it from the store; a test
    or a notebook can answer from tables in memory."""

    @property
    def config(self) -> AnalysisConfig: ...

    def first_last_offset(self, model: TimelineModel, lat: Lateness, rank: int) -> int | None: ...

    def first_span_offset(self, model: TimelineModel, step: int) -> int | None: ...

    def lateness_of_steps(self, model: TimelineModel, first: int, last: int) -> Lateness: ...

    def rank_places(self, model: TimelineModel) -> Mapping[int, RankPlace]: ...

    def autotuned(self, model: TimelineModel) -> bool: ...


class Detector(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def code(self) -> str:
        """The finding code it reports (a public contract)."""
        ...

    @property
    def requires(self) -> tuple[str, ...]:
        """The store tables it reads; absent ones skip it with :attr:`why_required`."""
        ...

    @property
    def why_required(self) -> str: ...

    @property
    def reads_rank_statistics(self) -> bool:
        """Whether it reads :attr:`TimelineModel.steady_ranks`, which :func:`analyzer.report.assembly.analyze`
        computes on a thread while the detectors that do not read it run first."""
        ...

    def detect(self, ctx: Context) -> list[Finding]: ...


class TimelineDetector:
    """Base of the detectors that judge one timeline at a time: subclasses set ``name`` and
    implement :meth:`check`."""

    name: str
    code: str
    requires: tuple[str, ...] = ("spans",)
    why_required = "no Horovod timeline was ingested"
    reads_rank_statistics = False

    def detect(self, ctx: Context) -> list[Finding]:
        """:meth:`check` on every timeline; a finding that names ranks also names their hosts when
        the job's NCCL logs say where they ran (:meth:`Context.rank_places`)."""
        jobs = ctx.jobs()
        out = []
        for m in ctx.timelines():
            f = self.check(m, ctx)
            if f is None:
                continue
            job = jobs.job_of(m.input_id)
            places = ctx.rank_places(m) if f.ranks and not f.hosts else {}
            hosts = tuple(sorted({places[r].host for r in f.ranks if r in places}))
            out.append(replace(f, job=job.id if job else None, hosts=f.hosts or hosts))
        return out

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        raise NotImplementedError


class LogDetector:
    """Base of the detectors that judge the NCCL / job logs: subclasses set ``name`` and
    ``requires`` and implement :meth:`check`."""

    name: str
    code: str
    requires: tuple[str, ...] = ("nccl_processes",)
    why_required = "no NCCL_DEBUG=INFO log was ingested"
    reads_rank_statistics = False

    def detect(self, ctx: Context) -> list[Finding]:
        """One check per job with logs: a job's findings rest on its own logs only."""
        return [replace(f, job=job.id) for job in ctx.jobs().jobs if job.logs for f in self.check(ctx.nccl(job))]

    def check(self, model: NcclModel) -> list[Finding]:
        raise NotImplementedError


class RankTracesDetector:
    """Base of the detectors that judge a job's per-rank profiler traces: subclasses set ``name`` and
    ``code`` and implement :meth:`check`, once per job that has traces."""

    name: str
    code: str
    requires: tuple[str, ...] = ("rank_traces", "rank_steps", "rank_collectives")
    why_required = "no per-rank profiler trace was ingested"
    reads_rank_statistics = False

    def detect(self, ctx: Context) -> list[Finding]:
        out = []
        for job in ctx.jobs().jobs:
            traces = ctx.rank_traces(job)
            if traces is not None:
                out += self.check(traces, ctx, job)
        return out

    def check(self, traces: RankTraceSet, ctx: Context, job: Job) -> list[Finding]:
        raise NotImplementedError
