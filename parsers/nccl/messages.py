"""What an NCCL INFO message says (``docs/formats/nccl-log.md`` §3, §6).

:func:`classify` turns one message into a :data:`Fact` (a tagged union of frozen dataclasses, one
per kind of message, matched by class), or None for messages that carry nothing the analysis uses
(they are still counted as NCCL records). Wording that only some releases print:
:mod:`parsers.nccl.wording`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache

_INIT = re.compile(
    r"(?:\[Rank \d+\] )?(?:(?P<api>ncclComm\w+) )?comm (?P<comm>0x[0-9a-f]+|\(nil\)) rank (?P<rank>\d+) "
    r"nranks (?P<nranks>\d+)(?: cudaDev (?P<cuda>\d+))?(?: nvmlDev (?P<nvml>\d+))?(?: busId (?P<bus>[0-9a-f]+))?"
    r"(?: parent \S+(?: (?:splitCount|childCount) \d+)? color -?\d+ key \d+)?(?: commId 0x(?P<commid>[0-9a-f]+))?"
    r" ?(?:- (?:Init )?(?P<phase>START|COMPLETE))?\s*$"
)
_CONN = re.compile(
    r"^(?:Ring|Channel) \d+(?:/\d+)? : \d+(?:\[[0-9a-f]+\])? -> \d+(?:\[[0-9a-f]+\])?"
    r" (?:\[(?:send|receive)\] )?via (?P<via>.+?)\s*$"
)
_COLLNET = re.compile(r"^(?:Coll|CollNet) \d+(?:/\d+)? : \d+ \[(?:send|receive)\] via (?P<via>COLLNET/\S+)")
_COLL = re.compile(
    r"^(?P<op>\w+): opCount (?P<opc>[0-9a-f]+) sendbuff \S+ recvbuff \S+ count (?P<count>\d+) datatype \d+ op \d+ "
    r"root -?\d+ comm (?P<comm>0x[0-9a-f]+|\(nil\))(?: \[nranks=(?P<nranks>\d+)\])?"
)
_CHAIN = re.compile(
    r"^(?P<file>\S+):(?P<line>\d+)(?: \((?P<func>[^)]*)\))? -> (?P<code>\d+)(?: \((?P<errno>[^)]*)\))?"
    r"(?: \[(?P<thread>[^\]]+)\])?"
)
_ENV = re.compile(r"^(?P<var>NCCL_[A-Z0-9_]+) set (?:by environment )?to (?P<val>.*?)\.?\s*$")
_BOOTSTRAP = re.compile(
    r"^(?:Bootstrap ?: Using|NET : Using interface) (?:\[\d+\])?(?P<if>[^:\s]+):(?P<addr>\S+?)(?:<\d+>)?(?:\s|$)"
)
_IB_DEV = re.compile(r"\[\d+\](?P<name>[\w.-]+):(?P<port>\d+)/(?P<link>IB|RoCE)(?P<sharp>/SHARP)?")
_IB_DEV_23 = re.compile(r"^NET/IB: \[\d+\] (?P<name>[\w.-]+):(?P<port>\d+)/(?P<link>IB|RoCE)")
_SOCK_IF = re.compile(r"\[\d+\](?P<if>[^:\s]+):(?P<addr>\S+?)<\d+>")
_NETWORK = re.compile(r"^Using (?:internal |external )?[Nn]etwork (?P<net>.+?)\s*$")
#: NCCL's version line, and RCCL's (the ROCm build of NCCL, printing NCCL's records): ``+hip5.5`` for ``+cuda11.2``
_VERSION = re.compile(
    r"[NR]CCL version (?P<ver>\d+\.\d+\.\d+)(?P<sfx>[^+\s]*)\+(?:cuda(?P<cuda>\S+)|(?P<hip>hip[\w.]*))"
)
#: RCCL 2.20+ as an INFO record, ``RCCL version : 2.26.6-HEAD:f224e2c`` (HIP's version on a line of its own after it)
_RCCL_INFO = re.compile(r"RCCL version\s*:\s*(?P<ver>\d+\.\d+\.\d+)")
_GDR = re.compile(r"GPU Direct RDMA (?P<state>Enabled|Disabled) for (?:GPU|HCA)")
_NVLS = re.compile(r"^NVLS multicast support is (?P<no>not )?available")
#: a communicator being torn down: ``- Abort COMPLETE`` (2.12+), ``- Abort START`` (2.28+), ``- Destroy COMPLETE``,
#: ``- Revoke START`` (2.28.7+), ``CommRevokeAsync START``
_RETRIED = re.compile(r"^(?P<func>\w+): .*, retrying \(\d+/\d+\)")
_TEARDOWN = re.compile(r" - (?:Abort|Destroy|Revoke) (?:START|COMPLETE)|^CommRevokeAsync START")


@dataclass(frozen=True, slots=True)
class Conn:
    """A connection line (``Channel 00/0 : 0[0] -> 1[1] via NET/IB/0/GDRDMA``): its transport."""

    kind: str  # NET, P2P, SHM, COLLNET, NVLS, ...
    net: str | None  # the network of a NET or COLLNET connection (IB, Socket, AWS Libfabric, ...)
    detail: str  # what the report shows: ``NET/IB/GDRDMA``, ``P2P/IPC/read``, ``SHM``
    gdr: bool
    #: a process's count of such connections is kept under it (made once: a fact is shared by every line of its words)
    key: tuple[str, str, str | None, bool] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (self.kind, self.detail, self.net, self.gdr))


@dataclass(frozen=True, slots=True)
class Coll:
    """A COLL trace line (``AllReduce: opCount 1f sendbuff ... comm 0x... [nranks=8]``)."""

    op: str
    opcount: int
    comm: str
    nranks: int | None
    count: int


@dataclass(frozen=True, slots=True)
class Chain:
    """A frame of an error chain (``misc/socket.cc:47 -> 3 (Connection reset)``)."""

    src: str  # FILE:LINE
    code: int  # ncclResult_t
    errno: str | None
    thread: str | None
    #: the frame as an error's chain lists it (made once, interned: a fact is shared by every line of its words)
    frame: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        text = f"{self.src} -> {self.code}" + (f" ({self.errno})" if self.errno else "")
        object.__setattr__(self, "frame", sys.intern(text + (f" [{self.thread}]" if self.thread else "")))


@dataclass(frozen=True, slots=True)
class Retried:
    """``FUNC: connect to ADDR returned ERR, retrying (n/N) after sleep for T msec`` (2.24+; patched builds print it
    after a WARN of theirs): NCCL tries ``FUNC``'s call again, the failure before it was not its last word."""

    func: str


@dataclass(frozen=True, slots=True)
class Teardown:
    """A communicator torn down (``- Abort COMPLETE``, ``- Destroy COMPLETE``, ``CommRevokeAsync START``)."""


@dataclass(frozen=True, slots=True)
class Init:
    """A communicator's init line (``comm 0x... rank 3 nranks 8 cudaDev 3 busId ... - Init COMPLETE``)."""

    api: str | None
    comm: str
    rank: int
    nranks: int
    cuda_dev: int | None
    bus_id: str | None
    comm_id: str | None
    phase: str | None  # START, COMPLETE, or None (NCCL 2.3's start line, or a cut line)


@dataclass(frozen=True, slots=True)
class Env:
    """An ``NCCL_*`` variable the process echoed (``NCCL_IB_HCA set by environment to mlx5``)."""

    var: str
    value: str


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """The bootstrap's interface and address (``Bootstrap : Using eth0:10.0.0.2<0>``)."""

    interface: str
    address: str


@dataclass(frozen=True, slots=True)
class IbNone:
    """``NET/IB : No device found``."""


@dataclass(frozen=True, slots=True)
class IbUsing:
    """The IB HCAs NCCL uses (``NET/IB : Using [0]mlx5_0:1/IB ... ; OOB eth0:...``)."""

    hcas: tuple[str, ...]
    oob: str | None


@dataclass(frozen=True, slots=True)
class SocketUsing:
    """The interfaces NCCL's socket transport uses (``NET/Socket : Using [0]eth0:10.0.0.2<0>``)."""

    interfaces: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NoVerbs:
    """``Failed to open libibverbs.so[.1]`` (a WARN up to 2.10)."""


@dataclass(frozen=True, slots=True)
class Network:
    """``Using network IB`` (or a plugin's name)."""

    name: str


@dataclass(frozen=True, slots=True)
class VersionLine:
    """``NCCL version 2.18.3+cuda12.2``."""

    version: str
    cuda: str


@dataclass(frozen=True, slots=True)
class Plugin:
    """A network plugin's line (``NET/OFI Using aws-ofi-nccl 1.7.1``, ``P2P plugin IBext``)."""

    text: str


@dataclass(frozen=True, slots=True)
class Gdr:
    """``GPU Direct RDMA Enabled|Disabled for GPU/HCA ...``."""

    enabled: bool


@dataclass(frozen=True, slots=True)
class Nvls:
    """``NVLS multicast support is [not] available``."""

    available: bool


@dataclass(frozen=True, slots=True)
class Connected:
    """``Connected all rings|trees``: the communicator's connections are up."""

    what: str


#: every fact an INFO message can state: a tagged union, matched by class
Fact = (
    Conn
    | Coll
    | Chain
    | Teardown
    | Retried
    | Init
    | Env
    | Bootstrap
    | IbNone
    | IbUsing
    | SocketUsing
    | NoVerbs
    | Network
    | VersionLine
    | Plugin
    | Gdr
    | Nvls
    | Connected
)
#: the facts that show NCCL went on choosing its network (a WARN before them was a probe)
NETWORK_PROGRESS = (Network, IbUsing, SocketUsing, IbNone, NoVerbs)
_NVLS_CONN = Conn("NVLS", None, "NVLS", False)


#: what a message :func:`classify` reads starts with, or holds (one or the other; a test checks it on every message
#: of the corpus): a line of application output with neither is no NCCL message (:mod:`parsers.nccl._foreign`)
FACT_STARTS = tuple(
    "Channel|Ring |NCCL_|Bootstrap|NET|Using|Plugin Path|P2P plugin|Failed to open libibverbs|NCCL version|"
    "RCCL version|NVLS|GPU Direct|CollNet|Coll |Connected".split("|")
)
FACT_TEXTS = ("opCount", " -> ", "Abort", "Destroy", "Revoke", "nranks ", "GPU Direct RDMA", ", retrying (")


@lru_cache(maxsize=1 << 16)  # messages repeat across ranks and retries; a fact is immutable, so shared
def classify(msg: str) -> Fact | None:
    """The fact an INFO message states, or None for a message the analysis does not use."""
    head = msg[:12]
    if head.startswith(("Channel", "Ring ")):
        m = _CONN.match(msg)
        if m:
            return _via(m["via"])
    if "opCount" in msg:
        m = _COLL.match(msg)
        if m:
            return Coll(
                m["op"], int(m["opc"], 16), m["comm"], int(m["nranks"]) if m["nranks"] else None, int(m["count"])
            )
    if " -> " in msg:
        m = _CHAIN.match(msg)
        if m:
            return Chain(f"{m['file']}:{m['line']}", int(m["code"]), m["errno"], m["thread"])
    if ("Abort" in msg or "Destroy" in msg or "Revoke" in msg) and _TEARDOWN.search(msg):
        return Teardown()
    if ", retrying (" in msg and (m := _RETRIED.match(msg)) is not None:
        return Retried(m["func"])
    if "rank " in msg and "nranks " in msg and "comm " in msg:
        m = _INIT.search(msg)
        if m:
            return Init(
                m["api"],
                m["comm"],
                int(m["rank"]),
                int(m["nranks"]),
                _int(m["cuda"]),
                m["bus"],
                m["commid"],
                m["phase"],
            )
    if msg.startswith("NCCL_"):
        m = _ENV.match(msg)
        if m:
            return Env(m["var"], m["val"].strip())
    if msg.startswith(("Bootstrap", "NET : Using interface")):
        m = _BOOTSTRAP.match(msg)
        if m:
            return Bootstrap(m["if"], m["addr"])
    if msg.startswith(
        (
            "NET/IB",
            "NET/Socket",
            "NET/Plugin",
            "NET/OFI",
            "Using",
            "Plugin Path",
            "P2P plugin",
            "Failed to open libibverbs",
            "NCCL version",
            "RCCL version",
            "NVLS",
            "GPU Direct",
            "NET/IB:",
        )
    ):
        return _net(msg)
    if "GPU Direct RDMA" in msg:
        m = _GDR.search(msg)
        if m:
            return Gdr(m["state"] == "Enabled")
    if msg.startswith(("CollNet", "Coll ")):
        m = _COLLNET.match(msg)
        if m:
            return _via(m["via"])
    if msg.startswith("Connected all"):
        return Connected(msg[len("Connected all ") :].split(",")[0])
    if msg.startswith("Connected NVLS tree"):  # 2.18+: the NVLS tree of a communicator is connected
        return _NVLS_CONN
    return None


def classify_once(text: str) -> Fact | None:
    """:func:`classify` of a text that is unlikely to come again (a line of application output checked
    for an NCCL message cut from its header), not cached: a log's output must not push its NCCL
    messages, which repeat, out of :func:`classify`'s cache."""
    return classify.__wrapped__(text)


def _net(msg: str) -> Fact | None:
    if msg.startswith(("NET/IB : No device found", "NET/IB: No device found")):
        return IbNone()
    if msg.startswith("NET/IB") and "Using" in msg:
        devs = tuple(f"{d['name']}:{d['port']}/{d['link']}" for d in _IB_DEV.finditer(msg))
        oob = re.search(r"OOB (?P<if>[^:\s]+):", msg)
        return IbUsing(devs, oob["if"] if oob else None)
    if msg.startswith("NET/IB: ["):
        m = _IB_DEV_23.match(msg)
        if m:
            return IbUsing((f"{m['name']}:{m['port']}/{m['link']}",), None)
    if msg.startswith("NET/Socket : Using"):
        return SocketUsing(tuple(f"{m['if']}:{m['addr']}" for m in _SOCK_IF.finditer(msg)))
    if msg.startswith("Failed to open libibverbs"):
        return NoVerbs()
    m = _NETWORK.match(msg)
    if m:
        return Network(m["net"])
    m = _VERSION.search(msg)
    if m and msg.startswith(("NCCL version", "RCCL version")):
        return VersionLine(m["ver"] + m["sfx"], m["cuda"] or m["hip"])
    m = _RCCL_INFO.match(msg)
    if m:
        return VersionLine(m["ver"], "hip")
    if msg.startswith(("P2P plugin", "Plugin Path", "NET/OFI Using", "NET/Plugin: Loaded")):
        return Plugin(msg)
    if "GPU Direct RDMA" in msg:
        g = _GDR.search(msg)
        if g:
            return Gdr(g["state"] == "Enabled")
    m = _NVLS.match(msg)
    if m:
        return Nvls(not m["no"])
    if msg.startswith("NVLS comm 0x"):  # NVLS buffers set up for a communicator (2.18+)
        return _NVLS_CONN
    return None


def _via(via: str) -> Conn:
    """``P2P/IPC/read``, ``NET/IB/0/GDRDMA``, ``NET/AWS Libfabric/0``, ``SHM/direct/direct``,
    ``direct shared memory``, ``COLLNET/SHARP/5/GDRDMA`` -> kind, net name, GDR."""
    via = via.strip()
    gdr = "/GDRDMA" in via
    if via.startswith("NET/"):
        name = re.match(r"NET/(?P<net>.+?)/\d+", via)
        net = name["net"] if name else via[4:].split("/")[0]
        return Conn("NET", net, f"NET/{net}" + ("/GDRDMA" if gdr else ""), gdr)
    if via.startswith("COLLNET/"):
        net = via.split("/")[1]
        return Conn("COLLNET", net, f"COLLNET/{net}" + ("/GDRDMA" if gdr else ""), gdr)
    if via.startswith(("direct shared memory", "SHM")):
        return Conn("SHM", None, "SHM", False)
    if via.startswith("P2P/"):
        parts = via.split("/")
        detail = "/".join(parts[:3]) if len(parts) > 2 and parts[2] == "read" else "/".join(parts[:2])
        return Conn("P2P", None, detail.split("(")[0].strip(), False)
    return Conn(via.split("/")[0], None, via.split(" ")[0], gdr)


def _int(s: str | None) -> int | None:
    return int(s) if s is not None else None
