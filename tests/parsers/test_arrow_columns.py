"""The parsers' Arrow columns built from buffers (:mod:`parsers.arrow`) equal what ``pa.array``
makes of the same values: every dtype the tables use, with and without nulls."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from parsers import arrow as A


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("with_nulls", [False, True])
def test_numeric_columns_equal_pa_array(dtype: type, with_nulls: bool) -> None:
    values = (np.arange(-5, 70) * 7919 % 1000).astype(dtype)
    mask = (np.arange(len(values)) % 3 == 0) if with_nulls else None
    assert A.ints(values, mask).equals(pa.array(values, mask=mask))


@pytest.mark.parametrize("values", [[3, 0, 7], [3, -1, 7, -5], [], [-1]])
def test_negative_values_are_nulls(values: list[int]) -> None:
    arr = np.array(values, np.int64)
    got = A.nonneg(arr)
    assert got.equals(pa.array(arr, mask=arr < 0, type=pa.int64()))
    assert got.null_count == int((arr < 0).sum())
    assert (got.buffers()[0] is None) == (got.null_count == 0)  # no validity bitmap without nulls


@pytest.mark.parametrize("indices", [[2, 0, 1, 1], [2, -1, 0, -1], []])
def test_dictionary_columns_from_indices_with_and_without_nulls(indices: list[int]) -> None:
    from parsers.timeline._state import dict_column

    idx = np.array(indices, np.int64)
    got = dict_column(idx, ["a", "b", "c"])
    want = pa.DictionaryArray.from_arrays(
        pa.array(np.where(idx < 0, 0, idx).astype(np.int32), mask=idx < 0, type=pa.int32()), pa.array(["a", "b", "c"])
    )
    assert got.equals(want)


def test_a_requested_type_casts() -> None:
    values = np.arange(10, dtype=np.int32)
    assert A.ints(values, type=pa.int64()).equals(pa.array(values, type=pa.int64()))


def test_strings_with_nulls_and_unicode() -> None:
    words = ["allreduce.fc1.weight", "", None, "grad \u00e9\u4e2d", "x" * 1000]
    assert A.strings(words).equals(pa.array(words, pa.string()))
    assert A.strings([]).equals(pa.array([], pa.string()))


def test_dictionary_columns_and_their_index_check() -> None:
    idx = np.array([0, 2, 1, 0])
    mask = np.array([False, False, True, False])
    got = A.dictionary(idx, ["a", "b", "c"], mask)
    want = pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32), mask=mask), pa.array(["a", "b", "c"]))
    assert got.equals(want)
    with pytest.raises(ValueError, match="out of range"):
        A.dictionary(np.array([0, 3]), ["a", "b", "c"])


@pytest.mark.parametrize("with_nulls", [False, True])
def test_decoded_strings_equal_arrow_decoding(with_nulls: bool) -> None:
    words = ["[1024, 1024]", "", "grad \u00e9\u4e2d", "[]"]
    idx = np.arange(40) * 7 % len(words)
    mask = (np.arange(40) % 5 == 0) if with_nulls else None
    want = pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32), mask=mask), pa.array(words))
    assert A.decoded(idx, words, mask).equals(want.dictionary_decode())
    assert A.decoded(np.array([-1, -1]), [], np.array([True, True])).to_pylist() == [None, None]
    assert A.decoded(np.zeros(0, np.int64), words).equals(pa.array([], pa.string()))


def test_encoded_strings_equal_arrow_encoding() -> None:
    values = ["warning", "info", "warning", "data_loss", "info"]
    assert A.encoded(values).equals(pa.array(values).dictionary_encode())
    assert A.encoded([]).to_pylist() == []


@pytest.mark.parametrize(
    ("values", "type"),
    [
        ([1, None, 3], pa.int32()),
        ([1, 2**40, None], pa.int64()),
        ([4, 5], pa.int32()),
        ([None], pa.int32()),
        ([True, None, False], pa.bool_()),
        ([1.5, None, -2.0], pa.float64()),
        (["a", None, "é"], pa.string()),  # not ASCII: each value encoded
        (["a", "", "bc"], pa.string()),
        ([None, None], pa.string()),
        ([], pa.string()),
        ([["a", "b"], None, []], pa.list_(pa.string())),
        ([["é"], []], pa.list_(pa.string())),
        ([[1, 2], [], None, [3]], pa.list_(pa.int32())),
        ([], pa.list_(pa.int32())),
    ],
)
def test_a_column_of_python_values_equals_pa_array(values: list[object], type: pa.DataType) -> None:
    got = A.column(values, type)
    got.validate(full=True)
    assert got.equals(pa.array(values, type))


@pytest.mark.parametrize("with_nulls", [False, True])
def test_much_repeated_text_equals_pa_array(with_nulls: bool) -> None:
    """A column of more than :data:`~parsers.arrow.REPEATED_TEXT` of few distinct values (an error's remediation
    on every row) is joined from one encoding of each: the same array, nulls and text other than ASCII kept."""
    words = ["fix the fabric " * 40, "ré-essayer " * 30, "", "x"] + ([None] if with_nulls else [])
    values = [words[(k * 7) % len(words)] for k in range(30_000)]
    assert sum(len(v) for v in values if v) > A.REPEATED_TEXT  # the path under test is taken
    got = A.strings(values)
    assert got.equals(pa.array(values, pa.string()))
    assert got.null_count == (values.count(None))


def test_repeated_text_is_joined_from_one_encoding_of_each_value() -> None:
    """The repeated path holds references to one encoding of each distinct value; values mostly distinct are left
    to the plain path (None)."""
    repeated = ["a" * 1000, "b" * 1000] * 600
    got = A._shared_encodings(repeated)
    assert got is not None and got == [v.encode() for v in repeated]
    assert len({id(b) for b in got}) == 2  # each row refers to its value's one encoding
    assert A._shared_encodings([str(k) * 50 for k in range(2000)]) is None
