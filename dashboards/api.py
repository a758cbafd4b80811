"""The app's HTTP API and its access rules, on the Flask server under the Dash app.

- ``POST /api/runs``: a new run from the request's files — the body itself (``?name=FILE``
  names it; ``curl --data-binary @timeline.json``) or a ``multipart/form-data`` form (``curl -F
  file=@timeline.json -F file=@nccl.log``; the page's upload uses it). Files and archives go to
  disk as they are read (:func:`dashboards.uploads.receive`), never whole in memory; the answer
  (202) comes at once with the run's id, its page and its API address.
- ``GET /api/runs``: every run; ``GET /api/runs/ID``: its status, progress, error and, once
  done, the JSON report (``report.schema.json``); ``DELETE /api/runs/ID`` removes it.
- Downloads of a finished run: ``/api/runs/ID/report.json``, ``/api/runs/ID/report.html`` and
  ``/api/runs/ID/slice?steps=A:B`` (some steps of its timeline as a Chrome trace, read from its
  store by row groups: :mod:`analyzer.slicing`).

Every request, page or API, first passes :func:`refusal`: the ``Host`` allow-list and the
origin of changes (DNS rebinding), then the access control ``serve`` was started with (a token
or an authenticating proxy's header).
"""

from __future__ import annotations

import hmac
import itertools
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, jsonify, request, send_file

from analyzer import AnalysisConfig, Context, HvdAnalyzeError, chrome_trace, main_timeline, step_window
from dashboards.runs import RunLibrary
from dashboards.uploads import UploadError, receive

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
TOKEN_COOKIE = "hvd_analyze_token"


@dataclass(frozen=True, slots=True)
class Access:
    """Who may use the app: the host names it answers to, and an access token or the header an
    authenticating reverse proxy sets (neither: anyone who can reach it, i.e. loopback only)."""

    hosts: frozenset[str] = LOOPBACK
    token: str | None = None
    proxy_header: str | None = None

    @property
    def controlled(self) -> bool:
        return bool(self.token or self.proxy_header)


def _hostname(authority: str) -> str:
    """``host`` of ``host:port`` (``[::1]:8050`` -> ``[::1]``), lower case."""
    a = authority.strip().lower()
    return a.split("]")[0] + "]" if a.startswith("[") else a.rsplit(":", 1)[0] if a.count(":") == 1 else a


def host_refused(
    host: str, origin: str | None, method: str, allowed: frozenset[str] | set[str], scheme: str = "http"
) -> str | None:
    """Why a request is refused (None: it is not): a ``Host`` the app does not serve (DNS
    rebinding), or a state-changing request from a page of another origin: an origin is its scheme,
    host and port, so another port of the same host (another app on localhost) is another origin."""
    name = _hostname(host)
    if name not in allowed:
        return (
            f"hvd-analyze does not answer to the host name {name!r}: start it with --allow-host {name} if that "
            "is how you reach it"
        )
    if method not in ("GET", "HEAD", "OPTIONS") and origin:
        o = urlsplit(origin)
        if (o.scheme.lower(), o.netloc.lower()) != (scheme.lower(), host.strip().lower()):
            return f"a request from the page of {origin!r} may not change this app's runs ({scheme}://{host})"
    return None


def token_given(headers: Any, cookies: Any, args: Any) -> str | None:
    """The token a request carries: ``Authorization: Bearer``, the app's cookie, or ``?token=``."""
    auth = str(headers.get("Authorization", ""))
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    given = cookies.get(TOKEN_COOKIE) or args.get("token")
    return str(given) if given else None


def refusal(
    access: Access, headers: Any, cookies: Any, args: Any, method: str, scheme: str = "http"
) -> tuple[int, str] | None:
    """``(status, why)`` when the request must be refused, else None; ``scheme``: the request's (behind an
    authenticating proxy, the one it says the page was loaded with)."""
    if access.proxy_header and headers.get("X-Forwarded-Proto"):
        scheme = str(headers["X-Forwarded-Proto"]).split(",")[0].strip()
    why = host_refused(str(headers.get("Host", "")), headers.get("Origin"), method, access.hosts, scheme)
    if why:
        return 403, why
    if access.proxy_header and not headers.get(access.proxy_header):
        return 401, (
            f"this hvd-analyze serves only requests that come through its authenticating proxy (which sets the "
            f"{access.proxy_header} header); go through the proxy"
        )
    if access.token:
        given = token_given(headers, cookies, args) or ""
        if not hmac.compare_digest(given.encode(), access.token.encode()):
            return 401, (
                "this hvd-analyze needs its access token: open the page once as /?token=TOKEN (a cookie keeps "
                "it), or send the header 'Authorization: Bearer TOKEN'"
            )
    return None


def install(server: Flask, library: RunLibrary, access: Access) -> None:
    """Add the access checks and the ``/api/runs`` routes to ``server``."""

    @server.before_request
    def _check() -> Any:
        refused = refusal(access, request.headers, request.cookies, request.args, request.method, request.scheme)
        if refused is None:
            return None
        status, why = refused
        if request.path.startswith("/api/"):
            return jsonify(error=why), status
        return why, status, {"Content-Type": "text/plain; charset=utf-8"}

    @server.after_request
    def _remember_token(resp: Response) -> Response:
        if access.token and request.args.get("token") == access.token:
            resp.set_cookie(TOKEN_COOKIE, access.token, httponly=True, samesite="Strict")
        return resp

    @server.post("/api/runs")
    def _post() -> Any:
        try:
            files = _receive(library)
        except UploadError as exc:
            return jsonify(error=str(exc)), 413 if "over the upload limit" in str(exc) else 400
        if not files:
            return jsonify(error="the request carried no file: send one as the body or as multipart form fields"), 400
        run_id = library.submit_upload(files)
        return jsonify(_links(run_id) | {"name": (library.meta(run_id) or {}).get("name"), "status": "queued"}), 202

    @server.get("/api/runs")
    def _list() -> Any:
        keep = ("id", "name", "status", "created", "error", "files")
        return jsonify(runs=[{k: m.get(k) for k in keep} | _links(m["id"]) for m in library.runs()])

    @server.get("/api/runs/<run_id>")
    def _get(run_id: str) -> Any:
        meta = library.meta(run_id)
        if meta is None:
            return jsonify(error=f"no run {run_id!r} here: GET /api/runs lists them"), 404
        job = library.job(run_id) or {}
        out = {k: meta.get(k) for k in ("id", "name", "status", "created", "error", "files")} | _links(run_id)
        out["progress"] = 1.0 if meta["status"] == "done" else job.get("progress", 0.0)
        if meta["status"] == "done":
            doc = library.document(run_id)
            out["report"] = doc["report"] if doc else None
        return jsonify(out)

    @server.get("/api/runs/<run_id>/report.json")
    def _report_json(run_id: str) -> Any:
        doc = library.document(run_id)
        if doc is None:
            return jsonify(error=f"run {run_id!r} has no report (unknown, or not done yet)"), 404
        resp = jsonify(doc["report"])
        resp.headers["Content-Disposition"] = f'attachment; filename="hvd-analyze-{run_id}.json"'
        return resp

    @server.get("/api/runs/<run_id>/report.html")
    def _report_html(run_id: str) -> Any:
        path = library.report_html(run_id)
        if path is None:
            return jsonify(error=f"run {run_id!r} has no HTML report (unknown, not done, or made before it)"), 404
        return send_file(path, mimetype="text/html", as_attachment=True, download_name=f"hvd-analyze-{run_id}.html")

    @server.get("/api/runs/<run_id>/slice")
    def _slice(run_id: str) -> Any:
        """Steps of the run's main timeline as a Chrome trace (``?steps=A:B|slowest|median``)."""
        store = library.store_of(run_id)
        if store is None:
            return jsonify(error=f"run {run_id!r} is unknown or not done"), 404
        spec = request.args.get("steps", "median")
        try:
            entry = main_timeline(store, request.args.get("timeline"), "this run")
            ctx = Context(store, AnalysisConfig(memory_budget=library.limits.memory_budget))
            window = step_window(ctx, entry, spec)
            pieces = chrome_trace(
                store, entry, window, lambda world: {r: p.host for r, p in ctx.places(entry["id"], world).items()}
            )
            first = next(pieces)  # the slice's records are read here: an error is still an answer
        except HvdAnalyzeError as exc:
            return jsonify(error=str(exc)), 400
        body = itertools.chain([first], pieces)  # streamed: the trace is never held whole a second time
        name = f"hvd-analyze-{run_id}-steps-{window.first}-{window.last}.json"
        return Response(
            body, mimetype="application/json", headers={"Content-Disposition": f'attachment; filename="{name}"'}
        )

    @server.delete("/api/runs/<run_id>")
    def _delete(run_id: str) -> Any:
        try:
            library.delete(run_id)
        except KeyError:
            return jsonify(error=f"no run {run_id!r} here"), 404
        except Exception as exc:  # HvdAnalyzeError: still ingesting
            return jsonify(error=str(exc)), 409
        return jsonify(deleted=run_id)


def _links(run_id: str) -> dict[str, str]:
    root = request.host_url
    return {"id": run_id, "url": f"{root}?run={run_id}", "api": f"{root}api/runs/{run_id}"}


def _receive(library: RunLibrary) -> list[tuple[str, Path]]:
    """The request's files, written to a new incoming folder: ``(user's name, path)``."""
    folder = library.incoming()
    out: list[tuple[str, Path]] = []
    try:
        if request.mimetype == "multipart/form-data":
            for i, (_, fs) in enumerate(request.files.items(multi=True)):
                name = Path(fs.filename or f"upload-{i}").name or f"upload-{i}"
                dst = folder / f"raw-{i:03d}"
                receive(name, fs.stream, dst, library.limits)
                out.append((name, dst))
        else:
            name = request.args.get("name") or request.headers.get("X-Filename") or "upload"
            dst = folder / "raw-000"
            if receive(Path(name).name or "upload", request.stream, dst, library.limits):
                out.append((Path(name).name or "upload", dst))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    if not out:
        shutil.rmtree(folder, ignore_errors=True)
    return out
