"""Shape arithmetic bound to the tensors it describes, for a model imported with run-time dims.

Exporters spell a reshape to `[batch, seq, heads, head_dim]` as Shape -> Gather -> Unsqueeze ->
Concat -> Reshape: the target is computed from the input's own sizes. Compiled once for every
size (compiler/frontend/run_time_dims.py), those sizes are `?`, so the target is not a constant
at import. The symbolic analysis (symbolic_shapes.py) knows it as polynomials of the symbols,
and so knows each of its entries as a dim of the input: this pass rewrites such a target into
the constant ONNX already has a spelling for, `0` (copy the input's dim at that place) and `-1`
(the one dim left), and an Expand's target into `1` where the input already has that dim. The
Shape/Gather/Concat chain that computed the target then feeds nothing and is dropped.

What stays is shape arithmetic whose result is a run-time value, not a shape: a Range's bounds,
the positions of a learned position table. The importer computes those at run time (graph.shape
reads the sizes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx

from compiler.frontend.onnx_graph import all_nodes, subgraphs
from compiler.frontend.symbolic_shapes import Poly, SymbolicShapes, analyze


@dataclass
class BoundShapes:
    """What the importer changes in a graph: node index -> {input position: the constant that
    replaces it}, and the nodes nothing reads any more."""

    inputs: dict[int, dict[int, np.ndarray]] = field(default_factory=dict)
    dead: set[int] = field(default_factory=set)


def _reshape_target(x: list[Poly | None], wanted: list[Poly]) -> np.ndarray | None:
    """Reshape's target over symbols as a constant with 0 and -1, or None where none says it."""
    out: list[int] = []
    free = None
    for k, w in enumerate(wanted):
        c = w.constant
        if c is not None and c > 0:
            out.append(c)
        elif k < len(x) and x[k] is not None and x[k] == w and c != 0:
            out.append(0)
        elif free is None and (c is None or c == -1):
            free = k
            out.append(-1)
        else:
            return None
    return np.asarray(out, dtype=np.int64)


def _expand_target(x: list[Poly | None], wanted: list[Poly]) -> np.ndarray | None:
    """Expand's target over symbols as a constant, 1 where the input already has the dim."""
    offset = len(wanted) - len(x)
    out: list[int] = []
    for k, w in enumerate(wanted):
        c = w.constant
        if c is not None:
            out.append(c)
            continue
        j = k - offset
        if j < 0 or x[j] is None or x[j] != w:
            return None
        out.append(1)
    return np.asarray(out, dtype=np.int64)


def bind(graph: onnx.GraphProto, shapes: SymbolicShapes | None = None) -> BoundShapes:
    """The targets of `graph`'s Reshape and Expand nodes that the symbols decide, as constants,
    and the nodes left unread (see the module)."""
    shapes = shapes if shapes is not None else analyze(graph)
    bound = BoundShapes()
    for i, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type not in ("Reshape", "Expand"):
            continue
        if len(node.input) < 2:
            continue
        target = shapes.values.get(node.input[1])
        x = shapes.shape(node.input[0])
        if target is None or target.elements is None or x is None:
            continue
        wanted = list(target.elements.reshape(-1))
        if all(w.constant is not None for w in wanted):
            continue  # a constant already: the importer folds it
        rule = _reshape_target if node.op_type == "Reshape" else _expand_target
        if node.op_type == "Reshape" and any(a.name == "allowzero" and a.i for a in node.attribute):
            continue
        constant = rule(list(x), wanted)
        if constant is not None:
            bound.inputs[i] = {1: constant}
    bound.dead = _unread(graph, bound)
    return bound


def _unread(graph: onnx.GraphProto, bound: BoundShapes) -> set[int]:
    """Nodes (without subgraphs) whose every output nothing live reads, once the bound inputs
    are replaced: the shape arithmetic that only fed them."""
    read: dict[str, int] = {o.name: 1 for o in graph.output}
    for i, node in enumerate(graph.node):
        replaced = bound.inputs.get(i, {})
        for k, name in enumerate(node.input):
            if name and k not in replaced:
                read[name] = read.get(name, 0) + 1
        for _, sub in subgraphs(node):  # a subgraph may read any enclosing value
            for inner in all_nodes(sub):
                for name in inner.input:
                    read[name] = read.get(name, 0) + 1
    dead: set[int] = set()
    for i in range(len(graph.node) - 1, -1, -1):
        node = graph.node[i]
        if subgraphs(node) or any(read.get(o, 0) for o in node.output if o):
            continue
        dead.add(i)
        replaced = bound.inputs.get(i, {})
        for k, name in enumerate(node.input):
            if name and k not in replaced:
                read[name] -= 1
    return dead
