"""NCCL records pasted or collected without their ``HOST:PID:TID [DEV]`` header are read, never dropped.

Users paste excerpts: ``NCCL INFO Using network IBext_v8`` (the prefix cut off), a WARN with only its
source location (``transport/nvls.cc:165 NCCL WARN ...``), records behind a launcher's tag glued to the
marker (``[1,0]<stderr>:NCCL INFO``) or a role prefix (``[trainer0|0]:``), ``[DEV] FILE:LINE NCCL WARN``
when only the host part was stripped. Lines from NCCL 2.7 to 2.29 and mpirun, torchrun and TorchX
launchers; a header cut down to ``[DEV]`` behind any launcher's or collector's prefix. Their records
belong to an unknown process of the file; prose that mentions NCCL stays text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from parsers.inputs import InputKind, sniff
from parsers.nccl.records import split_records
from tests.parsers.nccl.test_nccl_log import report


@pytest.mark.parametrize(
    ("line", "level", "src", "dev", "outer", "msg"),
    [
        ("NCCL INFO Using network IBext_v8", "INFO", None, None, "", "Using network IBext_v8"),
        (
            "transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'",
            "WARN",
            "transport/nvls.cc:165",
            None,
            "",
            "Cuda failure 'invalid argument'",
        ),
        (
            "[trainer0|0]:misc/ibvwrap.cc:288 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory",
            "WARN",
            "misc/ibvwrap.cc:288",
            None,
            "[trainer0|0]:",
            "Call to ibv_create_cq failed with error Cannot allocate memory",
        ),
        (
            "[1,0]<stderr>:NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.1.1<0>",
            "INFO",
            None,
            None,
            "[1,0]<stderr>:",
            "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.1.1<0>",
        ),
        (
            "[5] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.",
            "WARN",
            "misc/ibvwrap.cc:173",
            5,
            "",
            "lib wrapper not initialized.",
        ),
        # worker tags naming their pid: vLLM's, and Ray's inside vLLM's engine
        (
            "(VllmWorker rank=1 pid=1234) NCCL INFO Using network IB",
            "INFO",
            None,
            None,
            "(VllmWorker rank=1 pid=1234)",
            "Using network IB",
        ),
        (
            "(EngineCore_DP0 pid=742) (RayWorkerWrapper pid=927) misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.",
            "WARN",
            "misc/ibvwrap.cc:173",
            None,
            "(EngineCore_DP0 pid=742) (RayWorkerWrapper pid=927)",
            "lib wrapper not initialized.",
        ),
        (
            "2025-10-16T22:16:08.123Z NCCL WARN NET/OFI Only EFA provider is supported",
            "WARN",
            None,
            None,
            "2025-10-16T22:16:08.123Z",
            "NET/OFI Only EFA provider is supported",
        ),
    ],
)
def test_a_record_without_its_header_is_read(
    line: str, level: str, src: str | None, dev: int | None, outer: str, msg: str
) -> None:
    (r,), merged, doubled = split_records(line)
    assert (r.host, r.pid, r.tid) == (None, None, None) and not merged and not doubled
    assert (r.level, r.src, r.dev, r.outer.strip(), r.msg) == (level, src, dev, outer, msg)


@pytest.mark.parametrize(
    ("line", "outer", "dev", "src"),
    [
        # NCCL 2.29's stripped init line behind srun -l, 2.4's NET/IB line behind Open MPI's tag
        (
            "3: [3] NCCL INFO ncclCommInitRankConfig comm 0x563c rank 3 nranks 8 cudaDev 3 busId b000 - Init COMPLETE",
            "3:",
            3,
            None,
        ),
        ("[1,3]<stdout>:[3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>", "[1,3]<stdout>:", 3, None),
        # a WARN behind torchrun's tag, records behind kubectl's timestamp, docker compose, journald and Ray
        (
            "[default5]:[5] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.",
            "[default5]:",
            5,
            "misc/ibvwrap.cc:173",
        ),
        ("2024-05-11T14:10:52.000000001Z [0] NCCL INFO Using network IB", "2024-05-11T14:10:52.000000001Z", 0, None),
        ("worker-1  | [2] NCCL INFO Using network Socket", "worker-1  |", 2, None),
        (
            "Nov 28 14:00:01 node1 python[1234]: [1] NCCL INFO Using network IB",
            "Nov 28 14:00:01 node1 python[1234]:",
            1,
            None,
        ),
        (
            "(RayTrainWorker pid=1234, ip=10.0.0.1) [7] NCCL INFO Using network IB",
            "(RayTrainWorker pid=1234, ip=10.0.0.1)",
            7,
            None,
        ),
    ],
)
def test_a_header_cut_down_to_its_device_is_read_behind_any_prefix(
    line: str, outer: str, dev: int, src: str | None, tmp_path: Path
) -> None:
    (r,), _, _ = split_records(line)
    assert (r.host, r.pid, r.outer.strip(), r.dev, r.src) == (None, None, outer, dev, src)
    log = tmp_path / "excerpt.log"
    log.write_text(line + "\n")
    assert sniff(log).kind is InputKind.JOB_LOG  # a file of such lines is a job log


@pytest.mark.parametrize(
    "line",
    [
        "I grep'd the NCCL INFO lines but found nothing",
        "see docs: the NCCL WARN output is printed on rank 0",
        "NCCL INFOMATION",
        "I saw (this pid=1) NCCL INFO lines",
        "[note] read the [docs] first: NCCL INFO lines",  # brackets, then words: not a logger's fields
    ],
)
def test_prose_that_mentions_nccl_is_no_record(line: str) -> None:
    assert split_records(line)[0] == []


@pytest.mark.parametrize(
    ("line", "host", "pid", "src", "msg"),
    [
        (  # a logger's fields: the rank, the time, the source, the host and pid (nccl#1618)
            "[03/16][2025-02-25 15:46:48,389] [misc/socket.cc:602] [s11gn1268:pid=3987720] NCCL WARN socketPollConnect "
            "poll() failed, ret 1, error Connection timed out",
            "s11gn1268",
            3987720,
            "misc/socket.cc:602",
            "socketPollConnect poll() failed, ret 1, error Connection timed out",
        ),
        (  # the same, as grep -r found it in one rank's file
            "rank_604.s12gn3064.log:[0604/1024][2025-02-16 22:31:34,422] [misc/socket.cc:586] [s12gn3064:pid=3942408] "
            "NCCL WARN socketPollConnect poll() returned 1, no POLLOUT events",
            "s12gn3064",
            3942408,
            "misc/socket.cc:586",
            "socketPollConnect poll() returned 1, no POLLOUT events",
        ),
        (  # fields that name no process: an unknown process of the file
            "[2025-02-25 15:46:49,112] [init.cc:1417] NCCL INFO comm 0x5612 rank 3 nranks 16 - Init COMPLETE",
            None,
            None,
            "init.cc:1417",
            "comm 0x5612 rank 3 nranks 16 - Init COMPLETE",
        ),
    ],
)
def test_a_record_behind_a_loggers_bracketed_fields_is_read_with_what_they_name(
    tmp_path: Path, line: str, host: str | None, pid: int | None, src: str, msg: str
) -> None:
    (r,), _, _ = split_records(line)
    assert (r.host, r.pid, r.src, r.msg) == (host, pid, src, msg)
    log = tmp_path / "rank.log"
    log.write_text(line + "\n")
    assert sniff(log).kind is InputKind.JOB_LOG


def test_a_headed_record_keeps_its_header() -> None:
    (r,), _, _ = split_records("[1,0]<stderr>:node1:123:456 [0] NCCL INFO Using network IB")
    assert (r.host, r.pid, r.tid, r.dev, r.outer) == ("node1", 123, 456, 0, "[1,0]<stderr>:")


PASTE = """\
NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>
NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.5<0>
NCCL INFO Using network IB
NCCL INFO comm 0x5581 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init START
misc/ibvwrap.cc:288 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory
NCCL INFO transport/net_ib.cc:560 -> 2
"""


def test_a_file_of_headerless_records_is_a_job_log_analysed_as_one_unknown_process(tmp_path: Path) -> None:
    log = tmp_path / "paste.log"
    log.write_text(PASTE)
    assert sniff(log).kind is InputKind.JOB_LOG
    with temporary_store() as store:
        store.ingest(*discover([log]))
        doc = to_document(analyze(store))
    nccl = doc["nccl"]
    assert nccl is not None
    (proc,) = nccl["processes"]
    assert (proc["host"], proc["pid"], proc["network"]) == (None, None, "IB")
    (err,) = nccl["errors"]
    assert err["class"] == "ibv_setup_failure" and err["line"] == 5


def test_prose_alone_is_not_an_input(tmp_path: Path) -> None:
    readme = tmp_path / "notes.txt"
    readme.write_text("How to read it: set NCCL_DEBUG=INFO and look for the NCCL INFO lines of rank 0.\n")
    assert sniff(readme).kind is not InputKind.JOB_LOG


STRIPPED_PROBE = """\
[5] NCCL INFO Failed to open libibverbs.so[.1]
[5] NCCL INFO Failed to initialize NET plugin IB
[5] NCCL INFO NET/Socket : Using [0]eth0:192.168.9.2<0>
[5] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.
[5] NCCL INFO transport/net_ib/gdr.cc:56 -> 3
[5] NCCL INFO Using network Socket
[5] NCCL INFO comm 0x1 rank 5 nranks 8 cudaDev 5 busId 1000 commId 0xab - Init COMPLETE
"""


def test_a_verbs_wrapper_warn_before_another_network_is_a_failed_probe(tmp_path: Path) -> None:
    """libibverbs is missing, the IB wrapper WARNs, NCCL goes on with sockets: no error of its own."""
    log = tmp_path / "stripped.log"
    log.write_text(STRIPPED_PROBE)
    with temporary_store() as store:
        store.ingest(*discover([log]))
        doc = to_document(analyze(store))
    assert not [f for f in doc["findings"] if f["code"] == "nccl.error"]
    assert doc["nccl"] is not None and all(e["class"] is None for e in doc["nccl"]["errors"])


@pytest.mark.parametrize(
    ("line", "outer"),
    [
        # a collector's timestamp and host tag before a header whose host was cut off (nccl#1808, NCCL 2.27)
        ("2025-08-12 09:37:02.216313 worker-9 >> :168:1228 [2] NCCL INFO Connected all trees", "2025-08-12 "),
        ("[1,0]<stdout>::168:1228 [2] NCCL INFO Connected all trees", "[1,0]<stdout>:"),  # mpirun's tag
        (":168:1228 [2] misc/socket.cc:484 NCCL WARN socketFinalizeAccept: wrong magic 1 != 2", ""),
    ],
)
def test_a_header_whose_host_was_cut_off_keeps_its_pid_and_thread(line: str, outer: str) -> None:
    """``:PID:TID [DEV]``: the process is told apart by its pid (eight ranks of a redacted paste were one unknown
    process), the host stays unknown."""
    (record,), merged, doubled = split_records(line)
    assert (record.host, record.pid, record.tid, record.dev) == (None, 168, 1228, 2) and not (merged or doubled)
    assert record.outer.startswith(outer) and ":168" not in record.outer


def test_ranks_of_a_paste_without_hosts_stay_apart(tmp_path: Path) -> None:
    text = "".join(
        f"2025-08-12 09:37:02.2{pid} worker-9 >> :{pid}:{pid + 1000} [{pid - 166}] NCCL INFO Channel 00/0 : "
        f"{pid - 166}[{pid - 166}] -> 9[1] [send] via NET/IBext_v10/10/GDRDMA\n"
        for pid in range(166, 174)
    )
    doc = report(tmp_path, text)
    assert sorted(p["pid"] for p in doc["nccl"]["processes"]) == list(range(166, 174))
    assert {p["host"] for p in doc["nccl"]["processes"]} == {None}
