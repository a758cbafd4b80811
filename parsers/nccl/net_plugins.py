"""The networks NCCL can name in ``Using network X`` and ``via NET/X``: its own and those of third-party
network plugins, with their family and the WARNs they print on their normal path.

A plugin's name says what the wire is, which decides what a finding may claim: Google's FastSocket
is TCP by design (not NCCL falling back to sockets, and no GPUDirect RDMA to miss), GPUDirect-TCPX
and -TCPXO (FasTrak) move data between the NIC and GPU memory over TCP (GPUDirect without RDMA),
gIB, HPC-X's ``IBext`` and aws-ofi-nccl's Libfabric (EFA) are RDMA. Names and texts from each
plugin's source (google/nccl-fastsocket ``net_fastsocket.cc``; GoogleCloudPlatform's TCPX/TCPXO
plugins; Mellanox nccl-rdma-sharp-plugins; aws/aws-ofi-nccl) and the logs users post of them.

A plugin's WARN names its source as the plugin tells NCCL's logger: aws-ofi-nccl's C++ releases give a whole
function signature, which :func:`plugin_source` reads (``docs/formats/nccl-log.md`` §1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Family = Literal["IB", "Socket", "Libfabric", "TCP", "TCPX"]


@dataclass(frozen=True, slots=True)
class Network:
    """One network as NCCL names it."""

    name: str  # what the table calls it
    pattern: re.Pattern[str]  # matches the name NCCL prints (``IBext_v8``, ``AWS Libfabric``)
    family: Family
    rdma: bool  # its transfers can use GPUDirect RDMA (``/GDRDMA`` on its connections)
    internal_socket: bool  # NCCL's own socket transport: the fallback when no RDMA network starts
    sources: tuple[str, ...] = ()  # the plugin's source files, as its WARNs name them
    benign: tuple[re.Pattern[str], ...] = ()  # WARNs of those files it prints while working normally
    project: str = ""


NETWORKS: tuple[Network, ...] = (
    Network("IB", re.compile(r"IB"), "IB", rdma=True, internal_socket=False, project="NCCL (InfiniBand/RoCE verbs)"),
    Network(
        "IBext",
        re.compile(r"IBext(?:_v\d+)?"),
        "IB",
        rdma=True,
        internal_socket=False,
        project="Mellanox/NVIDIA nccl-rdma-sharp-plugins (HPC-X)",
    ),
    Network("gIB", re.compile(r"gIB(?:_v\d+)?"), "IB", rdma=True, internal_socket=False, project="Google gIB (RoCE)"),
    Network(
        "Libfabric",
        re.compile(r"(?:AWS )?Libfabric|OFI"),
        "Libfabric",
        rdma=True,
        internal_socket=False,
        project="aws-ofi-nccl (EFA and other Libfabric providers)",
    ),
    Network("Socket", re.compile(r"Socket"), "Socket", rdma=False, internal_socket=True, project="NCCL (TCP)"),
    Network(
        "FastSocket",
        re.compile(r"FastSocket"),
        "TCP",
        rdma=False,
        internal_socket=False,
        sources=("net_fastsocket.cc",),
        # it waits for a free CPU queue and retries a connect/accept before it succeeds: normal on a busy host
        benign=(
            re.compile(r"Cannot get incoming CPU"),
            re.compile(r"Maximum retry reached for (?:accept|connect)"),
        ),
        project="google/nccl-fastsocket (TCP)",
    ),
    Network(
        "GPUDirectTCPX",
        re.compile(r"GPUDirectTCPX(?:_v\d+)?"),
        "TCPX",
        rdma=False,
        internal_socket=False,
        project="Google GPUDirect-TCPX",
    ),
    Network(
        "FasTrak",
        re.compile(r"FasTrak|GPUDirectTCPXO(?:_v\d+)?"),
        "TCPX",
        rdma=False,
        internal_socket=False,
        project="Google GPUDirect-TCPXO (FasTrak)",
    ),
)


def network(name: str | None) -> Network | None:
    """The network NCCL printed as ``name`` (None: unknown or not given)."""
    if not name:
        return None
    text = name.strip()
    return next((n for n in NETWORKS if n.pattern.fullmatch(text)), None)


def is_rdma(name: object) -> bool:
    """Whether NCCL's network ``name`` is an RDMA one (IB, RoCE, EFA and their plugins; not sockets, not
    TCP plugins such as FastSocket, not a network the table does not know). A missing name (None, NaN) is not."""
    net = network(name) if isinstance(name, str) else None
    return net is not None and net.rdma


def is_internal_socket(name: object) -> bool:
    """Whether ``name`` is NCCL's own socket transport, the fallback (a TCP plugin is a choice, not a fallback)."""
    net = network(name) if isinstance(name, str) else None
    return net is not None and net.internal_socket


def benign_plugin_warn(message: str, src: str | None) -> Network | None:
    """The plugin whose normal path prints this WARN (from its source file), if one does."""
    if not src:
        return None
    file = src.rsplit(":", 1)[0].rsplit("/", 1)[-1]
    for n in NETWORKS:
        if file in n.sources and any(p.search(message) for p in n.benign):
            return n
    return None


#: the end of a C++ function's signature as a network plugin's WARN or TRACE names its source (aws-ofi-nccl logs
#: ``__PRETTY_FUNCTION__``: ``int cm_req_handle_error_entry(nccl_net_ofi_context_t*, fid_cq*, uint16_t):46``)
SIGNATURE_END = re.compile(r"\)(?: const| noexcept| volatile| &&?)*(?: \[with [^\]]*\])?:(?P<line>\d+)$")
#: what stands between ``[DEV]`` (and a TRACE's milliseconds) and the function's name: its return type, its
#: qualifiers (``virtual int``, ``static ncclResult_t``, ``(anonymous namespace)::``)
SIGNATURE_START = re.compile(r"(?P<dev>\[\d+\](?: \d+\.\d+)?)(?: [^\s\[\]]+)* ?$")


def plugin_source(head: str) -> tuple[str, str] | None:
    """A header ending in a C++ function's signature and its line (a network plugin's source): the header up to its
    ``[DEV]`` (and a TRACE's milliseconds), and the source as ``NAME:LINE`` (the name as a C build of the plugin
    prints it, its scope kept)."""
    end = SIGNATURE_END.search(head)
    if end is None:
        return None
    depth, i = 0, end.start()
    while i >= 0:  # the parenthesis that opens the arguments (which may hold parentheses of their own)
        depth += {")": 1, "(": -1}.get(head[i], 0)
        if depth == 0:
            break
        i -= 1
    j = i
    while j > 0 and (head[j - 1].isalnum() or head[j - 1] in "_:~<>"):
        j -= 1
    name = head[j:i].lstrip(":")
    start = SIGNATURE_START.search(head, 0, i - len(name))
    if not name or not (name[0].isalpha() or name[0] == "_") or start is None:
        return None
    return head[: start.end("dev")], f"{name}:{end['line']}"
