"""What the rest of a process's log says about its errors: probes, plugins stepping aside, shutdown noise."""

from __future__ import annotations

from typing import Any

from tests.parsers.nccl.test_nccl_log import parse

OFI = "h:1:1 [0] nccl_net_ofi_init:312 NCCL WARN NET/OFI Could not find any optimal provider\n"
OFI_PROBE = "h:1:1 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN NET/OFI OFI fi_getinfo() call failed: No data available\n"


def errors(text: str) -> list[dict[str, Any]]:
    return parse(text)[1].get("nccl_errors", [])


def test_a_plugin_failing_before_nccl_goes_on_steps_aside() -> None:
    went_on = [
        "h:1:1 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n",
        "h:1:1 [0] NCCL INFO NET/IB : No device found.\n",
        "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:172.31.9.96<0>\n",
        "h:1:1 [0] NCCL INFO Using network Socket\n",
    ]
    for after in went_on:
        (ofi, *_) = errors(OFI + after)
        assert ofi["class"] is None and "stepping aside" in ofi["remediation"], after
    (other,) = errors(OFI + "g:2:2 [0] NCCL INFO Using network Socket\n")  # another process going on
    assert other["class"] == "internal_error"


def test_a_plugin_probe_that_is_the_process_s_last_word_is_an_error() -> None:
    (probe,) = errors(OFI_PROBE)
    assert probe["class"] == "system_error" and "EFA" in probe["remediation"]
    (probe,) = errors(OFI_PROBE + "h:1:1 [0] NCCL INFO Using network Socket\n")
    assert probe["class"] is None


def test_a_plugin_error_after_the_network_was_chosen_is_an_error() -> None:
    text = (
        "h:1:1 [0] NCCL INFO Using network AWS Libfabric\n"
        + OFI
        + "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/AWS Libfabric/0\n"
    )
    (err,) = errors(text)
    assert err["class"] == "internal_error"


def test_errors_after_the_process_s_own_abort_are_shutdown_noise() -> None:
    text = (
        "h:1:1 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer g<4>\n"
        "h:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Abort COMPLETE\n"
        "h:1:1 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer g<5>\n"
        "g:2:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer h<6>\n"
    )
    before, after, other = errors(text)
    assert before["class"] == "socket_error"
    assert after["class"] is None and after["consequence"] and "shutdown noise" in after["remediation"]
    assert other["class"] == "socket_error"  # g did not abort


def test_chains_of_a_finished_run_s_abort_are_shutdown_noise() -> None:
    abort = "h:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Abort COMPLETE\n"
    chain = "h:1:2 [0] NCCL INFO init.cc:1900 -> 3\nh:1:2 [0] NCCL INFO init.cc:1950 -> 3\n"
    (noise,) = errors(chain + abort)
    assert noise["class"] is None and "shutdown noise" in noise["remediation"]
    (kept,) = errors(chain + "h:1:1 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5\n" * 60 + abort)  # long before
    assert kept["class"] == "internal_error"
    warn = "h:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer g<4>\n"
    first, after = errors(warn + "h:1:3 [0] NCCL INFO init.cc:1900 -> 3\n" + abort)
    assert (first["class"], after["class"]) == ("socket_error", "internal_error")  # a failure, then its abort


def test_a_chain_without_warn_is_classified_by_its_first_frame() -> None:
    (sock,) = errors("h:1:1 [0] NCCL INFO misc/socket.cc:567 -> 2\nh:1:1 [0] NCCL INFO proxy.cc:1306 -> 2\n")
    assert (sock["class"], sock["consequence"]) == ("socket_error", True)
    (internal,) = errors("h:1:1 [0] NCCL INFO bootstrap.cc:312 -> 3\n")
    assert internal["class"] == "internal_error"
    (remote,) = errors("h:1:1 [0] NCCL INFO misc/socket.cc:58 -> 6\n")
    assert remote["class"] == "remote_process_exited"
