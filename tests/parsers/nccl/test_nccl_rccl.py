"""RCCL, the ROCm build of NCCL: its records are NCCL's, with HIP's names and RCCL's own lines.

Lines from RCCL 2.18.3 (ROCm 5.5, bare version line, sources under ``…/hipify/src/``), 2.13 in a
ROCm package (``…/rccl/build/src/init.cpp``), 2.27.7 and 2.30.4 (the version as an INFO record,
NCCL 2.26+'s native timestamp before WARNs, a host redacted to ``node``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from parsers.nccl.error_classes import verdict
from tests.parsers.nccl.test_nccl_log import parse, report

ADVICE = [
    (
        'Missing "amd_iommu=on" from kernel command line which can lead to system instablity or hang!',
        "/home/u/rccl/build/release/hipify/src/init.cc:125",
    ),
    (
        'Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!',
        "/long_pathname_so_that_rpms_can_package_the_debug_info/src/extlibs/rccl/build/src/init.cpp:122",
    ),
    (
        'Missing "HSA_FORCE_FINE_GRAIN_PCIE=1" from environment which can lead to low RCCL performance, system instablity or hang!',
        "/app/rccl/build/release/hipify/src/init.cc:132",
    ),
    ("LL cutoff points not detected for a supported arch gfx942", None),
]


@pytest.mark.parametrize(("msg", "src"), ADVICE)
def test_rccl_s_advice_on_the_machine_s_setup_is_no_error(msg: str, src: str | None) -> None:
    v = verdict(msg, src)
    assert v.benign and "RCCL goes on" in v.remediation


@pytest.mark.parametrize(
    ("msg", "src", "cls"),
    [
        (
            "hipIpcGetMemHandle failed : invalid argument",
            "/home/u/rccl/build/release/hipify/src/transport/p2p.cc:220",
            "cuda_error",
        ),
        ("HIP failure 'invalid argument'", "src/transport/p2p_tmp.cc:372", "cuda_error"),
        (
            "HIP failure 'the operation cannot be performed in the present state'",
            "/opt/rccl/hipify/src/enqueue.cc:2061",
            "cuda_error",
        ),
        ("HIP failure 'out of memory'", "/app/rccl/build/release/hipify/src/include/alloc.h:48", "cuda_oom"),
        ("Cuda failure 'out of memory'", "/app/rccl/build/release/hipify/src/include/alloc.h:48", "cuda_oom"),
    ],
)
def test_rccl_s_gpu_failures_take_nccl_s_classes_with_rocm_s_tools(msg: str, src: str, cls: str) -> None:
    v = verdict(msg, src)
    assert (v.cls, v.benign) == (cls, False)
    assert "rocm-smi" in v.remediation


def test_nccl_s_own_cuda_failure_gets_no_rocm_advice() -> None:
    assert "rocm-smi" not in verdict("Cuda failure 'invalid argument'", "transport/p2p.cc:220").remediation


def _versions(text: str) -> list[dict[str, Any]]:
    return [{k: r[k] for k in ("host", "version", "cuda", "source")} for r in parse(text)[1].get("nccl_versions", [])]


def test_rccl_s_version_lines_are_read() -> None:
    bare = "sharbox-ultra:204802:204802 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nRCCL version 2.18.3+hip5.5 develop:6ecf771+\n"
    assert _versions(bare) == [{"host": "sharbox-ultra", "version": "2.18.3", "cuda": "hip5.5", "source": "bare line"}]
    info = (
        "macpro2019-01:253809:253809 [0] NCCL INFO RCCL version : 2.30.4-HEAD:2b22ab0\n"
        "HIP version  : 7.14.60850-0000000\n"
        "ROCm version : 7.14.0.7-9999-2b22ab0195\n"
    )
    assert _versions(info) == [{"host": "macpro2019-01", "version": "2.30.4", "cuda": "hip", "source": "info"}]
    ray = "(RayWorkerWrapper pid=927) corona:927:927 [0] NCCL INFO RCCL version : 2.26.6-HEAD:f224e2c\n"
    assert [v["version"] for v in _versions(ray)] == ["2.26.6"]


PASTE = """\
[ RUN      ] AllReduce.OutOfPlace

sharbox-ultra:204802:204802 [0] /home/elias/rccl/build/release/hipify/src/init.cc:125 NCCL WARN Missing "amd_iommu=on" from kernel command line which can lead to system instablity or hang!

sharbox-ultra:204802:204802 [0] /home/elias/rccl/build/release/hipify/src/init.cc:127 NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!
RCCL version 2.18.3+hip5.5 develop:6ecf771+

sharbox-ultra:204802:204836 [1] /home/elias/rccl/build/release/hipify/src/transport/p2p.cc:220 NCCL WARN hipIpcGetMemHandle failed : invalid argument
"""

HEALTHY = """\
node [0] NCCL INFO Kernel version: 6.8.0-136-generic

[2026-08-23 09:56:58] node [0] /app/rccl/build/release/hipify/src/init.cc:213 NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!
node [0] NCCL INFO RCCL version : 2.27.7-HEAD:29e1567
HIP version  : 7.2.53211-97f5574fe2
node [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE
"""


def test_an_rccl_failure_is_reported_by_its_gpu_call_not_by_rccl_s_advice(tmp_path: Path) -> None:
    doc = report(tmp_path, PASTE)
    (finding,) = doc["findings"]
    assert (finding["code"], finding["labels"]["class"]) == ("nccl.error", "cuda_error")
    assert "hipIpcGetMemHandle" in finding["title"]
    assert {v["version"] for v in doc["nccl"]["versions"]} == {"2.18.3"}


def test_rccl_s_advice_alone_finds_nothing(tmp_path: Path) -> None:
    doc = report(tmp_path, HEALTHY)
    assert not [f for f in doc["findings"] if f["severity"] in ("critical", "warning")]
    assert [v["version"] for v in doc["nccl"]["versions"]] == ["2.27.7"]
