"""Every WARN of NCCL 2.3-2.30 and aws-ofi-nccl, rendered as a log line, gets its catalogue class.

The reference catalogue (``../shared/docs/nccl-warn-catalogue.tsv``, outside this repository)
lists each call site's format string, releases and suggested class. For every WARN row, a line
is rendered from its format (placeholders filled with plausible values) in the record header of
its first release and, for rows NCCL still prints, in the 2.30 header with a native timestamp and
the function name; the record parser reads it and the classifier must give the row's class and
benign flag. Where this project classifies differently on purpose, ``warn_formats.tsv`` gives the
reason, and the test prints those rows as a table. A format that is only a placeholder (``%s``:
the caller's text) has nothing to recognise and is left out. The committed table must be what
``scripts/gen_warn_table.py`` generates from the catalogue.
"""

from __future__ import annotations

import csv
import importlib.util
import re
from functools import cache
from types import ModuleType
from typing import Any

import pytest

from parsers.nccl.error_classes import verdict
from parsers.nccl.records import split_records
from tests.conftest import CORPUS, ROOT

CATALOGUE = CORPUS.parent / "docs" / "nccl-warn-catalogue.tsv"
TABLE = ROOT / "parsers" / "nccl" / "warn_formats.tsv"
_CONVERSION = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?([diouxXeEfgGcspn%])")
_FILL = {"s": "mlx5_0", "p": "0x7f3a5c000000", "c": "x", "f": "1.5", "e": "1.5", "g": "1.5"}


@cache
def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_warn_table", ROOT / "scripts" / "gen_warn_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render(fmt: str) -> str:
    """The first line a printf of ``fmt`` prints, with plausible values."""
    text = _generator().c_text(fmt).strip().split("\n")[0]
    return _CONVERSION.sub(lambda m: "%" if m[1] == "%" else _FILL.get(m[1], "3"), text)


def lines(row: dict[str, str]) -> list[str]:
    """The WARN lines of a catalogue row: in its first release's header, and in 2.30's."""
    source, msg = row["source_file"], render(row["format_string"])
    if source.startswith("aws-ofi-nccl:"):  # the plugin passes its function, not a file
        return [f"gpu-node-1:4242:4250 [0] nccl_net_ofi_init:812 NCCL WARN {msg}"]
    out = [f"gpu-node-1:4242:4250 [0] {source}:120 NCCL WARN {msg}"]
    if row["last_version"].startswith("2.30"):
        out.append(f"[2026-01-05 10:11:12] gpu-node-1:4242:4250 [0] {source}:120 (ncclFn) NCCL WARN {msg}")
    return out


def warn_rows() -> list[dict[str, str]]:
    with open(CATALOGUE, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        r
        for r in rows
        if not r["source_file"].startswith(("pytorch:", "horovod:"))
        and not r["notes"].startswith("[INFO]")
        and r["suggested_class"]
        and _generator().to_pattern(r["format_string"]).replace(".*?", "").strip()
    ]


def _policy() -> dict[str, tuple[str, str, str]]:
    """The table's deliberate differences: pattern -> (class, benign, why)."""
    with open(TABLE, newline="", encoding="utf-8") as f:
        return {
            r["pattern"]: (r["class"], r["benign"], r["why"]) for r in csv.DictReader(f, delimiter="\t") if r["why"]
        }


needs_catalogue = pytest.mark.skipif(not CATALOGUE.is_file(), reason="../shared/docs/nccl-warn-catalogue.tsv absent")


@needs_catalogue
def test_table_is_generated_from_the_catalogue() -> None:
    gen = _generator()
    assert TABLE.read_text(encoding="utf-8") == gen.render(gen.rows(CATALOGUE)), (
        "parsers/nccl/warn_formats.tsv is out of date: run python scripts/gen_warn_table.py"
    )


@needs_catalogue
def test_every_catalogue_warn_gets_its_class(capsys: pytest.CaptureFixture[str]) -> None:
    gen, policy = _generator(), _policy()
    wrong: list[tuple[str, ...]] = []
    deliberate: dict[tuple[str, str, str], str] = {}
    rows = warn_rows()
    for row in rows:
        expected, benign = row["suggested_class"], row["benign"]
        pattern = gen.to_pattern(row["format_string"])
        if pattern in policy and policy[pattern][:2] != (expected, benign):
            now, now_benign, why = policy[pattern]
            deliberate[(row["format_string"][:70], f"{expected}/{benign}", f"{now}/{now_benign}")] = why
            expected, benign = now, now_benign
        for line in lines(row):
            (rec,), _, _ = split_records(line)
            v = verdict(rec.msg, rec.src)
            got = (rec.level, v.cls, "yes" if v.benign else "no")
            if got != ("WARN", expected, benign):
                wrong.append((row["source_file"], row["format_string"][:80], f"{expected}/{benign}", str(got)))
    with capsys.disabled():
        print(f"\n{len(rows)} catalogue WARN rows; deliberate differences ({len(deliberate)}):")
        for (fmt, was, now), why in sorted(deliberate.items()):
            print(f"  {fmt!r}: {was} -> {now} ({why[:90]})")
    table = "\n".join(" | ".join(w) for w in wrong[:40])
    assert not wrong, (
        f"{len(wrong)} of {len(rows)} rows classified otherwise (source | format | expected | got):\n{table}"
    )


def _classes(msg: str, src: str | None = None) -> tuple[Any, ...]:
    v = verdict(msg, src)
    return v.cls, v.benign, v.consequence


def test_a_shm_failure_is_told_by_its_errno() -> None:
    fmt = "Error while creating shared memory segment /dev/shm/nccl-Xa (size 9637888), error: {} ({})"
    assert _classes(fmt.format("No space left on device", 28))[0] == "shm_exhausted"
    assert _classes(fmt.format("Permission denied", 13))[0] == "shm_permission"
    assert _classes("Call to shm_open failed : No such file or directory", "include/shm.h:41")[0] == "shm_missing"


def test_a_cut_message_takes_the_class_its_formats_agree_on() -> None:
    assert _classes("Connect to 10.0.0") == ("socket_error", False, False)
    assert _classes("[Proxy Service 3] Failed to execute operation Se") == ("system_error", False, True)
    assert _classes("Conn")[0] == "system_error"  # too short to be recognised: the general rule


def test_a_text_several_files_print_is_told_by_the_header_file() -> None:
    assert _classes("Call to read failed : Bad file descriptor", "graph/topo.cc:88")[0] == "topology_error"
    assert _classes("Call to read failed : Bad file descriptor", "transport/net_socket.cc:88")[0] == "socket_error"


def test_probes_are_benign_and_wrappers_are_consequences() -> None:
    assert _classes("NET/OFI OFI fi_getinfo() call failed: No data available") == ("plugin_probe", True, False)
    assert _classes("ncclAsyncJobComplete: job 0x55d0 failed, job error 2")[2] is True
    assert _classes("Cuda failure 'out of memory'")[0] == "cuda_oom"
    assert _classes("Cuda failure 'an illegal memory access was encountered'")[0] == "cuda_error"


@pytest.mark.parametrize(
    ("msg", "src", "news"),
    [
        # NCCL 2.4-2.19 prints libibverbs' name of every HCA event (net_ib.cu, then net_ib.cc) ...
        ("NET/IB : Got async event : client reregistration", "transport/net_ib.cc:93", True),
        ("NET/IB : Got async event : port active", "transport/net_ib.cu:80", True),
        ("NET/IB : Got async event : SM change", "transport/net_ib.cc:93", True),
        ("NET/IB : Got async event : GID table change", "transport/net_ib.cc:93", True),
        # ... and 2.20-2.22 with the device and port in front
        ("NET/IB : mlx5_0:1 Got async event : LID change", "transport/net_ib.cc:101", True),
        ("NET/IB : mlx5_0:1 Got async event : P_Key change", "transport/net_ib.cc:101", True),
        # the events that break queue pairs, the device or the port stay failures
        ("NET/IB : Got async event : local catastrophic error", "transport/net_ib.cu:80", False),
        (
            "NET/IB : mlx5_0:1 Got async event : local access violation work queue error",
            "transport/net_ib.cc:101",
            False,
        ),
        ("NET/IB : Got async event : port error", "transport/net_ib.cc:93", False),
        ("NET/IB : Got async event : CQ error", "transport/net_ib.cc:93", False),
    ],
)
def test_an_hca_event_that_is_news_is_no_failure(msg: str, src: str, news: bool) -> None:
    cls, benign, _ = _classes(msg, src)
    assert (cls, benign) == ("ib_completion_error", news)


@pytest.mark.parametrize(
    ("msg", "stranger"),
    [
        ("[Service thread] Unknown command 790 from localRank -1", True),  # NCCL 2.17+
        ("[Service thread] Unknown command 66326 from localRank -1\n", True),  # 2.12-2.16 printed its own newline
        ("[Service thread] Unknown command 12 from localRank 3", False),  # one of its own ranks: still an error
    ],
)
def test_bytes_from_a_stranger_on_the_proxy_port_are_no_failure(msg: str, stranger: bool) -> None:
    assert _classes(msg, "proxy.cc:1111")[:2] == ("internal_error", stranger)


@pytest.mark.parametrize(
    ("msg", "src", "says"),
    [
        ("Cuda failure 'system not yet initialized'", "init.cc:1216", "nvidia-fabricmanager"),  # 2.11
        ("Cuda failure 802 'system not yet initialized'", "transport/p2p.cc:275", "nvidia-fabricmanager"),  # 2.19
        ("Cuda failure 1 'invalid argument'", "transport/nvls.cc:598", "NCCL_NVLS_ENABLE=0"),
        ("Cuda failure 'operation not supported'", "transport/nvls.cc:165", "NCCL_NVLS_ENABLE=0"),
        ("Cuda failure 401 'the operation cannot be performed in the present state'", "transport/nvls.cc:254", "NVLS"),
        ("Cuda failure 'peer access is not supported between these two devices'", "transport/p2p.cc:238", "iommu"),
        ("Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'", "init.cc:1069", "older"),
        ("Cuda failure 'an illegal memory access was encountered'", "enqueue.cc:1152", "CUDA_LAUNCH_BLOCKING=1"),
        ("Cuda failure 'uncorrectable ECC error encountered'", "init.cc:200", "drain this node"),
        ("Cuda failure 'all CUDA-capable devices are busy or unavailable'", "init.cc:200", "EXCLUSIVE_PROCESS"),
        ("Cuda failure 'CUDA driver is a stub library'", "init.cc:1480", "stubs"),  # horovod#3831
        ("Cuda failure 804 'forward compatibility was attempted on non supported HW'", "init.cc:98", "cuda-compat"),
        (  # 2.27+'s own words, also behind PyTorch's "Last error:" with no source (pytorch#177472)
            "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot "
            "be performed in the present state'.",
            "transport/nvls.cc:221",
            "NCCL_NVLS_ENABLE=0",
        ),
    ],
)
def test_a_cuda_failure_says_what_to_change_for_its_error(msg: str, src: str, says: str) -> None:
    v = verdict(msg, src)
    assert v.cls == "cuda_error" and says in v.remediation


def test_a_cuda_failure_of_no_known_text_keeps_the_general_advice() -> None:
    v = verdict("Cuda failure 1 'invalid argument'", "transport/p2p.cc:598")  # not NVLS: nothing more is known
    assert v.remediation.startswith("A CUDA call failed inside NCCL") and "Here:" not in v.remediation


PORT_DOWN = "\nh:7:9 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n"  # NCCL 2.4-2.19
PORT_DOWN_222 = "\nh:7:9 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error\n"
PORT_DOWN_223 = "\nh:7:9 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async error event: port error\n"
WENT_ON = "h:7:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n"
BROKE = (
    "\nh:7:11 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5001> with error 12, "
    "opcode 0, len 0, vendor err 129 (Send)\n"
)


@pytest.mark.parametrize("down", [PORT_DOWN, PORT_DOWN_222, PORT_DOWN_223])
def test_a_port_that_went_down_is_a_failure_only_if_nothing_went_on_after_it(down: str) -> None:
    from tests.parsers.nccl.test_nccl_log import parse

    def errors(text: str) -> list[tuple[object, ...]]:
        return [(e["line"], e["class"], e["unconfirmed"]) for e in parse(text)[1]["nccl_errors"]]

    assert errors(down + WENT_ON) == [(2, None, False)]  # a flap NCCL survived: its connections came up after it
    assert errors(down) == [(2, "ib_completion_error", True)]  # the log ends there: nothing tells
    assert errors(down + BROKE) == [(2, "ib_completion_error", False), (4, "ib_completion_error", False)]


#: NCCL 2.8's and 2.11's remote allocator stopping its service thread (bootstrap.cc; nccl#472: "a red herring")
ALLOCATOR_28 = "\nh:7:9 [0] bootstrap.cc:270 NCCL WARN [Rem Allocator] Poll failed with error 1\n"
ALLOCATOR_211 = "\nh:7:9 [0] bootstrap.cc:311 NCCL WARN [Rem Allocator] Poll failed with error 1\n"


@pytest.mark.parametrize("stopped", [ALLOCATOR_28, ALLOCATOR_211], ids=["2.8", "2.11"])
def test_the_remote_allocator_stopping_is_a_failure_only_if_nothing_went_on_after_it(stopped: str) -> None:
    from parsers.nccl.failures import ALLOCATOR_NOTE
    from tests.parsers.nccl.test_nccl_log import parse

    def errors(text: str) -> list[tuple[object, ...]]:
        return [(e["line"], e["class"], e["unconfirmed"]) for e in parse(text)[1]["nccl_errors"]]

    assert errors(stopped + WENT_ON) == [(2, None, False)]  # the process went on: the job did not need the thread
    assert parse(stopped + WENT_ON)[1]["nccl_errors"][0]["remediation"] == ALLOCATOR_NOTE
    assert errors(stopped) == [(2, "system_error", True)]  # the log ends there: nothing tells
    assert errors(stopped + BROKE) == [(2, "system_error", False), (4, "ib_completion_error", False)]


def test_nvls_in_its_own_words_says_what_to_change_without_its_source() -> None:
    """PyTorch's ``Last error:`` carries the text alone: the words still name NVLS."""
    v = verdict(
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be "
        "performed in the present state'."
    )
    assert v.cls == "cuda_error" and "NCCL_NVLS_ENABLE=0" in v.remediation


@pytest.mark.parametrize(
    ("msg", "news"),
    [
        # 2.23.4-2.28 print the events their code lists as non-fatal as "async error event"
        ("NET/IB : mlx5_0:1 Got async error event: port active", True),
        ("NET/IB : mlx5_2:1 Got async error event: SM change", True),
        ("NET/IB : mlx5_0:1 Got async error event: path migration request error", True),
        ("NET/IB : mlx5_0:1 unknown event type (18)", True),  # a GID table change: not in their list, only logged
        ("NET/IB : mlx5_0:1 Got non-fatal async event: GID table change(18)", True),  # 2.28.7+
        # the fatal ones, in every release's words
        ("NET/IB : mlx5_0:1 async fatal event on QP (0x55d1): local work queue catastrophic error", False),
        ("NET/IB : mlx5_0:1 async fatal event on CQ (0x7f3a): CQ error", False),
        ("NET/IB : Got async event : local catastrophic error", False),  # up to 2.22
    ],
)
def test_hca_events_nccl_goes_on_after_are_no_failure(msg: str, news: bool) -> None:
    v = verdict(msg, "transport/net_ib.cc:101")
    assert v.cls == "ib_completion_error" and v.benign is news


@pytest.mark.parametrize(
    "msg",
    [
        # aws-ofi-nccl 1.3-1.9 (sendrecv), 1.16-1.18, 1.19+ (with flags), 1.21's platform form, and the rdma path's
        "NET/OFI Request 0x7f1c2c0a1b00 completed with error. RC: 5. Error: Input/output error. Completed length: 0, "
        "Request: { buffer_index: 3, dev: 0, size: 1048576, state: PENDING, direction: SEND }",
        "NET/OFI Request 0x7f14cc5b60c0 completed with error. RC: 113. Error: 2 (UNDELIVERABLE). Completed length: 0",
        "NET/OFI Request 0x7f14cc5b60c0 completed with error. RC: 103. Flags: 1026. Error: 15 (Connection reset by "
        "peer). Completed length: 0, Request: { dev: 2, size: 0, state: CREATED, type: RECV }",
        "NET/OFI Request 0x55d0 (SEND) completed with error: err: 5, flags: 1026, prov_errno: 4, strerror: Input/output "
        "error, len: 0",
        "NET/OFI Fatal: rx buffer recv completed with error",
        "NET/OFI Remote write completed with error. RC: 5. Error: 12 (Remote unreachable). Completed length: 0",
        "NET/OFI Unable to read from fi_cq_readerr. RC: -11. Error: Resource temporarily unavailable",
    ],
)
def test_a_failed_libfabric_transfer_points_at_the_peer_not_at_the_plugin_setup(msg: str) -> None:
    """A transfer of aws-ofi-nccl failed after the plugin was up (the remote rank died, the path broke): the advice is
    the peer's log and the links, not the setup advice of a plugin that could not start."""
    v = verdict(msg, None)
    assert v.cls == "ib_completion_error" and not v.benign
    assert "peer" in (v.remediation or "") and "expose the EFA devices" not in (v.remediation or "")
    setup = verdict("NET/OFI Unable to find a libfabric provider (efa)", None)
    assert "expose the EFA devices" in (setup.remediation or "")  # the plugin's own start keeps its advice
