"""What an NCCL INFO message says (``docs/formats/nccl-log.md`` §3, §6).

:func:`classify` turns one message into a ``(kind, fields)`` fact, or None for messages
that carry nothing the analysis uses (they are still counted as NCCL records). Wording
that only some releases print narrows the version of a process that never printed its
version line: :func:`wording_range`.
"""

from __future__ import annotations

import re
from typing import Any

Version = tuple[int, int, int]
LATEST: Version = (2, 99, 99)

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
_VERSION = re.compile(r"NCCL version (?P<ver>\d+\.\d+\.\d+)(?P<sfx>[^+\s]*)\+cuda(?P<cuda>\S+)")
_GDR = re.compile(r"GPU Direct RDMA (?P<state>Enabled|Disabled) for (?:GPU|HCA)")
_NVLS = re.compile(r"^NVLS multicast support is (?P<no>not )?available")
#: a communicator being torn down: ``- Abort COMPLETE`` (2.12+), ``- Abort START`` (2.28+), ``- Destroy COMPLETE``,
#: ``- Revoke START`` (2.28.7+), ``CommRevokeAsync START``
_TEARDOWN = re.compile(r" - (?:Abort|Destroy|Revoke) (?:START|COMPLETE)|^CommRevokeAsync START")

#: Wording only some releases print (``nccl-log.md`` §6): regex, first and last version that prints it.
WORDING: tuple[tuple[re.Pattern[str], Version, Version], ...] = tuple(
    (re.compile(p), lo, hi)
    for p, lo, hi in (
        (r"^NET : Using interface|^Using internal Network", (2, 3, 0), (2, 3, 99)),
        (r"^NET/Plugin : No plugin found \(libnccl-net\.so\)\.$", (2, 4, 0), (2, 4, 99)),
        (r"^NET/Plugin : No plugin found \([^)]*\), using internal implementation", (2, 5, 0), (2, 16, 99)),
        (r"^NET/Plugin : Plugin load \(|^NET/Plugin : No plugin found, using internal", (2, 17, 0), (2, 18, 99)),
        (r"^NET/Plugin : dlerror=", (2, 19, 0), (2, 21, 99)),
        (r"^NET/Plugin: Could not find: .*Using internal network plugin", (2, 22, 0), (2, 25, 99)),
        (r"^NET/Plugin: Could not find: .*Using internal net plugin", (2, 26, 0), LATEST),
        (r"^Bootstrap : Using \[\d+\]", (2, 4, 8), (2, 7, 99)),
        (r"^Bootstrap : Using [^\[]", (2, 8, 0), (2, 23, 99)),
        (r"^Bootstrap: Using", (2, 24, 0), LATEST),
        (r"^Ring \d+ : \d+", (2, 3, 0), (2, 6, 99)),
        (r"^cudaDriverVersion", (2, 13, 0), LATEST),
        (r" commId 0x", (2, 16, 0), LATEST),
        (r"- Init START", (2, 18, 3), LATEST),
        (r"via P2P/CUMEM", (2, 18, 1), LATEST),
        (r"^Using non-device net plugin version", (2, 19, 0), LATEST),
        (r"^Init timings: ", (2, 22, 0), (2, 22, 99)),
        (r"^Init timings - |^Bootstrap timings total", (2, 23, 0), LATEST),
        (r"^RAS client listening socket", (2, 24, 0), LATEST),
    )
)


_VERSION_NUMBERS = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> Version:
    """``(major, minor, patch)`` of a version text; whatever follows the numbers (a vendor build
    suffix such as ``2.4.7nvb1``, ``-1``, ``+cuda10.1``) is not part of it. (0, 0, 0) for no version."""
    m = _VERSION_NUMBERS.match(text.strip())
    return (int(m[1]), int(m[2]), int(m[3])) if m else (0, 0, 0)


def wording_range(msg: str) -> tuple[Version, Version] | None:
    """The release range whose wording ``msg`` is, if it is version-specific (the
    intersection when several clues match)."""
    out: tuple[Version, Version] | None = None
    for rx, lo, hi in WORDING:
        if rx.search(msg):
            out = (lo, hi) if out is None else (max(out[0], lo), min(out[1], hi))
    return out


def classify(msg: str) -> tuple[str, dict[str, Any]] | None:
    """The fact an INFO message states, as ``(kind, fields)``: each kind has its own fields (hence
    ``dict[str, Any]``, read by :meth:`parsers.nccl.process.ProcessState.apply` per kind; a tagged
    union of frozen dataclasses is issue 45's remaining work)."""
    head = msg[:12]
    if head.startswith(("Channel", "Ring ")):
        m = _CONN.match(msg)
        if m:
            return "conn", _via(m["via"])
    if "opCount" in msg:
        m = _COLL.match(msg)
        if m:
            return "coll", {
                "op": m["op"],
                "opcount": int(m["opc"], 16),
                "comm": m["comm"],
                "nranks": int(m["nranks"]) if m["nranks"] else None,
                "count": int(m["count"]),
            }
    if " -> " in msg:
        m = _CHAIN.match(msg)
        if m:
            return "chain", {
                "src": f"{m['file']}:{m['line']}",
                "code": int(m["code"]),
                "errno": m["errno"],
                "thread": m["thread"],
            }
    if ("Abort" in msg or "Destroy" in msg or "Revoke" in msg) and _TEARDOWN.search(msg):
        return "teardown", {}
    if "rank " in msg and "nranks " in msg and "comm " in msg:
        m = _INIT.search(msg)
        if m:
            return "init", {
                "api": m["api"],
                "comm": m["comm"],
                "rank": int(m["rank"]),
                "nranks": int(m["nranks"]),
                "cuda_dev": _int(m["cuda"]),
                "bus_id": m["bus"],
                "comm_id": m["commid"],
                "phase": m["phase"],
            }
    if msg.startswith("NCCL_"):
        m = _ENV.match(msg)
        if m:
            return "env", {"var": m["var"], "value": m["val"].strip()}
    if msg.startswith(("Bootstrap", "NET : Using interface")):
        m = _BOOTSTRAP.match(msg)
        if m:
            return "bootstrap", {"interface": m["if"], "address": m["addr"]}
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
            "NVLS",
            "GPU Direct",
            "NET/IB:",
        )
    ):
        return _net(msg)
    if "GPU Direct RDMA" in msg:
        m = _GDR.search(msg)
        if m:
            return "gdr", {"enabled": m["state"] == "Enabled"}
    if msg.startswith(("CollNet", "Coll ")):
        m = _COLLNET.match(msg)
        if m:
            return "conn", _via(m["via"])
    if msg.startswith("Connected all"):
        return "connected", {"what": msg[len("Connected all ") :].split(",")[0]}
    if msg.startswith("Connected NVLS tree"):  # 2.18+: the NVLS tree of a communicator is connected
        return "conn", {"kind": "NVLS", "net": None, "detail": "NVLS", "gdr": False}
    return None


def _net(msg: str) -> tuple[str, dict[str, Any]] | None:
    if msg.startswith(("NET/IB : No device found", "NET/IB: No device found")):
        return "ib_none", {}
    if msg.startswith("NET/IB") and "Using" in msg:
        devs = [f"{d['name']}:{d['port']}/{d['link']}" for d in _IB_DEV.finditer(msg)]
        oob = re.search(r"OOB (?P<if>[^:\s]+):", msg)
        return "ib_using", {"hcas": devs, "oob": oob["if"] if oob else None}
    if msg.startswith("NET/IB: ["):
        m = _IB_DEV_23.match(msg)
        if m:
            return "ib_using", {"hcas": [f"{m['name']}:{m['port']}/{m['link']}"], "oob": None}
    if msg.startswith("NET/Socket : Using"):
        return "socket_using", {"interfaces": [f"{m['if']}:{m['addr']}" for m in _SOCK_IF.finditer(msg)]}
    if msg.startswith("Failed to open libibverbs"):
        return "no_verbs", {}
    m = _NETWORK.match(msg)
    if m:
        return "network", {"name": m["net"]}
    m = _VERSION.search(msg)
    if m and msg.startswith("NCCL version"):
        return "version", {"version": m["ver"] + m["sfx"], "cuda": m["cuda"]}
    if msg.startswith(("P2P plugin", "Plugin Path", "NET/OFI Using", "NET/Plugin: Loaded")):
        return "plugin", {"text": msg}
    if "GPU Direct RDMA" in msg:
        g = _GDR.search(msg)
        if g:
            return "gdr", {"enabled": g["state"] == "Enabled"}
    m = _NVLS.match(msg)
    if m:
        return "nvls", {"available": not m["no"]}
    if msg.startswith("NVLS comm 0x"):  # NVLS buffers set up for a communicator (2.18+)
        return "conn", {"kind": "NVLS", "net": None, "detail": "NVLS", "gdr": False}
    return None


def _via(via: str) -> dict[str, Any]:
    """``P2P/IPC/read``, ``NET/IB/0/GDRDMA``, ``NET/AWS Libfabric/0``, ``SHM/direct/direct``,
    ``direct shared memory``, ``COLLNET/SHARP/5/GDRDMA`` -> kind, net name, GDR."""
    via = via.strip()
    gdr = "/GDRDMA" in via
    if via.startswith("NET/"):
        name = re.match(r"NET/(?P<net>.+?)/\d+", via)
        net = name["net"] if name else via[4:].split("/")[0]
        return {"kind": "NET", "net": net, "detail": f"NET/{net}" + ("/GDRDMA" if gdr else ""), "gdr": gdr}
    if via.startswith("COLLNET/"):
        return {
            "kind": "COLLNET",
            "net": via.split("/")[1],
            "detail": "COLLNET/" + via.split("/")[1] + ("/GDRDMA" if gdr else ""),
            "gdr": gdr,
        }
    if via.startswith(("direct shared memory", "SHM")):
        return {"kind": "SHM", "net": None, "detail": "SHM", "gdr": False}
    if via.startswith("P2P/"):
        parts = via.split("/")
        detail = "/".join(parts[:3]) if len(parts) > 2 and parts[2] == "read" else "/".join(parts[:2])
        return {"kind": "P2P", "net": None, "detail": detail.split("(")[0].strip(), "gdr": False}
    return {"kind": via.split("/")[0], "net": None, "detail": via.split(" ")[0], "gdr": gdr}


def _int(s: str | None) -> int | None:
    return int(s) if s is not None else None
