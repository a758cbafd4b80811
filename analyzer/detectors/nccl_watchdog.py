"""``nccl.watchdog_timeout``: PyTorch's ProcessGroupNCCL watchdog timed out a collective.

Reading (``docs/formats/nccl-log.md`` §5): the same SeqNum and OpType on every rank is a hang
inside one collective (network, or a dead/stuck rank); the same SeqNum with different
OpTypes means ranks issued different collectives (desynchronised program); different
SeqNums mean some rank fell behind: the rank whose SeqNum is lowest is the suspect. When NCCL
logged an error in the same job, the timeouts are its consequence: a warning that names it (the
``nccl.error`` finding is the critical one and cites the timeouts).
"""

from __future__ import annotations

from analyzer.detectors._logs import listed, src, who
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
        ranked = w[w["rank"].notna()]
        per_rank = ranked.sort_values("seq").groupby("rank").first() if not ranked.empty else ranked
        seqs = sorted(set(w["seq"]))
        ops = sorted(set(w["op"]))
        suspect: tuple[int, ...] = ()
        if len(seqs) > 1 and len(per_rank) > 1:
            low = per_rank["seq"].min()
            suspect = tuple(int(r) for r in per_rank.index[per_rank["seq"] == low])
            verdict = (
                f"ranks are at different collectives: rank(s) {', '.join(map(str, suspect))} stopped at "
                f"SeqNum {int(low)}, others reached up to {int(per_rank['seq'].max())}; the lowest is the "
                "suspect (it stopped issuing collectives or is stuck before one)"
            )
        elif len(ops) > 1:
            verdict = (
                f"ranks timed out in different collectives at SeqNum {seqs[0]} ({', '.join(ops)}): the "
                "program is desynchronised (ranks took different code paths)"
            )
        else:
            verdict = (
                f"every rank that reported is stuck in the same collective ({ops[0]} SeqNum {seqs[0]}): a hang "
                "inside NCCL (network, or a rank that died or never arrived)"
            )
        first = w.sort_values(["file", "line"]).iloc[0]
        evidence = [
            Evidence(
                summary=f"rank {int(r.Index)}: {r.op} SeqNum {int(r.seq)} ran {r.ran_ms / 1e3:.0f} s (timeout "
                f"{r.timeout_ms / 1e3:.0f} s)"
                + (f", last completed work {int(r.last_completed)}" if r.last_completed == r.last_completed else ""),
                sources=(src(r.file, r.line),),
                metrics={"seq": float(r.seq), "ran_ms": float(r.ran_ms)},
            )
            for r in per_rank.itertuples()
        ][:12]
        if per_rank.empty:
            evidence = [
                Evidence(
                    summary=f"{first['op']} SeqNum {int(first['seq'])} timed out",
                    sources=(src(first["file"], first["line"]),),
                )
            ]
        cause = model.incidents[0].roots[0] if model.incidents else None
        after = (
            f" NCCL logged a {cause['class']} first ({who(cause['host'], cause['pid'])}, see nccl.error): the "
            "timeouts follow from it."
            if cause
            else ""
        )
        return [
            Finding(
                code=CODE,
                severity=Severity.WARNING if cause else Severity.CRITICAL,
                title=f"Collective timeout: {listed(ops, 3)} SeqNum {listed([str(s) for s in seqs], 4)}",
                summary=f"{len(w)} watchdog timeout(s) over {len(per_rank)} rank(s): {verdict}.{after}",
                detector=self.name,
                evidence=tuple(evidence),
                suggestions=(
                    Suggestion(
                        action="Find what the suspect rank was doing when the others entered the collective: "
                        "its last log lines, a py-spy dump, or PyTorch's flight recorder.",
                        env={"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"},
                    ),
                    Suggestion(
                        action="For a hang inside one collective, rerun with NCCL debug output to see which "
                        "connection stalls.",
                        env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,COLL"},
                    ),
                ),
                ranks=suspect,
                labels={"verdict": "behind" if suspect else "desync" if len(ops) > 1 else "hang"},
            )
        ]
