"""Synthetic ``NCCL_DEBUG=INFO`` job logs in the exact wording of a given NCCL release.

:class:`NcclLogSpec` describes a job (hosts x GPUs, NCCL version, network, faults);
:func:`write_nccl_log` writes one interleaved stdout, the way ``mpirun`` or ``srun`` collect
it: each rank's init block (version, bootstrap, network, env echo, ring/channel connection
lines, ``Init START``/``Init COMPLETE``), then optionally one ``COLL`` trace line per
collective per rank (``NCCL_DEBUG_SUBSYS=COLL``). Line formats follow
``../shared/docs/nccl-log-format.md`` for NCCL 2.18.3 - 2.21 (``Init START``, ``commId``,
nvmlDev channel brackets). Faults: socket fallback with the libibverbs reason,
``NCCL_IB_DISABLE=1``, IB without GDRDMA, ranks that never complete init, a RoCE
completion error with its chain, and PyTorch watchdog timeouts with one rank behind.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO


@dataclass(frozen=True)
class NcclLogSpec:
    hosts: int = 2
    gpus_per_host: int = 8
    version: str = "2.19.3"
    network: str = "IB"  # IB | Socket
    gdr: bool = True
    ib_expected: bool = True  # hosts have IB (used for the socket-fallback reason)
    ib_disable_env: bool = False
    launcher_prefix: bool = True  # mpirun's [1,rank]<stdout>:
    collectives: int = 0  # COLL lines per rank after init
    stuck_ranks: tuple[int, ...] = ()  # logged Init START, never COMPLETE
    completion_error_rank: int | None = None
    watchdog_behind_rank: int | None = None
    seed: int = 1
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def nranks(self) -> int:
        return self.hosts * self.gpus_per_host


def _host(h: int) -> str:
    return f"gpu-node-{h:03d}"


def write_nccl_log(path: str | Path, spec: NcclLogSpec) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        _write(out, spec)


def _write(out: TextIO, spec: NcclLogSpec) -> None:
    rnd = random.Random(spec.seed)
    n = spec.nranks
    comm_id = f"{rnd.getrandbits(64):x}"
    procs = []
    for rank in range(n):
        h, dev = divmod(rank, spec.gpus_per_host)
        pid = 20000 + rank
        pre = f"[1,{rank}]<stdout>:" if spec.launcher_prefix else ""
        procs.append((rank, h, dev, pid, f"{pre}{_host(h)}:{pid}:{pid} [{dev}] NCCL INFO ", pre))
    ip = {h: f"10.1.{h // 250}.{h % 250 + 1}" for h in range(spec.hosts)}
    busid = [f"{0x1b + 0x10 * d:x}000" for d in range(spec.gpus_per_host)]
    w = out.write
    for rank, h, dev, pid, p, pre in procs:
        w(f"{p}Bootstrap : Using ib0:{ip[h]}<0>\n" if spec.ib_expected else f"{p}Bootstrap : Using eth0:{ip[h]}<0>\n")
        if rank == 0:
            w(f"{pre}NCCL version {spec.version}+cuda12.2\n")
        w(f"{p}NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No "
          "plugin found (libnccl-net.so), using internal implementation\n")
        for var, val in spec.extra_env.items():
            w(f"{p}{var} set by environment to {val}\n")
        if spec.ib_disable_env:
            w(f"{p}NCCL_IB_DISABLE set by environment to 1.\n")
        if spec.network == "IB":
            w(f"{p}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:{ip[h]}<0>\n")
            w(f"{p}Using non-device net plugin version 0\n{p}Using network IB\n")
        else:
            if not spec.ib_disable_env:
                w(f"{p}Failed to open libibverbs.so[.1]\n")
            w(f"{p}NET/Socket : Using [0]ib0:{ip[h]}<0> [1]eth0:192.168.{h % 250}.1<0>\n" if spec.ib_expected else
              f"{p}NET/Socket : Using [0]eth0:{ip[h]}<0>\n")
            w(f"{p}Using non-device net plugin version 0\n{p}Using network Socket\n")
        w(f"{p}cudaDriverVersion 12020\n")
        w(f"{p}comm 0x{0x5500 + rank:x} rank {rank} nranks {n} cudaDev {dev} nvmlDev {dev} busId {busid[dev]} "
          f"commId 0x{comm_id} - Init START\n")
    net = "IB" if spec.network == "IB" else "Socket"
    for rank, h, dev, pid, p, _ in procs:
        nxt = (rank + 1) % n
        nh, ndev = divmod(nxt, spec.gpus_per_host)
        for ch in range(2):
            if nh == h:
                w(f"{p}Channel {ch:02d}/0 : {rank}[{dev}] -> {nxt}[{ndev}] via P2P/IPC/read\n")
            else:
                tail = "/GDRDMA" if spec.gdr and net == "IB" else ""
                w(f"{p}Channel {ch:02d}/0 : {rank}[{dev}] -> {nxt}[{ndev}] [send] via NET/{net}/{ch % 2}{tail}\n")
        if rank in spec.stuck_ranks:
            continue
        if rank == spec.completion_error_rank:
            w(f"\n{p.replace(' NCCL INFO ', ' transport/net_ib.cc:1295 NCCL WARN ')}NET/IB : Got completion from "
              f"peer {ip[(h + 1) % spec.hosts]}<43125> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n")
            w(f"{p}transport/net.cc:1008 -> 6\n{p}proxy.cc:679 -> 6\n{p}proxy.cc:858 -> 6 [Proxy Thread]\n")
            continue
        w(f"{p}Connected all rings\n{p}Connected all trees\n")
        w(f"{p}comm 0x{0x5500 + rank:x} rank {rank} nranks {n} cudaDev {dev} nvmlDev {dev} busId {busid[dev]} "
          f"commId 0x{comm_id} - Init COMPLETE\n")
    _collectives(w, spec, procs)
    if spec.watchdog_behind_rank is not None:
        for rank, *_ in procs[: min(n, 8)]:
            seq = 4100 if rank == spec.watchdog_behind_rank else 4117
            w(f"[rank{rank}]:[E1122 08:00:00.000000000 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught "
              f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, "
              f"NumelOut=1048576, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n")


def _collectives(w: object, spec: NcclLogSpec, procs: list[tuple[int, int, int, int, str, str]]) -> None:
    """One AllReduce COLL line per rank per collective, ranks interleaved as a collector writes them."""
    write = w  # type: ignore[assignment]
    n = spec.nranks
    block = 256  # collectives written per rank in one go (buffered output interleaves in blocks)
    for start in range(0, spec.collectives, block):
        stop = min(spec.collectives, start + block)
        for rank, _, _, _, p, _ in procs:
            stem = (f"{p}AllReduce: opCount %x sendbuff 0x7f3a%08x recvbuff 0x7f3a%08x count 4194304 datatype 7 "
                    f"op 0 root 0 comm 0x{0x5500 + rank:x} [nranks={n}] stream 0x55d2c0a1b2c0\n")
            write("".join(stem % (op, op * 64, op * 64 + 32) for op in range(start, stop)))  # type: ignore[operator]


def log_size_for(spec: NcclLogSpec) -> int:
    """Approximate bytes per collective line of ``spec`` (to size a benchmark file)."""
    return 190 + (16 if spec.launcher_prefix else 0)
