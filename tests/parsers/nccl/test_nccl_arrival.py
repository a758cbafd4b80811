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


@pytest.mark.parametrize(
    ("src", "peer", "frame"),
    [
        # GitHub's editor pasting rendered text: every bare file name and address became a Markdown link
        (
            "transport/[net_ib.cc:1909](http://net_ib.cc:1909/)",
            "[10.1.3.7](http://10.1.3.7/)",
            "transport/[net.cc:1137](http://net.cc:1137/) -> 6",
        ),
        # a Slack export: <address|text>; NCCL 2.12's wording
        (
            "<http://transport/net_ib.cc:1909|transport/net_ib.cc:1909>",
            "<https://10.1.3.7|10.1.3.7>",
            "<http://transport/net.cc:1137|transport/net.cc:1137> -> 6",
        ),
    ],
)
def test_links_an_editor_made_of_file_names_and_addresses_are_their_text(src: str, peer: str, frame: str) -> None:
    text = (
        f"> gpu-b2:10214:10303 [0] {src} NCCL WARN NET/IB : Got completion from peer {peer}<33057> with status=9 "
        "opcode=0 len=0 vendor err 138 (Send)\n"
        f"> gpu-b2:10214:10303 [0] NCCL INFO {frame}\n"
        "see [the NCCL docs](https://docs.nvidia.com/deeplearning/nccl/) and [nccl](http://github.com/NVIDIA/nccl)\n"
    )
    p, t = parse(text)
    (err,) = t["nccl_errors"]
    assert (err["host"], err["src"], err["class"]) == ("gpu-b2", "transport/net_ib.cc:1909", "ib_completion_error")
    assert "peer 10.1.3.7<33057>" in err["message"] and err["chain"] == ["transport/net.cc:1137 -> 6"]
    assert p.counts["foreign"] == 1  # a link of other words is the writer's own text, not an automatic one


def test_rays_note_of_a_deduplicated_line_is_taken_off() -> None:
    """Ray 2.3+ prints a line several workers printed alike once, with `` [repeated Nx across cluster]`` (and, the
    first time, its note on how to turn that off): the record and the framework's report are read without it."""
    text = (
        "(RayWorkerWrapper pid=9) node1:9:40 [0] misc/shmutils.cc:165 NCCL WARN Error while attaching to shared memory "
        "segment /dev/shm/nccl-nK2bxb (size 192814336), error: No such file or directory (2) [repeated 2x across "
        "cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see "
        "https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication for more "
        "options.)\r\n"
        "(RayWorkerWrapper pid=9) node1:9:40 [0] NCCL INFO transport/shm.cc:380 -> 2 [repeated 2x across cluster]\n"
        "(RayWorkerWrapper pid=880) ERROR 04-16 01:01:44 [worker_base.py:620] RuntimeError: NCCL error: unhandled "
        "system error (run with NCCL_DEBUG=INFO for details) [repeated 6x across cluster]\n"
    )
    _, t = parse(text)
    warn, report_ = t["nccl_errors"]
    assert warn["message"].endswith("error: No such file or directory (2)") and warn["class"] == "shm_missing"
    assert warn["chain"] == ["transport/shm.cc:380 -> 2"]
    assert report_["message"].endswith("(run with NCCL_DEBUG=INFO for details)")


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


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])  # with its BOM (PowerShell 5), without
def test_a_log_saved_as_utf16_is_refused_with_how_to_convert_it(tmp_path: Path, encoding: str) -> None:
    from parsers.inputs import InputKind, sniff

    path = tmp_path / "nccl.log"
    path.write_bytes("gpu-a1:42:43 [0] NCCL INFO Using network IB\n".encode(encoding))
    s = sniff(path)
    assert s.kind is InputKind.UNKNOWN and s.reason.startswith("UTF-16 text") and "iconv -f UTF-16" in s.reason
    path.write_bytes("gpu-a1:42:43 [0] NCCL INFO Using network IB\n".encode("utf-8-sig"))  # UTF-8 with a BOM: read
    assert sniff(path).kind is InputKind.JOB_LOG
