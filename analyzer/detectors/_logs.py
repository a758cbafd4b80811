"""Small helpers shared by the log detectors: naming processes, sources, host lists."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from analyzer.findings import SourceRef

#: Bootstrap/OOB interface names of InfiniBand (IPoIB) ports: ib0, ibp12s0, ibs3, ibP257s...
IB_INTERFACE = re.compile(r"^ib[a-zA-Z]?\d|^ib\d")


def who(host: Any, pid: Any) -> str:
    """``host:pid`` (``?`` for a stripped prefix)."""
    h = host if isinstance(host, str) else "?"
    return h if pid is None or pd.isna(pid) else f"{h}:{int(pid)}"


def src(file: Any, line: Any) -> SourceRef:
    return SourceRef(file=str(file), line=int(line))


def hosts(df: pd.DataFrame) -> tuple[str, ...]:
    return tuple(sorted({h for h in df["host"] if isinstance(h, str)}))


def abnormal_exits(w: pd.DataFrame) -> pd.DataFrame:
    """The launcher-reported worker ends that are abnormal: by a signal, or with a non-zero exit code."""
    return w[w["signal"].notna() | (w["exit_code"].fillna(0) != 0)]


def listed(items: list[str], limit: int = 8) -> str:
    """``a, b, c`` or ``a, b, ... (+N more)``."""
    items = list(items)
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f", ... (+{len(items) - limit} more)"


def seq_said(seq: float | None) -> str:
    """`` SeqNum N`` of a watchdog timeout (a table's number: NaN where null), or nothing where its PyTorch (1.8-1.10)
    printed none."""
    return "" if seq is None or seq != seq else f" SeqNum {int(seq)}"
