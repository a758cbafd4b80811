"""Acceptance on the real NCCL logs of ../shared/corpus/nccl (facts from its EXPECTED.md).

Each file is ingested alone and analysed; the report's ``nccl`` section and findings must
state exactly the facts the file shows: versions printed in it (none when EXPECTED says
"not printed"), the hosts, the inter-node network, the connection transports, the ranks
that reached Init COMPLETE, the classes of the errors, and the finding codes. Sets are
compared exactly, so a parser that invents a version, a host, a transport or an error
fails as surely as one that misses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from tests.conftest import validate_report


@dataclass(frozen=True)
class E:
    versions: set[str]
    hosts: set[str] | int  # a count where the file shows many
    nets: set[str]  # inter-node network per process (IB, Socket, IBext_v8, AWS Libfabric, ...)
    transports: set[str]  # connection lines (P2P/IPC/read, NET/IB/GDRDMA, NVLS, ...)
    complete: set[int]  # ranks with Init COMPLETE
    errors: set[str]  # root-cause classes
    codes: set[str]  # finding codes (nccl.error as nccl.error:<class>)


EXPECTED = {
    "001": E({"2.4.8"}, {"aliyun"}, {"Socket"}, set(), set(), set(), set()),
    "002": E({"2.3.7"}, {"learnfair0536"}, {"IB"}, set(), set(), set(), set()),
    "004": E({"2.5.6"}, {"master_node", "secondary_node"}, {"IB"}, set(), set(), set(), set()),
    "005": E({"2.4.7"}, {"master_node", "secondary_node"}, {"IB"}, set(), set(), set(), set()),
    "007": E(set(), 18, {"Socket"}, set(), set(), set(), {"nccl.socket_fallback"}),
    "008": E(set(), 15, {"Socket"}, {"NET/Socket"}, {15, 19}, set(), {"nccl.socket_fallback"}),
    "010": E(
        {"2.7.8"},
        {"spark01"},
        {"IB"},
        {"NET/IB"},
        set(),
        {"ibv_setup_failure"},
        {"nccl.error:ibv_setup_failure", "nccl.no_gdrdma"},
    ),
    "011": E(
        {"2.8.3"}, {"hai-a100-3"}, {"IBext"}, set(), set(), {"ibv_setup_failure"}, {"nccl.error:ibv_setup_failure"}
    ),
    "013": E(set(), {"10-90-43-152"}, {"IB"}, {"NET/IB/GDRDMA"}, set(), set(), set()),
    "014": E({"2.10.3"}, {"SH-IDC1-10-142-5-42"}, {"IB"}, set(), set(), set(), set()),
    "016": E({"2.10.3"}, {"nvidia2020"}, {"Socket"}, set(), set(), set(), set()),
    "017": E({"2.10.3"}, {"nodea", "nodeb"}, {"IB"}, set(), set(), set(), set()),
    "019": E(set(), {"gpu01"}, {"IB"}, set(), set(), set(), set()),
    "020": E({"2.18.5"}, {"node2", "node4"}, {"IB"}, set(), set(), set(), set()),
    "022": E(set(), {"dgxh100-4"}, set(), set(), set(), {"socket_error"}, {"nccl.error:socket_error"}),
    "023": E({"2.19.3"}, {"instance-8g-96c-2"}, {"Socket"}, set(), set(), set(), set()),
    "025": E(
        set(), {"<cluster_name>"}, {"Socket"}, {"NET/Socket", "P2P/IPC/read"}, set(), set(), {"nccl.socket_fallback"}
    ),
    "026": E(set(), {"swat1-04"}, set(), set(), {0, 1, 4, 5, 6}, set(), set()),
    "028": E(set(), {"node"}, set(), {"COLLNET/SHARP/GDRDMA"}, set(), {"system_error"}, {"nccl.error:system_error"}),
    "029": E(set(), {"gpu34", "gpu36", "gpu40", "gpu41"}, set(), set(), set(), set(), set()),
    "031": E(set(), {"hostname-test"}, set(), {"P2P/CUMEM"}, set(), set(), set()),
    "032": E(set(), {"hostname-test"}, {"IBext_v8"}, {"NET/IBext_v8"}, set(), set(), {"nccl.no_gdrdma"}),
    "034": E(
        set(), {"kp-ddp-worker-0"}, set(), set(), set(), {"ib_completion_error"}, {"nccl.error:ib_completion_error"}
    ),
    "035": E(set(), {"gh-3714u15"}, set(), set(), set(), {"ib_completion_error"}, {"nccl.error:ib_completion_error"}),
    "037": E(set(), {"aigc-maas-instance-leader-0"}, set(), set(), set(), set(), {"nccl.no_gdrdma"}),
    "038": E(set(), {"aigc-maas-instance-leader-0"}, {"IB"}, {"NET/IB"}, set(), set(), {"nccl.no_gdrdma"}),
    "040": E(set(), {"VM-0-16-ubuntu"}, set(), set(), set(), {"cuda_oom"}, {"nccl.error:cuda_oom"}),
    "041": E(set(), {"ubuntu"}, set(), set(), set(), {"shm_exhausted"}, {"nccl.error:shm_exhausted"}),
    "043": E(set(), {"crow-ib-new-nccl-256-info-19"}, {"IB"}, {"P2P/IPC"}, set(), set(), set()),
    "044": E(
        set(),
        {"crow-ib-new-nccl-256-info-19"},
        {"IB"},
        {"NET/IB", "P2P/IPC"},
        set(),
        {"ibv_setup_failure"},
        {"nccl.error:ibv_setup_failure", "nccl.no_gdrdma"},
    ),
    "046": E({"2.21.5"}, {"ai-worker01", "ai-worker03"}, {"IBext_v8"}, set(), set(), set(), set()),
    "047": E(
        set(),
        {"ip-172-32-34-121", "ip-172-32-36-209", "ip-172-32-38-1", "ip-172-32-45-165"},
        {"AWS Libfabric"},
        {"NET/AWS Libfabric", "P2P/IPC"},
        set(),
        {"ibv_setup_failure"},
        {"nccl.error:ibv_setup_failure", "nccl.no_gdrdma"},
    ),
    "049": E(
        set(), {"algo-1"}, set(), {"P2P/CUMEM/read"}, set(), {"collective_mismatch"}, {"nccl.error:collective_mismatch"}
    ),
    "050": E({"2.21.5"}, {"ip-10-36-29-253"}, set(), set(), set(), set(), set()),
    "052": E(
        set(),
        {"<cluster_name>"},
        {"Socket"},
        {"NET/Socket", "P2P/IPC/read"},
        set(),
        {"socket_error"},
        {"nccl.error:socket_error", "nccl.socket_fallback"},
    ),
    "053": E(set(), {"node0", "node2"}, set(), set(), set(), set(), set()),
    "055": E(
        set(), {"DisAI-4090-2", "DisAI-4090-3"}, set(), set(), set(), {"internal_error"}, {"nccl.error:internal_error"}
    ),
    "056": E(set(), {"tomte401"}, set(), set(), set(), {"cuda_error"}, {"nccl.error:cuda_error"}),
    "058": E(set(), set(), set(), set(), set(), set(), {"nccl.watchdog_timeout"}),
    "059": E(set(), set(), set(), set(), set(), set(), {"nccl.watchdog_timeout"}),
    "061": E(set(), set(), set(), set(), set(), set(), {"nccl.watchdog_timeout"}),
    "062": E(set(), set(), set(), set(), set(), set(), {"nccl.watchdog_timeout"}),
    "064": E(set(), {"d5618706-01"}, set(), set(), set(), set(), set()),
    "065": E(set(), {"d5618706-01"}, set(), set(), set(), set(), set()),
    "067": E(set(), {"bm-h100-02"}, set(), set(), set(), set(), set()),
    "068": E(set(), {"?"}, set(), set(), {2, 3, 4, 7}, set(), set()),
    "070": E(set(), {"ip-172-31-3-90"}, set(), set(), set(), {"system_error"}, {"nccl.error:system_error"}),
    "071": E(set(), {"ip-10-216-178-255", "ip-10-216-179-119"}, {"AWS Libfabric"}, set(), set(), set(), set()),
    "073": E(set(), {"h100-kickoff-llama-70b-chat-20230328-bcf75c4f6-gn6nd"}, {"Socket"}, set(), set(), set(), set()),
    "074": E({"2.18.3"}, {"ubuntu"}, {"Socket"}, set(), set(), {"cuda_error"}, {"nccl.error:cuda_error"}),
    "076": E({"2.5.7"}, {"wangying-system"}, {"Socket"}, set(), set(), set(), set()),
    "077": E(set(), {"hpc-25-14", "hpc-25-15"}, {"IB"}, set(), set(), {"config_error"}, {"nccl.error:config_error"}),
    "079": E(set(), {"learnfair062"}, set(), set(), set(), set(), set()),
    "080": E({"2.12.12"}, {"gcn6"}, {"IB"}, set(), set(), {"system_error"}, {"nccl.error:system_error"}),
    "082": E({"2.8.4"}, {"j63g01247", "j66d10267"}, {"IB"}, set(), set(), set(), set()),
    "083": E(set(), {"tj1-asr-train-v100-13"}, set(), set(), set(), {"socket_error"}, {"nccl.error:socket_error"}),
    "085": E(
        {"2.5.6"},
        {"NvYt-dcf441d17e21-1bdf2bc9-79ce82ee-3fe03e8-c2959af0"},
        {"Socket"},
        set(),
        set(),
        set(),
        {"nccl.ib_disabled"},
    ),
    "086": E(set(), {"12f0e56ac84d"}, {"Socket"}, set(), set(), set(), {"nccl.ib_disabled"}),
    "088": E(set(), {"hugging-model-1-predictor-00001-deployment-5c86c57756-p7ghj"}, set(), set(), set(), set(), set()),
    "089": E(set(), {"MLVM", "MLVM2"}, set(), set(), set(), set(), set()),
    "091": E(
        set(), {"compute-dy-p4d24xlarge-5"}, set(), set(), set(), {"topology_error"}, {"nccl.error:topology_error"}
    ),
    "092": E(set(), {"ip-0A0C04E3"}, set(), set(), set(), {"topology_error"}, {"nccl.error:topology_error"}),
    "094": E(set(), {"task272154-tz9m4"}, {"IB"}, {"NET/IB/GDRDMA", "P2P/IPC/read"}, set(), set(), set()),
    "095": E(set(), {"machine-1"}, set(), set(), {14, 9}, set(), set()),
    "097": E(
        set(),
        {"H100-1", "H100-2", "H100-5"},
        set(),
        set(),
        set(),
        {"ib_completion_error"},
        {"nccl.error:ib_completion_error"},
    ),
    "098": E(
        set(), {"VM-0-14-centos"}, set(), set(), set(), {"ib_completion_error"}, {"nccl.error:ib_completion_error"}
    ),
    "100": E({"2.21.5"}, {"kolyoz1", "kolyoz2"}, set(), set(), set(), set(), set()),
    "101": E(set(), {"a100-st-p4d24xlarge-22"}, set(), set(), set(), {"socket_error"}, {"nccl.error:socket_error"}),
    "103": E({"2.18.3"}, {"host-2"}, {"IB"}, set(), set(), set(), set()),
    "104": E(set(), {"tj5-sc-ai-h800r-dev01"}, set(), {"NVLS"}, set(), set(), set()),
    "106": E({"2.21.5"}, {"gh-3714u06"}, set(), set(), set(), set(), set()),
}


@pytest.fixture(scope="module")
def reports(corpus: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted((corpus / "nccl").glob("*.log")):
        with temporary_store() as store:
            store.ingest(*discover([path]))
            out[path.name.split("-")[0]] = dict(validate_report(to_document(analyze(store))))
    return out


def facts(doc: dict[str, Any]) -> E:
    n = doc["nccl"] or {"processes": [], "versions": [], "communicators": [], "errors": []}
    procs = n["processes"]
    hosts = {p["host"] or "?" for p in procs}
    return E(
        versions={v["version"] for v in n["versions"]} | {p["version"] for p in procs if p["version"]},
        hosts=len(hosts) if len(hosts) > 5 else hosts,
        nets={p["network"] for p in procs if p["network"]},
        transports={t for p in procs for t in p["transports"]},
        complete={r for c in n["communicators"] for r in c["ranks_complete"]},
        errors={e["class"] for e in n["errors"] if e["role"] == "root"},  # root causes, not what followed
        codes={f["code"] + (f":{f['labels']['class']}" if "class" in f["labels"] else "") for f in doc["findings"]},
    )


def test_every_corpus_log_is_covered(corpus: Path) -> None:
    assert sorted(p.name.split("-")[0] for p in (corpus / "nccl").glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_log_facts(reports: dict[str, dict[str, Any]], name: str) -> None:
    assert facts(reports[name]) == EXPECTED[name]
    assert all(i["issues"]["error"] == 0 for i in reports[name]["inputs"])


def _finding(doc: dict[str, Any], code: str) -> dict[str, Any]:
    return next(f for f in doc["findings"] if f["code"] == code)


def test_error_chains_and_remediations(reports: dict[str, dict[str, Any]]) -> None:
    chain = reports["011"]["nccl"]["errors"][0]["chain"]
    assert (
        chain[-1] == "external/nccl_archive/src/group.cc:72 -> 2 [Async thread]" and chain[0] == "ib_plugin.c:196 -> 2"
    )
    retry = _finding(reports["034"], "nccl.error")
    assert "retry counter exceeded" in retry["suggestions"][0]["action"] and retry["hosts"] == ["kp-ddp-worker-0"]
    assert "ACS" in _finding(reports["097"], "nccl.error")["suggestions"][0]["action"]
    assert "--shm-size" in _finding(reports["041"], "nccl.error")["suggestions"][0]["action"]
    unlogged = _finding(reports["055"], "nccl.error")  # host -2 failed first; host -3 saw its peer close
    assert unlogged["summary"].startswith("Root cause: internal_error on DisAI-4090-2:914454 at bootstrap.cc:312: a ")
    assert "result chain without its WARN" in unlogged["summary"] and "1 peers gone" in unlogged["summary"]
    refused = reports["083"]["nccl"]["errors"][0]
    assert refused["src"] == "include/socket.h:390" and refused["result_code"] == 2 and refused["line"] == 5


def test_watchdog_verdicts(reports: dict[str, dict[str, Any]]) -> None:
    hang = _finding(reports["058"], "nccl.watchdog_timeout")
    assert hang["labels"] == {"verdict": "hang"} and "7753" in hang["title"] and hang["ranks"] == []
    behind = _finding(reports["061"], "nccl.watchdog_timeout")
    assert behind["labels"] == {"verdict": "behind"} and behind["ranks"] == [7]
    assert _finding(reports["062"], "nccl.watchdog_timeout")["labels"] == {"verdict": "desync"}
    w = reports["058"]["nccl"]["watchdog_timeouts"][0]
    assert (w["rank"], w["seq"], w["op"], w["pg"], w["last_enqueued"], w["last_completed"]) == (
        0,
        7753,
        "_REDUCE_SCATTER_BASE",
        "1",
        7755,
        7752,
    )


def test_processes_are_host_and_pid(reports: dict[str, dict[str, Any]]) -> None:
    same_name = reports["074"]["nccl"]["processes"]
    assert sorted((p["host"], p["pid"]) for p in same_name) == [("ubuntu", 9621), ("ubuntu", 39964)]
    stripped = reports["068"]["nccl"]["processes"]
    assert [(p["host"], p["pid"], p["cuda_devs"]) for p in stripped] == [(None, None, [2, 3, 4, 7])]
    (one,) = [p for p in reports["082"]["nccl"]["processes"] if p["version_source"] == "bare line"]
    assert (one["host"], one["pid"]) == ("j66d10267", 290)  # rank 0's launcher prefix printed it
    others = [p for p in reports["082"]["nccl"]["processes"] if p is not one]  # one version in the file: one job
    assert len(others) == 3 and {(p["version"], p["version_source"]) for p in others} == {
        ("2.8.4", "job's version line")
    }
    multi_gpu = reports["001"]["nccl"]["processes"][0]
    assert multi_gpu["cuda_devs"] == [0, 1, 2, 3] and multi_gpu["ranks"] == []
    assert reports["026"]["nccl"]["processes"][0]["version_range"] == ["2.22.0", "2.22.99"]


def test_damaged_lines_are_parse_issues(reports: dict[str, dict[str, Any]]) -> None:
    codes = {i["code"] for i in reports["079"]["parse_issues"]}
    assert {"nccl.merged_records", "nccl.orphan_message"} <= codes
    assert "log.doubled_columns" in {i["code"] for i in reports["050"]["parse_issues"]}
    assert reports["050"]["nccl"]["hosts"] == ["ip-10-36-29-253"]  # the CloudWatch timestamp is not part of it


def test_timestamps_of_errors(reports: dict[str, dict[str, Any]]) -> None:
    assert reports["070"]["nccl"]["errors"][0]["time"] == "2025-10-16 22:16:08"  # NCCL 2.26+ native timestamp
    assert {e["time"] for e in reports["056"]["nccl"]["errors"]} == {"Fri Aug 11 12:31:45 2023"}  # mpirun
    assert reports["041"]["nccl"]["errors"][0]["time"] is None
