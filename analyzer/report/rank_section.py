"""The report's section on a job's per-rank traces (:class:`~analyzer.report.rank_types.RankTracesDoc`)."""

from __future__ import annotations

import numpy as np

from analyzer.ranktraces.model import SOURCE_WORDS, RankTraceSet, TracesJudged
from analyzer.report.rank_types import RankRowDoc, RankTracesDoc


def rank_section(job: str, s: RankTraceSet, done: TracesJudged) -> RankTracesDoc:
    """``job``'s traces ``s`` and their judgement ``done`` (the one :class:`analyzer.context.Context` made for
    the detector too)."""
    view, step_us, j = done.view, done.step_us, done.judgement
    medians = s.per_rank_medians()
    viewed = {int(r): c for c, r in enumerate(view.ranks)} if view.n_steps else {}
    verdicts = {v.rank: v for v in j.ranks} if j is not None else {}
    rows: list[RankRowDoc] = []
    shown: set[int] = set()
    for trace in s.traces:
        m = medians.get(trace.rank)
        if m is None or trace.rank in shown:
            continue
        shown.add(trace.rank)
        lateness = None
        if trace.rank in viewed:
            col = view.typical_us[:, viewed[trace.rank]]
            lateness = float(np.nanmedian(col)) / 1e3 if np.isfinite(col).any() else None
        v = verdicts.get(trace.rank)
        late, named = (v.late_count, v.named) if v is not None else (0, False)
        rows.append(
            {
                "rank": trace.rank,
                "host": trace.host,
                "file": trace.file,
                "steps": m[4],
                "median_step_ms": m[0] / 1e3,
                "median_data_ms": m[1] / 1e3,
                "median_h2d_ms": m[2] / 1e3,
                "median_comm_ms": m[3] / 1e3,
                "lateness_ms": lateness,
                "late_steps": late,
                "named": named,
            }
        )
    rows.sort(key=lambda r: r["rank"])
    return {
        "job": job,
        "source": SOURCE_WORDS.get(s.source, s.source),
        "world_size": s.world_size,
        "ranks": rows,
        "missing_ranks": list(s.missing_ranks),
        "missing_collectives": {str(r): n for r, n in s.missing_collectives().items()},
        "duplicates": [f for _, f in s.duplicates],
        "unranked": list(s.unranked),
        "other_jobs": list(s.other_jobs),
        "matched_share": s.matched_share(),
        "steps": len(s.steps),
        "median_step_ms": step_us / 1e3,
        "clock_offsets_ms": {h: v / 1e3 for h, v in s.clock_offsets_us().items()},
        "noise_ms": None if j is None else j.noise_us / 1e3,
        "bar_ms": None if j is None else j.bar_us / 1e3,
        "confidence": "none" if j is None else j.confidence,
    }
