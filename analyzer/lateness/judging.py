"""Which ranks are stragglers: lateness that stands out from the noise of the host.

Read off a :class:`~analyzer.lateness.model.StepLateness`, one rank at a time (the design and its
measurements: ``docs/lateness.md``):

* **Peers.** A rank is compared with the other ranks in the same steps. The *pool* is every rank
  but the coordinator when at least 2 others exist (the coordinator stamps its own readiness when
  its loop runs, the others' when their requests reach it, so it is not their peer), else every
  rank. A rank's peers are the pool but itself; on a second pass, the ranks the first named are
  left out of the others' peers too (a straggler among two peers moves their median by half its
  lateness).
* **Excess** ``e``: per step, the rank's typical lateness minus the median of its peers'.
* **Noise** ``sigma``: the larger of the peers' spread around their median in the same steps
  (pooled over steps, the larger of the median absolute deviation's and the 90th percentile's
  reading, since on a loaded host ranks tick in the same cycle in most steps and far apart in the
  rest) and the rank's own step-to-step jitter (from the lower quartile of the changes of ``e``
  between consecutive steps, which a straggler's level changes or a late step every few steps do
  not move).
* **Bar.** The larger of ``noise_z`` x sigma and the floor (``min_late_us``, ``min_late_share`` of
  the median step). A rank is late *throughout* when its median excess clears the bar (a rank
  whose only peer is the coordinator: its lower decile, since it trails the coordinator by up to
  the host's scheduling delay in every step), and then late in each step where its excess is at
  least half that median. Any other rank is late in a step when its excess rises the bar above its
  usual level (the median of its steps that were not late) and is at least the floor.
* **Test.** The other ranks, judged alike, say how often noise makes a rank late on this host:
  the null rate is the larger of ``per_step_false_rate`` and their late steps' share (Laplace
  smoothed). A rank is named when the binomial chance of as many late steps at that rate is at
  most ``alpha`` divided by the ranks compared, with at least ``min_late_steps`` of them.
* **Stretches.** A rank is also named for a stretch of at least ``min_stretch_steps`` steps in
  which its running median stood the stretch bar above its usual level (a straggler that began
  or ended mid-run): :func:`_stretches`. Not the coordinator: its own tick is stamped by the job's
  busiest thread, which on a starved host trails for stretches of steps while its compute is on time.

Every number is in :class:`~analyzer.config.StragglerThresholds`. The time named ranks cost the
run is the mean over all steps of what they made the steps wait: the median of their excess on
the steps they were late in, times those steps, over all the steps.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np

from analyzer.config import StragglerThresholds
from analyzer.lateness.model import StepLateness
from analyzer.lateness.when import Pattern, pattern

#: Phi^-1(0.95): the 90th percentile of |X| for a normal X of sigma 1
Q90_SIGMA = 1.645
#: 1 / Phi^-1(3/4): the median absolute deviation of a normal sample times this is its sigma
MAD_SIGMA = 1.4826
#: with more ranks than this the peers' median and spread are the pool's (leaving one rank out of
#: a large pool moves them by a negligible amount, and the exact way costs ranks^2 x steps)
EXACT_PEERS_UP_TO = 16

Confidence = Literal["high", "medium", "low"]


@dataclass(frozen=True, slots=True)
class RankVerdict:
    """One rank's lateness against its peers (us)."""

    rank: int
    steps: int  # steps with a reading of the rank
    offset_us: float  # median excess over its peers
    noise_us: float  # sigma
    bar_us: float
    steady: bool  # late throughout: its median excess clears the bar
    late: np.ndarray  # bool per step of the view: late in that step
    wait_us: np.ndarray  # per step: its excess over its peers' median (>= 0), what a step it was late in waited
    p_value: float  # the chance of being late in as many steps under noise alone
    named: bool

    @property
    def late_count(self) -> int:
        return int(self.late.sum())


@dataclass(frozen=True, eq=False)
class Judgement:
    view: StepLateness
    floor_us: float
    noise_us: float  # the pool's spread around its median, the host's noise
    bar_us: float  # the bar a pool rank with that noise must clear
    confidence: Confidence  # low: the host was too noisy to tell lateness below the bar
    ranks: tuple[RankVerdict, ...]

    @property
    def named(self) -> tuple[RankVerdict, ...]:
        """The stragglers, most costly first."""
        return tuple(sorted((r for r in self.ranks if r.named), key=lambda r: (-self.mean_loss_us((r.rank,)), r.rank)))

    def verdict(self, rank: int) -> RankVerdict:
        return next(r for r in self.ranks if r.rank == rank)

    def late_mask(self, ranks: tuple[int, ...]) -> np.ndarray:
        """Per step: any of ``ranks`` late."""
        out = np.zeros(self.view.n_steps, bool)
        for r in ranks:
            out |= self.verdict(r).late
        return out

    def loss_by_step(self, ranks: tuple[int, ...]) -> np.ndarray:
        """Per step: the wait the ranks caused there (the largest of theirs on a step any was late in, else 0)."""
        out = np.zeros(self.view.n_steps)
        for r in ranks:
            v = self.verdict(r)
            out = np.maximum(out, np.where(v.late, v.wait_us, 0.0))
        return out

    def mean_loss_us(self, ranks: tuple[int, ...]) -> float:
        """The time the ranks cost the run per step, averaged over every step: the steps they were
        late in times the median of what those steps waited (one reading a rank's thread was slow
        to report can be seconds off while the step lost nothing like it), over all the steps."""
        late = self.late_mask(ranks)
        if not self.view.n_steps or not late.any():
            return 0.0
        return float(np.median(self.loss_by_step(ranks)[late])) * int(late.sum()) / self.view.n_steps

    def pattern(self, ranks: tuple[int, ...], t: StragglerThresholds) -> Pattern:
        return pattern(self.view.steps, self.late_mask(ranks), t)


def judge(view: StepLateness, median_step_us: float, t: StragglerThresholds) -> Judgement:
    """The :class:`Judgement` of every rank of ``view``; ``median_step_us`` scales the floor."""
    floor = max(float(t.min_late_us), t.min_late_share * median_step_us)
    n_r = len(view.ranks)
    if n_r < 2 or not view.n_steps:
        return Judgement(view, floor, 0.0, floor, "medium", ())
    typ = view.typical_us
    coord = view.coordinator
    in_pool = np.ones(n_r, bool)
    if coord is not None and coord in set(view.ranks.tolist()) and n_r - 1 >= 2:
        in_pool[view.column(coord)] = False
    pool = np.flatnonzero(in_pool)
    verdicts = _pass(view, pool, np.zeros(n_r, bool), floor, t)
    named = np.array([v.named for v in verdicts])
    if named.any():  # again, with the named ranks out of their peers' reference (one straggler among two
        # peers moves their median by half its lateness, and would make the third look early or late)
        verdicts = _pass(view, pool, named, floor, t)
    # the host's noise: the spread of the pool's ranks that were not named (their own jitter with fewer than 2)
    quiet = np.array([c for c in pool if not verdicts[c].named], np.int64)
    host_noise = (
        _spread(typ[:, quiet])[1]
        if len(quiet) >= 2
        else float(np.median([v.noise_us for v in verdicts if not v.named] or [v.noise_us for v in verdicts]))
    )
    bar = max(floor, t.noise_z * host_noise)
    confidence: Confidence = (
        "low"
        if median_step_us and bar >= t.noisy_share * median_step_us
        else "high"
        if view.n_steps >= 10
        else "medium"
    )
    return Judgement(view, floor, host_noise, bar, confidence, tuple(verdicts))


def _pass(
    view: StepLateness, pool: np.ndarray, left_out: np.ndarray, floor: float, t: StragglerThresholds
) -> list[RankVerdict]:
    """Every rank judged against its peers: the pool but itself and the ``left_out`` ranks (unless
    that leaves none)."""
    typ = view.typical_us
    exact = len(view.ranks) <= EXACT_PEERS_UP_TO
    kept = pool[~left_out[pool]]
    shared = kept if len(kept) else pool
    shared_ref, shared_noise = _nanmedian_rows(typ[:, shared]), _spread(typ[:, shared])
    readings = []
    for c in range(len(view.ranks)):
        peers = kept[kept != c] if exact else shared
        if not len(peers):
            peers = pool[pool != c]
        ref = _nanmedian_rows(typ[:, peers]) if exact else shared_ref
        peer_noise = (_spread(typ[:, peers]) if exact else shared_noise) if len(peers) >= 2 else (0.0, 0.0)
        # a rank whose only peer is the coordinator trails it by the coordinator's advantage, from 0 up to
        # the host's scheduling delay: it is late throughout only when even its early steps are
        behind_coordinator = (
            view.coordinator is not None
            and c not in set(peers.tolist())
            and len(peers) == 1
            and (int(view.ranks[peers[0]]) == view.coordinator)
        )
        # the coordinator's own tick is stamped by the job's busiest thread (it negotiates for every rank and
        # writes the timeline): on a starved host it trails for stretches of steps with its compute on time,
        # so the coordinator is judged by its late steps and its standing lateness, not by stretches
        coordinator = view.coordinator is not None and int(view.ranks[c]) == view.coordinator
        readings.append(
            _readings(typ[:, c] - ref, peer_noise, floor, t, 0.1 if behind_coordinator else 0.5, not coordinator)
        )
    late_total = sum(r.late_count for r in readings)
    seen_total = sum(r.steps for r in readings)
    verdicts = []
    for c, r in enumerate(readings):
        k = r.late_count
        null = max(t.per_step_false_rate, (late_total - k + 1) / (seen_total - r.steps + 2))
        p = binomial_tail(r.steps, k, null)
        spiked = k >= t.min_late_steps and p <= t.alpha / max(len(pool), 2)
        verdicts.append(
            RankVerdict(
                rank=int(view.ranks[c]),
                steps=r.steps,
                offset_us=r.offset_us,
                noise_us=r.noise_us,
                bar_us=r.bar_us,
                steady=r.steady,
                late=(r.late if spiked else np.zeros_like(r.late)) | r.stretch,
                wait_us=r.wait_us,
                p_value=p,
                named=spiked or bool(r.stretch.any()),
            )
        )
    return verdicts


#: the steps of the running median that finds stretches
SMOOTHING = 5
#: the noise of a running median of 5 normal readings, in sigmas of one (1.2533 / sqrt(5) = 0.56, rounded up)
SMOOTHED_NOISE = 0.6
#: the lower quartile of |X1 - X2| for two normal readings of sigma 1 (sqrt(2) x 0.3186)
QUARTILE_OF_CHANGE = 0.4506


@dataclass(frozen=True, slots=True)
class _Readings:
    """One rank's readings against its peers, before the test."""

    steps: int
    offset_us: float
    noise_us: float
    bar_us: float
    steady: bool
    late: np.ndarray  # steps late by the per-step rule
    stretch: np.ndarray  # steps within a raised stretch
    wait_us: np.ndarray

    @property
    def late_count(self) -> int:
        return int(self.late.sum())


def _readings(
    excess: np.ndarray,
    peer_noise: tuple[float, float],
    floor: float,
    t: StragglerThresholds,
    steady_quantile: float,
    stretches: bool = True,
) -> _Readings:
    seen = ~np.isnan(excess)
    n = int(seen.sum())
    e = excess[seen]
    if n == 0:
        return _Readings(0, 0.0, peer_noise[1], floor, False, seen, seen.copy(), np.zeros(len(excess)))
    offset = float(np.median(e))
    change = np.abs(np.diff(e))
    own = float(np.quantile(change, 0.25)) / QUARTILE_OF_CHANGE if len(change) >= 4 else 0.0
    noise = max(peer_noise[1], own)  # a single step can be a tail event
    bar = max(floor, t.noise_z * noise)
    e_all = np.nan_to_num(excess, nan=-np.inf)
    steady = float(np.quantile(e, steady_quantile)) >= bar
    if steady:  # late throughout: a step counts where it held the others by half its usual excess
        late = seen & (e_all >= max(floor, offset / 2))
    else:  # excursions above its usual level
        late = seen & (e_all - _usual(e, e >= np.inf, e - bar) >= bar) & (e_all >= floor)
    stretch = np.zeros(len(excess), bool)
    if not steady and stretches:
        # a stretch is read through medians, which the tails do not move
        stretch[np.flatnonzero(seen)] = _stretches(e, max(peer_noise[0], own), floor, t)
    wait = np.clip(np.nan_to_num(excess), 0.0, None)
    return _Readings(n, offset, noise, bar, steady, late, stretch, wait)


def _usual(e: np.ndarray, up: np.ndarray, lifted: np.ndarray) -> float:
    """A rank's usual level: the median of its readings that were not raised, found from its lower
    quartile up (a rank late in most steps has its median among the late ones). ``lifted`` is
    each reading less the bar a raised one clears above the level; ``up`` any already known raised."""
    base = float(np.quantile(e, 0.25))
    for _ in range(3):
        usual = e[~(up | (lifted >= base))]
        if not len(usual):
            break
        base = float(np.median(usual))
    return base


def _stretches(e: np.ndarray, noise: float, floor: float, t: StragglerThresholds) -> np.ndarray:
    """Per reading: within a stretch of at least ``min_stretch_steps`` steps where the rank's
    running median (over :data:`SMOOTHING` steps) stood at least the stretch bar above its usual
    level: a straggler that began, or ended, during the run. The running median sees a sustained
    rise its single steps' noise hides (it is ~0.6 x as noisy), and no lone late step; a loaded
    host's scheduler holds one rank back for a few steps at a time, so a stretch must be longer."""
    w = SMOOTHING
    if len(e) < max(w, t.min_stretch_steps):
        return np.zeros(len(e), bool)
    half = w // 2
    smooth = np.median(
        np.lib.stride_tricks.sliding_window_view(np.pad(e, (half, w - 1 - half), mode="edge"), w), axis=1
    )
    bar = max(floor, t.noise_z * SMOOTHED_NOISE * noise)
    # the usual level, never below its peers': a rank usually ahead of them (the coordinator, or a rank
    # beside a straggler among few peers) is not late when it is merely as ready as they are
    usual = max(_usual(e, np.zeros(len(e), bool), smooth - bar), 0.0)
    keep = _runs(smooth - usual >= bar, t.min_stretch_steps)
    if not keep.any():
        return keep
    # a gap between raised stretches, or before the first and after the last, whose readings sit
    # nearer the raised level than the usual one is raised too (a few noisy steps do not end a stretch)
    mid = (usual + float(np.median(e[keep]))) / 2
    gaps = _runs(~keep, 1)
    edges = np.flatnonzero(np.diff(np.r_[0, gaps.astype(np.int8), 0]))
    for a, b in zip(edges[::2], edges[1::2], strict=True):
        if float(np.median(e[a:b])) >= mid:
            keep[a:b] = True
    return keep


def _runs(mask: np.ndarray, w: int) -> np.ndarray:
    """``mask`` with only its runs of at least ``w`` True kept."""
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    keep = np.zeros(len(mask), bool)
    for a, b in zip(edges[::2], edges[1::2], strict=True):
        if b - a >= w:
            keep[a:b] = True
    return keep


def _nanmedian_rows(m: np.ndarray) -> np.ndarray:
    """Per row, the median of its readings (NaN: none)."""
    out = np.full(m.shape[0], np.nan)
    if m.shape[1] == 0:
        return out
    seen = ~np.isnan(m)
    if seen.all():
        out[:] = np.median(m, axis=1)
        return out
    rows = seen.any(axis=1)
    if rows.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows are left out above
            out[rows] = np.nanmedian(m[rows], axis=1)
    return out


def _spread(m: np.ndarray) -> tuple[float, float]:
    """The spread (a sigma) of the columns of ``m`` around each row's median, pooled over the rows,
    read two ways: from the median absolute deviation (typical: what a median over steps sees) and
    from the larger of that and the 90th percentile's reading (tail: on a loaded host ranks tick in
    the same cycle in most steps and far apart in the rest, so the median deviation is 0 while a
    single step's noise is not). Both corrected for a few columns (the deviations of k values from
    their own median are smaller than from the true centre by about sqrt((k - 1) / k))."""
    k = m.shape[1]
    if k < 2:
        return 0.0, 0.0
    dev = np.abs(m - _nanmedian_rows(m)[:, None])
    dev = dev[~np.isnan(dev)]
    if not len(dev):
        return 0.0, 0.0
    few = math.sqrt(k / (k - 1))
    typical = MAD_SIGMA * float(np.median(dev)) * few
    return typical, max(typical, float(np.quantile(dev, 0.9)) / Q90_SIGMA * few)


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in logs from ``k`` up until the terms no longer count."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if k <= n * p:
        return 1.0 if k <= 1 else min(1.0, _tail(n, k, p))
    return min(1.0, _tail(n, k, p))


def _tail(n: int, k: int, p: float) -> float:
    lp, lq = math.log(p), math.log1p(-p)
    head = math.lgamma(n + 1)
    total = 0.0
    for i in range(k, n + 1):
        term = math.exp(head - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
        total += term
        if i > n * p and term < total * 1e-15:
            break
    return total
