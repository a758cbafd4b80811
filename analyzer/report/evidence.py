"""Whether a run holds anything to analyse at all, and what was read when it does not.

A report on inputs that hold no evidence (an empty timeline, a README taken for a log, a job log
with none of the signals hvd-analyze reads) must not say "Healthy": :func:`require_evidence` raises
:class:`~analyzer.errors.NothingAnalysable` instead, naming each input and what it held. Every
reader of a run (``report``, ``batch``, ``compare``, the app) goes through
:func:`analyzer.report.assembly.analyze_in`, which calls it first.
"""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.errors import NothingAnalysable
from analyzer.store.manifest import ManifestEntry, SkippedEntry

#: tables whose rows are not evidence of the job itself
NOT_EVIDENCE = frozenset({"parse_issues", "tensors"})
SHOWN = 6


def has_evidence(entry: ManifestEntry) -> bool:
    """True when the input gave rows an analysis reads: a timeline's spans, a trace's steps, a log's records."""
    if entry["kind"] == "horovod_timeline":
        return entry["rows"].get("spans", 0) > 0
    if entry["kind"] == "rank_trace":
        return entry["rows"].get("rank_steps", 0) > 0 or entry["rows"].get("rank_collectives", 0) > 0
    return any(n > 0 for table, n in entry["rows"].items() if table not in NOT_EVIDENCE)


def what_was_read(entry: ManifestEntry) -> str:
    """One input in a few words: what it was read as and why it holds nothing to analyse."""
    lost = entry["issues"]["data_loss"] + entry["issues"]["error"]
    if entry["kind"] == "horovod_timeline":
        facts = entry.get("timeline")
        status = facts["status"] if facts else "unknown"
        if entry["size"] == 0:
            return f"{entry['path']}: a 0-byte file, nothing in it"
        records = facts["records"] if facts else 0
        return (
            f"{entry['path']}: read as a Horovod timeline ({status}, {entry['size']:,} bytes, {records:,} record(s)) "
            "with no span (no activity of any tensor)"
            + (f"; {lost} loss(es) of data: the file is cut or damaged before its first span" if lost else "")
        )
    if entry["kind"] == "rank_trace":
        trace = entry.get("rank_trace")
        return (
            f"{entry['path']}: read as a rank's profiler trace ({trace['events'] if trace else 0:,} events) with no "
            "ProfilerStep#N step and no collective (record with a torch.profiler schedule and call prof.step() "
            "every step)" + (f"; {lost} loss(es) of data" if lost else "")
        )
    log = entry.get("log")
    return (
        f"{entry['path']}: read as a job log ({log['lines'] if log else 0:,} lines), but none of them is an NCCL_DEBUG "
        "record, a watchdog timeout, a Horovod stall warning, a launcher's report of a worker's end or an "
        "autotune row" + (f" that could be used ({lost} damaged: see its parse issues with `ingest`)" if lost else "")
    )


def require_evidence(entries: Sequence[ManifestEntry], skipped: Sequence[SkippedEntry], where: str = "") -> None:
    """Raise :class:`NothingAnalysable` when no input of a run holds evidence (``where``: the store, if
    the user named one).

    Raises:
        NothingAnalysable: with each input and what it held, and the files that were not inputs.
    """
    if any(has_evidence(e) for e in entries):
        return
    read = [what_was_read(e) for e in entries[:SHOWN]]
    if len(entries) > SHOWN:
        read.append(f"and {len(entries) - SHOWN} more input(s) like them")
    notes = "; ".join(read) if read else "no input"
    if skipped:
        names = ", ".join(s["path"] for s in skipped[:SHOWN])
        more = f" and {len(skipped) - SHOWN} more" if len(skipped) > SHOWN else ""
        notes += f"; not inputs: {names}{more}"
    raise NothingAnalysable(
        f"nothing to analyse{f' in {where}' if where else ''}: {notes}. Give the run's Horovod timeline (the file HOROVOD_TIMELINE "
        "named), its ranks' profiler traces, its NCCL_DEBUG=INFO logs or the job's stdout/stderr with them"
    )
