"""Findings that explain one another say so.

Detectors judge their own evidence; some findings of one job are one story told twice. A long
Horovod QUEUE (``timeline.long_queue``: collectives wait for the GPU stream or the network) next to
``nccl.socket_fallback`` in the same job is the socket fallback's doing: the queue names it and
points to its fix instead of asking for NCCL logs the run already holds. With the job's NCCL logs
ingested and no fallback in them, the queue's advice says that too, rather than asking for them.
A ``timeline.slowdown`` that names the ranks that became late and a ``timeline.straggler`` naming the
same ranks in the same job are one story seen twice (the steps' time, the ranks' lateness): each
cites the other. A ``timeline.negotiation_wait`` (ranks waited, and the timeline cannot say for whom)
names the rank that ``traces.straggler`` found late in the same job's per-rank traces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from analyzer.findings import Evidence, Finding, Suggestion

QUEUE, FALLBACK = "timeline.long_queue", "nccl.socket_fallback"
SLOWDOWN, STRAGGLER = "timeline.slowdown", "timeline.straggler"
WAIT, TRACES = "timeline.negotiation_wait", "traces.straggler"


def relate(findings: Iterable[Finding], jobs_with_logs: set[str | None]) -> list[Finding]:
    """``findings`` with the long queue tied to its cause in the same job, and a slowdown and a
    straggler naming the same ranks citing each other."""
    found = _who_was_waited_for(_one_late_story(list(findings)))
    fallback = {f.job: f for f in found if f.code == FALLBACK}
    out = []
    for f in found:
        if f.code == QUEUE and f.job in fallback:
            cause = fallback[f.job]
            first = cause.suggestions[0] if cause.suggestions else None
            f = replace(
                f,
                evidence=(*f.evidence, Evidence(f"{FALLBACK} in the same job explains it: {cause.title}")),
                suggestions=(
                    Suggestion(
                        action=f"Fix the transport first ({FALLBACK}): "
                        + (first.action if first else "see that finding"),
                        env=dict(first.env) if first else {},
                    ),
                    *f.suggestions[1:],
                ),
            )
        elif f.code == QUEUE and f.job in jobs_with_logs:
            f = replace(
                f,
                suggestions=(
                    Suggestion(
                        action="The job's NCCL logs show no socket fallback (the NCCL section lists each host's "
                        "network and interfaces): look at the network's load and the GPU stream instead, or pin "
                        "the fast fabric with NCCL_SOCKET_IFNAME / NCCL_IB_HCA if a host chose another.",
                    ),
                    *f.suggestions[1:],
                ),
            )
        out.append(f)
    return out


def _who_was_waited_for(found: list[Finding]) -> list[Finding]:
    """The timeline's negotiation wait (which cannot say for whom, with the response cache on) names the
    rank the same job's per-rank traces found late, and its advice points there instead of asking for
    a rerun with the cache off."""
    late = {f.job: f for f in found if f.code == TRACES}
    out = []
    for f in found:
        twin = late.get(f.job) if f.code == WAIT else None
        if twin is not None:
            f = replace(
                f,
                evidence=(
                    *f.evidence,
                    Evidence(f"{TRACES} in the same job names whom the ranks waited for: {twin.title}"),
                ),
                suggestions=(
                    Suggestion(
                        action=f"The per-rank traces name the late rank(s) {', '.join(map(str, twin.ranks))}: "
                        + (twin.suggestions[0].action if twin.suggestions else f"see {TRACES}"),
                    ),
                    *f.suggestions,
                ),
                ranks=f.ranks or twin.ranks,
                hosts=f.hosts or twin.hosts,
            )
        out.append(f)
    return out


def _one_late_story(found: list[Finding]) -> list[Finding]:
    """A slowdown and a straggler of the same job naming the same ranks cite each other."""
    by = {(f.code, f.job, f.ranks): f for f in found if f.code in (SLOWDOWN, STRAGGLER) and f.ranks}
    out = []
    for f in found:
        other = SLOWDOWN if f.code == STRAGGLER else STRAGGLER if f.code == SLOWDOWN else None
        twin = by.get((other, f.job, f.ranks)) if other and f.ranks else None
        if twin is not None:
            f = replace(
                f, evidence=(*f.evidence, Evidence(f"{twin.code} in the same job tells the same story: {twin.title}"))
            )
        out.append(f)
    return out
