"""Arrow arrays built from numpy buffers, without ``pa.array``.

``pa.array`` first asks pandas whether its input is a pandas object, which imports pandas (0.17 s)
in processes that never use it: ``ingest`` of a timeline. These build the same arrays from the
buffers (zero-copy for numeric columns): the parsers' tables are made with them.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import repeat
from typing import Any, cast

import numpy as np
import pyarrow as pa


def _validity(mask: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    if mask is None:
        return None, 0
    m = np.asarray(mask, dtype=np.bool_)
    nulls = int(m.sum())
    if not nulls:
        return None, 0
    return pa.py_buffer(np.packbits(~m, bitorder="little")), nulls


def ints(
    values: np.ndarray, mask: np.ndarray | None = None, type: pa.DataType | None = None
) -> pa.Array:  # pyarrow's own name
    """A numeric array of ``values`` (its dtype, or ``type``), null where ``mask`` is true."""
    arr = np.ascontiguousarray(values)
    if arr.dtype == np.bool_:
        return bools(arr, mask)
    own = pa.from_numpy_dtype(arr.dtype)
    validity, nulls = _validity(mask)
    out = pa.Array.from_buffers(own, len(arr), [validity, pa.py_buffer(arr)], null_count=nulls)
    return out if type is None or type == own else out.cast(type)


def nonneg(values: np.ndarray) -> pa.Array:
    """:func:`ints` of ``values``, null where negative: the mask is only made when some are (one
    ``min`` over a column without nulls, instead of a mask, its count and a copy)."""
    arr = np.ascontiguousarray(values)
    return ints(arr, arr < 0 if len(arr) and int(arr.min()) < 0 else None)


def bools(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    arr = np.asarray(values, dtype=np.bool_)
    validity, nulls = _validity(mask)
    data = pa.py_buffer(np.packbits(arr, bitorder="little"))
    return pa.Array.from_buffers(pa.bool_(), len(arr), [validity, data], null_count=nulls)


#: a column of more text than this whose values mostly repeat (an error's remediation, its class) is joined from
#: one encoding of each distinct value: joining the text and encoding the join held two copies of it (70 MB for
#: the ``nccl_errors`` of 1 GB of real log lines)
REPEATED_TEXT = 4 << 20


def strings(values: Sequence[str | None]) -> pa.Array:
    """A string array of ``values`` (None: null). Text that is all ASCII (nearly every log's) is joined and
    measured by C loops (``str.join``, ``map(len, …)``): no Python step per value. Much text of few distinct
    values: :data:`REPEATED_TEXT`."""
    n = len(values)
    mask = np.fromiter(map(operator.is_, values, repeat(None)), np.bool_, n)
    nulls = bool(mask.any())
    offsets = np.zeros(n + 1, np.int32)
    big = n > 1024 and sum(map(len, filter(None, values))) > REPEATED_TEXT
    raw = _shared_encodings(values) if big else None
    if raw is None:
        joined = "".join(filter(None, values))
        if joined.isascii():
            data = joined.encode("ascii")
            sizes = (0 if v is None else len(v) for v in values) if nulls else map(len, cast(Sequence[str], values))
            np.cumsum(np.fromiter(sizes, np.int32, n), out=offsets[1:])
        else:
            raw = [b"" if v is None else v.encode() for v in values]
    if raw is not None:
        data = b"".join(raw)
        np.cumsum(np.fromiter(map(len, raw), np.int32, n), out=offsets[1:])
    validity, null_count = _validity(mask if nulls else None)
    buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), n, buffers, null_count=null_count)


def _shared_encodings(values: Sequence[str | None]) -> list[bytes] | None:
    """``values``' UTF-8, one encoding of each distinct value that every row holding it refers to (the join is then
    the one copy), when the distinct ones are at most a quarter of them (else None)."""
    distinct = dict.fromkeys(values)
    if len(distinct) * 4 > len(values):
        return None
    encoded = {v: b"" if v is None else v.encode() for v in distinct}
    return list(map(encoded.__getitem__, values))


def dictionary(indices: np.ndarray, words: Sequence[str], mask: np.ndarray | None = None) -> pa.DictionaryArray:
    """A dictionary array: ``indices`` (int32) into ``words``, null where ``mask`` is true. The indices
    are checked with one numpy max (Arrow's own check scans in a slow loop: 0.23 s per 2 M rows)."""
    idx = np.ascontiguousarray(indices, dtype=np.int32)
    if len(idx) and (int(idx.max()) >= len(words) or int(idx.min()) < 0):
        raise ValueError(f"dictionary index out of range 0..{len(words) - 1}")
    return pa.DictionaryArray.from_arrays(ints(idx, mask), strings(words), safe=False)


_ZEROS = np.zeros(0, np.int32)


def repeated(word: str, n: int) -> pa.DictionaryArray:
    """``word`` ``n`` times, as a dictionary column (an input's id on each of its rows): slices of
    one array of zeros shared by every such column. Nothing writes it, so its pages stay the
    kernel's zero page; a fresh ``np.zeros`` per batch was memory written with zeros (glibc's
    calloc clears reused heap memory): 54 MB for the ticks of a 1 GB timeline."""
    global _ZEROS  # a cache; a race only makes an array that is not kept
    zeros = _ZEROS
    if len(zeros) < n:
        zeros = _ZEROS = np.zeros(max(n, 2 * len(zeros)), np.int32)
    return dictionary(zeros[:n], [word])


def decoded(indices: np.ndarray, words: Sequence[str], mask: np.ndarray | None = None) -> pa.Array:
    """The string array ``words[indices]``, null where ``mask`` is true: what decoding a dictionary
    column gives, without Arrow's compute functions (whose module takes 40 ms to import)."""
    raw = [w.encode() for w in words] + [b""]
    idx = np.asarray(indices, np.int64)
    if mask is not None:
        idx = np.where(mask, len(words), idx)
    sizes = np.array([len(r) for r in raw], np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    lens = sizes[idx]
    offsets = np.zeros(len(idx) + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    # byte k of the output comes from byte k - offsets[row] of the row's word
    pos = np.arange(offsets[-1]) + np.repeat(starts[idx] - offsets[:-1], lens)
    data = np.frombuffer(b"".join(raw), np.uint8)[pos] if len(pos) else np.zeros(0, np.uint8)
    validity, nulls = _validity(mask)
    buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.string(), len(idx), buffers, null_count=nulls)


def encoded(values: Sequence[str]) -> pa.DictionaryArray:
    """``values`` as a dictionary array (the words in order of first use), without Arrow's
    compute functions."""
    words = list(dict.fromkeys(values))
    at = {w: k for k, w in enumerate(words)}
    return dictionary(np.fromiter((at[v] for v in values), np.int32, len(values)), words)


def column(values: Sequence[Any], type: pa.DataType) -> pa.Array:  # pyarrow's own name
    """``values`` (Python objects, None: null) as an array of ``type``: a number, a bool, a string or a list of
    them (the types of the log parsers' tables), what ``pa.array(values, type)`` gives."""
    n = len(values)
    if pa.types.is_string(type):
        return strings(values)
    if pa.types.is_list(type):
        nulls = np.fromiter(map(operator.is_, values, repeat(None)), np.bool_, n)
        offsets = np.zeros(n + 1, np.int32)
        sizes = (0 if v is None else len(v) for v in values) if nulls.any() else map(len, values)
        np.cumsum(np.fromiter(sizes, np.int32, n), out=offsets[1:])
        child = column([x for v in values if v is not None for x in v], type.value_type)
        validity, null_count = _validity(nulls)
        return pa.Array.from_buffers(type, n, [validity, pa.py_buffer(offsets)], null_count, children=[child])
    mask = np.fromiter(map(operator.is_, values, repeat(None)), np.bool_, n)
    dtype = type.to_pandas_dtype()
    data = np.fromiter((False if v is None else v for v in values) if mask.any() else values, dtype, n)
    return bools(data, mask) if pa.types.is_boolean(type) else ints(data, mask)
