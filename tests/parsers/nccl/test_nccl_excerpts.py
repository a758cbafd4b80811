"""Excerpts that end just after a failure NCCL goes on from: a probe's failure is unconfirmed, never critical.

Users paste the part of a log around the first WARN they see. In a healthy run that WARN is often a
probe that failed (aws-ofi-nccl finding no EFA, the verbs wrapper without libibverbs, a plugin refusing
with a bare result chain) and NCCL then goes on with another network. Cut there, the excerpt ends the
same way as a process that died of it: the report says the failure is unconfirmed (a warning, its
advice conditional) and turns critical only when something after it shows the process failed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.report.verdict import FAILURE_CODES
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from parsers.errors import InputError
from tests.conftest import CORPUS
from tests.parsers.nccl.test_nccl_corpus import EXPECTED as NCCL_EXPECTED
from tests.parsers.nccl.test_nccl_log import parse, report
from tests.parsers.nccl.test_nccl_more_corpus import EXPECTED as MORE_EXPECTED
from tests.parsers.nccl.test_nccl_more_corpus import WHERE

# aws-ofi-nccl 0.9 (NCCL 2.4) and 1.14 (NCCL 2.27, with NCCL's own timestamp)
OFI_OLD = "ip-172-31-9-96:26565:26565 [0] get_ofi_provider:312 NCCL WARN NET/OFI Could not find any optimal provider\n"
OFI_NEW = (
    "[2025-10-16 22:16:08] ip-172-31-3-90:1929:1937 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN NET/OFI OFI "
    "fi_getinfo() call failed: No data available\n"
)
# the verbs wrapper used before libibverbs was loaded: NCCL 2.3 (.cu, no pid) and 2.29 with its header stripped
WRAPPER_23 = "node1:77:77 [0] misc/ibvwrap.cu:212 NCCL WARN lib wrapper not initialized.\n"
WRAPPER_229 = "[5] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.\n"
# a plugin refusing with a bare chain: the HPC-X IBext plugin disabled (2.x), the IB transport's init (2.18)
CHAIN_IBEXT = "gpu01:351578:351578 [0] NCCL INFO NCCL_IBEXT_DISABLE set by environment to 1.\ngpu01:351578:351578 [0] NCCL INFO net.cc:55 -> 3\n"
CHAIN_NETIB = "n2:4011:4011 [1] NCCL INFO transport/net_ib.cc:192 -> 2\n"

WENT_ON = "{who} [0] NCCL INFO Using network Socket\n"
ABORT = "{who} [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Abort COMPLETE\n"
FRAMEWORK = (
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled system "
    "error, NCCL version 2.7.8\n"
)
EXIT = "srun: error: node12: task 3: Killed\n"
LATER_ERROR = "{who} [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer g<4>\n"
PROBES = {
    "ofi 0.9": (OFI_OLD, "ip-172-31-9-96:26565:26565"),
    "ofi 1.14": (OFI_NEW, "ip-172-31-3-90:1929:1937"),
    "wrapper 2.3": (WRAPPER_23, "node1:77:77"),
    "ibext chain": (CHAIN_IBEXT, "gpu01:351578:351578"),
    "net_ib chain": (CHAIN_NETIB, "n2:4011:4011"),
}


def _classified(text: str) -> list[dict[str, Any]]:
    return [e for e in parse(text)[1].get("nccl_errors", []) if e["class"] is not None]


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_a_probe_s_failure_that_ends_the_log_is_unconfirmed(probe: str) -> None:
    text, who = PROBES[probe]
    (err,) = _classified(text)
    assert err["unconfirmed"] is True, probe
    (stripped,) = _classified(WRAPPER_229)  # a record without its host: the file's unknown process
    assert stripped["unconfirmed"] is True


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_what_follows_a_probe_s_failure_confirms_or_clears_it(probe: str) -> None:
    text, who = PROBES[probe]
    assert not _classified(text + WENT_ON.format(who=who))  # NCCL went on: a probe that failed, not an error
    for after in (FRAMEWORK, EXIT, LATER_ERROR.format(who=who)):
        first = _classified(text + after)[0]
        assert first["line"] <= text.count("\n") and first["unconfirmed"] is False, (probe, after)
    # its own abort after it: a WARN is confirmed; a chain without a WARN is the abort unwinding (no error)
    aborted = _classified(text + ABORT.format(who=who))
    assert [e["unconfirmed"] for e in aborted] == ([] if "chain" in probe else [False])


def test_a_failure_after_the_network_was_chosen_is_not_a_probe_s() -> None:
    who = "h:1:1"
    chosen = f"{who} [0] NCCL INFO Using network IB\n"
    (wrapper,) = _classified(chosen + f"{who} [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed\n")
    assert (wrapper["class"], wrapper["unconfirmed"]) == ("ibv_setup_failure", False)
    # connected first (P2P within the node): the network was chosen, whichever it was
    conn = f"{who} [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC\n"
    (after_conn,) = _classified(conn + f"{who} [0] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.\n")
    assert after_conn["unconfirmed"] is False


def test_a_verbs_failure_while_connecting_is_not_a_probe_s() -> None:
    """The verbs wrapper failing in a connection's setup (its chain passes through the net transport's
    connect, 2.18-2.30; 2.7's ``transport.cc`` loop) is an error where the log ends: no network was
    probed then, whether or not the log shows the network's choice."""
    for chain in (
        "transport/net_ib.cc:659 -> 2\n{w} [7] NCCL INFO transport/net_ib.cc:795 -> 2\n{w} [7] NCCL INFO transport/net.cc:683 -> 2\n",
        "transport/net_ib.cc:568 -> 2\n{w} [7] NCCL INFO transport/net.cu:276 -> 2\n{w} [7] NCCL INFO transport.cc:68 -> 2\n",
    ):
        w = "msm-h200-2:4016:4653"
        text = f"{w} [7] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory\n"
        (err,) = _classified(text + f"{w} [7] NCCL INFO " + chain.format(w=w))
        assert (err["class"], err["unconfirmed"]) == ("ibv_setup_failure", False), chain


def test_a_chain_without_its_warn_that_ends_the_log_is_unconfirmed_wherever_it_is() -> None:
    """A result chain with no WARN before it is what a probe, or an abort unwinding (2.23's
    ``misc/socket.cc:47 -> 3`` as a finished run shuts down), prints: unconfirmed until more follows."""
    who = "h:1:2"
    done = f"{who} [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1e0 commId 0x1 - Init COMPLETE\n"
    for chain in ("misc/socket.cc:47 -> 3\n", "proxy.cc:1306 -> 2\n"):
        (err,) = _classified(done + f"{who} [0] NCCL INFO {chain}")
        assert err["unconfirmed"] is True, chain
        (err,) = _classified(done + f"{who} [0] NCCL INFO {chain}" + EXIT)
        assert err["unconfirmed"] is False, chain


def test_other_failures_that_end_a_log_stay_confirmed() -> None:
    """Only a probe's failure is in doubt: a WARN NCCL does not go on from is an error where the log ends."""
    for text in (
        "h:1:1 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer g<4>\n",
        "h:1:1 [0] bootstrap.cc:105 NCCL WARN Bootstrap : no socket interface found\n",
        "h:1:1 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'\n",
    ):
        (err,) = _classified(text)
        assert err["unconfirmed"] is False, text


def _finding(tmp_path: Path, text: str) -> dict[str, Any]:
    (finding,) = [f for f in report(tmp_path, text)["findings"] if f["code"] == "nccl.error"]
    return finding


def test_an_unconfirmed_root_cause_is_a_warning_with_conditional_advice(tmp_path: Path) -> None:
    finding = _finding(tmp_path, OFI_NEW)
    assert finding["severity"] == "warning"
    assert "unconfirmed" in finding["title"] and finding["labels"]["unconfirmed"] == "true"
    assert finding["summary"].startswith("Possible root cause, unconfirmed: system_error")
    first, *fixes = [s["action"] for s in finding["suggestions"]]
    assert "after line 1" in first and "Init COMPLETE" in first
    assert fixes and all(f.startswith("If it did fail: ") for f in fixes)
    confirmed = _finding(tmp_path, OFI_NEW + FRAMEWORK)
    assert confirmed["severity"] == "critical" and "unconfirmed" not in confirmed["title"]
    # two processes of one class, one of them confirmed by its abort: the class is confirmed
    other = "ip-172-31-3-91:77:77 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN NET/OFI OFI fi_getinfo() call failed: x\n"
    aborted = "ip-172-31-3-91:77:77 [0] NCCL INFO comm 0x5 rank 1 nranks 2 cudaDev 0 busId 1000 - Abort COMPLETE\n"
    assert _finding(tmp_path, OFI_NEW + other + aborted)["severity"] == "critical"


CUT_MARK = re.compile(rb" NCCL WARN |\S:\d+ -> \d+")


def _healthy() -> list[Path]:
    """The corpus logs whose experts found no error."""
    old = [
        p
        for p in sorted((CORPUS / "nccl").glob("*.log"))
        if (e := NCCL_EXPECTED.get(p.name.split("-")[0])) is not None
        and not e.errors
        and not any(c.split(":")[0] in FAILURE_CODES for c in e.codes)
    ]
    more = [WHERE[name] / name for name, want in sorted(MORE_EXPECTED.items()) if not want["error_classes"]]
    return old + more


def test_healthy_logs_cut_after_each_warn_get_no_critical_finding(corpus: Path, tmp_path: Path) -> None:
    """Every healthy corpus log, cut just after each of its first WARNs and result chains and at 30, 60
    and 90% of its lines (the excerpts users paste), gives no critical finding."""
    cuts = 0
    for path in _healthy():
        lines = path.read_bytes().split(b"\n")
        marks = sorted(i + 1 for i, line in enumerate(lines) if CUT_MARK.search(line))[:6]
        ends = {*marks, *(len(lines) * k // 10 for k in (3, 6, 9))}
        for end in sorted(e for e in ends if 0 < e < len(lines) - 1):
            cut = tmp_path / f"{path.stem}-{end}.log"
            cut.write_bytes(b"\n".join(lines[:end]) + b"\n")
            try:
                found = discover([cut])
            except InputError:  # its first half holds no NCCL record yet (a banner): refused, rightly
                continue
            cuts += 1
            with temporary_store() as store:
                store.ingest(*found)
                doc = to_document(analyze(store))
            critical = [f["title"] for f in doc["findings"] if f["severity"] == "critical"]
            assert not critical, (path.name, end, lines[end - 1][:120], critical)
    assert cuts > 200


NCCL_TESTS_END = (  # nccl-tests' end of run: its collectives completed on every rank, and their values were checked
    "   134217728      33554432     float     sum      -1   5190.8   25.86   25.86      0   5186.6   25.88   25.88      0\n"
    "# Out of bounds values : {wrong}\n"
    "# Avg bus bandwidth    : 8.62002 \n"
)


@pytest.mark.parametrize("probe", [OFI_OLD, OFI_NEW, WRAPPER_23, WRAPPER_229])
def test_a_probe_failure_before_nccl_tests_results_is_no_failure(probe: str) -> None:
    """With NCCL_DEBUG=WARN nothing of NCCL's own says it went on; nccl-tests' checked results do."""
    _, t = parse(probe + NCCL_TESTS_END.format(wrong="0 OK"))
    assert [e["class"] for e in t.get("nccl_errors", [])] == [None]  # kept, with the note that it was a probe
    _, t = parse(probe + NCCL_TESTS_END.format(wrong="3 FAILED"))
    classes = [e["class"] for e in t["nccl_errors"]]
    assert classes[-1] == "wrong_results" and all(c is not None for c in classes)  # no evidence that it went on
