"""If, Loop and Scan (compiler/frontend/ops/control_flow.py, Importer.subgraph): imported by
static specialization (a folded If takes one branch, a run-time one selects elementwise, Loop
and Scan unroll), compiled to machine code and checked against onnxruntime; the subgraphs see
the outer scope and fold their constant parts; and the import errors for what cannot be
specialized."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend.errors import FrontendError
from compiler.frontend.importer import graph_walk
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import assert_outputs_match
from tests.support.references import onnxruntime_run as reference

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL

rng = np.random.default_rng(3)


def vi(name: str, t: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, t, shape)


def body(name: str, nodes, inputs, outputs, inits=()) -> onnx.GraphProto:
    """A subgraph: inputs and outputs as (name, elem type, shape or None)."""
    return helper.make_graph(
        nodes,
        name,
        [vi(*i) for i in inputs],
        [vi(*o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits],
    )


def model(nodes, inputs, outputs, inits=(), opset: int = 17) -> onnx.ModelProto:
    graph = body("g", nodes, inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def const(name: str, value) -> onnx.NodeProto:
    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name)
    )


def check(m: onnx.ModelProto, *feed_sets: dict[str, np.ndarray]) -> None:
    """Compile once; every feed set against onnxruntime."""
    compiled = compile_model(m)
    for feeds in feed_sets:
        assert_outputs_match(compiled.run(feeds), reference(m, feeds))


def fails(m: onnx.ModelProto, *fragments: str) -> str:
    with pytest.raises(FrontendError) as e:
        import_onnx(m)
    msg = str(e.value)
    for f in fragments:
        assert f in msg, msg
    return msg


def x_feed(shape=(2, 3)) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# -- If -------------------------------------------------------------------------------------


def branches(then_nodes, then_out, else_nodes, else_out):
    return dict(
        then_branch=body("then", then_nodes, [], [then_out]),
        else_branch=body("else", else_nodes, [], [else_out]),
    )


def test_if_with_a_run_time_condition_selects_between_both_branches():
    """Both branches read the outer x (outer scope) and give [2, 3] float: graph.where picks."""
    nodes = [
        helper.make_node(
            "If",
            ["c"],
            ["y"],
            name="if",
            **branches(
                [helper.make_node("Mul", ["x", "x"], ["t"])],
                ("t", F, [2, 3]),
                [const("one", np.float32(1)), helper.make_node("Sub", ["x", "one"], ["e"])],
                ("e", F, [2, 3]),
            ),
        )
    ]
    m = model(nodes, [("c", B, []), ("x", F, [2, 3])], [("y", F, [2, 3])])
    x = x_feed()
    check(m, {"c": np.array(True), "x": x}, {"c": np.array(False), "x": x})


def test_if_on_a_static_shape_takes_one_branch_even_with_different_shapes():
    """The exporter pattern: If on a comparison of a static dimension folds (the constant
    condition must not go to onnx's evaluator, which lacks the outer run-time x), and only the
    taken branch is imported, whatever shape the other would give."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        const("zero", np.int64(0)),
        helper.make_node("Gather", ["s", "zero"], ["d0"], axis=0),
        const("one", np.int64(1)),
        helper.make_node("Equal", ["d0", "one"], ["c"]),
        helper.make_node(
            "If",
            ["c"],
            ["y"],
            name="squeeze_if_one",
            **branches(
                [
                    const("ax", np.array([0], np.int64)),
                    helper.make_node("Squeeze", ["x", "ax"], ["t"]),
                ],
                ("t", F, None),
                [helper.make_node("Relu", ["x"], ["e"])],
                ("e", F, None),
            ),
        ),
        helper.make_node("Neg", ["y"], ["z"]),
    ]
    m = model(nodes, [("x", F, [1, 4])], [("z", F, None)])
    check(m, {"x": x_feed((1, 4))})
    assert "graph.where" not in str(import_onnx(m))


def test_if_runtime_condition_needs_equal_branch_shapes():
    nodes = [
        helper.make_node(
            "If",
            ["c"],
            ["y"],
            name="if",
            **branches(
                [helper.make_node("Identity", ["x"], ["t"])],
                ("t", F, None),
                [helper.make_node("ReduceSum", ["x"], ["e"], keepdims=1)],
                ("e", F, None),
            ),
        )
    ]
    m = model(nodes, [("c", B, []), ("x", F, [2, 3])], [("y", F, None)])
    fails(m, "If node 'if'", "same static shape", "[2, 3] in then_branch", "[1, 1] in else_branch")


def test_an_unsupported_operator_in_a_branch_is_named():
    nodes = [
        helper.make_node(
            "If",
            ["c"],
            ["y"],
            name="if",
            **branches(
                [helper.make_node("Identity", ["x"], ["t"])],
                ("t", F, None),
                [helper.make_node("RandomNormalLike", ["x"], ["e"], name="rnd")],
                ("e", F, None),
            ),
        )
    ]
    m = model(nodes, [("c", B, []), ("x", F, [3, 3])], [("y", F, None)])
    fails(m, "unsupported ONNX operators (opset 17): RandomNormalLike (node 'if/else_branch/rnd')")


def test_a_branch_reading_an_unsupported_nodes_output_reports_that_operator():
    """The outer-scope reference counts as an input: the If is skipped, RandomNormalLike is
    reported."""
    nodes = [
        helper.make_node("RandomNormalLike", ["x"], ["d"], name="rnd"),
        helper.make_node(
            "If",
            ["c"],
            ["y"],
            name="if",
            **branches(
                [helper.make_node("Identity", ["d"], ["t"])],
                ("t", F, None),
                [helper.make_node("Neg", ["d"], ["e"])],
                ("e", F, None),
            ),
        ),
    ]
    m = model(nodes, [("c", B, []), ("x", F, [3, 3])], [("y", F, None)])
    msg = fails(m, "unsupported ONNX operators (opset 17): RandomNormalLike (node 'rnd')")
    assert "If" not in msg


# -- Loop -----------------------------------------------------------------------------------


def loop_model(
    loop_body: onnx.GraphProto,
    m_value,
    cond_value,
    carried,
    outputs,
    extra_inputs=(),
    opset: int = 17,
) -> onnx.ModelProto:
    inits = []
    ins = []
    if m_value is not None:
        inits.append(("M", np.asarray(m_value, np.int64)))
    if cond_value is not None:
        inits.append(("cond", np.asarray(cond_value)))
    ins = ["M" if m_value is not None else "", "cond" if cond_value is not None else "", *carried]
    node = helper.make_node("Loop", ins, [o[0] for o in outputs], name="loop", body=loop_body)
    return model([node], list(extra_inputs), outputs, inits, opset)


def test_loop_unrolls_carried_values_scan_outputs_and_an_early_exit():
    """M = 10 but the body's condition (computed from the iteration number, so known at import
    time) stops it after 4 iterations; y carries through the outer x, `i` is used as a value,
    a scan output stacks along a new axis 0, and a carried value grows every iteration."""
    nodes = [
        helper.make_node("Cast", ["i"], ["fi"], to=F),
        helper.make_node("Mul", ["y_in", "x"], ["p"]),
        helper.make_node("Add", ["p", "fi"], ["y_out"]),
        const("three", np.int64(3)),
        helper.make_node("Less", ["i", "three"], ["c_out"]),
        helper.make_node("Reshape", ["fi", "one"], ["fi1"]),
        helper.make_node("Concat", ["g_in", "fi1"], ["g_out"], axis=0),
        helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
    ]
    b = body(
        "loop_body",
        nodes,
        [("i", I64, []), ("c_in", B, []), ("y_in", F, [2, 3]), ("g_in", F, None)],
        [("c_out", B, []), ("y_out", F, [2, 3]), ("g_out", F, None), ("s", F, [])],
        inits=[("one", np.array([1], np.int64))],
    )
    m = loop_model(
        b,
        10,
        True,
        ["y0", "g0"],
        [("y", F, [2, 3]), ("g", F, None), ("ss", F, None)],
        extra_inputs=[("x", F, [2, 3]), ("y0", F, [2, 3]), ("g0", F, [1])],
    )
    check(m, {"x": x_feed(), "y0": x_feed(), "g0": np.array([7.0], np.float32)})


def test_loop_opset_11_with_an_if_inside_and_no_condition_input():
    """Opset 11 (Unsqueeze's axes attribute, folded by numpy: onnx's evaluator gets it wrong);
    an If on the iteration number folds per iteration; no cond input means true."""
    inner = branches(
        [helper.make_node("Add", ["acc_in", "row"], ["t"])],
        ("t", F, None),
        [helper.make_node("Sub", ["acc_in", "row"], ["e"])],
        ("e", F, None),
    )
    nodes = [
        helper.make_node("Unsqueeze", ["i"], ["start"], axes=[0]),
        const("one", np.array([1], np.int64)),
        helper.make_node("Add", ["start", "one"], ["end"]),
        helper.make_node("Slice", ["x", "start", "end"], ["row"]),
        const("two", np.int64(2)),
        helper.make_node("Mod", ["i", "two"], ["odd_i"]),
        helper.make_node("Cast", ["odd_i"], ["odd"], to=B),
        helper.make_node("If", ["odd"], ["acc_out"], name="if", **inner),
        helper.make_node("Identity", ["c_in"], ["c_out"]),
    ]
    b = body(
        "loop_body",
        nodes,
        [("i", I64, []), ("c_in", B, []), ("acc_in", F, [1, 3])],
        [("c_out", B, []), ("acc_out", F, [1, 3])],
    )
    m = loop_model(
        b, 4, None, ["acc0"], [("acc", F, [1, 3])], [("x", F, [4, 3]), ("acc0", F, [1, 3])], 11
    )
    check(m, {"x": x_feed((4, 3)), "acc0": x_feed((1, 3))})


def _count_body(cond_node: onnx.NodeProto | None = None) -> onnx.GraphProto:
    nodes = [helper.make_node("Add", ["v_in", "x"], ["v_out"])]
    nodes.append(cond_node or helper.make_node("Identity", ["c_in"], ["c_out"]))
    return body(
        "loop_body",
        nodes,
        [("i", I64, []), ("c_in", B, []), ("v_in", F, [2])],
        [("c_out", B, []), ("v_out", F, [2]), ("v_in", F, [2])],
    )


def test_loop_of_zero_iterations_returns_the_initial_values_and_empty_scans():
    m = loop_model(
        _count_body(),
        0,
        True,
        ["v0"],
        [("v", F, [2]), ("scan", F, None)],
        [("x", F, [2]), ("v0", F, [2])],
    )
    assert "tensor<0x2xf32>" in str(import_onnx(m))
    check(m, {"x": x_feed((2,)), "v0": x_feed((2,))})


def test_loop_errors():
    inputs = [("x", F, [2]), ("v0", F, [2])]
    outs = [("v", F, [2]), ("scan", F, None)]
    # the body's condition depends on the run-time x
    runtime = helper.make_node("ReduceMax", ["v_out"], ["m"], keepdims=0)
    b = _count_body(helper.make_node("Greater", ["m", "m"], ["c_out"]))
    b.node.insert(1, runtime)
    fails(loop_model(b, 5, True, ["v0"], outs, inputs), "Loop node 'loop'", "depends on run-time")
    # a run-time trip count
    m = loop_model(_count_body(), None, True, ["v0"], outs, [*inputs, ("M", I64, [])])
    m.graph.node[0].input[0] = "M"
    fails(m, "trip count M ('M') depends on run-time values")
    # neither trip count nor condition
    fails(loop_model(_count_body(), None, None, ["v0"], outs, inputs), "never end")
    # over the unrolling cap
    fails(loop_model(_count_body(), 10**6, True, ["v0"], outs, inputs), "more than 4096 iterations")


def test_the_subgraph_node_budget(monkeypatch):
    monkeypatch.setattr(graph_walk, "MAX_SUBGRAPH_NODES", 50)
    m = loop_model(
        _count_body(), 30, True, ["v0"], [("v", F, [2])], [("x", F, [2]), ("v0", F, [2])]
    )
    m.graph.node[0].output.append("scan")
    fails(m, "Loop node 'loop'", "budget of 50 subgraph nodes")


# -- Scan -----------------------------------------------------------------------------------


def test_scan_axes_directions_and_state():
    """Two scan inputs (one along axis 1, one reversed), a state and two scan outputs (one
    stacked along axis 1, one reversed), against onnxruntime."""
    nodes = [
        helper.make_node("Add", ["s_in", "a"], ["s0"]),
        helper.make_node("Mul", ["s0", "b"], ["s_out"]),
        helper.make_node("Neg", ["a"], ["na"]),
        helper.make_node("Identity", ["s_out"], ["s_scan"]),
    ]
    b = body(
        "scan_body",
        nodes,
        [("s_in", F, [3]), ("a", F, [3]), ("b", F, [3])],
        [("s_out", F, [3]), ("s_scan", F, [3]), ("na", F, [3])],
    )
    node = helper.make_node(
        "Scan",
        ["s0_", "xa", "xb"],
        ["s", "ya", "yb"],
        name="scan",
        body=b,
        num_scan_inputs=2,
        scan_input_axes=[1, 0],
        scan_input_directions=[0, 1],
        scan_output_axes=[-1, 0],
        scan_output_directions=[0, 1],
    )
    m = model(
        [node],
        [("s0_", F, [3]), ("xa", F, [3, 4]), ("xb", F, [4, 3])],
        [("s", F, [3]), ("ya", F, None), ("yb", F, None)],
    )
    check(m, {"s0_": x_feed((3,)), "xa": x_feed((3, 4)), "xb": x_feed((4, 3))})


def test_scan_errors():
    b = body(
        "scan_body",
        [helper.make_node("Add", ["s_in", "a"], ["s_out"])],
        [("s_in", F, [3]), ("a", F, [3])],
        [("s_out", F, [3])],
    )

    def scan(shape, **kw):
        node = helper.make_node(
            "Scan", ["s0", "xa"], ["s"], name="scan", body=b, num_scan_inputs=1, **kw
        )
        return model([node], [("s0", F, [3]), ("xa", F, shape)], [("s", F, [3])])

    fails(scan([2, 3], scan_input_directions=[2]), "Scan node 'scan'", "0 (forward) or 1")
    fails(scan([2, 3], scan_input_axes=[2]), "scan_input_axes value 2 is out of range")
    fails(scan([5000, 3]), "sequence of length 5000")
