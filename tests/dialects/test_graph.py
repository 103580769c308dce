"""The graph dialect: builders infer result types, verifiers reject bad shapes, text round-trips."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.irdl import VerificationContext
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    Pure,
    RecursiveMemoryEffect,
    is_side_effect_free,
)
from xdsl.utils.exceptions import VerifyException

from dialects import graph as g
from dialects import graph_shapes as S


def ctx() -> Context:
    c = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, g.Graph):
        c.load_dialect(d)
    return c


def arg(*shape: int) -> SSAValue:
    return Block(arg_types=[TensorType(f32, shape)]).args[0]


def shape_of(op) -> tuple[int, ...]:
    return tuple(op.results[0].type.get_shape())


def test_every_op_has_pattern_kind_and_is_registered():
    names = {op.name for op in g.Graph.operations}
    assert len(names) == len(g.GRAPH_OPS) == 78
    for op in g.GRAPH_OPS:
        assert isinstance(g.pattern_kind(op), g.PatternKind), op.name
    assert g.pattern_kind(g.ConvOp) is g.PatternKind.OUT_FUSABLE
    assert g.pattern_kind(g.AddOp) is g.PatternKind.BROADCAST
    assert g.pattern_kind(g.ReluOp) is g.PatternKind.ELEMENTWISE
    assert g.pattern_kind(g.ReshapeOp) is g.PatternKind.INJECTIVE
    assert g.pattern_kind(g.ConvNchwcOp) is g.PatternKind.OUT_FUSABLE
    assert g.pattern_kind(g.LayoutTransformOp) is g.PatternKind.INJECTIVE
    assert g.pattern_kind(g.WinogradInputOp) is g.PatternKind.OUT_FUSABLE
    assert g.pattern_kind(g.WinogradOutputOp) is g.PatternKind.OUT_FUSABLE
    assert g.pattern_kind(g.ReduceSumOp) is g.PatternKind.REDUCTION
    assert g.pattern_kind(g.ConstantOp) is g.PatternKind.OPAQUE
    assert g.pattern_kind(arith.ConstantOp) is None


@pytest.mark.parametrize(
    "build, expected",
    [
        (lambda: g.AddOp(arg(2, 1, 3), arg(4, 1)), (2, 4, 3)),
        (lambda: g.ReluOp(arg(2, 3)), (2, 3)),
        (
            lambda: g.ConvOp(
                arg(1, 3, 8, 8), arg(4, 3, 3, 3), None, strides=[2, 2], pads=[1, 1, 1, 1]
            ),
            (1, 4, 4, 4),
        ),
        (
            lambda: g.ConvOp(arg(1, 8, 9, 9), arg(8, 1, 3, 3), arg(8), group=8, dilations=[2, 2]),
            (1, 8, 5, 5),
        ),
        (
            lambda: g.ConvNchwcOp(
                arg(1, 2, 9, 9, 4), arg(3, 2, 3, 3, 4, 8), arg(24), strides=[2, 2]
            ),
            (1, 3, 4, 4, 8),
        ),
        (
            lambda: g.ConvNchwcOp(arg(1, 2, 9, 9, 8), arg(2, 1, 5, 5, 1, 8), None, group=16),
            (1, 2, 5, 5, 8),
        ),
        (lambda: g.LayoutTransformOp(arg(1, 24, 5, 7), src="NCHW", dst="NCHW8c"), (1, 3, 5, 7, 8)),
        (
            lambda: g.LayoutTransformOp(arg(1, 3, 5, 7, 8), src="NCHW8c", dst="NCHW4c"),
            (1, 6, 5, 7, 4),
        ),
        (lambda: g.LayoutTransformOp(arg(1, 3, 5, 7, 8), src="NCHW8c", dst="NCHW"), (1, 24, 5, 7)),
        (
            lambda: g.WinogradInputOp(arg(2, 3, 8, 12, 4), tile=4, pads=[1, 1, 1, 1]),
            (36, 2 * 2 * 3, 12),
        ),
        (lambda: g.WinogradInputOp(arg(1, 1, 7, 9, 8), tile=2, pads=[0, 1, 1, 0]), (16, 12, 8)),
        (
            lambda: g.WinogradOutputOp(arg(36, 12, 32), arg(32), tile=4, image=[8, 12], block=16),
            (2, 2, 8, 12, 16),
        ),
        (lambda: g.MatmulOp(arg(3), arg(5, 3, 4)), (5, 4)),
        (lambda: g.MatmulOp(arg(2, 1, 4, 3), arg(5, 3, 6)), (2, 5, 4, 6)),
        (lambda: g.GemmOp(arg(3, 2), arg(5, 3), arg(5), trans_a=1, trans_b=1), (2, 5)),
        (
            lambda: g.MaxPoolOp(arg(1, 1, 5, 5), kernel=[2, 2], strides=[2, 2], ceil_mode=1),
            (1, 1, 3, 3),
        ),
        (lambda: g.AvgPoolOp(arg(1, 1, 5, 5), kernel=[3, 3], pads=[1, 1, 1, 1]), (1, 1, 5, 5)),
        (lambda: g.GlobalAvgPoolOp(arg(2, 3, 4, 5)), (2, 3, 1, 1)),
        (lambda: g.ReduceMeanOp(arg(2, 3, 4), axes=[1], keepdims=0), (2, 4)),
        (lambda: g.ReduceMaxOp(arg(2, 3, 4)), (1, 1, 1)),
        (lambda: g.FlattenOp(arg(2, 3, 4), axis=2), (6, 4)),
        (lambda: g.SqueezeOp(arg(1, 3, 1), axes=[0, 2]), (3,)),
        (lambda: g.UnsqueezeOp(arg(3), axes=[0, 2]), (1, 3, 1)),
        (lambda: g.TransposeOp(arg(2, 3, 4), perm=[2, 0, 1]), (4, 2, 3)),
        (lambda: g.ConcatOp([arg(2, 3), arg(2, 5)], axis=1), (2, 8)),
        (lambda: g.SliceOp(arg(8, 4), starts=[7, 0], ends=[-1, 4], steps=[-3, 2]), (3, 2)),
        (lambda: g.PadOp(arg(2, 3), pads=[1, 0, 1, -1]), (4, 2)),
        (lambda: g.LayerNormOp(arg(2, 3, 4), arg(4), None, axis=2), (2, 3, 4)),
        (lambda: g.BatchNormOp(arg(1, 3, 2, 2), arg(3), arg(3), arg(3), arg(3)), (1, 3, 2, 2)),
        (lambda: g.SoftmaxOp(arg(2, 3), axis=1), (2, 3)),
        (lambda: g.ReshapeOp(arg(2, 3), [3, 2]), (3, 2)),
        (lambda: g.ShapeOp(arg(2, 3, 4)), (3,)),
        (
            lambda: g.RangeOp(*[g.ConstantOp(np.array(k)).results[0] for k in (0, 5, 1)]),
            (DYNAMIC_INDEX,),
        ),
    ],
)
def test_builder_infers_result_shape(build, expected):
    op = build()
    op.verify()
    assert shape_of(op) == expected


def test_split_gather_constant():
    sp = g.SplitOp(arg(2, 6), axis=1, sizes=[1, 5])
    sp.verify()
    assert [tuple(r.type.get_shape()) for r in sp.results] == [(2, 1), (2, 5)]
    idx = g.ConstantOp(np.array([[0, -1]]))
    assert idx.results[0].type == TensorType(i64, [1, 2])
    ga = g.GatherOp(arg(4, 5), idx, axis=1)
    ga.verify()
    assert shape_of(ga) == (4, 1, 2)


def test_constant_value_roundtrip_fast_path():
    a = np.random.default_rng(0).standard_normal((64, 3, 7, 7)).astype(np.float32)
    op = g.ConstantOp(a)
    np.testing.assert_array_equal(g.constant_value(op), a)
    assert g.constant_value(g.ConstantOp(np.arange(5))).dtype == np.int64
    scalar = g.ConstantOp(np.float32(2.5))
    assert g.constant_value(scalar).shape == ()


def test_parsed_splat_constant_value():
    m = Parser(ctx(), "%0 = graph.constant dense<2.0> : tensor<2x3xf32>").parse_module()
    (op,) = [o for o in m.walk() if isinstance(o, g.ConstantOp)]
    np.testing.assert_array_equal(g.constant_value(op), np.full((2, 3), 2.0, np.float32))


def test_defaults_are_filled():
    op = g.LeakyReluOp(arg(3))
    assert op.alpha.value.data == pytest.approx(0.01)
    c = g.ClipOp(arg(3))
    assert c.min.value.data == float("-inf") and c.max.value.data == float("inf")
    conv = g.ConvOp(arg(1, 1, 3, 3), arg(1, 1, 1, 1), None)
    assert tuple(conv.strides.get_values()) == (1, 1)
    assert conv.group.value.data == 1


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: g.AddOp(arg(2, 3), arg(4)), "not broadcastable"),
        (lambda: g.ConvOp(arg(1, 3, 8, 8), arg(4, 2, 3, 3), None), "input channels per group"),
        (lambda: g.ConvOp(arg(1, 3, 8, 8), arg(4, 3, 3, 3), arg(5)), "bias must have shape"),
        (lambda: g.ConvOp(arg(1, 3, 2, 2), arg(4, 3, 3, 3), None), "larger than padded"),
        (lambda: g.MatmulOp(arg(2, 3), arg(4, 5)), "contraction mismatch"),
        (lambda: g.GemmOp(arg(2, 3), arg(3, 4), arg(3, 3)), "does not broadcast"),
        (lambda: g.SoftmaxOp(arg(2, 3), axis=-1), "normalized"),
        (lambda: g.TransposeOp(arg(2, 3), perm=[1, 1]), "not a permutation"),
        (lambda: g.SplitOp(arg(6), axis=0, sizes=[1, 2]), "do not add up"),
        (lambda: g.SliceOp(arg(8), starts=[0], ends=[9], steps=[1]), "not normalized"),
        (lambda: g.SliceOp(arg(8), starts=[0], ends=[8], steps=[0]), "step must not be 0"),
        (lambda: g.ReduceSumOp(arg(2, 3), axes=[2]), "must be sorted"),
        (lambda: g.ReduceSumOp(arg(2, 3), keepdims=2), "keepdims"),
        (lambda: g.MaxPoolOp(arg(1, 1, 4, 4), kernel=[2, 2], pads=[-1, 0, 0, 0]), "non-negative"),
        (
            lambda: g.AvgPoolOp(arg(1, 1, 4, 4), kernel=[2, 2], count_include_pad=3),
            "count_include_pad",
        ),
        (lambda: g.GeluOp(arg(3), approximate="fast"), "approximate"),
        (lambda: g.LayerNormOp(arg(2, 3), arg(2), None, axis=1), "scale"),
        (lambda: g.BatchNormOp(arg(1, 3, 2, 2), arg(2), arg(3), arg(3), arg(3)), "[3]"),
        (lambda: g.FlattenOp(arg(2, 3), axis=3), "flatten axis"),
        (lambda: g.PadOp(arg(2), pads=[1]), "pads must have 2 values"),
        (
            lambda: g.RangeOp(*[g.ConstantOp(np.array([k])).results[0] for k in (0, 5, 1)]),
            "range bounds must be scalars (0-d), got shapes [(1,), (1,), (1,)]",
        ),
    ],
)
def test_builder_rejects_bad_shapes(build, message):
    with pytest.raises(S.ShapeError, match=None) as e:
        build()
    assert message in str(e.value)


def test_verifier_rejects_wrong_result_type():
    x = arg(2, 3)
    op = g.ReluOp.create(operands=[x], result_types=[TensorType(f32, [3, 2])])
    with pytest.raises(VerifyException, match="does not match inferred"):
        op.verify()
    r = g.ReshapeOp.create(operands=[x], result_types=[TensorType(f32, [7])])
    with pytest.raises(VerifyException, match="element counts differ"):
        r.verify()
    # with run-time dims: as many `?`, the static dims' products alike
    xd = Block(arg_types=[TensorType(f32, [DYNAMIC_INDEX, 6])]).args[0]
    g.ReshapeOp.create(
        operands=[xd], result_types=[TensorType(f32, [DYNAMIC_INDEX, 2, 3])]
    ).verify()
    for bad in ([DYNAMIC_INDEX, 4], [DYNAMIC_INDEX, DYNAMIC_INDEX, 6]):
        r = g.ReshapeOp.create(operands=[xd], result_types=[TensorType(f32, bad)])
        with pytest.raises(VerifyException, match="cannot reshape"):
            r.verify()


def test_verifier_rejects_non_f32_and_float_indices():
    xi = Block(arg_types=[TensorType(i64, [3])]).args[0]
    op = g.ExpOp.create(operands=[xi], result_types=[TensorType(f32, [3])])
    with pytest.raises(VerifyException):
        op.verify()
    ga = g.GatherOp.create(
        operands=[arg(4), arg(2)],
        result_types=[TensorType(f32, [2])],
        properties={"axis": g.i64_attr(0)},
    )
    with pytest.raises(VerifyException):
        ga.verify()


def _module(ops, args, result) -> ModuleOp:
    block = Block(arg_types=[a.type for a in args])
    for old, new in zip(args, block.args, strict=True):
        old.replace_all_uses_with(new)
    block.add_ops([*ops, func.ReturnOp(result)])
    return ModuleOp(
        [func.FuncOp("main", ([a.type for a in block.args], [result.type]), Region(block))]
    )


def test_print_parse_roundtrip():
    x, w = arg(1, 3, 8, 8), arg(2, 3, 3, 3)
    ops = []
    ops.append(c := g.ConvOp(x, w, None, strides=[2, 2], pads=[1, 1, 1, 1]))
    ops.append(k := g.ConstantOp(np.linspace(0, 1, 2, dtype=np.float32).reshape(2, 1, 1)))
    ops.append(a := g.AddOp(c, k))
    ops.append(cl := g.ClipOp(a, min=0.0, max=6.0))
    ops.append(sp := g.SplitOp(cl, axis=1, sizes=[1, 1]))
    ops.append(cc := g.ConcatOp(list(sp.results), axis=1))
    ops.append(rm := g.ReduceMeanOp(cc, axes=[2, 3], keepdims=0))
    module = _module(ops, [x, w], rm.results[0])
    module.verify()
    text = str(module)
    assert "graph.conv" in text and "array<i64: 2, 2>" in text and "graph.split" in text
    again = Parser(ctx(), text).parse_module()
    again.verify()
    assert str(again) == text


# -- declarations ----------------------------------------------------------------------------

_PROPERTY_TYPES = {IntegerAttr, FloatAttr, StringAttr, DenseArrayBase, DenseIntOrFPElementsAttr}


@pytest.mark.parametrize("op", g.GRAPH_OPS, ids=lambda op: op.name)
def test_op_declares_traits_and_typed_properties(op):
    assert op.name.startswith("graph.")
    assert g.pattern_kind(op) is not None
    assert op.get_traits_of_type(MemoryEffect), "effects must be known (for DCE and CSE)"
    if op is not g.FusedOp:
        assert op.has_trait(Pure)
    for name, pdef in op.get_irdl_definition().properties.items():
        bases = pdef.constr.get_bases()
        assert bases is not None and len(bases) == 1 and bases <= _PROPERTY_TYPES, name
        if pdef.default_value is not None:
            pdef.constr.verify(pdef.default_value, VerificationContext())


def test_structural_traits():
    assert g.FusedOp.has_trait(IsolatedFromAbove) and g.FusedOp.has_trait(RecursiveMemoryEffect)
    assert g.YieldOp.has_trait(IsTerminator) and g.YieldOp.has_trait(HasParent(g.FusedOp))
    assert is_side_effect_free(g.ReluOp(arg(3)))


def _one_of_each() -> ModuleOp:
    """A function with one op of every kind, all built with the builders."""
    x_t, w_t, v_t = (
        TensorType(f32, [1, 2, 4, 4]),
        TensorType(f32, [2, 2, 1, 1]),
        TensorType(f32, [2]),
    )
    m_t, r_t = TensorType(f32, [4, 4]), TensorType(f32, [4])
    b_t, n_t = TensorType(i1, [4]), TensorType(i32, [4])
    wb_t = TensorType(f32, [1, 1, 3, 3, 2, 2])
    block = Block(arg_types=[x_t, w_t, v_t, m_t, r_t, b_t, n_t, wb_t])
    x, w, v, m, r, bools, ints, wb = block.args

    def on(cls: type) -> tuple[SSAValue, SSAValue]:
        """An operand pair of element types the op accepts."""
        if f32 in cls.ELEMENTS:
            return (x, r)
        return (bools, bools) if i1 in cls.ELEMENTS else (ints, ints)

    plain = [
        o
        for o in g.GRAPH_OPS
        if issubclass(o, g.UnaryOp) and not o.get_irdl_definition().properties
    ]
    binary = [o for o in g.GRAPH_OPS if issubclass(o, g.BinaryOp)]
    idx = g.ConstantOp(np.array([1, 0]))
    body = Block(arg_types=[x_t])
    body.add_ops([relu := g.ReluOp(body.args[0]), g.YieldOp(relu.results[0])])
    ops = [
        idx,
        *(cls(on(cls)[0]) for cls in plain),
        g.CastOp(x),
        g.CastOp(x, to="i1"),
        g.BitcastOp(x, to="i32"),
        g.ShapeOp(x),
        bound := g.ConstantOp(np.array(3)),
        g.RangeOp(bound, bound, bound),
        *(cls(*on(cls)) for cls in binary),
        g.WhereOp(bools, x, r),
        g.ExpandOp(r, shape=[3, 1]),
        g.LeakyReluOp(x, alpha=0.1),
        g.HardSigmoidOp(x, alpha=0.3, beta=0.4),
        g.ClipOp(x, min=0.0, max=6.0),
        g.GeluOp(x, approximate="tanh"),
        g.ConvOp(x, w, v, strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 1], group=1),
        xb := g.LayoutTransformOp(x, src="NCHW", dst="NCHW2c"),
        g.ConvNchwcOp(xb, wb, v, pads=[1, 1, 1, 1]),
        g.LayoutTransformOp(xb, src="NCHW2c", dst="NCHW"),
        wi := g.WinogradInputOp(xb, tile=2, pads=[1, 1, 1, 1]),
        g.WinogradOutputOp(wi, v, tile=2, image=[4, 4], block=2),
        g.MatmulOp(m, m),
        g.GemmOp(m, m, r, alpha=0.5, beta=2.0, trans_a=1),
        g.SoftmaxOp(x, axis=1),
        g.LogSoftmaxOp(x, axis=3),
        g.LayerNormOp(x, r, r, axis=3, epsilon=1e-3),
        g.BatchNormOp(x, v, v, v, v, epsilon=1e-3),
        g.MaxPoolOp(x, kernel=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1),
        g.AvgPoolOp(x, kernel=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
        g.ReduceMeanOp(x, axes=[1, 2], keepdims=0),
        g.ReduceSumOp(x, axes=[3]),
        g.ReduceMaxOp(x),
        g.ReduceProdOp(x, axes=[1]),
        g.ReshapeOp(x, [2, 16]),
        g.FlattenOp(x, axis=2),
        g.SqueezeOp(x, axes=[0]),
        g.UnsqueezeOp(x, axes=[0]),
        g.TransposeOp(x, perm=[0, 2, 3, 1]),
        g.ConcatOp([x, x], axis=1),
        g.SplitOp(x, axis=1, sizes=[1, 1]),
        g.SliceOp(x, starts=[0, 1, 3, 0], ends=[1, 2, -1, 4], steps=[1, 1, -2, 2]),
        g.GatherOp(x, idx, axis=2),
        g.PadOp(x, pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.5),
        g.FusedOp("relu", "elementwise", [x], [x_t], Region(body)),
    ]
    block.add_ops([*ops, func.ReturnOp()])
    return ModuleOp([func.FuncOp("main", (block.arg_types, []), Region(block))])


def test_every_op_round_trips_in_custom_and_generic_form():
    module = _one_of_each()
    module.verify()
    assert {op.name for op in module.walk()} >= {op.name for op in g.GRAPH_OPS}
    text = str(module)
    again = Parser(ctx(), text).parse_module()
    again.verify()
    assert str(again) == text
    generic = StringIO()
    Printer(stream=generic, print_generic_format=True).print_op(module)
    assert str(Parser(ctx(), generic.getvalue()).parse_module()) == text


@pytest.mark.parametrize(
    "text, message",
    [
        ("graph.softmax %a {axis = 1 : i32}", "Expected attribute i64 but got i32"),
        ("graph.leaky_relu %a {alpha = 1.0e-01 : f64}", "f64 should be of base attribute f32"),
        ("graph.transpose %a {perm = array<i32: 1, 0>}", "Expected attribute i64 but got i32"),
        ("graph.cast %a {to = 3 : i64}", "should be of base attribute string"),
    ],
)
def test_verifier_rejects_property_of_wrong_type(text, message):
    src = f"""func.func @f(%a: tensor<2x3xf32>) {{
      %0 = {text} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return
    }}"""
    with pytest.raises(VerifyException, match=message):  # some are caught while parsing
        Parser(ctx(), src).parse_module().verify()


def test_builder_rejects_unknown_property_and_wrong_operand_count():
    with pytest.raises(TypeError, match="no property 'axis'"):
        g.ReluOp(arg(3), axis=1)
    with pytest.raises(TypeError, match="takes 2 operands"):
        g.AddOp(arg(3))


def typed(el, *shape: int) -> SSAValue:
    return Block(arg_types=[TensorType(el, shape)]).args[0]


@pytest.mark.parametrize(
    "build, element",
    [
        (lambda: g.AddOp(typed(i64, 2, 3), typed(i64, 3)), i64),
        (lambda: g.MaxOp(typed(i32, 3), typed(i32, 3)), i32),
        (lambda: g.LessOp(typed(f32, 2, 3), typed(f32, 1)), i1),
        (lambda: g.EqualOp(typed(i1, 4), typed(i1, 4)), i1),
        (lambda: g.WhereOp(typed(i1, 4), typed(i64, 1), typed(i64, 4)), i64),
        (lambda: g.CastOp(typed(i1, 4), to="i64"), i64),
        (lambda: g.GatherOp(typed(i1, 5, 2), typed(i32, 3), axis=0), i1),
        (lambda: g.ReshapeOp(typed(i64, 2, 3), [6]), i64),
        (lambda: g.ShapeOp(typed(i1, 2, 3)), i64),
        (lambda: g.ReduceSumOp(typed(i64, 2, 3), axes=[1]), i64),
    ],
)
def test_result_element_type_is_inferred(build, element):
    op = build()
    op.verify()
    assert op.results[0].type.element_type == element


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: g.AddOp(typed(f32, 3), typed(i64, 3)), "one element type, got f32 and i64"),
        (lambda: g.ExpOp(typed(i64, 3)), "element type i64; supported: f32"),
        (lambda: g.AndOp(typed(f32, 3), typed(f32, 3)), "supported: i1"),
        (lambda: g.WhereOp(typed(f32, 3), typed(f32, 3), typed(f32, 3)), "the condition"),
        (lambda: g.GatherOp(typed(f32, 3), typed(f32, 2)), "indices have element type f32"),
        (lambda: g.CastOp(typed(f32, 3), to="f16"), 'cannot cast to "f16"'),
        (lambda: g.ConvOp(typed(i1, 1, 1, 3, 3), typed(i1, 1, 1, 1, 1), None), "supported: f32"),
        (lambda: g.MatmulOp(typed(i64, 2, 3), typed(i32, 3, 2)), "one element type"),
        (lambda: g.GemmOp(typed(i32, 2, 3), typed(i32, 3, 2), None), "supported: f32"),
    ],
)
def test_builder_rejects_unsupported_element_types(build, message):
    with pytest.raises(S.ShapeError, match=message):
        build()


def test_verifier_rejects_a_result_of_the_wrong_element_type():
    src = """func.func @f(%a: tensor<3xi64>) {
      %0 = graph.neg %a : (tensor<3xi64>) -> tensor<3xf32>
      func.return
    }"""
    with pytest.raises(VerifyException, match="does not match inferred tensor<3xi64>"):
        Parser(ctx(), src).parse_module().verify()
