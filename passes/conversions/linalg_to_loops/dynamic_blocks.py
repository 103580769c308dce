"""Kernels with run-time extents as static blocks, so the static loop generator takes each block.

A linalg.generic on memrefs with `?` dims runs a loop nest whose extents are known only at run
time. The loop generator (loop_nest.py, register tiles, packing) is built on static extents, so
each loop with a run-time extent n is cut here into blocks of static sizes, DietCode-style:

    scf.for s = 0 to n - n % B step B:   kernel on subviews [s, B)          (full blocks)
    r = n % B
    scf.if r & B/2:  kernel on [n - r, B/2)                                 (the remainder as
    scf.if r & B/4:  kernel on [n - r + (r & B/2), B/4)   ...  down to 1     its binary digits)

Each block is the same generic on subviews of static shape at run-time offsets (scheduled by
default like any kernel). Parallel loops split this way compute disjoint outputs; a reduction loop
split this way accumulates into its output block after block, as linalg's semantics say.

A loop indexing an operand dim whose stride is a run-time value (the rows of `?x?`, the batch of
`?x?x64`) is cut into blocks of one step: a block's unit dim has a stride no access uses, so
every block has static strides. A `?` dim, or one with a run-time stride, must be indexed by a
loop alone (`d` in its indexing map); anything else is refused naming the operand.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    StridedLayoutAttr,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from dialects.sched import SCHEDULE_ATTR_NAME
from passes.analysis.kernel_access import linear_form
from passes.analysis.pass_errors import op_error

BLOCK = 64
"""Block size along a loop with a run-time extent: full blocks of 64, then 32, 16, ... 1."""


def _add(b: Builder, op: Operation) -> SSAValue:
    """Insert `op` where `b` inserts (in order) and give its result."""
    return b.insert(op).results[0]


def _index(b: Builder, value: int) -> SSAValue:
    return _add(b, arith.ConstantOp(IntegerAttr(value, IndexType())))


def _loop_of_dims(op: linalg.GenericOp) -> list[list[int | None]]:
    """For each operand, for each memref dim, the loop indexing it alone (`d`), else None."""
    found: list[list[int | None]] = []
    for amap in op.indexing_maps:
        coefs, consts = linear_form(amap.data)
        rows: list[int | None] = []
        for row, const in zip(coefs, consts, strict=True):
            nz = [d for d, c in enumerate(row) if c]
            rows.append(nz[0] if len(nz) == 1 and row[nz[0]] == 1 and const == 0 else None)
        found.append(rows)
    return found


def split_dynamic_kernel(op: linalg.GenericOp, block: int = BLOCK) -> None:
    """Replace `op` by static blocks of itself (see the module docstring)."""
    operands = list(op.operands)
    loops_of = _loop_of_dims(op)
    extent_of: dict[int, tuple[SSAValue, int]] = {}
    for i, value in enumerate(operands):
        t = value.type
        if not isinstance(t, MemRefType):
            continue
        for r, size in enumerate(t.get_shape()):
            if size != DYNAMIC_INDEX:
                continue
            d = loops_of[i][r]
            if d is None:
                raise op_error(
                    op,
                    f"operand #{i} has a run-time dim {r} indexed by an expression of several "
                    "loops; only a dim indexed by one loop can have a run-time size",
                )
            extent_of.setdefault(d, (value, r))
    b = Builder(InsertPoint.before(op))
    extents: dict[int, SSAValue] = {
        d: _add(b, memref.DimOp(v, _index(b, r))) for d, (v, r) in extent_of.items()
    }
    blocks = dict.fromkeys(extent_of, block)
    for d, size in _unit_loops(op, loops_of).items():
        blocks[d] = 1
        if d not in extents:
            extents[d] = _index(b, size)
    _blocks(op, b, sorted(blocks), extents, {}, blocks, loops_of)
    Rewriter.erase_op(op)


def _unit_loops(op: linalg.GenericOp, loops_of: list[list[int | None]]) -> dict[int, int]:
    """The loops that index an operand dim whose stride is a run-time value (`?x?` row-major:
    the row stride is the run-time row length), with their static extent (or -1): a block
    takes one step of them, a unit dim, whose stride no access uses."""
    found: dict[int, int] = {}
    for i, value in enumerate(op.operands):
        t = value.type
        if not isinstance(t, MemRefType):
            continue
        strides = t.get_strides() or ()
        for r, (size, stride) in enumerate(zip(t.get_shape(), strides, strict=True)):
            if stride is not None or size == 1:
                continue
            d = loops_of[i][r]
            if d is None:
                raise op_error(
                    op,
                    f"operand #{i} ({t}) has a run-time stride on dim {r}, indexed by an "
                    "expression of several loops; only a dim indexed by one loop can have one",
                )
            found.setdefault(d, size)
    return found


def _blocks(
    op: linalg.GenericOp,
    b: Builder,
    dims: Sequence[int],
    extents: dict[int, SSAValue],
    placed: dict[int, tuple[SSAValue, int]],
    blocks: dict[int, int],
    loops_of: list[list[int | None]],
) -> None:
    """The blocks along `dims[0]` (and inside each, along the rest), at the offsets `placed`;
    `blocks`: each loop's full block (1: a loop over its steps, no remainder)."""
    if not dims:
        _block_kernel(op, b, placed, loops_of)
        return
    d, rest = dims[0], dims[1:]
    n, block = extents[d], blocks[d]
    size_b = _index(b, block)
    remainder = _add(b, arith.RemUIOp(n, size_b)) if block > 1 else None
    full_end = _add(b, arith.SubiOp(n, remainder)) if remainder is not None else n
    body = Block(arg_types=[IndexType()])
    loop = scf.ForOp(_index(b, 0), full_end, size_b, [], body)
    b.insert(loop)
    inner = Builder(InsertPoint.at_end(body))
    _blocks(op, inner, rest, extents, {**placed, d: (body.args[0], block)}, blocks, loops_of)
    inner.insert(scf.YieldOp())
    if remainder is None:
        return
    bit = block // 2
    while bit >= 1:
        taken = _add(b, arith.AndIOp(remainder, _index(b, bit)))
        cond = _add(b, arith.CmpiOp(taken, _index(b, 0), "ne"))
        higher = _add(b, arith.AndIOp(remainder, _index(b, -2 * bit)))
        start = _add(b, arith.AddiOp(full_end, higher))
        then = Block()
        b.insert(scf.IfOp(cond, [], Region(then)))
        inner = Builder(InsertPoint.at_end(then))
        _blocks(op, inner, rest, extents, {**placed, d: (start, bit)}, blocks, loops_of)
        inner.insert(scf.YieldOp())
        bit //= 2


def _block_kernel(
    op: linalg.GenericOp,
    b: Builder,
    placed: dict[int, tuple[SSAValue, int]],
    loops_of: list[list[int | None]],
) -> None:
    """The generic on subviews of its operands at the block `placed`."""
    views: list[SSAValue] = []
    for i, value in enumerate(op.operands):
        t = value.type
        if not isinstance(t, MemRefType) or not any(
            loops_of[i][r] in placed for r in range(len(t.get_shape()))
        ):
            views.append(value)
            continue
        offsets: list[SSAValue | int] = []
        sizes: list[int] = []
        for r, size in enumerate(t.get_shape()):
            d = loops_of[i][r]
            if d is not None and d in placed:
                offsets.append(placed[d][0])
                sizes.append(placed[d][1])
            else:
                offsets.append(0)
                sizes.append(size)
        views.append(_add(b, _subview(op, i, value, t, offsets, sizes)))
    clone = op.clone()
    clone.attributes.pop(SCHEDULE_ATTR_NAME, None)
    for k, view in enumerate(views):
        clone.operands[k] = view
    _offset_indices(clone, placed)
    b.insert(clone)


def _offset_indices(op: linalg.GenericOp, placed: dict[int, tuple[SSAValue, int]]) -> None:
    """A block's iteration d is the whole kernel's d + the block's offset: the body's
    `linalg.index` of a blocked loop reads the sum (a Range's values, a gather's coords)."""
    for index in [o for o in op.body.walk() if isinstance(o, linalg.IndexOp)]:
        d = index.dim.value.data
        if d not in placed:
            continue
        shifted = arith.AddiOp(index.result, placed[d][0])
        index.result.replace_all_uses_with(shifted.result)
        shifted.operands[0] = index.result
        Rewriter.insert_op(shifted, InsertPoint.after(index))


def _subview(
    op: linalg.GenericOp,
    i: int,
    source: SSAValue,
    t: MemRefType,
    offsets: list[SSAValue | int],
    sizes: list[int],
) -> memref.SubviewOp:
    """A subview of static `sizes` at `offsets`, of the type MLIR infers (its offset `?`); its
    strides must be static but for unit dims (whose stride no access uses)."""
    strides = t.get_strides()
    if strides is None:
        raise op_error(op, f"operand #{i} of type {t} has no strided layout")
    for r, (stride, size) in enumerate(zip(strides, sizes, strict=True)):
        if stride is None and size != 1:
            raise op_error(
                op,
                f"operand #{i} ({t}): a block of it has a run-time stride (dim {r}); kernels with "
                "run-time strides are not generated yet (only outer dims may be run-time)",
            )
    result = MemRefType(
        t.element_type, sizes, StridedLayoutAttr(list(strides), None), t.memory_space
    )
    return memref.SubviewOp.get(source, offsets, sizes, [1] * len(sizes), result)
