"""The ranks of one job as their own profiler traces show them: steps, collectives matched across ranks.

Built from the store's ``rank_traces``, ``rank_steps`` and ``rank_collectives`` rows of a job's traces
(:func:`analyzer.ranktraces.load.rank_trace_set`); no I/O here.

- **Matching.** A collective is the same on every rank by its process group and sequence number where
  the trace has them (newer PyTorch), else by its step, group and place among the rank's collectives
  of that step (Gloo runs a group's collectives in the order asked; NCCL in stream order).
- **Waits, on one clock each.** A collective ends on every rank at about the same moment, when the
  last rank has joined it; each rank's duration is its own wait plus the transfer. So the rank that
  waits least is the one everyone waited for, and how much later a rank was than the first-ready one
  is the first-ready rank's duration minus its own: measured on each rank's own clock, so it holds
  across hosts without synchronised clocks. These readings feed the one lateness model
  (:func:`analyzer.lateness.from_readings`), as the timeline's ticks do.
- **Clocks.** Each host's offset is the median, over matched collectives, of how far its ranks' ends
  are from the reference rank's (its epoch time: ``baseTimeNanoseconds`` + ``ts``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np

from analyzer.config import StragglerThresholds
from analyzer.lateness import Judgement, StepLateness, from_readings, judge

#: fewer profiled steps than this are too few to tell a straggler from noise: nobody is judged
WAIT_SOURCES = frozenset({"nccl_kernel", "gloo", "horovod_sync"})
SOURCE_WORDS = {
    "nccl_kernel": "NCCL kernels' durations in each rank's trace",
    "gloo": "Gloo collectives' durations in each rank's trace",
    "horovod_sync": "Horovod's synchronize() (the outer Optimizer.step) in each rank's trace",
    "enqueue": "CPU-side NCCL calls (no wait recorded)",
    "none": "no collective",
}


@dataclass(frozen=True, slots=True)
class RankTrace:
    """One rank's trace: who wrote it, where, and what it holds."""

    rank: int
    input_id: str
    file: str
    host: str | None
    pid: int | None
    world_size: int | None
    backend: str | None
    source: str
    base_us: float  # add to the trace's ts for epoch microseconds (0: ts are epoch already)


@dataclass(frozen=True, eq=False)
class Collectives:
    """Every rank's collectives, column-wise (rows of ranks with a known rank only)."""

    rank: np.ndarray  # int64
    step: np.ndarray  # int64, -1 outside the profiled steps
    key: np.ndarray  # int64: the collective's identity across ranks (dense)
    op: np.ndarray  # object (str)
    start_us: np.ndarray  # int64, own clock
    dur_us: np.ndarray  # int64
    waits: bool  # the durations include the wait for the last rank


@dataclass(frozen=True, eq=False)
class RankTraceSet:
    """A job's per-rank traces. ``steps_us``: step time per step (rows, :attr:`steps`) and rank (columns,
    :attr:`ranks`), NaN where a rank has no such step; likewise ``data_us``, ``h2d_us``, ``comm_us``."""

    traces: tuple[RankTrace, ...]
    ranks: np.ndarray  # int64 ascending
    steps: np.ndarray  # int64 ascending
    step_us: np.ndarray  # (S, R)
    data_us: np.ndarray
    h2d_us: np.ndarray
    comm_us: np.ndarray
    start_us: np.ndarray  # (S, R): each step's start on its rank's own clock
    collectives: Collectives
    source: str
    duplicates: tuple[tuple[int, str], ...] = ()  # (rank, file) traced twice over the same steps: left out
    unranked: tuple[str, ...] = ()  # files whose rank is unknown
    other_jobs: tuple[str, ...] = ()  # files of another world size in the same folder: another job's, left out

    @property
    def world_size(self) -> int | None:
        sizes = [t.world_size for t in self.traces if t.world_size]
        return max(sizes) if sizes else None

    @property
    def missing_ranks(self) -> tuple[int, ...]:
        """Ranks of the job's world that have no trace here."""
        world = self.world_size
        if not world:
            return ()
        have = set(int(r) for r in self.ranks)
        return tuple(r for r in range(world) if r not in have)

    def with_hosts(self, hosts: dict[int, str]) -> RankTraceSet:
        """This set with the host of each rank whose trace names none taken from ``hosts`` (the job's NCCL logs)."""
        if not any(t.host is None and t.rank in hosts for t in self.traces):
            return self
        traces = tuple(replace(t, host=hosts[t.rank]) if t.host is None and t.rank in hosts else t for t in self.traces)
        return replace(self, traces=traces)

    def trace_of(self, rank: int) -> RankTrace | None:
        return next((t for t in self.traces if t.rank == rank), None)

    def host_of(self, rank: int) -> str | None:
        t = self.trace_of(rank)
        return None if t is None else t.host

    def slowest_step_us(self) -> np.ndarray:
        """Per profiled step, the slowest rank's time (NaN where no rank has the step)."""
        if not self.step_us.size:
            return np.empty(0)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a step no rank has: NaN
            out: np.ndarray = np.nanmax(self.step_us, axis=1)
            return out

    def median_step_us(self) -> float:
        """The job's median step: per step the slowest rank's time (every rank waits for it), their median."""
        if not self.step_us.size or np.isnan(self.step_us).all():
            return 0.0
        return float(np.nanmedian(self.slowest_step_us()))

    def lateness(self) -> StepLateness:
        """The ranks' lateness per step, from their waits at each matched collective."""
        c = self.collectives
        source = SOURCE_WORDS.get(self.source, self.source)
        if not c.waits or not len(c.key):
            return from_readings(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64), None, source)
        ok = c.step >= 0
        key, rank, step, dur = c.key[ok], c.rank[ok], c.step[ok], c.dur_us[ok]
        if not len(key):
            return from_readings(step, rank, dur, None, source)
        most = np.full(int(key.max()) + 1, np.iinfo(np.int64).min)
        np.maximum.at(most, key, dur)
        count = np.bincount(key)
        shared = count[key] >= 2  # a collective seen on one rank only says nothing of lateness
        lateness = most[key] - dur
        return from_readings(step[shared], rank[shared], lateness[shared], None, source)

    def missing_collectives(self) -> dict[int, int]:
        """Per rank, collectives that the other ranks ran in the steps every rank has and it did not."""
        c = self.collectives
        if len(self.ranks) < 2 or not len(c.key):
            return {}
        inside = np.isin(c.step, self._common_steps())
        keys = len(np.unique(c.key[inside]))
        pairs = np.unique(np.stack([c.rank[inside], c.key[inside]]), axis=1)  # (rank, collective) once each
        have = dict(zip(*np.unique(pairs[0], return_counts=True), strict=True))
        lacking = {int(r): keys - int(have.get(r, 0)) for r in self.ranks}
        return {r: n for r, n in lacking.items() if n > 0}

    def _common_steps(self) -> np.ndarray:
        have = ~np.isnan(self.step_us)
        return self.steps[have.all(axis=1)] if have.size else self.steps[:0]

    def clock_offsets_us(self) -> dict[str, float]:
        """Each host's clock offset from the first host's (by name), from the ends of matched collectives:
        the median of its ranks' ends minus the first host's first rank's end of the same collective."""
        c = self.collectives
        if not len(c.key):
            return {}
        base = {t.rank: t.base_us for t in self.traces}
        host_of = {t.rank: t.host or f"rank {t.rank}" for t in self.traces}
        hosts = sorted(set(host_of.values()))
        code = {h: i for i, h in enumerate(hosts)}
        ranks = np.unique(c.rank)
        rank_host = np.array([code.get(host_of.get(int(r), ""), -1) for r in ranks], np.int64)
        rank_base = np.array([base.get(int(r), 0.0) for r in ranks])
        at = np.searchsorted(ranks, c.rank)
        host, end = rank_host[at], c.start_us + c.dur_us + rank_base[at]
        ref_rank = int(ranks[rank_host == 0][0])  # the first host's first rank
        ref = np.full(int(c.key.max()) + 1, np.nan)
        mine = c.rank == ref_rank
        ref[c.key[mine]] = end[mine]
        diff = end - ref[c.key]
        out: dict[str, float] = {}
        for h, name in enumerate(hosts):
            d = diff[(host == h) & ~np.isnan(diff)]
            if len(d):
                out[name] = float(np.median(d))
        return out

    def matched_share(self) -> float:
        """The share of collectives (by identity) that every traced rank ran."""
        c = self.collectives
        if not len(c.key):
            return 0.0
        ranks_per_key = np.zeros(int(c.key.max()) + 1, np.int64)
        pairs = np.unique(np.stack([c.key, c.rank]), axis=1)
        np.add.at(ranks_per_key, pairs[0], 1)
        seen = ranks_per_key[np.unique(c.key)]
        return float((seen == len(self.ranks)).mean())

    def per_rank_medians(self) -> dict[int, tuple[float, float, float, float, int]]:
        """Per rank: median step, data, host-to-device and collective time (us), and its step count."""
        out: dict[int, tuple[float, float, float, float, int]] = {}
        with np.errstate(all="ignore"):
            for j, r in enumerate(self.ranks):
                have = ~np.isnan(self.step_us[:, j])
                if not have.any():
                    continue
                out[int(r)] = (
                    float(np.median(self.step_us[have, j])),
                    float(np.median(self.data_us[have, j])),
                    float(np.median(self.h2d_us[have, j])),
                    float(np.median(self.comm_us[have, j])),
                    int(have.sum()),
                )
        return out


@dataclass(frozen=True, eq=False)
class TracesJudged:
    """A set's lateness, its median step and who stands out (None: too few steps or ranks to judge)."""

    view: StepLateness
    step_us: float
    judgement: Judgement | None


def judged(s: RankTraceSet, t: StragglerThresholds) -> TracesJudged:
    """:func:`analyzer.lateness.judge` of the set's lateness, when it has enough steps and ranks."""
    view, step_us = s.lateness(), s.median_step_us()
    if view.n_steps < t.min_steps or len(view.ranks) < 2 or not step_us:
        return TracesJudged(view, step_us, None)
    return TracesJudged(view, step_us, judge(view, step_us, t))
