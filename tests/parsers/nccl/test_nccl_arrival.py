"""Logs as they reach hvd-analyze: pasted from a terminal or a web page, compressed, wrapped by a framework."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from tests.parsers.nccl.test_nccl_log import parse, report


def test_terminal_colours_and_html_escapes_are_paste_artefacts() -> None:
    text = (
        "\x1b[36m(RayTrainWorker pid=7)\x1b[0m \x1b[1;31mgpu-a1:42:43 [0] NCCL INFO Using network IB\x1b[0m\n"
        "gpu-a1:42:43 [0] NCCL INFO Channel 00/0 : 0[0] -&gt; 1[1] [send] via NET/IB/0\n"
        "&gt; gpu-a1:42:44 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2&lt;4576&gt; "
        "failed : Connection refused\n"
        "gpu-a1:42:44 [0] NCCL INFO misc/socket.cc:564 -&gt; 2\n"
    )
    _, t = parse(text)
    (proc,) = t["nccl_processes"]
    assert (proc["host"], proc["network"]) == ("gpu-a1", "IB")
    assert [c["detail"] for c in t["nccl_connections"]] == ["NET/IB"]
    (err,) = t["nccl_errors"]
    assert err["message"].endswith("10.0.0.2<4576> failed : Connection refused")
    assert (err["class"], err["chain"]) == ("socket_error", ["misc/socket.cc:564 -> 2"])


def test_watchdog_timeouts_after_an_nccl_error_are_its_consequence(tmp_path: Path) -> None:
    timeout = (
        "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        "600012 milliseconds before timing out.\n"
    )
    alone = {f["code"]: f for f in report(tmp_path, timeout, "alone.log")["findings"]}
    assert alone["nccl.watchdog_timeout"]["severity"] == "critical"
    oom = "h:1:1 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
    both = {f["code"]: f for f in report(tmp_path, oom + timeout, "both.log")["findings"]}
    assert both["nccl.error"]["severity"] == "critical" and both["nccl.error"]["labels"]["class"] == "cuda_oom"
    assert any("watchdog timeout" in e["summary"] for e in both["nccl.error"]["evidence"])
    assert both["nccl.watchdog_timeout"]["severity"] == "warning"
    assert "cuda_oom first (h:1" in both["nccl.watchdog_timeout"]["summary"]


def test_a_gzip_bomb_is_read_up_to_its_budget_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import parsers.inputs

    monkeypatch.setattr(parsers.inputs, "INFLATE_FLOOR", 1 << 20)
    path = tmp_path / "bomb.log.gz"
    path.write_bytes(gzip.compress(b"h:1:1 [0] NCCL INFO Using network IB\n" + b"\n" * (8 << 20), 9))
    with temporary_store() as store:
        store.ingest(*discover([path]))
        doc = to_document(analyze(store))
    (cut,) = [i for i in doc["parse_issues"] if i["code"] == "log.gzip_cut"]
    assert "decompression bomb" in cut["message"] and "200x its compressed size" in cut["message"]
    assert doc["nccl"]["processes"][0]["network"] == "IB"  # what came before the budget is analysed
    assert doc["inputs"][0]["log"]["blank_lines"] < 8 << 20
