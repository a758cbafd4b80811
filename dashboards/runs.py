"""The runs the app shows, persisted in its store folder, and the background jobs that make them.

Layout of the store folder::

    DIR/runs/<run-id>/run.json        name, created, status, labels of its files, error
    DIR/runs/<run-id>/store/          the run's Parquet store (analyzer.store.run_store.RunStore)
    DIR/runs/<run-id>/analysis.json   report document + per-timeline views, written once
    DIR/runs/<run-id>/uploads/        uploaded files while they are ingested (removed after)
    DIR/incoming/<id>/                an upload being received (moved into its run when complete)

A run registered from an existing store (``hvd-analyze serve STORE``) keeps ``store`` in its
``run.json`` pointing there; the app never writes into that store. Each run is made by a worker
process (:mod:`dashboards.worker`, a bounded pool with a time and a memory limit per run) watched
by a thread of its own; :meth:`RunLibrary.job` reports its stage and progress. Analysis documents
are cached in memory after the first read, so a callback never re-analyses a run.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from analyzer import HvdAnalyzeError, RunStore
from dashboards.uploads import ARCHIVE_SUFFIXES, Limits
from dashboards.work import AnalysisDocument, Work
from dashboards.worker import Budget, Outcome, WorkerPool, internal_error

RUNS = "runs"
MAX_NAME = 120


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
            if self.stage in ("analysing", "done"):  # ingest is over, whatever its byte count said (a .gz inflates)
                share = 1.0
            return {
                "run_id": self.run_id,
                "stage": self.stage,
                "progress": round(min(share, 1.0), 4),
                "error": self.error,
            }


def run_name(names: list[str]) -> str:
    """A run's name from what it was made of: an archive's or a folder's name without its suffix,
    else the file names (shortened)."""
    first = names[0] if names else "run"
    for suffix in ARCHIVE_SUFFIXES:
        if len(names) == 1 and first.lower().endswith(suffix) and len(first) > len(suffix):
            return first[: -len(suffix)]
    joined = ", ".join(names)
    return joined if len(joined) <= 80 else joined[:77] + "..."


def run_labels(runs: list[dict[str, Any]]) -> dict[str, str]:
    """Each run's label in the pickers, by id: its name, and where another run has the same name, when
    it was made (and its id, where that is the same second too), so that runs can be told apart."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for meta in runs:
        by_name.setdefault(meta["name"], []).append(meta)
    out: dict[str, str] = {}
    for name, same in by_name.items():
        stamps = [time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(m["created"])) for m in same]
        for meta, stamp in zip(same, stamps, strict=True):
            if len(same) == 1:
                out[meta["id"]] = name
            elif stamps.count(stamp) == 1:
                out[meta["id"]] = f"{name} (made {stamp})"
            else:
                out[meta["id"]] = f"{name} (made {stamp}, run {meta['id']})"
    return out


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


class RunLibrary:
    def __init__(self, root: str | Path, limits: Limits | None = None, budget: Budget | None = None) -> None:
        self.root = Path(root).resolve()  # a relative --store-dir means the server's working folder, not the package's
        self.limits = limits or Limits()
        self.pool = WorkerPool(budget)
        for d in (self.root / "incoming").glob("*"):  # uploads a stopped server was receiving
            if time.time() - d.stat().st_mtime > 3600:
                shutil.rmtree(d, ignore_errors=True)
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

    def store_of(self, run_id: str) -> RunStore | None:
        """The run store of a finished run (None: unknown, not done, or its store is gone)."""
        meta = self.meta(run_id)
        if meta is None or meta["status"] != "done":
            return None
        root = Path(meta["store"]) if meta.get("store") else self._dir(run_id) / "store"
        try:
            return RunStore.open(root)
        except HvdAnalyzeError:
            return None

    def report_html(self, run_id: str) -> Path | None:
        """The HTML report the run's worker wrote (None: unknown run, or made before reports were kept)."""
        try:
            path = self._dir(run_id) / "report.html"
        except KeyError:
            return None
        return path if path.is_file() else None

    def job(self, run_id: str) -> dict[str, Any] | None:
        job = self._jobs.get(run_id)
        return job.as_dict() if job else None

    # jobs ---------------------------------------------------------------------------------
    def incoming(self) -> Path:
        """A new folder for an upload being received (:func:`dashboards.uploads.receive` writes there)."""
        d = self.root / "incoming" / uuid.uuid4().hex
        d.mkdir(parents=True)
        return d

    def submit_upload(self, files: list[tuple[str, Path]], wait: bool = False) -> str:
        """A new run from uploaded files, ``(user's name, received file)``; the files move into the run
        (their folder is removed) and the run's worker unpacks them. Returns the run's id at once."""
        meta = self._new_run(run_name([n for n, _ in files]))
        folder = self._dir(meta["id"]) / "uploads"
        folder.mkdir(parents=True, exist_ok=True)
        moved = []
        for i, (name, path) in enumerate(files):
            dst = folder / f"received-{i:03d}"
            Path(path).replace(dst)
            moved.append((name, str(dst)))
        for parent in {Path(p).parent for _, p in files}:
            shutil.rmtree(parent, ignore_errors=True)
        work = Work(str(self._dir(meta["id"])), self.limits, uploads=tuple(moved))
        return self._start(meta, work, cleanup=folder, wait=wait)

    def submit_paths(self, paths: list[str], wait: bool = False) -> str:
        """A run from files or folders on this machine (``hvd-analyze serve PATH``): the run already
        made of the same files (:func:`fingerprint`) when there is one, else a new one."""
        fp = fingerprint(paths)
        for meta in self.runs():
            if meta.get("fingerprint") == fp and meta["status"] != "failed":
                return str(meta["id"])
        meta = self._new_run(run_name([Path(p).resolve().name for p in paths]), fingerprint=fp)
        work = Work(str(self._dir(meta["id"])), self.limits, paths=tuple(paths))
        return self._start(meta, work, cleanup=None, wait=wait)

    def register_store(self, store_dir: str, wait: bool = False) -> str:
        """A run showing an existing store (read only)."""
        resolved = str(Path(store_dir).resolve())
        for meta in self.runs():
            if meta.get("store") == resolved:
                return str(meta["id"])
        meta = self._new_run(Path(store_dir).name, store=resolved)
        work = Work(str(self._dir(meta["id"])), self.limits, store=resolved)
        return self._start(meta, work, cleanup=None, wait=wait)

    def _start(self, meta: dict[str, Any], work: Work, cleanup: Path | None, wait: bool) -> str:
        job = self._jobs[meta["id"]]
        thread = threading.Thread(
            target=self._run_job, args=(meta, job, work, cleanup), daemon=True, name=f"run-{meta['id']}"
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

    def _run_job(self, meta: dict[str, Any], job: Job, work: Work, cleanup: Path | None) -> None:
        """Watch the run's worker (it waits for a free slot first) and record what it reports."""

        def report(kind: str, value: Any) -> None:
            if kind == "stage":
                self._stage(meta, job, str(value))
            elif kind == "files":
                meta["files"] = list(value)
            with job.lock:
                if kind == "total":
                    job.total_bytes = int(value)
                elif kind == "progress":
                    job.done_bytes += int(value)

        try:
            outcome = self.pool.run(work, report)
        except Exception as exc:  # one bad upload must never break the app
            outcome = Outcome(error=internal_error(exc))
        finally:
            if cleanup is not None:
                shutil.rmtree(cleanup, ignore_errors=True)
        if outcome.error is None:
            self._stage(meta, job, "done")
            return
        message = outcome.error
        for path, label in outcome.labels.items():
            message = message.replace(path, label)
        with job.lock:
            job.error = message
        meta["error"] = message
        self._stage(meta, job, "failed")
