"""The `graph` dialect: one op per model operator, on statically shaped tensors.

Tensors hold f32, i64, i32 or i1 (bool) elements. Each op declares which element types its
operands may have (`ELEMENTS`: float math is f32 only, arithmetic is numeric, data movement
takes any) and infers its result element type (the operands' by default; i1 for comparisons).

This is what the ONNX frontend produces and what `convert-graph-to-linalg` consumes. Every op
is declared explicitly (operands, typed properties, traits, assembly format) and infers its
result types from operands and properties with the shared helpers in `dialects.graph_shapes`,
used by builder and verifier alike. Ops print as `graph.x %a, %b {props} : (types) -> types`.
The `FusionPattern` trait gives each op the pattern kind that graph-level fusion reads (TVM's
operator pattern kinds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    OptOperandDef,
    ParamAttrConstraint,
    ParsePropInAttrDict,
    PropertyDef,
    VarConstraint,
    VarOperandDef,
    VarResultDef,
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
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    OpTrait,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from dialects import graph_shapes as S
from dialects.dense import dense_to_numpy, numpy_to_dense
from dialects.graph_shapes import Shape, ShapeError

# ----------------------------------------------------------------------------- fusion kinds


class PatternKind(Enum):
    """How an op combines with its neighbours under fusion (TVM's OpPatternKind)."""

    ELEMENTWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    REDUCTION = 3
    OUT_FUSABLE = 4
    OPAQUE = 8


@dataclass(frozen=True)
class FusionPattern(OpTrait):
    """The op's pattern kind, a static fact of its definition that `fuse-ops` groups by."""

    kind: PatternKind


def pattern_kind(op: Operation | type[Operation]) -> PatternKind | None:
    """The fusion pattern kind of a graph op (or op class); None for ops of other dialects."""
    trait = op.get_trait(FusionPattern)
    return None if trait is None else trait.kind


# ----------------------------------------------------------------------------- attributes

F32Tensor = TensorType[Float32Type]
AnyTensor = TensorType[Attribute]

FLOAT: tuple[Attribute, ...] = (f32,)
INTEGER: tuple[Attribute, ...] = (i64, i32)
BOOL: tuple[Attribute, ...] = (i1,)
NUMERIC = FLOAT + INTEGER
ANY = NUMERIC + BOOL
"""The element types graph tensors hold, by the families ops accept."""

ELEMENT_NAMES: dict[str, Attribute] = {str(t): t for t in ANY}
"""Element types by the names `graph.cast` takes."""


def _element_type(v: SSAValue) -> Attribute:
    t = v.type
    assert isinstance(t, TensorType)
    return t.element_type


def same_element_type(
    elements: Sequence[Attribute], allowed: Sequence[Attribute], what: str = "operands"
) -> Attribute:
    """The one element type of `elements`; ShapeError when they differ or one is not allowed."""
    if not elements:
        return f32
    first = elements[0]
    for e in elements[1:]:
        if e != first:
            raise ShapeError(f"{what} must have one element type, got {first} and {e}")
    if first not in allowed:
        raise ShapeError(
            f"{what} have element type {first}; supported: {', '.join(map(str, allowed))}"
        )
    return first


I64Attr = IntegerAttr[I64]
F32Attr = FloatAttr[Float32Type]
I64Array = DenseArrayBase[I64]


def f32_attr(v: float) -> F32Attr:
    return FloatAttr(float(v), f32)


def i64_attr(v: int) -> I64Attr:
    return IntegerAttr(int(v), i64)


def ints_attr(v: Sequence[int] | np.ndarray) -> I64Array:
    return DenseArrayBase.from_list(i64, [int(x) for x in v])


_FROM_PYTHON: dict[type[Attribute], Callable[[Any], Attribute]] = {
    IntegerAttr: i64_attr,
    FloatAttr: f32_attr,
    StringAttr: StringAttr,
    DenseArrayBase: ints_attr,
}
"""Builders take plain Python values; the declared property type picks the conversion."""


def _property(op: str, name: str, pdef: PropertyDef | None, value: object) -> Attribute:
    if pdef is None:
        raise TypeError(f"{op} has no property '{name}'")
    if isinstance(value, Attribute):
        return value
    bases = pdef.constr.get_bases() or set()
    convert = _FROM_PYTHON.get(next(iter(bases))) if len(bases) == 1 else None
    if convert is None:
        raise TypeError(f"{op} property '{name}' must be given as an attribute")
    return convert(value)


def attribute_value(a: Attribute) -> Any:
    """Property value as a plain Python value (for the shape helpers and the folders)."""
    if isinstance(a, DenseArrayBase):
        return tuple(a.get_values())
    if isinstance(a, IntegerAttr | FloatAttr):
        return a.value.data
    if isinstance(a, StringAttr):
        return a.data
    return a


# ----------------------------------------------------------------------------- base

ValueLike = SSAValue | Operation
"""An operand as builders accept it: a value, or an op with a single result."""


def _value(v: ValueLike) -> SSAValue:
    return v.results[0] if isinstance(v, Operation) else v


def _shape(v: SSAValue) -> Shape:
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


class GraphOp(IRDLOperation):
    """Base of the tensor ops: a builder that infers result types and a verifier that checks them.

    Subclasses declare operands, results and properties and implement `infer_shape`; the
    builder takes operands positionally (None for an absent optional one, a sequence for a
    variadic one) and properties as keywords, as attributes or plain Python values.
    """

    irdl_options = (ParsePropInAttrDict(),)

    ELEMENTS: ClassVar[tuple[Attribute, ...]] = FLOAT
    """Element types the tensor operands may have (all the same, by default)."""

    def __init__(self, *operands: ValueLike | Sequence[ValueLike] | None, **props: object):
        op_def = self.get_irdl_definition()
        if len(operands) != len(op_def.operands):
            raise TypeError(f"{self.name} takes {len(op_def.operands)} operands")
        groups: list[SSAValue | Sequence[SSAValue] | None] = [
            o if o is None else _value(o) if isinstance(o, ValueLike) else [_value(v) for v in o]
            for o in operands
        ]
        properties = {
            k: _property(self.name, k, op_def.properties.get(k), v)
            for k, v in props.items()
            if v is not None
        }
        result_types = self.infer_result_types(groups, properties)
        variadic = bool(op_def.results) and isinstance(op_def.results[0][1], VarResultDef)
        super().__init__(
            operands=groups,
            result_types=[result_types] if variadic else result_types,
            properties=properties,
        )

    @classmethod
    def infer_result_types(
        cls,
        operands: Sequence[SSAValue | Sequence[SSAValue] | None],
        props: Mapping[str, Attribute],
    ) -> list[Attribute]:
        """Result types from operand groups (one per operand definition) and properties."""
        op_def = cls.get_irdl_definition()
        shapes: list[Any] = []
        elements: list[Any] = []
        for (_, odef), group in zip(op_def.operands, operands, strict=True):
            values = [] if group is None else [group] if isinstance(group, SSAValue) else group
            if any(not isinstance(v.type, TensorType) for v in values):
                raise ShapeError(f"operands must be tensors, got {[str(v.type) for v in values]}")
            if isinstance(odef, OptOperandDef):
                shapes.append(_shape(values[0]) if values else None)
                elements.append(_element_type(values[0]) if values else None)
            elif isinstance(odef, VarOperandDef):
                shapes.append([_shape(v) for v in values])
                elements.append([_element_type(v) for v in values])
            else:
                shapes.append(_shape(values[0]))
                elements.append(_element_type(values[0]))
        defaults = {n: d.default_value for n, d in op_def.properties.items()}
        given = {k: v for k, v in (defaults | dict(props)).items() if v is not None}
        py = {k: attribute_value(v) for k, v in given.items()}
        out = cls.infer_shape(shapes, py)
        el = cls.infer_element_type(elements, py)
        return [TensorType(el, s) for s in (out if isinstance(out, list) else [out])]

    @classmethod
    def infer_element_type(cls, elements: list[Any], p: dict[str, Any]) -> Attribute:
        """The result element type from the operands' (None for an absent optional operand, a
        list for a variadic one): by default they share one of `ELEMENTS`, and so does the
        result."""
        flat = [
            e
            for grp in elements
            for e in (grp if isinstance(grp, list) else [grp])
            if e is not None
        ]
        return same_element_type(flat, cls.ELEMENTS)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape | list[Shape]:
        """Result shape(s) from operand shapes (None for an absent optional operand, a list for
        a variadic one) and property values."""
        raise NotImplementedError(f"{cls.name} does not infer its result shape")

    def verify_(self) -> None:
        groups = [getattr(self, name) for name, _ in self.get_irdl_definition().operands]
        try:
            expected = self.infer_result_types(groups, self.properties)
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        actual = [r.type for r in self.results]
        if len(expected) != len(actual):
            raise VerifyException(f"expected {len(expected)} results, got {len(actual)}")
        for want, got in zip(expected, actual, strict=True):
            if want != got:
                raise VerifyException(f"result type {got} does not match inferred {want}")


# ----------------------------------------------------------------------------- families


class UnaryOp(GraphOp):
    """One operand; elementwise ops keep its shape (and element type)."""

    x = operand_def(AnyTensor)
    result = result_def(AnyTensor)

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return shapes[0]


class BinaryOp(GraphOp):
    """Elementwise op with numpy broadcasting."""

    lhs = operand_def(AnyTensor)
    rhs = operand_def(AnyTensor)
    result = result_def(AnyTensor)

    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC

    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.broadcast(shapes[0], shapes[1])


class ReduceOp(GraphOp):
    """Reduction over normalized sorted `axes` (empty = all) with `keepdims`."""

    x = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axes = prop_def(I64Array, default_value=ints_attr([]))
    keepdims = prop_def(I64Attr, default_value=i64_attr(1))

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.reduce(shapes[0], p["axes"], p["keepdims"])


class GlobalPoolOp(UnaryOp):
    """Pooling over all spatial dims, keeping them as 1."""

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.global_pool(shapes[0])


class SoftmaxBase(UnaryOp):
    """Normalization along one (normalized) axis."""

    axis = prop_def(I64Attr)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        S.check_axis(p["axis"], len(shapes[0]))
        return shapes[0]


_EMPTY = ints_attr([])


def _window_defaults(x: object, props: dict[str, object]) -> dict[str, object]:
    """Window properties a builder was not given, spelled out for x's spatial rank (an empty
    array, what a parsed op without them holds, means the same: ones, zeros, ones)."""
    if not isinstance(x, SSAValue | Operation):
        return props
    x = _value(x)
    if not isinstance(x.type, TensorType) or len(_shape(x)) < 3:
        return props  # the shape check reports it
    r = len(_shape(x)) - 2
    defaults = {"strides": [1] * r, "pads": [0] * (2 * r), "dilations": [1] * r}
    return props | {k: v for k, v in defaults.items() if props.get(k) is None}


class WindowOp(GraphOp):
    """An op sliding a window over the spatial dims of an (N, C, D1..Dr) tensor, for any r >= 1;
    pads are (begins..., ends...), and an empty strides/pads/dilations means the default."""

    strides = prop_def(I64Array, default_value=_EMPTY)
    pads = prop_def(I64Array, default_value=_EMPTY)
    dilations = prop_def(I64Array, default_value=_EMPTY)

    def __init__(self, *operands: ValueLike | Sequence[ValueLike] | None, **props: object):
        first = operands[0] if operands else None
        super().__init__(*operands, **_window_defaults(first, props))


class PoolOp(WindowOp):
    """Window pooling over the spatial dims."""

    x = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    kernel = prop_def(I64Array)
    ceil_mode = prop_def(I64Attr, default_value=i64_attr(0))

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.pool(
            shapes[0], p["kernel"], p["strides"], p["pads"], p["dilations"], p["ceil_mode"]
        )


# ----------------------------------------------------------------------------- constant

_T = VarConstraint("T", base(TensorType))


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """Weights and other import-time values: a dense tensor of a graph element type."""

    name = "graph.constant"
    result = result_def(_T)
    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (_T, AnyAttr())))
    traits = traits_def(Pure(), FusionPattern(PatternKind.OPAQUE))

    assembly_format = "attr-dict $value"

    def __init__(self, value: np.ndarray | DenseIntOrFPElementsAttr):
        if not isinstance(value, DenseIntOrFPElementsAttr):
            value = dense_attr(value)
        super().__init__(result_types=[value.type], properties={"value": value})

    def verify_(self) -> None:
        el = self.value.get_element_type()
        if el not in ANY:
            raise VerifyException(
                f"element type must be one of {', '.join(map(str, ANY))}, got {el}"
            )
        n = int(np.prod(self.value.get_shape()))
        if len(self.value) not in (n, 1):
            raise VerifyException(f"holds {len(self.value)} values for {n} elements")


def dense_attr(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attr of a graph element type: floats become f32, bool i1, int32 and the narrower
    integers i32 (the frontend computes int8..uint16 in int32), other integers i64."""
    a = np.asarray(array)
    if np.issubdtype(a.dtype, np.floating):
        return numpy_to_dense(a.astype(np.float32, copy=False))
    if a.dtype == np.bool_ or a.dtype == np.int32:
        return numpy_to_dense(a)
    if a.dtype in (np.int8, np.uint8, np.int16, np.uint16):
        return numpy_to_dense(a.astype(np.int32))
    if np.issubdtype(a.dtype, np.integer):
        return numpy_to_dense(a.astype(np.int64, copy=False))
    raise TypeError(f"unsupported constant dtype {a.dtype}")


def constant_value(op: ConstantOp) -> np.ndarray:
    """The value of a graph.constant as a (read-only) numpy array, decoded from its bytes."""
    return dense_to_numpy(op.value)


# ----------------------------------------------------------------------------- elementwise


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Elementwise square root."""

    name = "graph.sqrt"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class ExpOp(UnaryOp):
    """Elementwise e**x."""

    name = "graph.exp"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class LogOp(UnaryOp):
    """Elementwise natural logarithm."""

    name = "graph.log"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class NegOp(UnaryOp):
    """Elementwise negation."""

    name = "graph.neg"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class AbsOp(UnaryOp):
    """Elementwise absolute value."""

    name = "graph.abs"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """Elementwise 1/x."""

    name = "graph.reciprocal"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0)."""

    name = "graph.relu"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """1 / (1 + exp(-x))."""

    name = "graph.sigmoid"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class TanhOp(UnaryOp):
    """Elementwise hyperbolic tangent."""

    name = "graph.tanh"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class ErfOp(UnaryOp):
    """Elementwise Gauss error function."""

    name = "graph.erf"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class FloorOp(UnaryOp):
    """Round down to an integral value."""

    name = "graph.floor"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class CeilOp(UnaryOp):
    """Round up to an integral value."""

    name = "graph.ceil"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class RoundOp(UnaryOp):
    """Round half to even (ONNX Round)."""

    name = "graph.round"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class SinOp(UnaryOp):
    """Elementwise sine."""

    name = "graph.sin"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class CosOp(UnaryOp):
    """Elementwise cosine."""

    name = "graph.cos"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class HardSwishOp(UnaryOp):
    """x * max(0, min(1, x/6 + 1/2))."""

    name = "graph.hard_swish"
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class IdentityOp(UnaryOp):
    """Pass-through; removed by simplification."""

    name = "graph.identity"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class DropoutOp(UnaryOp):
    """Inference-mode dropout, an identity; removed by simplification."""

    name = "graph.dropout"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    """x if x >= 0 else alpha * x."""

    name = "graph.leaky_relu"
    alpha = prop_def(F32Attr, default_value=f32_attr(0.01))
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "graph.hard_sigmoid"
    alpha = prop_def(F32Attr, default_value=f32_attr(0.2))
    beta = prop_def(F32Attr, default_value=f32_attr(0.5))
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class ClipOp(UnaryOp):
    """min(max(x, min), max); absent bounds are -inf / +inf."""

    name = "graph.clip"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC
    min = prop_def(F32Attr, default_value=f32_attr(float("-inf")))
    max = prop_def(F32Attr, default_value=f32_attr(float("inf")))
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class GeluOp(UnaryOp):
    """Gaussian error linear unit, exact ("none") or tanh-approximated."""

    name = "graph.gelu"
    approximate = prop_def(StringAttr, default_value=StringAttr("none"))
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        if p["approximate"] not in ("none", "tanh"):
            raise ShapeError(f'approximate must be "none" or "tanh", got "{p["approximate"]}"')
        return shapes[0]


@irdl_op_definition
class CastOp(UnaryOp):
    """Element type conversion to `to` (f32, i64, i32 or i1), with ONNX's semantics: float to
    integer truncates toward zero, anything to bool is `!= 0`."""

    name = "graph.cast"
    to = prop_def(StringAttr, default_value=StringAttr("f32"))
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))

    @classmethod
    def infer_element_type(cls, elements: list[Any], p: dict[str, Any]) -> Attribute:
        same_element_type(elements, ANY)
        if p["to"] not in ELEMENT_NAMES:
            raise ShapeError(f'cannot cast to "{p["to"]}"; supported: {", ".join(ELEMENT_NAMES)}')
        return ELEMENT_NAMES[p["to"]]


@irdl_op_definition
class AddOp(BinaryOp):
    """lhs + rhs with numpy broadcasting."""

    name = "graph.add"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class SubOp(BinaryOp):
    """lhs - rhs with numpy broadcasting."""

    name = "graph.sub"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class MulOp(BinaryOp):
    """lhs * rhs with numpy broadcasting."""

    name = "graph.mul"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class DivOp(BinaryOp):
    """lhs / rhs with numpy broadcasting."""

    name = "graph.div"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class PowOp(BinaryOp):
    """lhs ** rhs with numpy broadcasting."""

    name = "graph.pow"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = FLOAT
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class MaxOp(BinaryOp):
    """Elementwise maximum with numpy broadcasting (nan wins, as in ONNX Max)."""

    name = "graph.max"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class MinOp(BinaryOp):
    """Elementwise minimum with numpy broadcasting (nan wins, as in ONNX Min)."""

    name = "graph.min"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


class CompareOp(BinaryOp):
    """An elementwise comparison with numpy broadcasting: an i1 result."""

    @classmethod
    def infer_element_type(cls, elements: list[Any], p: dict[str, Any]) -> Attribute:
        same_element_type(elements, cls.ELEMENTS)
        return i1


@irdl_op_definition
class EqualOp(CompareOp):
    """lhs == rhs."""

    name = "graph.equal"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class LessOp(CompareOp):
    """lhs < rhs."""

    name = "graph.less"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class LessEqualOp(CompareOp):
    """lhs <= rhs."""

    name = "graph.less_equal"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class GreaterOp(CompareOp):
    """lhs > rhs."""

    name = "graph.greater"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    """lhs >= rhs."""

    name = "graph.greater_equal"
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class AndOp(BinaryOp):
    """Logical and of bool tensors, bitwise and of integers."""

    name = "graph.and"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = BOOL + INTEGER
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class OrOp(BinaryOp):
    """Logical or of bool tensors, bitwise or of integers."""

    name = "graph.or"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = BOOL + INTEGER
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class XorOp(BinaryOp):
    """Logical exclusive or of bool tensors, bitwise of integers."""

    name = "graph.xor"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = BOOL + INTEGER
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class NotOp(UnaryOp):
    """Logical not of a bool tensor, bitwise not (every bit flipped) of integers."""

    name = "graph.not"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = BOOL + INTEGER
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))


@irdl_op_definition
class ShiftLeftOp(BinaryOp):
    """lhs << rhs of integers; a shift amount outside [0, bit width) is undefined (LLVM's
    poison): the frontend clamps it."""

    name = "graph.shift_left"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = INTEGER
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class ShiftRightOp(BinaryOp):
    """lhs >> rhs of integers, arithmetic (sign-extending); a shift amount outside [0, bit
    width) is undefined: the frontend clamps it."""

    name = "graph.shift_right"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = INTEGER
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))


@irdl_op_definition
class BitcastOp(UnaryOp):
    """The same bits read as another element type of the same width (f32 <-> i32)."""

    name = "graph.bitcast"
    to = prop_def(StringAttr, default_value=StringAttr("i32"))
    traits = traits_def(Pure(), FusionPattern(PatternKind.ELEMENTWISE))

    @classmethod
    def infer_element_type(cls, elements: list[Any], p: dict[str, Any]) -> Attribute:
        (source,) = elements
        target = ELEMENT_NAMES.get(p["to"])
        if target is None or {source, target} != {f32, i32}:
            raise ShapeError(f'cannot bitcast {source} to "{p["to"]}"; supported: f32 <-> i32')
        return target


@irdl_op_definition
class WhereOp(GraphOp):
    """cond ? x : y elementwise, the three broadcast numpy-style."""

    name = "graph.where"
    cond = operand_def(AnyTensor)
    x = operand_def(AnyTensor)
    y = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))

    assembly_format = "$cond `,` $x `,` $y attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.broadcast(S.broadcast(shapes[0], shapes[1]), shapes[2])

    @classmethod
    def infer_element_type(cls, elements: list[Any], p: dict[str, Any]) -> Attribute:
        same_element_type([elements[0]], BOOL, "the condition")
        return same_element_type(elements[1:], ANY, "x and y")


@irdl_op_definition
class ExpandOp(UnaryOp):
    """Broadcast to `shape` numpy-style (the result may be larger than `shape`, as in ONNX)."""

    name = "graph.expand"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    shape = prop_def(I64Array)
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.broadcast(shapes[0], p["shape"])


# ----------------------------------------------------------------------------- linear algebra


class ConvBase(WindowOp):
    """Operands, group and assembly of the convolutions (NCHW and blocked)."""

    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC  # integers: ConvInteger, QLinearConv
    x = operand_def(AnyTensor)
    w = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    group = prop_def(I64Attr, default_value=i64_attr(1))

    assembly_format = "$x `,` $w (`,` $bias^)? attr-dict `:` functional-type(operands, results)"


@irdl_op_definition
class ConvOp(ConvBase):
    """N-D convolution: (N, C, D1..Dr) input, (M, C/group, k1..kr) weights, pads (begins...,
    ends...)."""

    name = "graph.conv"
    traits = traits_def(Pure(), FusionPattern(PatternKind.OUT_FUSABLE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        x, w, bias = shapes
        return S.conv(x, w, bias, S.ConvWindow.of(p))


@irdl_op_definition
class ConvNchwcOp(ConvBase):
    """2-D convolution in the blocked layout NCHW[b]c (AutoTVM's conv2d_NCHWc): (N, C/bi, H, W,
    bi) input, (M/bo, C/wi, KH, KW, wi, bo) weights, result (N, M/bo, OH, OW, bo). A block of
    channels is the innermost, unit-stride dim of input, weights and result, so the output
    channels fill vector lanes whatever the image width. Made by `blocked-layout`: dense,
    depthwise (group = C, wi = 1) and grouped with whole blocks per group."""

    name = "graph.conv_nchwc"
    traits = traits_def(Pure(), FusionPattern(PatternKind.OUT_FUSABLE))

    def __init__(self, *operands: ValueLike | Sequence[ValueLike] | None, **props: object):
        # two spatial dims whatever the rank (WindowOp's defaults would count the block as one)
        defaults = {"strides": [1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1]}
        GraphOp.__init__(
            self, *operands, **(props | {k: v for k, v in defaults.items() if props.get(k) is None})
        )

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        x, w, bias = shapes
        return S.conv_nchwc(x, w, bias, S.ConvWindow.of(p))


@irdl_op_definition
class LayoutTransformOp(UnaryOp):
    """Move a 2-D image tensor between the layouts "NCHW" and "NCHW<b>c" (TVM's
    layout_transform); `blocked-layout` places them and cancels the pairs that meet."""

    name = "graph.layout_transform"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    src = prop_def(StringAttr)
    dst = prop_def(StringAttr)
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.layout_transform(shapes[0], p["src"], p["dst"])


@irdl_op_definition
class WinogradInputOp(GraphOp):
    """The input half of a Winograd F(tile x tile, 3x3) conv (dialects/winograd.py): the blocked
    image's padded (tile+2)^2 tiles, each moved to the transform space (BT d B), as the
    ((tile+2)^2, tiles, channels) left operand of one matmul per transform point. Made by
    `winograd` from a stride-1 3x3 `graph.conv_nchwc`."""

    name = "graph.winograd_input"
    x = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    tile = prop_def(I64Attr)
    pads = prop_def(I64Array)
    traits = traits_def(Pure(), FusionPattern(PatternKind.OUT_FUSABLE))

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.winograd_input(shapes[0], p["tile"], p["pads"])


@irdl_op_definition
class WinogradOutputOp(GraphOp):
    """The output half of a Winograd F(tile x tile, 3x3) conv: the per-point matmul products
    ((tile+2)^2, tiles, K) moved back (AT m A) into the blocked (N, K/block, H, W, block) image,
    plus the bias; what follows the conv (activation, residual add) fuses into it."""

    name = "graph.winograd_output"
    m = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    tile = prop_def(I64Attr)
    image = prop_def(I64Array)
    block = prop_def(I64Attr)
    traits = traits_def(Pure(), FusionPattern(PatternKind.OUT_FUSABLE))

    assembly_format = "$m (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.winograd_output(shapes[0], shapes[1], p["tile"], p["image"], p["block"])


@irdl_op_definition
class MatmulOp(GraphOp):
    """numpy.matmul: 1-D operands and batch broadcasting."""

    name = "graph.matmul"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC  # integers: MatMulInteger, QLinearMatMul
    a = operand_def(AnyTensor)
    b = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), FusionPattern(PatternKind.OUT_FUSABLE))

    assembly_format = "$a `,` $b attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.matmul(shapes[0], shapes[1])


@irdl_op_definition
class GemmOp(GraphOp):
    """ONNX Gemm: alpha * op(a) @ op(b) + beta * c."""

    name = "graph.gemm"
    a = operand_def(AnyTensor)
    b = operand_def(AnyTensor)
    c = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    alpha = prop_def(F32Attr, default_value=f32_attr(1.0))
    beta = prop_def(F32Attr, default_value=f32_attr(1.0))
    trans_a = prop_def(I64Attr, default_value=i64_attr(0))
    trans_b = prop_def(I64Attr, default_value=i64_attr(0))
    traits = traits_def(Pure(), FusionPattern(PatternKind.OUT_FUSABLE))

    assembly_format = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        a, b, c = shapes
        return S.gemm(a, b, c, p["trans_a"], p["trans_b"])


# ----------------------------------------------------------------------------- normalization


@irdl_op_definition
class SoftmaxOp(SoftmaxBase):
    """exp(x) / sum(exp(x)) along one axis."""

    name = "graph.softmax"
    traits = traits_def(Pure(), FusionPattern(PatternKind.OPAQUE))


@irdl_op_definition
class LogSoftmaxOp(SoftmaxBase):
    """log(softmax(x)) along one axis."""

    name = "graph.log_softmax"
    traits = traits_def(Pure(), FusionPattern(PatternKind.OPAQUE))


@irdl_op_definition
class LayerNormOp(GraphOp):
    """Normalization over dims [axis, rank), then scale and optional bias."""

    name = "graph.layer_norm"
    x = operand_def(AnyTensor)
    scale = operand_def(AnyTensor)
    bias = opt_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axis = prop_def(I64Attr)
    epsilon = prop_def(F32Attr, default_value=f32_attr(1e-5))
    traits = traits_def(Pure(), FusionPattern(PatternKind.OPAQUE))

    assembly_format = "$x `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        x, scale, bias = shapes
        return S.layer_norm(x, scale, bias, p["axis"])


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Inference batch normalization over channel dim 1."""

    name = "graph.batch_norm"
    x = operand_def(AnyTensor)
    scale = operand_def(AnyTensor)
    bias = operand_def(AnyTensor)
    mean = operand_def(AnyTensor)
    var = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    epsilon = prop_def(F32Attr, default_value=f32_attr(1e-5))
    traits = traits_def(Pure(), FusionPattern(PatternKind.BROADCAST))

    assembly_format = (
        "$x `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:` "
        "functional-type(operands, results)"
    )

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.batch_norm(shapes[0], shapes[1:])


# ----------------------------------------------------------------------------- pooling


@irdl_op_definition
class MaxPoolOp(PoolOp):
    """Max over a window; padding never wins."""

    name = "graph.max_pool"
    traits = traits_def(Pure(), FusionPattern(PatternKind.OUT_FUSABLE))


@irdl_op_definition
class AvgPoolOp(PoolOp):
    """Average over a window, padding counted only if count_include_pad."""

    name = "graph.avg_pool"
    count_include_pad = prop_def(I64Attr, default_value=i64_attr(0))
    traits = traits_def(Pure(), FusionPattern(PatternKind.OUT_FUSABLE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        if p["count_include_pad"] not in (0, 1):
            raise ShapeError("count_include_pad must be 0 or 1")
        return super().infer_shape(shapes, p)


@irdl_op_definition
class GlobalAvgPoolOp(GlobalPoolOp):
    """Mean over all spatial dims."""

    name = "graph.global_avg_pool"
    traits = traits_def(Pure(), FusionPattern(PatternKind.REDUCTION))


@irdl_op_definition
class GlobalMaxPoolOp(GlobalPoolOp):
    """Max over all spatial dims."""

    name = "graph.global_max_pool"
    traits = traits_def(Pure(), FusionPattern(PatternKind.REDUCTION))


# ----------------------------------------------------------------------------- reductions


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Mean over `axes`."""

    name = "graph.reduce_mean"
    traits = traits_def(Pure(), FusionPattern(PatternKind.REDUCTION))


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over `axes`."""

    name = "graph.reduce_sum"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC
    traits = traits_def(Pure(), FusionPattern(PatternKind.REDUCTION))


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """Product over `axes`."""

    name = "graph.reduce_prod"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = NUMERIC
    traits = traits_def(Pure(), FusionPattern(PatternKind.REDUCTION))


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Max over `axes`."""

    name = "graph.reduce_max"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    traits = traits_def(Pure(), FusionPattern(PatternKind.REDUCTION))


# ----------------------------------------------------------------------------- data movement


@irdl_op_definition
class ReshapeOp(GraphOp):
    """Same elements, new shape; the target shape is the result type, not a property."""

    name = "graph.reshape"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    x = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: ValueLike, shape: Sequence[int]):
        # the target shape is given, so the inferring builder of GraphOp does not apply
        x = _value(x)
        t = TensorType(_element_type(x), list(shape))
        IRDLOperation.__init__(self, operands=[x], result_types=[t])

    def verify_(self) -> None:
        src, dst = _shape(self.x), _shape(self.result)
        try:
            same_element_type([_element_type(self.x), _element_type(self.result)], ANY)
        except ShapeError as e:
            raise VerifyException(str(e)) from e
        if DYNAMIC_INDEX in (*src, *dst):  # run-time dims: as many, the static ones alike
            static = [[d for d in s if d != DYNAMIC_INDEX] for s in (src, dst)]
            if list(src).count(DYNAMIC_INDEX) != list(dst).count(DYNAMIC_INDEX) or int(
                np.prod(static[0])
            ) != int(np.prod(static[1])):
                raise VerifyException(f"cannot reshape {list(src)} into {list(dst)}")
        elif int(np.prod(src)) != int(np.prod(dst)):
            raise VerifyException(
                f"cannot reshape {list(src)} into {list(dst)}: element counts differ"
            )


@irdl_op_definition
class FlattenOp(UnaryOp):
    """Collapse to 2-D: dims [0, axis) and [axis, rank)."""

    name = "graph.flatten"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    axis = prop_def(I64Attr, default_value=i64_attr(1))
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.flatten(shapes[0], p["axis"])


@irdl_op_definition
class SqueezeOp(UnaryOp):
    """Remove the given unit dims."""

    name = "graph.squeeze"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    axes = prop_def(I64Array)
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.squeeze(shapes[0], p["axes"])


@irdl_op_definition
class UnsqueezeOp(UnaryOp):
    """Insert unit dims at the given result positions."""

    name = "graph.unsqueeze"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    axes = prop_def(I64Array)
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.unsqueeze(shapes[0], p["axes"])


@irdl_op_definition
class TransposeOp(UnaryOp):
    """Permute dims: result dim i is input dim perm[i]."""

    name = "graph.transpose"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    perm = prop_def(I64Array)
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.transpose(shapes[0], p["perm"])


@irdl_op_definition
class ConcatOp(GraphOp):
    """Join inputs along one axis."""

    name = "graph.concat"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    inputs = var_operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axis = prop_def(I64Attr)
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def __init__(self, inputs: Sequence[ValueLike], axis: int | IntegerAttr):
        super().__init__(list(inputs), axis=axis)

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.concat(shapes[0], p["axis"])


@irdl_op_definition
class SplitOp(GraphOp):
    """Cut along one axis into pieces of the given sizes (one result each)."""

    name = "graph.split"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    x = operand_def(AnyTensor)
    outputs = var_result_def(AnyTensor)
    axis = prop_def(I64Attr)
    sizes = prop_def(I64Array)
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> list[Shape]:
        return S.split(shapes[0], p["axis"], p["sizes"])


@irdl_op_definition
class SliceOp(UnaryOp):
    """Strided slice with fully normalized per-dim starts/ends (exclusive)/steps."""

    name = "graph.slice"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    starts = prop_def(I64Array)
    ends = prop_def(I64Array)
    steps = prop_def(I64Array)
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.slice_(shapes[0], p["starts"], p["ends"], p["steps"])


@irdl_op_definition
class GatherOp(GraphOp):
    """ONNX Gather along one axis; negative indices count from the end."""

    name = "graph.gather"
    data = operand_def(AnyTensor)
    indices = operand_def(AnyTensor)
    result = result_def(AnyTensor)
    axis = prop_def(I64Attr, default_value=i64_attr(0))
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    assembly_format = "$data `,` $indices attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.gather(shapes[0], shapes[1], p["axis"])

    @classmethod
    def infer_element_type(cls, elements: list[Any], p: dict[str, Any]) -> Attribute:
        same_element_type([elements[1]], INTEGER, "indices")
        return same_element_type([elements[0]], ANY, "data")


@irdl_op_definition
class PadOp(UnaryOp):
    """Constant padding: pads = begins then ends (negative crops)."""

    name = "graph.pad"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = ANY
    pads = prop_def(I64Array)
    value = prop_def(F32Attr, default_value=f32_attr(0.0))
    traits = traits_def(Pure(), FusionPattern(PatternKind.INJECTIVE))

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return S.pad(shapes[0], p["pads"])


@irdl_op_definition
class ShapeOp(GraphOp):
    """The shape of a tensor as a 1-D i64 tensor (the frontend folds it)."""

    name = "graph.shape"
    x = operand_def(TensorType)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), FusionPattern(PatternKind.OPAQUE))

    assembly_format = "$x attr-dict `:` functional-type(operands, results)"

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        return (len(shapes[0]),)

    @classmethod
    def infer_element_type(cls, elements: list[Any], p: dict[str, Any]) -> Attribute:
        same_element_type(elements, ANY)
        return i64


@irdl_op_definition
class RangeOp(GraphOp):
    """ONNX Range with bounds known only at run time (the frontend folds constant ones): the
    values start, start + delta, ... below limit (above it for a negative delta), so its one
    dim is `?`. The operands are 0-d integer tensors."""

    name = "graph.range"
    ELEMENTS: ClassVar[tuple[Attribute, ...]] = INTEGER
    start = operand_def(TensorType)
    limit = operand_def(TensorType)
    delta = operand_def(TensorType)
    result = result_def(AnyTensor)
    traits = traits_def(Pure(), FusionPattern(PatternKind.OPAQUE))

    assembly_format = (
        "$start `,` $limit `,` $delta attr-dict `:` functional-type(operands, results)"
    )

    @classmethod
    def infer_shape(cls, shapes: list[Any], p: dict[str, Any]) -> Shape:
        if any(tuple(s) != () for s in shapes):
            raise ShapeError(f"range bounds must be scalars (0-d), got shapes {shapes}")
        return (DYNAMIC_INDEX,)


# ----------------------------------------------------------------------------- fusion


_PATTERN_NAMES = frozenset(k.name.lower() for k in PatternKind)


def _types(types: Sequence[Attribute]) -> str:
    return ", ".join(map(str, types))


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A group of graph ops that becomes one kernel (made by `fuse-ops`).

    The single block's arguments stand for the operands (same types); constants the group uses
    are cloned inside (the region is isolated from above); `graph.yield` returns the results.
    `name` joins the members' short names with '+', `pattern` is the group's dominant pattern
    kind ("out_fusable", "reduction", "injective", "broadcast", "elementwise"). The pattern
    prints as a bare word, which a declarative format cannot do for a string, hence the custom
    syntax:

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
    traits = traits_def(
        IsolatedFromAbove(), RecursiveMemoryEffect(), FusionPattern(PatternKind.OPAQUE)
    )

    def __init__(
        self,
        name: str,
        pattern: str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            properties={"name": StringAttr(name), "pattern": StringAttr(pattern)},
            regions=[body],
        )

    @property
    def block(self) -> Block:
        return self.body.block

    def verify_(self) -> None:
        if not self.kernel_name.data:
            raise VerifyException("graph.fused needs a non-empty name")
        if self.pattern.data not in _PATTERN_NAMES:
            raise VerifyException(
                f'unknown pattern "{self.pattern.data}", expected one of '
                + ", ".join(sorted(_PATTERN_NAMES))
            )
        block = self.body.block
        arg_types = [a.type for a in block.args]
        in_types = [v.type for v in self.inputs]
        if arg_types != in_types:
            raise VerifyException(
                f"block argument types ({_types(arg_types)}) do not match "
                f"operand types ({_types(in_types)})"
            )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("graph.fused body must end with graph.yield")
        got = [v.type for v in last.values]
        want = [r.type for r in self.outputs]
        if got != want:
            raise VerifyException(
                f"graph.yield types ({_types(got)}) do not match result types ({_types(want)})"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.kernel_name)
        printer.print_string(f" {self.pattern.data} (")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(") : ")
        printer.print_function_type([v.type for v in self.inputs], [r.type for r in self.outputs])
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> FusedOp:
        name = parser.parse_str_literal("kernel name")
        pattern = parser.parse_identifier("pattern kind")
        operands: list[UnresolvedOperand] = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
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
    traits = traits_def(
        IsTerminator(), HasParent(FusedOp), Pure(), FusionPattern(PatternKind.OPAQUE)
    )

    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


GRAPH_OPS: list[type[Operation]] = [
    ConstantOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp,
    EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, AndOp, OrOp, XorOp, NotOp,
    ShiftLeftOp, ShiftRightOp, BitcastOp,
    WhereOp, ExpandOp,
    FloorOp, CeilOp, RoundOp, SinOp, CosOp,
    SqrtOp, ExpOp, LogOp, NegOp, AbsOp, ReciprocalOp, ReluOp, SigmoidOp, TanhOp, ErfOp,
    HardSwishOp, LeakyReluOp, HardSigmoidOp, ClipOp, GeluOp,
    ConvOp, ConvNchwcOp, LayoutTransformOp, WinogradInputOp, WinogradOutputOp, MatmulOp, GemmOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchNormOp,
    MaxPoolOp, AvgPoolOp, GlobalAvgPoolOp, GlobalMaxPoolOp,
    ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, TransposeOp, ConcatOp, SplitOp, SliceOp,
    GatherOp, PadOp, ReduceMeanOp, ReduceSumOp, ReduceProdOp, ReduceMaxOp, ShapeOp, RangeOp,
    IdentityOp, DropoutOp, CastOp, FusedOp, YieldOp,
]  # fmt: skip

Graph = Dialect("graph", GRAPH_OPS, [])
