"""fuse-elementwise: chains of one kernel's elementwise generics become one generic, with the
same numbers (the tensor-level evaluator before and after), and the refusals hold."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.parser import Parser

from compiler.frontend.onnx import import_onnx
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import lowering
from passes.transforms.fuse_elementwise import FuseElementwisePass
from tests.support.tensor_level_eval import run_function

rng = np.random.default_rng(0)


def _model(
    nodes: list[onnx.NodeProto], shapes: dict[str, list[int]], out: list[int], consts: dict
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in shapes.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _unfused(model: onnx.ModelProto) -> ModuleOp:
    """The tensor level without fuse-elementwise (it is the level's last pass)."""
    module = import_onnx(model)
    passes = [p for p in lowering("imported", "tensor") if p != "fuse-elementwise"]
    run_passes(make_context(), module, passes)
    return module


def _generics(module: ModuleOp) -> int:
    return sum(isinstance(op, GenericOp) for op in module.walk())


def _check(model: onnx.ModelProto, inputs: list[np.ndarray]) -> tuple[int, int]:
    module = _unfused(model)
    before = _generics(module)
    (want,) = run_function(module, inputs)
    FuseElementwisePass().apply(make_context(), module)
    module.verify()
    (got,) = run_function(module, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    return before, _generics(module)


N = helper.make_node


def test_gelu_tanh_chain_is_one_generic() -> None:
    """GPT-2's GELU (eight ops, x read by three of them) becomes one generic."""
    model = _model(
        [
            N("Mul", ["x", "x"], ["x2"]),
            N("Mul", ["x2", "x"], ["x3"]),
            N("Mul", ["x3", "c"], ["a"]),
            N("Add", ["x", "a"], ["b"]),
            N("Mul", ["b", "s"], ["t"]),
            N("Tanh", ["t"], ["th"]),
            N("Add", ["th", "one"], ["u"]),
            N("Mul", ["x", "half"], ["hx"]),
            N("Mul", ["hx", "u"], ["y"]),
        ],
        {"x": [2, 3, 16]},
        [2, 3, 16],
        {"c": 0.044715, "s": np.sqrt(2 / np.pi), "one": 1.0, "half": 0.5},
    )
    before, after = _check(model, [rng.standard_normal((2, 3, 16)).astype(np.float32)])
    assert before == 9
    assert after == 1


def test_transposed_producer_and_broadcast_inputs() -> None:
    """A Transpose then a bias add (broadcast input) then Sigmoid: the transpose's input is read
    through the composed map, the bias through its broadcast map, and the numbers agree."""
    model = _model(
        [
            N("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
            N("Neg", ["xt"], ["n"]),
            N("Add", ["n", "bias"], ["a"]),
            N("Sigmoid", ["a"], ["y"]),
        ],
        {"x": [2, 5, 7]},
        [2, 7, 5],
        {"bias": rng.standard_normal(5)},
    )
    before, after = _check(model, [rng.standard_normal((2, 5, 7)).astype(np.float32)])
    assert after < before
    assert after == 1


def test_shared_producer_is_not_recomputed() -> None:
    """exp(x) feeds both a reduction and a division (softmax): it stays one generic, computed
    once; the reduction is not fused into; the subtraction before exp is (it has one user)."""
    model = _model(
        [
            N("ReduceMax", ["x"], ["m"], axes=[-1], keepdims=1),
            N("Sub", ["x", "m"], ["d"]),
            N("Exp", ["d"], ["e"]),
            N("ReduceSum", ["e", "axes"], ["s"], keepdims=1),
            N("Div", ["e", "s"], ["y"]),
        ],
        {"x": [3, 16]},
        [3, 16],
        {},
    )
    model.graph.initializer.append(numpy_helper.from_array(np.array([-1], np.int64), "axes"))
    x = rng.standard_normal((3, 16)).astype(np.float32)
    module = _unfused(model)
    FuseElementwisePass().apply(make_context(), module)
    exps = [
        op
        for op in module.walk()
        if isinstance(op, GenericOp) and any(o.name == "math.exp" for o in op.body.block.ops)
    ]
    assert len(exps) == 1, "exp must be computed by one generic"
    (got,) = run_function(module, [x])
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("groups_differ", [True, False])
def test_only_generics_of_one_kernel_fuse(groups_differ: bool) -> None:
    src = f"""
    #id = affine_map<(d0) -> (d0)>
    func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {{
      %e0 = tensor.empty() : tensor<8xf32>
      %a = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel"]}} ins(%x : tensor<8xf32>) outs(%e0 : tensor<8xf32>) attrs = {{ziggurat.group = 0 : i64}} {{
      ^bb0(%v: f32, %o: f32):
        %r = math.exp %v : f32
        linalg.yield %r : f32
      }} -> tensor<8xf32>
      %e1 = tensor.empty() : tensor<8xf32>
      %b = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel"]}} ins(%a : tensor<8xf32>) outs(%e1 : tensor<8xf32>) attrs = {{ziggurat.group = {1 if groups_differ else 0} : i64}} {{
      ^bb0(%v: f32, %o: f32):
        %r = arith.negf %v : f32
        linalg.yield %r : f32
      }} -> tensor<8xf32>
      func.return %b : tensor<8xf32>
    }}
    """
    module = Parser(make_context(), src).parse_module()
    x = rng.standard_normal(8).astype(np.float32)
    FuseElementwisePass().apply(make_context(), module)
    module.verify()
    assert _generics(module) == (2 if groups_differ else 1)
    (got,) = run_function(module, [x])
    np.testing.assert_allclose(got, -np.exp(x), rtol=1e-6)
