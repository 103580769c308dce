"""The `graph` dialect: one op per model operator, on statically shaped f32 tensors.

This is what the ONNX frontend produces and what `convert-graph-to-linalg` consumes; the
contract is the graph dialect spec. Every op infers its result types from operands and
properties with the shared helpers in `dialects.graph_shapes` (used by builder and verifier
alike), prints as `graph.x %a, %b {props} : (types) -> types`, and carries a `pattern_kind`
that graph-level fusion reads (TVM's operator pattern kinds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    OptOperandDef,
    ParamAttrConstraint,
    ParsePropInAttrDict,
    VarConstraint,
    VarOperandDef,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator
from xdsl.utils.exceptions import VerifyException

from dialects import graph_shapes as S
from dialects.graph_shapes import Shape, ShapeError


class PatternKind(Enum):
    """How an op combines with its neighbours under fusion (TVM's OpPatternKind)."""

    ELEMENTWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    REDUCTION = 3
    OUT_FUSABLE = 4
    OPAQUE = 8


F32Tensor = TensorType[Float32Type]
I64 = IntegerType(64)
I32 = IntegerType(32)

# Python -> attribute conversion is by property name: these are f32, these are strings,
# sequences are i64 arrays and plain ints are i64.
_FLOAT_PROPS = frozenset({"alpha", "beta", "epsilon", "min", "max", "value"})
_STRING_PROPS = frozenset({"approximate", "to"})


def f32_attr(v: float) -> FloatAttr:
    return FloatAttr(float(v), f32)


def i64_attr(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), i64)


def ints_attr(v: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(x) for x in v])


def _to_attr(name: str, v: Any) -> Attribute:
    if isinstance(v, Attribute):
        return v
    if name in _FLOAT_PROPS:
        return f32_attr(v)
    if name in _STRING_PROPS:
        return StringAttr(v)
    if isinstance(v, Sequence | np.ndarray):
        return ints_attr(v)
    return i64_attr(v)


def attribute_value(a: Attribute) -> Any:
    """Property value as a plain Python value (for the shape helpers)."""
    if isinstance(a, DenseArrayBase):
        return tuple(a.get_values())
    if isinstance(a, IntegerAttr | FloatAttr):
        return a.value.data
    if isinstance(a, StringAttr):
        return a.data
    return a


def _shape(v: SSAValue) -> Shape:
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


class GraphOp(IRDLOperation):
    """Common base: generic builder with result inference and an inference-based verifier."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    if TYPE_CHECKING:
        pattern_kind: ClassVar[PatternKind]

    def __init__(self, *operands: SSAValue | Operation | Sequence[SSAValue] | None,
                 result_types: Sequence[Attribute] | None = None, **props: Any):
        op_def = type(self).get_irdl_definition()
        if len(operands) != len(op_def.operands):
            raise TypeError(f"{self.name} takes {len(op_def.operands)} operands")
        groups: list[SSAValue | Sequence[SSAValue]] = []
        for o in operands:
            if o is None:
                groups.append([])
            elif isinstance(o, Operation):
                groups.append(o.results[0])
            elif isinstance(o, SSAValue):
                groups.append(o)
            else:
                groups.append([x.results[0] if isinstance(x, Operation) else x for x in o])
        attrs = {k: _to_attr(k, v) for k, v in props.items() if v is not None}
        for name, pdef in op_def.properties.items():
            if name not in attrs and pdef.default_value is not None:
                attrs[name] = pdef.default_value
        if result_types is None:
            result_types = self.infer_result_types(groups, attrs)
        super().__init__(operands=groups, result_types=[list(result_types)]
                         if self._variadic_results() else list(result_types), properties=attrs)

    @classmethod
    def _variadic_results(cls) -> bool:
        return False

    @classmethod
    def infer_result_types(cls, operands: Sequence[SSAValue | Sequence[SSAValue]],
                           props: Mapping[str, Attribute]) -> list[Attribute]:
        """Result types from operand groups (one per operand def) and properties."""
        shapes: list[Any] = []
        for (_, odef), g in zip(cls.get_irdl_definition().operands, operands, strict=True):
            gs = [g] if isinstance(g, SSAValue) else list(g)
            if isinstance(odef, OptOperandDef):
                shapes.append(_shape(gs[0]) if gs else None)
            elif isinstance(odef, VarOperandDef):
                shapes.append([_shape(v) for v in gs])
            else:
                shapes.append(_shape(gs[0]))
        py = {k: attribute_value(v) for k, v in props.items()}
        out = cls.infer_shape(shapes, py)
        outs = out if isinstance(out, list) else [out]
        return [TensorType(cls.result_element_type(), s) for s in outs]

    @classmethod
    def result_element_type(cls) -> Attribute:
        return f32

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape | list[Shape]:
        """Override: operand shapes (None or shape for optional, list for variadic) -> result."""
        raise NotImplementedError

    def _operand_groups(self) -> list[SSAValue | Sequence[SSAValue]]:
        groups: list[SSAValue | Sequence[SSAValue]] = []
        for name, _ in type(self).get_irdl_definition().operands:
            v = getattr(self, name)
            groups.append([] if v is None else v)
        return groups

    def verify_(self) -> None:
        props = dict(self.properties)
        for name, pdef in type(self).get_irdl_definition().properties.items():
            if name not in props and pdef.default_value is not None:
                props[name] = pdef.default_value
        try:
            expected = self.infer_result_types(self._operand_groups(), props)
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        actual = [r.type for r in self.results]
        if len(expected) != len(actual):
            raise VerifyException(f"expected {len(expected)} results, got {len(actual)}")
        for e, a in zip(expected, actual, strict=True):
            if e != a:
                raise VerifyException(f"result type {a} does not match inferred {e}")


def _graph_op(kind: PatternKind) -> Callable[[type[GraphOp]], type[GraphOp]]:
    """irdl_op_definition plus the op's fusion pattern kind (IRDL forbids lowercase ClassVars)."""

    def wrap(cls: type[GraphOp]) -> type[GraphOp]:
        op = irdl_op_definition(cls)
        op.pattern_kind = kind  # type: ignore[attr-defined]
        return op

    return wrap


# ----------------------------------------------------------------------------- constant

_T = VarConstraint("T", base(TensorType))


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """Weights and other import-time values: a dense f32 or i64 tensor."""

    name = "graph.constant"
    result = result_def(_T)
    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (_T, AnyAttr())))
    assembly_format = "attr-dict $value"

    def __init__(self, value: np.ndarray | DenseIntOrFPElementsAttr):
        if not isinstance(value, DenseIntOrFPElementsAttr):
            value = dense_attr(value)
        super().__init__(result_types=[value.type], properties={"value": value})

    def verify_(self) -> None:
        el = self.value.get_element_type()
        if el not in (f32, I64):
            raise VerifyException(f"element type must be f32 or i64, got {el}")
        n = int(np.prod(self.value.get_shape()))
        if len(self.value) not in (n, 1):
            raise VerifyException(f"holds {len(self.value)} values for {n} elements")


ConstantOp.pattern_kind = PatternKind.OPAQUE


def dense_attr(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense f32 (floating input) or i64 (integer/bool input) attr straight from numpy bytes."""
    a = np.asarray(array)
    if np.issubdtype(a.dtype, np.floating):
        el, dt = f32, "<f4"
    elif np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_:
        el, dt = I64, "<i8"
    else:
        raise TypeError(f"unsupported constant dtype {a.dtype}")
    data = np.ascontiguousarray(a, dtype=dt).tobytes()
    return DenseIntOrFPElementsAttr(TensorType(el, a.shape), BytesAttr(data))


def constant_value(op: ConstantOp) -> np.ndarray:
    """The value of a graph.constant as a (read-only) numpy array, decoded from its bytes."""
    attr = op.value
    dt = "<f4" if attr.get_element_type() == f32 else "<i8"
    shape = attr.get_shape()
    flat = np.frombuffer(attr.data.data, dtype=dt)
    if flat.size == 1 and int(np.prod(shape)) != 1:
        return np.full(shape, flat[0], dtype=dt)
    return flat.reshape(shape)


# ----------------------------------------------------------------------------- families


class UnaryOp(GraphOp):
    """Elementwise f32 -> f32 op of the same shape."""

    x = operand_def(F32Tensor)
    result = result_def(F32Tensor)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return shapes[0]


class BinaryOp(GraphOp):
    """Elementwise op with numpy broadcasting."""

    lhs = operand_def(F32Tensor)
    rhs = operand_def(F32Tensor)
    result = result_def(F32Tensor)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.broadcast(shapes[0], shapes[1])


class ReduceOp(GraphOp):
    """Reduction over normalized sorted `axes` (empty = all) with `keepdims`."""

    x = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    axes = prop_def(DenseArrayBase, default_value=ints_attr([]))
    keepdims = prop_def(IntegerAttr, default_value=i64_attr(1))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.reduce(shapes[0], p["axes"], p["keepdims"])


class GlobalPoolOp(UnaryOp):
    """Pooling over all spatial dims, keeping them as 1."""

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.global_pool(shapes[0])


class SoftmaxBase(UnaryOp):
    axis = prop_def(IntegerAttr)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        S.check_axis(p["axis"], len(shapes[0]))
        return shapes[0]


_ONES2 = ints_attr([1, 1])
_ZEROS4 = ints_attr([0, 0, 0, 0])


class PoolOp(GraphOp):
    """2-D window pooling over NCHW."""

    x = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase, default_value=_ONES2)
    pads = prop_def(DenseArrayBase, default_value=_ZEROS4)
    ceil_mode = prop_def(IntegerAttr, default_value=i64_attr(0))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.pool2d(shapes[0], p["kernel"], p["strides"], p["pads"],
                        p.get("dilations", (1, 1)), p["ceil_mode"])


# ----------------------------------------------------------------------------- elementwise


def _unary(name: str, doc: str) -> type[GraphOp]:
    cls = type(name.title().replace("_", "") + "Op", (UnaryOp,),
               {"name": f"graph.{name}", "__doc__": doc, "__module__": __name__})
    return _graph_op(PatternKind.ELEMENTWISE)(cls)


SqrtOp = _unary("sqrt", "Elementwise square root.")
ExpOp = _unary("exp", "Elementwise e**x.")
LogOp = _unary("log", "Elementwise natural logarithm.")
NegOp = _unary("neg", "Elementwise negation.")
AbsOp = _unary("abs", "Elementwise absolute value.")
ReciprocalOp = _unary("reciprocal", "Elementwise 1/x.")
ReluOp = _unary("relu", "max(x, 0).")
SigmoidOp = _unary("sigmoid", "1 / (1 + exp(-x)).")
TanhOp = _unary("tanh", "Elementwise hyperbolic tangent.")
ErfOp = _unary("erf", "Elementwise Gauss error function.")
HardSwishOp = _unary("hard_swish", "x * max(0, min(1, x/6 + 1/2)).")
IdentityOp = _unary("identity", "Pass-through; removed by simplification.")
DropoutOp = _unary("dropout", "Inference-mode dropout, an identity; removed by simplification.")


@_graph_op(PatternKind.ELEMENTWISE)
class LeakyReluOp(UnaryOp):
    """x if x >= 0 else alpha * x."""

    name = "graph.leaky_relu"
    alpha = prop_def(FloatAttr, default_value=f32_attr(0.01))


@_graph_op(PatternKind.ELEMENTWISE)
class HardSigmoidOp(UnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "graph.hard_sigmoid"
    alpha = prop_def(FloatAttr, default_value=f32_attr(0.2))
    beta = prop_def(FloatAttr, default_value=f32_attr(0.5))


@_graph_op(PatternKind.ELEMENTWISE)
class ClipOp(UnaryOp):
    """min(max(x, min), max); absent bounds are -inf / +inf."""

    name = "graph.clip"
    min = prop_def(FloatAttr, default_value=f32_attr(float("-inf")))
    max = prop_def(FloatAttr, default_value=f32_attr(float("inf")))


@_graph_op(PatternKind.ELEMENTWISE)
class GeluOp(UnaryOp):
    """Gaussian error linear unit, exact ("none") or tanh-approximated."""

    name = "graph.gelu"
    approximate = prop_def(StringAttr, default_value=StringAttr("none"))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        if p["approximate"] not in ("none", "tanh"):
            raise ShapeError(f"approximate must be \"none\" or \"tanh\", got \"{p['approximate']}\"")
        return shapes[0]


@_graph_op(PatternKind.ELEMENTWISE)
class CastOp(GraphOp):
    """Conversion to f32 (the only supported target type)."""

    name = "graph.cast"
    x = operand_def(TensorType)
    result = result_def(F32Tensor)
    to = prop_def(StringAttr, default_value=StringAttr("f32"))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        if p["to"] != "f32":
            raise ShapeError(f"only cast to \"f32\" is supported, got \"{p['to']}\"")
        return shapes[0]


def _binary(name: str, doc: str) -> type[GraphOp]:
    cls = type(name.title() + "Op", (BinaryOp,),
               {"name": f"graph.{name}", "__doc__": doc, "__module__": __name__})
    return _graph_op(PatternKind.BROADCAST)(cls)


AddOp = _binary("add", "lhs + rhs with numpy broadcasting.")
SubOp = _binary("sub", "lhs - rhs with numpy broadcasting.")
MulOp = _binary("mul", "lhs * rhs with numpy broadcasting.")
DivOp = _binary("div", "lhs / rhs with numpy broadcasting.")
PowOp = _binary("pow", "lhs ** rhs with numpy broadcasting.")


# ----------------------------------------------------------------------------- linear algebra


@_graph_op(PatternKind.OUT_FUSABLE)
class ConvOp(GraphOp):
    """2-D convolution (NCHW); pads are explicit (top, left, bottom, right)."""

    name = "graph.conv"
    x = operand_def(F32Tensor)
    w = operand_def(F32Tensor)
    bias = opt_operand_def(F32Tensor)
    result = result_def(F32Tensor)
    strides = prop_def(DenseArrayBase, default_value=_ONES2)
    pads = prop_def(DenseArrayBase, default_value=_ZEROS4)
    dilations = prop_def(DenseArrayBase, default_value=_ONES2)
    group = prop_def(IntegerAttr, default_value=i64_attr(1))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        bias = shapes[2]
        return S.conv2d(shapes[0], shapes[1], bias, p["strides"], p["pads"], p["dilations"],
                        p["group"])


@_graph_op(PatternKind.OUT_FUSABLE)
class MatmulOp(GraphOp):
    """numpy.matmul: 1-D operands and batch broadcasting."""

    name = "graph.matmul"
    a = operand_def(F32Tensor)
    b = operand_def(F32Tensor)
    result = result_def(F32Tensor)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.matmul(shapes[0], shapes[1])


@_graph_op(PatternKind.OUT_FUSABLE)
class GemmOp(GraphOp):
    """ONNX Gemm: alpha * op(a) @ op(b) + beta * c."""

    name = "graph.gemm"
    a = operand_def(F32Tensor)
    b = operand_def(F32Tensor)
    c = opt_operand_def(F32Tensor)
    result = result_def(F32Tensor)
    alpha = prop_def(FloatAttr, default_value=f32_attr(1.0))
    beta = prop_def(FloatAttr, default_value=f32_attr(1.0))
    trans_a = prop_def(IntegerAttr, default_value=i64_attr(0))
    trans_b = prop_def(IntegerAttr, default_value=i64_attr(0))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        c = shapes[2]
        return S.gemm(shapes[0], shapes[1], c, p["trans_a"], p["trans_b"])


# ----------------------------------------------------------------------------- normalization


@_graph_op(PatternKind.OPAQUE)
class SoftmaxOp(SoftmaxBase):
    """exp(x) / sum(exp(x)) along one axis."""

    name = "graph.softmax"


@_graph_op(PatternKind.OPAQUE)
class LogSoftmaxOp(SoftmaxBase):
    """log(softmax(x)) along one axis."""

    name = "graph.log_softmax"


@_graph_op(PatternKind.OPAQUE)
class LayerNormOp(GraphOp):
    """Normalization over dims [axis, rank), then scale and optional bias."""

    name = "graph.layer_norm"
    x = operand_def(F32Tensor)
    scale = operand_def(F32Tensor)
    bias = opt_operand_def(F32Tensor)
    result = result_def(F32Tensor)
    axis = prop_def(IntegerAttr)
    epsilon = prop_def(FloatAttr, default_value=f32_attr(1e-5))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        bias = shapes[2]
        return S.layer_norm(shapes[0], shapes[1], bias, p["axis"])


@_graph_op(PatternKind.BROADCAST)
class BatchNormOp(GraphOp):
    """Inference batch normalization over channel dim 1."""

    name = "graph.batch_norm"
    x = operand_def(F32Tensor)
    scale = operand_def(F32Tensor)
    bias = operand_def(F32Tensor)
    mean = operand_def(F32Tensor)
    var = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    epsilon = prop_def(FloatAttr, default_value=f32_attr(1e-5))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.batch_norm(shapes[0], shapes[1:])


# ----------------------------------------------------------------------------- pooling


@_graph_op(PatternKind.OUT_FUSABLE)
class MaxPoolOp(PoolOp):
    """Max over a window; padding never wins."""

    name = "graph.max_pool"
    dilations = prop_def(DenseArrayBase, default_value=_ONES2)


@_graph_op(PatternKind.OUT_FUSABLE)
class AvgPoolOp(PoolOp):
    """Average over a window, padding counted only if count_include_pad."""

    name = "graph.avg_pool"
    count_include_pad = prop_def(IntegerAttr, default_value=i64_attr(0))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        if p["count_include_pad"] not in (0, 1):
            raise ShapeError("count_include_pad must be 0 or 1")
        return super().infer_shape(shapes, p)


@_graph_op(PatternKind.REDUCTION)
class GlobalAvgPoolOp(GlobalPoolOp):
    """Mean over all spatial dims."""

    name = "graph.global_avg_pool"


@_graph_op(PatternKind.REDUCTION)
class GlobalMaxPoolOp(GlobalPoolOp):
    """Max over all spatial dims."""

    name = "graph.global_max_pool"


# ----------------------------------------------------------------------------- reductions


@_graph_op(PatternKind.REDUCTION)
class ReduceMeanOp(ReduceOp):
    name = "graph.reduce_mean"


@_graph_op(PatternKind.REDUCTION)
class ReduceSumOp(ReduceOp):
    name = "graph.reduce_sum"


@_graph_op(PatternKind.REDUCTION)
class ReduceMaxOp(ReduceOp):
    name = "graph.reduce_max"


# ----------------------------------------------------------------------------- data movement


@_graph_op(PatternKind.INJECTIVE)
class ReshapeOp(GraphOp):
    """Same elements, new shape (given by the result type)."""

    name = "graph.reshape"
    x = operand_def(F32Tensor)
    result = result_def(F32Tensor)

    def __init__(self, x: SSAValue | Operation, shape: Sequence[int]):
        super().__init__(x, result_types=[TensorType(f32, list(shape))])

    def verify_(self) -> None:
        src, dst = _shape(self.x), _shape(self.result)
        if int(np.prod(src)) != int(np.prod(dst)):
            raise VerifyException(
                f"cannot reshape {list(src)} into {list(dst)}: element counts differ")


@_graph_op(PatternKind.INJECTIVE)
class FlattenOp(UnaryOp):
    """Collapse to 2-D: dims [0, axis) and [axis, rank)."""

    name = "graph.flatten"
    axis = prop_def(IntegerAttr, default_value=i64_attr(1))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.flatten(shapes[0], p["axis"])


@_graph_op(PatternKind.INJECTIVE)
class SqueezeOp(UnaryOp):
    """Remove the given unit dims."""

    name = "graph.squeeze"
    axes = prop_def(DenseArrayBase)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.squeeze(shapes[0], p["axes"])


@_graph_op(PatternKind.INJECTIVE)
class UnsqueezeOp(UnaryOp):
    """Insert unit dims at the given result positions."""

    name = "graph.unsqueeze"
    axes = prop_def(DenseArrayBase)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.unsqueeze(shapes[0], p["axes"])


@_graph_op(PatternKind.INJECTIVE)
class TransposeOp(UnaryOp):
    """Permute dims: result dim i is input dim perm[i]."""

    name = "graph.transpose"
    perm = prop_def(DenseArrayBase)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.transpose(shapes[0], p["perm"])


@_graph_op(PatternKind.INJECTIVE)
class ConcatOp(GraphOp):
    """Join inputs along one axis."""

    name = "graph.concat"
    inputs = var_operand_def(F32Tensor)
    result = result_def(F32Tensor)
    axis = prop_def(IntegerAttr)

    def __init__(self, inputs: Sequence[SSAValue | Operation], axis: int):
        super().__init__(list(inputs), axis=axis)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.concat(shapes[0], p["axis"])


@_graph_op(PatternKind.INJECTIVE)
class SplitOp(GraphOp):
    """Cut along one axis into pieces of the given sizes (one result each)."""

    name = "graph.split"
    x = operand_def(F32Tensor)
    outputs = var_result_def(F32Tensor)
    axis = prop_def(IntegerAttr)
    sizes = prop_def(DenseArrayBase)

    @classmethod
    def _variadic_results(cls) -> bool:
        return True

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> list[Shape]:
        return S.split(shapes[0], p["axis"], p["sizes"])


@_graph_op(PatternKind.INJECTIVE)
class SliceOp(UnaryOp):
    """Strided slice with fully normalized per-dim starts/ends (exclusive)/steps."""

    name = "graph.slice"
    starts = prop_def(DenseArrayBase)
    ends = prop_def(DenseArrayBase)
    steps = prop_def(DenseArrayBase)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.slice_(shapes[0], p["starts"], p["ends"], p["steps"])


@_graph_op(PatternKind.INJECTIVE)
class GatherOp(GraphOp):
    """ONNX Gather along one axis; negative indices count from the end."""

    name = "graph.gather"
    data = operand_def(F32Tensor)
    indices = operand_def(TensorType[IntegerType])
    result = result_def(F32Tensor)
    axis = prop_def(IntegerAttr, default_value=i64_attr(0))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.gather(shapes[0], shapes[1], p["axis"])

    def verify_(self) -> None:
        el = self.indices.type.get_element_type()  # type: ignore[attr-defined]
        if el not in (I64, I32):
            raise VerifyException(f"indices must be i64 or i32, got {el}")
        super().verify_()


@_graph_op(PatternKind.INJECTIVE)
class PadOp(UnaryOp):
    """Constant padding: pads = begins then ends (negative crops)."""

    name = "graph.pad"
    pads = prop_def(DenseArrayBase)
    value = prop_def(FloatAttr, default_value=f32_attr(0.0))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.pad(shapes[0], p["pads"])


@_graph_op(PatternKind.OPAQUE)
class ShapeOp(GraphOp):
    """The shape of a tensor as a 1-D i64 tensor (the frontend folds it)."""

    name = "graph.shape"
    x = operand_def(TensorType)
    result = result_def(TensorType[IntegerType])

    @classmethod
    def result_element_type(cls) -> Attribute:
        return I64

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return (len(shapes[0]),)


# ----------------------------------------------------------------------------- fusion


_PATTERN_NAMES = frozenset(k.name.lower() for k in PatternKind)


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A group of graph ops that becomes one kernel (made by `fuse-ops`).

    The single block's arguments stand for the operands (same types); constants the group uses
    are cloned inside (the region is isolated from above); `graph.yield` returns the results.
    `name` joins the members' short names with '+', `pattern` is the group's dominant pattern
    kind ("out_fusable", "reduction", "injective", "broadcast", "elementwise").

        %r = graph.fused "conv+add+relu" out_fusable (%x, %y) : (T0, T1) -> T2 {
        ^bb0(%a: T0, %b: T1):
          ...
          graph.yield %v : T2
        }
    """

    name = "graph.fused"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    kernel_name = prop_def(StringAttr, prop_name="name")
    pattern = prop_def(StringAttr)
    traits = traits_def(IsolatedFromAbove())

    def __init__(self, name: str, pattern: str, inputs: Sequence[SSAValue],
                 result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[list(inputs)], result_types=[list(result_types)],
                         properties={"name": StringAttr(name), "pattern": StringAttr(pattern)},
                         regions=[body])

    @property
    def block(self) -> Block:
        return self.body.block

    def verify_(self) -> None:
        if not self.kernel_name.data:
            raise VerifyException("graph.fused needs a non-empty name")
        if self.pattern.data not in _PATTERN_NAMES:
            raise VerifyException(
                f"unknown pattern \"{self.pattern.data}\", expected one of "
                + ", ".join(sorted(_PATTERN_NAMES)))
        block = self.body.block
        arg_types = [a.type for a in block.args]
        in_types = [v.type for v in self.inputs]
        if arg_types != in_types:
            raise VerifyException(
                f"block argument types ({', '.join(map(str, arg_types))}) do not match "
                f"operand types ({', '.join(map(str, in_types))})")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("graph.fused body must end with graph.yield")
        got = [v.type for v in last.values]
        want = [r.type for r in self.outputs]
        if got != want:
            raise VerifyException(
                f"graph.yield types ({', '.join(map(str, got))}) do not match "
                f"result types ({', '.join(map(str, want))})")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.kernel_name)
        printer.print_string(f" {self.pattern.data} (")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(") : ")
        printer.print_function_type([v.type for v in self.inputs],
                                    [r.type for r in self.outputs])
        extra = {k: v for k, v in self.attributes.items()}
        if extra:
            printer.print_string(" attributes ")
            printer.print_attr_dict(extra)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> FusedOp:
        name = parser.parse_str_literal("kernel name")
        pattern = parser.parse_identifier("pattern kind")
        operands: list[UnresolvedOperand] = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        parser.parse_punctuation(":")
        pos = parser.pos
        ftype = parser.parse_function_type()
        ins = list(ftype.inputs.data)
        if len(ins) != len(operands):
            parser.raise_error(f"expected {len(operands)} operand types, got {len(ins)}", pos)
        values = [parser.resolve_operand(o, t) for o, t in zip(operands, ins, strict=True)]
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        op = cls(name, pattern, values, list(ftype.outputs.data), body)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of a graph.fused body: the group's results."""

    name = "graph.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(FusedOp))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


FusedOp.pattern_kind = PatternKind.OPAQUE  # type: ignore[attr-defined]
YieldOp.pattern_kind = PatternKind.OPAQUE  # type: ignore[attr-defined]


GRAPH_OPS: list[type[IRDLOperation]] = [
    ConstantOp, AddOp, SubOp, MulOp, DivOp, PowOp,
    SqrtOp, ExpOp, LogOp, NegOp, AbsOp, ReciprocalOp, ReluOp, SigmoidOp, TanhOp, ErfOp,
    HardSwishOp, LeakyReluOp, HardSigmoidOp, ClipOp, GeluOp,
    ConvOp, MatmulOp, GemmOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchNormOp,
    MaxPoolOp, AvgPoolOp, GlobalAvgPoolOp, GlobalMaxPoolOp,
    ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, TransposeOp, ConcatOp, SplitOp, SliceOp,
    GatherOp, PadOp, ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ShapeOp,
    IdentityOp, DropoutOp, CastOp, FusedOp, YieldOp,
]

Graph = Dialect("graph", GRAPH_OPS, [])
