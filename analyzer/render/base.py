"""The renderer contract (after pyinstrument's): one method, report in, text out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from analyzer.findings import Finding
from analyzer.report.model import AnalysisReport
from analyzer.report.types import InputDoc, VerdictDoc


class Renderer(Protocol):
    name: str
    extension: str

    def render(self, report: AnalysisReport) -> str: ...


def impact_text(f: Finding) -> str:
    """A finding's impact in one line."""
    i = f.impact
    if i is None:
        return "not estimable"
    return (
        f"{i.seconds_per_step * 1000:.1f} ms/step ({i.fraction_of_step:.0%} of the step), "
        f"{i.confidence} confidence; assumes {i.assumptions}"
    )


def env_lines(f: Finding) -> list[str]:
    """Copy-pasteable ``export`` lines for every env setting the finding suggests."""
    return export_lines(s.env for s in f.suggestions)


def export_lines(envs: Iterable[Mapping[str, str]]) -> list[str]:
    return [f"export {k}={v}" for env in envs for k, v in env.items()]


def input_line(entry: InputDoc) -> str:
    if entry["kind"] == "rank_trace":
        rt = entry["rank_trace"]
        if rt is None:
            return f"{entry['path']}: rank_trace"
        who = f"rank {rt['rank']} (from {rt['rank_from']})" if rt["rank"] is not None else "rank unknown"
        where = f" on {rt['host']}" if rt["host"] else ""
        return (
            f"{entry['path']}: rank_trace, {who}{where}, {rt['steps']} step(s), {rt['collectives']} collective(s) "
            f"({rt['source']}), {rt['events']} events"
        )
    if entry["kind"] != "horovod_timeline":
        log = entry["log"]
        if log is None:
            return f"{entry['path']}: {entry['kind']}"
        return (
            f"{entry['path']}: {entry['kind']}, {log.get('lines', 0)} lines, {log.get('records', 0)} NCCL records "
            f"from {log.get('processes', 0)} process(es), {log.get('watchdog_timeouts', 0)} watchdog timeout(s), "
            f"{log.get('autotune_rows', 0)} autotune row(s)"  # a store of an older release may lack a count
        )
    tl = entry["timeline"]
    status, layout, cache = ("?", "?", "?") if tl is None else (tl["status"], tl["layout"], tl["response_cache"])
    ver = tl["horovod_version"]["text"] if tl is not None and tl["horovod_version"] else "?"
    return (
        f"{entry['path']}: {entry['kind']}, {status}, layout {layout}, "
        f"Horovod {ver}, response cache {cache}, "
        f"{entry.get('rows', {}).get('spans', 0)} spans, {entry.get('rows', {}).get('ticks', 0)} ticks"
    )


def job_lines(report: AnalysisReport) -> list[str]:
    """One line per job when the run holds several (none for a run of one job)."""
    if len(report.jobs) < 2:
        return []
    return [
        f"{j['name']} ({j['id']}): {len(j['timelines'])} timeline(s), {len(j['logs'])} log(s) - {j['tied_by']}"
        for j in report.jobs
    ]


def jobs_note(report: AnalysisReport) -> str | None:
    """What a report of several jobs says first: each finding rests on its own job; batch for unrelated
    runs, compare for two runs of one job."""
    if len(report.jobs) < 2:
        return None
    return (
        f"This run holds {len(report.jobs)} jobs (by folder; see Jobs): each finding uses the evidence of its own "
        "job only. For unrelated runs, `hvd-analyze batch FOLDER -o OUT` writes one report per run; to see "
        "what changed between two runs of a job, `hvd-analyze compare BEFORE AFTER`."
    )


def finding_groups(report: AnalysisReport) -> list[tuple[str | None, list[Finding]]]:
    """The findings in one group, or, for a run of several jobs, one group per job that has any
    (``(heading, findings)``, each most severe first)."""
    if len(report.jobs) < 2:
        return [(None, list(report.findings))]
    groups: list[tuple[str | None, list[Finding]]] = []
    for j in report.jobs:
        mine = [f for f in report.findings if f.job == j["id"]]
        if mine:
            groups.append((f"Job {j['name']} ({j['id']}): {len(mine)} finding(s)", mine))
    rest = [f for f in report.findings if f.job not in {j["id"] for j in report.jobs}]
    return groups + ([("Not tied to a job", rest)] if rest else [])


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), 0x7F)} | {0x0A: "\\n", 0x0D: "\\r", 0x09: " "}


def fixed(value: float, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals, never "-0.00": a value that rounds to zero has no sign."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters shown as escapes: a name or a log
    line from an input can never start a line of its own in a text report (a faked finding)."""
    return text.translate(_CONTROL)


@dataclass(frozen=True, slots=True)
class VerdictText:
    """The verdict in words, piece by piece, for every renderer and the app to lay out."""

    headline: str
    numbers: str | None  # median step, steps/s, time lost per step
    action: str | None  # "do first: ..."
    exports: list[str]  # its export lines
    passed: list[str]  # the checks that passed

    @property
    def passed_head(self) -> str:
        return f"checks passed ({len(self.passed)})"


def verdict_text(v: VerdictDoc) -> VerdictText:
    """The verdict's headline, numbers, first action with its exports, and checks passed, as text."""
    numbers = []
    if v["median_step_ms"] is not None:
        numbers.append(f"median step {v['median_step_ms']:,.1f} ms ({v['steps_per_s']:,.2f} steps/s)")
    if v["losses"]:
        lost = ", ".join(
            f"{loss['ms_per_step']:,.1f} ms ({loss['fraction_of_step']:.0%}) {loss['code']}"
            + (" (low confidence)" if loss["confidence"] == "low" else "")
            for loss in v["losses"]
        )
        numbers.append(f"lost per step: {lost}")
    return VerdictText(
        headline=v["headline"],
        numbers="; ".join(numbers) or None,
        action=f"do first: {v['action']}" if v["action"] else None,
        exports=export_lines([v["action_env"]]) if v["action"] else [],
        passed=list(v["passed"]),
    )


def verdict_lines(v: VerdictDoc) -> list[str]:
    """The verdict as plain lines: the headline, the numbers, the one thing to do, the checks passed."""
    t = verdict_text(v)
    out = [f"Verdict: {t.headline}", *([t.numbers] if t.numbers else [])]
    if t.action:
        out += [t.action, *(f"  {line}" for line in t.exports)]
    if t.passed:
        out.append(f"{t.passed_head}: " + "; ".join(t.passed))
    return out
