"""Where a memref's run-time sizes, strides and offset come from (the `?`s of its type).

The LLVM level passes a memref as one bare pointer (convert-memref-to-llvm), so every `?` of a
memref type must be answered by an index value the function already holds: a size argument, an
alloc's operand, a subview's operand. `MemrefLayouts` follows a memref value back through its
views to the buffer they address (its root: a function argument, an alloc or alloca, a
`memref.view` of an arena, a global) and gives its sizes, strides and offset in elements from
the root's pointer, each an int where it is known and an index value where not. The arithmetic
for a value is built once, right after the op that defines it, so it dominates every use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
)
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint

from passes.analysis.pass_errors import op_error

Extent = int | SSAValue
"""A size, stride or offset: an int where the IR fixes it, else the index value holding it."""


@dataclass(frozen=True)
class Layout:
    """A memref value as elements of its root buffer: element `(i_0, ..)` is at
    `root + offset + sum(i_k * strides[k])`."""

    root: SSAValue
    sizes: tuple[Extent, ...]
    strides: tuple[Extent, ...]
    offset: Extent
    row_major: bool = False
    """A root of the row-major layout (then its extent is the product of its sizes)."""

    def extent(self, arith_: IndexArith) -> Extent:
        """How many elements from the root's pointer the value reaches (its last + 1)."""
        if self.row_major:
            return arith_.product(self.sizes)
        reach = [(arith_.add(s, -1), st) for s, st in zip(self.sizes, self.strides, strict=True)]
        return arith_.linear(arith_.add(self.offset, 1), reach)


def known_int(value: SSAValue) -> int | None:
    """The int an index constant holds, or None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return int(owner.value.value.data)
    return None


class IndexArith:
    """Index arithmetic that folds what is known and inserts what is not at one point."""

    def __init__(self, point: InsertPoint) -> None:
        self.builder = Builder(point)
        self._constants: dict[int, SSAValue] = {}

    def _insert(self, op: Operation) -> SSAValue:
        return self.builder.insert(op).results[0]

    def value(self, x: Extent) -> SSAValue:
        if isinstance(x, int):
            if x not in self._constants:
                self._constants[x] = self._insert(arith.ConstantOp(IntegerAttr(x, IndexType())))
            return self._constants[x]
        return x

    def mul(self, a: Extent, b: Extent) -> Extent:
        a, b = _fold(a), _fold(b)
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if a == 1 or a == 0:
            return b if a == 1 else 0
        if b == 1 or b == 0:
            return a if b == 1 else 0
        return self._insert(arith.MuliOp(self.value(a), self.value(b)))

    def add(self, a: Extent, b: Extent) -> Extent:
        a, b = _fold(a), _fold(b)
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        return self._insert(arith.AddiOp(self.value(a), self.value(b)))

    def product(self, xs: Sequence[Extent]) -> Extent:
        total: Extent = 1
        for x in xs:
            total = self.mul(total, x)
        return total

    def linear(self, offset: Extent, terms: Sequence[tuple[Extent, Extent]]) -> Extent:
        """`offset + sum(a * b)` over `terms`."""
        total = offset
        for a, b in terms:
            total = self.add(total, self.mul(a, b))
        return total


def _fold(x: Extent) -> Extent:
    if isinstance(x, SSAValue):
        known = known_int(x)
        if known is not None:
            return known
    return x


def _dims(static: Sequence[int], dynamic: Sequence[SSAValue]) -> list[Extent]:
    """Static entries with each DYNAMIC_INDEX taken from `dynamic` in order."""
    values = iter(dynamic)
    return [next(values) if s == DYNAMIC_INDEX else s for s in static]


def _type_dims(mtype: MemRefType, dynamic: Sequence[SSAValue]) -> list[Extent]:
    return _dims(list(mtype.get_shape()), dynamic)


def _static_layout(mtype: MemRefType) -> tuple[list[int], int] | None:
    """The strides and offset the type fixes, or None if any is `?`."""
    strides = mtype.get_strides()
    offset = mtype.get_offset()
    if strides is None or offset is None or any(s is None for s in strides):
        return None
    return [s for s in strides if s is not None], offset


def is_static_layout(mtype: MemRefType) -> bool:
    """Whether a bare pointer and the type alone address every element (no `?` stride/offset)."""
    return _static_layout(mtype) is not None


def _kept_dims(source: Sequence[Extent], result: MemRefType) -> list[int]:
    """The source dims a rank-reducing subview keeps: left to right, a source dim is kept if it
    matches the next result dim, else it must be a static 1 and is dropped (MLIR's rule)."""
    shape = list(result.get_shape())
    kept: list[int] = []
    for k, size in enumerate(source):
        if len(kept) < len(shape):
            want = shape[len(kept)]
            if (want == DYNAMIC_INDEX and not isinstance(size, int)) or want == size:
                kept.append(k)
                continue
            if want == DYNAMIC_INDEX and size != 1:
                kept.append(k)
                continue
        if size != 1:
            raise ValueError("rank-reducing subview drops a dim that is not 1")
    if len(kept) != len(shape):
        raise ValueError("rank-reducing subview whose dims do not match its source")
    return kept


class MemrefLayouts:
    """The layout of each memref value of a function, built on demand and cached.

    `argument_sizes(arg)` gives the dynamic sizes of a memref block argument (the function's
    size arguments); a root whose type has `?` strides has no such source and is refused."""

    def __init__(self, argument_sizes: Callable[[BlockArgument], Sequence[SSAValue]]) -> None:
        self._argument_sizes = argument_sizes
        self._cache: dict[SSAValue, Layout] = {}
        self._starts: dict[Block, InsertPoint] = {}

    def start_of(self, block: Block) -> InsertPoint:
        """One point at the start of `block` for everything inserted there (in order)."""
        if block not in self._starts:
            self._starts[block] = block_start(block)
        return self._starts[block]

    def of(self, value: SSAValue) -> Layout:
        layout = self._cache.get(value)
        if layout is None:
            layout = self._build(value)
            self._cache[value] = layout
        return layout

    def _build(self, value: SSAValue) -> Layout:
        mtype = value.type
        assert isinstance(mtype, MemRefType)
        if isinstance(value, BlockArgument):
            block = value.block
            point = self.start_of(block)
            given = self._argument_sizes(value)
            where = block.parent_op()
            if len(given) != mtype.get_shape().count(DYNAMIC_INDEX):
                assert where is not None
                raise op_error(where, f"no sizes for a block argument of type {mtype}")
            sizes = _type_dims(mtype, given)
            assert where is not None
            return _root(value, mtype, sizes, IndexArith(point), where=where)
        assert isinstance(value, OpResult)
        op = value.op
        arith_ = IndexArith(after(op))
        if isinstance(op, memref.AllocOp | memref.AllocaOp):
            return _root(value, mtype, _type_dims(mtype, op.dynamic_sizes), arith_, where=op)
        if isinstance(op, memref.ViewOp):
            return _root(value, mtype, _type_dims(mtype, op.sizes), arith_, where=op)
        if isinstance(op, memref.GetGlobalOp):
            return _root(value, mtype, _type_dims(mtype, ()), arith_, where=op)
        if isinstance(op, memref.CastOp):
            src = self.of(op.source)
            sizes = [
                src.sizes[k] if d == DYNAMIC_INDEX else d for k, d in enumerate(mtype.get_shape())
            ]
            return Layout(src.root, tuple(sizes), src.strides, src.offset)
        if isinstance(op, memref.SubviewOp):
            return self._subview(op, arith_)
        if isinstance(op, memref.CollapseShapeOp):
            src = self.of(op.src)
            groups = _groups(op)
            merged = [arith_.product([src.sizes[k] for k in group]) for group in groups]
            inner = [src.strides[group[-1]] for group in groups]
            return Layout(src.root, tuple(merged), tuple(inner), src.offset)
        if isinstance(op, memref.ExpandShapeOp):
            src = self.of(op.src)
            static = op.static_output_shape.get_values()
            if list(static).count(DYNAMIC_INDEX) != len(op.output_shape):
                raise op_error(op, "memref.expand_shape without the sizes of its `?` dims")
            sizes = _dims(static, op.output_shape)
            strides: list[Extent] = [0] * len(sizes)
            for d, group in enumerate(_groups(op)):
                stride = src.strides[d]
                for k in reversed(group):
                    strides[k] = stride
                    stride = arith_.mul(stride, sizes[k])
            return Layout(src.root, tuple(sizes), tuple(strides), src.offset)
        if isinstance(op, memref.ReinterpretCastOp):
            src = self.of(op.source)
            offsets = _dims(op.static_offsets.get_values(), op.offsets)
            sizes = _dims(op.static_sizes.get_values(), op.sizes)
            strides = _dims(op.static_strides.get_values(), op.strides)
            return Layout(src.root, tuple(sizes), tuple(strides), offsets[0])
        raise op_error(op, f"no run-time layout for a memref made by {op.name}")

    def _subview(self, op: memref.SubviewOp, arith_: IndexArith) -> Layout:
        src = self.of(op.source)
        offsets = _dims(op.static_offsets.get_values(), op.offsets)
        sizes = _dims(op.static_sizes.get_values(), op.sizes)
        steps = _dims(op.static_strides.get_values(), op.strides)
        offset = arith_.linear(src.offset, list(zip(offsets, src.strides, strict=True)))
        strides = [arith_.mul(s, step) for s, step in zip(src.strides, steps, strict=True)]
        result = op.result.type
        assert isinstance(result, MemRefType)
        if len(result.get_shape()) != len(sizes):
            try:
                kept = _kept_dims(sizes, result)
            except ValueError as e:
                raise op_error(op, str(e)) from None
            sizes = [sizes[k] for k in kept]
            strides = [strides[k] for k in kept]
        return Layout(src.root, tuple(sizes), tuple(strides), offset)


def _root(
    value: SSAValue, mtype: MemRefType, sizes: list[Extent], arith_: IndexArith, where: Operation
) -> Layout:
    row_major = isinstance(mtype.layout, NoneAttr)
    static = _static_layout(mtype)
    if static is not None:
        strides, offset = static
        return Layout(value, tuple(sizes), tuple(strides), offset, row_major)
    if not isinstance(mtype.layout, NoneAttr):
        raise op_error(where, f"a buffer of type {mtype} has run-time strides nothing gives")
    # row-major: each stride is the product of the sizes inside it
    strides_: list[Extent] = [1] * len(sizes)
    for k in range(len(sizes) - 2, -1, -1):
        strides_[k] = arith_.mul(strides_[k + 1], sizes[k + 1])
    return Layout(value, tuple(sizes), tuple(strides_), 0, row_major)


def _groups(op: memref.CollapseShapeOp | memref.ExpandShapeOp) -> list[list[int]]:
    return [[int(i.value.data) for i in group.data] for group in op.reassociation.data]


def block_start(block: Block) -> InsertPoint:
    """Where to insert at the start of `block` (ops inserted there keep their order)."""
    first = block.first_op
    return InsertPoint.before(first) if first is not None else InsertPoint.at_end(block)


def after(op: Operation) -> InsertPoint:
    """Where to insert right after `op` (ops inserted there keep their order)."""
    following = op.next_op
    if following is not None:
        return InsertPoint.before(following)
    block = op.parent_block()
    assert block is not None
    return InsertPoint.at_end(block)
