"""``nccl.watchdog_timeout``: PyTorch's ProcessGroupNCCL watchdog timed out a collective.

Reading (``docs/formats/nccl-log.md`` §5): the same SeqNum and OpType on every rank is a hang
inside one collective (network, or a dead/stuck rank); the same SeqNum with different
OpTypes means ranks issued different collectives (desynchronised program); different
SeqNums mean some rank fell behind: the rank whose SeqNum is lowest is the suspect. Each process
group counts its SeqNums on its own (the group is named on the watchdog's work line, or on the
timeout line itself since PyTorch 2.3): the reading is made per group, so two groups timing out in
different collectives is no desync, and a rank is named in the default group, whose ranks are
the global ones, and in another group (where ``[Rank N]`` is the rank within it) only when the
line's launcher tag or the group's membership (PyTorch's ``ProcessGroupNCCL initialization
options: … global rank: G``) gives its rank in the job. When NCCL logged an error in the same
job, the timeouts are its consequence: a warning that names it (the ``nccl.error`` finding is the
critical one and cites the timeouts).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pandas as pd

from analyzer.detectors._logs import listed, seq_said, src, who
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel

CODE = "nccl.watchdog_timeout"


class WatchdogTimeout(LogDetector):
    name = "watchdog_timeout"
    code = CODE
    requires = ("watchdog_timeouts",)
    why_required = "no job log with PyTorch watchdog timeouts was ingested"

    def check(self, model: NcclModel) -> list[Finding]:
        w = model.watchdog_timeouts
        if w.empty:
            return []
        per_rank = _first_per_rank(w)
        seqs = _seqs(w)
        ops = sorted(set(w["op"]))
        readings = [_group_verdict(pg, rows) for pg, rows in _by_group(w)]
        kinds = {r.kind for r in readings}
        suspect = tuple(sorted({rank for r in readings for rank in r.suspects}))
        kind = next(
            (k for k in ("behind", "desync") if k in kinds),
            "groups" if len(readings) > 1 else "unknown" if kinds == {"unknown"} else "hang",
        )
        verdict = "; ".join(r.text for r in readings)
        if len(readings) > 1:
            verdict = (
                f"{len(readings)} process groups timed out, each with its own SeqNum counter, so "
                f"their SeqNums are not compared with each other: {verdict}"
            )
        first = w.sort_values(["file", "line"]).iloc[0]
        evidence = [
            Evidence(
                summary=f"rank {int(r.Index)}: {r.op}{seq_said(r.seq)} ran {r.ran_ms / 1e3:.0f} s (timeout "
                f"{r.timeout_ms / 1e3:.0f} s)"
                + (f", last completed work {int(r.last_completed)}" if r.last_completed == r.last_completed else ""),
                sources=(src(r.file, r.line),),
                metrics={"ran_ms": float(r.ran_ms), **({"seq": float(r.seq)} if r.seq == r.seq else {})},
            )
            for r in per_rank.itertuples()
        ][:12]
        if per_rank.empty:
            evidence = [
                Evidence(
                    summary=f"{first['op']}{seq_said(first['seq'])} timed out",
                    sources=(src(first["file"], first["line"]),),
                )
            ]
        cause = model.incidents[0].roots[0] if model.incidents else None
        after = ""
        if cause is not None and cause["level"] == "framework" and cause["file"] == first["file"]:
            if cause["line"] > first["line"]:  # a framework's report after the first timeout: not what they waited for
                cause = None
        if cause is not None and cause["level"] == "framework":  # a rank's own failure (its GPU, its DataLoader, …)
            after = f" The log shows {cause['class']} first (line {cause['line']}, see nccl.error): the timeouts follow from it."
        elif cause is not None:
            after = (
                f" NCCL logged a {cause['class']} first ({who(cause['host'], cause['pid'])}, see nccl.error): the "
                "timeouts follow from it."
            )
        return [
            Finding(
                code=CODE,
                severity=Severity.WARNING if cause else Severity.CRITICAL,
                title=f"Collective timeout: {listed(ops, 3)}"
                + (f" SeqNum {listed([str(s) for s in seqs], 4)}" if seqs else ""),
                summary=f"{len(w)} watchdog timeout(s) over {len(per_rank)} rank(s): {verdict}.{after}",
                detector=self.name,
                evidence=tuple(evidence),
                suggestions=(
                    Suggestion(
                        action=(
                            f"Find what rank(s) {listed([str(x) for x in suspect], 6)} were doing when the others "
                            "entered the collective: their last log lines, a py-spy dump, or PyTorch's flight recorder."
                            if suspect
                            else "Find the rank the others waited for (the log does not name it by its rank in the "
                            "job): each rank's last log lines, a py-spy dump of each, or PyTorch's flight recorder, "
                            "which shows the ranks that reached the collective."
                        ),
                        env={"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"},
                    ),
                    Suggestion(
                        action="For a hang inside one collective, rerun with NCCL debug output to see which "
                        "connection stalls.",
                        env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,COLL"},
                    ),
                ),
                ranks=suspect,
                labels={"verdict": kind},
            )
        ]


@dataclass(frozen=True, slots=True)
class _Reading:
    kind: str  # hang | desync | behind | unknown
    text: str
    suspects: tuple[int, ...] = ()


def _seqs(rows: pd.DataFrame) -> list[int]:
    """The SeqNums the timeouts printed (PyTorch 1.8-1.10 print none)."""
    return sorted({int(s) for s in rows["seq"].dropna()})


def _first_per_rank(rows: pd.DataFrame) -> pd.DataFrame:
    """Each rank's timeout with the lowest SeqNum (by rank; ranks unknown left out)."""
    ranked = rows[rows["rank"].notna()]
    return ranked.sort_values("seq").groupby("rank").first() if not ranked.empty else ranked


def _group_id(pg: object) -> str | None:
    """A process group as the watchdog's lines print it (``1``, ``0 (default_pg)``, ``11 119``: its id, and
    its GUID since PyTorch 2.3, which tells apart two groups made at the same place on different ranks)."""
    return " ".join(pg.replace("(", " (").split()) if isinstance(pg, str) and pg.strip() else None


def _by_group(w: pd.DataFrame) -> Iterator[tuple[str | None, pd.DataFrame]]:
    """The timeouts per process group, whose SeqNums count on their own. A timeout whose work line
    (which names the group) was not logged belongs to the one group its rank's other timeouts name,
    else to the one group its file's timeouts name; those of no named group are read together (as
    one group's: without the group, nothing tells them apart)."""
    ids = [_group_id(pg) for pg in w["pg"]]
    by_rank: dict[tuple[object, object], set[str]] = {}
    by_file: dict[object, set[str]] = {}
    for file, rank, pg in zip(w["file"], w["rank"], ids, strict=True):
        if pg is not None:
            by_rank.setdefault((file, rank), set()).add(pg)
            by_file.setdefault(file, set()).add(pg)

    def inherited(file: object, rank: object, pg: str | None) -> str | None:
        if pg is not None:
            return pg
        for named in (by_rank.get((file, rank), set()), by_file.get(file, set())):
            if len(named) == 1:
                return next(iter(named))
        return None

    ids = pd.Series(
        [inherited(f, r, g) for f, r, g in zip(w["file"], w["rank"], ids, strict=True)], index=w.index, dtype=object
    )
    known = ids.notna()
    for pg in sorted(set(ids[known])):
        yield pg, w[ids == pg]
    rest = w[~known]
    if not rest.empty:
        yield None, rest


def _job_ranks(rows: pd.DataFrame, ranks: tuple[int, ...]) -> tuple[int, ...]:
    """The job's ranks of a group's ``ranks``, from the timeouts' ``global_rank`` (the group's membership
    the log showed): all of them, or none when one is not known."""
    out = []
    for r in ranks:
        known = set(rows.loc[rows["rank"] == r, "global_rank"].dropna().astype(int))
        if len(known) != 1:
            return ()
        out.append(known.pop())
    return tuple(out)


def _group_verdict(pg: str | None, rows: pd.DataFrame) -> _Reading:
    """The reading of one group's timeouts (the module docstring's)."""
    where = f"process group {pg}: " if pg is not None else ""
    per_rank = _first_per_rank(rows)
    seqs = _seqs(rows)
    ops = sorted(set(rows["op"]))
    if not seqs:  # PyTorch 1.8-1.10: no SeqNum, so which collective each rank waits in is not known
        return _Reading(
            "unknown",
            f"{where}the ranks that reported timed out in {listed(ops, 3)}; their PyTorch (1.8-1.10) prints no SeqNum, "
            "so whether they wait in the same collective, or some are behind, is not known",
        )
    local = " (ranks within the group)" if pg is not None and pg.split()[0] != "0" else ""
    if len(seqs) > 1 and len(per_rank) > 1:
        low = per_rank["seq"].min()
        suspects = tuple(int(r) for r in per_rank.index[per_rank["seq"] == low])
        job = _job_ranks(rows, suspects) if local else suspects
        named = f" (the job's rank(s) {', '.join(map(str, job))})" if local and job else ""
        return _Reading(
            "behind",
            f"{where}ranks are at different collectives: rank(s) {', '.join(map(str, suspects))}{local}{named} "
            f"stopped at SeqNum {int(low)}, others reached up to {int(per_rank['seq'].max())}; the lowest is the "
            "suspect (it stopped issuing collectives or is stuck before one)",
            job,
        )
    if len(ops) > 1 and len(seqs) == 1:
        return _Reading(
            "desync",
            f"{where}ranks timed out in different collectives at SeqNum {seqs[0]} ({', '.join(ops)}): the program "
            "is desynchronised (ranks took different code paths)",
        )
    return _Reading(
        "hang",
        f"{where}every rank that reported is stuck in the same collective ({listed(ops, 3)} SeqNum "
        f"{listed([str(s) for s in seqs], 4)}): a hang inside NCCL (network, or a rank that died or never arrived)",
    )
