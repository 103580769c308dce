"""Converters for ONNX control flow with subgraphs (If, Loop, Scan), by static specialization:
every shape in ziggurat is static, so control flow is resolved at import time. An If whose
condition is known imports only the taken branch; one with a run-time condition imports both
and selects elementwise (graph.where). Loop and Scan are unrolled: Loop needs its trip count
and condition at import time, Scan iterates over the static sequence length. The bodies go
through the same converters as the main graph (Importer.subgraph), so their import-time
parts fold as usual."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    counted,
    element_type_of,
)
from dialects import graph as g

MAX_UNROLLED_ITERATIONS = 4096
"""The most iterations a Loop or Scan is unrolled to (each one is a copy of the body in the
IR); Importer's MAX_SUBGRAPH_NODES bounds the total size of the unrolled bodies too."""


def _ssa(imp: Importer, v: Value) -> SSAValue:
    """A value as an SSA value (an import-time constant becomes graph.constant)."""
    return v if isinstance(v, SSAValue) else imp.op(g.ConstantOp(np.asarray(v)))


def _shape(imp: Importer, v: Value) -> tuple[int, ...]:
    return tuple(v.shape) if isinstance(v, np.ndarray) else imp.shape_of(v)


def _elem(v: Value) -> str:
    """The element type a value has (in the graph), for messages and comparisons."""
    return (
        str(element_type_of(v))
        if isinstance(v, SSAValue)
        else str(g.dense_attr(v).get_element_type())
    )


def _flag(imp: Importer, v: np.ndarray, what: str) -> bool:
    """A single-element import-time condition (If's cond, Loop's cond)."""
    if v.size != 1:
        raise imp.error(f"{what} must hold one element, got shape {list(v.shape)}")
    return bool(v.reshape(-1)[0])


def _stack(imp: Importer, parts: Sequence[Value], axis: int, what: str) -> Value:
    """Per-iteration values stacked along a new axis `axis` (a Loop or Scan output)."""
    shapes = {_shape(imp, p) for p in parts}
    if len(shapes) != 1:
        raise imp.error(
            f"{what} has different shapes in different iterations "
            f"({', '.join(str(list(s)) for s in sorted(shapes))}); they must agree to be stacked"
        )
    if all(isinstance(p, np.ndarray) for p in parts):
        return np.stack([np.asarray(p) for p in parts], axis=axis)
    elems = {_elem(p) for p in parts}
    if len(elems) != 1:
        raise imp.error(
            f"{what} has different element types in different iterations ({', '.join(elems)})"
        )
    (shape,) = shapes
    unit = [*shape[:axis], 1, *shape[axis:]]
    # a scalar broadcasts to [1] (graph.reshape of a rank-0 tensor does not lower to linalg)
    pieces = [
        imp.op(
            g.ExpandOp(_ssa(imp, p), shape=unit) if not shape else g.ReshapeOp(_ssa(imp, p), unit)
        )
        for p in parts
    ]
    return pieces[0] if len(pieces) == 1 else imp.op(g.ConcatOp(pieces, axis=axis))


def _empty_stack(
    shape: tuple[int, ...], dtype: np.dtype, axis: int
) -> np.ndarray:  # the output of zero iterations
    return np.zeros((*shape[:axis], 0, *shape[axis:]), dtype)


def _subgraph(node: onnx.NodeProto, name: str) -> onnx.GraphProto:
    body = attrs(node)[name]
    assert isinstance(body, onnx.GraphProto), "checked against the schema"
    return body


# -- If -----------------------------------------------------------------------------------


@converter("If")
def convert_if(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """A condition known at import time imports only the taken branch (whose outputs may then
    have any shapes, as exporters produce for a test on a static shape); a run-time condition
    imports both and selects with graph.where, which needs equal shapes and types."""
    branches = {b: _subgraph(node, b) for b in ("then_branch", "else_branch")}
    for b, body in branches.items():
        if len(body.output) != len(node.output):
            raise imp.error(
                f"{b} has {counted(len(body.output), 'output')}, but the node has "
                f"{len(node.output)}"
            )
    cond = imp.lookup(node.input[0])
    if isinstance(cond, np.ndarray):
        taken = "then_branch" if _flag(imp, cond, "the condition") else "else_branch"
        return imp.subgraph(branches[taken], [], f"{imp.label}/{taken}")
    if element_type_of(cond) != i1:
        raise imp.error(f"the condition must be a bool tensor, got {element_type_of(cond)}")
    if imp.shape_of(cond) != ():
        if int(np.prod(imp.shape_of(cond))) != 1:
            raise imp.error(
                f"the condition must hold one element, got shape {list(imp.shape_of(cond))}"
            )
        cond = imp.op(g.ReshapeOp(cond, []))
    then = imp.subgraph(branches["then_branch"], [], f"{imp.label}/then_branch")
    other = imp.subgraph(branches["else_branch"], [], f"{imp.label}/else_branch")
    outs: list[Value] = []
    for k, (t, e) in enumerate(zip(then, other, strict=True)):
        what = f"output {k} ('{node.output[k]}')"
        if _shape(imp, t) != _shape(imp, e):
            raise imp.error(
                f"with a condition known only at run time both branches must give the same "
                f"static shape, but {what} is {list(_shape(imp, t))} in then_branch and "
                f"{list(_shape(imp, e))} in else_branch"
            )
        if _elem(t) != _elem(e):
            raise imp.error(
                f"the branches give {what} different element types: {_elem(t)} in "
                f"then_branch, {_elem(e)} in else_branch"
            )
        if t is e or (
            isinstance(t, np.ndarray)
            and isinstance(e, np.ndarray)
            and t.dtype == e.dtype
            and np.array_equal(t, e, equal_nan=t.dtype.kind == "f")
        ):
            outs.append(t)
            continue
        outs.append(imp.op(g.WhereOp(cond, _ssa(imp, t), _ssa(imp, e))))
    return outs


# -- Loop ---------------------------------------------------------------------------------


def _static_input(
    imp: Importer, node: onnx.NodeProto, index: int, what: str, note: str = ""
) -> np.ndarray | None:
    """Loop's input `index` (None when absent): its value must be known at import time, for the
    loop to be unrolled."""
    if not imp.has(node, index):
        return None
    value = imp.const(node.input[index])
    if value is None:
        raise imp.error(
            f"{what} ('{node.input[index]}') depends on run-time values; only loops whose "
            f"iteration count is known at import time can be unrolled{note}"
        )
    return value


@converter("Loop")
def convert_loop(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Unrolled: the trip count and the condition (the input and every iteration's computed
    one) must be known at import time. Loop-carried values may change shape from one
    iteration to the next; scan outputs are stacked along a new axis 0."""
    body = _subgraph(node, "body")
    n_carried = len(node.input) - 2
    n_scan = len(body.output) - 1 - n_carried
    if len(body.input) != 2 + n_carried:
        raise imp.error(
            f"the body declares {counted(len(body.input), 'input')}; it must take the "
            f"iteration number, the condition and the {counted(n_carried, 'loop-carried value')}"
        )
    if n_scan < 0 or len(node.output) != n_carried + n_scan:
        raise imp.error(
            f"the body has {counted(len(body.output), 'output')} and the node "
            f"{counted(len(node.output), 'output')}: the body must return the condition and "
            f"the {counted(n_carried, 'loop-carried value')} (then the scan outputs), the node "
            "the loop-carried values and the scan outputs"
        )
    trips: int | None = None
    m = _static_input(imp, node, 0, "the trip count M", " (every shape is static)")
    if m is not None:
        if m.size != 1 or not np.issubdtype(m.dtype, np.integer):
            raise imp.error(
                f"the trip count M must be one integer, got {m.dtype} of shape {list(m.shape)}"
            )
        trips = max(int(m.reshape(-1)[0]), 0)
    c = _static_input(imp, node, 1, "the condition input")
    go = True if c is None else _flag(imp, c, "the condition input")
    if trips is None and not imp.has(node, 1):
        raise imp.error("has neither a trip count nor a condition: it would never end")
    carried: list[Value] = [imp.lookup(n) for n in node.input[2:]]
    scans: list[list[Value]] = [[] for _ in range(n_scan)]
    i = 0
    while go and (trips is None or i < trips):
        if i >= MAX_UNROLLED_ITERATIONS:
            raise imp.error(
                f"runs more than {MAX_UNROLLED_ITERATIONS} iterations, the most a loop is "
                "unrolled to"
            )
        args = [np.asarray(i, np.int64), np.asarray(go), *carried]
        outs = imp.subgraph(body, args, f"{imp.label}/body@{i}")
        cond = outs[0]
        if not isinstance(cond, np.ndarray):
            raise imp.error(
                f"the body's condition output ('{body.output[0].name}') depends on run-time "
                "values; only loops whose iteration count is known at import time can be "
                "unrolled"
            )
        go = _flag(imp, cond, f"the body's condition output ('{body.output[0].name}')")
        carried = outs[1 : 1 + n_carried]
        for k in range(n_scan):
            scans[k].append(outs[1 + n_carried + k])
        i += 1
    if i == 0 and n_scan:  # no iteration: empty scan outputs of the body's output types
        init = [imp.lookup(n) for n in node.input[2:]]
        args = [np.asarray(0, np.int64), np.asarray(True), *init]
        probe = imp.probe_subgraph(body, args, f"{imp.label}/body")
        empty: list[Value] = [_empty_stack(s, d, 0) for s, d in probe[1 + n_carried :]]
        return [*carried, *empty]
    stacked = [
        _stack(imp, scans[k], 0, f"scan output {k} ('{body.output[1 + n_carried + k].name}')")
        for k in range(n_scan)
    ]
    return [*carried, *stacked]


# -- Scan ---------------------------------------------------------------------------------


def _axes(
    imp: Importer, node: onnx.NodeProto, name: str, count: int, ranks: Sequence[int]
) -> list[int]:
    """One axis per scan input or output, normalized (negative counts from the end)."""
    given = attrs(node).get(name)
    axes = [0] * count if given is None else [int(a) for a in given]
    if len(axes) != count:
        raise imp.error(f"{name} has {len(axes)} entries, but there are {count}")
    out = []
    for a, r in zip(axes, ranks, strict=True):
        if not -r <= a < r:
            raise imp.error(f"{name} value {a} is out of range for rank {r}")
        out.append(a % r)
    return out


def _directions(imp: Importer, node: onnx.NodeProto, name: str, count: int) -> list[bool]:
    """Per scan input or output: True where it runs in reverse."""
    given = attrs(node).get(name)
    dirs = [0] * count if given is None else [int(d) for d in given]
    if len(dirs) != count:
        raise imp.error(f"{name} has {len(dirs)} entries, but there are {count}")
    if any(d not in (0, 1) for d in dirs):
        raise imp.error(f"{name} must hold 0 (forward) or 1 (reverse), got {dirs}")
    return [d == 1 for d in dirs]


def _element(imp: Importer, v: Value, index: int, axis: int) -> Value:
    """Slice `index` of v along `axis`, that axis removed (one scan input element)."""
    if isinstance(v, np.ndarray):
        return np.take(v, index, axis=axis)
    return imp.op(g.GatherOp(v, imp.op(g.ConstantOp(np.asarray(index, np.int64))), axis=axis))


@converter("Scan")
def convert_scan(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Unrolled over the sequence length (static): state variables thread through the
    iterations, scan inputs are sliced along their scan axes, scan outputs are stacked along
    theirs (each in its direction)."""
    body = _subgraph(node, "body")
    n_scan_in = int(attrs(node)["num_scan_inputs"])
    n_state = len(node.input) - n_scan_in
    if n_scan_in < 1 or n_state < 0:
        raise imp.error(
            f"num_scan_inputs is {n_scan_in}, but the node has "
            f"{counted(len(node.input), 'input')}; it must be between 1 and that"
        )
    n_scan_out = len(body.output) - n_state
    if len(body.input) != len(node.input):
        raise imp.error(
            f"the body declares {counted(len(body.input), 'input')}, but the node has "
            f"{len(node.input)} (the state variables and the scan inputs)"
        )
    if n_scan_out < 0 or len(node.output) != len(body.output):
        raise imp.error(
            f"the body has {counted(len(body.output), 'output')} and the node "
            f"{len(node.output)}; both must be the {counted(n_state, 'state variable')} "
            "then the scan outputs"
        )
    states: list[Value] = [imp.lookup(n) for n in node.input[:n_state]]
    xs: list[Value] = [imp.lookup(n) for n in node.input[n_state:]]
    in_ranks = [len(_shape(imp, x)) for x in xs]
    if 0 in in_ranks:
        k = in_ranks.index(0)
        raise imp.error(f"scan input {k} ('{node.input[n_state + k]}') is a scalar")
    in_axes = _axes(imp, node, "scan_input_axes", n_scan_in, in_ranks)
    in_rev = _directions(imp, node, "scan_input_directions", n_scan_in)
    out_rev = _directions(imp, node, "scan_output_directions", n_scan_out)
    lengths = {_shape(imp, x)[a] for x, a in zip(xs, in_axes, strict=True)}
    if len(lengths) != 1:
        raise imp.error(
            f"the scan inputs have different sequence lengths along their scan axes: "
            f"{sorted(lengths)}"
        )
    (length,) = lengths
    if length > MAX_UNROLLED_ITERATIONS:
        raise imp.error(
            f"scans a sequence of length {length}; at most {MAX_UNROLLED_ITERATIONS} "
            "iterations are unrolled"
        )
    scans: list[list[Value]] = [[] for _ in range(n_scan_out)]
    for t in range(length):
        elems = [
            _element(imp, x, length - 1 - t if rev else t, a)
            for x, a, rev in zip(xs, in_axes, in_rev, strict=True)
        ]
        outs = imp.subgraph(body, [*states, *elems], f"{imp.label}/body@{t}")
        states = outs[:n_state]
        for k in range(n_scan_out):
            scans[k].append(outs[n_state + k])
    if length:
        out_shapes = [_shape(imp, s[0]) for s in scans]
    else:  # no iteration: the body's output types, from a probe on zero elements
        zeros: list[Value] = []
        for x, a in zip(xs, in_axes, strict=True):
            shape = _shape(imp, x)
            dtype = x.dtype if isinstance(x, np.ndarray) else imp.empty(x).dtype
            zeros.append(np.zeros(shape[:a] + shape[a + 1 :], dtype))
        probe = imp.probe_subgraph(body, [*states, *zeros], f"{imp.label}/body")
        out_shapes = [shape for shape, _ in probe[n_state:]]
    out_axes = _axes(imp, node, "scan_output_axes", n_scan_out, [len(s) + 1 for s in out_shapes])
    stacked: list[Value] = []
    for k in range(n_scan_out):
        if not length:
            stacked.append(_empty_stack(out_shapes[k], probe[n_state + k][1], out_axes[k]))
            continue
        parts = scans[k][::-1] if out_rev[k] else scans[k]
        what = f"scan output {k} ('{body.output[n_state + k].name}')"
        stacked.append(_stack(imp, parts, out_axes[k], what))
    return [*states, *stacked]
