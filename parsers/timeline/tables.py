"""The Arrow tables of a timeline: the pairing kernel's integer rows, named.

:class:`TimelineNames` holds what gives a row its names: the strings interned across the
whole file (event names, dtypes, shapes), the tensor name of every pid from the metadata
records, and the input id. It turns the rows of :mod:`parsers.timeline._pair` into the ``spans``,
``ticks``, ``markers`` and ``tensors`` tables of :mod:`parsers.schema`.

Each tokenizer (the single pass, or one per range of the file) interns strings on its own;
:meth:`TimelineNames.intern` maps a block's ids onto the file's, so rows from ranges
tokenized apart name the same strings with the same ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from parsers import arrow as A
from parsers.schema import arrow_schema
from parsers.timeline import layout as L
from parsers.timeline._state import dict_column

KINDS = ("negotiate", "op", "activity")
_NO_MAP = np.zeros(0, np.int64)
#: :meth:`TimelineNames.intern`'s maps while a tokenizer's string ids are the file's
_SAME_IDS = (_NO_MAP, _NO_MAP, _NO_MAP)
DTYPE_BYTES = {
    "bool": 1,
    "uint8": 1,
    "int8": 1,
    "uint16": 2,
    "int16": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
}


def row_arrays(chunk_bytes: int) -> dict[str, np.ndarray]:
    """Room for the pairer's rows of about ``chunk_bytes`` of input, column-major: the tables copy
    each column out in one contiguous run, and the rows of the next blocks go into the same arrays."""
    ticks = max(1024, chunk_bytes // 64)
    return {
        "spans": np.empty((max(1024, chunk_bytes // 48), L.SP_N), np.int64, order="F"),
        "ticks": np.empty((ticks, L.TK_N), np.int64, order="F"),
        "markers": np.empty((ticks, L.MK_N), np.int64, order="F"),
    }


class TimelineNames:
    """The names of one timeline's rows, and the tables built from them."""

    def __init__(self, input_id: str, columns: Mapping[str, Sequence[str]] | None = None) -> None:
        self.input_id = input_id
        #: of the tables named, only these columns (and ``input_id``) are built; all of the others
        self.columns: Mapping[str, Sequence[str]] = columns or {}
        self._schemas: dict[str, pa.Schema] = {}
        self.strings: tuple[list[str], list[str], list[str]] = ([], [], [])  # by L.CAT_*
        self._index: tuple[dict[str, int], ...] = ({}, {}, {})
        self._local: tuple[list[int], list[int], list[int]] = ([], [], [])  # the current tokenizer's ids -> ours
        self._same_ids = True  # so far the current tokenizer's ids are ours
        self.tensor_names: list[str] = []  # each name once: the tensor columns' dictionary
        self._tensor_index: dict[str, int] = {}
        self.pid_tensor = np.full(1024, -1, np.int32)  # pid -> index in tensor_names, -1: unnamed

    # -- interning ------------------------------------------------------------------------
    def new_tokenizer(self) -> None:
        """The next blocks come from another tokenizer, whose ids start again at 0."""
        for local in self._local:
            local.clear()
        self._same_ids = True

    def intern(self, strings: list[tuple[int, int, str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Take a block's new ``(category, id, text)`` strings. Returns the file's id of each of the
        current tokenizer's string ids, by ``L.CAT_*`` (empty while they are the same): the maps
        the pairing kernel reads the block's rows through. Applying them as it pairs, not in a
        pass of their own over the rows, saved the 1 GB dense timeline's pairing thread 0.15 s."""
        for cat, sid, text in strings:
            local = self._local[cat]
            assert sid == len(local), "kernel interning out of order"
            gid = self._index[cat].get(text)
            if gid is None:
                gid = self._index[cat][text] = len(self.strings[cat])
                self.strings[cat].append(text)
            self._same_ids &= gid == sid
            local.append(gid)
        if self._same_ids:
            return _SAME_IDS
        names, dtypes, shapes = (np.asarray(ids, np.int64) for ids in self._local)
        return names, dtypes, shapes

    def name_pid(self, pid: int, name: str) -> bool:
        """Name ``pid``'s tensor; True if it had another name already."""
        if pid >= len(self.pid_tensor):
            grown = np.full(max(pid + 1, 2 * len(self.pid_tensor)), -1, np.int32)
            grown[: len(self.pid_tensor)] = self.pid_tensor
            self.pid_tensor = grown
        old = self.pid_tensor[pid]
        renamed = bool(old >= 0 and self.tensor_names[old] != name)
        at = self._tensor_index.get(name)
        if at is None:  # metadata repeated (a file pasted twice, a resumed run) names no new tensor
            at = self._tensor_index[name] = len(self.tensor_names)
            self.tensor_names.append(name)
        self.pid_tensor[pid] = at
        return renamed

    # -- tables ---------------------------------------------------------------------------
    def spans(self, a: np.ndarray) -> pa.Table:
        """``spans`` from rows of ``L.SP_*`` columns."""
        # the pairer reuses ``a``: each column is copied (or cast, or computed) out of it once
        end, start = a[:, L.SP_END], a[:, L.SP_START]
        closed = end != -1
        open_ = None if closed.all() else ~closed
        dtype, shape = a[:, L.SP_DTYPE], a[:, L.SP_SHAPE]
        dtypes = self.strings[L.CAT_DTYPE]

        def nbytes() -> pa.Array:
            sizes = np.array([DTYPE_BYTES.get(d, -1) for d in dtypes] + [-1], np.int64)
            numel, size = a[:, L.SP_NUMEL], sizes[dtype]
            return A.ints(numel * size, (numel < 0) | (dtype < 0) | (size < 0))

        return self._table(
            "spans",
            {
                "input_id": lambda: self._input_col(len(a)),
                "span_id": lambda: A.ints(a[:, L.SP_ID].copy()),
                "pid": lambda: A.ints(a[:, L.SP_PID].astype(np.int32)),
                "tensor": lambda: self._tensor_col(a[:, L.SP_PID]),
                "name": lambda: dict_column(a[:, L.SP_NAME], self.strings[L.CAT_NAME]),
                "kind": lambda: dict_column(a[:, L.SP_KIND], list(KINDS)),
                "depth": lambda: A.ints(a[:, L.SP_DEPTH].astype(np.int16)),
                "start_us": lambda: A.ints(start.copy()),
                "end_us": lambda: A.ints(end.copy(), open_),
                "dur_us": lambda: A.ints(end - start, open_),
                "closed": lambda: A.bools(closed),
                "parent_id": lambda: A.nonneg(a[:, L.SP_PARENT].copy()),
                "op_id": lambda: A.nonneg(a[:, L.SP_OP].copy()),
                "dtype": lambda: dict_column(dtype, dtypes),
                "shape": lambda: A.decoded(shape, self.strings[L.CAT_SHAPE], shape < 0),
                "numel": lambda: A.nonneg(a[:, L.SP_NUMEL].copy()),
                "bytes": nbytes,
                "start_offset": lambda: A.ints(a[:, L.SP_SOFF].copy()),
                "end_offset": lambda: A.ints(a[:, L.SP_EOFF].copy(), open_),
            },
        )

    def ticks(self, t: np.ndarray) -> pa.Table:
        """``ticks`` from rows of ``L.TK_*`` columns."""
        # the pairer reuses ``t``: each column is copied (or cast) out of it once
        return self._table(
            "ticks",
            {
                "input_id": lambda: self._input_col(len(t)),
                "pid": lambda: A.ints(t[:, L.TK_PID].astype(np.int32)),
                "tensor": lambda: self._tensor_col(t[:, L.TK_PID]),
                "negotiation_id": lambda: A.nonneg(t[:, L.TK_NEG].copy()),
                "rank": lambda: A.ints(t[:, L.TK_RANK].astype(np.int32)),
                "ts_us": lambda: A.ints(t[:, L.TK_TS].copy()),
                "order": lambda: A.ints(t[:, L.TK_ORDER].astype(np.int32)),
                "offset": lambda: A.ints(t[:, L.TK_OFF].copy()),
            },
        )

    def markers(self, t: np.ndarray) -> pa.Table:
        """``markers`` from rows of ``L.MK_*`` columns."""
        return self._table(
            "markers",
            {
                "input_id": lambda: self._input_col(len(t)),
                "name": lambda: dict_column(t[:, L.MK_NAME], self.strings[L.CAT_NAME]),
                "ts_us": lambda: A.ints(t[:, L.MK_TS].copy()),
                "offset": lambda: A.ints(t[:, L.MK_OFF].copy()),
            },
        )

    def _table(self, name: str, columns: dict[str, Callable[[], pa.Array]]) -> pa.Table:
        """Table ``name`` of the columns its schema (or :attr:`columns`) names, each built only then."""
        schema = self._schemas.get(name)
        if schema is None:  # the first batch of this table
            assert set(columns) == set(arrow_schema(name).names), f"{name}: a column without a builder"
            schema = self._schemas[name] = arrow_schema(name, self.columns.get(name))
        return pa.Table.from_arrays([columns[f.name]() for f in schema], schema=schema)

    def tensors(self, pstat: np.ndarray, n_pids: int) -> pa.Table:
        """One row per pid seen in metadata or events, from the pairer's per-pid ``L.P_*``
        statistics (``n_pids``: how many pids the pairer has room for)."""
        n_pid = max(len(self.pid_tensor), n_pids)
        pids = np.arange(n_pid)
        stat = np.zeros((n_pid, L.P_N), np.int64)
        stat[:, L.P_FIRST_TS] = L.MISSING
        stat[:, L.P_OPNAME] = -1
        stat[: len(pstat)] = pstat
        tix = np.full(n_pid, -1, np.int32)
        tix[: len(self.pid_tensor)] = self.pid_tensor
        seen = (tix >= 0) | (stat[:, L.P_NEG] + stat[:, L.P_OPS] > 0) | (stat[:, L.P_FIRST_TS] != L.MISSING)
        keep = np.flatnonzero(seen)
        names = np.array(self.tensor_names + [None], dtype=object)
        first = stat[keep, L.P_FIRST_TS]
        return pa.Table.from_arrays(
            [
                self._input_col(len(keep)),
                A.ints(pids[keep].astype(np.int32)),
                A.strings(list(names[tix[keep]])),
                dict_column(stat[keep, L.P_OPNAME], self.strings[L.CAT_NAME]),
                A.ints(stat[keep, L.P_NEG]),
                A.ints(stat[keep, L.P_TICKED]),
                A.ints(stat[keep, L.P_OPS]),
                A.ints(first, first == L.MISSING),
            ],
            schema=arrow_schema("tensors"),
        )

    def _input_col(self, n: int) -> pa.Array:
        return A.repeated(self.input_id, n)

    def _tensor_col(self, pids: np.ndarray) -> pa.Array:
        pt = self.pid_tensor
        if not len(pids) or int(pids.max()) < len(pt):  # every pid within the table: one gather
            return dict_column(pt.take(pids), self.tensor_names)
        idx = np.full(len(pids), -1, np.int32)
        ok = pids < len(pt)
        idx[ok] = pt[pids[ok]]
        return dict_column(idx, self.tensor_names)
