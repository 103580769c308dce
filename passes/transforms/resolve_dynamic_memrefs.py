"""resolve-dynamic-memrefs: answer every `?` of a memref type with an index value, so the
bare-pointer LLVM level (convert-memref-to-llvm) sees only layouts it can address.

MLIR keeps a memref's run-time sizes and strides in a descriptor; ziggurat passes one bare
pointer, so this pass does at the memref level what MLIR's `expand-strided-metadata` and
`fold-memref-alias-ops` do with a descriptor:

- each `?` dim of a function's memref argument becomes one more `index` argument, appended
  after the others in argument order (`{ziggurat.size_of = "ARG.DIM"}` names it); calls pass
  the sizes of what they pass;
- `memref.dim` (and `memref.extract_strided_metadata`) becomes the value holding that size,
  stride or offset (an alloc's operand, a size argument, a subview's operand, a product for a
  collapse);
- a load or store through a memref whose strides or offset are `?` becomes one through a 1-D
  `memref.reinterpret_cast` of its root buffer at `offset + sum(i_k * stride_k)`, computed from
  the values the views were made with (passes/analysis/memref_layouts.py);
- the views left without users are erased.

A module without `?` in its memref types is left as it is. The output is plain memref, arith and
func IR (mlir-opt accepts it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func, memref, vector
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from passes.analysis.memref_layouts import (
    IndexArith,
    Layout,
    MemrefLayouts,
    after,
    is_static_layout,
    known_int,
)
from passes.analysis.pass_errors import op_error

SIZE_OF_ATTR = "ziggurat.size_of"
"""On a size argument: which memref argument's which dim it holds ("ARG.DIM")."""

_VIEWS = (
    memref.SubviewOp,
    memref.CastOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    memref.ReinterpretCastOp,
)


def _dynamic_dims(t: Attribute) -> list[int]:
    if not isinstance(t, MemRefType):
        return []
    return [k for k, d in enumerate(t.get_shape()) if d == DYNAMIC_INDEX]


def _has_dynamic(t: Attribute) -> bool:
    return isinstance(t, MemRefType) and (bool(_dynamic_dims(t)) or not is_static_layout(t))


def _expand_signature(fn: func.FuncOp) -> dict[BlockArgument, list[SSAValue]] | None:
    """Append a size argument for each `?` dim of each memref argument of `fn`: the argument
    each memref argument's sizes are in, or None if `fn` has no `?` dim to give."""
    inputs = list(fn.function_type.inputs.data)
    wanted = [(a, d) for a, t in enumerate(inputs) for d in _dynamic_dims(t)]
    if not wanted:
        return None
    attrs = list(fn.arg_attrs.data) if fn.arg_attrs is not None else []
    attrs += [DictionaryAttr({})] * (len(inputs) - len(attrs))
    sizes: dict[BlockArgument, list[SSAValue]] = {}
    block = fn.body.blocks.first
    for a, d in wanted:
        attrs.append(DictionaryAttr({SIZE_OF_ATTR: StringAttr(f"{a}.{d}")}))
        if block is not None:
            arg = block.insert_arg(IndexType(), len(block.args))
            arg.name_hint = f"{block.args[a].name_hint or f'arg{a}'}_dim{d}"
            sizes.setdefault(block.args[a], []).append(arg)
    fn.function_type = FunctionType.from_lists(
        [*inputs, *[IndexType()] * len(wanted)], list(fn.function_type.outputs.data)
    )
    fn.arg_attrs = ArrayAttr(attrs)
    return sizes


def _flat_view(layouts: MemrefLayouts, root: SSAValue, cache: dict[SSAValue, SSAValue]) -> SSAValue:
    """The root buffer as a 1-D memref (offset 0, stride 1), made once after the root."""
    flat = cache.get(root)
    if flat is not None:
        return flat
    layout = layouts.of(root)
    mtype = root.type
    assert isinstance(mtype, MemRefType)
    point = layouts.start_of(root.block) if isinstance(root, BlockArgument) else after(root.owner)  # type: ignore[arg-type]
    arith_ = IndexArith(point)
    extent = layout.extent(arith_)
    size = extent if isinstance(extent, int) else DYNAMIC_INDEX
    cast = memref.ReinterpretCastOp.from_dynamic(
        root, [0], [extent], [1], MemRefType(mtype.element_type, [size])
    )
    arith_.builder.insert(cast)
    cache[root] = cast.result
    return cast.result


def _memref_operand(op: Operation) -> tuple[int, SSAValue] | None:
    """The position and value of the memref an access op addresses."""
    if isinstance(op, memref.LoadOp | vector.LoadOp):
        return 0, op.operands[0]
    if isinstance(op, memref.StoreOp | vector.StoreOp):
        return 1, op.operands[1]
    return None


def _linearize(op: Operation, layouts: MemrefLayouts, flats: dict[SSAValue, SSAValue]) -> None:
    """Make `op` address the 1-D view of its root at the element it reads or writes."""
    position, value = _memref_operand(op)  # type: ignore[misc]
    layout: Layout = layouts.of(value)
    indices = list(op.operands[position + 1 :])
    arith_ = IndexArith(InsertPoint.before(op))
    linear = arith_.value(
        arith_.linear(layout.offset, list(zip(indices, layout.strides, strict=True)))
    )
    flat = _flat_view(layouts, layout.root, flats)
    operands = [*op.operands[:position], flat, linear]
    new = op.__class__.create(
        operands=operands,
        result_types=[r.type for r in op.results],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    Rewriter.replace_op(op, new)


def _erase_dead_views(fn: func.FuncOp) -> None:
    changed = True
    while changed:
        changed = False
        for op in reversed(list(fn.walk())):
            if (
                isinstance(op, _VIEWS)
                and not op.results[0].uses
                and _has_dynamic(op.results[0].type)
            ):
                Rewriter.erase_op(op)
                changed = True


@dataclass(frozen=True)
class ResolveDynamicMemrefsPass(ModulePass):
    """Turn the `?`s of memref types into index values (see the module docstring)."""

    name: ClassVar[str] = "resolve-dynamic-memrefs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]
        # every memref value is a function's argument or an op's result
        if not any(_has_dynamic(t) for f in functions for t in f.function_type.inputs.data) and (
            not any(_has_dynamic(r.type) for f in functions for o in f.walk() for r in o.results)
        ):
            return
        sizes: dict[BlockArgument, list[SSAValue]] = {}
        expanded: set[str] = set()
        for fn in functions:
            added = _expand_signature(fn)
            if added is not None:
                expanded.add(fn.sym_name.data)
                sizes.update(added)

        def argument_sizes(arg: BlockArgument) -> list[SSAValue]:
            return sizes.get(arg, [])

        for fn in functions:
            if not fn.body.blocks:
                continue
            layouts = MemrefLayouts(argument_sizes)
            flats: dict[SSAValue, SSAValue] = {}
            for inner in list(fn.walk()):
                if isinstance(inner, func.CallOp) and inner.callee.string_value() in expanded:
                    _pass_sizes(inner, layouts)
                elif isinstance(inner, memref.DimOp):
                    _fold_dim(inner, layouts)
                elif isinstance(inner, memref.ExtractStridedMetaDataOp):
                    _fold_metadata(inner, layouts)
                elif _memref_operand(inner) is not None:
                    _, value = _memref_operand(inner)  # type: ignore[misc]
                    if isinstance(value.type, MemRefType) and not is_static_layout(value.type):
                        _linearize(inner, layouts, flats)
            _erase_dead_views(fn)
            for inner in fn.walk():
                for v in inner.operands:
                    if (
                        isinstance(v.type, MemRefType)
                        and not is_static_layout(v.type)
                        and not isinstance(inner, (*_VIEWS, memref.DeallocOp))
                        and not _passed_whole(inner, v, layouts)
                    ):
                        raise op_error(
                            inner,
                            f"{inner.name} uses a memref with run-time strides or offset "
                            f"({v.type}); only loads, stores and views of it can be resolved",
                        )


def _passed_whole(op: Operation, value: SSAValue, layouts: MemrefLayouts) -> bool:
    """A call may pass a row-major buffer at its start whose `?` strides come from its sizes
    (`memref<1x?x40xf32>`): the callee rebuilds them from the sizes it is passed."""
    t = value.type
    return (
        isinstance(op, func.CallOp)
        and isinstance(t, MemRefType)
        and isinstance(t.layout, NoneAttr)
        and layouts.of(value).offset == 0
    )


def _pass_sizes(call: func.CallOp, layouts: MemrefLayouts) -> None:
    """Append to `call` the sizes of the `?` dims of the memrefs it passes."""
    extra: list[SSAValue] = []
    arith_ = IndexArith(InsertPoint.before(call))
    for v in call.arguments:
        if _dynamic_dims(v.type):
            layout = layouts.of(v)
            extra += [arith_.value(layout.sizes[d]) for d in _dynamic_dims(v.type)]
    if not extra:
        return
    new = func.CallOp(call.callee, [*call.arguments, *extra], [r.type for r in call.results])
    Rewriter.replace_op(call, new)


def _fold_dim(op: memref.DimOp, layouts: MemrefLayouts) -> None:
    dim = known_int(op.index)
    if dim is None:
        raise op_error(op, "memref.dim with a run-time dim number")
    layout = layouts.of(op.source)
    arith_ = IndexArith(InsertPoint.before(op))
    Rewriter.replace_op(op, [], [arith_.value(layout.sizes[dim])])


def _fold_metadata(op: memref.ExtractStridedMetaDataOp, layouts: MemrefLayouts) -> None:
    """The offset, sizes and strides it extracts are the values the layout holds."""
    if op.base_buffer.uses:
        raise op_error(op, "the base buffer of memref.extract_strided_metadata is not resolved")
    layout = layouts.of(op.source)
    arith_ = IndexArith(InsertPoint.before(op))
    values = [arith_.value(x) for x in (layout.offset, *layout.sizes, *layout.strides)]
    Rewriter.replace_op(op, [], [arith_.value(0), *values])
