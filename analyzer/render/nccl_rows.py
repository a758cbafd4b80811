"""The ``nccl`` section as table rows, shared by the text, Markdown and HTML renderers."""

from __future__ import annotations

from analyzer.findings import clip
from analyzer.report.types import NcclSection, ProcessDoc

MAX_ROWS = 40


def _ranks(ranks: list[int]) -> str:
    """``0-7, 9`` for a sorted list of ranks."""
    out: list[str] = []
    for r in sorted(set(ranks)):
        if out and out[-1].split("-")[-1] == str(r - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ", ".join(out) or "-"


HOST_HEADER = ("host", "processes", "ranks", "NCCL", "network", "transports", "init complete", "warns")


def host_rows(section: NcclSection) -> list[tuple[str, ...]]:
    """One row per host (processes of a host grouped), at most :data:`MAX_ROWS`."""
    by_host: dict[str, list[ProcessDoc]] = {}
    for p in section["processes"]:
        by_host.setdefault(p["host"] or "?", []).append(p)
    rows = []
    for host, procs in by_host.items():
        versions = sorted({p["version"] for p in procs if p["version"]}) or sorted(
            {f"{p['version_range'][0]}-{p['version_range'][1]}" for p in procs if p["version_range"]}
        )
        rows.append(
            (
                host,
                str(len(procs)),
                _ranks([r for p in procs for r in p["ranks"]]),
                ", ".join(versions) or "?",
                ", ".join(sorted({p["network"] or "?" for p in procs})),
                ", ".join(sorted({t for p in procs for t in p["transports"]})) or "-",
                f"{sum(p['init_complete'] for p in procs)}/{len(procs)}",
                str(sum(p["warns"] for p in procs)),
            )
        )
    if len(rows) > MAX_ROWS:
        rows = rows[:MAX_ROWS] + [(f"... {len(rows) - MAX_ROWS} more hosts (JSON report)",) + ("",) * 7]
    return list(rows)


ERROR_HEADER = ("class", "where", "message")


def error_rows(section: NcclSection) -> list[tuple[str, str, str]]:
    return [
        (
            e["class"],
            f"{e['host'] or '?'}:{e['pid'] if e['pid'] is not None else '?'} ({e['file']}:{e['line']})",
            clip(e["message"], 160),
        )
        for e in section["errors"][:MAX_ROWS]
    ]


WATCHDOG_HEADER = ("rank", "SeqNum", "op", "ran (s)", "last completed")


def watchdog_rows(section: NcclSection) -> list[tuple[str, ...]]:
    return [
        (
            str(w["rank"]) if w["rank"] is not None else "?",
            str(int(w["seq"])) if w["seq"] is not None else "?",
            w["op"],
            f"{w['ran_ms'] / 1e3:.0f}",
            str(int(w["last_completed"])) if w["last_completed"] is not None else "?",  # a count: never "7752.0"
        )
        for w in section["watchdog_timeouts"][:MAX_ROWS]
    ]


def comm_lines(section: NcclSection) -> list[str]:
    out = []
    for c in section["communicators"][:MAX_ROWS]:
        line = (
            f"communicator {c['comm_id'] or c['id']}: {c['nranks']} ranks, {len(c['ranks_complete'])} reached "
            f"Init COMPLETE"
        )
        if c["ranks_incomplete"]:
            line += "; stuck: " + ", ".join(f"{r['rank']} ({r['host'] or '?'})" for r in c["ranks_incomplete"])
        out.append(line)
    return out


def summary_line(section: NcclSection) -> str:
    procs = section["processes"]
    parts = [f"{len(procs)} NCCL process(es) on {len(section['hosts'])} host(s)"]
    if section["errors"]:
        parts.append(f"{len(section['errors'])} error(s)")
    if section["watchdog_timeouts"]:
        parts.append(f"{len(section['watchdog_timeouts'])} watchdog timeout(s)")
    if section["horovod_stalls"]:
        parts.append(f"{len(section['horovod_stalls'])} stalled rank entr(y/ies)")
    a = section["autotune"]
    if a:
        parts.append(
            f"autotune best: fusion {a['fusion_threshold_mb']:g} MB, cycle {a['cycle_time_ms']:g} ms "
            f"(score {a['score']:g})"
        )
    return "; ".join(parts)
