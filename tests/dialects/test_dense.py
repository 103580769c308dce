"""Builtin element types and dense attributes <-> numpy (dialects/dense.py)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import (
    Builtin,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.parser import Parser

from dialects.dense import (
    builtin_element_type,
    dense_to_numpy,
    element_type_name,
    numpy_dtype,
    numpy_to_dense,
)
from dialects.element_types import ELEMENT_DTYPES


def parse(text: str) -> DenseIntOrFPElementsAttr:
    ctx = Context()
    ctx.load_dialect(Builtin)
    attr = Parser(ctx, text).parse_attribute()
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    return attr


@pytest.mark.parametrize("name", sorted(ELEMENT_DTYPES))
def test_every_element_type_round_trips(name: str) -> None:
    dtype = ELEMENT_DTYPES[name]
    t = builtin_element_type(dtype)
    assert element_type_name(t) == name
    assert numpy_dtype(t) == dtype
    assert builtin_element_type(numpy_dtype(t)) == t


def test_builtin_types() -> None:
    assert builtin_element_type(np.float32) == f32
    assert builtin_element_type(np.float64) == f64
    assert builtin_element_type(np.int64) == i64
    assert builtin_element_type(np.bool_) == i1
    assert builtin_element_type(np.dtype(">f4")) == f32  # any byte order
    # the signedness of an integer type does not change its buffers
    assert numpy_dtype(IntegerType(8, Signedness.UNSIGNED)) == np.int8
    for bad in (f16, IndexType()):
        with pytest.raises(ValueError, match="no numpy dtype"):
            numpy_dtype(bad)
    with pytest.raises(ValueError):
        builtin_element_type(np.complex64)


@pytest.mark.parametrize("name", sorted(ELEMENT_DTYPES))
def test_every_dtype_round_trips_through_a_dense_attribute(name: str) -> None:
    dtype = ELEMENT_DTYPES[name]
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((2, 3, 4)) * 50).astype(dtype)
    attr = numpy_to_dense(a)
    assert attr.type == TensorType(builtin_element_type(dtype), [2, 3, 4])
    b = dense_to_numpy(attr)
    assert b.dtype == dtype and b.shape == a.shape
    np.testing.assert_array_equal(b, a)
    attr.verify()


def test_values_agree_with_xdsl() -> None:
    """The bytes are xDSL's own encoding: the same attribute as from_list, the same values."""
    t = TensorType(i64, [3])
    assert numpy_to_dense(np.array([1, -2, 2**40])) == DenseIntOrFPElementsAttr.from_list(
        t, [1, -2, 2**40]
    )
    attr = numpy_to_dense(np.array([0.5, -1.25], dtype=np.float32))
    assert attr.get_values() == (0.5, -1.25)
    assert attr == DenseIntOrFPElementsAttr.from_list(TensorType(f32, [2]), [0.5, -1.25])


def test_int64_keeps_large_values() -> None:
    a = np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max], dtype=np.int64)
    np.testing.assert_array_equal(dense_to_numpy(numpy_to_dense(a)), a)
    parsed = dense_to_numpy(parse("dense<[-9223372036854775808, 7]> : tensor<2xi64>"))
    assert parsed.dtype == np.int64
    np.testing.assert_array_equal(parsed, [np.iinfo(np.int64).min, 7])


def test_bool() -> None:
    a = np.array([[True, False], [False, True]])
    attr = numpy_to_dense(a)
    assert attr.type == TensorType(i1, [2, 2])
    # true is written as xDSL writes it, so the attributes compare equal
    assert attr == DenseIntOrFPElementsAttr.from_list(TensorType(i1, [2, 2]), [1, 0, 0, 1])
    assert attr == parse("dense<[[true, false], [false, true]]> : tensor<2x2xi1>")
    b = dense_to_numpy(attr)
    assert b.dtype == np.bool_
    np.testing.assert_array_equal(b, a)
    assert b.view(np.uint8).tolist() == [[1, 0], [0, 1]]  # a proper bool array, 0 or 1
    # any non-zero byte is true
    raw = DenseIntOrFPElementsAttr(TensorType(i1, [3]), BytesAttr(b"\x01\x00\x7f"))
    np.testing.assert_array_equal(dense_to_numpy(raw), [True, False, True])


def test_splat_constants_expand_to_their_shape() -> None:
    one = DenseIntOrFPElementsAttr(TensorType(f32, [2, 3]), BytesAttr(np.float32(2.0).tobytes()))
    np.testing.assert_array_equal(dense_to_numpy(one), np.full((2, 3), 2.0, np.float32))
    ints = DenseIntOrFPElementsAttr(TensorType(i64, [4]), BytesAttr(np.int64(-3).tobytes()))
    np.testing.assert_array_equal(dense_to_numpy(ints), [-3, -3, -3, -3])
    np.testing.assert_array_equal(
        dense_to_numpy(parse("dense<true> : tensor<3xi1>")), [True, True, True]
    )
    np.testing.assert_array_equal(
        dense_to_numpy(parse("dense<1.5> : tensor<2x2xf64>")), np.full((2, 2), 1.5)
    )


def test_scalars_and_shapes() -> None:
    s = numpy_to_dense(np.float32(2.5))
    assert s.type == TensorType(f32, [])
    v = dense_to_numpy(s)
    assert v.shape == () and v.dtype == np.float32 and float(v) == 2.5
    # non-contiguous input is written in C order
    a = np.arange(6, dtype=np.int64).reshape(2, 3).T
    np.testing.assert_array_equal(dense_to_numpy(numpy_to_dense(a)), a)
    # big-endian input is written little-endian
    big = np.array([1.0, 2.0], dtype=">f8")
    attr = numpy_to_dense(big)
    assert attr.get_element_type() == f64
    assert attr.get_values() == (1.0, 2.0)


def test_decoding_does_not_copy_and_is_read_only() -> None:
    a = np.arange(1000, dtype=np.float32)
    b = dense_to_numpy(numpy_to_dense(a))
    assert not b.flags.writeable  # a view of the attribute's bytes
    assert not b.flags.owndata


def test_unsupported_element_types() -> None:
    with pytest.raises(ValueError, match="no numpy dtype"):
        dense_to_numpy(parse("dense<[1.0, 2.0]> : tensor<2xf16>"))
    with pytest.raises(ValueError):
        numpy_to_dense(np.zeros(2, dtype=np.complex64))
