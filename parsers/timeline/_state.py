"""Scan state of the timeline kernel, and the catalogue of issues the kernel counts.

``TokenState`` and ``PairState`` own the arrays the two kernels (:mod:`parsers.timeline._tokenize`,
:mod:`parsers.timeline._pair`) read and update between buffers, and grow them when a kernel asks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import orjson
import pyarrow as pa

from parsers import arrow as A
from parsers.errors import InputError
from parsers.issues import IssueSeverity
from parsers.timeline import layout as L

# (issue index in the kernel, severity, code, message)
KERNEL_ISSUES = (
    (
        L.I_ORPHAN_E,
        IssueSeverity.DATA_LOSS,
        "timeline.orphan_end",
        "E event with no open B on its pid (its B was lost or written to an earlier file); dropped",
    ),
    (
        L.I_NEG_IN_OP,
        IssueSeverity.INFO,
        "timeline.negotiate_inside_op",
        "NEGOTIATE_* began while an op was still open on the same pid (Horovod #316); "
        "E events are anonymous, so LIFO pairing may swap the two spans' ends",
    ),
    (
        L.I_TICK_OUTSIDE,
        IssueSeverity.INFO,
        "timeline.tick_outside_negotiation",
        "rank tick with no open NEGOTIATE_* span on its pid; kept with a null negotiation_id",
    ),
    (
        L.I_UNESCAPED,
        IssueSeverity.INFO,
        "timeline.unescaped_quote",
        "string with an unescaped '\"' (Horovod does not escape tensor names); read tolerantly",
    ),
    (
        L.I_FLOAT_TS,
        IssueSeverity.INFO,
        "timeline.float_ts",
        "non-integer ts (Horovod writes integers); rounded to the microsecond",
    ),
    (
        L.I_UNKNOWN_KEY,
        IssueSeverity.INFO,
        "timeline.unknown_key",
        "record with a key Horovod does not write; the key was ignored",
    ),
    (
        L.I_TS_BACK,
        IssueSeverity.INFO,
        "timeline.ts_not_monotonic",
        "ts smaller than the previous record's (Horovod's ts never decreases in file order)",
    ),
    (
        L.I_UNKNOWN_PH,
        IssueSeverity.DATA_LOSS,
        "timeline.unknown_phase",
        "record with a phase Horovod does not write (only M, B, E, X, i); dropped",
    ),
    (
        L.I_FOREIGN_PH,
        IssueSeverity.INFO,
        "timeline.foreign_event",
        "trace events of kinds Horovod does not write (counters, async, flow), e.g. added by another tool "
        "or by `hvd-analyze slice`; skipped",
    ),
    (
        L.I_BAD_RECORD,
        IssueSeverity.DATA_LOSS,
        "timeline.bad_record",
        "record without the fields its phase needs (ph, ts, pid, name); dropped",
    ),
    (
        L.I_X_NOT_RANK,
        IssueSeverity.DATA_LOSS,
        "timeline.tick_not_rank",
        "X event whose name is not a rank number; dropped",
    ),
    (
        L.I_E_NAMED,
        IssueSeverity.INFO,
        "timeline.named_end",
        "E events carry a name (Horovod 0.9.2 writer); pairing still uses the pid stack",
    ),
)


@dataclass(slots=True)
class TokenState:
    """What :func:`parsers.timeline._tokenize.tokenize` keeps between buffers of one input or range."""

    ctr: np.ndarray
    iss: np.ndarray
    ikeys: np.ndarray
    ivals: np.ndarray

    @classmethod
    def new(cls, after: bool = False) -> TokenState:
        ctr = np.zeros(L.T_NCTR, np.int64)
        ctr[L.T_LAST_TS] = np.iinfo(np.int64).min
        ctr[L.T_FIRST_OFF] = -1
        ctr[L.T_AFTER] = int(after)
        return cls(ctr=ctr, iss=new_issues(), ikeys=np.zeros((3, 1024), np.uint64), ivals=np.zeros((3, 1024), np.int64))

    def grow_intern(self) -> None:
        cap = 2 * self.ikeys.shape[1]
        keys = np.zeros((3, cap), np.uint64)
        vals = np.zeros((3, cap), np.int64)
        mask = np.uint64(cap - 1)
        for cat in range(3):
            for h, v in zip(self.ikeys[cat], self.ivals[cat], strict=True):
                if h == 0:
                    continue
                k = int(h & mask)
                while keys[cat, k] != 0:
                    k = (k + 1) & (cap - 1)
                keys[cat, k] = h
                vals[cat, k] = v
        self.ikeys, self.ivals = keys, vals


@dataclass(slots=True)
class PairState:
    """What :func:`parsers.timeline._pair.pair` keeps between blocks: counters, issue counts, per-pid
    stacks and statistics, the open-span slot pool."""

    ctr: np.ndarray
    iss: np.ndarray
    top: np.ndarray
    pstat: np.ndarray
    slots: np.ndarray

    @classmethod
    def new(cls) -> PairState:
        ctr = np.zeros(L.C_NCTR, np.int64)
        ctr[L.C_FREE] = -1
        return cls(
            ctr=ctr,
            iss=new_issues(),
            top=np.full(1024, -1, np.int64),
            pstat=new_pstat(1024),
            slots=np.zeros((4096, L.S_N), np.int64),
        )

    def grow(self, name: str, offset: int) -> None:
        """Make room for what the kernel asked; ``offset``: the byte of the record that did not fit.

        Raises:
            InputError: a pid larger than the file can hold (the arrays are indexed by pid).
        """
        need = int(self.ctr[L.C_NEED])
        if need == 1:
            pid = int(self.ctr[L.C_NEED_PID])
            if pid > MAX_PID_BASE + offset // 16:
                raise InputError(
                    name,
                    f"pid {pid}: Horovod numbers a timeline's tensors from 1, and the file up to here could hold "
                    f"at most {MAX_PID_BASE + offset // 16} of them",
                    offset=offset,
                    hint="the file is damaged there, or it is not a Horovod timeline",
                )
            size = max(pid + 1, 2 * len(self.top))
            top = np.full(size, -1, np.int64)
            top[: len(self.top)] = self.top
            pstat = new_pstat(size)
            pstat[: len(self.pstat)] = self.pstat
            self.top, self.pstat = top, pstat
        elif need == 2:
            slots = np.zeros((2 * len(self.slots), L.S_N), np.int64)
            slots[: len(self.slots)] = self.slots
            self.slots = slots
        else:  # pragma: no cover - kernel contract
            raise AssertionError(f"kernel asked to grow unknown state {need}")
        self.ctr[L.C_NEED] = 0


#: pids beyond this plus one per 16 bytes read are refused: a record is longer than 16 bytes, and a
#: timeline's pids are its tensors, numbered from 1 (a flipped byte must not size arrays to gigabytes)
MAX_PID_BASE = 1 << 16


def new_issues() -> np.ndarray:
    return np.zeros((L.I_NISS, 2), np.int64)


def add_issues(into: np.ndarray, more: np.ndarray) -> None:
    """Add the issue counts ``more`` (read after ``into``'s) to ``into``: counts add up, the
    first offset stays the earliest one."""
    first = (into[:, 0] == 0) & (more[:, 0] > 0)
    into[first, 1] = more[first, 1]
    into[:, 0] += more[:, 0]


def new_pstat(n: int) -> np.ndarray:
    p = np.zeros((n, L.P_N), np.int64)
    p[:, L.P_FIRST_TS] = L.MISSING
    p[:, L.P_OPNAME] = -1
    return p


def dict_column(indices: np.ndarray, values: list[str]) -> pa.DictionaryArray:
    """Dictionary column from int indices; negative indices are null."""
    idx = np.asarray(indices)
    if not len(idx) or int(idx.min()) >= 0:  # no nulls: no mask to make and count
        return A.dictionary(idx, values if values else [""])
    mask = idx < 0
    return A.dictionary(np.where(mask, 0, idx), values if values else [""], mask)


def decode_str(raw: bytes) -> str:
    if b"\\" in raw:
        try:
            return str(orjson.loads(b'"' + raw + b'"'))
        except orjson.JSONDecodeError:
            pass
    return raw.decode("utf-8", "replace")
