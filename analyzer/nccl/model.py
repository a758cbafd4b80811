"""Every NCCL / job log of a run, read once and shared by the log detectors and the report.

Processes are keyed by ``(host, pid)``: one stdout can hold 64 hosts, one host can run
many processes, and the same pid exists on several hosts. Communicators are grouped by
``commId`` (NCCL 2.16+); older logs have none, so their init lines are grouped by
``nranks`` (``grouping`` says which).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, TypedDict

import pandas as pd
import pyarrow as pa

from analyzer.nccl.incidents import ClassifiedError, Incident, attribute
from parsers.nccl.wording import parse_version

LOG_TABLES = (
    "nccl_processes",
    "nccl_connections",
    "nccl_comm_ranks",
    "nccl_versions",
    "nccl_env",
    "nccl_errors",
    "nccl_collectives",
    "watchdog_timeouts",
    "worker_exits",
    "nccl_ras",
    "horovod_stalls",
    "autotune",
)


class _Table:
    """One of :data:`LOG_TABLES` as an attribute of the model, read-only and typed."""

    def __set_name__(self, owner: type, name: str) -> None:
        if name not in LOG_TABLES:
            raise TypeError(f"{name} is not a log table")
        self.name = name

    def __get__(self, model: NcclModel, owner: type | None = None) -> pd.DataFrame:
        return model.tables[self.name]


class IncompleteRank(TypedDict):
    """A rank that logged ``Init START`` of a communicator and never ``Init COMPLETE``."""

    rank: int
    host: str | None
    pid: int | None
    file: str
    line: int


class Communicator(TypedDict):
    """A communicator: the ranks that started and completed its initialisation (the report's
    ``nccl.communicators[]``)."""

    id: str
    comm_id: str | None
    grouping: Literal["commId", "nranks"]
    nranks: int
    ranks_started: list[int]
    ranks_complete: list[int]
    ranks_incomplete: list[IncompleteRank]
    hosts: list[str]
    files: list[str]


@dataclass(frozen=True, eq=False)
class NcclModel:
    """The log tables as DataFrames with a ``file`` column (the input's path), one attribute each."""

    tables: dict[str, pd.DataFrame]

    nccl_connections = _Table()
    nccl_comm_ranks = _Table()
    nccl_versions = _Table()
    nccl_env = _Table()
    nccl_errors = _Table()
    nccl_collectives = _Table()
    watchdog_timeouts = _Table()
    worker_exits = _Table()
    nccl_ras = _Table()
    horovod_stalls = _Table()
    autotune = _Table()

    @property
    def empty(self) -> bool:
        return all(t.empty for t in self.tables.values())

    @cached_property
    def processes(self) -> pd.DataFrame:
        """``nccl_processes`` plus ``ranks``, ``nranks``, ``init_complete``, ``transports``,
        ``net`` (the inter-node network the process used or chose), ``gdrdma`` and ``env`` (the
        ``NCCL_*`` variables it echoed as set by the environment)."""
        p = self.tables["nccl_processes"].copy()
        if p.empty:
            return p.assign(
                ranks=[], nranks=[], init_complete=[], transports=[], net=[], gdrdma=[], ib_disabled=[], env=[]
            )
        cr, conns, env = (_by_process(self.tables[n]) for n in ("nccl_comm_ranks", "nccl_connections", "nccl_env"))
        empty = {n: self.tables[n].iloc[:0] for n in ("nccl_comm_ranks", "nccl_connections", "nccl_env")}
        old = _pre_bootstrap_files(p, self.tables["nccl_versions"])
        rows = []
        for r in p.itertuples(index=False):
            key = _key(r.file, r.host, r.pid)
            mine_cr = cr.get(key, empty["nccl_comm_ranks"])
            mine_conn = conns.get(key, empty["nccl_connections"])
            mine_env = env.get(key, empty["nccl_env"])
            net_conns = mine_conn[mine_conn["kind"] == "NET"] if not mine_conn.empty else mine_conn
            rows.append(
                {
                    "ranks": sorted(set(mine_cr["rank"].astype(int))) if not mine_cr.empty else [],
                    "nranks": sorted(set(mine_cr["nranks"].astype(int))) if not mine_cr.empty else [],
                    "init_complete": bool((mine_cr["phase"] == "COMPLETE").any()) if not mine_cr.empty else False,
                    "transports": sorted(set(mine_conn["detail"])) if not mine_conn.empty else [],
                    "net": _net(r, net_conns, r.file in old),
                    "gdrdma": bool(net_conns["gdr"].any()) if not net_conns.empty else None,
                    "ib_disabled": bool(((mine_env["var"] == "NCCL_IB_DISABLE") & (mine_env["value"] == "1")).any())
                    if not mine_env.empty
                    else False,
                    "env": dict(zip(mine_env["var"], mine_env["value"], strict=True)) if not mine_env.empty else {},
                }
            )
        return pd.concat([p.reset_index(drop=True), pd.DataFrame(rows)], axis=1)

    @cached_property
    def classified_errors(self) -> list[ClassifiedError]:
        """Errors with a class (benign warnings left out), in file order, as the report shows them,
        each with its ``role`` (root cause or consequence) and ``cause`` (:mod:`analyzer.nccl.incidents`)."""
        return self._attributed[0]

    @cached_property
    def incidents(self) -> list[Incident]:
        """The root-cause classes of the run's NCCL errors, each with its roots and consequences."""
        return self._attributed[1]

    @cached_property
    def _attributed(self) -> tuple[list[ClassifiedError], list[Incident]]:
        e = self.tables["nccl_errors"]
        if e.empty:
            return [], []
        e = e[e["class"].notna()]
        rows: list[ClassifiedError] = [
            {
                "class": r.cls,
                "host": r.host if isinstance(r.host, str) else None,
                "pid": opt_int(r.pid),
                "file": r.file,
                "line": int(r.line),
                "level": r.level,
                "src": r.src if isinstance(r.src, str) else None,
                "message": r.message,
                "chain": list(r.chain),
                "result_code": opt_int(r.result_code),
                "time": r.time if isinstance(r.time, str) else None,
                "remediation": r.remediation if isinstance(r.remediation, str) and r.remediation else None,
                "unconfirmed": _flag(getattr(r, "unconfirmed", None)),
                "role": "root",  # until attribute() tells
                "cause": None,
            }
            for r in e.rename(columns={"class": "cls"}).itertuples(index=False)
        ]
        follows = [r.level == "chain" or _flag(r.consequence) for r in e.itertuples(index=False)]
        return rows, attribute(rows, follows)

    @cached_property
    def communicators(self) -> list[Communicator]:
        """One entry per communicator: ranks started, completed, and those that started but
        never completed (with their hosts)."""
        cr = self.tables["nccl_comm_ranks"]
        if cr.empty:
            return []
        cr = cr.assign(key=cr["comm_id"].where(cr["comm_id"].notna(), "nranks=" + cr["nranks"].astype(str)))
        out: list[Communicator] = []
        for key, g in cr.groupby("key", sort=False):
            started = g[g["phase"] == "START"]
            complete = g[g["phase"] == "COMPLETE"]
            done = set(complete["rank"].astype(int))
            stuck = started[~started["rank"].isin(done)].drop_duplicates("rank")
            out.append(
                {
                    "id": str(key),
                    "comm_id": None if g["comm_id"].isna().all() else str(g["comm_id"].iloc[0]),
                    "grouping": "commId" if g["comm_id"].notna().all() else "nranks",
                    "nranks": int(g["nranks"].max()),
                    "ranks_started": sorted(set(started["rank"].astype(int))),
                    "ranks_complete": sorted(done),
                    "ranks_incomplete": [
                        {
                            "rank": int(s.rank),
                            "host": s.host if isinstance(s.host, str) else None,  # NaN: a record without its host
                            "pid": opt_int(s.pid),
                            "file": s.file,
                            "line": int(s.line),
                        }
                        for s in stuck.sort_values("rank").itertuples()
                    ],
                    "hosts": sorted({h for h in g["host"] if isinstance(h, str)}),
                    "files": sorted(set(g["file"])),
                }
            )
        return out


def _key(file: Any, host: Any, pid: Any) -> tuple[str, str, int]:
    return (str(file), host if isinstance(host, str) else "", -1 if pid is None or pd.isna(pid) else int(pid))


def _by_process(df: pd.DataFrame) -> dict[tuple[str, str, int], pd.DataFrame]:
    """Rows per process, grouped once (a job can have thousands of processes)."""
    if df.empty:
        return {}
    keys = [_key(f, h, p) for f, h, p in zip(df["file"], df["host"], df["pid"], strict=True)]
    return {k: g for k, g in df.groupby(pd.Series(keys, index=df.index), sort=False)}


def _pre_bootstrap_files(p: pd.DataFrame, versions: pd.DataFrame) -> set[str]:
    """Files written by NCCL 2.3 - 2.4.7, which print ``NET/Socket : Using`` for the bootstrap
    interface even when the transport is IB (2.4.8 added a separate ``Bootstrap`` line)."""
    old = {f for f, hi in zip(p["file"], p["wording_max"], strict=True) if str(hi).startswith(("2.3.", "2.4."))}
    for f, v in zip(versions["file"], versions["version"], strict=True):
        if (2, 3, 0) <= parse_version(str(v)) < (2, 4, 8):
            old.add(f)
    return old


def _net(r: Any, net_conns: pd.DataFrame, pre_bootstrap: bool) -> str | None:
    """The network of inter-node connections, else what NCCL said it would use."""
    if not net_conns.empty:
        return str(net_conns["net"].value_counts().index[0])
    if isinstance(r.network, str):
        return r.network
    if len(r.ib_hcas) and not r.ib_no_device:
        return "IB"
    if (r.ib_no_device or r.verbs_missing) and not isinstance(r.plugin, str):
        return "Socket"  # no usable IB device and no plugin: NCCL's internal socket transport
    if len(r.socket_interfaces):
        if not isinstance(r.bootstrap_interface, str) and pre_bootstrap:
            return None  # the bootstrap interface, not the transport
        return "Socket"
    return None


def _flag(v: Any) -> bool:
    """A boolean column's value, false where it is null (a store written before the column)."""
    return v is not None and not pd.isna(v) and bool(v)


def opt_int(v: Any) -> int | None:
    """An int, or None for a missing (None / NaN) value."""
    return None if v is None or pd.isna(v) else int(v)


def nccl_model_of(tables: dict[str, pa.Table], paths: dict[str, str]) -> NcclModel:
    """The model of the log tables (:data:`LOG_TABLES`, Arrow, as the store or the parser
    holds them); ``paths`` names each ``input_id``'s file."""
    frames = {}
    for name in LOG_TABLES:
        t = tables[name].to_pandas()
        for col in t.columns:
            if isinstance(t[col].dtype, pd.CategoricalDtype):
                t[col] = t[col].astype(object)
        t.insert(0, "file", t.pop("input_id").map(paths) if len(t) else pd.Series(dtype=object))
        frames[name] = t
    return NcclModel(frames)
