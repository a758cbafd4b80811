"""The per-rank traces section as lines and table rows, shared by the text, Markdown and HTML renderers."""

from __future__ import annotations

from analyzer.report.rank_types import RankTracesDoc

HEADER = ("rank", "host", "steps", "step", "data", "h2d", "collectives", "late by", "late steps", "")


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} ms"


def summary_line(s: RankTracesDoc) -> str:
    world = f" of {s['world_size']}" if s["world_size"] else ""
    noise = (
        f"; noise {_ms(s['noise_ms'])} (sigma), bar {_ms(s['bar_ms'])}, confidence {s['confidence']}"
        if s["noise_ms"] is not None
        else ""
    )
    return (
        f"{s['job']}: {len(s['ranks'])} rank(s){world}, {s['steps']} profiled step(s), median step "
        f"{_ms(s['median_step_ms'])}; lateness from {s['source']}; {s['matched_share']:.0%} of collectives matched "
        f"on every rank{noise}"
    )


def rows(s: RankTracesDoc) -> list[tuple[str, ...]]:
    return [
        (
            str(r["rank"]),
            r["host"] or "?",
            str(r["steps"]),
            _ms(r["median_step_ms"]),
            _ms(r["median_data_ms"]),
            _ms(r["median_h2d_ms"]),
            _ms(r["median_comm_ms"]),
            _ms(r["lateness_ms"]),
            str(r["late_steps"]),
            "STRAGGLER" if r["named"] else "",
        )
        for r in s["ranks"]
    ]


def notes(s: RankTracesDoc) -> list[str]:
    out = []
    if s["missing_ranks"]:
        out.append(f"no trace of rank(s) {_ranks(s['missing_ranks'])}: they cannot be judged")
    for rank, n in sorted(s["missing_collectives"].items(), key=lambda kv: int(kv[0])):
        out.append(f"rank {rank} lacks {n} collective(s) its peers ran in the steps all ranks have")
    if s["duplicates"]:
        out.append(f"left out, a rank traced twice over the same steps: {', '.join(s['duplicates'])}")
    if s["other_jobs"]:
        out.append(f"left out, another job's traces (another world size): {', '.join(s['other_jobs'])}")
    if s["unranked"]:
        out.append(f"no rank known (not compared): {', '.join(s['unranked'])}")
    offsets = {h: v for h, v in s["clock_offsets_ms"].items() if abs(v) >= 1.0}
    if offsets:
        out.append("host clocks: " + ", ".join(f"{h} {v:+.1f} ms" for h, v in offsets.items()) + " from the first host")
    return out


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks[:20])) + (f" and {len(ranks) - 20} more" if len(ranks) > 20 else "")
