"""The runs the app shows, persisted in its store folder, and the background jobs that make them.

Layout of the store folder::

    DIR/runs/<run-id>/run.json        name, created, status, labels of its files, error
    DIR/runs/<run-id>/store/          the run's Parquet store (analyzer.store.run_store.RunStore)
    DIR/runs/<run-id>/analysis.json   report document + per-timeline views, written once
    DIR/runs/<run-id>/uploads/        uploaded files while they are ingested (removed after)

A run registered from an existing store (``hvd-analyze serve STORE``) keeps ``store`` in its
``run.json`` pointing there; the app never writes into that store. Jobs run on a thread
each; :meth:`RunLibrary.job` reports their stage and progress. Analysis documents are cached
in memory after the first read, so a callback never re-analyses a run.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import orjson

from analyzer import DEFAULT_MEMORY_BUDGET, AnalysisConfig, Context, HvdAnalyzeError
from analyzer.render import jsonreport
from analyzer.report import ReportDocument, TimelineViews, analyze_in, timeline_views
from analyzer.store import MANIFEST, InputFile, RunStore, SkippedFile, discover, recognise
from dashboards.uploads import Limits, SavedFile, folder_labels, save_upload

RUNS = "runs"
MAX_NAME = 120
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")


@dataclass
class Job:
    run_id: str
    stage: str = "queued"  # queued | unpacking | ingesting | analysing | done | failed
    done_bytes: int = 0
    total_bytes: int = 0
    error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def as_dict(self) -> dict[str, Any]:
        with self.lock:
            share = self.done_bytes / self.total_bytes if self.total_bytes else 0.0
            return {
                "run_id": self.run_id,
                "stage": self.stage,
                "progress": round(min(share, 1.0), 4),
                "error": self.error,
            }


class AnalysisDocument(TypedDict):
    """What the app shows of a run: the JSON report and the views of each timeline (by input id)."""

    report: ReportDocument
    views: dict[str, TimelineViews]


def analysis_document(store: RunStore, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> AnalysisDocument:
    """The report document and the views of every timeline: what the app shows of a run."""
    ctx = Context(store, AnalysisConfig(memory_budget=memory_budget))
    doc = jsonreport.to_document(analyze_in(ctx))
    views = {m.input_id: timeline_views(m) for m in ctx.timelines()}
    return {"report": doc, "views": views}


def run_name(names: list[str]) -> str:
    """A run's name from what it was made of: an archive's or a folder's name without its suffix,
    else the file names (shortened)."""
    first = names[0] if names else "run"
    for suffix in ARCHIVE_SUFFIXES:
        if len(names) == 1 and first.lower().endswith(suffix) and len(first) > len(suffix):
            return first[: -len(suffix)]
    joined = ", ".join(names)
    return joined if len(joined) <= 80 else joined[:77] + "..."


def fingerprint(paths: list[str]) -> str:
    """What identifies the inputs at ``paths`` without reading them: every file's resolved path, size
    and modification time (``serve PATH`` twice shows the run it made the first time)."""
    h = hashlib.sha256()
    for root in sorted(str(Path(p).resolve()) for p in paths):
        files = [Path(root)] if Path(root).is_file() else sorted(q for q in Path(root).rglob("*") if q.is_file())
        for f in files:
            st = f.stat()
            h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


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


class RunLibrary:
    def __init__(self, root: str | Path, limits: Limits | None = None) -> None:
        self.root = Path(root)
        self.limits = limits or Limits()
        self._jobs: dict[str, Job] = {}
        self._docs: dict[str, AnalysisDocument] = {}
        self._lock = threading.Lock()

    # runs ---------------------------------------------------------------------------------
    def runs(self) -> list[dict[str, Any]]:
        """Every run, newest first. A run that was being made when the server stopped (no job of
        this process has it) is marked failed, and its upload copy removed."""
        folder = self.root / RUNS
        out = []
        for d in folder.iterdir() if folder.is_dir() else []:
            meta = self.meta(d.name)
            if meta is None:
                continue
            if meta["status"] not in ("done", "failed") and meta["id"] not in self._jobs:
                meta["status"] = "failed"
                meta["error"] = "the server stopped while this run was being made: upload or serve it again"
                self._write_meta(meta)
                shutil.rmtree(d / "uploads", ignore_errors=True)
            out.append(meta)
        return sorted(out, key=lambda m: m["created"], reverse=True)

    def _dir(self, run_id: str) -> Path:
        if not run_id or not all(c.isalnum() or c == "-" for c in run_id):
            raise KeyError(run_id)
        return self.root / RUNS / run_id

    def meta(self, run_id: str) -> dict[str, Any] | None:
        """The run's run.json (None for an unknown id)."""
        try:
            meta: dict[str, Any] = json.loads((self._dir(run_id) / "run.json").read_text(encoding="utf-8"))
            return meta
        except (OSError, ValueError, KeyError):
            return None

    def rename(self, run_id: str, name: str) -> str:
        """Give run ``run_id`` a new name (spaces collapsed, at most :data:`MAX_NAME` characters).

        Raises:
            KeyError: no such run.
            HvdAnalyzeError: the name is empty.
        """
        meta = self.meta(run_id)
        if meta is None:
            raise KeyError(run_id)
        clean = " ".join(name.split())[:MAX_NAME]
        if not clean:
            raise HvdAnalyzeError("a run needs a name: type one, then press Rename")
        meta["name"] = clean
        self._write_meta(meta)
        return clean

    def delete(self, run_id: str) -> None:
        """Remove run ``run_id`` and what the app wrote for it; a store it only showed stays where it is.

        Raises:
            KeyError: no such run.
            HvdAnalyzeError: its upload is still being ingested.
        """
        if self.meta(run_id) is None:
            raise KeyError(run_id)
        job = self._jobs.get(run_id)
        if job is not None and job.as_dict()["stage"] not in ("done", "failed"):
            raise HvdAnalyzeError("this run is still being ingested: delete it once it is done or has failed")
        shutil.rmtree(self._dir(run_id), ignore_errors=True)
        with self._lock:
            self._docs.pop(run_id, None)
            self._jobs.pop(run_id, None)

    def _write_meta(self, meta: dict[str, Any]) -> None:
        d = self._dir(meta["id"])
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / "run.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1), encoding="utf-8")
        tmp.replace(d / "run.json")

    def _new_run(self, name: str, **extra: Any) -> dict[str, Any]:
        meta = {
            "id": time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6],
            "name": name,
            "created": time.time(),
            "status": "queued",
            "files": [],
            "error": None,
            **extra,
        }
        self._jobs[meta["id"]] = Job(meta["id"])  # before run.json exists: runs() never sees it orphaned
        self._write_meta(meta)
        return meta

    def document(self, run_id: str) -> AnalysisDocument | None:
        """The run's analysis document (None until its job is done)."""
        with self._lock:
            if run_id in self._docs:
                return self._docs[run_id]
        try:
            doc: AnalysisDocument = orjson.loads((self._dir(run_id) / "analysis.json").read_bytes())
        except (OSError, orjson.JSONDecodeError, KeyError):
            return None
        with self._lock:
            self._docs[run_id] = doc
        return doc

    def job(self, run_id: str) -> dict[str, Any] | None:
        job = self._jobs.get(run_id)
        return job.as_dict() if job else None

    # jobs ---------------------------------------------------------------------------------
    def submit_upload(self, files: list[tuple[str, bytes]], wait: bool = False) -> str:
        """A new run from uploaded ``(name, bytes)`` files; returns its id at once."""
        meta = self._new_run(run_name([n for n, _ in files]))
        folder = self._dir(meta["id"]) / "uploads"

        def unpack(job: Job) -> list[SavedFile]:
            saved: list[SavedFile] = []
            for name, data in files:
                saved += save_upload(name, data, folder, self.limits, start=len(saved))
            return saved

        return self._start(meta, unpack, cleanup=folder, wait=wait)

    def submit_paths(self, paths: list[str], wait: bool = False) -> str:
        """A run from files or folders on this machine (``hvd-analyze serve PATH``): the run already
        made of the same files (:func:`fingerprint`) when there is one, else a new one."""
        fp = fingerprint(paths)
        for meta in self.runs():
            if meta.get("fingerprint") == fp and meta["status"] != "failed":
                return str(meta["id"])
        meta = self._new_run(run_name([Path(p).resolve().name for p in paths]), fingerprint=fp)
        return self._start(meta, lambda job: [SavedFile(Path(p), p) for p in paths], cleanup=None, wait=wait)

    def register_store(self, store_dir: str, wait: bool = False) -> str:
        """A run showing an existing store (read only)."""
        resolved = str(Path(store_dir).resolve())
        for meta in self.runs():
            if meta.get("store") == resolved:
                return str(meta["id"])
        meta = self._new_run(Path(store_dir).name, store=resolved)
        return self._start(meta, None, cleanup=None, wait=wait)

    def _start(
        self, meta: dict[str, Any], collect: Callable[[Job], list[SavedFile]] | None, cleanup: Path | None, wait: bool
    ) -> str:
        job = self._jobs[meta["id"]]
        thread = threading.Thread(
            target=self._run_job, args=(meta, job, collect, cleanup), daemon=True, name=f"ingest-{meta['id']}"
        )
        thread.start()
        if wait:
            thread.join()
        return str(meta["id"])

    def _stage(self, meta: dict[str, Any], job: Job, stage: str) -> None:
        """Record ``stage`` in run.json, then in the job: whoever sees the job finished sees the run list agree."""
        meta["status"] = stage
        self._write_meta(meta)
        with job.lock:
            job.stage = stage

    def _run_job(
        self, meta: dict[str, Any], job: Job, collect: Callable[[Job], list[SavedFile]] | None, cleanup: Path | None
    ) -> None:
        labels: dict[str, str] = {}
        try:
            if collect is not None:
                self._stage(meta, job, "unpacking")
                saved = collect(job)
                labels = {str(s.path): s.label for s in saved} | folder_labels(saved)
                meta["files"] = [s.label for s in saved]
                self._stage(meta, job, "ingesting")
                store = RunStore.create_or_open(self._dir(meta["id"]) / "store")
                inputs, skipped = _inputs_of(saved)
                if not inputs:
                    reasons = "; ".join(f"{labels.get(str(s.path), s.path)}: {s.reason}" for s in skipped[:8])
                    raise HvdAnalyzeError(f"no input hvd-analyze reads in this upload ({reasons})")
                with job.lock:
                    job.total_bytes = sum(i.size for i in inputs)

                def progress(n: int) -> None:
                    with job.lock:
                        job.done_bytes += n

                store.ingest(inputs, skipped, progress=progress)
            else:
                if not (Path(meta["store"]) / MANIFEST).is_file():
                    raise HvdAnalyzeError(f"{meta['store']}: not a run store (no {MANIFEST})")
                store = RunStore.open(meta["store"])
            self._stage(meta, job, "analysing")
            doc = relabel(analysis_document(store, self.limits.memory_budget), labels)
            doc["labels"] = labels
            out = self._dir(meta["id"]) / "analysis.json"
            out.with_suffix(".tmp").write_bytes(orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY))
            out.with_suffix(".tmp").replace(out)
            self._stage(meta, job, "done")
        except Exception as exc:  # noqa: BLE001 - one bad upload must never break the app
            message = str(exc) if isinstance(exc, HvdAnalyzeError) else f"{type(exc).__name__}: {exc}"
            for path, label in labels.items():
                message = message.replace(path, label)
            with job.lock:
                job.error = message
            meta["error"] = message
            self._stage(meta, job, "failed")
        finally:
            if cleanup is not None:
                shutil.rmtree(cleanup, ignore_errors=True)


def _inputs_of(saved: list[SavedFile]) -> tuple[list[InputFile], list[SkippedFile]]:
    """The uploaded files that are inputs, and the others with the reason. Archive members are read
    as the CLI reads a folder: a run folder's env.txt, scripts or notes are skipped, never a reason to
    refuse the upload. A file uploaded (or given by path) on its own is named explicitly, as on the
    command line: one that is not an input is an error naming its byte; a folder is walked."""
    inputs: list[InputFile] = []
    skipped: list[SkippedFile] = []
    for s in saved:
        if "!" not in s.label:
            found, left = discover([s.path])
            inputs += found
            skipped += left
        elif isinstance(item := recognise(s.path), InputFile):
            inputs.append(item)
        else:
            skipped.append(item)
    return inputs, skipped
