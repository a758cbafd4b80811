"""``traces.incomplete``: what a job's per-rank traces leave out, and a rank that skipped collectives.

- A rank that lacks collectives its peers ran, in steps every rank has, is a hang's signature (a rank
  that never called a collective leaves the others waiting in it): a warning naming the rank.
- Ranks of the world without a trace (a partial set), a rank traced twice over the same steps (its
  second file is left out), traces whose rank is unknown: what the straggler verdict could not judge,
  said as a note, so that silence about them is not read as health.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.detectors.base import RankTracesDetector
from analyzer.findings import Evidence, Finding, Severity, SourceRef, Suggestion
from analyzer.ranktraces.model import RankTraceSet

if TYPE_CHECKING:  # detectors reach the store only through the context's methods
    from analyzer.context import Context
    from analyzer.jobs import Job

CODE = "traces.incomplete"
SHOWN = 12


def _few(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks[:SHOWN])) + (f" and {len(ranks) - SHOWN} more" if len(ranks) > SHOWN else "")


class RankCoverage(RankTracesDetector):
    name = "rank_coverage"
    code = CODE
    requires = ("rank_traces",)

    def check(self, s: RankTraceSet, ctx: Context, job: Job) -> list[Finding]:
        out = []
        lacking = s.missing_collectives()
        if lacking:
            ranks = sorted(lacking)
            out.append(
                Finding(
                    code=CODE,
                    severity=Severity.WARNING,
                    title=f"Rank(s) {_few(ranks)} skipped collectives their peers ran: a hang's signature",
                    summary=(
                        "In the profiled steps every traced rank has, "
                        + "; ".join(f"rank {r} lacks {lacking[r]} collective(s)" for r in ranks[:SHOWN])
                        + ". A rank that does not join a collective leaves its peers waiting in it until a "
                        "timeout; with matching steps and no missing call, every rank runs the same collectives."
                    ),
                    detector=self.name,
                    evidence=tuple(
                        Evidence(
                            summary=f"rank {r}: {lacking[r]} collective(s) missing",
                            sources=tuple(SourceRef(t.file) for t in s.traces if t.rank == r),
                            metrics={"rank": float(r), "missing": float(lacking[r])},
                        )
                        for r in ranks[:SHOWN]
                    ),
                    suggestions=(
                        Suggestion(
                            action=f"Look at what rank(s) {_few(ranks)} did instead in those steps (a branch on "
                            "the rank, an exception caught, a collective under a condition); the job's NCCL logs "
                            "and watchdog reports name the collective the others waited in.",
                        ),
                    ),
                    ranks=tuple(ranks),
                    job=job.id,
                )
            )
        notes = []
        if s.missing_ranks:
            notes.append(
                f"{len(s.missing_ranks)} of the job's {s.world_size} ranks have no trace (rank(s) "
                f"{_few(list(s.missing_ranks))}): they cannot be judged, and a straggler among them "
                "cannot be named"
            )
        if s.duplicates:
            notes.append(
                "a rank traced twice over the same steps (another job's trace, or a copy) is left out: "
                + ", ".join(f"rank {r} in {f}" for r, f in s.duplicates[:SHOWN])
            )
        if s.other_jobs:
            notes.append(
                f"{len(s.other_jobs)} trace(s) of another world size (another job's, in the same folder) are left "
                "out: " + ", ".join(s.other_jobs[:SHOWN])
            )
        if s.unranked:
            notes.append(
                f"{len(s.unranked)} trace(s) state no rank (no distributedInfo, no rank in the file name) and "
                "are not compared: " + ", ".join(s.unranked[:SHOWN])
            )
        if notes:
            out.append(
                Finding(
                    code=CODE,
                    severity=Severity.INFO,
                    title=f"The per-rank traces cover {len(s.ranks)}"
                    + (f" of {s.world_size}" if s.world_size else "")
                    + " rank(s): "
                    + notes[0].split(":")[0],
                    summary="; ".join(notes) + ".",
                    detector=self.name,
                    suggestions=(
                        Suggestion(
                            action="Give every rank's trace (torch.profiler with tensorboard_trace_handler on "
                            "every rank, one folder), each once, with its rank in distributedInfo or its file "
                            "name (worker_name=f'rank{rank}').",
                        ),
                    ),
                    ranks=tuple(s.missing_ranks),
                    job=job.id,
                )
            )
        return out
