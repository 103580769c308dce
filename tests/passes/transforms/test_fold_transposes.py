"""fold-transposes: a transpose of a product's only result becomes the product's output map, with
the same numbers (the tensor-level evaluator before and after, and compiled against numpy); the
refusals hold."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.builder import Builder
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.ir import SSAValue

from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import LEVELS
from compiler.registry import get_pass
from dialects import graph as g
from passes.schedule.default import REDUCTION_VECTORS
from passes.transforms.fold_transposes import FoldTransposesPass, fold_transpose
from passes.transforms.pack_weights import MIN_DEPTH, PackWeightsPass
from tests.support.graph_build import build
from tests.support.tensor_level_eval import run_function

rng = np.random.default_rng(3)
WIDTH = 8
PANEL = REDUCTION_VECTORS * WIDTH


def _generics(module: ModuleOp) -> list[GenericOp]:
    return [op for op in module.walk() if isinstance(op, GenericOp)]


def _is_transpose(op: GenericOp) -> bool:
    ops = list(op.body.block.ops)
    return len(op.inputs) == 1 and len(ops) == 1 and ops[0].operands[0] is op.body.block.args[0]


def _fold_and_compare(module: ModuleOp, inputs: list[np.ndarray]) -> tuple[int, int]:
    """Generics before and after the pass; the tensor-level results must not change."""
    before = len(_generics(module))
    want = run_function(module, inputs)
    FoldTransposesPass().apply(make_context(), module)
    module.verify()
    got = run_function(module, inputs)
    for w, r in zip(want, got, strict=True):
        np.testing.assert_array_equal(r, w)
    return before, len(_generics(module))


def test_registered_in_the_tensor_level_before_fuse_elementwise() -> None:
    assert get_pass("fold-transposes") is FoldTransposesPass
    tensor = list(LEVELS["tensor"])
    assert tensor.index("convert-graph-to-linalg") < tensor.index("fold-transposes")
    assert tensor.index("fold-transposes") < tensor.index("fuse-elementwise")


def test_a_packed_products_transpose_back_becomes_its_output_map() -> None:
    """pack-weights' [N/P, M, P] product and transpose back: the product writes [M, N/P, P]
    itself, refilled in that shape, and the bias add after it reads it in row order."""
    k, n, rows = MIN_DEPTH, 3 * PANEL, 10
    w = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)

    def fn(b: Builder, args: list[SSAValue]):
        c = b.insert(g.ConstantOp(w)).results[0]
        mm = b.insert(g.MatmulOp(args[0], c)).results[0]
        bc = b.insert(g.ConstantOp(bias)).results[0]
        return [b.insert(g.AddOp(mm, bc))]

    module = build([[2, 5, k]], fn)
    run_passes(make_context(), module, [PackWeightsPass(width=WIDTH, min_bytes=0)])
    run_passes(make_context(), module, ["convert-graph-to-linalg"])
    a = rng.standard_normal((2, 5, k)).astype(np.float32)
    before, after = _fold_and_compare(module, [a])
    assert after == before - 1
    assert not any(_is_transpose(op) for op in _generics(module))
    (product,) = [op for op in _generics(module) if "reduction" in str(op.iterator_types)]
    assert str(product.indexing_maps.data[-1].data) == "(d0, d1, d2, d3) -> (d1, d0, d2)"
    assert list(product.res[0].type.get_shape()) == [rows, 3, PANEL]  # type: ignore[attr-defined]
    (y,) = run_function(module, [a])
    np.testing.assert_allclose(y, a @ w + bias, rtol=1e-4, atol=1e-4)


def _onnx(nodes: list[onnx.NodeProto], x: list[int], y: list[int], consts: dict) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_transposed_product_compiles_to_a_product_writing_columns() -> None:
    """MatMul then Transpose, end to end: one kernel whose product stores its result
    transposed (the codegen follows the output map), against numpy."""
    w = rng.standard_normal((24, 40)).astype(np.float32)
    model = _onnx(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Transpose", ["m"], ["y"]),
        ],
        [16, 24],
        [40, 16],
        {"w": w},
    )
    module = import_onnx(model)
    run_passes(make_context(), module, [p for p in _tensor_passes() if p != "fuse-elementwise"])
    assert len(_generics(module)) == 1
    (product,) = _generics(module)
    assert str(product.indexing_maps.data[-1].data) == "(d0, d1, d2) -> (d1, d0)"
    x = rng.standard_normal((16, 24)).astype(np.float32)
    (y,) = compile_model(model).run({"x": x}).values()
    np.testing.assert_allclose(y, (x @ w).T, rtol=1e-4, atol=1e-4)


def _tensor_passes() -> list[str]:
    from compiler.pipelines import lowering

    return list(lowering("imported", "tensor"))


def test_a_product_read_by_another_op_too_keeps_its_order() -> None:
    """The product's result is also added to x: folding would need both orders."""
    w = rng.standard_normal((8, 8)).astype(np.float32)

    def fn(b: Builder, args: list[SSAValue]):
        c = b.insert(g.ConstantOp(w)).results[0]
        mm = b.insert(g.MatmulOp(args[0], c)).results[0]
        t = b.insert(g.TransposeOp(mm, perm=[1, 0])).results[0]
        return [b.insert(g.AddOp(t, mm))]

    module = build([[8, 8]], fn)
    run_passes(make_context(), module, ["convert-graph-to-linalg"])
    x = rng.standard_normal((8, 8)).astype(np.float32)
    before, after = _fold_and_compare(module, [x])
    assert after == before
    (y,) = run_function(module, [x])
    np.testing.assert_allclose(y, (x @ w).T + x @ w, rtol=1e-5, atol=1e-5)


def test_only_a_transpose_is_folded() -> None:
    """A generic whose body does more than yield its input (here a square) is not a transpose."""
    module = build([[4, 6]], lambda b, args: [b.insert(g.MulOp(args[0], args[0]))])
    run_passes(make_context(), module, ["convert-graph-to-linalg"])
    (op,) = _generics(module)
    assert fold_transpose(op) is None
