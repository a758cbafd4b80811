"""The NCCL / job-log parser on inline lines (no corpus needed)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from parsers.nccl import recordfacts
from parsers.nccl.messages import Fact, Network
from parsers.nccl.parser import JobLogParser
from parsers.nccl.process import ProcessState
from parsers.nccl.recordfacts import RecordFacts
from parsers.nccl.records import split_records


def parse(text: str) -> tuple[JobLogParser, dict[str, Any]]:
    p = JobLogParser("job.log")
    tables = p.parse(io.BytesIO(text.encode()))
    return p, {k: v.to_pylist() for k, v in tables.items()}


def report(tmp_path: Path, text: str, name: str = "job.log") -> dict[str, Any]:
    path = tmp_path / name
    path.write_text(text)
    with temporary_store() as store:
        store.ingest(*discover([path]))
        return to_document(analyze(store))


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "[1,3]<stdout>:",
        "52: ",
        "node07: ",
        "(RayTrainWorker pid=615, ip=10.72.7.6) ",
        "[default0]:",
        "  | 2024-12-04T05:27:39.074Z | ",
        "2025-11-24T03:20:21.001125857Z ",
        "[2025-10-16 22:16:08] ",
        "Fri Aug 11 12:31:45 2023[1,0]<stdout>:",
    ],
)
def test_record_found_behind_any_launcher_prefix(prefix: str) -> None:
    (r,), merged, doubled = split_records(f"{prefix}gpu-a1:4242:4250 [3] NCCL INFO Using network IB")
    assert (r.host, r.pid, r.tid, r.dev, r.level, r.msg) == ("gpu-a1", 4242, 4250, 3, "INFO", "Using network IB")
    assert r.outer == prefix and not merged and not doubled


@pytest.mark.parametrize(
    ("line", "host", "outer"),
    [
        # a patched printer or a trimmed paste: the host without :PID:TID, any prefix before it
        ("gpu-server320 [5] NCCL INFO Using network IB", "gpu-server320", ""),
        (
            "2025-11-24T03:20:21.0Z [2025-11-24 11:20:21] gpu-server320 [5] NCCL INFO Using network IB",
            "gpu-server320",
            "2025-11-24T03:20:21.0Z [2025-11-24 11:20:21] ",
        ),
        # a Markdown backtick or a quote glued to the first pasted line is not part of the host
        ("`gpu-a1:4242:4250 [3] NCCL INFO Using network IB", "gpu-a1", "`"),
        ('"gpu-a1:4242:4250 [3] NCCL INFO Using network IB', "gpu-a1", '"'),
    ],
)
def test_header_variants_give_the_host(line: str, host: str, outer: str) -> None:
    (r,), _, _ = split_records(line)
    assert (r.host, r.dev, r.level, r.msg, r.outer) == (host, r.dev, "INFO", "Using network IB", outer)
    assert r.dev is not None


def test_host_without_pid_needs_its_device_to_be_a_record() -> None:
    assert split_records("some text NCCL INFO Using network IB")[0] == []  # no [DEV]: application text


def test_host_only_log_is_sniffed_as_a_log_and_keyed_by_host(tmp_path: Path) -> None:
    text = (
        "2025-11-24T03:20:21.001125857Z gpu-server320 [5] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
        "2025-11-24T03:20:21.001128133Z gpu-server320 [5] NCCL INFO misc/socket.cc:64 -> 6\n"
    )
    doc = report(tmp_path, text)
    (proc,) = doc["nccl"]["processes"]
    assert (proc["host"], proc["pid"]) == ("gpu-server320", None)


def test_nvls_tree_counts_as_an_nvls_connection() -> None:
    _, t = parse("h:1:2 [0] NCCL INFO Connected NVLS tree\n")
    assert [(c["kind"], c["detail"]) for c in t["nccl_connections"]] == [("NVLS", "NVLS")]


def test_warn_with_file_line_and_230_function() -> None:
    (r,), _, _ = split_records("h:1:2 [0] misc/socket.cc:71 (socketProgress) NCCL WARN socketProgress: closed")
    assert (r.src, r.func, r.level, r.msg) == ("misc/socket.cc:71", "socketProgress", "WARN", "socketProgress: closed")


def test_bare_version_lines_find_their_process_by_its_prefix_with_the_prefixes_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long log of many jobs' starts: each bare version line goes to the one process its launcher's prefix
    names; the processes' prefixes are read once for all of them (it was once per bare line)."""
    from parsers.nccl import process
    from parsers.nccl.rows import BareVersion

    procs = {(f"h{k}", k): ProcessState(f"h{k}", k, k, f"[1,{k}]<stdout>:") for k in range(300)}
    bare = [BareVersion(1000 + k, f"[1,{k}]<stdout>:", "NCCL version 2.18.3+cuda12.2") for k in range(0, 300, 3)]
    calls = 0
    real = process.launcher_tag

    def counted(outer: str) -> str:
        nonlocal calls
        calls += 1
        return real(outer)

    monkeypatch.setattr(process, "launcher_tag", counted)
    out = process.bare_versions(procs, bare, [])
    assert [(r.host, r.pid, r.line) for r in out] == [(f"h{k}", k, 1000 + k) for k in range(0, 300, 3)]
    assert procs[("h3", 3)].version_source == "bare line" and procs[("h4", 4)].version_source == "job's version line"
    assert calls == 300 + 100


def test_init_transports_env_and_version_per_process() -> None:
    p, t = parse(
        "NCCL version 2.18.3+cuda12.2\n"
        "h1:10:10 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n"
        "h1:10:10 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : not found\n"
        "h1:10:10 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0\n"
        "h1:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>\n"
        "h1:10:10 [0] NCCL INFO Using network IB\n"
        "h1:10:20 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc - Init START\n"
        "h1:10:20 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
        "h1:10:20 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
        "h1:10:20 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc - Init COMPLETE\n"
    )
    (proc,) = t["nccl_processes"]
    assert (proc["host"], proc["pid"], proc["version"], proc["version_source"]) == ("h1", 10, "2.18.3", "bare line")
    assert proc["ib_hcas"] == ["mlx5_0:1/IB", "mlx5_1:1/RoCE"] and proc["network"] == "IB"
    assert (proc["wording_min"], proc["wording_max"]) == ("2.18.3", "2.18.99")  # plugin wording and Init START
    assert {(c["detail"], c["gdr"]) for c in t["nccl_connections"]} == {
        ("NET/IB/GDRDMA", True),
        ("P2P/IPC/read", False),
    }
    assert [r["phase"] for r in t["nccl_comm_ranks"]] == ["START", "COMPLETE"]
    assert t["nccl_env"] == [{"host": "h1", "pid": 10, "line": 4, "var": "NCCL_IB_HCA", "value": "mlx5_0"}]
    assert "nccl_errors" not in t and not p.sink.issues


WARN_CHAIN = (
    "h:1:5 [0] NCCL INFO Channel 00 : 0 -> 1 via NET/Socket/0\n"
    "[1,0]<stdout>:\n"
    "h:1:7 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<3> with error 12, "
    "opcode 0, len 0, vendor err 129 (Recv)\n"
    "h:1:5 [0] NCCL INFO init.cc:100 -> 3\n"  # another thread: its own chain
    "h:1:7 [0] NCCL INFO transport/net.cc:1008 -> 6\n"
    "h:1:7 [0] NCCL INFO proxy.cc:679 -> 6 [Proxy Thread]\n"
)


def test_warn_chain_attaches_by_thread_and_classifies() -> None:
    _, t = parse(WARN_CHAIN)
    warn, other = t["nccl_errors"]
    assert (warn["class"], warn["chain"], warn["result_code"]) == (
        "ib_completion_error",
        ["transport/net.cc:1008 -> 6", "proxy.cc:679 -> 6 [Proxy Thread]"],
        6,
    )
    assert "retry counter exceeded" in warn["remediation"]
    assert (other["level"], other["class"], other["line"]) == ("chain", "internal_error", 4)  # code 3


def test_failed_probe_followed_by_progress_is_not_an_error() -> None:
    _, t = parse("h:1:1 [0] NCCL INFO net.cc:55 -> 3\nh:1:1 [0] NCCL INFO Using network IB\n")
    (e,) = t["nccl_errors"]
    assert e["class"] is None and "probe" in e["remediation"]


MERGED_DOUBLED_ORPHAN = (
    "a:1:1 [2] NCCL INFO a:2:2 [7] NCCL INFO Broadcast: opCount 0 sendbuff 0x1 recvbuff 0x1 count 5 datatype 4 "
    "op 0 root 0 comm 0x9 [nranks=8] stream 0x3\n"
    "Broadcast: opCount 1 sendbuff 0x1 recvbuff 0x1 count 5 datatype 4 op 0 root 0 comm 0x9 [nranks=8] stream 0x3\n"
    "  | 2025-05-16T16:39:51.208-07:00ip-1:79:79 [0] NCCL INFO Using network Socket | ip-1:79:79 [0] NCCL INFO "
    "Using network Socket\n"
    "[3] NCCL INFO comm 0x5 rank 3 nranks 8 cudaDev 3 busId b000 commId 0xfa - Init COMPLETE\n"
    "a:2:2 [7] NCCL INFO Broadcast: opCount 1 sendbuff 0x1 recvbuff 0x1 count 5 datatype 4 op 0 root 0 comm 0x9 "
    "[nranks=8] stream 0x3\n"
    "plain application output\n"
)


def test_merged_doubled_stripped_and_orphan_lines() -> None:
    p, t = parse(MERGED_DOUBLED_ORPHAN)
    hosts = sorted((r["host"] or "?", r["pid"]) for r in t["nccl_processes"])
    assert hosts == [("?", None), ("a", 1), ("a", 2), ("ip-1", 79)]
    (coll,) = t["nccl_collectives"]  # the merged line (careful path) and the plain one (block regex) fold together
    assert (coll["host"], coll["op"], coll["calls"], coll["first_opcount"], coll["last_opcount"]) == (
        "a",
        "Broadcast",
        2,
        0,
        1,
    )
    codes = {i.code: i.count for i in p.sink.issues}
    assert codes == {
        "nccl.merged_records": 1,
        "nccl.orphan_message": 1,
        "log.foreign_lines": 1,
        "log.doubled_columns": 1,
    }
    assert t["nccl_comm_ranks"][0]["rank"] == 3 and t["nccl_comm_ranks"][0]["host"] is None


def test_cut_last_line_is_data_loss_and_read_as_far_as_it_goes() -> None:
    p, t = parse("h:1:1 [0] NCCL INFO Using network IB\nh:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.")
    assert t["nccl_env"][0]["value"] == "1"
    (issue,) = [i for i in p.sink.issues if i.code == "log.cut_line"]
    assert issue.severity == "data_loss" and "line 2" in issue.message


WATCHDOG_STALL_AUTOTUNE = """\
[rank1]:[E1206 18:44:12.715 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: \
WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, Timeout(ms)=600000) ran for 600061 milliseconds \
before timing out.
[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15, \
OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800500 milliseconds before timing out.
[2024-01-01 10:00:00.000000: W /horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be \
reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. \
This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is \
submitting tensors, which will cause deadlock. 
Missing ranks:
2: [grad_a, grad_b]
3!: [grad_a, grad_b, grad_c, grad_d, grad_e, grad_f ...]
hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,cycle_time_ms,tensor_fusion_threshold,score
0,0,0, 1,5,4,100.5
0,0,0, 1,2.5,64,250
0,0,0, 1,5,4,110
0,0,0, 1,2.5,64,250
"""


def test_watchdog_stall_and_autotune_in_one_job_log(tmp_path: Path) -> None:
    doc = report(tmp_path, WATCHDOG_STALL_AUTOTUNE)
    wd = next(f for f in doc["findings"] if f["code"] == "nccl.watchdog_timeout")
    assert wd["ranks"] == [1] and wd["labels"] == {"verdict": "behind"}
    stall = next(f for f in doc["findings"] if f["code"] == "horovod.stall")
    assert stall["severity"] == "critical" and stall["ranks"] == [2, 3]
    assert doc["nccl"]["horovod_stalls"][1] | {"file": None} == {
        "file": None,
        "line": 6,
        "rank": 3,
        "shutdown": True,
        "more": True,
        "tensors": ["grad_a", "grad_b", "grad_c", "grad_d", "grad_e", "grad_f"],
    }
    tune = next(f for f in doc["findings"] if f["code"] == "horovod.autotune_result")
    assert tune["suggestions"][0]["env"] == {"HOROVOD_FUSION_THRESHOLD": str(64 << 20), "HOROVOD_CYCLE_TIME": "2.5"}
    assert doc["nccl"]["autotune"]["finished"] and doc["nccl"]["autotune"]["layout"] == "0.26.0"


def test_multi_host_socket_fallback_with_ib_present_is_critical(tmp_path: Path) -> None:
    lines = []
    for host, ip in (("n1", "10.0.0.1"), ("n2", "10.0.0.2")):
        lines += [
            f"{host}:7:7 [0] NCCL INFO Bootstrap : Using ib0:{ip}<0>",
            f"{host}:7:7 [0] NCCL INFO Failed to open libibverbs.so[.1]",
            f"{host}:7:7 [0] NCCL INFO NET/Socket : Using [0]ib0:{ip}<0> [1]eth0:192.168.0.1<0>",
            f"{host}:7:7 [0] NCCL INFO Using network Socket",
        ]
    doc = report(tmp_path, "\n".join(lines) + "\n")
    (f,) = doc["findings"]
    assert (f["code"], f["severity"], f["hosts"]) == ("nccl.socket_fallback", "critical", ["n1", "n2"])
    assert any("libibverbs" in e["summary"] for e in f["evidence"])
    assert f["suggestions"][-1]["env"]["NCCL_SOCKET_IFNAME"] == "ib0"


MISMATCH_AND_STUCK = """\
a:1:1 [0] NCCL INFO NCCL version 2.23.4+cuda12.4
b:2:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
a:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - Init START
b:2:2 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - Init START
a:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - Init COMPLETE
"""


def test_version_mismatch_and_incomplete_init(tmp_path: Path) -> None:
    doc = report(tmp_path, MISMATCH_AND_STUCK)
    codes = {f["code"]: f for f in doc["findings"]}
    assert codes["nccl.version_mismatch"]["severity"] == "critical"
    stuck = codes["nccl.init_incomplete"]
    assert stuck["ranks"] == [1] and stuck["hosts"] == ["b"]
    (comm,) = doc["nccl"]["communicators"]
    assert (comm["comm_id"], comm["ranks_complete"], comm["grouping"]) == ("9", [0], "commId")


def test_gzip_log_and_sniffing(tmp_path: Path) -> None:
    path = tmp_path / "rank0.log.gz"
    with gzip.open(path, "wt") as f:
        f.write("pip install output\n" * 10 + "h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n")
    with temporary_store() as store:
        (entry,) = store.ingest(*discover([tmp_path])).added
        assert entry["kind"] == "job_log" and entry["rows"]["nccl_env"] == 1 and entry["log"]["foreign_lines"] == 10


def test_call_records_and_trace_records() -> None:
    (call,), _, _ = split_records("h:1:2 NCCL CALL ncclAllReduce(0x7f,0x7f,1024,7,0,0x55,0x56)")
    assert (call.host, call.dev, call.level) == ("h", None, "CALL") and call.msg.startswith("ncclAllReduce(")
    (trace,), _, _ = split_records("h:1:2 [1] 12.345678 ncclProxyProgress:480 NCCL TRACE progress")
    assert (trace.dev, trace.src, trace.level, trace.msg) == (1, "ncclProxyProgress:480", "TRACE", "progress")


@pytest.mark.parametrize(
    ("text", "cls", "code"),
    [
        ("unhandled cuda error (run with NCCL_DEBUG=INFO for details)", "cuda_error", 1),
        ("unhandled system error (run with NCCL_DEBUG=INFO for details)", "system_error", 2),
        ("internal error - please report this issue to the NCCL developers", "internal_error", 3),
        ("invalid argument (run with NCCL_DEBUG=WARN for details)", "invalid_usage", 4),
        ("invalid usage (run with NCCL_DEBUG=WARN for details)", "invalid_usage", 5),
        ("remote process exited or there was a network error", "remote_process_exited", 6),
    ],
)
def test_pytorch_error_text_gives_the_version_and_the_result_codes_class(text: str, cls: str, code: int) -> None:
    line = (
        "worker-1: torch.distributed.DistBackendError: NCCL error in: "
        f"/opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1197, {text}, NCCL version 2.18.3\n"
    )
    _, t = parse(line)
    assert [v["version"] for v in t["nccl_versions"]] == ["2.18.3"] and t["nccl_versions"][0]["source"] == "pytorch"
    (err,) = t["nccl_errors"]
    assert (err["level"], err["class"], err["result_code"]) == ("framework", cls, code)
    assert err["remediation"]


def test_pytorch_error_inherits_the_class_of_nccls_first_error() -> None:
    text = (
        "\nh:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer h2<4242>\n"
        "h:1:2 [0] NCCL INFO misc/socket.cc:752 -> 6\n"
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1197, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.3\n"
    )
    _, t = parse(text)
    warn = next(e for e in t["nccl_errors"] if e["level"] == "WARN")
    framework = next(e for e in t["nccl_errors"] if e["level"] == "framework")
    assert framework["class"] == warn["class"] == "socket_error"  # the consequence takes the root cause's class


def test_pytorch_environment_line_gives_the_version_and_a_misdecoded_one_is_dropped() -> None:
    _, t = parse(
        "[PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL environments: NCCL version: 2.21.5, TORCH_NCCL_ASYNC_ERROR_"
        "HANDLING: 1\nRuntimeError: NCCL error in: x.cpp:1, unhandled system error, NCCL version 21.1.4\n"
    )
    assert [v["version"] for v in t["nccl_versions"]] == ["2.21.5"]  # 21.1.4 is PyTorch's decoding of 2.11.4


@pytest.mark.parametrize(
    "msg", ["Connect to f", "Net : Connect to 10.1.2", "Connect to 10.0.0.1<4242> failed : Connection timed out"]
)
def test_connect_warn_is_a_socket_error_even_cut(msg: str) -> None:
    from parsers.nccl.error_classes import classify_warn

    assert classify_warn(msg)[0] == "socket_error"


STALL_TEXT = (
    "[2019-01-01 10:00:00.000000: W /horovod/common/operations.cc:588] One or more tensors were submitted to be "
    "reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 "
    "seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of "
    "ranks is submitting tensors, which will cause deadlock. \n"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # 0.19+ per rank; before it the same list under "Stalled ranks:"
        (
            "Missing ranks:\n1: [grad_a, grad_b]\n3!: [grad_c]\n",
            [(1, False, ["grad_a", "grad_b"], False), (3, True, ["grad_c"], False)],
        ),
        ("Stalled ranks:\n2: [grad_a]\n", [(2, False, ["grad_a"], False)]),
        # the older per-tensor list, inline or one tensor per line
        (
            "Stalled ops: grad_a [missing ranks: 1], grad_b [missing ranks: 1, 3]\n",
            [(1, False, ["grad_a", "grad_b"], False), (3, False, ["grad_b"], False)],
        ),
        (
            "Stalled ops:\ngrad_a [missing ranks: 2]\ngrad_b [missing ranks: 2]\n",
            [(2, False, ["grad_a"], False), (2, False, ["grad_b"], False)],
        ),
        # a list cut before its "]" is read as far as it goes; its last name may be cut, so it is dropped
        ("Missing ranks:\n3!: [grad_a, grad_b, gr", [(3, True, ["grad_a", "grad_b"], True)]),
    ],
)
def test_every_stall_inspector_format(body: str, expected: list[tuple[int, bool, list[str], bool]]) -> None:
    _, t = parse(STALL_TEXT + body)
    got = [(r["rank"], r["shutdown"], r["tensors"], r["more"]) for r in t.get("horovod_stalls", [])]
    assert got == expected


def test_a_horovod_log_starting_with_a_bracket_is_a_log_not_a_timeline(tmp_path: Path) -> None:
    doc = report(tmp_path, STALL_TEXT + "Missing ranks:\n1: [grad_a]\n")
    assert [f["code"] for f in doc["findings"]] == ["horovod.stall"]


@pytest.mark.parametrize(
    ("warn", "frame_errno", "cls"),
    [
        # 2.22+: the errno is in the WARN itself
        (
            "Error: failed to extend /dev/shm/nccl-x to 9637892 bytes, error: No space left on device (28)",
            None,
            "shm_exhausted",
        ),
        ("Error: failed to open /dev/shm/nccl-x, error: Permission denied (13)", None, "shm_permission"),
        ("Error: failed to open /dev/shm/nccl-x, error: No such file or directory (2)", None, "shm_missing"),
        # 2.16-2.21: the WARN has no errno, the chain frame after it does
        (
            "Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)",
            "Permission denied",
            "shm_permission",
        ),
        ("Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)", None, "shm_exhausted"),
    ],
)
def test_dev_shm_failures_are_told_by_their_errno(warn: str, frame_errno: str | None, cls: str) -> None:
    text = f"\nh:1:2 [0] include/shm.h:28 NCCL WARN {warn}\n"
    if frame_errno:
        text += f"h:1:2 [0] NCCL INFO misc/shmutils.cc:61 -> 2 ({frame_errno})\n"
    _, t = parse(text)
    (err,) = t["nccl_errors"]
    assert err["class"] == cls
    assert "NCCL_SHM_DISABLE=1" in err["remediation"]  # every /dev/shm remediation offers the way around it


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled reader", "python path"])
def test_a_damaged_line_costs_that_line_but_a_bug_is_raised(monkeypatch: pytest.MonkeyPatch, compiled: bool) -> None:
    """Only what a damaged line can raise is counted as an unreadable line, and the lines after it are read;
    a bug of the reader fails loudly. On both paths, for a process's first record and its later ones."""
    log = (
        b"h:1:1 [0] NCCL INFO Using network IB\nh:1:1 [0] NCCL INFO Using network Boom\n"
        b"h:1:1 [0] NCCL INFO Using network Socket\nh:1:1 [0] NCCL INFO Using network IB\n"
    )
    real = recordfacts.SETUP_STEPS[Network]

    def read(raised: Exception) -> tuple[JobLogParser, dict[str, Any]]:
        def failing(self: RecordFacts, p: ProcessState, fact: Fact, lineno: int) -> None:
            if lineno <= 2:
                raise raised
            real(self, p, fact, lineno)

        monkeypatch.setitem(recordfacts.SETUP_STEPS, Network, failing)
        p = JobLogParser("t.log")
        p.compiled = compiled
        return p, p.parse(io.BytesIO(log))

    p, t = read(ValueError("invalid literal for int()"))
    assert [(i.code, i.count) for i in p.sink.issues] == [("log.unreadable_line", 2)]
    assert "line 1" in p.sink.issues[0].message
    assert t["nccl_processes"].to_pylist()[0]["network"] == "IB"
    with pytest.raises(KeyError):
        read(KeyError("a column the code forgot"))
