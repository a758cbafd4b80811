"""``timeline.startup_skew`` (info): ranks reached the initial broadcasts far apart.

Before the first step, ``broadcast_parameters`` / ``broadcast_optimizer_state`` wait
until every rank has called them; a long ``NEGOTIATE_BROADCAST`` there is start-up skew
(imports, data set indexing, model construction on some ranks), paid once. Signal: a
negotiation before the first step lasting at least ``startup.min_skew_us``. Rank ticks are
present there (first negotiation of each tensor); the last rank is named only when its lateness
accounts for at least half of the wait (when rank 0 processes every request at once, the ticks
come together and cannot say who arrived last).
"""

from __future__ import annotations

from analyzer.detectors._common import at, ms
from analyzer.detectors.base import TimelineDetector, TimelineEvidence
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.timeline.lateness import rank_summary
from analyzer.timeline.model import TimelineModel

CODE = "timeline.startup_skew"
#: a rank is named only when its ticks account for this share of the wait


class StartupSkew(TimelineDetector):
    name = "startup_skew"
    code = CODE

    def check(self, model: TimelineModel, ctx: TimelineEvidence) -> Finding | None:
        t = ctx.config.thresholds.startup
        sp = model.spans
        pre = sp[(sp["kind"] == "negotiate") & (sp["step"] < 0) & sp["closed"]]
        if pre.empty:
            return None
        dur = pre["end_us"] - pre["start_us"]
        longest = pre.loc[dur.idxmax()]
        skew = float(dur.max())
        if skew < t.min_skew_us:
            return None
        evidence = [
            Evidence(
                summary=f"{longest['name']} of {longest['tensor']} waited {ms(skew)} for every rank "
                f"({len(pre)} negotiations before the first step)",
                sources=(at(model, longest["start_offset"]),),
                metrics={"skew_ms": skew / 1e3, "negotiations": float(len(pre))},
            )
        ]
        lat = model.lateness
        ranks = rank_summary(lat.where_negotiations(lat.neg_step < 0))
        who: tuple[int, ...] = ()
        if ranks and ranks[0].median_us >= t.share_to_name * skew:
            r = ranks[0]
            who = (r.rank,)
            evidence.append(
                Evidence(
                    summary=f"rank {r.rank} was the last to arrive in {r.last}/{r.negotiations} of "
                    f"them, median {ms(r.median_us)} after the first",
                    metrics={"rank": float(r.rank), "median_lateness_ms": r.median_us / 1e3},
                )
            )
        elif ranks:  # the ticks came together: they cannot say who kept the others waiting
            evidence.append(
                Evidence(
                    summary=f"the ranks' ready ticks came within {ms(ranks[0].median_us)} of each other (median), "
                    f"far less than the {ms(skew)} wait: rank 0 records them when it processes the requests, so "
                    "they do not tell which rank arrived last",
                    metrics={"tick_spread_ms": ranks[0].median_us / 1e3},
                )
            )
        return Finding(
            code=CODE,
            severity=Severity.INFO,
            title=f"Start-up skew: the initial broadcasts waited {ms(skew)} for the last rank",
            summary=(
                f"{model.path}: ranks reached the first collectives up to {ms(skew)} apart. This is paid "
                "once per (re)start, not per step" + (f"; rank {who[0]} came last." if who else ".")
            ),
            detector=self.name,
            evidence=tuple(evidence),
            suggestions=(
                Suggestion(
                    action="If restarts are frequent (elastic jobs, preemption), look at what the "
                    "late rank does before hvd.broadcast_parameters: data set indexing, "
                    "downloads, compilation."
                ),
            ),
            ranks=who,
        )
