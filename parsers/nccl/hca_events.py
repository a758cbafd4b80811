"""An HCA's asynchronous events as NCCL's IB transport reports them (``transport/net_ib.cc``), in each release's
words, and which of them are news rather than failures.

* up to 2.22, every event: ``NET/IB : Got async event : <name>`` (``NET/IB : mlx5_0:1 Got async event : <name>``
  from 2.20), where ``<name>`` is libibverbs' ``ibv_event_type_str``;
* 2.23.4-2.28: the fatal ones as ``async fatal event on QP (…)`` / ``on CQ (…)`` (NCCL fails the communicator);
  those its code lists as non-fatal (a port coming up or going down, LID, P_Key and SM changes, a client
  re-registration, a path migration, a drained queue) as ``NET/IB : mlx5_0:1 Got async error event: <name>``,
  "error" in the words though not in NCCL's handling; an event it does not list (a GID table change) as
  ``unknown event type (18)``;
* 2.28.7+: ``Got non-fatal async event: <name>(<n>)``.

A port that went down (``port error``) is judged by what followed (:meth:`parsers.nccl.failures.Failures.settle`):
NCCL goes on when the link comes back.
"""

from __future__ import annotations

import re

#: ``Got async event : <name>`` (up to 2.22) and ``Got async error event: <name>`` (2.23.4-2.28)
_ASYNC_EVENT = re.compile(r"Got async (?P<listed>error )?event ?: (?P<event>[\w ]+?)\s*$", re.IGNORECASE)
#: 2.23.4-2.28's words for an event its code does not list: logged, nothing else done
_UNKNOWN = re.compile(r"\bunknown event type \(-?\d+\)\s*$")
#: the events that are news, not failures: the port came up, the subnet manager moved or re-registered, an address
#: or key changed, a queue drained
IB_NEWS = frozenset(
    {"port active", "lid change", "p_key change", "sm change", "client reregistration", "gid table change"}
    | {"communication established", "send queue drained", "path migrated", "srq limit reached", "last wqe reached"}
)
#: the event of an HCA port that went down: NCCL goes on when the link comes back, so what followed decides
PORT_DOWN = "port error"

IB_NEWS_NOTE = (
    "the InfiniBand port or subnet changed state (the port came up, the subnet manager moved or asked to re-register, "
    "an address changed): news NCCL goes on after, not a failure; a link flap only if completion errors follow"
)
LISTED_NOTE = (
    "an HCA event NCCL 2.23-2.28 lists as non-fatal (its words say 'error', its code only logs it and goes on): a "
    "failure only if completion errors follow"
)
UNKNOWN_NOTE = "an HCA event NCCL does not list (a GID table change, say): it logs it and goes on"


def async_event(msg: str) -> str | None:
    """The name (lower case) of the HCA event a WARN reports, if it reports one."""
    m = _ASYNC_EVENT.search(msg)
    return None if m is None else m["event"].lower()


def hca_news(msg: str) -> str | None:
    """Why the HCA event ``msg`` reports is no failure, if it is none: news, an event 2.23-2.28 lists as non-fatal
    (a port that went down aside: what followed decides), or one NCCL does not know."""
    m = _ASYNC_EVENT.search(msg)
    if m is not None and m["event"].lower() in IB_NEWS:
        return IB_NEWS_NOTE
    if m is not None and m["listed"] and m["event"].lower() != PORT_DOWN:
        return LISTED_NOTE
    return UNKNOWN_NOTE if _UNKNOWN.search(msg) else None
