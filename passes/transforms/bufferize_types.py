"""Memref layout arithmetic for bufferization: the result types MLIR infers for views.

mlir-opt checks view result types exactly, so these mirror MLIR's own inference
(identity layouts stay identity; strided sources give `strided<[...], offset: o>` results).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ComplexType,
    FixedBitwidthType,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    TensorType,
)
from xdsl.ir import Attribute


def strides_and_offset(t: MemRefType[Attribute]) -> tuple[list[int], int]:
    strides = t.get_strides()
    offset = t.get_offset()
    static = [s for s in strides or () if s is not None]
    assert strides is not None and offset is not None and len(static) == len(strides), t
    return static, offset


def is_identity(t: MemRefType[Attribute]) -> bool:
    return isinstance(t.layout, NoneAttr)


def make_memref(
    shape: Sequence[int], element_type: Attribute, strides: Sequence[int] | None, offset: int
) -> MemRefType[Attribute]:
    """A memref type; `strides=None` means the identity layout."""
    if strides is None:
        return MemRefType(element_type, list(shape))
    return MemRefType(element_type, list(shape), StridedLayoutAttr(list(strides), offset))


def tensor_to_memref(t: TensorType[Attribute]) -> MemRefType[Attribute]:
    return MemRefType(t.element_type, list(t.get_shape()))


def memref_bytes(t: MemRefType[Attribute]) -> int:
    size = 1
    for d in t.get_shape():
        size *= d
    return size * ((_element_bits(t.element_type) + 7) // 8)


def _element_bits(t: Attribute) -> int:
    """Storage bits of one element: the bit width, or twice the part's bytes for complex."""
    if isinstance(t, FixedBitwidthType):
        return t.bitwidth
    if isinstance(t, ComplexType):
        return t.size * 8
    raise TypeError(f"memref element type without a fixed size: {t}")


def _drop_unit_dims(
    sizes: list[int], strides: list[int], target: Sequence[int]
) -> tuple[list[int], list[int]]:
    """Drop unit dimensions so that `sizes` becomes `target` (rank-reducing slices)."""
    if len(sizes) == len(target):
        return sizes, strides
    out_sizes: list[int] = []
    out_strides: list[int] = []
    j = 0
    for s, st in zip(sizes, strides, strict=True):
        if j < len(target) and s == target[j]:
            out_sizes.append(s)
            out_strides.append(st)
            j += 1
        elif s != 1:
            break
    if out_sizes != list(target):
        raise ValueError(f"cannot rank-reduce {sizes} to {list(target)}")
    return out_sizes, out_strides


def subview_type(
    src: MemRefType[Attribute],
    offsets: Sequence[int],
    sizes: Sequence[int],
    steps: Sequence[int],
    target_shape: Sequence[int],
) -> MemRefType[Attribute]:
    """Result type of a static memref.subview (always strided, as MLIR infers it)."""
    strides, offset = strides_and_offset(src)
    new_offset = offset + sum(o * s for o, s in zip(offsets, strides, strict=True))
    new_strides = [s * k for s, k in zip(strides, steps, strict=True)]
    out_sizes, out_strides = _drop_unit_dims(list(sizes), new_strides, target_shape)
    return make_memref(out_sizes, src.element_type, out_strides, new_offset)


def is_collapsible(src: MemRefType[Attribute], reassociation: Sequence[Sequence[int]]) -> bool:
    """Whether each group of dimensions is contiguous in memory (so collapse is a view)."""
    if is_identity(src):
        return True
    shape = src.get_shape()
    strides, _ = strides_and_offset(src)
    for group in reassociation:
        dims = [d for d in group if shape[d] != 1]
        for a, b in zip(dims, dims[1:], strict=False):
            if strides[a] != strides[b] * shape[b]:
                return False
    return True


def collapse_type(
    src: MemRefType[Attribute], reassociation: Sequence[Sequence[int]]
) -> MemRefType[Attribute]:
    shape = src.get_shape()
    new_shape = []
    for group in reassociation:
        n = 1
        for d in group:
            n *= shape[d]
        if any(shape[d] == DYNAMIC_INDEX for d in group):  # a run-time size: the product is too
            n = DYNAMIC_INDEX
        new_shape.append(n)
    if is_identity(src):
        return make_memref(new_shape, src.element_type, None, 0)
    strides, offset = strides_and_offset(src)
    new_strides = []
    for group in reassociation:
        non_unit = [d for d in group if shape[d] != 1]
        new_strides.append(strides[(non_unit or list(group))[-1]])
    return make_memref(new_shape, src.element_type, new_strides, offset)


def expand_type(
    src: MemRefType[Attribute],
    reassociation: Sequence[Sequence[int]],
    out_shape: Sequence[int],
) -> MemRefType[Attribute]:
    if is_identity(src):
        return make_memref(out_shape, src.element_type, None, 0)
    strides, offset = strides_and_offset(src)
    new_strides = [0] * len(out_shape)
    for src_dim, group in enumerate(reassociation):
        s = strides[src_dim]
        for d in reversed(group):
            new_strides[d] = s
            s *= out_shape[d]
    return make_memref(out_shape, src.element_type, new_strides, offset)
