"""Fused batches (Horovod responses) of one timeline, and the fusion threshold they imply.

A fused batch has no id in the file: every member tensor gets its own copy of the op and
activity records, written back to back. :func:`find_batches` groups ops whose B records
come before the batch began executing (see :func:`analyzer.timeline._kernels.group_batches`).
:func:`estimate_threshold` brackets ``HOROVOD_FUSION_THRESHOLD``: it is at least the
largest fused batch, and below ``A + t`` whenever a ready tensor ``t`` of the same type
and dtype ran in the batch after ``A`` instead of joining it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzer.timeline._kernels import NO_LIMIT, group_batches, min_by_key

MAX_SPREAD_US = 50_000  # op B records of one response are written within microseconds
BATCH_COLUMNS = (
    "batch",
    "step",
    "name",
    "dtype",
    "start_us",
    "end_us",
    "dur_us",
    "tensors",
    "bytes",
    "min_member_bytes",
    "ready_us",
    "first_ready_us",
    "dispatch_us",
)


#: what :func:`find_batches` reads of an op
_OP_COLUMNS = [
    "span_id",
    "pid",
    "name",
    "dtype",
    "step",
    "start_us",
    "end_us",
    "closed",
    "bytes",
    "start_offset",
    "end_offset",
]


def find_batches(spans: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Batch id of every span (ops and their activities; -1 otherwise), the ready time of
    every op (its negotiation's end; NaN for other spans) and the batch table.

    ``spans`` must carry ``step``. Batch columns: :data:`BATCH_COLUMNS`; ``ready_us`` is
    when the last member's negotiation ended (all ranks ready), ``dispatch_us`` the wait
    from then to the batch's start (up to one cycle is normal).
    """
    batch_of = np.full(len(spans), -1, np.int64)
    ready_of = np.full(len(spans), np.nan)
    kind = spans["kind"]
    # only the columns used: a row filter of the whole frame copies every column (0.25 s per GB)
    is_op = (kind == "op").to_numpy()
    ops = spans.loc[is_op, _OP_COLUMNS]
    pos = np.flatnonzero(is_op)  # positions in spans, whatever its index
    if ops.empty:
        return batch_of, ready_of, pd.DataFrame({c: pd.Series(dtype="int64") for c in BATCH_COLUMNS})
    start_off = ops["start_offset"].to_numpy()
    if not (start_off[1:] >= start_off[:-1]).all():  # the parser writes them in this order: sort otherwise
        order = np.argsort(start_off, kind="stable")
        ops, pos = ops.iloc[order], pos[order]
    is_act = (kind == "activity").to_numpy()
    # per span id (arrays, not a group-by nor a frame's row filter: ~1 M activities per GB of
    # timeline): an op's first activity's offset, and later an activity's batch through its op
    op_of = _ids(spans["op_id"], is_act)
    ids_top = int(spans["span_id"].max()) + 1
    has_op = (op_of >= 0) & (op_of < ids_top)
    first_child = min_by_key(op_of, spans["start_offset"].to_numpy()[is_act], ids_top)
    end = ops["end_offset"].to_numpy(dtype=float, na_value=np.inf)
    ended = ops["closed"].to_numpy() & np.isfinite(end)
    end_off = np.full(len(ops), NO_LIMIT, np.int64)
    end_off[ended] = end[ended].astype(np.int64)
    exec_off = np.minimum(first_child[ops["span_id"].to_numpy()], end_off)
    names = ops["name"].astype("category").cat.codes  # typed_spans' codes: only equality matters
    ids = group_batches(
        names.to_numpy(np.int64),
        ops["start_us"].to_numpy(),
        ops["start_offset"].to_numpy(),
        exec_off,
        MAX_SPREAD_US,
    )
    batch_by_span = np.full(ids_top, -1, np.int64)
    batch_by_span[ops["span_id"].to_numpy()] = ids
    batch_of[pos] = ids
    batch_of[np.flatnonzero(is_act)[has_op]] = batch_by_span[op_of[has_op]]

    ops = ops.assign(batch=ids, ready_us=_ready_times(spans, ops))
    ready_of[pos] = ops["ready_us"].to_numpy()
    end = ops["end_us"].where(ops["closed"])
    g = ops.assign(end_us=end).groupby("batch", sort=True)
    table = pd.DataFrame(
        {
            "batch": g.size().index.to_numpy(),
            "step": g["step"].first().to_numpy(),
            "name": g["name"].first().astype(str).to_numpy(),
            "dtype": g["dtype"].first().astype("object").to_numpy(),
            "start_us": g["start_us"].min().to_numpy(),
            "end_us": g["end_us"].max().where(g["end_us"].count() == g.size()).astype("Int64").to_numpy(),
            "tensors": g.size().to_numpy(),
            "bytes": g["bytes"].sum(min_count=1).where(g["bytes"].count() == g.size()).astype("Int64").to_numpy(),
            "min_member_bytes": g["bytes"].min().astype("Int64").to_numpy(),
            "ready_us": g["ready_us"].max().astype("Int64").to_numpy(),
            "first_ready_us": g["ready_us"].min().astype("Int64").to_numpy(),
        }
    )
    table["end_us"] = table["end_us"].astype("Int64")
    table["dur_us"] = table["end_us"] - table["start_us"]
    table["dispatch_us"] = table["start_us"] - table["ready_us"]
    return batch_of, ready_of, table[list(BATCH_COLUMNS)]


def _ids(col: pd.Series, rows: np.ndarray) -> np.ndarray:
    """The span ids in ``col`` (nullable: NaN or NA) of the ``rows`` (a mask), -1 where null."""
    if col.dtype.kind == "f":  # nulls read back from Arrow as NaN: select, then fill (no copy of the column)
        picked: np.ndarray = col.to_numpy()[rows]
        return np.where(np.isnan(picked), -1, picked).astype(np.int64)
    ids: np.ndarray = col.to_numpy(dtype=np.float64, na_value=-1)[rows].astype(np.int64)
    return ids


def _ready_times(spans: pd.DataFrame, ops: pd.DataFrame) -> np.ndarray:
    """End of the same pid's last negotiation before each op (null when there is none)."""
    negs = spans.loc[((spans["kind"] == "negotiate") & spans["closed"]).to_numpy(), ["pid", "end_us"]]
    if negs.empty:
        return np.full(len(ops), np.nan)
    left = pd.DataFrame({"pid": ops["pid"].to_numpy(), "t": ops["start_us"].to_numpy(), "i": np.arange(len(ops))})
    right = negs.rename(columns={"end_us": "t"}).assign(ready=lambda d: d["t"]).sort_values("t")
    merged = pd.merge_asof(left.sort_values("t"), right, on="t", by="pid", direction="backward")
    ready: np.ndarray = merged.sort_values("i")["ready"].to_numpy(dtype=float)
    return ready


@dataclass(frozen=True, slots=True)
class FusionEstimate:
    """What the batches say about fusion. Bytes are ``None`` when not inferable."""

    batches: int
    fused_batches: int  # batches of >= 2 tensors
    singleton_batches: int
    lower_bytes: int | None  # threshold >= the largest fused batch
    upper_bytes: int | None  # threshold < a batch plus a ready tensor that did not join it
    upper_evidence: tuple[int, int] | None  # (batch, next batch) that set upper_bytes

    def text(self) -> str:
        lo = f">= {self.lower_bytes:,} B" if self.lower_bytes is not None else ""
        hi = f"< {self.upper_bytes:,} B" if self.upper_bytes is not None else ""
        if (
            lo
            and hi
            and self.upper_bytes is not None
            and self.lower_bytes is not None
            and self.upper_bytes <= self.lower_bytes
        ):
            return f"about {self.lower_bytes:,} B (the bounds conflict: autotune or several thresholds?)"
        return " and ".join(x for x in (lo, hi) if x) or "not inferable"


def estimate_threshold(batches: pd.DataFrame) -> FusionEstimate:
    """Bracket the fusion threshold from ``batches`` (pass the steady steps' ones: warm-up is
    not representative, e.g. everything is ready at once after INIT_NCCL)."""
    b = batches[batches["step"] >= 0]
    fused = b[b["tensors"] >= 2]
    lower = int(fused["bytes"].max()) if fused["bytes"].notna().any() else None
    upper: int | None = None
    evidence: tuple[int, int] | None = None
    s = b.sort_values("start_us")
    nxt = s.shift(-1)
    pair = (
        (s["step"] == nxt["step"])
        & (s["name"] == nxt["name"])
        & (s["dtype"] == nxt["dtype"])
        & s["bytes"].notna()
        & nxt["min_member_bytes"].notna()
        & (nxt["first_ready_us"] <= s["start_us"])  # the next batch's first tensor was ready in time
    )
    if pair.any():
        cand = (s["bytes"] + nxt["min_member_bytes"])[pair]
        i = cand.astype("int64").idxmin()
        upper = int(cand[i])
        evidence = (int(s.loc[i, "batch"]), int(nxt.loc[i, "batch"]))
    return FusionEstimate(len(b), len(fused), int((b["tensors"] == 1).sum()), lower, upper, evidence)
