"""fuse-elementwise: merge chains of elementwise linalg.generic ops on tensors into one generic.

MLIR's `linalg-fuse-elementwise-ops`, with a control function that never recomputes: a
producer P is folded into its consumer C when
  - both are `linalg.generic` ops of the same kernel (the same `ziggurat.group`),
  - P is all-parallel, has one output, whose indexing map is a permutation, and its body reads
    neither its output nor `linalg.index`,
  - C is all-parallel and every use of P's result is an input of C, read through one and the same
    map that is a permutation of C's loops (no broadcast: each element of P is then computed
    once, as before; MLIR's default would fuse a broadcast too, and repeat P's work per copy),
  - the fused body still runs on vector lanes where both did (`rules.body_vectorizes`).
P's inputs then become C's inputs, read through `map(P input) o inverse(map(P output)) o map(C
operand)`, P's body is cloned in front of C's, and P is erased. Inputs that end up twice with the
same map are read once.

Why: the graph level groups a whole activation (GELU's eight ops, SiLU times the gate, a bias add
after a product's unpacking) into one kernel, but each op stayed a loop nest of its own that
made a round trip through memory; a fused chain makes one pass and needs no intermediates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp
from xdsl.dialects.linalg.ops import GenericOp, IndexOp, YieldOp
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass

from dialects.attributes import GROUP_ATTR
from passes.analysis.generic_maps import all_parallel, indexing_maps, is_permutation
from passes.schedule.rules import body_vectorizes


def _lanes_ok(block: Block) -> bool:
    """Whether a body can run on vector lanes along its innermost loop."""
    return body_vectorizes(block, None)


def _producer_fusable(p: GenericOp) -> bool:
    if len(p.outputs) != 1 or len(p.res) != 1 or not all_parallel(p):
        return False
    if not is_permutation(indexing_maps(p)[-1]):
        return False
    block = p.body.block
    out_arg = block.args[len(p.inputs)]
    return not out_arg.uses and not any(isinstance(o, IndexOp) for o in block.ops)


def _fused_operand_map(p: GenericOp, c: GenericOp) -> AffineMap | None:
    """The one map through which C reads P's result, if every use is such an input of C."""
    result = p.res[0]
    maps = indexing_maps(c)
    found: set[AffineMap] = set()
    for use in result.uses:
        if use.operation is not c or use.index >= len(c.inputs):
            return None
        found.add(maps[use.index])
    if len(found) != 1:
        return None
    (m,) = found
    return m if is_permutation(m) else None


def fuse_pair(p: GenericOp, c: GenericOp) -> GenericOp | None:
    """C with P folded in (P is then erased), or None where the control function refuses."""
    if (
        p.attributes.get(GROUP_ATTR) != c.attributes.get(GROUP_ATTR)
        or GROUP_ATTR not in c.attributes
    ):
        return None
    if not _producer_fusable(p) or not all_parallel(c) or len(c.outputs) != 1:
        return None
    consumer_map = _fused_operand_map(p, c)
    if consumer_map is None:
        return None
    p_maps, c_maps = indexing_maps(p), indexing_maps(c)
    inverse = p_maps[-1].inverse_permutation()
    assert inverse is not None  # a permutation
    to_p_loops = inverse.compose(consumer_map)  # C's loops -> P's loops

    fused_positions = [i for i, v in enumerate(c.inputs) if v is p.res[0]]
    inputs: list[SSAValue] = []
    maps: list[AffineMap] = []
    # where each old block argument's value comes from in the new block
    c_arg_src: dict[int, int] = {}
    p_arg_src: dict[int, int] = {}

    def add_input(value: SSAValue, m: AffineMap) -> int:
        for k, (v, mk) in enumerate(zip(inputs, maps, strict=True)):
            if v is value and mk == m:
                return k
        inputs.append(value)
        maps.append(m)
        return len(inputs) - 1

    for i, value in enumerate(c.inputs):
        if i == fused_positions[0]:
            for j, pv in enumerate(p.inputs):
                p_arg_src[j] = add_input(pv, p_maps[j].compose(to_p_loops))
        if i not in fused_positions:
            c_arg_src[i] = add_input(value, c_maps[i])

    c_block, p_block = c.body.block, p.body.block
    n_in = len(inputs)
    slot_types: dict[int, Attribute] = {k: p_block.args[j].type for j, k in p_arg_src.items()}
    slot_types.update({k: c_block.args[i].type for i, k in c_arg_src.items()})
    out_arg_type = c_block.args[len(c.inputs)].type
    block = Block(arg_types=[*(slot_types[k] for k in range(n_in)), out_arg_type])

    # P's body, with its inputs mapped onto the new arguments
    p_values: dict[SSAValue, SSAValue] = {
        p_block.args[j]: block.args[k] for j, k in p_arg_src.items()
    }
    p_yield = p_block.last_op
    assert isinstance(p_yield, YieldOp)
    for op in p_block.ops:
        if op is p_yield:
            break
        block.add_op(op.clone(value_mapper=p_values))
    produced = p_values.get(p_yield.operands[0], p_yield.operands[0])

    c_values: dict[SSAValue, SSAValue] = {
        c_block.args[i]: block.args[k] for i, k in c_arg_src.items()
    }
    for i in fused_positions:
        c_values[c_block.args[i]] = produced
    c_values[c_block.args[len(c.inputs)]] = block.args[n_in]
    for op in c_block.ops:
        block.add_op(op.clone(value_mapper=c_values))

    if _lanes_ok(c_block) and _lanes_ok(p_block) and not _lanes_ok(block):
        block.erase(safe_erase=False)
        return None

    fused = GenericOp(
        inputs,
        list(c.outputs),
        Region(block),
        [AffineMapAttr(m) for m in [*maps, c_maps[-1]]],
        c.iterator_types,
        [r.type for r in c.res],
    )
    for name, attr in c.attributes.items():
        if name not in fused.attributes and name not in ("indexing_maps", "iterator_types"):
            fused.attributes[name] = attr
    parent = c.parent_block()
    assert parent is not None
    parent.insert_op_before(fused, c)
    for old, new in zip(c.res, fused.res, strict=True):
        old.replace_all_uses_with(new)
    c.detach()
    c.erase()
    init = p.outputs[0]
    p.detach()
    p.erase()
    owner = init.owner
    if isinstance(owner, tensor.EmptyOp) and not init.uses:
        owner.detach()
        owner.erase()
    return fused


def fuse_block(ops: Sequence[GenericOp]) -> int:
    """Fuse producers into consumers among `ops` until nothing changes; the number of fusions."""
    count = 0
    work = list(ops)
    while work:
        c = work.pop()
        if c.parent is None:
            continue
        for v in list(c.inputs):
            p = v.owner
            if isinstance(p, GenericOp) and p is not c:
                fused = fuse_pair(p, c)
                if fused is not None:
                    count += 1
                    work.append(fused)
                    break
    return count


@dataclass(frozen=True)
class FuseElementwisePass(ModulePass):
    """Merge producer/consumer chains of elementwise generics of one kernel (tensor level)."""

    name = "fuse-elementwise"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, func.FuncOp) and f.body.blocks:
                generics = [o for o in f.body.block.ops if isinstance(o, GenericOp)]
                fuse_block(generics)
