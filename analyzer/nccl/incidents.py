"""Root causes and their consequences among a run's NCCL errors.

One failure echoes through a job: the rank that hit it logs a WARN and a result chain, its
proxy threads report failed operations, its peers see their sockets closed, the framework
wraps the result code. :func:`attribute` tells which errors are root causes and links every
other error to the root it follows from:

- in a process, everything after its first root-cause error follows from it;
- a result chain without a WARN, a failed async job or proxy operation and a framework's
  wrapper report an earlier error: they follow from the root of their process, else the job's
  first root; but when no WARN names a cause (only peers going away), the first result chain
  logged before them is the root (its WARN went unlogged: NOWARN, another thread's lines);
- a peer going away (a socket closed or reset by the peer, a remote-error result) follows
  from an earlier root cause of another kind on another process;
- everything else starts a root cause of its own.

Errors are taken in the order the model lists them (file order; no clock is shared across
hosts, so "earlier" is what the files show).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from parsers.nccl.error_classes import ErrorClass
from parsers.nccl.rows import ErrorLevel

PEER_GONE = re.compile(
    r"closed by (?:remote )?peer|reset by peer|Broken pipe|remote process exited|closed before magic|as DEAD|"
    r"considered dead",
    re.IGNORECASE,
)


class CauseDoc(TypedDict):
    """Where the root cause an error follows from was logged."""

    file: str
    line: int


# "class" is a Python keyword: the functional form
ClassifiedError = TypedDict(
    "ClassifiedError",
    {
        "class": ErrorClass,
        "host": str | None,
        "pid": int | None,
        "file": str,
        "line": int,
        "level": ErrorLevel,
        "src": str | None,
        "message": str,
        "chain": list[str],
        "result_code": int | None,
        "remediation": str | None,
        "time": str | None,
        # raised while NCCL probed its networks, and the log ends before it shows whether the process failed
        "unconfirmed": bool,
        "role": Literal["root", "consequence"],
        "cause": CauseDoc | None,
    },
)
"""A classified NCCL error of the model, as the report's ``nccl.errors[]`` writes it: its ``role`` and
``cause`` are set by :func:`attribute`."""

Error = ClassifiedError


@dataclass
class Incident:
    """A root-cause class: its root errors (one per process at most) and what followed from them."""

    cls: str
    roots: list[Error] = field(default_factory=list)
    consequences: list[Error] = field(default_factory=list)


def peer_gone(err: Error) -> bool:
    """Whether an error says that a peer went away (the echo of a failure elsewhere)."""
    return err["class"] == "remote_process_exited" or bool(PEER_GONE.search(err["message"]))


def attribute(errors: Sequence[Error], consequences: Sequence[bool]) -> list[Incident]:
    """Mark each error's ``role`` (``root`` or ``consequence``) and ``cause`` (its root's
    ``{"file", "line"}``, None for a root), and group them into incidents by root class, in
    the order of their first root; ``consequences[i]``: the parser read ``errors[i]`` as the
    consequence of an earlier error (a result chain, a failed proxy operation)."""
    unlogged = _unlogged_cause(errors, consequences)
    roots: list[Error] = []
    proc_root: dict[tuple[Any, ...], Error] = {}
    deferred: list[Error] = []
    for e, follows in zip(errors, consequences, strict=True):
        if e is not unlogged and (e["level"] == "framework" or follows):
            deferred.append(e)
        elif (key := _key(e)) in proc_root:
            _follows(e, proc_root[key])
        elif peer_gone(e) and (other := next((r for r in roots if not peer_gone(r)), None)) is not None:
            _follows(e, other)
            proc_root[key] = other
        else:
            _root(e, roots, proc_root)
    for e in deferred:
        key = _key(e)
        cause = proc_root.get(key) if e["level"] != "framework" else None
        cause = cause or (roots[0] if roots else None)
        if cause is None:
            _root(e, roots, proc_root)
        else:
            _follows(e, cause)
            if e["level"] != "framework":
                proc_root.setdefault(key, cause)
    by_class: dict[str, Incident] = {}
    root_at = {(r["file"], r["line"]): r for r in roots}
    for r in roots:
        by_class.setdefault(r["class"], Incident(r["class"])).roots.append(r)
    for e in errors:
        if e["role"] == "consequence" and (where := e["cause"]) is not None:
            root = root_at[(where["file"], where["line"])]
            by_class[root["class"]].consequences.append(e)
    return list(by_class.values())


def _unlogged_cause(errors: Sequence[Error], consequences: Sequence[bool]) -> Error | None:
    """The result chain that stands for an unlogged WARN: when no WARN names a cause (there are
    only peers going away, or nothing), the first chain of another kind logged before them."""
    warns = [i for i, e in enumerate(errors) if e["level"] == "WARN" and not consequences[i]]
    if any(not peer_gone(errors[i]) for i in warns):
        return None  # a WARN names the cause
    before = errors[: warns[0]] if warns else errors
    return next((e for e in before if e["level"] == "chain" and not peer_gone(e)), None)


def _key(e: Error) -> tuple[Any, ...]:
    return (e["file"], e["host"], e["pid"])


def _root(e: Error, roots: list[Error], proc_root: dict[tuple[Any, ...], Error]) -> None:
    e["role"], e["cause"] = "root", None
    roots.append(e)
    proc_root[_key(e)] = e


def _follows(e: Error, cause: Error) -> None:
    e["role"], e["cause"] = "consequence", {"file": cause["file"], "line": cause["line"]}
