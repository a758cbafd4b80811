"""Synthetic ``NCCL_DEBUG=INFO`` job logs in the wording of a chosen NCCL release (2.4 - 2.26).

:class:`NcclLogSpec` describes a job (hosts x GPUs, NCCL version, network, faults);
:func:`write_nccl_log` writes one interleaved stdout, the way ``mpirun`` collects it, or one
file per rank (``NCCL_DEBUG_FILE=%h.%p.log``): each rank's init block (version, bootstrap,
network, env echo, ring/channel connection lines, ``Init START``/``Init COMPLETE``), then
optionally one ``COLL`` trace line per collective per rank (``NCCL_DEBUG_SUBSYS=COLL``).
:data:`WORDINGS` holds each release's phrasing from ``docs/formats/nccl-log.md``
(version line on rank 0 or every rank, ``Bootstrap`` and ``NET/Plugin`` wording, ``Ring`` vs
``Channel`` lines with cudaDev / busId / nvmlDev brackets, ``Init START``, ``commId``, API
names). Faults: socket fallback with the libibverbs reason, ``NCCL_IB_DISABLE=1``, RoCE
ports, IB without GDRDMA, a host with another NCCL build, ranks that never complete init, a
RoCE completion error with its chain, and PyTorch watchdog timeouts with one rank behind.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Wording:
    """How one NCCL release phrases the init lines (``docs/formats/nccl-log.md`` §3, §6)."""

    version: str
    version_on_every_rank: bool  # 2.22+ prints it as INFO on every rank; older: bare, rank 0 only
    bootstrap: str  # {ifc} {ip}
    plugin: tuple[str, ...]
    ib: str  # {link} {ifc} {ip}
    network_line: bool  # "Using network X" (2.6+)
    driver_line: bool  # cudaDriverVersion (2.13+)
    init_start: bool  # "- Init START" (2.18.3+)
    api: str  # "ncclCommInitRank " (2.21+) or ""
    init_fields: str  # after "nranks {n} ": {d} {bus} {cid}
    p2p: str  # {ch} {src} {dst} {sb} {db}
    net: str  # {ch} {src} {dst} {sb} {db} {net} {k} {gdr}


WORDINGS: dict[str, Wording] = {
    "2.4": Wording(
        "2.4.8",
        False,
        "Bootstrap : Using [0]{ifc}:{ip}<0>",
        ("NET/Plugin : No plugin found (libnccl-net.so).",),
        "NET/IB : Using [0]mlx5_0:1/{link} ; OOB {ifc}:{ip}<0>",
        False,
        False,
        False,
        "",
        "cudaDev {d} nvmlDev {d}",
        "Ring {ch:02d} : {src}[{d}] -> {dst}[{dd}] via P2P/IPC",
        "Ring {ch:02d} : {src} -> {dst} [send] via NET/{net}/{k}{gdr}",
    ),
    "2.12": Wording(
        "2.12.12",
        False,
        "Bootstrap : Using {ifc}:{ip}<0>",
        ("NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",),
        "NET/IB : Using [0]mlx5_0:1/{link} [RO]; OOB {ifc}:{ip}<0>",
        True,
        False,
        False,
        "",
        "cudaDev {d} busId {bus}",
        "Channel {ch:02d} : {src}[{sb}] -> {dst}[{db}] via P2P/IPC/read",
        "Channel {ch:02d}/0 : {src}[{sb}] -> {dst}[{db}] [send] via NET/{net}/{k}{gdr}",
    ),
    "2.17": Wording(
        "2.17.1",
        False,
        "Bootstrap : Using {ifc}:{ip}<0>",
        (
            (
                "NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared "
                "object file: No such file or directory"
            ),
            "NET/Plugin : No plugin found, using internal implementation",
        ),
        "NET/IB : Using [0]mlx5_0:1/{link} [RO]; OOB {ifc}:{ip}<0>",
        True,
        True,
        False,
        "",
        "cudaDev {d} busId {bus} commId 0x{cid}",
        "Channel {ch:02d}/0 : {src}[{sb}] -> {dst}[{db}] via P2P/IPC/read",
        "Channel {ch:02d}/0 : {src}[{sb}] -> {dst}[{db}] [send] via NET/{net}/{k}{gdr}",
    ),
    "2.19": Wording(
        "2.19.3",
        False,
        "Bootstrap : Using {ifc}:{ip}<0>",
        (
            (
                "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory "
                "No plugin found (libnccl-net.so), using internal implementation"
            ),
        ),
        "NET/IB : Using [0]mlx5_0:1/{link} [1]mlx5_1:1/{link} [RO]; OOB {ifc}:{ip}<0>",
        True,
        True,
        True,
        "",
        "cudaDev {d} nvmlDev {d} busId {bus} commId 0x{cid}",
        "Channel {ch:02d}/0 : {src}[{d}] -> {dst}[{dd}] via P2P/IPC/read",
        "Channel {ch:02d}/0 : {src}[{d}] -> {dst}[{dd}] [send] via NET/{net}/{k}{gdr}",
    ),
    "2.26": Wording(
        "2.26.2",
        True,
        "Bootstrap: Using {ifc}:{ip}<0>",
        ("NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",),
        "NET/IB : Using [0]mlx5_0:1/{link} [1]mlx5_1:1/{link} [RO]; OOB {ifc}:{ip}<0>",
        True,
        True,
        True,
        "ncclCommInitRank ",
        "cudaDev {d} nvmlDev {d} busId {bus} commId 0x{cid}",
        "Channel {ch:02d}/0 : {src}[{d}] -> {dst}[{dd}] via P2P/IPC/read",
        "Channel {ch:02d}/0 : {src}[{d}] -> {dst}[{dd}] [send] via NET/{net}/{k}{gdr}",
    ),
}


@dataclass(frozen=True)
class NcclLogSpec:
    hosts: int = 2
    gpus_per_host: int = 8
    wording: str = "2.19"  # a key of WORDINGS
    network: str = "IB"  # IB | Socket
    link: str = "IB"  # IB | RoCE (the port type NET/IB lists)
    gdr: bool = True
    ib_expected: bool = True  # hosts have IB (used for the socket-fallback reason)
    ib_disable_env: bool = False
    launcher_prefix: bool = True  # mpirun's [1,rank]<stdout>: (interleaved stream only)
    mismatch_host: int | None = None  # this host runs another NCCL build (2.17 wording)
    collectives: int = 0  # COLL lines per rank after init
    stuck_ranks: tuple[int, ...] = ()  # logged Init START, never COMPLETE
    completion_error_rank: int | None = None
    watchdog_behind_rank: int | None = None
    seed: int = 1
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def nranks(self) -> int:
        return self.hosts * self.gpus_per_host

    @property
    def version(self) -> str:
        return WORDINGS[self.wording].version


def _host(h: int) -> str:
    return f"gpu-node-{h:03d}"


def write_nccl_log(path: str | Path, spec: NcclLogSpec, per_rank: bool = False) -> list[Path]:
    """Write the job's log: one interleaved stdout at ``path``, or with ``per_rank`` one
    ``<host>.<pid>.log`` per rank in the folder ``path`` (``NCCL_DEBUG_FILE=%h.%p.log``)."""
    if not per_rank:
        with open(path, "w", encoding="utf-8", newline="\n") as out:
            _write(lambda rank, text: out.write(text), spec, prefix=spec.launcher_prefix)
        return [Path(path)]
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for rank in range(spec.nranks):
        h, _ = divmod(rank, spec.gpus_per_host)
        files[rank] = open(folder / f"{_host(h)}.{20000 + rank}.log", "w", encoding="utf-8", newline="\n")
    try:
        _write(lambda rank, text: files[rank].write(text), spec, prefix=False)
    finally:
        for f in files.values():
            f.close()
    return sorted(folder.glob("*.log"))


def _write(emit: Callable[[int, str], object], spec: NcclLogSpec, prefix: bool) -> None:
    rnd = random.Random(spec.seed)
    n = spec.nranks
    comm_id = f"{rnd.getrandbits(64):x}"
    procs = []
    for rank in range(n):
        h, dev = divmod(rank, spec.gpus_per_host)
        pid = 20000 + rank
        pre = f"[1,{rank}]<stdout>:" if prefix else ""
        procs.append((rank, h, dev, pid, f"{pre}{_host(h)}:{pid}:{pid} [{dev}] NCCL INFO ", pre))
    ip = {h: f"10.1.{h // 250}.{h % 250 + 1}" for h in range(spec.hosts)}
    busid = [f"{0x1B + 0x10 * d:x}000" for d in range(spec.gpus_per_host)]
    ifc = "ib0" if spec.ib_expected else "eth0"

    def wording(h: int) -> Wording:
        return WORDINGS["2.17" if h == spec.mismatch_host else spec.wording]

    for rank, h, dev, _, p, pre in procs:
        wd = wording(h)

        def w(text: str, r: int = rank) -> None:
            emit(r, text)

        w(p + wd.bootstrap.format(ifc=ifc, ip=ip[h]) + "\n")
        if wd.version_on_every_rank:
            w(f"{p}NCCL version {wd.version}+cuda12.2\n")
        elif rank == 0 or (h == spec.mismatch_host and rank % spec.gpus_per_host == 0):
            w(f"{pre}NCCL version {wd.version}+cuda12.2\n")
        for line in wd.plugin:
            w(f"{p}{line}\n")
        for var, val in spec.extra_env.items():
            w(f"{p}{var} set by environment to {val}\n")
        if spec.ib_disable_env:
            w(f"{p}NCCL_IB_DISABLE set by environment to 1.\n")
        if spec.network == "IB":
            w(p + wd.ib.format(link=spec.link, ifc=ifc, ip=ip[h]) + "\n")
        else:
            if not spec.ib_disable_env:
                w(f"{p}Failed to open libibverbs.so[.1]\n")
            w(
                f"{p}NET/Socket : Using [0]ib0:{ip[h]}<0> [1]eth0:192.168.{h % 250}.1<0>\n"
                if spec.ib_expected
                else f"{p}NET/Socket : Using [0]eth0:{ip[h]}<0>\n"
            )
        if wd.version.startswith("2.19"):
            w(f"{p}Using non-device net plugin version 0\n")
        if wd.network_line:
            w(f"{p}Using network {'IB' if spec.network == 'IB' else 'Socket'}\n")
        if wd.driver_line:
            w(f"{p}cudaDriverVersion 12020\n")
        if wd.init_start:
            w(_init(p, wd, rank, n, dev, busid[dev], comm_id, "Init START"))
    net = "IB" if spec.network == "IB" else "Socket"
    for rank, h, dev, _, p, _ in procs:
        wd = wording(h)

        def w(text: str, r: int = rank) -> None:
            emit(r, text)

        nxt = (rank + 1) % n
        nh, ndev = divmod(nxt, spec.gpus_per_host)
        fields = {"src": rank, "dst": nxt, "d": dev, "dd": ndev, "sb": busid[dev], "db": busid[ndev]}
        for ch in range(2):
            if nh == h:
                w(p + wd.p2p.format(ch=ch, **fields) + "\n")
            else:
                gdr = "/GDRDMA" if spec.gdr and net == "IB" else ""
                w(p + wd.net.format(ch=ch, net=net, k=ch % 2, gdr=gdr, **fields) + "\n")
        if rank in spec.stuck_ranks:
            continue
        if rank == spec.completion_error_rank:
            w(
                f"\n{p.replace(' NCCL INFO ', ' transport/net_ib.cc:1295 NCCL WARN ')}NET/IB : Got completion from "
                f"peer {ip[(h + 1) % spec.hosts]}<43125> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n"
            )
            w(f"{p}transport/net.cc:1008 -> 6\n{p}proxy.cc:679 -> 6\n{p}proxy.cc:858 -> 6 [Proxy Thread]\n")
            continue
        if wd.network_line:
            w(f"{p}Connected all rings\n{p}Connected all trees\n")
        w(_init(p, wd, rank, n, dev, busid[dev], comm_id, "Init COMPLETE"))
    _collectives(emit, spec, procs)
    if spec.watchdog_behind_rank is not None:
        for rank, *_ in procs[: min(n, 8)]:
            seq = 4100 if rank == spec.watchdog_behind_rank else 4117
            emit(
                rank,
                f"[rank{rank}]:[E1122 08:00:00.000000000 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog "
                f"caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
                "NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600042 milliseconds before "
                "timing out.\n",
            )


def _init(p: str, wd: Wording, rank: int, n: int, dev: int, bus: str, cid: str, phase: str) -> str:
    fields = wd.init_fields.format(d=dev, bus=bus, cid=cid)
    return f"{p}{wd.api}comm 0x{0x5500 + rank:x} rank {rank} nranks {n} {fields} - {phase}\n"


def _collectives(
    emit: Callable[[int, str], object], spec: NcclLogSpec, procs: list[tuple[int, int, int, int, str, str]]
) -> None:
    """One AllReduce COLL line per rank per collective, ranks interleaved as a collector writes them."""
    n = spec.nranks
    block = 256  # collectives written per rank in one go (buffered output interleaves in blocks)
    for start in range(0, spec.collectives, block):
        stop = min(spec.collectives, start + block)
        for rank, _, _, _, p, _ in procs:
            stem = (
                f"{p}AllReduce: opCount %x sendbuff 0x7f3a%08x recvbuff 0x7f3a%08x count 4194304 datatype 7 "
                f"op 0 root 0 comm 0x{0x5500 + rank:x} [nranks={n}] stream 0x55d2c0a1b2c0\n"
            )
            emit(rank, "".join(stem % (op, op * 64, op * 64 + 32) for op in range(start, stop)))


def log_size_for(spec: NcclLogSpec) -> int:
    """Approximate bytes per collective line of ``spec`` (to size a benchmark file)."""
    return 190 + (16 if spec.launcher_prefix else 0)
