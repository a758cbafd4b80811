"""``nccl.init_incomplete``: ranks of a communicator never reached ``Init COMPLETE``.

Signal: a rank logged ``Init START`` (2.18.3+; the first ``comm ... rank`` line in 2.3)
and never ``Init COMPLETE``, and something shows it was stuck rather than cut off (logs
are often excerpts, or captures of a job killed during init): other ranks of the same
communicator completed, or its process logged an error.
"""

from __future__ import annotations

from analyzer.detectors._logs import listed, src
from analyzer.detectors.base import LogDetector
from analyzer.findings import Evidence, Finding, Severity, Suggestion
from analyzer.nccl.model import NcclModel

CODE = "nccl.init_incomplete"


class InitIncomplete(LogDetector):
    name = "init_incomplete"
    code = CODE
    requires = ("nccl_comm_ranks",)

    def check(self, model: NcclModel) -> list[Finding]:
        failed = {(e["host"], e["pid"]) for e in model.classified_errors}
        out = []
        for comm in model.communicators:
            stuck = [r for r in comm["ranks_incomplete"] if comm["ranks_complete"] or (r["host"], r["pid"]) in failed]
            if not stuck:
                continue
            names = [f"{r['rank']} ({r['host'] or '?'})" for r in stuck]
            hosts = tuple(sorted({r["host"] for r in stuck if r["host"]}))
            with_errors = [r for r in stuck if (r["host"], r["pid"]) in failed]
            ev = [
                Evidence(
                    summary=f"rank {r['rank']} on {r['host'] or '?'} (pid {r['pid']}) logged Init START, "
                    "never Init COMPLETE",
                    sources=(src(r["file"], r["line"]),),
                )
                for r in stuck[:8]
            ]
            if comm["ranks_complete"]:
                ev.append(
                    Evidence(
                        summary=f"ranks {listed([str(x) for x in comm['ranks_complete']], 16)} of "
                        f"{comm['nranks']} completed"
                    )
                )
            out.append(
                Finding(
                    code=CODE,
                    severity=Severity.CRITICAL if with_errors or comm["ranks_complete"] else Severity.WARNING,
                    title=f"Communicator {comm['comm_id'] or comm['id']}: rank(s) {listed([str(r['rank']) for r in stuck])} "
                    "never finished init",
                    summary=(
                        f"{len(stuck)} of {comm['nranks']} ranks started NCCL init and never reached Init COMPLETE: "
                        f"{listed(names)}."
                        + (
                            f" Rank(s) {listed([str(r['rank']) for r in with_errors])} logged errors (see nccl.error)."
                            if with_errors
                            else ""
                        )
                        + " The ranks that completed wait for them in their first collective."
                    ),
                    detector=self.name,
                    evidence=tuple(ev),
                    suggestions=(
                        Suggestion(
                            action=f"Look at the log of host(s) {', '.join(hosts) or '?'} around their Init START: the first "
                            "WARN there (network, GPU, /dev/shm) is the cause; if there is none, the process hung or "
                            "was killed (check dmesg / the scheduler).",
                            env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,BOOTSTRAP,NET"},
                        ),
                    ),
                    ranks=tuple(r["rank"] for r in stuck),
                    hosts=hosts,
                )
            )
        return out
