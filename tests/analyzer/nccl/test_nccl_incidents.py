"""Root causes and consequences among NCCL errors (analyzer.nccl.incidents), on hand-made rows."""

from __future__ import annotations

from typing import Any

from analyzer.nccl.incidents import attribute


def err(line: int, cls: str, message: str, host: str = "h", pid: int | None = 1, **kw: Any) -> dict[str, Any]:
    level = kw.pop("level", "WARN")
    return {
        "file": "job.log",
        "line": line,
        "class": cls,
        "message": message,
        "host": host,
        "pid": pid,
        "level": level,
        "consequence": kw.pop("consequence", level in ("chain", "framework")),
    }


def attributed(errors: list[dict[str, Any]]) -> Any:
    """:func:`attribute` of hand-made rows, each with its ``consequence`` flag (what the parser read)."""
    return attribute(errors, [bool(e.pop("consequence")) for e in errors])  # type: ignore[arg-type]


def roles(errors: list[dict[str, Any]]) -> list[tuple[int, str, int | None]]:
    return [(e["line"], e["role"], e["cause"]["line"] if e["cause"] else None) for e in errors]


def test_what_a_process_logs_after_its_first_error_follows_from_it() -> None:
    errors = [
        err(1, "cuda_oom", "Cuda failure 'out of memory'"),
        err(3, "cuda_error", "Cuda failure 'invalid resource handle'"),
        err(5, "system_error", "[Proxy Service 3] Failed to execute operation Setup", consequence=True),
    ]
    (incident,) = attributed(errors)
    assert roles(errors) == [(1, "root", None), (3, "consequence", 1), (5, "consequence", 1)]
    assert incident.cls == "cuda_oom" and len(incident.consequences) == 2


def test_a_peer_going_away_follows_from_an_earlier_cause_elsewhere() -> None:
    errors = [
        err(1, "ib_completion_error", "NET/IB : Got completion from peer 10.0.0.2 with error 12", host="a"),
        err(4, "socket_error", "socketProgress: Connection closed by remote peer a<1>", host="b"),
    ]
    (incident,) = attributed(errors)
    assert roles(errors) == [(1, "root", None), (4, "consequence", 1)]
    assert incident.cls == "ib_completion_error"


def test_a_peer_going_away_first_stays_a_root_next_to_a_later_cause() -> None:
    errors = [
        err(1, "socket_error", "socketProgress: Connection closed by remote peer x<1>", pid=1),
        err(5, "cuda_oom", "Cuda failure 'out of memory'", pid=2),
    ]
    assert [i.cls for i in attributed(errors)] == ["socket_error", "cuda_oom"]


def test_chains_and_wrappers_follow_from_the_job_s_root_even_when_logged_first() -> None:
    errors = [
        err(1, "remote_process_exited", "proxy.cc:698 -> 6", host="a", level="chain"),
        err(4, "ib_completion_error", "NET/IB : Got completion from peer 10.0.35.1 with error 4", host="b"),
        err(9, "ib_completion_error", "NCCL error in: x.cpp:1, unhandled system error", None, None, level="framework"),
    ]
    (incident,) = attributed(errors)
    assert roles(errors) == [(1, "consequence", 4), (4, "root", None), (9, "consequence", 4)]
    assert incident.cls == "ib_completion_error"


def test_a_chain_stands_for_an_unlogged_warn_when_only_peers_going_away_follow() -> None:
    errors = [
        err(1, "internal_error", "bootstrap.cc:312 -> 3", host="a", level="chain"),
        err(10, "socket_error", "socketProgress: Connection closed by remote peer a<2>", host="b"),
        err(11, "remote_process_exited", "misc/socket.cc:58 -> 6", host="b", level="chain"),
    ]
    (incident,) = attributed(errors)
    assert roles(errors) == [(1, "root", None), (10, "consequence", 1), (11, "consequence", 1)]
    assert incident.cls == "internal_error"


def test_a_chain_does_not_displace_a_warn_that_names_a_cause() -> None:
    errors = [
        err(1, "system_error", "include/net.h:24 -> 2", host="a", level="chain"),
        err(3, "ibv_setup_failure", "NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument", host="b"),
    ]
    (incident,) = attributed(errors)
    assert incident.cls == "ibv_setup_failure" and roles(errors)[0] == (1, "consequence", 3)


def test_with_nothing_else_a_wrapper_is_its_own_root() -> None:
    errors = [err(2, "system_error", "NCCL error in: x.cpp:1, unhandled system error", None, None, level="framework")]
    (incident,) = attributed(errors)
    assert incident.cls == "system_error" and roles(errors) == [(2, "root", None)]
