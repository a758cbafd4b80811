"""What an analysis reads: the run store, the settings, and the models built from the store once.

Detectors, the report sections and the web app get a :class:`Context`; they never read the
store themselves. The timeline models come from :mod:`analyzer.timeline.load` (whole, or
through a window within ``config.memory_budget``), the NCCL model from
:mod:`analyzer.nccl.model` (from the store's log tables). What evidence needs beyond a model (the file offsets of rank
ticks, a step's first byte, the ticks of a stretch a window left out) is asked of the context,
which reads it through the same loader.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from analyzer.config import AnalysisConfig
from analyzer.jobs import Job, JobPlan, LogIdentity, plan_jobs
from analyzer.nccl.model import LOG_TABLES, NcclModel, nccl_model_of
from analyzer.nccl.ranks import RankPlace, rank_places
from analyzer.ranktraces.model import RankTraceSet, TracesJudged, judged
from analyzer.store.manifest import ManifestEntry
from analyzer.store.run_store import RunStore
from analyzer.timeline import load
from analyzer.timeline.lateness import NO_OFFSET, Lateness
from analyzer.timeline.model import TimelineModel


@dataclass
class Context:
    """The store (its tables are cached there), the settings and the models, built on first use."""

    store: RunStore
    config: AnalysisConfig = field(default_factory=AnalysisConfig)
    _timelines: list[TimelineModel] | None = field(default=None, repr=False)
    _nccl: dict[str | None, NcclModel] = field(default_factory=dict, repr=False)
    _jobs: JobPlan | None = field(default=None, repr=False)
    _offsets: dict[tuple[str, int, bytes], np.ndarray] = field(default_factory=dict, repr=False)
    _places: dict[tuple[str, int], dict[int, RankPlace]] = field(default_factory=dict, repr=False)
    _traces: dict[str, RankTraceSet] = field(default_factory=dict, repr=False)
    _judged: dict[str, TracesJudged] = field(default_factory=dict, repr=False)
    _pool: ThreadPoolExecutor | None = field(default=None, repr=False)

    def executor(self) -> ThreadPoolExecutor:
        """The threads the analysis runs its GIL-free passes on beside each other (a timeline model's
        tick passes while its span tables are built, the ranks' statistics while the report's other
        sections are): two, made on first use, gone with the context."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(2, thread_name_prefix="hvd-analyze-analysis")
        return self._pool

    def table(self, name: str) -> pa.Table:
        return self.store.table(name)

    @property
    def held_bytes(self) -> int:
        """The store's parts held in memory (``report FILE``): they stay there beside the analysis,
        within the same budget (8 M spans held took 1.6 GB of 4 GB)."""
        return self.store.held.nbytes if self.store.held is not None else 0

    def input_entry(self, input_id: str) -> ManifestEntry:
        """The manifest entry of an input (path, hash, timeline facts, ...)."""
        return next(e for e in self.store.inputs if e["id"] == input_id)

    def jobs(self) -> JobPlan:
        """The run's jobs (:mod:`analyzer.jobs`): which inputs belong together."""
        if self._jobs is None:
            self._jobs = plan_jobs(self.store.inputs, self._log_identities())
        return self._jobs

    def _log_identities(self) -> dict[str, LogIdentity]:
        """What each log says of its job (:class:`analyzer.jobs.LogIdentity`), from its processes."""
        if not self.store.has_table("nccl_processes"):
            return {}
        procs = self.store.table("nccl_processes").select(["input_id", "host", "version"]).to_pydict()
        hosts: dict[str, set[str]] = {}
        versions: dict[str, set[str]] = {}
        for i, h, v in zip(procs["input_id"], procs["host"], procs["version"], strict=True):
            if h:
                hosts.setdefault(str(i), set()).add(h)
            if v:
                versions.setdefault(str(i), set()).add(v)
        sizes: dict[str, set[int]] = {}
        if self.store.has_table("nccl_comm_ranks"):
            comms = self.store.table("nccl_comm_ranks").select(["input_id", "nranks"]).to_pydict()
            for i, n in zip(comms["input_id"], comms["nranks"], strict=True):
                if n:
                    sizes.setdefault(str(i), set()).add(int(n))
        return {
            i: LogIdentity(frozenset(hosts.get(i, ())), frozenset(sizes.get(i, ())), frozenset(versions.get(i, ())))
            for i in set(hosts) | set(sizes) | set(versions)
        }

    def timelines(self, job: Job | None = None) -> list[TimelineModel]:
        """Every timeline input (of ``job``), analysed once (:func:`analyzer.timeline.load.analysed_model`)."""
        if self._timelines is None:
            self._timelines = [
                load.analysed_model(
                    self.store, e, self.config.memory_budget, self.config.thresholds, self.executor(), self.held_bytes
                )
                for e in self.store.inputs
                if e["kind"] == "horovod_timeline"
            ]
        return self._timelines if job is None else [m for m in self._timelines if m.input_id in job.timelines]

    def nccl(self, job: Job | None = None) -> NcclModel:
        """The NCCL / job logs of the store, or of ``job`` (:func:`analyzer.nccl.model.nccl_model_of`), read once."""
        logs = {e["id"] for e in self.store.inputs if e["kind"] == "job_log"}
        if job is not None and set(job.logs) == logs:
            job = None  # the job holds every log: the run's model, built once for the report and the detectors
        key = None if job is None else job.id
        if key not in self._nccl:
            ids = None if job is None else pa.array(job.logs, pa.string())
            self._nccl[key] = nccl_model_of(
                {name: _rows_of(self.store.table(name), ids) for name in LOG_TABLES},
                {e["id"]: e["path"] for e in self.store.inputs},
            )
        return self._nccl[key]

    def rank_traces(self, job: Job) -> RankTraceSet | None:
        """``job``'s per-rank profiler traces (:func:`analyzer.ranktraces.load.rank_trace_set`), read once;
        None when it has none."""
        if not job.traces or not self.store.has_table("rank_traces"):
            return None
        if job.id not in self._traces:
            from analyzer.ranktraces.load import TABLES, rank_trace_set

            tables = {name: self.store.table(name) for name in TABLES}
            paths = {e["id"]: e["path"] for e in self.store.inputs}
            traces = rank_trace_set(tables, paths, job.traces)
            world = traces.world_size or (int(traces.ranks.max()) + 1 if len(traces.ranks) else 0)
            if job.logs and world and any(t.host is None for t in traces.traces):  # the NCCL logs say where
                traces = traces.with_hosts({r: p.host for r, p in rank_places(self.nccl(job), world).items()})
            self._traces[job.id] = traces
        return self._traces[job.id]

    def traces_judged(self, job: Job) -> TracesJudged | None:
        """Who stands out in ``job``'s per-rank traces (:func:`analyzer.ranktraces.model.judged`), judged once
        for the detector and the report's section; None without traces."""
        traces = self.rank_traces(job)
        if traces is None:
            return None
        if job.id not in self._judged:
            self._judged[job.id] = judged(traces, self.config.thresholds.straggler)
        return self._judged[job.id]

    def rank_places(self, model: TimelineModel) -> dict[int, RankPlace]:
        """The host and process of each rank of ``model``'s job, from the job's NCCL logs
        (:func:`analyzer.nccl.ranks.rank_places`); empty without logs or rank ticks."""
        world = int(model.lateness.rank.max()) + 1 if len(model.lateness) else 0
        return self.places(model.input_id, world)

    def autotuned(self, model: TimelineModel) -> bool:
        """Whether ``model``'s job ran Horovod's autotuner (its autotune log is among the job's logs)."""
        job = self.jobs().job_of(model.input_id)
        return bool(job is not None and job.logs and not self.nccl(job).tables["autotune"].empty)

    def places(self, input_id: str, world: int) -> dict[int, RankPlace]:
        """:meth:`rank_places` of timeline ``input_id`` with ``world`` ranks, read once (the detectors,
        the hosts of their findings and the report's rank table all ask)."""
        job = self.jobs().job_of(input_id)
        if job is None or not job.logs or not world:
            return {}
        if (input_id, world) not in self._places:
            self._places[input_id, world] = rank_places(self.nccl(job), world)
        return self._places[input_id, world]

    def first_last_offset(self, model: TimelineModel, lat: Lateness, rank: int) -> int | None:
        """File offset of the earliest tick of ``lat`` (a view of ``model``'s ticks) in which
        ``rank`` was (among) the last ready; one pass over the ticks for every rank of a view."""
        # views of one Lateness share its arrays (lut): the key is the view's negotiations of those arrays
        key = (model.input_id, id(lat.lut), hashlib.blake2b(np.packbits(lat.keep).tobytes(), digest_size=16).digest())
        if key not in self._offsets:
            self._offsets[key] = load.tick_offsets(self.store, model, lat)
        out = self._offsets[key]
        return int(out[rank]) if 0 <= rank < len(out) and out[rank] != NO_OFFSET else None

    def first_span_offset(self, model: TimelineModel, step: int) -> int | None:
        """The file offset of the first span of step ``step`` of ``model``'s run."""
        return load.first_span_offset(self.store, model, step)

    def lateness_of_steps(self, model: TimelineModel, first: int, last: int) -> Lateness:
        """Rank lateness of steps ``first..last`` of the run, beyond a windowed model's detail
        (:func:`analyzer.timeline.load.lateness_of_steps`)."""
        return load.lateness_of_steps(
            self.store, self.input_entry(model.input_id), model, first, last, self.config.memory_budget, self.held_bytes
        )


def _rows_of(table: pa.Table, ids: pa.Array | None) -> pa.Table:
    """The rows of ``table`` whose input is one of ``ids`` (all rows for None)."""
    if ids is None or table.num_rows == 0:
        return table
    return table.filter(pc.is_in(table["input_id"].cast(pa.string()), value_set=ids))
