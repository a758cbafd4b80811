"""Per-rank lateness from the rank-ready ticks of negotiations.

A tick's ``ts`` is when rank 0's background thread processed that rank's request, so the
resolution is one Horovod cycle, and ranks processed in the same cycle tick in ascending
order a few us apart. For each negotiation with a tick from every rank:

* ``lateness_us`` = tick - the first-ready rank's tick;
* ``last`` = the tick falls within one cycle (:data:`SAME_CYCLE_US`) of the last tick;
* ``vs_median_us`` = tick - the median tick of the ranks that were not last (what the
  job would save if this rank were as early as a typical on-time rank; 0 when every rank
  ticked in the last cycle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

SAME_CYCLE_US = 1_000
MIN_TICKED_STEPS = 3  # steady steps with ticks needed to judge ranks (fewer: warm-up only)


@dataclass(frozen=True, slots=True)
class RankLateness:
    rank: int
    negotiations: int
    last: int  # negotiations in which this rank was (among) the last ready
    median_us: float  # lateness behind the first-ready rank
    p90_us: float
    median_vs_median_us: float

    @property
    def last_share(self) -> float:
        return self.last / self.negotiations if self.negotiations else 0.0


def tick_lateness(ticks: pd.DataFrame) -> pd.DataFrame:
    """Ticks of fully ticked negotiations with ``lateness_us``, ``vs_median_us`` and ``last``."""
    t = ticks[ticks["negotiation_id"] >= 0]
    if not t.empty:
        ranks = int(t["rank"].max()) + 1
        t = t[t.groupby("negotiation_id")["ts_us"].transform("size").to_numpy() == ranks]
    if t.empty:
        return t.assign(lateness_us=pd.Series(dtype="int64"), vs_median_us=pd.Series(dtype="float64"),
                        last=pd.Series(dtype="bool"))
    g = t.groupby("negotiation_id")["ts_us"]
    ts = t["ts_us"].to_numpy()
    is_last = ts >= g.transform("max").to_numpy() - SAME_CYCLE_US
    on_time = t.loc[~is_last].groupby("negotiation_id")["ts_us"].median()
    typical = on_time.reindex(t["negotiation_id"].to_numpy()).to_numpy()
    vs = np.where(np.isnan(typical), 0.0, ts - typical)
    return t.assign(lateness_us=ts - g.transform("min").to_numpy(), vs_median_us=vs, last=is_last)


def rank_summary(lat: pd.DataFrame) -> list[RankLateness]:
    """One row per rank, most often last first."""
    if lat.empty:
        return []
    g = lat.groupby("rank")
    agg = g.agg(n=("ts_us", "size"), last=("last", "sum"), med=("lateness_us", "median"),
                vs=("vs_median_us", "median"))
    p90 = g["lateness_us"].quantile(0.9)
    out = [
        RankLateness(rank=int(rank), negotiations=int(row.n), last=int(row.last), median_us=float(row.med),
                     p90_us=float(p90[rank]), median_vs_median_us=float(row.vs))
        for rank, row in agg.iterrows()
    ]
    return sorted(out, key=lambda r: (-r.last, -r.median_us, r.rank))


def loss_per_step(lat: pd.DataFrame, ranks: tuple[int, ...]) -> np.ndarray:
    """Per step: how much later than the median rank the given ranks were on the step's
    last-completing negotiation (us, >= 0): the time the step waited for them."""
    if lat.empty or not ranks:
        return np.empty(0)
    per_neg = lat.groupby("negotiation_id").agg(step=("step", "first"), end=("negotiation_end_us", "first"))
    last_neg = per_neg.sort_values("end").groupby("step").tail(1).index.to_numpy()
    rows = lat[np.isin(lat["negotiation_id"].to_numpy(), last_neg) & np.isin(lat["rank"].to_numpy(), ranks)]
    return np.maximum(rows.groupby("step")["vs_median_us"].max().to_numpy(), 0.0)
