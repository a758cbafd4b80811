"""What to change for the CUDA error a ``Cuda failure '<text>'`` WARN names.

NCCL prints the CUDA runtime's or driver's error string (``cudaGetErrorString``, ``cuGetErrorString``)
between quotes, after the error's number since 2.12: ``Cuda failure 1 'invalid argument'``. The class stays
``cuda_error`` (``cuda_oom`` for memory); the text says which part of the machine to look at, and the file that
printed it can narrow it further (NVLink SHARP's ``transport/nvls.cc``).
"""

from __future__ import annotations

import re

#: (the error's text, or a source file and the text, as a regex; the advice it adds), the first that matches
_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), advice)
    for pattern, advice in (
        (
            r"nvls\.c\S*\s.*Cuda failure|NVLink SHARP \(NVLS\) Multicast",  # any: 'invalid argument', 'operation not
            # supported', 401 'the operation cannot be performed in the present state' (nccl#1672, nccl#1788); 2.27+
            # says it in its own words, 'Failed to bind NVLink SHARP (NVLS) Multicast memory …', behind Last error
            "NVLink SHARP (NVLS) could not set up its multicast memory here (no multicast on this fabric, a driver or "
            "fabric manager too old or not running, a VM or container without it; across nodes, no IMEX): "
            "NCCL_NVLS_ENABLE=0 lets the job run without it; nvidia-smi -q shows the fabric's state.",
        ),
        (
            r"'system not yet initialized'",
            "CUDA's 'system not yet initialized' on an NVSwitch machine means the NVIDIA fabric manager is not "
            "running, or not at the driver's exact version: start nvidia-fabricmanager (systemctl status "
            "nvidia-fabricmanager) with the same version as the driver.",
        ),
        (
            r"'CUDA driver version is insufficient for CUDA runtime version'|'system has unsupported display driver",
            "the driver is older than the CUDA runtime the job (its container) was built with: upgrade the driver, "
            "or run an image built for this driver's CUDA version.",
        ),
        (
            r"'peer access is not supported between these two devices'|'peer mapping resources exhausted'",
            "CUDA peer-to-peer access between these GPUs is not possible (PCIe ACS or an IOMMU in the way, a VM, or "
            "too many peers): set iommu=pt / disable ACS, or stop NCCL from using it (NCCL_P2P_DISABLE=1, or a "
            "lower NCCL_P2P_LEVEL).",
        ),
        (
            r"'an illegal memory access was encountered'|'unspecified launch failure'|'misaligned address'",
            "a kernel on this GPU faulted (the job's own as much as NCCL's): rerun with CUDA_LAUNCH_BLOCKING=1 to stop "
            "at it, and look for Xid errors in dmesg (13, 31, 43: a kernel's bad access).",
        ),
        (
            r"'uncorrectable (?:ECC|NVLink) error",
            "the GPU reported an uncorrectable ECC or NVLink error, a hardware fault: drain this node, check "
            "nvidia-smi -q -d ECC and dmesg (Xid 48, 63, 64, 74, 79), and reset or replace the GPU.",
        ),
        (
            r"'(?:all )?CUDA-capable devices? (?:is|are) busy or unavailable'",
            "the GPU is taken: another process holds it in the EXCLUSIVE_PROCESS compute mode (nvidia-smi -q -d "
            "COMPUTE), or two ranks were given the same GPU; check CUDA_VISIBLE_DEVICES and the local rank mapping.",
        ),
        (
            r"'no CUDA-capable device is detected'|'invalid device ordinal'",
            "this process sees no GPU, or not the one it was told to use: check CUDA_VISIBLE_DEVICES, the container's "
            "GPU access (--gpus, the device plugin) and that local ranks map to GPUs that exist.",
        ),
        (
            r"'CUDA driver is a stub library'",
            "the process loaded the CUDA toolkit's stub libcuda.so instead of the driver's: take the toolkit's "
            "stubs directory (…/cuda/lib64/stubs) out of LD_LIBRARY_PATH, and in a container run with the NVIDIA "
            "runtime (--gpus) so that the driver's library is mounted.",
        ),
        (
            r"'forward compatibility was attempted on non supported HW'|'the provided PTX was compiled with an "
            r"unsupported toolchain'",
            "the CUDA runtime is newer than the driver and forward compatibility cannot bridge it here (the cuda-compat "
            "package works on data-center GPUs only): upgrade the driver, or run an image built for its CUDA version.",
        ),
        (
            r"'initialization error'",
            "CUDA could not initialise in this process: a process forked after CUDA was initialised (use the 'spawn' "
            "start method), or a driver problem (nvidia-smi, dmesg).",
        ),
    )
)


def cuda_advice(msg: str, src: str | None = None) -> str | None:
    """The advice for the CUDA error ``msg`` names (``src``: the ``FILE:LINE`` that printed it), if it names one."""
    text = f"{src or ''} {msg}"
    return next((advice for rx, advice in _ADVICE if rx.search(text)), None)
