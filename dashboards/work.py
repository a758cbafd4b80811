"""What a worker process does for one run (:func:`make_run`): unpack the upload, ingest it, analyse
it and write ``analysis.json``. It runs in a process of its own (:mod:`dashboards.worker`), never
on a request thread, and reports its stage and progress through ``report``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import orjson

from analyzer import DEFAULT_MEMORY_BUDGET, RENDERERS, AnalysisConfig, AnalysisReport, Context, HvdAnalyzeError
from analyzer.compare import step_parts, step_samples
from analyzer.render import jsonreport
from analyzer.report import ReportDocument, TimelineViews, analyze_in, timeline_views
from analyzer.store import MANIFEST, InputFile, RunStore, SkippedFile, discover, recognise
from dashboards.uploads import Limits, SavedFile, folder_labels, save_upload


@dataclass(frozen=True, slots=True)
class Work:
    """One run to make: ``uploads`` (user's name, file saved by the request) to unpack, or
    ``paths`` on this machine to ingest, or ``store`` to show; the result goes to ``run_dir``."""

    run_dir: str
    limits: Limits
    uploads: tuple[tuple[str, str], ...] = ()
    paths: tuple[str, ...] = ()
    store: str | None = None


#: the folder of the files uploaded loose (not in an archive): the name of their job beside others
LOOSE_FILES = "uploaded files"

#: what a worker sends: ("stage", name) | ("total", bytes) | ("progress", bytes) |
#: ("files", [labels]) | ("labels", {path: label}) | ("done", None) | ("failed", message)
Report = Callable[[str, Any], None]


class AnalysisDocument(TypedDict):
    """What the app shows of a run: the JSON report, the views of each timeline (by input id) and
    their steady step times in seconds and mean step split (what the compare page tests; absent in runs
    made before it)."""

    report: ReportDocument
    views: dict[str, TimelineViews]
    steps_s: NotRequired[dict[str, list[float]]]
    step_parts: NotRequired[dict[str, dict[str, float]]]


def analysis_document(store: RunStore, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> AnalysisDocument:
    """The report document and the views of every timeline: what the app shows of a run."""
    return analysis_and_html(store, memory_budget)[0]


def analysis_and_html(store: RunStore, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> tuple[AnalysisDocument, str]:
    """:func:`analysis_document` and the run's HTML report (what the app offers to download)."""
    ctx = Context(store, AnalysisConfig(memory_budget=memory_budget))
    report = analyze_in(ctx)
    views = {m.input_id: timeline_views(m) for m in ctx.timelines()}
    doc: AnalysisDocument = {"report": jsonreport.to_document(report), "views": views, "steps_s": step_samples(ctx)}
    doc["step_parts"] = step_parts(ctx)
    return doc, RENDERERS["html"].render(report)


def relabel(value: Any, labels: dict[str, str]) -> Any:
    """``value`` with the app's copies of uploaded files named as the user named them."""
    if not labels:
        return value
    if isinstance(value, str):
        for path, label in sorted(labels.items(), key=lambda kv: -len(kv[0])):  # a file before its folder
            value = value.replace(path, label)
        return value
    if isinstance(value, dict):
        return {k: relabel(v, labels) for k, v in value.items()}
    if isinstance(value, list):
        return [relabel(v, labels) for v in value]
    return value


def make_run(work: Work, report: Report) -> None:
    """Make the run ``work`` describes; raises :class:`HvdAnalyzeError` (or worse) when it cannot."""
    run_dir = Path(work.run_dir)
    labels: dict[str, str] = {}
    try:
        if work.store is None:
            # the folder names the job of loose files when the run has several (archives' folders name theirs)
            saved = _collect(work, run_dir / "uploads" / LOOSE_FILES, report)
            loose = {str(run_dir / "uploads" / LOOSE_FILES): LOOSE_FILES} if work.uploads else {}
            labels = loose | {str(s.path): s.label for s in saved} | folder_labels(saved)
            report("labels", labels)
            report("files", [s.label for s in saved])
            report("stage", "ingesting")
            inputs, skipped = inputs_of(saved)
            if not inputs:
                reasons = "; ".join(f"{labels.get(str(s.path), s.path)}: {s.reason}" for s in skipped[:8])
                raise HvdAnalyzeError(f"no input hvd-analyze reads in this upload ({reasons})")
            report("total", sum(i.size for i in inputs))
            store = RunStore.create_or_open(run_dir / "store")
            store.ingest(inputs, skipped, progress=lambda n: report("progress", n))
        else:
            if not (Path(work.store) / MANIFEST).is_file():
                raise HvdAnalyzeError(f"{work.store}: not a run store (no {MANIFEST})")
            store = RunStore.open(work.store)
        report("stage", "analysing")
        analysis, html_report = analysis_and_html(store, work.limits.memory_budget)
        doc = relabel(analysis, labels)
        doc["labels"] = labels
        as_html = {path: escape(label) for path, label in labels.items()}  # a user's name is text, never markup
        (run_dir / "report.html").write_text(relabel(html_report, as_html), encoding="utf-8")
        write_json(run_dir / "analysis.json", doc)
    except HvdAnalyzeError as exc:
        raise HvdAnalyzeError(relabel(str(exc), labels)) from exc


def _collect(work: Work, folder: Path, report: Report) -> list[SavedFile]:
    if work.paths:
        return [SavedFile(Path(p), p) for p in work.paths]
    report("stage", "unpacking")
    saved: list[SavedFile] = []
    for name, path in work.uploads:
        saved += save_upload(name, Path(path), folder, work.limits, start=len(saved))
    return saved


def inputs_of(saved: list[SavedFile]) -> tuple[list[InputFile], list[SkippedFile]]:
    """The uploaded files that are inputs, and the others with the reason, read as the command line
    reads the same files (:func:`analyzer.store.discover`): archive members and loose files uploaded
    together as a folder's files are (a run folder's env.txt, scripts or notes are skipped, never a
    reason to refuse the upload); a file uploaded (or given by path) on its own must be an input, or
    the error names its byte; a folder is walked."""
    loose: list[str | Path] = [s.path for s in saved if "!" not in s.label]
    inputs, skipped = discover(loose, alone=len(saved) == 1)
    for s in saved:
        if "!" not in s.label:
            continue
        if isinstance(item := recognise(s.path), InputFile):
            inputs.append(item)
        else:
            skipped.append(item)
    return inputs, skipped


def write_json(path: Path, doc: Any) -> None:
    """Write ``doc`` as JSON at ``path`` atomically (readers see the old file or the whole new one)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY))
    tmp.replace(path)


#: what the app says of a run whose stored report this version cannot read back
OLDER_REPORT = (
    "This run was analysed by an older hvd-analyze, whose stored report this version cannot read: "
    "upload its files again (and delete this run)."
)


def report_of(doc: AnalysisDocument) -> AnalysisReport | None:
    """The typed report of a run's stored document; None when it was stored by an older release in a
    shape this one does not read (a key it lacks), which the pages then say."""
    try:
        return AnalysisReport.from_document(doc["report"])
    except (KeyError, TypeError, ValueError):
        return None
