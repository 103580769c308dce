"""fold-transposes: a transpose of a generic's only result becomes that generic's output map.

A transpose at the tensor level is an all-parallel `linalg.generic` T whose body yields its one
input, read through a permutation. When T's input is the one result of a generic P (a product,
a reduction, anything) and T is its only user, P is rebuilt to write its result in T's order:
P's output map f becomes `o o inverse(i) o f` (i, o: T's input and output maps) and T is erased.
P's initial value must not depend on the order: a `linalg.fill` of a `tensor.empty` (refilled in
the new shape), or a `tensor.empty` that P's body never reads.

IREE's transpose propagation does the same ("fuse a transpose into its producer's output map");
MLIR's `linalg-fuse-elementwise-ops` does not, since it only folds all-parallel producers and a
product has a reduction.

Why: pack-weights computes a product with many rows panel by panel, [N/P, M, P], and puts it
back in row order with a transpose, a whole pass over the result (GPT-2: 12 x 4 per model, plus
the bias add or GELU after it reading the transposed copy). Folded, the product's register tiles
store their rows straight into the [M, N/P, P] (= [M, N]) result, rows a row stride apart, and
the transpose pass is gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp
from xdsl.dialects.linalg.ops import FillOp, GenericOp, YieldOp
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass

from passes.analysis.generic_maps import all_parallel, indexing_maps, is_permutation


def _transpose_maps(t: GenericOp) -> tuple[AffineMap, AffineMap] | None:
    """T's input and output maps, when T is a transpose: one input, one output, all parallel,
    its body only yields the input, both maps permutations."""
    if len(t.inputs) != 1 or len(t.outputs) != 1 or len(t.res) != 1 or not all_parallel(t):
        return None
    block = t.body.block
    ops = list(block.ops)
    if len(ops) != 1 or not isinstance(ops[0], YieldOp) or ops[0].operands[0] is not block.args[0]:
        return None
    i, o = indexing_maps(t)
    return (i, o) if is_permutation(i) and is_permutation(o) else None


def _order_free_init(p: GenericOp) -> tuple[Operation, ...] | None:
    """The ops making P's initial value (a fill of an empty tensor, or an empty tensor P never
    reads), when nothing else uses them: they are then rebuilt in the new shape."""
    init = p.outputs[0]
    owner = init.owner
    if not init.has_one_use():
        return None
    if isinstance(owner, tensor.EmptyOp):
        out_arg = p.body.block.args[len(p.inputs)]
        return (owner,) if not out_arg.uses else None
    if isinstance(owner, FillOp) and len(owner.outputs) == 1:
        empty = owner.outputs[0].owner
        if isinstance(empty, tensor.EmptyOp) and owner.outputs[0].has_one_use():
            return (owner, empty)
    return None


def fold_transpose(t: GenericOp) -> GenericOp | None:
    """P rebuilt to write T's result (T and P's old init erased), or None where T is not a
    transpose of a foldable producer."""
    maps = _transpose_maps(t)
    if maps is None or not t.inputs:
        return None
    p = t.inputs[0].owner
    if not isinstance(p, GenericOp) or p is t:
        return None
    if len(p.outputs) != 1 or len(p.res) != 1 or not p.res[0].has_one_use():
        return None
    f = indexing_maps(p)[-1]
    init_ops = _order_free_init(p)
    if init_ops is None or not f.is_projected_permutation():
        return None
    i, o = maps
    inverse = i.inverse_permutation()
    assert inverse is not None  # a permutation
    new_map = o.compose(inverse.compose(f))

    result_type = t.res[0].type
    empty = tensor.EmptyOp([], result_type)
    new_ops: list[Operation] = [empty]
    init: SSAValue = empty.tensor
    fill = init_ops[0]
    if isinstance(fill, FillOp):
        new_fill = FillOp(list(fill.inputs), [init], [result_type])
        for name, attr in fill.attributes.items():
            new_fill.attributes.setdefault(name, attr)
        new_ops.append(new_fill)
        init = new_fill.res[0]
    folded = GenericOp(
        list(p.inputs),
        [init],
        p.body.clone(),
        [*(AffineMapAttr(m) for m in indexing_maps(p)[:-1]), AffineMapAttr(new_map)],
        p.iterator_types,
        [result_type],
    )
    for name, attr in p.attributes.items():
        if name not in ("indexing_maps", "iterator_types"):
            folded.attributes.setdefault(name, attr)
    new_ops.append(folded)
    parent = p.parent_block()
    assert parent is not None
    parent.insert_ops_before(new_ops, p)
    t.res[0].replace_all_uses_with(folded.res[0])
    t_init = t.outputs[0].owner
    for dead in (t, p, *init_ops):
        dead.detach()
        dead.erase()
    if isinstance(t_init, tensor.EmptyOp) and not t_init.tensor.uses:
        t_init.detach()
        t_init.erase()
    return folded


@dataclass(frozen=True)
class FoldTransposesPass(ModulePass):
    """Fold transposes into the output maps of their producers (tensor level)."""

    name = "fold-transposes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, func.FuncOp) and f.body.blocks:
                for t in [o for o in f.body.block.ops if isinstance(o, GenericOp)]:
                    fold_transpose(t)
