"""The timeline section as plain-text blocks, shared by the text and Markdown renderers."""

from __future__ import annotations

from analyzer.report.types import TimelineSection

TEXT_BINS = 12  # a terminal's histogram: enough to see the shape, short enough to read
BAR_WIDTH = 40


def histogram_lines(section: TimelineSection) -> list[str]:
    """One line per bin, at most :data:`TEXT_BINS` (adjacent bins merged): ``  80.0 -  85.0 ms | ####  12``."""
    hist = section["steps"]["histogram"]
    counts = list(hist["counts"])
    if not counts:
        return []
    edges = [e * 1e3 for e in hist["edges_s"]]
    k = -(-len(counts) // TEXT_BINS)  # bins merged per line
    if k > 1:
        counts = [sum(counts[i : i + k]) for i in range(0, len(counts), k)]
        edges = edges[::k] + ([edges[-1]] if (len(edges) - 1) % k else [])
    top = max(counts) or 1
    return [
        f"{a:8.1f} - {b:8.1f} ms | {'#' * round(BAR_WIDTH * c / top):<{BAR_WIDTH}} {c}"
        for a, b, c in zip(edges, edges[1:], counts, strict=False)
    ]


def steps_line(section: TimelineSection) -> str:
    s = section["steps"]
    seg = section["segmentation"]
    median, p10, p90, mean = s["median_s"], s["p10_s"], s["p90_s"], s["mean_s"]
    if median is None or p10 is None or p90 is None or mean is None:  # all None together: no steady step
        return f"{s['count']} step(s), none steady (segmentation: {seg['method']}, {seg['note']})"
    return (
        f"{s['count']} steps ({s['steady']} steady): median {median * 1e3:.1f} ms, "
        f"p10 {p10 * 1e3:.1f} ms, p90 {p90 * 1e3:.1f} ms, mean {mean * 1e3:.1f} ms "
        f"(segmentation: {seg['method']}, {seg['confidence']} confidence: {seg['note']})"
    )


def window_line(section: TimelineSection) -> str | None:
    """What a timeline over the memory budget was analysed from (None: all of it)."""
    w = section.get("window")
    return None if w is None else f"Analysed through a window: {w['note']}"


def phase_rows(section: TimelineSection) -> list[tuple[str, str, str]]:
    return [(p["phase"], f"{p['median_ms']:.2f}", f"{p['share_of_step']:.0%}") for p in section["phases"]]


def rank_rows(section: TimelineSection) -> list[tuple[str, str, str, str]]:
    return [
        (
            f"{r['rank']} ({r['host']})" if r.get("host") else str(r["rank"]),
            f"{r['last']}/{r['negotiations']}",
            f"{r['median_lateness_ms']:.1f}",
            f"{r['p90_lateness_ms']:.1f}",
        )
        for r in section["ranks"]["ranks"]
    ]


def unlisted_line(section: TimelineSection) -> str | None:
    """What the rank statistics leave out: negotiations naming more ranks than a job has, and the
    ranks beyond those the report lists (None: nothing)."""
    ranks = section["ranks"]
    said = []
    if ranks["oversized"]:
        said.append(
            f"{ranks['oversized']:,} negotiation(s) naming more than 1,048,576 ranks (more than any Horovod "
            "job) are left out of the ranks' statistics"
        )
    if (more := ranks["count"] - len(ranks["ranks"])) > 0:
        said.append(f"{more:,} more rank(s) not listed: the report lists the {len(ranks['ranks']):,} most often last")
    return "; ".join(said) or None


def noise_line(section: TimelineSection) -> str | None:
    """What the straggler verdict was judged against: the host's noise and the bar a rank must clear."""
    n = section["ranks"].get("noise")
    if n is None:
        return None
    told = (
        "too noisy to tell a rank late by less than that from the noise"
        if n["confidence"] == "low"
        else f"confidence {n['confidence']}"
    )
    return (
        f"host noise: the ranks' lateness spreads {n['noise_ms']:.1f} ms (sigma) around their peers' median over "
        f"{n['steps']} steady steps; a rank counts as late in a step {n['bar_ms']:.1f} ms behind its peers ({told})"
    )


def fusion_line(section: TimelineSection) -> str:
    f = section["fusion"]
    c = section["cycle"]
    parts = []
    if f["batches_per_step"] is not None:
        parts.append(
            f"{f['batches_per_step']:.0f} batches per step for {f['tensors_per_step']:.0f} tensors "
            f"({f['singleton_share']:.0%} single-tensor)"
        )
    parts.append(f"fusion threshold in effect {f['threshold_text']}")
    if c is not None and c.get("confidence", "high") == "high":
        parts.append(f"cycle {c['cycle_ms']:.2f} ms (markers)")
    elif c is not None and c.get("confidence") == "medium":
        parts.append(
            f"cycle about {c['cycle_ms']:.1f} ms ({c['low_ms']:.1f}-{c['high_ms']:.1f} ms: the coordinator's responses "
            "are never closer; no CYCLE_START markers)"
        )
    else:
        parts.append("cycle time unknown (no regular CYCLE_START markers: HOROVOD_TIMELINE_MARK_CYCLES=1 records them)")
    return "; ".join(parts)
