"""Third-party network plugins: their network's family decides what a finding may claim, and the WARNs
they print on their normal path are no errors (parsers/nccl/net_plugins.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from parsers.nccl.net_plugins import network


@pytest.mark.parametrize(
    ("printed", "family", "rdma", "internal"),
    [
        ("IB", "IB", True, False),
        ("IBext", "IB", True, False),
        ("IBext_v8", "IB", True, False),
        ("gIB", "IB", True, False),
        ("AWS Libfabric", "Libfabric", True, False),
        ("Socket", "Socket", False, True),
        ("FastSocket", "TCP", False, False),
        ("GPUDirectTCPX_v7", "TCPX", False, False),
        ("FasTrak", "TCPX", False, False),
    ],
)
def test_each_network_has_its_family(printed: str, family: str, rdma: bool, internal: bool) -> None:
    net = network(printed)
    assert net is not None and (net.family, net.rdma, net.internal_socket) == (family, rdma, internal)


def test_an_unknown_network_is_not_guessed() -> None:
    assert network("NewNet_v9") is None and network(None) is None and network("") is None


def _report(tmp_path: Path, text: str) -> dict[str, Any]:
    log = tmp_path / "job.log"
    log.write_text(text)
    with temporary_store() as store:
        store.ingest(*discover([log]))
        return dict(to_document(analyze(store)))


FASTSOCKET = """\
gce-a100-0:4300:4300 [0] NCCL INFO Bootstrap : Using ens8:10.0.0.6<0>
gce-a100-0:4300:4300 [0] NCCL INFO NET/Plugin: Loaded net plugin FastSocket (v6)
gce-a100-0:4300:4300 [0] NCCL INFO NCCL version 2.18.5+cuda12.2
gce-a100-0:4300:4325 [0] NCCL INFO NET/FastSocket : Using [0]ens8:10.0.0.6<0> [1]ens9:10.0.1.4<0>
gce-a100-0:4300:4325 [0] NCCL INFO Using network FastSocket
gce-a100-0:4300:4325 [0] NCCL INFO comm 0x55 rank 0 nranks 16 cudaDev 0 busId 1000 commId 0x1 - Init START
gce-a100-0:4300:4325 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/FastSocket/0
gce-a100-0:4300:4325 [0] net_fastsocket.cc:785 NCCL WARN Maximum retry reached for accept 3.
gce-a100-0:4300:4325 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.
gce-a100-0:4300:4348 [0] net_fastsocket.cc:652 NCCL WARN Cannot get incoming CPU.
gce-a100-0:4300:4325 [0] NCCL INFO Connected all rings
gce-a100-0:4300:4325 [0] NCCL INFO comm 0x55 rank 0 nranks 16 cudaDev 0 busId 1000 commId 0x1 - Init COMPLETE
"""


def test_a_healthy_fastsocket_job_gets_no_error_no_socket_fallback_and_no_missing_gdr(tmp_path: Path) -> None:
    doc = _report(tmp_path, FASTSOCKET)
    assert doc["findings"] == []
    nccl = doc["nccl"]
    assert nccl is not None and [p["network"] for p in nccl["processes"]] == ["FastSocket"]
    assert nccl["processes"][0]["warns"] == 2 and all(e["class"] is None for e in nccl["errors"])
    assert doc["verdict"]["status"] == "healthy"
    assert not any("GPUDirect" in c for c in doc["verdict"]["passed"])  # FastSocket has no RDMA to check


def test_a_fastsocket_warn_it_does_not_print_on_its_normal_path_is_still_an_error(tmp_path: Path) -> None:
    text = FASTSOCKET.replace(
        "NCCL WARN Cannot get incoming CPU.", "NCCL WARN NET/FastSocket : Call to connect failed : Connection refused"
    ).replace("- Init COMPLETE", "- Init START")
    doc = _report(tmp_path, text)
    assert any(e["class"] is not None for e in doc["nccl"]["errors"])


IBEXT_NO_GDR = """\
qh100-gpu19:49355:49414 [1] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)
qh100-gpu19:49355:49414 [1] NCCL INFO NCCL version 2.19.3+cuda12.3
qh100-gpu19:49355:49414 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB/SHARP [1]mlx5_1:1/IB/SHARP [RO]; OOB ibp25s0:10.20.0.119<0>
qh100-gpu19:49355:49414 [1] NCCL INFO Using network IBext
qh100-gpu19:49355:49414 [1] NCCL INFO comm 0x1 rank 1 nranks 16 cudaDev 1 busId 2000 commId 0x2 - Init START
qh100-gpu19:49355:49414 [1] NCCL INFO Channel 00/0 : 9[1] -> 1[1] [receive] via NET/IBext/0
qh100-gpu19:49355:49414 [1] NCCL INFO comm 0x1 rank 1 nranks 16 cudaDev 1 busId 2000 commId 0x2 - Init COMPLETE
"""


def test_an_rdma_plugin_without_gpudirect_is_still_reported(tmp_path: Path) -> None:
    doc = _report(tmp_path, IBEXT_NO_GDR)
    assert [f["code"] for f in doc["findings"]] == ["nccl.no_gdrdma"]
    assert doc["findings"][0]["title"].startswith("InfiniBand without GPUDirect RDMA")


def test_efa_without_gpudirect_is_named_efa_not_infiniband(tmp_path: Path) -> None:
    doc = _report(
        tmp_path,
        "[1,7]<stdout>:ip-172-32-38-1:21471:22316 [7] NCCL INFO Ring 00 : 7 -> 8 [send] via NET/AWS Libfabric/0\n"
        "[1,7]<stdout>:ip-172-32-38-1:21471:22316 [7] NCCL INFO Ring 00 : 6 -> 7 [receive] via NET/AWS Libfabric/0\n",
    )
    (f,) = [f for f in doc["findings"] if f["code"] == "nccl.no_gdrdma"]
    assert f["title"] == "EFA (Libfabric) without GPUDirect RDMA: transfers go through host memory"


@pytest.mark.parametrize(
    ("line", "src", "level"),
    [
        # aws-ofi-nccl 1.14+ (C++) logs __PRETTY_FUNCTION__: a function, a method with its scope, a template's
        # instance, one in an anonymous namespace, one whose arguments hold a function pointer; a TRACE keeps its ms
        (
            "[2026-01-01 12:08:32] node-0-0:194:710 [0] int cm_req_handle_error_entry(nccl_net_ofi_context_t*, "
            "fid_cq*, fi_cq_err_entry*, uint16_t):46 NCCL WARN NET/OFI Request 0x7f45 completed with error. RC: 103.",
            "cm_req_handle_error_entry:46",
            "WARN",
        ),
        (
            "node-1:1:2 [3] virtual int nccl_net_ofi_rdma_ep_t::post_rx_buffs(nccl_net_ofi_rdma_ep_rail_t*, "
            "void (*)(int)) const:812 NCCL WARN NET/OFI Error posting rx buffers: -11",
            "nccl_net_ofi_rdma_ep_t::post_rx_buffs:812",
            "WARN",
        ),
        ("node-1:1:2 [3] T f(T) [with T = int]:9 NCCL WARN NET/OFI y", "f:9", "WARN"),
        (
            "node-1:1:2 [3] 1234.567 static int (anonymous namespace)::poll_cq(fid_cq*):9 NCCL TRACE NET/OFI x",
            "poll_cq:9",
            "TRACE",
        ),
        # the C build of the same plugin, and NCCL's own source, read as before
        ("node-1:1:2 [0] ofi_process_cq:196 NCCL WARN NET/OFI Request completed with error. RC: 107.", None, "WARN"),
        ("node-1:1:2 [0] misc/socket.cc:47 (socketProgress) NCCL WARN closed", None, "WARN"),
    ],
)
def test_a_plugin_warn_that_names_its_cpp_function_is_a_record_of_its_process(
    line: str, src: str | None, level: str
) -> None:
    from parsers.nccl.records import split_records

    (r,), merged, _ = split_records(line)
    assert not merged and r.level == level and r.pid in (1, 194) and r.dev in (0, 3)
    assert r.host in ("node-0-0", "node-1") and r.msg.startswith(("NET/OFI", "closed"))
    if src is not None:
        assert r.src == src and r.func is None


EFA_HANDSHAKE = """\
node-0-0:194:712 [0] NCCL INFO Channel 00/0 : 3[0] -> 0[0] [receive] via NET/Libfabric/0/GDRDMA
node-0-0:194:712 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Libfabric/0/GDRDMA

[2026-01-01 12:08:32] node-0-0:194:710 [0] int cm_req_handle_error_entry(nccl_net_ofi_context_t*, fid_cq*, \
fi_cq_err_entry*, uint16_t):46 NCCL WARN NET/OFI Request 0x7f456c222f60 completed with error. RC: 103. Error: 4126 \
(Unresponsive receiver (reachable by EFA device but handshake failed)). Completed length: 0
node-0-0:194:710 [0] NCCL INFO transport/net.cc:753 -> 6
node-0-0:194:712 [0] NCCL INFO transport/generic.cc:19 -> 6
node-0-0:194:712 [0] NCCL INFO group.cc:73 -> 6 [Async thread]
[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/\
ProcessGroupNCCL.cpp:3699, remote process exited or there was a network error, NCCL version 2.27.3
[rank0]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
[rank0]: Last error:
[rank0]: NET/OFI Request 0x7f456c222f60 completed with error. RC: 103. Error: 4126 (Unresponsive receiver). \
Completed length: 0
"""


def test_a_failed_efa_handshake_is_the_root_cause_with_the_peer_to_look_at(tmp_path: Path) -> None:
    """The plugin's WARN (its C++ function as its source) is the process's first error, not a chain without a
    WARN read as a remote process that exited; its advice is the peer and the path, not the plugin's setup."""
    doc = _report(tmp_path, EFA_HANDSHAKE)
    (error,) = [f for f in doc["findings"] if f["code"] == "nccl.error"]
    assert error["severity"] == "critical" and "completed with error" in error["title"]
    assert "ib completion error" in error["title"] and "node-0-0" in error["hosts"]
    assert "peer" in doc["verdict"]["action"] and "expose the EFA devices" not in doc["verdict"]["action"]
