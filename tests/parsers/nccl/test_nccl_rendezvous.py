"""A job that never formed: its processes did not meet at PyTorch's rendezvous store, so NCCL never started
(``parsers.nccl.rendezvous``). Three classes, each in the words of several releases: the store unreachable, its
port taken, not every process joined. A file holding only such a failure was refused as "not an input"."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers.inputs import InputKind, sniff
from parsers.nccl.rendezvous import INCOMPLETE, PORT_IN_USE, UNREACHABLE, parse_rendezvous
from tests.parsers.nccl.test_nccl_log import parse, report

#: (release or launcher, line, class, what the message starts with)
LINES = [
    (
        "1.12",
        "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to 10.1.0.5:1234",
        UNREACHABLE,
        "The client socket has timed out after 60s while trying to connect to 10.1.0.5:1234",
    ),
    (
        "2.1",
        "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to "
        "(gpu-a17, 29400).",
        UNREACHABLE,
        "The client socket has timed out after 900s while trying to connect to (gpu-a17, 29400)",
    ),
    (
        "2.4",
        "[rank3]: torch.distributed.DistNetworkError: The client socket has failed to connect to any network address "
        "of (trainer-0.svc, 23456). The client socket has failed to connect to 10.2.3.4:23456 (errno: 113 - No route "
        "to host).",
        UNREACHABLE,
        "The client socket has failed to connect to any network address of (trainer-0.svc, 23456)",
    ),
    ("1.10", "RuntimeError: connect() timed out. Original timeout was 1800000 ms.", UNREACHABLE, "connect() timed out"),
    (
        "elastic",
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has "
        "failed. See inner exception for details.",
        UNREACHABLE,
        "The connection to the C10d store has failed",
    ),
    (
        "elastic etcd",
        '    "message": "RendezvousConnectionError: The connection to etcd has failed. See inner exception for details.",',
        UNREACHABLE,
        "The connection to etcd has failed",
    ),
    (
        "1.11",
        "[W socket.cpp:401] [c10d] The server socket has failed to listen on [::]:47531 (errno: 98 - Address already "
        "in use).",
        PORT_IN_USE,
        "The server socket has failed to listen on [::]:47531 (errno: 98",
    ),
    (
        "2.2",
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. The "
        "server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket has "
        "failed to bind to ?UNKNOWN? (errno: 98 - Address already in use).",
        PORT_IN_USE,
        "The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use)",
    ),
    (
        "2.6 libuv",
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 29511, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
        PORT_IN_USE,
        "port: 29511, useIpv6: false, code: -98, name: EADDRINUSE",
    ),
    (
        "2.4 libuv macOS",
        "RuntimeError: The server socket has failed to listen on any local network address. useIpv6: 0, code: -48, "
        "name: EADDRINUSE, message: address already in use",
        PORT_IN_USE,
        "The server socket has failed to listen on any local network address. useIpv6: 0",
    ),
    ("1.9", "RuntimeError: Address already in use", PORT_IN_USE, "RuntimeError: Address already in use"),
    (
        "2.3",
        "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 7/8 clients joined.",
        INCOMPLETE,
        "Timed out after 1801 seconds waiting for clients. 7/8 clients joined",
    ),
    (
        "1.10",
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 6, for key: "
        "store_based_barrier_key:1 (world_size=16, worker_count=12, timeout=0:30:00)",
        INCOMPLETE,
        "Timed out initializing process group in store based barrier on rank: 6",
    ),
    (
        "2.0",
        "torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on rank 1, for "
        "key: store_based_barrier_key:1 (world_size=4, num_workers_joined=2, timeout=0:10:00 error=Socket Timeout)",
        INCOMPLETE,
        "Timed out initializing process group in store based barrier on rank 1",
    ),
    (
        "elastic",
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
        INCOMPLETE,
        "RendezvousTimeoutError",
    ),
    ("elastic json", '    "message": "RendezvousTimeoutError: ",', INCOMPLETE, "RendezvousTimeoutError"),
]


@pytest.mark.parametrize(("release", "line", "cls", "start"), LINES, ids=[f"{c}-{r}" for r, _, c, _ in LINES])
def test_each_release_words_its_failure_and_each_is_read(
    tmp_path: Path, release: str, line: str, cls: str, start: str
) -> None:
    alone = tmp_path / "job.log"
    alone.write_text(line + "\n")
    assert sniff(alone).kind is InputKind.JOB_LOG, release  # a file of that line alone is a job log
    found = parse_rendezvous(line)
    assert found is not None and found.cls == cls and found.cause, release
    assert found.message.startswith(start) and not found.message.endswith((".", ": ", '"')), found.message


@pytest.mark.parametrize(
    "line",
    [
        "    raise RendezvousTimeoutError()",  # a traceback's source line, not the exception
        "[I socket.cpp:480] [c10d] The server socket has started to listen on [::]:29500.",
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node-1]:29500 (errno: 111 - Connection "
        "refused).",  # one try, retried until the store listens or the timeout
        "[E socket.cpp:435] [c10d] The server socket has failed to listen on any local network address.",  # its
        # reasons follow in the exception's line
        "INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize process group for rank: "
        "0, key: store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)",
        "OSError: [Errno 98] Address already in use",  # some other server of the program's
        "The server socket has failed to bind to 0.0.0.0:80 (errno: 13 - Permission denied).",
    ],
)
def test_what_is_not_a_failure_of_the_rendezvous(line: str) -> None:
    assert parse_rendezvous(line) is None


def test_the_reading_says_what_the_address_and_the_count_show() -> None:
    local = parse_rendezvous(
        "[E socket.cpp:957] [c10d] The client socket has timed out after 600s while trying to connect to (127.0.0.1, "
        "29500)."
    )
    assert local is not None and local.message.endswith("(a loopback address: only processes on that host reach it)")
    named = parse_rendezvous(
        "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to "
        "(gpu-a17, 29400)."
    )
    assert named is not None and "loopback" not in named.message
    crowded = parse_rendezvous(
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 2, for key: "
        "store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=0:30:00)"
    )
    assert crowded is not None and "more than the world size" in crowded.message
    short = parse_rendezvous(
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 6, for key: "
        "store_based_barrier_key:1 (world_size=16, worker_count=12, timeout=0:30:00)"
    )
    assert short is not None and "more than the world size" not in short.message


#: a torchrun agent that could not reach the store: its log line, the exception, and torchelastic's wrapper
TORCHRUN = """WARNING:torch.distributed.run:
*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default.
*****************************************
[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to (10.0.3.17, 29400).
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py", line 155, in _create_tcp_store
    store = TCPStore(
TimeoutError: The client socket has timed out after 60s while trying to connect to (10.0.3.17, 29400).

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/opt/conda/bin/torchrun", line 8, in <module>
    sys.exit(main())
torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.
"""


def test_a_log_of_a_job_that_never_formed_is_read_and_names_its_cause(tmp_path: Path) -> None:
    path = tmp_path / "node1.log"
    path.write_text(TORCHRUN)
    assert sniff(path).kind is InputKind.JOB_LOG
    _, t = parse(TORCHRUN)
    assert [(e["line"], e["level"], e["class"]) for e in t["nccl_errors"]] == [
        (5, "framework", UNREACHABLE),
        (9, "framework", UNREACHABLE),
        (16, "framework", UNREACHABLE),
    ]
    r = report(tmp_path, TORCHRUN)
    (finding,) = [f for f in r["findings"] if f["code"] == "nccl.error"]  # one failure, stated three times
    assert finding["severity"] == "critical"
    assert finding["title"].startswith("Rendezvous store unreachable: The client socket has timed out after 60s")
    assert "MASTER_ADDR:MASTER_PORT" in finding["suggestions"][0]["action"]
    assert r["verdict"]["status"] == "failed"
    issues = {i["code"]: i["message"] for i in r["parse_issues"]}
    assert issues["log.no_nccl_records"].endswith("the job ended at its rendezvous, before NCCL started")


def test_a_job_that_met_and_trained_has_no_rendezvous_finding(tmp_path: Path) -> None:
    text = (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [gpu-a17]:29400 (errno: 111 - "
        "Connection refused).\n"
        "[I socket.cpp:480] [c10d] The client socket has connected to [gpu-a17]:29400 on [gpu-a18]:50212.\n"
        "gpu-a18:51:51 [0] NCCL INFO Bootstrap : Using eth0:10.0.3.18<0>\n"
        "gpu-a18:51:51 [0] NCCL INFO comm 0x55d0 rank 1 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
    )
    _, t = parse(text)
    assert "nccl_errors" not in t
    assert not [f for f in report(tmp_path, text)["findings"] if f["severity"] == "critical"]
