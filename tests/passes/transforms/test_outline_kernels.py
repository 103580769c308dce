"""outline-kernels: one private function per distinct kernel, @main only calls them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.linalg.ops import FillOp, GenericOp

from passes.transforms.bufferize import BufferizePass
from passes.transforms.outline_kernels import OutlineKernelsPass
from tests.support.buffer_level_eval import BufferLevelEvaluator
from tests.support.bufferize_cases import CASES, HDR, T23, X23, binary, context, parse, unary


def lower(src: str) -> ModuleOp:
    module = parse(src)
    BufferizePass().apply(context(), module)
    OutlineKernelsPass().apply(context(), module)
    module.verify()
    return module


def funcs(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, func.FuncOp)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_outlined_numerics(name: str) -> None:
    src, inputs, ref = CASES[name]
    module = lower(src)
    main = funcs(module)["main"]
    assert not [op for op in main.walk() if isinstance(op, GenericOp | FillOp)]
    for got, want in zip(BufferLevelEvaluator(module).run(*inputs), ref(*inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_identical_kernels_share_a_function() -> None:
    # Both exps read the argument %x, so neither may write over its input in place (a kernel
    # writing in place has one buffer argument fewer, hence a different signature).
    body = ""
    for k, name in enumerate(["%a", "%b"]):
        body += f"\n  %e{k} = tensor.empty() : {T23}"
        body += unary(name, "%x", f"%e{k}", T23, "math.exp %in : f32")
    body += f"\n  %e2 = tensor.empty() : {T23}"
    body += binary("%c", "%a", "%b", "%e2", T23, "arith.addf %p, %q : f32")
    module = lower(f"{HDR} -> {T23} {{{body}\n  return %c : {T23}\n}}")
    fns = funcs(module)
    kernels = sorted(n for n in fns if n.startswith("kernel_"))
    assert kernels == ["kernel_0", "kernel_1"]
    assert all(fns[k].sym_visibility == StringAttr("private") for k in kernels)
    calls = [
        op.callee.root_reference.data for op in fns["main"].walk() if isinstance(op, func.CallOp)
    ]
    assert calls == ["kernel_0", "kernel_0", "kernel_1"]
    out = BufferLevelEvaluator(module).run(X23)[0]
    np.testing.assert_allclose(out, 2 * np.exp(X23), rtol=1e-5)


def test_attributes_and_captures_move_with_the_kernel() -> None:
    src, inputs, ref = CASES["gather"]
    module = parse(src)
    BufferizePass().apply(context(), module)
    main = funcs(module)["main"]
    generic = next(op for op in main.walk() if isinstance(op, GenericOp))
    generic.attributes["sched.schedule"] = StringAttr("tile")
    OutlineKernelsPass().apply(context(), module)
    module.verify()
    kernel = funcs(module)["kernel_0"]
    # The gather table (a captured buffer) became an extra argument.
    assert len(kernel.function_type.inputs.data) == 3
    moved = next(op for op in kernel.walk() if isinstance(op, GenericOp))
    assert moved.attributes["sched.schedule"] == StringAttr("tile")
    np.testing.assert_allclose(BufferLevelEvaluator(module).run(*inputs)[0], ref(*inputs)[0])


def _view_chain_models() -> dict[str, object]:
    """Small ONNX models whose fusion groups hold views (Unsqueeze, Squeeze, Reshape, Flatten)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes: list, ins: list, outs: list, inits: list) -> onnx.ModelProto:
        graph = helper.make_graph(nodes, "views", ins, outs, inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        onnx.checker.check_model(m, full_check=True)
        return m

    def vi(name: str, shape: list[int]) -> object:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    node = helper.make_node
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    shape = numpy_helper.from_array(np.array([3, 2, 2], np.int64), "shape")
    return {
        "relu-unsqueeze-squeeze-relu": model(
            [
                node("Relu", ["x"], ["a"]),
                node("Unsqueeze", ["a", "axes"], ["b"]),
                node("Squeeze", ["b", "axes"], ["c"]),
                node("Relu", ["c"], ["y"]),
            ],
            [vi("x", [1, 4])],
            [vi("y", [1, 4])],
            [axes],
        ),
        "reshape-flatten-chain": model(
            [
                node("Relu", ["x"], ["a"]),
                node("Reshape", ["a", "shape"], ["b"]),
                node("Relu", ["b"], ["c"]),
                node("Flatten", ["c"], ["d"], axis=1),
                node("Relu", ["d"], ["y"]),
            ],
            [vi("x", [2, 6])],
            [vi("y", [3, 4])],
            [shape],
        ),
        "view-is-an-output": model(
            [
                node("Relu", ["x"], ["a"]),
                node("Unsqueeze", ["a", "axes"], ["b"]),
                node("Squeeze", ["b", "axes"], ["c"]),
                node("Relu", ["c"], ["y"]),
            ],
            [vi("x", [1, 4])],
            [vi("y", [1, 4]), vi("b", [1, 1, 4])],
            [axes],
        ),
        "view-of-an-input": model(
            [
                node("Unsqueeze", ["x", "axes"], ["a"]),
                node("Relu", ["a"], ["b"]),
                node("Squeeze", ["b", "axes"], ["y"]),
            ],
            [vi("x", [1, 4])],
            [vi("y", [1, 4])],
            [axes],
        ),
    }


@pytest.mark.parametrize("name", sorted(_view_chain_models()))
def test_views_inside_fusion_groups_match_onnxruntime(name: str) -> None:
    """Regression: a view of a group that @main still reads (the squeeze feeding the output copy)
    was kept in @main while the view it stands on was erased, leaving invalid IR."""
    import onnxruntime as ort

    from compiler.model import compile_model

    m = _view_chain_models()[name]
    x = np.random.default_rng(0).standard_normal(
        [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    )
    feeds = {"x": x.astype(np.float32)}
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in m.graph.output], session.run(None, feeds), strict=True))
    got = compile_model(m).run(feeds)
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-6)
        assert got[k].shape == v.shape


def test_view_read_after_the_kernel_keeps_its_base_in_main_and_public() -> None:
    """The view's base stays in @main and the buffer it views is no private argument."""
    from compiler.model import make_context
    from dialects.attributes import PRIVATE_ARGS_ATTR

    src = (
        Path(__file__).parents[3] / "lit_tests/passes/transforms/outline-kernels-views.mlir"
    ).read_text()
    for chunk in src.split("// -----"):
        module = parse(chunk)
        OutlineKernelsPass().apply(make_context(), module)
        module.verify()
        fns = funcs(module)
        assert all(PRIVATE_ARGS_ATTR not in f.attributes for f in fns.values())
        assert not [op for op in fns["main"].walk() if isinstance(op, GenericOp | FillOp)]
