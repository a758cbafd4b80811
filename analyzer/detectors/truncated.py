"""``timeline.truncated``: the timeline's content was cut or records were lost.

Signal: parse issues of severity ``data_loss`` on a timeline input: a cut gzip stream,
a record cut by the end of the file (``timeline.truncated_record``), a >=0.20.1 file without its closing
``]`` (``timeline.unterminated``), spans whose E never came (``timeline.unclosed_spans``,
Horovod's writer does not drain its queue at shutdown), orphan E events, unreadable
records. One finding per input file: everything before the loss is analysed. Severity warning
when steps are missing; info when the only loss is spans left open at the very end while every
step before the last is complete (Horovod 0.28.1 does not drain its writer at exit, so every
healthy run's file ends so). No threshold: any loss is reported.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from analyzer.findings import Evidence, Finding, Severity, SourceRef, Suggestion

if TYPE_CHECKING:
    from analyzer.context import Context

CODE = "timeline.truncated"
LOSS_CODES = {
    "timeline.truncated_record": "a record cut by the end of the file",
    "timeline.unterminated": "no closing ']' although Horovod >=0.20.1 writes one",
    "timeline.unclosed_spans": "spans whose E never came",
    "timeline.orphan_end": "E events whose B is missing",
    "timeline.corrupt_record": "unreadable records skipped",
    "timeline.bad_record": "records missing required fields",
    "timeline.trailing_data": "bytes after the closing ']'",
    "timeline.gzip_cut": "a cut or damaged gzip stream",
}


@dataclass(frozen=True, slots=True)
class IssueRow:
    """A ``parse_issues`` row of a timeline's data loss."""

    code: str
    count: int
    message: str
    byte_offset: int | None


class TruncatedTimeline:
    name = "truncated"
    code = CODE
    requires = ("parse_issues",)
    why_required = "no Horovod timeline was ingested"
    reads_rank_statistics = False

    def detect(self, ctx: Context) -> list[Finding]:
        by_input: dict[str, list[IssueRow]] = defaultdict(list)
        for row in ctx.table("parse_issues").to_pylist():
            if row["severity"] == "data_loss" and row["code"] in LOSS_CODES:
                by_input[row["input_id"]].append(
                    IssueRow(row["code"], int(row["count"]), row["message"], row["byte_offset"])
                )
        findings = []
        jobs = ctx.jobs()
        for input_id, rows in sorted(by_input.items()):
            entry = ctx.input_entry(input_id)
            path = str(entry["path"])
            tl = entry.get("timeline")
            kept = tl["records"] if tl else 0
            status = tl["status"] if tl else "?"
            evidence = tuple(
                Evidence(
                    summary=f"{row.code} x{row.count}: {row.message}",
                    sources=(SourceRef(path, byte_offset=row.byte_offset),),
                    metrics={"count": float(row.count)},
                )
                for row in rows
            )
            unclosed = sum(r.count for r in rows if r.code == "timeline.unclosed_spans")
            if {r.code for r in rows} == {"timeline.unclosed_spans"} and _steps_complete_but_last(ctx, input_id):
                severity = Severity.INFO
                title = f"Timeline ends with {unclosed} span(s) never closed: the writer's unflushed tail"
                summary = (
                    f"{path}: the last {unclosed} span(s) have no E (Horovod's writer does not drain its queue at "
                    f"exit); every step before the last is complete and analysed, so nothing of the run before its "
                    f"end is missing (status: {status})."
                )
            else:
                severity = Severity.WARNING
                title = "Timeline is truncated: the end of the run is missing"
                summary = (
                    f"{path}: {'; '.join(LOSS_CODES[c] for c in sorted(r.code for r in rows))}. The {kept} records "
                    f"before the loss were analysed (status: {status}); steps after the cut are not in "
                    "this report."
                )
            findings.append(
                Finding(
                    code=CODE,
                    severity=severity,
                    title=title,
                    summary=summary,
                    detector=self.name,
                    job=job.id if (job := jobs.job_of(input_id)) else None,
                    evidence=evidence,
                    suggestions=(
                        Suggestion(
                            action="Stop the timeline explicitly after the last step with hvd.stop_timeline(): it "
                            "drains Horovod's writer queue before closing the file, which hvd.shutdown() "
                            "does not (Horovod >=0.22 needs HOROVOD_TIMELINE set at start for the API).",
                            env={"HOROVOD_TIMELINE": "DYNAMIC"},
                            rationale="With HOROVOD_TIMELINE=DYNAMIC, call hvd.start_timeline(path) / "
                            "hvd.stop_timeline() around the steps to record.",
                        ),
                        Suggestion(
                            action="If the job was killed, the loss is expected: rerun a few steps with the "
                            "timeline on to capture a complete one.",
                        ),
                    ),
                )
            )
        return findings


def _steps_complete_but_last(ctx: Context, input_id: str) -> bool:
    """Whether every step of the timeline but its last is complete (the loss is the tail only)."""
    model = next((m for m in ctx.timelines() if m.input_id == input_id), None)
    if model is None:
        return False
    steps = model.all_steps
    return len(steps) >= 2 and bool(steps["complete"].iloc[:-1].all())
