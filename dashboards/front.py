"""The HTTP front of ``serve``: waitress, with what a request must pass before its body is read.

Waitress reads a request's whole body (spooling it to a temporary file) before the app sees the
request, so a check in the app comes after the bytes are on disk: anyone who could reach the port could
fill it, token or not. Here the checks run on the headers, as soon as they are complete:

* the Host and Origin checks and the access control of :func:`dashboards.api.refusal` (a token, or the
  header of an authenticating proxy) for a request that carries a body: refused with 401/403 before a
  byte of it is stored;
* a declared body over the app's limit: 413 at once (waitress' own check, ``max_request_body_size``);
* a body that trickles in (1 byte/s) is cut once it falls under :data:`MIN_BODY_RATE` after
  :data:`BODY_GRACE_S`, so slow clients cannot hold connections for ever; and the connection limit is
  high enough that a hundred of them do not starve the pages (waitress' default is 100).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl

from dashboards.api import Access, refusal

#: bytes per second under which an upload's body is cut, once it has had BODY_GRACE_S seconds
MIN_BODY_RATE = 16 << 10
BODY_GRACE_S = 30.0
#: connections open at once (each costs a socket and a small buffer, no thread: reads are asynchronous)
CONNECTION_LIMIT = 1000
#: seconds a connection may stay silent
IDLE_S = 60


class WaitressHeaders(Mapping[str, str]):
    """Waitress' parsed headers (``X_FORWARDED_USER``) read by their HTTP names (``X-Forwarded-User``)."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self._raw = raw

    def __getitem__(self, name: str) -> str:
        return self._raw[name.upper().replace("-", "_")]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def early_refusal(access: Access, command: str, headers: Mapping[str, str], query: str, scheme: str) -> Any:
    """``(status, why)`` when a request with a body must be refused on its headers, else None."""
    named = WaitressHeaders(headers)
    cookies = {k: v.value for k, v in SimpleCookie(named.get("Cookie", "")).items()}
    return refusal(access, named, cookies, dict(parse_qsl(query)), command, scheme)


def serve(app: Any, access: Access, **adjustments: Any) -> None:
    """Run ``app`` on waitress with the early checks (``adjustments``: waitress' own, e.g. host, port)."""
    from waitress import create_server
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser
    from waitress.server import BaseWSGIServer
    from waitress.utilities import BadRequest, Error

    class Unauthorized(Error):  # type: ignore[misc] # waitress has no type hints
        code = 401
        reason = "Unauthorized"

    class Forbidden(Error):  # type: ignore[misc]
        code = 403
        reason = "Forbidden"

    class TooSlow(BadRequest):  # type: ignore[misc]
        code = 408
        reason = "Request Timeout"

    class GuardedParser(HTTPRequestParser):  # type: ignore[misc] # waitress has no type hints
        started: float | None = None
        completed: bool
        headers_finished: bool

        def received(self, data: bytes) -> int:
            before = self.headers_finished
            consumed: int = super().received(data)
            if self.completed or not self.headers_finished:
                return consumed
            if not before:  # the headers are complete: check them before any of the body is kept
                if not (self.content_length > 0 or self.chunked):
                    return consumed  # no body to keep: the app answers (its refusals are its pages')
                self.started = time.monotonic()
                why = early_refusal(access, self.command, self.headers, self.query, self.url_scheme)
                if why is not None:
                    status, text = why
                    self.error = (Unauthorized if status == 401 else Forbidden)(text)
                    self.completed = True
            elif self.started is not None:
                spent = time.monotonic() - self.started
                if spent > BODY_GRACE_S and self.body_bytes_received < MIN_BODY_RATE * spent:
                    self.error = TooSlow(
                        f"the body came at {self.body_bytes_received / spent:,.0f} bytes/s, under the "
                        f"{MIN_BODY_RATE:,} bytes/s this server waits for; upload again on a faster link"
                    )
                    self.completed = True
            return consumed

    class GuardedChannel(HTTPChannel):  # type: ignore[misc]
        parser_class = GuardedParser

    adjustments.setdefault("connection_limit", CONNECTION_LIMIT)
    adjustments.setdefault("channel_timeout", IDLE_S)
    server = create_server(app, **adjustments)
    listening = getattr(server, "map", None) or getattr(server, "_map", {})  # several sockets' servers, or one
    for s in [server, *listening.values()]:
        if isinstance(s, BaseWSGIServer):
            s.channel_class = GuardedChannel
    server.run()
