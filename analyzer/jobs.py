"""The jobs of a run: which inputs belong together, so that no finding borrows another job's evidence.

A run store can hold several jobs: the folder of samples, a post-mortem with retries, inputs
ingested from several places. Each folder holding Horovod timelines is one job (all its
timelines: an elastic restart or a retry writes another). Per-rank profiler traces belong to the
timeline job whose folder holds theirs (``run/traces/`` beside ``run/timeline.json``), or to the run's
only timeline job; else each folder of them is a job of its own, which finds its logs as a timeline
job does. NCCL and job logs are tied to a job by evidence, weakest last:

1. the job whose folder holds the log, or holds the folder that does (``run/logs/rank0.log``);
2. the run's only timeline job, when there is just one (inputs passed from several places);
3. with no timeline at all, every log is one job (a logs-only post-mortem);
4. otherwise the log is not tied to any timeline: the logs under one top folder of the run form a
   job of their own (``synthetic/nccl_healthy_ib``), and a log beside several jobs' folders is
   unassigned and analysed alone, with the reason.

Every input is in exactly one job; :attr:`Job.tied_by` says why its logs are there.

Logs gathered in one place are not one job by that alone: a post-mortem folder can hold logs of
several clusters. Logs whose processes share no host, no communicator size and no NCCL version
(:class:`LogIdentity`, read from the log tables) are split into jobs of their own, said to look like
different jobs, so that no finding links them (a version "mismatch" across clusters, a timeout
"following" another cluster's failure). A log that names none of these (a watchdog excerpt) cannot be
told apart: it stays with the others when they are one job, and is analysed alone beside several.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from analyzer.store.manifest import ManifestEntry

TIMELINE = "horovod_timeline"
RANK_TRACE = "rank_trace"


@dataclass(frozen=True, slots=True)
class Job:
    """One job of a run: its name, the folder that defines it and its inputs (ids)."""

    id: str
    name: str
    folder: str
    timelines: tuple[str, ...]
    logs: tuple[str, ...]
    tied_by: str  # why these logs belong to this job
    traces: tuple[str, ...] = ()  # its ranks' profiler traces

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.timelines + self.traces + self.logs


@dataclass(frozen=True, slots=True)
class JobPlan:
    """The jobs of a run, in a stable order (timeline jobs first, by folder)."""

    jobs: tuple[Job, ...]
    unassigned: tuple[tuple[str, str], ...] = ()  # (input id, reason): logs analysed as a job of their own

    def job_of(self, input_id: str) -> Job | None:
        return next((j for j in self.jobs if input_id in j.inputs), None)


@dataclass(frozen=True, slots=True)
class LogIdentity:
    """What a log says of the job it comes from: its processes' hosts, communicator sizes and NCCL
    versions. Two logs sharing any one of them may be one job; sharing none, they look like two."""

    hosts: frozenset[str] = frozenset()
    sizes: frozenset[int] = frozenset()
    versions: frozenset[str] = frozenset()

    def known(self) -> bool:
        return bool(self.hosts or self.sizes or self.versions)

    def shares(self, other: LogIdentity) -> bool:
        return bool(self.hosts & other.hosts or self.sizes & other.sizes or self.versions & other.versions)


UNRELATED = (
    "logs that share no host, communicator size or NCCL version with the job's other logs: they look like "
    "another job, so no finding links them"
)


UNTIED = (
    "a log that names no host, communicator size or NCCL version, beside logs of several jobs: nothing ties it "
    "to one of them, so it is analysed alone"
)


def related_groups(ids: Sequence[str], identity: Mapping[str, LogIdentity]) -> list[list[str]]:
    """``ids`` in groups of logs tied by a shared host, size or version (transitively), largest first.
    A log that names none of these stays with the others when they are one group; beside several,
    nothing ties it to one, and it is a group of its own."""
    known = [i for i in ids if identity.get(i, LogIdentity()).known()]
    groups: list[list[str]] = []
    for i in known:
        mine = identity[i]
        tied = [g for g in groups if any(mine.shares(identity[j]) for j in g)]
        merged = [j for g in tied for j in g] + [i]
        groups = [g for g in groups if g not in tied] + [merged]
    groups.sort(key=lambda g: (-len(g), min(ids.index(j) for j in g)))
    unknown = [i for i in ids if i not in known]
    if len(groups) <= 1:
        return [list(ids)] if ids else []
    return [sorted(g, key=ids.index) for g in groups] + [[i] for i in unknown]


def plan_jobs(entries: Sequence[ManifestEntry], identity: Mapping[str, LogIdentity] | None = None) -> JobPlan:
    """The jobs of the inputs ``entries`` (:mod:`analyzer.jobs` says how they are told apart);
    ``identity``: what each log (by input id) says of its job, to split unrelated logs."""
    plan = _plan(entries)
    if not identity:
        return plan
    jobs: list[tuple[str, list[str], tuple[str, ...], str, tuple[str, ...]]] = []
    paths = {e["id"]: e["path"] for e in entries}
    for j in plan.jobs:
        first, *others = related_groups(j.logs, identity) or [[]]
        jobs.append((j.folder, list(j.timelines), tuple(first), j.tied_by, j.traces))
        for g in others:
            why = UNRELATED if identity.get(g[0], LogIdentity()).known() else UNTIED
            jobs.append((paths[g[0]] if len(g) == 1 else j.folder, [], tuple(g), why, ()))
    return JobPlan(tuple(_job(i, *x) for i, x in enumerate(jobs)), plan.unassigned)


def _plan(entries: Sequence[ManifestEntry]) -> JobPlan:
    timelines: dict[str, list[str]] = {}
    traces: dict[str, list[str]] = {}
    logs: list[ManifestEntry] = []
    for e in entries:
        if e["kind"] == TIMELINE:
            timelines.setdefault(_folder(e), []).append(e["id"])
        elif e["kind"] == RANK_TRACE:
            traces.setdefault(_folder(e), []).append(e["id"])
        else:
            logs.append(e)
    # per-rank traces in a timeline job's folder (or below it) are that job's, as are traces from elsewhere
    # when the run has one timeline job; any others make a job of their folder, whose logs are found as a
    # timeline job's are
    timeline_homes = dict(timelines)
    owned: dict[str, list[str]] = {}
    for folder, ids in traces.items():
        home = _nearest(folder, timeline_homes)
        if home is None and len(timeline_homes) == 1:
            home = next(iter(timeline_homes))
        if home is None:
            home = folder
            timelines.setdefault(folder, [])
        owned.setdefault(home, []).extend(ids)
    tied: dict[str, list[str]] = {folder: [] for folder in timelines}
    reasons: dict[str, str] = {}
    loose: list[ManifestEntry] = []
    for e in logs:
        home = _nearest(_folder(e), timelines)
        if home is not None:
            tied[home].append(e["id"])
            reasons.setdefault(home, "logs in the job's folder")
        else:
            loose.append(e)
    if loose and len(timelines) == 1:
        (home,) = timelines
        tied[home] += [e["id"] for e in loose]
        reasons[home] = "logs in the job's folder and elsewhere; the run has this one timeline job"
        loose = []
    jobs = [
        (folder, ids, tuple(tied[folder]), reasons.get(folder, "no log in its folder"), tuple(owned.get(folder, ())))
        for folder, ids in sorted(timelines.items())
    ]
    unassigned: list[tuple[str, str]] = []
    if loose and not timelines:
        jobs.append((_common([_folder(e) for e in loose]), [], tuple(e["id"] for e in loose), "a run of logs only", ()))
    elif loose:
        root = _common([_folder(e) for e in entries])
        groups: dict[str, list[str]] = {}
        alone: list[ManifestEntry] = []
        for e in loose:
            top = _top(_folder(e), root)
            if top is None:
                alone.append(e)
            else:
                groups.setdefault(top, []).append(e["id"])
        for folder, ids in sorted(groups.items()):
            jobs.append((folder, [], tuple(ids), "logs without a timeline in their folder", ()))
        for e in alone:
            why = f"it lies beside the folders of {len(timelines)} timeline jobs and nothing ties it to one"
            unassigned.append((e["id"], why))
            jobs.append((e["path"], [], (e["id"],), f"unassigned ({why}): analysed alone", ()))
    return JobPlan(tuple(_job(i, *j) for i, j in enumerate(jobs)), tuple(unassigned))


def _job(
    index: int, folder: str, timelines: list[str], logs: tuple[str, ...], tied_by: str, traces: tuple[str, ...]
) -> Job:
    name = PurePath(folder).name or folder
    return Job(f"job{index + 1}", name, folder, tuple(timelines), logs, tied_by, traces)


def _folder(e: ManifestEntry) -> str:
    return os.path.dirname(os.path.abspath(e["path"]))


def _nearest(folder: str, homes: dict[str, list[str]]) -> str | None:
    """The deepest job folder that is ``folder`` or holds it."""
    best = None
    for home in homes:
        if (folder == home or folder.startswith(home.rstrip(os.sep) + os.sep)) and (
            best is None or len(home) > len(best)
        ):
            best = home
    return best


def _common(folders: Sequence[str]) -> str:
    return os.path.commonpath(folders) if folders else ""


def _top(folder: str, root: str) -> str | None:
    """The first folder below ``root`` on the way to ``folder`` (None: ``folder`` is ``root``)."""
    rel = os.path.relpath(folder, root)
    return None if rel == "." else os.path.join(root, rel.split(os.sep)[0])
