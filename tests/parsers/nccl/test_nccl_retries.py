"""A WARN whose call NCCL then tried again is settled by what followed, not by its words.

NCCL 2.24+ prints ``FUNC: connect … returned ERR, retrying (n/N) after sleep for T msec`` (INFO) each time it tries a
connect again; builds patched to retry where upstream gives up (NVIDIA/nccl#1618: ``socketPollConnect poll() failed``)
print it right after their WARN. That WARN is a failure only when nothing went on after it: the process completed its
init (or connected, or ran its collectives) → no error, and no critical finding for a healthy log; the log ends there →
unconfirmed; the WARN that the retries ran out follows → a failure. Lines from NCCL's own prefix and from the patched
build's logger, whole and cut into chunks anywhere.
"""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest

from parsers.nccl.failures import RETRIED_NOTE
from parsers.nccl.messages import Retried, classify
from parsers.nccl.parser import JobLogParser
from tests.parsers.nccl.test_nccl_chunks import assert_same
from tests.parsers.nccl.test_nccl_log import report

START = "ncclCommInitRank comm 0x55a1c2d0 rank 3 nranks 16 cudaDev 0 busId 18000 commId 0x7b3c2a9d1f2e4c55 - Init START"
COMPLETE = START.replace("Init START", "Init COMPLETE")
WARN = "socketPollConnect poll() failed, ret 1, error Connection timed out, revents 8, connect to 172.16.30.229:39953"
RETRY = "socketPollConnect: connect returned Connection timed out, retrying (1/34) after sleep for 100 msec"


def _nccl(level: str, msg: str, src: str = "") -> str:
    """A record in NCCL's own prefix (``HOST:PID:TID [DEV]``), its thread the connecting one."""
    where = f"{src} " if src else ""
    return f"s11gn1268:3987720:3987749 [0] {where}NCCL {level} {msg}\n"


def _patched(level: str, msg: str, src: str = "init.cc:1750") -> str:
    """A record of the patched build's logger (rank/size, time, source, host and pid)."""
    return f"[03/16][2025-02-25 15:46:48,389] [{src}] [s11gn1268:pid=3987720] NCCL {level} {msg}\n"


def _log(record: Any, *rest: tuple[str, str]) -> str:
    return "".join(record(level, msg, *src) for level, msg, *src in rest)


def _errors(text: str) -> list[dict[str, Any]]:
    tables = JobLogParser("job.log").parse(io.BytesIO(text.encode()))
    return [e for e in tables["nccl_errors"].to_pylist() if e["level"] == "WARN"]


@pytest.mark.parametrize(
    "msg",
    [
        RETRY,  # 2.24-2.26
        "socketStartConnect: connect to 10.0.0.2<45763> returned Connection refused, retrying (3/34) after sleep for "
        "100 msec",  # 2.27+ (misc/socket.cc, then os/linux.cc)
    ],
)
def test_each_release_s_retry_notice_is_read(msg: str) -> None:
    assert classify(msg) == Retried(msg.split(":", 1)[0])


def test_a_retry_notice_before_its_warn_is_not_one() -> None:
    """Up to 2.9 NCCL says it retries before the WARN that ends the retries: that WARN is the failure."""
    assert classify("Call to connect returned Connection refused, retrying") is None


@pytest.mark.parametrize("record", [_nccl, _patched], ids=["NCCL's prefix", "patched build's logger"])
def test_a_warn_nccl_retried_and_went_on_after_is_no_error(record: Any, tmp_path: Path) -> None:
    text = _log(
        record,
        ("INFO", START),
        ("WARN", WARN, "misc/socket.cc:602"),
        ("INFO", RETRY),
        ("INFO", COMPLETE),
    )
    (err,) = _errors(text)
    assert (err["class"], err["remediation"]) == (None, RETRIED_NOTE)
    doc = report(tmp_path, text)
    assert not [f for f in doc["findings"] if f["severity"] == "critical"]
    assert doc["verdict"]["status"] != "failed"


@pytest.mark.parametrize("record", [_nccl, _patched], ids=["NCCL's prefix", "patched build's logger"])
def test_a_retried_warn_the_log_ends_after_is_unconfirmed(record: Any) -> None:
    (err,) = _errors(_log(record, ("INFO", START), ("WARN", WARN, "misc/socket.cc:602"), ("INFO", RETRY)))
    assert err["class"] == "socket_error" and err["unconfirmed"]


def test_a_retried_warn_whose_retries_ran_out_stays_a_failure(tmp_path: Path) -> None:
    text = _log(
        _nccl,
        ("INFO", START),
        ("WARN", WARN, "misc/socket.cc:602"),
        ("INFO", RETRY),
        ("WARN", "socketPollConnect: exceeded retries (34)", "misc/socket.cc:625"),
        ("INFO", "misc/socket.cc:625 -> 6"),
    )
    first, last = _errors(text)
    assert first["class"] == last["class"] == "socket_error"
    assert not first["unconfirmed"] and not last["unconfirmed"]
    assert report(tmp_path, text)["verdict"]["status"] == "failed"


def test_another_call_s_retry_leaves_the_warn_as_it_was() -> None:
    other = RETRY.replace("socketPollConnect:", "socketStartConnect:")
    (err,) = _errors(
        _log(_nccl, ("INFO", START), ("WARN", WARN, "misc/socket.cc:602"), ("INFO", other), ("INFO", COMPLETE))
    )
    assert err["class"] == "socket_error" and err["remediation"] != RETRIED_NOTE


@pytest.mark.parametrize("chunk_bytes", [1, 60, 300])
def test_a_retry_notice_cut_from_its_warn_reads_as_one_pass(tmp_path: Path, chunk_bytes: int) -> None:
    """A chunk that starts with the notice depends on the WARN before the cut: it is read again."""
    path = tmp_path / "job.log"
    path.write_text(
        _log(_nccl, ("INFO", START), ("WARN", WARN, "misc/socket.cc:602"), ("INFO", RETRY), ("INFO", COMPLETE)) * 3
    )
    assert_same(path, chunk_bytes, random.Random(chunk_bytes))
