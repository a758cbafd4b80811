"""Facts about a parsed timeline that are read off its content, not its name.

* the Horovod version range (``docs/formats/horovod-timeline.md`` §9),
* whether ``ts`` counts from host uptime (0.16.0-0.20.0 bug, §6),
* whether steady-state negotiations carry rank ticks (response cache off) (§5).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, TypedDict

import numpy as np

from parsers.shapes import Count

Version = tuple[int, int, int]
OLDEST: Version = (0, 9, 2)
NEWEST: Version = (0, 28, 1)


def fmt(v: Version) -> str:
    return ".".join(map(str, v))


@dataclass(frozen=True, slots=True)
class VersionGuess:
    low: Version
    high: Version
    evidence: tuple[str, ...]
    conflict: bool = False

    def describe(self) -> str:
        if self.low == self.high:
            return fmt(self.low)
        return f"{fmt(self.low)} - {fmt(self.high)}"


def guess_version(
    *,
    names: Iterable[str],
    has_start_time_header: bool,
    glued: bool,
    line_per_event: bool,
    e_named: bool,
    uptime_origin: bool,
    has_markers: bool,
    ticks_every_negotiation: bool | None,
) -> VersionGuess:
    """Intersect the version ranges implied by each feature of the file."""
    rules: list[tuple[Version, Version, str]] = []
    name_set = set(names)

    def rule(low: Version, high: Version, why: str) -> None:
        rules.append((low, high, why))

    if has_start_time_header:
        rule((0, 20, 1), NEWEST, "pid-0 start_time_since_epoch_in_micros header (>=0.20.1)")
    if glued:
        rule((0, 20, 1), NEWEST, "events glued on one line with ',' (>=0.20.1)")
    if line_per_event:
        rule(OLDEST, (0, 20, 0), "one event per line (<=0.20.0)")
    if e_named:
        rule(OLDEST, (0, 9, 2), "E events carry a name (0.9.2)")
    if "SCHEDULE" in name_set:
        rule((0, 9, 3), (0, 13, 5), "SCHEDULE activity (0.9.3-0.13.5)")
    if uptime_origin:
        rule((0, 16, 0), (0, 20, 0), "ts counts from host uptime (0.16.0-0.20.0)")
    if has_markers:
        rule((0, 16, 0), NEWEST, "CYCLE_START markers (>=0.16.0)")
    if any(n.startswith("MLSL_") for n in name_set):
        rule((0, 16, 3), (0, 18, 99), "MLSL_* activity (0.16.3-0.18)")
    if any(n.startswith("GLOO_") for n in name_set):
        rule((0, 17, 0), NEWEST, "GLOO_* activity (>=0.17)")
    if any(n.startswith("CCL_") for n in name_set) or "MPI_ADASUM_ALLREDUCE" in name_set or "ADASUM" in name_set:
        rule((0, 19, 0), NEWEST, "CCL_* / Adasum activity (>=0.19)")
    if any(n.endswith("ALLTOALL") for n in name_set):
        rule((0, 20, 0), NEWEST, "*ALLTOALL (>=0.20)")
    if "NEGOTIATE_BARRIER" in name_set:
        rule((0, 23, 0), NEWEST, "NEGOTIATE_BARRIER (>=0.23)")
    if "REDUCESCATTER" in name_set or "MPI_REDUCESCATTER" in name_set or "GLOO_REDUCESCATTER" in name_set:
        rule((0, 25, 0), NEWEST, "REDUCESCATTER op (>=0.25)")
    if "NCCL_INIT" in name_set or "PROCESS" in name_set:
        rule(OLDEST, (0, 9, 2), "NCCL_INIT/PROCESS activity (0.9.2)")
    if ticks_every_negotiation is True and not has_start_time_header and not glued:
        rule(OLDEST, (0, 20, 0), "rank ticks on every negotiation (<0.16.2, or cache disabled)")

    low, high = OLDEST, NEWEST
    for r_low, r_high, _ in rules:
        low, high = max(low, r_low), min(high, r_high)
    evidence = tuple(why for _, _, why in rules)
    if low > high:  # contradictory features: report the widest honest answer
        return VersionGuess(OLDEST, NEWEST, evidence, conflict=True)
    return VersionGuess(low, high, evidence)


def uptime_origin(first_ts: int | None, has_start_time_header: bool) -> bool:
    """0.16.0-0.20.0 timelines count ts from host uptime instead of the file's start.

    Timelines with a real origin start within seconds; uptime-based ones start at the
    machine's uptime (the public 0.16 samples start at 16 days). One hour is the cut-off.
    """
    return not has_start_time_header and first_ts is not None and first_ts > 3_600_000_000


@dataclass(frozen=True, slots=True)
class CacheVerdict:
    """Whether steady-state negotiations carry rank ticks."""

    steady_state_ticks: bool | None  # None: cannot tell (no pid negotiated twice)
    response_cache: CacheState
    repeated_pids: int  # pids negotiated at least twice
    later_ticked: int  # ... of which later negotiations carry ticks
    reason: str


def cache_verdict(negotiations: np.ndarray, ticked: np.ndarray) -> CacheVerdict:
    """Decide from per-pid counts of negotiations and of negotiations with ticks."""
    repeated = negotiations >= 2
    n_rep = int(repeated.sum())
    if n_rep == 0:
        return CacheVerdict(None, "unknown", 0, 0, "no tensor was negotiated twice")
    later = int(np.clip(ticked[repeated] - 1, 0, None).sum())
    later_total = int((negotiations[repeated] - 1).sum())
    if later == 0:
        return CacheVerdict(
            False,
            "on",
            n_rep,
            0,
            "rank ticks only on each tensor's first negotiation (response cache on)",
        )
    share = later / later_total
    if share >= 0.9:
        return CacheVerdict(
            True,
            "off",
            n_rep,
            later,
            "rank ticks on every negotiation (HOROVOD_CACHE_CAPACITY=0, or Horovod < 0.16.2)",
        )
    return CacheVerdict(
        True,
        "on",
        n_rep,
        later,
        f"{share:.0%} of repeated negotiations carry ticks (cache on, with evictions or autotune)",
    )


TimelineStatus = Literal["closed", "unterminated", "truncated", "empty"]
TimelineLayout = Literal["glued", "line_per_event", "unknown"]
CacheState = Literal["on", "off", "unknown"]


class HorovodVersionFacts(TypedDict):
    """The Horovod release range a timeline's content allows."""

    low: str
    high: str
    text: str
    evidence: list[str]
    conflict: bool


class TimelineFacts(TypedDict):
    """:meth:`TimelineInfo.to_dict`: what the manifest and the report (``inputs[].timeline``) say of a
    timeline, read off its content."""

    status: TimelineStatus
    layout: TimelineLayout
    records: Count
    bytes_read: Count
    start_time_since_epoch_us: int | None
    first_ts_us: int | None
    last_ts_us: int | None
    uptime_origin: bool
    max_depth: Count
    horovod_version: HorovodVersionFacts | None
    steady_state_ticks: bool | None
    response_cache: CacheState | None
    response_cache_reason: str | None
    counts: dict[str, Count]


@dataclass(slots=True)
class TimelineInfo:
    """What one timeline file is, read off its content."""

    path: str
    bytes_read: int = 0
    status: TimelineStatus = "empty"
    layout: TimelineLayout = "unknown"  # glued (>=0.20.1) | line_per_event (<=0.20.0) | unknown
    records: int = 0
    start_time_since_epoch_us: int | None = None
    first_ts_us: int | None = None
    last_ts_us: int | None = None
    uptime_origin: bool = False
    max_depth: int = 0
    version: VersionGuess | None = None
    cache: CacheVerdict | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> TimelineFacts:
        v = self.version
        c = self.cache
        return {
            "status": self.status,
            "layout": self.layout,
            "records": self.records,
            "bytes_read": self.bytes_read,
            "start_time_since_epoch_us": self.start_time_since_epoch_us,
            "first_ts_us": self.first_ts_us,
            "last_ts_us": self.last_ts_us,
            "uptime_origin": self.uptime_origin,
            "max_depth": self.max_depth,
            "horovod_version": None
            if v is None
            else {
                "low": ".".join(map(str, v.low)),
                "high": ".".join(map(str, v.high)),
                "text": v.describe(),
                "evidence": list(v.evidence),
                "conflict": v.conflict,
            },
            "steady_state_ticks": None if c is None else c.steady_state_ticks,
            "response_cache": None if c is None else c.response_cache,
            "response_cache_reason": None if c is None else c.reason,
            "counts": dict(self.counts),
        }
