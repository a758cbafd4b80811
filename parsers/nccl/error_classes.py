"""Classifying NCCL WARN messages and error chains (``docs/formats/nccl-log.md`` §2, §4).

A WARN is classified by the NCCL or aws-ofi-nccl call site whose format it matches
(:mod:`parsers.nccl.catalogue`, every release 2.3-2.30), then by what its variable part says
(the errno of a /dev/shm failure, the text of a CUDA failure, an IB completion's status). A
message no catalogued format matches (a cut paste, a plugin the catalogue lacks) falls back to
:data:`RULES`, which map message patterns to a class; the rules also hold the remediation a
senior SRE gives for each class. Benign warnings (a probe NCCL goes on from) have no class. A
chain (``file:line -> N`` lines) without a WARN is classified by its result code.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Annotated

from parsers.nccl import job_failures
from parsers.nccl.catalogue import lookup
from parsers.nccl.cuda_errors import cuda_advice
from parsers.nccl.hca_events import PORT_DOWN, async_event, hca_news
from parsers.nccl.net_plugins import benign_plugin_warn
from parsers.shapes import Schema

#: the root-cause classes, in the order the report's schema lists them
CLASSES = tuple(
    """ib_completion_error ibv_setup_failure socket_error cuda_oom cuda_error shm_exhausted topology_error
    collective_mismatch remote_process_exited system_error internal_error invalid_usage shm_permission shm_missing
    config_error plugin_probe unique_id_exchange watchdog_stuck wrong_results gpu_fault nccl_crash""".split()
    + list(job_failures.CLASSES)
)

#: a root-cause class, as the report writes it (its JSON Schema lists them)
ErrorClass = Annotated[str, Schema({"enum": list(CLASSES)})]

#: ncclResult_t values (§2).
RESULT_CODES = {
    1: "unhandled CUDA error",
    2: "system error",
    3: "internal error",
    4: "invalid argument",
    5: "invalid usage",
    6: "remote error (remote process exited or network error)",
    7: "in progress",
}


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str]
    cls: str | None  # None: benign, recorded but not an error
    remediation: str


def _r(pattern: str, cls: str | None, remediation: str) -> Rule:
    return Rule(re.compile(pattern, re.IGNORECASE), cls, remediation)


_IB_STATUS = {
    4: "status 4 (local protection error) under GPUDirect RDMA is usually PCIe ACS/IOMMU blocking peer-to-peer: "
    "disable ACS on the PCIe switches (or set iommu=pt), and confirm with NCCL_NET_GDR_LEVEL=0 (no GDR).",
    5: "status 5 (work request flushed) is secondary: the queue pair was already in error; find the first "
    "completion error or the peer that failed before it.",
    12: "status 12 (transport retry counter exceeded) means packets to the peer were lost: check the link and "
    "switch port of both hosts (ibstat, ethtool -S), the peer process, and on RoCE the GID index "
    "(NCCL_IB_GID_INDEX, usually 3 for RoCEv2), PFC/ECN and the MTU on every hop.",
}

OFI_REMEDIATION = (
    "The AWS OFI (EFA) plugin could not use libfabric: expose the EFA devices to the container "
    "(/dev/infiniband), install a matching libfabric/aws-ofi-nccl, and check FI_PROVIDER=efa."
)

OFI_TRANSFER_REMEDIATION = (
    "A libfabric (EFA) transfer failed after the plugin was up: usually the peer process died or the network path "
    "to it broke. Read the peer's log first (did it exit, crash or time out?); then the EFA devices and links of both "
    "hosts (fi_info -p efa, the EFA counters), and on AWS that the security groups allow all traffic between the "
    "instances."
)

RULES: tuple[Rule, ...] = (
    _r(
        # RCCL's advice on the machine's setup, printed at init on every AMD host that lacks it; RCCL goes on
        r'^Missing "(?:amd_iommu=on|iommu=pt|HSA_FORCE_FINE_GRAIN_PCIE=1)" from|^LL cutoff points not detected',
        None,
        "RCCL's advice on this AMD machine's setup, not an error: RCCL goes on. If the job hangs with its GPUs busy, "
        "follow it (iommu=pt on the kernel command line, HSA_FORCE_FINE_GRAIN_PCIE=1 in the environment).",
    ),
    _r(
        r"Failed to open libibverbs",
        None,
        "No InfiniBand userspace (rdma-core/libibverbs) in this environment: NCCL uses sockets. Harmless on a "
        "machine without IB; on an IB/RoCE cluster install rdma-core in the container and expose /dev/infiniband.",
    ),
    _r(
        r"Got completion|completion (?:with|from peer)",
        "ib_completion_error",
        "An InfiniBand/RoCE work completion failed.",
    ),
    _r(
        r"Got async event",
        "ib_completion_error",
        "The HCA reported an asynchronous event (e.g. the RoCE GID table changed under the running job: an IP or "
        "netdev reconfiguration). Queue pairs using the old GID fail; keep the network configuration stable "
        "during jobs and pin NCCL_IB_GID_INDEX.",
    ),
    _r(
        r"ibv_\w+|ibv(?:wrap)?\b.*failed|NET/IB.*(?:create|modify)",
        "ibv_setup_failure",
        "Creating or modifying an IB verbs object failed: in containers raise the locked-memory limit "
        "(ulimit -l unlimited, --ulimit memlock=-1) and expose /dev/infiniband; on RoCE check the GID index "
        "(NCCL_IB_GID_INDEX) and that the port is up; 'Invalid argument' with mixed IB/RoCE ports: restrict "
        "NCCL_IB_HCA to one link type.",
    ),
    _r(
        r"out of memory|Failed to CUDA calloc|cudaErrorMemoryAllocation",
        "cuda_oom",
        "The GPU ran out of memory while NCCL allocated buffers or launched work: leave headroom (smaller batch, "
        "PYTORCH_CUDA_ALLOC_CONF, fewer channels via NCCL_MAX_NCHANNELS / smaller NCCL_BUFFSIZE).",
    ),
    _r(
        r"/dev/shm|shared memory segment|failed to extend",
        "shm_exhausted",
        "/dev/shm is too small for NCCL's shared-memory transport: run the container with --shm-size=8g or "
        "--ipc=host (Kubernetes: mount an emptyDir with medium: Memory at /dev/shm), or set NCCL_SHM_DISABLE=1.",
    ),
    _r(
        r"does not loop back|Could not find a path|topology|XML|graph",
        "topology_error",
        "Ranks computed different topologies: make NCCL versions, NCCL_* environment and NCCL_TOPO_FILE identical "
        "on every node, and check that hosts do not share a hostname.",
    ),
    _r(
        r"nvml\w*\(\) failed|nvmlDevice",
        "topology_error",
        "NVML cannot see a peer GPU (per-rank GPU isolation through cgroups or CUDA_VISIBLE_DEVICES): NCCL's "
        "topology detection degrades. Let every local rank see all GPUs of the node and pick its own with "
        "torch.cuda.set_device / LOCAL_RANK.",
    ),
    _r(
        r"collective mismatch|Message truncated|message truncated|wrong type|Mismatched NCCL version|"
        r"version mismatch|neither AF_INET",
        "collective_mismatch",
        "Ranks disagree: they issued different collectives or sizes, or run different NCCL versions or net "
        "plugins (a garbage peer address 'family N is neither AF_INET' is the plugin/version case). Pin one "
        "NCCL build on every node and check that all ranks call the same collectives in the same order.",
    ),
    _r(
        r"Cuda failure|CUDA (?:failure|error)|libcuda|cuda\w*\(\) failed|Failed to find CUDA",
        "cuda_error",
        "A CUDA call failed inside NCCL: check the driver/CUDA runtime pairing (nvidia-smi vs the toolkit), "
        "that the GPU is healthy (dmesg Xid errors) and that libcuda.so is visible (NCCL_CUDA_PATH).",
    ),
    _r(
        r"remote process exited|ncclRemoteError",
        "remote_process_exited",
        "A peer process died or its network failed first: its own log holds the root cause; look for its first "
        "WARN, an OOM kill or a segfault.",
    ),
    _r(
        r"Connection closed by remote peer|closed by peer|Connection reset|Connection refused|Connection timed "
        r"out|Broken pipe|socket\w*:|Call to (?:recv|send|connect)|Connect to .* failed|"
        r"^(?:Net : )?Connect to \S*$",  # the same WARN cut before its address ended (a paste, a killed job)
        "socket_error",
        "A TCP socket between ranks failed: 'closed by remote peer' and 'reset' mean the peer went away (look at "
        "its log first); 'refused' or 'timed out' mean a wrong address, a stale NCCL unique id, a firewall or a "
        "wrong interface (NCCL_SOCKET_IFNAME).",
    ),
    _r(
        r"\[Service thread\]|\[Proxy Service|proxy",
        "system_error",
        "An NCCL proxy thread failed to set up or progress a connection: this is the consequence of an earlier "
        "failure on the same rank (read its first WARN: CUDA, network or /dev/shm).",
    ),
    _r(
        r"already checked in",
        "system_error",
        "Two processes claimed the same rank at the bootstrap root: the launcher started more processes than "
        "the world size, or RANK/LOCAL_RANK are wrong (e.g. Lightning vs SLURM ntasks settings).",
    ),
    _r(  # aws-ofi-nccl's data path: a transfer, its completion or the buffers it posts (any release's wording)
        r"NET/OFI .*(?:complet\w* with error|completion failure|fi_cq_readerr|error entry without a context"
        r"|Error posting|Failed to (?:re)?post|Unable to post request|post_rx_buff)",
        "ib_completion_error",
        OFI_TRANSFER_REMEDIATION,
    ),
    _r(
        r"NET/OFI|fi_\w+|libfabric|Couldn't open AV|provider",
        "system_error",
        OFI_REMEDIATION,
    ),
    _r(
        r"SHARP",
        "system_error",
        "SHARP could not create its aggregation tree (busy tree or SHARP resource quota): retry, or disable "
        "CollNet (NCCL_COLLNET_ENABLE=0).",
    ),
    _r(
        r"^",  # every message, the empty one too (a WARN cut after its marker)
        "system_error",
        "NCCL reported a failure: read the error chain below the warning bottom-up to find "
        "the API call, and top-down for the failing primitive.",
    ),
)

_IB_CODE = re.compile(r"(?:with error |status=)(?P<code>\d+)")


#: A /dev/shm failure is told by its errno, not by the call that failed.
SHM_ERRNO = (
    ("No space left", "shm_exhausted"),
    ("Permission denied", "shm_permission"),
    ("Read-only file system", "shm_permission"),
    ("No such file", "shm_missing"),
)


def shm_class(text: str) -> str | None:
    """The /dev/shm class an errno text in ``text`` names, if any."""
    return next((cls for errno, cls in SHM_ERRNO if errno in text), None)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a WARN message is."""

    cls: str  # the class it would have as an error ("plugin_probe" for a probe NCCL goes on from)
    benign: bool  # NCCL carries on normally after it
    consequence: bool  # it reports an earlier error (a chain, a failed async job or proxy operation)
    remediation: str


PROBE_REMEDIATION = (
    "A probe NCCL makes and goes on from (a network plugin, a library or a device that is not here): a problem "
    "only if that transport was meant to be used; the process's 'Using network' line shows what NCCL chose."
)
_OOM = re.compile(r"out of memory|cudaErrorMemoryAllocation", re.IGNORECASE)
#: the proxy's service thread reading a connection that never said which local rank it is (localRank -1): not
#: one of NCCL's own, so NCCL closes it and goes on (2.12+, ``proxy.cc``)
_STRANGER = re.compile(r"\[Service thread\] Unknown command -?\d+ from localRank -1\s*$")
STRANGER_NOTE = (
    "something that is not one of NCCL's ranks (a port scanner, a health check, a stray client) connected to this "
    "process's proxy port and sent bytes NCCL does not know: NCCL closed that connection and went on"
)
_SHM = re.compile(r"/dev/shm|shared memory|shm_open|posix_fallocate|shmutils|\bshm\b", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)  # a log repeats its WARNs (a retry loop, every rank): each text judged once
def verdict(msg: str, src: str | None = None) -> Verdict:
    """The verdict on a WARN message: the class of the call site it matches, adjusted by its
    variable part (an errno, a CUDA error text, an IB status), else of the first rule that matches.
    ``src`` is the record header's ``FILE:LINE``: it tells apart texts that several files print."""
    plugin = benign_plugin_warn(msg, src)
    if plugin is not None:
        return Verdict("plugin_probe", True, False, f"{plugin.project} prints this on its normal path: not an error")
    if (news := hca_news(msg)) is not None:
        return Verdict("ib_completion_error", True, False, news)
    if _STRANGER.search(msg):
        return Verdict("internal_error", True, False, STRANGER_NOTE)
    nccl_msg, file = _as_nccl(msg, src.rsplit(":", 1)[0] if src else None)
    rocm = nccl_msg != msg or (src is not None and ("rccl" in src or "hipify" in src))  # RCCL's record
    msg = nccl_msg
    rule = next(r for r in RULES if r.pattern.search(msg))  # the last rule matches every message
    fmt = lookup(msg, file)
    base = fmt.cls if fmt is not None and fmt.cls else rule.cls or "plugin_probe"
    benign = fmt.benign if fmt is not None and fmt.cls else rule.cls is None
    benign = benign and async_event(msg) != PORT_DOWN  # listed as non-fatal by 2.23+: what followed decides
    consequence = fmt is not None and fmt.consequence
    cls = base
    if cls.startswith("shm_") or (cls in ("system_error", "internal_error") and _SHM.search(msg)):
        cls = shm_class(msg) or cls  # /dev/shm failures by their errno (catalogue rule 5)
    if cls == "cuda_error" and _OOM.search(msg):
        cls = "cuda_oom"
    if cls != base or rule is RULES[-1]:  # the advice of the class
        fix = PROBE_REMEDIATION if cls == "plugin_probe" and benign else remediation(cls)
    else:  # the advice of the rule that knows this text, even where the class is the call site's
        fix = rule.remediation
    if cls == "cuda_error" and (advice := cuda_advice(msg, src)) is not None:
        fix = f"{fix} Here: {advice}"
    if rocm and cls in ("cuda_error", "cuda_oom"):
        fix = f"{fix} {ROCM_NOTE}"
    if cls == "ib_completion_error":
        m = _IB_CODE.search(msg)
        if m and int(m["code"]) in _IB_STATUS:
            fix = f"{fix} {_IB_STATUS[int(m['code'])]}"
    return Verdict(cls, benign, consequence, fix)


#: what RCCL's sources (NCCL's, converted to HIP) print where NCCL prints CUDA's names: ``HIP failure 'invalid
#: argument'`` for ``Cuda failure …``, ``hipIpcGetMemHandle failed`` for ``cudaIpcGetMemHandle failed``
_HIP_WORDS = re.compile(r"\bHIP failure\b|\bhip(?=[A-Z]\w*)")
#: the build tree before a source file's path inside NCCL's or RCCL's ``src/`` (RCCL prints the whole path:
#: ``/app/rccl/build/release/hipify/src/init.cc``, ``…/rccl/build/src/init.cpp``)
_BUILD_TREE = re.compile(r"^.*/src/")


ROCM_NOTE = (
    "On AMD GPUs (RCCL, whose record this is), the same with ROCm's tools: rocm-smi, amdgpu errors in dmesg, "
    "HIP_VISIBLE_DEVICES."
)


def _as_nccl(msg: str, file: str | None) -> tuple[str, str | None]:
    """``msg`` and its source ``file`` as NCCL's catalogue writes them: an RCCL record's HIP names and its
    source's build tree and ``.cpp`` suffix read as NCCL's, so that its WARNs take the class of NCCL's."""
    if "hip" in msg or "HIP" in msg:
        msg = _HIP_WORDS.sub(lambda m: "Cuda failure" if m[0] == "HIP failure" else "cuda", msg)
    if file is not None and "/src/" in file:
        file = _BUILD_TREE.sub("", file)
        file = file[:-4] + ".cc" if file.endswith(".cpp") else file
    return msg, file


def classify_warn(msg: str, src: str | None = None) -> tuple[str | None, str]:
    """The class (None: benign) and remediation of a WARN message (:func:`verdict`)."""
    v = verdict(msg, src)
    return (None if v.benign else v.cls), v.remediation


#: The subsystem a chain's first frame is in, when it names the failing primitive (catalogue §5).
_FRAME_CLASS = (
    (re.compile(r"(?:^|/)(?:socket\.(?:cc|h)|net_socket\.cc|linux_socket|ipcsocket\.cc)$"), "socket_error"),
    (re.compile(r"(?:^|/)(?:ibvwrap\.cc|ibvsymbols\.cc|ibvwrap\.h|net_ib[\w/]*\.cc)$"), "ibv_setup_failure"),
    (re.compile(r"(?:^|/)(?:shmutils\.cc|shm\.h)$"), "shm_exhausted"),
)


@functools.lru_cache(maxsize=1024)  # a chain without a WARN opens an error on each rank of a job that failed alike
def classify_chain(code: int, src: str | None = None) -> tuple[str, str]:
    """Class and remediation of an error chain seen without its WARN: a remote error by its code,
    a failing primitive by the file of its first frame ``src`` (``misc/socket.cc:567``), else the
    class of its result code."""
    if code == 6:
        return "remote_process_exited", remediation("remote_process_exited")
    file = src.rsplit(":", 1)[0] if src else ""
    cls = next((c for rx, c in _FRAME_CLASS if code == 2 and rx.search(file)), None)
    if cls is not None:
        return cls, remediation(cls)
    if code == 1:
        return "cuda_error", remediation("cuda_error")
    cls = CODE_CLASS.get(code, "system_error")
    return cls, (
        f"NCCL returned {RESULT_CODES.get(code, f'code {code}')} without a WARN on this "
        "thread (suppressed, or printed by another rank): look for the first WARN of the job. " + remediation(cls)
    )


#: Classes that only a result code or a framework's text names (no WARN rule of their own).
_CODE_REMEDIATION = {
    "plugin_probe": "NCCL found no network it can use (neither a net plugin nor its own IB or socket transport): "
    "check NCCL_NET and NCCL_NET_PLUGIN, that the interfaces NCCL_SOCKET_IFNAME names exist, and that the "
    "container sees the network devices (/dev/infiniband).",
    "system_error": "A system call or a library NCCL relies on failed (sockets, files, NVML, the network plugin): "
    "the message names the call and its errno; up to NCCL 2.12 a peer that died also shows as a system error, "
    "so look at the first WARN of the job's other processes too.",
    "internal_error": "An internal consistency check of NCCL failed (ncclInternalError): usually the fallout of an "
    "earlier error on this or another rank, so look for the job's first WARN; otherwise a NCCL bug, to report with "
    "the full NCCL_DEBUG=INFO log.",
    "shm_permission": "A /dev/shm segment could not be created or opened for lack of permission (or /dev/shm is "
    "read-only): run the ranks of a host as one user with a writable /dev/shm (docker --ipc=host), or set "
    "NCCL_SHM_DISABLE=1.",
    "shm_missing": "A rank could not open another rank's /dev/shm segment: the ranks of one host do not share it "
    "(different containers or IPC namespaces); share the IPC namespace (--ipc=host) or set NCCL_SHM_DISABLE=1.",
    "config_error": "An NCCL setting or the environment does not fit this machine: NCCL_SOCKET_IFNAME, "
    "NCCL_IB_HCA or NCCL_OOB_NET_IFNAME naming no interface or device that exists here, a malformed NCCL_COMM_ID, "
    "NCCL_ALGO / NCCL_PROTO leaving nothing usable, two ranks given one GPU, or one unique id reused by two jobs; "
    "fix the setting the message names.",
    "unique_id_exchange": "A rank waited for its communicator's unique id, which the group's first rank "
    "publishes in the c10d store (MASTER_ADDR:MASTER_PORT), and gave up before NCCL started: that rank did not "
    "reach the communicator's setup in time. Read its own log first: it failed earlier, or it is still busy before "
    "its first collective (data loading, preprocessing or a prompt done on one rank only: move it before "
    "init_process_group, or raise the process group's timeout); else the store is not reachable from this rank "
    "(MASTER_ADDR, MASTER_PORT, a firewall).",
    "watchdog_stuck": "PyTorch's watchdog thread made no progress for TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC (480 or 600 s by "
    "default) and PyTorch ended the process: the thread was stuck inside an NCCL or CUDA call (a hang in NCCL, the "
    "driver or the GPU: look for Xid errors in dmesg, and dump the stacks with py-spy dump --native while it hangs), "
    "or another thread held the GIL inside a CUDA call. A collective timeout or an NCCL error before it is the cause.",
    "wrong_results": "nccl-tests checked the collectives' results and found wrong values: data was corrupted on its "
    "way (a faulty GPU, NVLink or PCIe link, NIC or switch, or a bug in NCCL or a network plugin). Run the test on "
    "each node alone, then on pairs of nodes, to find the part that corrupts; look for Xid and ECC errors (dmesg, "
    "nvidia-smi -q -d ECC) and link errors (ibstat, ethtool -S) there. Do not train on these nodes until it passes.",
    "gpu_fault": "A CUDA error on this process's GPU, raised by the process or met by PyTorch's NCCL watchdog while "
    "it polled its collectives: the fault is in whatever ran on that GPU (a kernel of the job's own as much as NCCL's). Rerun "
    "with CUDA_LAUNCH_BLOCKING=1 to stop at the kernel that faulted; look for Xid errors in dmesg (13, 31, 43: a "
    "kernel's bad access; 48, 63, 64, 74, 79, 94, 95: ECC, NVLink or a GPU lost) and drain the node if they recur.",
    "nccl_crash": "The process crashed inside NCCL's code (its library, or a plugin's NCCL loaded): a bug of that "
    "build, or memory NCCL was given that was freed or overwritten. Upgrade NCCL (and the plugin whose library is in "
    "the backtrace); known crashers: RAS in 2.26-2.29 (NCCL_RAS_ENABLE=0) and profiler plugins (unset "
    "NCCL_PROFILER_PLUGIN). UCX's frames at the top are its signal handler, not the cause. Report it to NCCL with the "
    "backtrace and an NCCL_DEBUG=INFO log.",
    "invalid_usage": "The program called NCCL wrongly (ncclInvalidUsage / ncclInvalidArgument): communicators, "
    "devices or counts that do not match across ranks, too many outstanding operations, or a malformed NCCL_* "
    "setting; NCCL_DEBUG=WARN shows which check failed.",
    **job_failures.REMEDIATION,
}

#: ncclResult_t codes and the class each stands for when nothing more specific is known.
CODE_CLASS = {
    1: "cuda_error",
    2: "system_error",
    3: "internal_error",
    4: "invalid_usage",
    5: "invalid_usage",
    6: "remote_process_exited",
}


def remediation(cls: str) -> str:
    """The general remediation for an error class."""
    return _CODE_REMEDIATION.get(cls) or next((r.remediation for r in RULES if r.cls == cls), "")
