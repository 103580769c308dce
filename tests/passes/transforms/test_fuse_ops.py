"""fuse-ops: graph.fused groups on the zoo models and on must-not-fuse graphs."""

from __future__ import annotations

from collections import Counter

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser

from compiler import zoo
from compiler.frontend.onnx import import_onnx
from dialects import graph as g
from passes.transforms.fuse_ops import FuseOpsPass


def context() -> Context:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, g.Graph):
        ctx.load_dialect(d)
    return ctx


def fuse(module: ModuleOp, **options: int) -> ModuleOp:
    FuseOpsPass(**options).apply(context(), module)
    module.verify()
    return module


def parse(src: str) -> ModuleOp:
    return Parser(context(), src).parse_module()


def top(module: ModuleOp) -> list[Operation]:
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return list(fn.body.block.ops)


def fused(module: ModuleOp) -> list[g.FusedOp]:
    return [op for op in top(module) if isinstance(op, g.FusedOp)]


def names(module: ModuleOp) -> list[str]:
    return [op.kernel_name.data for op in fused(module)]


def inner(op: g.FusedOp) -> list[str]:
    return [
        o.name.removeprefix("graph.")
        for o in op.block.ops
        if not isinstance(o, g.ConstantOp | g.YieldOp)
    ]


def test_resnet18_one_group_per_conv() -> None:
    m = fuse(import_onnx(zoo.resnet18(size=64, classes=10)))
    groups = fused(m)
    convs = [f for f in groups if "conv" in inner(f)]
    assert len(convs) == 20
    for f in convs:
        ops = inner(f)
        assert ops.count("conv") == 1 and ops[0] == "conv", ops
        assert f.pattern.data == "out_fusable"
        # weights and batch-norm statistics are sunk: the only operands are activations
        assert all(not isinstance(v.owner, g.ConstantOp) for v in f.inputs)
        assert isinstance(f.block.first_op, g.ConstantOp)
    epilogues = Counter(f.kernel_name.data for f in convs)
    assert epilogues == {
        "conv+batch_norm+relu": 9,
        "conv+batch_norm+add+relu": 8,
        "conv+batch_norm": 3,
    }
    rest = [f.kernel_name.data for f in groups if f not in convs]
    assert rest == ["max_pool", "global_avg_pool", "gemm"]
    assert [f.pattern.data for f in groups if f not in convs] == [
        "out_fusable",
        "reduction",
        "out_fusable",
    ]
    # nothing but the fused ops, the flatten between pool and gemm, and the return is left
    assert Counter(op.name for op in top(m)) == {
        "graph.fused": 23,
        "graph.flatten": 1,
        "func.return": 1,
    }


def test_mlp_gemm_relu() -> None:
    m = fuse(import_onnx(zoo.mlp()))
    assert names(m) == ["gemm+relu", "gemm+relu", "gemm"]
    assert [op.name for op in top(m)] == ["graph.fused"] * 3 + ["graph.softmax", "func.return"]


def test_transformer_matmul_groups_softmax_layer_norm_unfused() -> None:
    m = fuse(import_onnx(zoo.transformer_block()))
    groups = fused(m)
    assert sum(1 for f in groups if "matmul" in inner(f)) == 8
    assert all(inner(f).count("matmul") <= 1 for f in groups)
    assert {"matmul+mul", "matmul+add+gelu", "matmul+add"} <= set(names(m))
    left = Counter(op.name for op in top(m))
    assert left["graph.softmax"] == 1 and left["graph.layer_norm"] == 2
    assert all(not {"softmax", "layer_norm"} & set(inner(f)) for f in groups)
    # reshapes/transposes between matmuls form injective groups
    assert "reshape+transpose" in names(m)
    assert {f.pattern.data for f in groups if "matmul" not in inner(f)} == {"injective"}


T = "tensor<1x4x8x8xf32>"
W = "tensor<4x4x3x3xf32>"


def conv(res: str, x: str) -> str:
    return f"{res} = graph.conv {x}, %w {{pads = array<i64: 1, 1, 1, 1>}} : ({T}, {W}) -> {T}"


def module(body: str, results: str = "%r", n_results: int = 1) -> ModuleOp:
    ret_types = ", ".join([T] * n_results)
    return parse(f"""
func.func @main(%x: {T}, %y: {T}) -> ({ret_types}) {{
  %w = graph.constant dense<0.5> : {W}
  {body}
  func.return {results} : {ret_types}
}}""")


def test_conv_feeding_two_convs_gets_no_epilogue() -> None:
    m = fuse(
        module(
            "\n  ".join(
                [
                    conv("%c0", "%x"),
                    conv("%c1", "%c0"),
                    conv("%c2", "%c0"),
                    f"%r = graph.add %c1, %c2 : ({T}, {T}) -> {T}",
                ]
            )
        )
    )
    assert names(m) == ["conv", "conv", "conv+add"]
    assert [len(f.inputs) for f in fused(m)] == [1, 1, 2]
    # the weight is cloned into every group and the original is gone
    assert all(isinstance(op, g.FusedOp | func.ReturnOp) for op in top(m))
    assert all(sum(isinstance(o, g.ConstantOp) for o in f.block.ops) == 1 for f in fused(m))


def test_elementwise_with_outside_user_is_the_exit() -> None:
    m = fuse(
        module(
            "\n  ".join(
                [
                    conv("%c", "%x"),
                    f"%relu = graph.relu %c : ({T}) -> {T}",
                    f"%r = graph.neg %relu : ({T}) -> {T}",
                ]
            ),
            "%r, %relu",
            2,
        )
    )
    assert names(m) == ["conv+relu"]
    assert [op.name for op in top(m)] == ["graph.fused", "graph.neg", "func.return"]
    f = fused(m)[0]
    ret = top(m)[-1]
    assert ret.operands[1] is f.results[0] and top(m)[1].operands[0] is f.results[0]


def test_conv_result_escaping_keeps_epilogue_out() -> None:
    m = fuse(
        module("\n  ".join([conv("%c", "%x"), f"%r = graph.relu %c : ({T}) -> {T}"]), "%r, %c", 2)
    )
    assert names(m) == ["conv"]
    assert [op.name for op in top(m)] == ["graph.fused", "graph.relu", "func.return"]


def test_no_fusion_across_softmax() -> None:
    m = fuse(
        module(
            "\n  ".join(
                [
                    f"%a = graph.add %x, %y : ({T}, {T}) -> {T}",
                    f"%s = graph.softmax %a {{axis = 3 : i64}} : ({T}) -> {T}",
                    f"%e = graph.exp %s : ({T}) -> {T}",
                    f"%r = graph.neg %e : ({T}) -> {T}",
                ]
            )
        )
    )
    assert names(m) == ["exp+neg"]
    assert [op.name for op in top(m)] == [
        "graph.constant",
        "graph.add",
        "graph.softmax",
        "graph.fused",
        "func.return",
    ]
    assert fused(m)[0].pattern.data == "elementwise"


def test_diamond() -> None:
    body = "\n  ".join(
        [
            f"%a = graph.relu %x : ({T}) -> {T}",
            f"%b = graph.exp %a : ({T}) -> {T}",
            f"%c = graph.neg %a : ({T}) -> {T}",
            f"%r = graph.mul %b, %c : ({T}, {T}) -> {T}",
        ]
    )
    m = fuse(module(body))
    assert names(m) == ["relu+exp+neg+mul"]
    assert fused(m)[0].pattern.data == "broadcast"
    # one branch also leaves the function: relu and exp may not share a group
    m = fuse(module(body, "%r, %b", 2))
    for f in fused(m):
        assert not {"relu", "exp"} <= set(inner(f))
    assert (
        Counter(op.name for op in top(m))["graph.exp"] + sum("exp" in inner(f) for f in fused(m))
        == 1
    )


def test_pad_joins_conv_and_reduction_prologue() -> None:
    P = "tensor<1x4x10x10xf32>"
    m = fuse(
        parse(f"""
func.func @main(%x: {T}) -> tensor<1x4x1x1xf32> {{
  %w = graph.constant dense<0.5> : {W}
  %p = graph.pad %x {{pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>}} : ({T}) -> {P}
  %c = graph.conv %p, %w : ({P}, {W}) -> {T}
  %e = graph.exp %c : ({T}) -> {T}
  %s = graph.sigmoid %c : ({T}) -> {T}
  %m = graph.mul %e, %s : ({T}, {T}) -> {T}
  %q = graph.sqrt %x : ({T}) -> {T}
  %r = graph.reduce_mean %q {{axes = array<i64: 2, 3>}} : ({T}) -> tensor<1x4x1x1xf32>
  %o = graph.add %r, %m : (tensor<1x4x1x1xf32>, {T}) -> {T}
  func.return %r : tensor<1x4x1x1xf32>
}}""")
    )
    # the dead add post-dominates the conv's diamond, so it joins as the exit
    assert names(m) == ["sqrt+reduce_mean", "pad+conv+exp+sigmoid+mul+add"]
    assert [f.pattern.data for f in fused(m)] == ["reduction", "out_fusable"]


def test_max_group_size_and_idempotence() -> None:
    body = "\n  ".join(
        [
            f"%a = graph.relu %x : ({T}) -> {T}",
            f"%b = graph.exp %a : ({T}) -> {T}",
            f"%c = graph.neg %b : ({T}) -> {T}",
            f"%r = graph.abs %c : ({T}) -> {T}",
        ]
    )
    m = fuse(module(body), max_group_size=2)
    assert names(m) == ["relu+exp", "neg+abs"]
    text = str(m)
    assert str(fuse(m)) == text


def test_printed_ir_reparses() -> None:
    m = fuse(import_onnx(zoo.small_cnn()))
    text = str(m)
    assert 'graph.fused "conv+batch_norm+add+relu" out_fusable (' in text
    again = parse(text)
    again.verify()
    assert str(again) == text


@pytest.mark.parametrize("model", ["mlp", "transformer-block"])
def test_max_group_size_one(model: str) -> None:
    m = fuse(import_onnx(zoo.MODELS[model]()), max_group_size=1)
    # size 1: heavy ops still get their own (epilogue-free) group, nothing else fuses
    assert all(len(inner(f)) == 1 for f in fused(m))
