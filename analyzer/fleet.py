"""``hvd-analyze batch``: one report per run and a fleet summary, runs spread over processes or Dask.

A run is a folder directly under RUNS_DIR (its timeline and logs, or a run store) or a single
input file there. Each run is one task (:func:`analyze_run`): ingest into a temporary store (or,
with ``--keep-stores``, into ``REPORTS_DIR/stores/<run>``, whose tables are partitioned by run so
that all of them read as one dataset), analyse, write ``REPORTS_DIR/runs/<name>.json`` and
return a small summary. The fleet summary (``fleet.json``, ``fleet.md``) says which runs fell
back to sockets, which had stragglers, which failed to analyse, every run with a finding at
warning or above, the worst step-time regressions within a run: its ``timeline.slowdown``
findings (:mod:`analyzer.timeline.changepoints`), by the time the slow steps lost, and the
step time of each job found in several runs, with the run where it regressed
(:mod:`analyzer.compare.trend`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from analyzer.compare.sides import job_fingerprints, step_samples
from analyzer.compare.trend import JobTrend, job_steps, job_trends
from analyzer.config import DEFAULT_MEMORY_BUDGET, AnalysisConfig
from analyzer.context import Context
from analyzer.detectors.slowdown import CODE as SLOWDOWN
from analyzer.errors import HvdAnalyzeError, UsageError
from analyzer.findings import Finding, Severity
from analyzer.fleet_types import (
    CodeHit,
    FaultyRun,
    FindingBrief,
    FleetSummary,
    NotARun,
    Regression,
    RunSummary,
    SlowdownBrief,
)
from analyzer.render import jsonreport
from analyzer.report.assembly import analyze_in
from analyzer.store.discovery import InputFile, discover, recognise
from analyzer.store.parallel import Executor
from analyzer.store.parts import safe_name
from analyzer.store.run_store import MANIFEST, RunStore, temporary_store
from parsers.inputs import InputKind

STORES = "stores"  # batch --keep-stores: REPORTS_DIR/stores/<run>
TOP = 10


INPUT_SUFFIXES = (".gz", ".json", ".log", ".txt", ".out", ".err", ".csv")


def run_name(path: Path) -> str:
    """The run's name: a folder's name, or a file's without the input endings (``a.json.gz`` -> ``a``)."""
    name = path.name
    if path.is_dir():
        return name
    while stem := next((name[: -len(e)] for e in INPUT_SUFFIXES if name.endswith(e) and len(name) > len(e)), None):
        name = stem
    return name


def find_runs(runs_dir: str | Path) -> tuple[list[tuple[str, str]], list[NotARun]]:
    """``(name, path)`` of every run under ``runs_dir``, sorted by name: each sub-folder, and each
    file that is an input; and each other entry with why it is not a run (a README or a script beside
    the runs), so that nothing is left out unsaid. A file's run name drops its input endings
    (:func:`run_name`) unless two runs would then share one.

    Raises:
        UsageError: not a folder, no runs in it, or a folder that is one run (a run store, or a
            timeline with its logs side by side), with the ``report`` command that reads it.
    """
    root = Path(runs_dir)
    if (root / MANIFEST).is_file():
        raise UsageError(
            f"{root} is one run store: `hvd-analyze report {root}` reads it; batch expects a folder of runs"
        )
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder; batch expects a folder with one sub-folder (or file) per run")
    entries = [p for p in sorted(root.iterdir()) if not p.name.startswith(".")]
    own = {p: recognise(p) for p in entries if not p.is_dir()}  # each file sniffed once
    kinds = {i.kind for i in own.values() if isinstance(i, InputFile)}
    if InputKind.HOROVOD_TIMELINE in kinds and len(kinds) > 1:
        raise UsageError(
            f"{root} looks like one run (a timeline with its logs side by side): `hvd-analyze report {root}` "
            "reads it; batch expects one sub-folder (or file) per run"
        )
    paths = [p for p in entries if p.is_dir() or isinstance(own[p], InputFile)]
    not_runs: list[NotARun] = [
        {"path": str(p), "reason": item.reason} for p, item in own.items() if not isinstance(item, InputFile)
    ]
    if not paths:
        why = "; ".join(f"{Path(n['path']).name}: {n['reason']}" for n in not_runs[:5])
        raise UsageError(f"{root}: no runs in it (expected one sub-folder or file per run){f'; {why}' if why else ''}")
    names = [run_name(p) for p in paths]
    if len({safe_name(n) for n in names}) != len(names):
        names = [p.name for p in paths]  # shortened names would collide: keep the files' own
    return sorted(zip(names, map(str, paths), strict=True)), not_runs


def analyze_run(
    name: str, path: str, out_dir: str, keep_store: bool = False, memory_budget: int = DEFAULT_MEMORY_BUDGET
) -> RunSummary:
    """Task: analyse one run, write its JSON report, return its summary (never raises for bad input).

    ``keep_store``: ingest into ``out_dir/stores/<run>`` (kept, and reused by a rerun) instead of
    a temporary store. ``memory_budget``: see :mod:`analyzer.timeline.load`."""
    config = AnalysisConfig(memory_budget=memory_budget)
    try:
        if (Path(path) / MANIFEST).is_file():
            summary = _summarize(name, RunStore.open(path), out_dir, config, None)
        else:
            inputs, skipped = discover([path])
            if not inputs:
                why = "; ".join(f"{s.path.name}: {s.reason}" for s in skipped[:5]) or "the folder is empty"
                raise UsageError(f"{path}: not an input hvd-analyze reads in this run ({why})")
            run = safe_name(name)
            with (
                nullcontext(RunStore.create_or_open(Path(out_dir) / STORES / run, run=run))
                if keep_store
                else temporary_store(run)
            ) as store:
                store.ingest(inputs, skipped)
                summary = _summarize(name, store, out_dir, config, path)
    except HvdAnalyzeError as exc:
        return {"run": name, "status": "failed", "error": str(exc)}
    except Exception as exc:  # one run's bug must not hide the other runs' reports
        return {
            "run": name,
            "status": "failed",
            "internal": True,
            "error": f"internal error: {type(exc).__name__}: {exc}. This is a bug in hvd-analyze, not in the run's "
            f"input: `HVD_ANALYZE_DEBUG=1 hvd-analyze report {path}` shows the traceback to report",
        }
    return summary


def analyze_runs(group: list[tuple[str, str, str, bool, int]]) -> list[RunSummary]:
    return [analyze_run(*args) for args in group]


def _summarize(name: str, store: RunStore, out_dir: str, config: AnalysisConfig, path: str | None) -> RunSummary:
    ctx = Context(store, config)
    report = analyze_in(ctx)
    doc = jsonreport.to_document(report)
    report_path = Path(out_dir) / "runs" / f"{safe_name(name)}.json"
    report_path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    main = report.main_timeline
    steps = main["steps"] if main else None
    slowdown = max(
        (_slowdown(f) for f in report.findings if f.code == SLOWDOWN), key=lambda s: s["lost_s"], default=None
    )
    findings: list[FindingBrief] = [
        {"code": f.code, "severity": f.severity.label, "title": f.title, "ranks": list(f.ranks), "hosts": list(f.hosts)}
        for f in report.findings
    ]
    return {
        "run": name,
        "status": "ok",
        "report": str(report_path),
        "worst": None if (worst := report.worst()) is None else worst.label,
        "findings": findings,
        "median_step_ms": steps["median_s"] * 1e3 if steps and steps["median_s"] is not None else None,
        "p90_step_ms": steps["p90_s"] * 1e3 if steps and steps["p90_s"] is not None else None,
        "slowdown": slowdown,
        "jobs": job_steps(report, step_samples(ctx), path, job_fingerprints(ctx)),
    }


def _slowdown(f: Finding) -> SlowdownBrief:
    """What the fleet summary keeps of a ``timeline.slowdown`` finding."""
    m = next(e.metrics for e in f.evidence if "onset_step" in e.metrics)
    return {
        "ratio": m["ratio"],
        "onset_step": int(m["onset_step"]),
        "baseline_ms": m["baseline_ms"],
        "onset_ms": m["onset_ms"],
        "lost_s": m["lost_s"],
        "title": f.title,
    }


def fleet_summary(summaries: Sequence[RunSummary], not_runs: Sequence[NotARun] = ()) -> FleetSummary:
    ok = [s for s in summaries if s["status"] == "ok"]

    def with_code(*codes: str) -> list[CodeHit]:
        out: list[CodeHit] = []
        for s in ok:
            hits = [f for f in s["findings"] if f["code"] in codes]
            if hits:
                out.append(
                    {
                        "run": s["run"],
                        "ranks": sorted({r for f in hits for r in f["ranks"]}),
                        "hosts": sorted({h for f in hits for h in f["hosts"]}),
                        "title": hits[0]["title"],
                    }
                )
        return out

    warn = Severity.parse("warning")
    faulty: list[FaultyRun] = [
        {
            "run": s["run"],
            "worst": s["worst"],
            "codes": sorted({f["code"] for f in s["findings"] if Severity.parse(f["severity"]) >= warn}),
        }
        for s in ok
        if s["worst"] is not None and Severity.parse(s["worst"]) >= warn
    ]
    lost = {s["run"]: sd["lost_s"] for s in ok if (sd := s.get("slowdown")) is not None}
    regress = sorted((s for s in ok if s["run"] in lost), key=lambda s: -lost[s["run"]])[:TOP]
    median = {s["run"]: m for s in ok if (m := s.get("median_step_ms")) is not None}
    return {
        "runs": len(summaries),
        "analysed": len(ok),
        "failed": [
            {"run": s["run"], "error": s["error"], "internal": s.get("internal", False)}
            for s in summaries
            if s["status"] == "failed"
        ],
        "not_runs": list(not_runs),
        "with_findings": faulty,
        "socket_fallback": with_code("nccl.socket_fallback"),
        "stragglers": with_code("timeline.straggler", "traces.straggler"),  # from the timeline or the ranks' traces
        "worst_regressions": [_regression(s) for s in regress],
        "slowest_steps": [
            {"run": s["run"], "median_step_ms": s["median_step_ms"]}
            for s in sorted((s for s in ok if s["run"] in median), key=lambda s: -median[s["run"]])[:TOP]
        ],
        "trends": job_trends([(s["run"], s.get("jobs", [])) for s in ok]),
    }


def _regression(s: RunSummary) -> Regression:
    sd = s.get("slowdown")
    assert sd is not None  # only runs with a slowdown are listed
    return {"run": s["run"], **sd, "median_step_ms": s.get("median_step_ms")}


def fleet_markdown(fleet: FleetSummary) -> str:
    lines = [
        f"# Fleet summary: {fleet['runs']} runs",
        "",
        (
            f"{fleet['analysed']} analysed, {len(fleet['failed'])} failed, "
            f"{len(fleet['with_findings'])} with a finding at warning or above."
        ),
        "",
    ]

    def section(title: str, rows: list[str]) -> None:
        lines.extend([f"## {title} ({len(rows)})", "", *(rows or ["none"]), ""])

    section("Socket fallback", [f"- `{r['run']}`: {r['title']}" for r in fleet["socket_fallback"]])
    section("Stragglers", [f"- `{r['run']}`: rank(s) {', '.join(map(str, r['ranks']))}" for r in fleet["stragglers"]])
    section(
        "Worst step-time regressions within a run (timeline.slowdown, by time lost)",
        [
            f"- `{r['run']}`: {r['ratio']:.2f}x from step {r['onset_step']:,} ({r['baseline_ms']:.1f} → "
            f"{r['onset_ms']:.1f} ms), {r['lost_s']:.1f} s lost: {r['title']}"
            for r in fleet["worst_regressions"]
        ],
    )
    section(
        "Runs with findings",
        [f"- `{r['run']}` ({r['worst']}): {', '.join(r['codes'])}" for r in fleet["with_findings"]],
    )
    section("Failed", [f"- `{r['run']}`: {r['error']}" for r in fleet["failed"]])
    section("Not runs (left out)", [f"- `{Path(r['path']).name}`: {r['reason']}" for r in fleet["not_runs"]])
    section("Step time per job over the runs (in run-name order)", trend_lines(fleet["trends"]))
    return "\n".join(lines)


def trend_lines(trends: Sequence[JobTrend]) -> list[str]:
    """A line per job found in several runs: its median step run by run, arrows where it changed
    significantly, and where a regression started."""
    out = []
    for tr in trends:
        arrows = {"slower": " ▲", "faster": " ▼"}
        points = " → ".join(
            f"{p['run']} {p['median_step_ms']:.3g} ms{arrows.get(p['vs_previous'], '')}"
            if p["median_step_ms"] is not None
            else f"{p['run']} -"
            for p in tr["runs"]
        )
        where = f"; regression started at `{tr['regression_started']}`" if tr["regression_started"] else ""
        back = f", recovered at `{tr['recovered']}`" if tr["recovered"] else ""
        out.append(f"- job `{tr['job']}`: {points}{where}{back}")
    return out


def run_batch(
    runs_dir: str | Path,
    out_dir: str | Path,
    executor: Executor,
    keep_stores: bool = False,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> FleetSummary:
    """Analyse every run of ``runs_dir`` into ``out_dir``; returns the fleet summary (also written).
    ``keep_stores``: each run's store stays in ``out_dir/stores/<run>``; ``memory_budget``: bytes
    one run's timeline analysis may take on a worker (:mod:`analyzer.timeline.load`)."""
    runs, not_runs = find_runs(runs_dir)
    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    names = [safe_name(n) for n, _ in runs]
    if len(set(names)) != len(names):
        raise UsageError(f"{runs_dir}: run names collide once made safe for file names; rename the folders")
    tasks = [(n, p, str(out), keep_stores, memory_budget) for n, p in runs]
    summaries = sorted(executor.map(analyze_runs, tasks, weight=lambda t: _size(t[1])), key=lambda s: s["run"])
    fleet = fleet_summary(summaries, not_runs)
    runs_out = [{k: v for k, v in s.items() if k != "jobs"} for s in summaries]  # the step samples stay out
    (out / "fleet.json").write_text(json.dumps({"fleet": fleet, "runs": runs_out}, indent=1) + "\n", encoding="utf-8")
    (out / "fleet.md").write_text(fleet_markdown(fleet), encoding="utf-8")
    return fleet


def _size(path: str) -> int:
    p = Path(path)
    if p.is_file():
        return p.stat().st_size + 1
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) + 1
