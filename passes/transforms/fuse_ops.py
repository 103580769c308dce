"""fuse-ops: group graph ops into `graph.fused` kernels (TVM's FuseOps at the graph level).

The grouping is `passes.analysis.fusion_groups` over the dataflow graph of each function
(nodes: top-level graph ops except constants; edges: uses). Each group becomes one
`graph.fused` op placed where its last op was: its operands are the values the group reads
from outside (block arguments in first-use order), the constants it reads are cloned into the
region (so lowerings still see constant weights) and erased outside once nothing else uses
them, and `graph.yield` returns the results of the group's last op, the only one used outside.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from dialects import graph as g
from passes.analysis.fusion_groups import FusionGroup, fusion_groups
from passes.schedule.options import check_count_option


def _is_node(op: Operation) -> bool:
    return g.pattern_kind(op) is not None and not isinstance(op, g.ConstantOp)


def dataflow_graph(block: Block) -> tuple[nx.DiGraph, dict[int, Operation], set[int]]:
    """The graph of `block`'s top-level graph ops (by position), and the ops used elsewhere."""
    ops = {i: op for i, op in enumerate(block.ops) if _is_node(op)}
    index = {op: i for i, op in ops.items()}
    graph = nx.DiGraph()
    graph.add_nodes_from(ops)
    outputs: set[int] = set()
    for i, op in ops.items():
        for r in op.results:
            for use in r.uses:
                user = block.find_ancestor_op_in_block(use.operation)
                j = index.get(user) if user is not None else None
                if j is None:
                    outputs.add(i)
                else:
                    graph.add_edge(i, j)
    return graph, ops, outputs


def _short(op: Operation) -> str:
    return op.name.removeprefix("graph.")


def build_fused(members: list[Operation], pattern: str) -> tuple[g.FusedOp, list[SSAValue]]:
    """A graph.fused op performing `members` (in order), and the values it reads."""
    inner = {r for op in members for r in op.results}
    inputs: dict[SSAValue, None] = {}
    consts: dict[SSAValue, None] = {}
    for op in members:
        for v in op.operands:
            if v in inner:
                continue
            if isinstance(v.owner, g.ConstantOp):
                consts.setdefault(v, None)
            else:
                inputs.setdefault(v, None)
    block = Block(arg_types=[v.type for v in inputs])
    mapper: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args, strict=True))
    for c in consts:
        assert isinstance(c.owner, Operation)
        clone = c.owner.clone()
        block.add_op(clone)
        mapper[c] = clone.results[0]
    for op in members:
        block.add_op(op.clone(value_mapper=mapper))
    last = members[-1]
    block.add_op(g.YieldOp(*[mapper[r] for r in last.results]))
    name = "+".join(_short(op) for op in members)
    fused = g.FusedOp(name, pattern, list(inputs), [r.type for r in last.results], Region(block))
    for r, old in zip(fused.results, last.results, strict=True):
        r.name_hint = old.name_hint
    return fused, list(inputs)


def fuse_block(block: Block, max_group_size: int = 32) -> list[g.FusedOp]:
    """Fuse the top-level graph ops of one block in place; returns the new fused ops."""
    graph, ops, outputs = dataflow_graph(block)
    kinds = {i: k for i, op in ops.items() if (k := g.pattern_kind(op)) is not None}
    names = {i: _short(op) for i, op in ops.items()}
    groups: list[FusionGroup[int]] = fusion_groups(
        graph, kinds, outputs=outputs, names=names, max_group_size=max_group_size
    )
    fused_ops: list[g.FusedOp] = []
    for group in groups:
        members = [ops[i] for i in sorted(group.nodes)]
        last = members[-1]
        fused, _ = build_fused(members, group.pattern.name.lower())
        block.insert_op_before(fused, last)
        for old, new in zip(last.results, fused.results, strict=True):
            old.replace_all_uses_with(new)
        consts = {
            v.owner for op in members for v in op.operands if isinstance(v.owner, g.ConstantOp)
        }
        for op in reversed(members):
            block.erase_op(op)
        for c in consts:
            assert isinstance(c, Operation)
            if all(not r.uses for r in c.results):
                block.erase_op(c)
        fused_ops.append(fused)
    return fused_ops


@dataclass(frozen=True)
class FuseOpsPass(ModulePass):
    """Group the graph ops of every function into `graph.fused` kernels (TVM FuseOps rules)."""

    name = "fuse-ops"

    max_group_size: int = 32

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_count_option(self.name, "max-group-size", self.max_group_size, 1, " (ops per group)")
        fns = [f for f in op.walk() if isinstance(f, func.FuncOp) and len(f.body.blocks) == 1]
        for fn in fns:
            fuse_block(fn.body.block, self.max_group_size)
