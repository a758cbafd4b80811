"""PyTorch's heartbeat monitor ending a process whose watchdog was stuck (``watchdog_stuck``).

PyTorch 2.2+ watches its own watchdog thread: when that thread makes no progress for
TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC (it is stuck in an NCCL or CUDA call, or waits for the GIL), the
monitor logs ``Heartbeat monitor timed out!`` and a FATAL ``ProcessGroupNCCL's watchdog got stuck for
N seconds …``, and ends the process. Lines of PyTorch 2.2 (``[Rank N]``), 2.3 (``[PG 0 Rank N]``
behind torchrun's tag) and 2.5 (``[PG ID 0 PG GUID 0(default_pg) Rank N]``, glog's date).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from parsers.inputs import InputKind, sniff
from tests.parsers.nccl.test_nccl_log import parse, report

FATAL = (
    "ProcessGroupNCCL's watchdog got stuck for 600 seconds without making progress in monitoring enqueued "
    "collectives. This typically indicates a NCCL/CUDA API hang blocking the watchdog, and could be triggered by "
    "another thread holding the GIL inside a CUDA api, or other deadlock-prone behaviors."
)
HEARTBEATS = {
    "2.2": "[E ProcessGroupNCCL.cpp:1182] [Rank 0] Heartbeat monitor timed out! Process will be terminated after "
    "dumping debug info. workMetaList_.size()=1\n"
    f"[F ProcessGroupNCCL.cpp:1198] [Rank 0] {FATAL}\n",
    "2.3": "[rank25]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 25] Heartbeat monitor timed out! Process will be "
    "terminated after dumping debug info. workMetaList_.size()=2\n"
    "[rank25]:[E ProcessGroupNCCL.cpp:1153] [PG 0 Rank 25] ProcessGroupNCCL preparing to dump debug info.\n"
    f"[rank25]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 25] [PG 0 Rank 25] {FATAL}\n",
    "2.5": "[rank3]:[E1115 10:22:33.123456789 ProcessGroupNCCL.cpp:1408] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
    "Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=1\n"
    f"[rank3]:[F1115 10:22:33.223456789 ProcessGroupNCCL.cpp:1432] [PG ID 0 PG GUID 0(default_pg) Rank 3] {FATAL}\n",
}
TIMEOUT = (
    "[rank1]:[E1206 18:44:12.715 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, Timeout(ms)=600000) ran for 600061 milliseconds "
    "before timing out.\n"
)


def _errors(text: str) -> list[dict[str, Any]]:
    return parse(text)[1].get("nccl_errors", [])


@pytest.mark.parametrize("release", sorted(HEARTBEATS))
def test_a_heartbeat_timeout_is_one_report_that_the_watchdog_was_stuck(release: str) -> None:
    (err,) = _errors(HEARTBEATS[release])
    assert (err["level"], err["class"], err["line"]) == ("framework", "watchdog_stuck", 1)
    assert "Heartbeat monitor timed out!" in err["message"] and "stuck for 600 seconds" in err["message"]
    assert "Rank" in err["message"].split("Heartbeat")[0]  # the group's rank stays in the report


def test_the_fatal_line_alone_is_the_report() -> None:
    (err,) = _errors(f"[rank7]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 7] {FATAL}\n")
    assert err["class"] == "watchdog_stuck" and err["message"].startswith("[PG 0 Rank 7] ProcessGroupNCCL's")


def test_after_a_collective_timeout_the_stuck_watchdog_is_its_consequence() -> None:
    (err,) = _errors(TIMEOUT + HEARTBEATS["2.3"])
    assert err["class"] is None and "consequence of the timeout" in err["remediation"]
    (before,) = _errors(HEARTBEATS["2.3"] + TIMEOUT)  # stuck first: the cause
    assert before["class"] == "watchdog_stuck"


def test_a_paste_of_a_heartbeat_timeout_is_a_failed_job(tmp_path: Path) -> None:
    log = tmp_path / "heartbeat.log"
    log.write_text(HEARTBEATS["2.5"])
    assert sniff(log).kind is InputKind.JOB_LOG
    doc = report(tmp_path, HEARTBEATS["2.5"])
    assert doc["verdict"]["status"] == "failed"
    (finding,) = doc["findings"]
    assert (
        finding["labels"]["class"] == "watchdog_stuck"
        and "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC" in finding["suggestions"][0]["action"]
    )
    timed_out = report(tmp_path, TIMEOUT + HEARTBEATS["2.5"])
    assert [f["code"] for f in timed_out["findings"]] == ["nccl.watchdog_timeout"]
