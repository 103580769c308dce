"""ONNX -> `graph` dialect importer.

One converter per ONNX operator (`CONVERTERS`), each reading the node's attributes and the
opset-dependent attribute-like inputs. Values known at import time (initializers, Constant,
Shape of static tensors and any node whose inputs are all known) stay numpy arrays and are
evaluated eagerly, so attribute-like inputs (Reshape's shape, Slice's starts, ...) are plain
numbers when a converter needs them; they become `graph.constant` only where an op consumes them.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper, version_converter
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from compiler.frontend.errors import FrontendError
from dialects import graph as g
from dialects import graph_shapes as S
from dialects.dense import numpy_dtype

__all__ = ["CONVERTERS", "MAX_ELEMENTS", "MAX_FOLDED_ELEMENTS", "FrontendError", "import_onnx"]

MIN_OPSET = 11
UPGRADE_TO_OPSET = 13
"""Models below MIN_OPSET (from opset 1) are upgraded to this opset by onnx's version converter
(a maintained library that knows every operator's changes) before import; 13 is the newest opset
its adapters reach from old opsets for every operator those models use."""
MAX_ELEMENTS = 2**31
"""The most elements a tensor may have (declared, stored or computed); checked before any
allocation, so a declared 2**40 dimension is an error, not an exhausted machine."""
MAX_FOLDED_ELEMENTS = 2**28
"""The most elements of a value computed at import time (constant folding): such a value is
held in memory and then written into the IR."""
Value = SSAValue | np.ndarray


def element_type_of(v: SSAValue) -> Attribute:
    assert isinstance(v.type, TensorType)
    return v.type.element_type


def _hint(name: str) -> str | None:
    """An SSA name hint from an ONNX name: MLIR allows only [A-Za-z0-9_$.-] (ASCII)."""
    hint = re.sub(r"[^A-Za-z0-9_$.-]", "_", name).strip("_")
    return hint if hint and not hint[0].isdigit() else None


def _check_elements(shape: Sequence[int], what: str, limit: int = MAX_ELEMENTS) -> None:
    """Refuse a tensor of more than `limit` elements (before anything of that size exists)."""
    n = math.prod(int(d) for d in shape)
    if n > limit:
        raise FrontendError(
            f"{what} has shape {[int(d) for d in shape]} ({n} elements), over the limit of "
            f"2**{limit.bit_length() - 1} = {limit} elements per tensor"
        )


# element type -> numpy type, for the tensor types the frontend accepts in initializers
_TENSOR_TYPES: dict[int, type] = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.FLOAT16: np.float16,
    onnx.TensorProto.BOOL: np.bool_,
    onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.INT16: np.int16,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.UINT16: np.uint16,
    onnx.TensorProto.UINT32: np.uint32,
    onnx.TensorProto.UINT64: np.uint64,
}
# ONNX element type -> the graph element type of tensors of that type at run time
_GRAPH_ELEMENTS: dict[int, Attribute] = {
    onnx.TensorProto.FLOAT: f32,
    onnx.TensorProto.INT64: i64,
    onnx.TensorProto.INT32: i32,
    onnx.TensorProto.BOOL: i1,
}
_CAST_TARGETS: dict[int, str] = {k: str(v) for k, v in _GRAPH_ELEMENTS.items()}
"""ONNX element type -> the name graph.cast takes (`f32`, `i64`, ...)."""
_SUPPORTED_ELEMENTS = "FLOAT, INT64, INT32 and BOOL"

# where a tensor without raw_data keeps its values (one per element for these types)
_DATA_FIELDS: dict[int, str] = {
    onnx.TensorProto.FLOAT: "float_data",
    onnx.TensorProto.DOUBLE: "double_data",
    onnx.TensorProto.INT64: "int64_data",
    onnx.TensorProto.UINT32: "uint64_data",
    onnx.TensorProto.UINT64: "uint64_data",
}


def _type_name(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"<unknown data type {elem_type}>"


def tensor_array(t: onnx.TensorProto, what: str) -> np.ndarray:
    """The value of a TensorProto, once its type, dims and data are checked to agree."""
    name = _type_name(t.data_type)
    if t.data_type not in _TENSOR_TYPES:
        raise FrontendError(f"{what} has element type {name}, which is not supported")
    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise FrontendError(f"{what} has a negative dimension: dims {dims}")
    _check_elements(dims, what)
    if t.data_location == onnx.TensorProto.EXTERNAL:
        raise FrontendError(
            f"{what} keeps its data in an external file; load the model from "
            "its path so the file can be found (and checked)"
        )
    n = math.prod(dims)
    dtype = np.dtype(_TENSOR_TYPES[t.data_type])
    if t.HasField("raw_data"):
        if len(t.raw_data) != n * dtype.itemsize:
            raise FrontendError(
                f"{what} has {len(t.raw_data)} bytes of raw_data, but dims {dims} of {name} "
                f"need {n * dtype.itemsize}"
            )
    else:
        field = _DATA_FIELDS.get(t.data_type, "int32_data")
        have = len(getattr(t, field))
        if have != n:
            raise FrontendError(f"{what} has {have} values in {field}, but dims {dims} need {n}")
    try:
        return np.asarray(numpy_helper.to_array(t), dtype=dtype)
    except (ValueError, TypeError, OverflowError) as e:
        raise FrontendError(f"{what} has data that cannot be decoded: {e}") from e


class Importer:
    """State of one import: ONNX value name -> SSA value or import-time numpy constant."""

    def __init__(self, model: onnx.ModelProto, input_shapes: dict[str, list[int]] | None):
        self.model = model
        self.graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        self.input_shapes = dict(input_shapes or {})
        self.values: dict[str, Value] = {}
        self.block = Block()
        self.node: onnx.NodeProto | None = None
        self.label = ""  # the current node's name, or #index for unnamed nodes
        self.used_names = {n for node in self.graph.node for n in node.input if n} | {
            o.name for o in self.graph.output
        }
        """Value names that a node reads or the graph returns (an output outside it is unused)."""

    # -- values ---------------------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        try:  # here, a failure still knows its node
            op.verify()
        except VerifyException as e:
            raise self.error(f"invalid {op.name}: {' '.join(str(e).split())}") from e
        self.block.add_op(op)
        return op

    def has(self, node: onnx.NodeProto, i: int) -> bool:
        return i < len(node.input) and node.input[i] != ""

    def lookup(self, name: str) -> Value:
        if name not in self.values:
            if name == "":
                raise self.error("a required input is missing (given as the empty name '')")
            raise self.error(
                f"input '{name}' is not defined: no graph input, initializer or "
                "earlier node output has this name"
            )
        return self.values[name]

    def const(self, name: str) -> np.ndarray | None:
        v = self.lookup(name)
        return v if isinstance(v, np.ndarray) else None

    def const_input(self, node: onnx.NodeProto, i: int, what: str) -> np.ndarray:
        """An attribute-like input that must be known at import time."""
        v = self.const(node.input[i])
        if v is None:
            raise FrontendError(
                f"{node.op_type} node '{self.label}': input {what} ('{node.input[i]}') must be "
                "a constant (computable at import time)"
            )
        return v

    def int_input(self, node: onnx.NodeProto, i: int, what: str) -> list[int]:
        """A constant 1-D integer input: a shape, axes, pads, split sizes, slice bounds."""
        v = self.const_input(node, i, what)
        if not np.issubdtype(v.dtype, np.integer) or v.ndim > 1:
            raise self.error(
                f"input {what} ('{node.input[i]}') must be a 1-D integer tensor, "
                f"got {v.dtype} of shape {list(v.shape)}"
            )
        return [int(x) for x in v.reshape(-1)]

    def scalar_input(self, node: onnx.NodeProto, i: int, what: str) -> float:
        """A constant input holding one number (Clip's min, Pad's value, Dropout's ratio)."""
        v = self.const_input(node, i, what)
        if v.size != 1 or not (np.issubdtype(v.dtype, np.number) or v.dtype == np.bool_):
            raise self.error(
                f"input {what} ('{node.input[i]}') must hold one number, got "
                f"{v.dtype} of shape {list(v.shape)}"
            )
        return float(v.reshape(-1)[0])

    def value(self, name: str, dtype: type | None = None) -> SSAValue:
        """The SSA value of `name`, materializing a constant if needed: as `dtype`, or by
        default as its own graph element type (floats f32, bool, int32, other integers i64)."""
        v = self.lookup(name)
        if isinstance(v, SSAValue):
            return v
        numeric = np.issubdtype(v.dtype, np.number) or v.dtype == np.bool_
        if not numeric or np.issubdtype(v.dtype, np.complexfloating):
            raise self.error(
                f"value '{name}' has element type {v.dtype}; only numbers and "
                "booleans are supported"
            )
        arr = v.astype(dtype) if dtype is not None else v
        op = self.emit(g.ConstantOp(arr))
        if (h := _hint(name)) is not None:
            op.results[0].name_hint = h
        return op.results[0]

    def scalar(self, v: float, like: SSAValue | None = None) -> SSAValue:
        """A scalar constant (broadcasts against any tensor): float32, or of `like`'s element
        type."""
        dtype = np.float32 if like is None else numpy_dtype(element_type_of(like))
        return self.emit(g.ConstantOp(np.asarray(v, dtype=dtype))).results[0]

    def op(self, op: Operation) -> SSAValue:
        """Emit a single-result op; its result."""
        return self.emit(op).results[0]

    def shape(self, name: str) -> tuple[int, ...]:
        v = self.lookup(name)
        if isinstance(v, np.ndarray):
            return tuple(v.shape)
        assert isinstance(v.type, TensorType)
        return tuple(v.type.get_shape())

    @staticmethod
    def shape_of(v: SSAValue) -> tuple[int, ...]:
        assert isinstance(v.type, TensorType)
        return tuple(v.type.get_shape())

    def error(self, msg: str) -> FrontendError:
        node = self.node
        where = f"{node.op_type} node '{self.label}': " if node is not None else ""
        return FrontendError(where + msg)

    def check_elements(self, shape: Sequence[int], what: str, limit: int = MAX_ELEMENTS) -> None:
        try:
            _check_elements(shape, what, limit)
        except FrontendError as e:
            raise self.error(str(e)) from None

    # -- driver ---------------------------------------------------------------------------

    def run(self) -> ModuleOp:
        if 0 < self.opset < MIN_OPSET:
            raise FrontendError(
                f"ONNX opset {self.opset} is not supported (need >= {MIN_OPSET}; older models "
                f"are upgraded to {UPGRADE_TO_OPSET} by import_onnx)"
            )
        _check_names(self.graph)
        for init in self.graph.initializer:
            self.values[init.name] = tensor_array(init, f"initializer '{init.name}'")
        for sinit in self.graph.sparse_initializer:
            raise FrontendError(f"sparse initializer '{sinit.values.name}' is not supported")
        arg_types, arg_names = self._inputs()
        self.block = Block(arg_types=arg_types)
        for arg, name in zip(self.block.args, arg_names, strict=True):
            self.values[name] = arg
            if (h := _hint(name)) is not None:
                arg.name_hint = h
        unsupported: dict[str, list[str]] = {}
        poisoned: set[str] = set()  # outputs of unsupported nodes and of the nodes they feed
        for i, node in enumerate(self.graph.node):
            self.node, self.label = node, node.name or f"#{i}"
            if any(n in poisoned for n in node.input):
                poisoned.update(node.output)
                continue
            _check_node(self, node)
            if not self._supported(node) and not self._foldable(node):
                key = (
                    node.op_type
                    if node.domain in ("", "ai.onnx")
                    else f"{node.domain}.{node.op_type}"
                )
                unsupported.setdefault(key, []).append(self.label)
                poisoned.update(node.output)
                continue
            self._convert(node)
        self.node = None
        if unsupported:
            parts = []
            for op_type in sorted(unsupported):
                nodes = unsupported[op_type]
                label = "node" if len(nodes) == 1 else "nodes"
                parts.append(f"{op_type} ({label} {', '.join(repr(n) for n in nodes)})")
            raise FrontendError(
                f"unsupported ONNX operators (opset {self.opset}): {', '.join(parts)}"
            )
        if not self.graph.output:
            raise FrontendError("the model's graph has no outputs")
        for o in self.graph.output:
            if o.name not in self.values:
                raise FrontendError(
                    f"graph output '{o.name}' is not produced by any node, "
                    "initializer or graph input"
                )
        results = [self.value(o.name) for o in self.graph.output]
        for k, (o, r) in enumerate(zip(self.graph.output, results, strict=True)):
            # the compiled signature is the declared one: a value computed in another element
            # type (a constant kept as int64, say) is converted to it
            declared = o.type.tensor_type.elem_type if o.type.HasField("tensor_type") else 0
            if declared and declared not in _GRAPH_ELEMENTS:
                raise FrontendError(
                    f"model output '{o.name}' has element type {_type_name(declared)}; "
                    f"supported: {_SUPPORTED_ELEMENTS}"
                )
            if declared and element_type_of(r) != _GRAPH_ELEMENTS[declared]:
                results[k] = self.op(g.CastOp(r, to=_CAST_TARGETS[declared]))
        self.block.add_op(func.ReturnOp(*results))  # verified with its function

        def names(ns: Sequence[str]) -> ArrayAttr[DictionaryAttr]:
            return ArrayAttr([DictionaryAttr({"ziggurat.name": StringAttr(n)}) for n in ns])

        fn = func.FuncOp(
            "main",
            (arg_types, [r.type for r in results]),
            Region(self.block),
            arg_attrs=names(arg_names),
            res_attrs=names([o.name for o in self.graph.output]),
        )
        module = ModuleOp([fn])
        module.verify()
        return module

    @staticmethod
    def _supported(node: onnx.NodeProto) -> bool:
        return node.domain in ("", "ai.onnx") and node.op_type in CONVERTERS

    def _foldable(self, node: onnx.NodeProto) -> bool:
        """Whether the node computes from import-time constants only (so onnx's reference
        evaluator folds it, whatever the operator)."""
        ins = [n for n in node.input if n]
        return (
            node.domain in ("", "ai.onnx")
            and bool(ins)
            and all(isinstance(self.values.get(n), np.ndarray) for n in ins)
        )

    def _inputs(self) -> tuple[list[TensorType], list[str]]:
        inits = {i.name for i in self.graph.initializer}
        inputs = [i for i in self.graph.input if i.name not in inits]
        known = {i.name for i in inputs}
        for name in self.input_shapes:
            if name not in known:
                raise FrontendError(
                    f"input_shapes names unknown input '{name}' (model inputs: "
                    f"{', '.join(repr(n) for n in sorted(known))})"
                )
        types: list[TensorType] = []
        names: list[str] = []
        for inp in inputs:
            tt = inp.type.tensor_type
            if not inp.type.HasField("tensor_type") or tt.elem_type not in _GRAPH_ELEMENTS:
                et = _type_name(tt.elem_type) if inp.type.HasField("tensor_type") else "non-tensor"
                raise FrontendError(
                    f"model input '{inp.name}' has element type {et}; supported: "
                    f"{_SUPPORTED_ELEMENTS}"
                )
            given = self.input_shapes.get(inp.name)
            dims = list(tt.shape.dim) if tt.HasField("shape") else None
            if given is not None:
                if dims is not None and len(dims) != len(given):
                    raise FrontendError(
                        f"input_shapes gives rank {len(given)} for input '{inp.name}' of rank "
                        f"{len(dims)}"
                    )
                if any(int(d) <= 0 for d in given):
                    raise FrontendError(f"input_shapes for '{inp.name}' must be positive: {given}")
                shape = [int(d) for d in given]
            else:
                if dims is None:
                    raise FrontendError(f"input '{inp.name}' has no shape; pass it in input_shapes")
                shape = []
                for k, d in enumerate(dims):
                    if d.HasField("dim_value") and d.dim_value > 0:
                        shape.append(d.dim_value)
                    elif d.HasField("dim_value") and d.dim_value == 0:
                        raise FrontendError(
                            f"input '{inp.name}' has a zero-size dimension {k}; zero-size "
                            "tensors are not supported"
                        )
                    else:
                        sym = f" ('{d.dim_param}')" if d.dim_param else ""
                        spelled = ",".join(
                            str(e.dim_value) if e.HasField("dim_value") else e.dim_param or "?"
                            for e in dims
                        )
                        raise FrontendError(
                            f"input '{inp.name}' has unknown dimension {k}{sym} (shape "
                            f"[{spelled}]); pass its shape in input_shapes (on the command line: "
                            f"--input-shape {inp.name}=<{len(dims)} sizes, comma-separated>)"
                        )
            _check_elements(shape, f"input '{inp.name}'")
            types.append(TensorType(_GRAPH_ELEMENTS[tt.elem_type], shape))
            names.append(inp.name)
        return types, names

    def _convert(self, node: onnx.NodeProto) -> None:
        ins = [n for n in node.input if n]
        try:
            if ins and all(isinstance(self.lookup(n), np.ndarray) for n in ins):
                outs: Sequence[Value] = self._fold(node)
            else:
                outs = CONVERTERS[node.op_type](self, node)
        except S.ShapeError as e:
            raise self.error(str(e)) from e
        for name, v in zip(node.output, outs, strict=False):
            if isinstance(v, SSAValue):
                self.check_elements(self.shape_of(v), f"output '{name}'")
            if isinstance(v, SSAValue) and 0 in self.shape_of(v):
                raise self.error(
                    f"output '{name}' would have the zero-size shape "
                    f"{list(self.shape_of(v))}; zero-size tensors are not supported"
                )
            if name:
                self.values[name] = v
                if isinstance(v, SSAValue) and (h := _hint(name)) is not None:
                    v.name_hint = h

    def _fold(self, node: onnx.NodeProto) -> list[np.ndarray]:
        """Evaluate a node on import-time constants with ONNX's reference implementation."""
        from onnx.reference import ReferenceEvaluator

        feeds: dict[str, np.ndarray] = {}
        for n in node.input:
            if n:
                v = self.lookup(n)
                assert isinstance(v, np.ndarray), "_convert folds nodes whose inputs are all known"
                feeds[n] = v
        what = "output '{}' (computed at import time)"
        for name, shape in _inferred_shapes(node, feeds, self.opset).items():
            self.check_elements(shape, what.format(name), MAX_FOLDED_ELEMENTS)
        try:
            if node.op_type in _FOLDERS:
                return _FOLDERS[node.op_type](node, [feeds[n] for n in node.input if n])
            ev = ReferenceEvaluator(node, opsets={"": self.opset})
            # own, contiguous copies: a result may be a broadcast view (Expand) that later
            # evaluators would misread
            outs = [np.array(o) for o in ev.run(None, feeds)]
        except Exception as e:  # any evaluator failure is a model problem
            raise self.error(f"constant folding failed: {e}") from e
        for name, o in zip(node.output, outs, strict=False):
            self.check_elements(o.shape, what.format(name), MAX_FOLDED_ELEMENTS)
        return outs


def _fold_gather_elements(node: onnx.NodeProto, args: list[np.ndarray]) -> list[np.ndarray]:
    data, idx = args
    axis = int(attrs(node).get("axis", 0)) % data.ndim
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    return [np.take_along_axis(data, idx, axis=axis)]


_FOLDERS: dict[str, Callable[[onnx.NodeProto, list[np.ndarray]], list[np.ndarray]]] = {
    # onnx's reference GatherElements (1.23) fails when the indices' shape differs from the
    # data's (it reshapes one gathered element); numpy's take_along_axis is the same operator
    "GatherElements": _fold_gather_elements,
}
"""Import-time folders used instead of onnx's reference evaluator where it is wrong."""


def _inferred_shapes(
    node: onnx.NodeProto, feeds: dict[str, np.ndarray], opset: int
) -> dict[str, list[int]]:
    """The output shapes ONNX shape inference gives a node on constant inputs (those it can
    tell), so that a fold that would allocate too much is refused before it runs."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
        types = {
            n: helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
            for n, v in feeds.items()
        }
        # the small integer inputs are the shape-like ones (ConstantOfShape's shape, pads, ...)
        data = {
            n: numpy_helper.from_array(v, n)
            for n, v in feeds.items()
            if v.size <= 64 and v.dtype.kind in "iu"
        }
        outs = onnx.shape_inference.infer_node_outputs(
            schema, node, types, data, opset_imports=[helper.make_opsetid("", opset)]
        )
    except Exception:  # no inference for this node: the evaluator reports what is wrong
        return {}
    shapes = {}
    for name, tp in outs.items():
        if tp.HasField("tensor_type") and tp.tensor_type.HasField("shape"):
            dims = tp.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                shapes[name] = [d.dim_value for d in dims]
    return shapes


def _check_names(graph: onnx.GraphProto) -> None:
    """Every name must be text: protobuf hands out names that are not valid UTF-8 as bytes."""

    def check(value: str | bytes, what: str) -> None:
        if not isinstance(value, str):
            raise FrontendError(f"{what} {value!r} is not valid UTF-8")

    check(graph.name, "the graph name")
    for v in [*graph.input, *graph.output, *graph.value_info, *graph.initializer]:
        check(v.name, "the value name")
    for i, node in enumerate(graph.node):
        where = f"node #{i}"
        for value, what in [
            (node.name, "name"),
            (node.op_type, "op type"),
            (node.domain, "domain"),
        ]:
            check(value, f"{where}: the {what}")
        label = node.name or f"#{i}"
        for name in [*node.input, *node.output]:
            check(name, f"{node.op_type} node '{label}': the value name")
        for a in node.attribute:
            check(a.name, f"{node.op_type} node '{label}': the attribute name")


def _schema(op_type: str, opset: int) -> onnx.defs.OpSchema | None:
    """The operator's schema at this opset, else its newest one (None if ONNX has none)."""
    for version in (opset, onnx.defs.onnx_opset_version()):
        try:
            return onnx.defs.get_schema(op_type, version, "")
        except onnx.defs.SchemaError:
            continue
    return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


_OPTIONAL = onnx.defs.OpSchema.FormalParameterOption.Optional
_VARIADIC = onnx.defs.OpSchema.FormalParameterOption.Variadic
# a schema's attribute type -> the name of the AttributeProto type it stands for ("INTS"...): the
# two enums name the same types alike (onnx's stub gives OpSchema.AttrType no `.value`/`.name`)
_SCHEMA_ATTR_TYPES: dict[onnx.defs.OpSchema.AttrType, str] = {
    getattr(onnx.defs.OpSchema.AttrType, n): n
    for n in onnx.AttributeProto.AttributeType.keys()
    if hasattr(onnx.defs.OpSchema.AttrType, n)
}


def _check_node(imp: Importer, node: onnx.NodeProto) -> None:
    """Inputs, outputs and attributes against the operator's schema, so converters can index
    and decode them: a missing input or a wrongly typed attribute becomes a clear error."""
    schema = _schema(node.op_type, imp.opset)
    for a in node.attribute:
        if a.ref_attr_name:
            raise imp.error(
                f"attribute '{a.name}' refers to a function attribute "
                f"('{a.ref_attr_name}'), which a model graph cannot do"
            )
        if a.type == onnx.AttributeProto.UNDEFINED or a.type not in (
            onnx.AttributeProto.AttributeType.values()
        ):
            raise imp.error(f"attribute '{a.name}' has no valid type")
    seen = set()
    for a in node.attribute:
        if a.name in seen:
            raise imp.error(f"attribute '{a.name}' is given twice")
        seen.add(a.name)
    if schema is None:
        return
    n_in = len(node.input)
    if not schema.min_input <= n_in <= schema.max_input:
        raise imp.error(
            f"has {_count(n_in, 'input')}; the operator takes {schema.min_input}"
            + (f" to {schema.max_input}" if schema.max_input != schema.min_input else "")
        )
    for i, formal in enumerate(schema.inputs):
        if formal.option in (_OPTIONAL, _VARIADIC) or i >= n_in:
            continue
        if node.input[i] == "":
            raise imp.error(f"required input {i} ('{formal.name}') is missing (given as '')")
    n_out = len(node.output)
    if not schema.min_output <= n_out <= schema.max_output:
        raise imp.error(
            f"has {_count(n_out, 'output')}; the operator has {schema.min_output}"
            + (f" to {schema.max_output}" if schema.max_output != schema.min_output else "")
        )
    given = {a.name: a for a in node.attribute}
    for name in given:
        if name not in schema.attributes:
            known = ", ".join(sorted(schema.attributes)) or "none"
            raise imp.error(f"unknown attribute '{name}' (the operator's attributes: {known})")
    for name, spec in schema.attributes.items():
        a = given.get(name)
        if a is None:
            if spec.required:
                raise imp.error(f"required attribute '{name}' is missing")
            continue
        got = onnx.AttributeProto.AttributeType.Name(a.type)
        expected = _SCHEMA_ATTR_TYPES.get(spec.type, "?")
        if got != expected:
            raise imp.error(f"attribute '{name}' must be of type {expected}, got {got}")


def attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _s(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


Converter = Callable[[Importer, onnx.NodeProto], Sequence[Value]]
CONVERTERS: dict[str, Converter] = {}


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    def reg(fn: Converter) -> Converter:
        for t in op_types:
            CONVERTERS[t] = fn
        return fn

    return reg


def _res(op: Operation) -> list[Value]:
    return list(op.results)


# ----------------------------------------------------------------------------- elementwise

_UNARY: dict[str, type[g.GraphOp]] = {
    "Sqrt": g.SqrtOp,
    "Exp": g.ExpOp,
    "Log": g.LogOp,
    "Neg": g.NegOp,
    "Abs": g.AbsOp,
    "Reciprocal": g.ReciprocalOp,
    "Relu": g.ReluOp,
    "Sigmoid": g.SigmoidOp,
    "Tanh": g.TanhOp,
    "Erf": g.ErfOp,
    "HardSwish": g.HardSwishOp,
    "Identity": g.IdentityOp,
    "Floor": g.FloorOp,
    "Ceil": g.CeilOp,
    "Round": g.RoundOp,
    "Sin": g.SinOp,
    "Cos": g.CosOp,
    "Not": g.NotOp,
}
_BINARY: dict[str, type[g.GraphOp]] = {
    "Add": g.AddOp,
    "Sub": g.SubOp,
    "Mul": g.MulOp,
    "Div": g.DivOp,
    "Equal": g.EqualOp,
    "Less": g.LessOp,
    "LessOrEqual": g.LessEqualOp,
    "Greater": g.GreaterOp,
    "GreaterOrEqual": g.GreaterEqualOp,
    "And": g.AndOp,
    "Or": g.OrOp,
    "Xor": g.XorOp,
}


@converter(*_UNARY)
def convert_unary(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return _res(imp.emit(_UNARY[node.op_type](imp.value(node.input[0]))))


@converter(*_BINARY)
def convert_binary(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a, b = imp.value(node.input[0]), imp.value(node.input[1])
    return _res(imp.emit(_BINARY[node.op_type](a, b)))


@converter("Pow")
def convert_pow(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x ** y in float32: an integer exponent is converted, an integer base is computed in
    float32 and converted back (exact while the result fits float32's 24-bit mantissa)."""
    x = imp.value(node.input[0])
    y = imp.value(node.input[1], dtype=np.float32 if imp.const(node.input[1]) is not None else None)
    el = element_type_of(x)
    xf = x if el == f32 else imp.op(g.CastOp(x, to="f32"))
    yf = y if element_type_of(y) == f32 else imp.op(g.CastOp(y, to="f32"))
    p = imp.op(g.PowOp(xf, yf))
    return [p if el == f32 else imp.op(g.CastOp(imp.op(g.RoundOp(p)), to=str(el)))]


@converter("Sum", "Mean", "Max", "Min")
def convert_sum(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Variadic sum (mean, max, min) with broadcasting: a chain of binary ops (then a multiply
    by 1/n for the mean)."""
    cls = {"Sum": g.AddOp, "Mean": g.AddOp, "Max": g.MaxOp, "Min": g.MinOp}[node.op_type]
    names = [n for n in node.input if n]
    if not names:
        raise imp.error("has no inputs")
    total = imp.value(names[0])
    for name in names[1:]:
        total = imp.op(cls(total, imp.value(name)))
    if node.op_type == "Mean" and len(names) > 1:
        total = imp.op(g.MulOp(total, imp.scalar(1.0 / len(names))))
    elif len(names) == 1:
        total = imp.op(g.IdentityOp(total))
    return [total]


@converter("Where")
def convert_where(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    cond, x, y = (imp.value(n) for n in node.input[:3])
    return _res(imp.emit(g.WhereOp(cond, x, y)))


@converter("Expand")
def convert_expand(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.int_input(node, 1, "shape")
    return _res(imp.emit(g.ExpandOp(imp.value(node.input[0]), shape=shape)))


@converter("IsNaN")
def convert_isnan(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    return _res(imp.emit(g.NotOp(imp.op(g.EqualOp(x, x)))))  # only nan differs from itself


@converter("Sign")
def convert_sign(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    zero = imp.scalar(0, like=x)
    to = str(element_type_of(x))
    pos = imp.op(g.CastOp(imp.op(g.GreaterOp(x, zero)), to=to))
    neg = imp.op(g.CastOp(imp.op(g.LessOp(x, zero)), to=to))
    return _res(imp.emit(g.SubOp(pos, neg)))


def _negative_part(imp: Importer, x: SSAValue, alpha: float) -> SSAValue:
    """alpha * (exp(min(x, 0)) - 1): the x < 0 branch of Elu/Selu (0 for x >= 0)."""
    e = imp.op(g.ExpOp(imp.op(g.MinOp(x, imp.scalar(0.0)))))
    return imp.op(g.MulOp(imp.op(g.SubOp(e, imp.scalar(1.0))), imp.scalar(alpha)))


@converter("Elu", "Selu", "Celu")
def convert_elu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    x = imp.value(node.input[0])
    if node.op_type == "Celu":  # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
        alpha = float(a.get("alpha", 1.0))
        scaled = imp.op(g.MulOp(x, imp.scalar(1.0 / alpha)))
        return [imp.op(g.AddOp(imp.op(g.ReluOp(x)), _negative_part(imp, scaled, alpha)))]
    default_alpha = 1.0 if node.op_type == "Elu" else 1.67326319217681884765625
    y = imp.op(g.AddOp(imp.op(g.ReluOp(x)), _negative_part(imp, x, a.get("alpha", default_alpha))))
    if node.op_type == "Selu":
        y = imp.op(g.MulOp(y, imp.scalar(a.get("gamma", 1.05070102214813232421875))))
    return [y]


def _softplus(imp: Importer, x: SSAValue) -> SSAValue:
    """log(1 + exp(x)) as max(x, 0) + log(1 + exp(-|x|)): no overflow for large x."""
    t = imp.op(g.ExpOp(imp.op(g.NegOp(imp.op(g.AbsOp(x))))))
    return imp.op(
        g.AddOp(imp.op(g.ReluOp(x)), imp.op(g.LogOp(imp.op(g.AddOp(t, imp.scalar(1.0))))))
    )


@converter("Softplus", "Mish")
def convert_softplus(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    sp = _softplus(imp, x)
    return [sp if node.op_type == "Softplus" else imp.op(g.MulOp(x, imp.op(g.TanhOp(sp))))]


@converter("Sinh", "Cosh")
def convert_sinh(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """(exp(x) -+ exp(-x)) / 2."""
    x = imp.value(node.input[0])
    e, inv = imp.op(g.ExpOp(x)), imp.op(g.ExpOp(imp.op(g.NegOp(x))))
    combined = imp.op((g.SubOp if node.op_type == "Sinh" else g.AddOp)(e, inv))
    return _res(imp.emit(g.MulOp(combined, imp.scalar(0.5))))


@converter("ThresholdedRelu")
def convert_thresholded_relu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    x = imp.value(node.input[0])
    above = imp.op(g.GreaterOp(x, imp.scalar(attrs(node).get("alpha", 1.0))))
    return _res(imp.emit(g.WhereOp(above, x, imp.scalar(0.0))))


@converter("PRelu")
def convert_prelu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """max(x, 0) + slope * min(x, 0), slope broadcast against x."""
    x, slope = imp.value(node.input[0]), imp.value(node.input[1])
    zero = imp.scalar(0, like=x)
    neg = imp.op(g.MulOp(imp.op(g.MinOp(x, zero)), slope))
    return _res(imp.emit(g.AddOp(imp.op(g.MaxOp(x, zero)), neg)))


@converter("LRN")
def convert_lrn(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Local response normalization across channels, y = x / (bias + alpha/size * sum of x^2
    over `size` neighbouring channels)^beta, from graph ops: the windowed channel sum is an
    average pool (padding counted) over [N, 1, C, H*W]."""
    a = attrs(node)
    size = int(a["size"])
    alpha, beta, bias = (
        float(a.get(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75), ("bias", 1.0))
    )
    x = imp.value(node.input[0])
    shape = list(imp.shape_of(x))
    if len(shape) < 3:
        raise imp.error(f"LRN needs an input of rank 3 or more (got rank {len(shape)})")
    if size < 1:
        raise imp.error(f"LRN size must be positive (got {size})")
    n, c, rest = shape[0], shape[1], int(np.prod(shape[2:]))

    squared = imp.emit(g.MulOp(x, x)).results[0]
    planes = imp.emit(g.ReshapeOp(squared, [n, 1, c, rest])).results[0]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    window = imp.emit(
        g.AvgPoolOp(
            planes,
            kernel=[size, 1],
            strides=[1, 1],
            pads=[lo, 0, hi, 0],
            ceil_mode=0,
            count_include_pad=1,
        )
    ).results[0]
    mean_sq = imp.emit(g.ReshapeOp(window, shape)).results[0]
    scaled = imp.emit(g.MulOp(mean_sq, imp.scalar(alpha))).results[0]
    base = imp.emit(g.AddOp(scaled, imp.scalar(bias))).results[0]
    denominator = imp.emit(g.PowOp(base, imp.scalar(beta))).results[0]
    return _res(imp.emit(g.DivOp(x, denominator)))


@converter("LeakyRelu")
def convert_leaky_relu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return _res(
        imp.emit(g.LeakyReluOp(imp.value(node.input[0]), alpha=attrs(node).get("alpha", 0.01)))
    )


@converter("HardSigmoid")
def convert_hard_sigmoid(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    return _res(
        imp.emit(
            g.HardSigmoidOp(
                imp.value(node.input[0]), alpha=a.get("alpha", 0.2), beta=a.get("beta", 0.5)
            )
        )
    )


@converter("Gelu")
def convert_gelu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    approx = _s(attrs(node).get("approximate", "none"))
    return _res(imp.emit(g.GeluOp(imp.value(node.input[0]), approximate=approx)))


@converter("Clip")
def convert_clip(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)  # opset < 11 used attributes; keep them as a fallback
    lo, hi = a.get("min", -math.inf), a.get("max", math.inf)
    if imp.has(node, 1):
        lo = imp.scalar_input(node, 1, "min")
    if imp.has(node, 2):
        hi = imp.scalar_input(node, 2, "max")
    return _res(imp.emit(g.ClipOp(imp.value(node.input[0]), min=lo, max=hi)))


@converter("Cast", "CastLike")
def convert_cast(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if node.op_type == "CastLike":
        like = imp.lookup(node.input[1])
        to_el = element_type_of(like) if isinstance(like, SSAValue) else None
        target = str(to_el) if to_el is not None else None
        if target is None:
            assert isinstance(like, np.ndarray)
            target = str(g.dense_attr(like).get_element_type())
    else:
        to = attrs(node)["to"]
        if to not in _CAST_TARGETS:
            raise imp.error(
                f"cast of a computed tensor to {_type_name(to)} is not supported (to "
                f"{_SUPPORTED_ELEMENTS} only)"
            )
        target = _CAST_TARGETS[to]
    return _res(imp.emit(g.CastOp(imp.value(node.input[0]), to=target)))


@converter("Dropout")
def convert_dropout(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if imp.has(node, 2):  # opset 12+: training_mode input; inference (identity) unless true
        training = bool(imp.scalar_input(node, 2, "training_mode"))
        ratio = imp.scalar_input(node, 1, "ratio") if imp.has(node, 1) else 0.5
        if training and ratio != 0.0:
            raise imp.error("training_mode=1 (random dropout) is not supported (inference only)")
    y = imp.op(g.DropoutOp(imp.value(node.input[0])))
    return [y, np.ones(imp.shape_of(y), dtype=np.bool_)]  # inference keeps every element


# ----------------------------------------------------------------------------- linear algebra


def _auto_pad(
    mode: str,
    spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
) -> list[int]:
    """Explicit (begins..., ends...) pads for an ONNX auto_pad mode."""
    if mode in ("NOTSET", ""):
        return list(pads) if pads else [0] * (2 * len(spatial))
    if mode == "VALID":
        return [0] * (2 * len(spatial))
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise S.ShapeError(
            f"unknown auto_pad {mode!r} (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)"
        )
    begins, ends = [], []
    for n, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        out = -(-n // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return begins + ends


def _window(
    imp: Importer, node: onnx.NodeProto, kernel: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    a = attrs(node)
    x = imp.shape(node.input[0])
    if len(x) != 4:
        raise imp.error(f"only 2-D (NCHW) inputs are supported, got rank {len(x)}")
    strides = list(a.get("strides", [1, 1]))
    dilations = list(a.get("dilations", [1, 1]))
    for what, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
        if len(values) != 2 or min(values) < 1:
            raise imp.error(f"{what} must be two positive numbers, got {list(values)}")
    pads = _auto_pad(
        _s(a.get("auto_pad", "NOTSET")), x[2:], kernel, strides, dilations, a.get("pads", [])
    )
    return strides, pads, dilations


@converter("Conv")
def convert_conv(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    w_shape = imp.shape(node.input[1])
    if len(w_shape) != 4:
        raise imp.error(f"weight must be 4-D (M, C/group, kH, kW), got shape {list(w_shape)}")
    kernel = list(a.get("kernel_shape", w_shape[2:]))
    if kernel != list(w_shape[2:]):
        raise imp.error(
            f"kernel_shape {kernel} does not match the weight's spatial shape {list(w_shape[2:])}"
        )
    strides, pads, dilations = _window(imp, node, kernel)
    bias = imp.value(node.input[2]) if imp.has(node, 2) else None
    return _res(
        imp.emit(
            g.ConvOp(
                imp.value(node.input[0]),
                imp.value(node.input[1]),
                bias,
                strides=strides,
                pads=pads,
                dilations=dilations,
                group=a.get("group", 1),
            )
        )
    )


@converter("Gemm")
def convert_gemm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    c = imp.value(node.input[2]) if imp.has(node, 2) else None
    return _res(
        imp.emit(
            g.GemmOp(
                imp.value(node.input[0]),
                imp.value(node.input[1]),
                c,
                alpha=a.get("alpha", 1.0),
                beta=a.get("beta", 1.0),
                trans_a=a.get("transA", 0),
                trans_b=a.get("transB", 0),
            )
        )
    )


@converter("MatMul")
def convert_matmul(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return _res(imp.emit(g.MatmulOp(imp.value(node.input[0]), imp.value(node.input[1]))))


# ----------------------------------------------------------------------------- normalization


@converter("Softmax", "LogSoftmax")
def convert_softmax(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    op_cls = g.SoftmaxOp if node.op_type == "Softmax" else g.LogSoftmaxOp
    x = imp.value(node.input[0])
    shape = imp.shape(node.input[0])
    rank = len(shape)
    legacy = imp.opset < 13
    axis = S.normalize_axis(attrs(node).get("axis", 1 if legacy else -1), rank)
    if not legacy or axis == rank - 1:
        return _res(imp.emit(op_cls(x, axis=axis)))
    # opset < 13: softmax over the 2-D coercion [prod(shape[:axis]), prod(shape[axis:])]
    flat = imp.emit(g.ReshapeOp(x, [math.prod(shape[:axis]), math.prod(shape[axis:])]))
    sm = imp.emit(op_cls(flat, axis=1))
    return _res(imp.emit(g.ReshapeOp(sm, shape)))


@converter("LayerNormalization")
def convert_layer_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    rank = len(imp.shape(node.input[0]))
    axis = S.normalize_axis(a.get("axis", -1), rank)
    eps = a.get("epsilon", 1e-5)
    bias = imp.value(node.input[2]) if imp.has(node, 2) else None
    x = imp.value(node.input[0])
    outs = _res(imp.emit(g.LayerNormOp(x, imp.value(node.input[1]), bias, axis=axis, epsilon=eps)))
    if any(node.output[1:3]):
        # the optional Mean and InvStdDev outputs (reduced dims kept as 1), from graph ops
        axes = list(range(axis, rank))
        mean = imp.emit(g.ReduceMeanOp(x, axes=axes, keepdims=1))
        d = imp.emit(g.SubOp(x, mean))
        var = imp.emit(g.ReduceMeanOp(imp.emit(g.MulOp(d, d)), axes=axes, keepdims=1))
        inv = imp.emit(g.ReciprocalOp(imp.emit(g.SqrtOp(imp.emit(g.AddOp(var, imp.scalar(eps)))))))
        outs += [mean.results[0], inv.results[0]]
    return outs


@converter("BatchNormalization")
def convert_batch_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    if a.get("training_mode", 0):
        raise imp.error("training_mode=1 is not supported (inference only)")
    x, scale, bias, mean, var = (imp.value(n) for n in node.input[:5])
    return _res(imp.emit(g.BatchNormOp(x, scale, bias, mean, var, epsilon=a.get("epsilon", 1e-5))))


# ----------------------------------------------------------------------------- pooling


@converter("MaxPool", "AveragePool")
def convert_pool(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    kernel = list(a["kernel_shape"])
    strides, pads, dilations = _window(imp, node, kernel)
    x = imp.value(node.input[0])
    ceil_mode = a.get("ceil_mode", 0)
    if node.op_type == "MaxPool":
        if len(node.output) > 1 and node.output[1]:
            raise imp.error("the Indices output is not supported")
        op: Operation = g.MaxPoolOp(
            x, kernel=kernel, strides=strides, pads=pads, dilations=dilations, ceil_mode=ceil_mode
        )
    else:
        if dilations != [1, 1]:
            raise imp.error("dilated AveragePool is not supported")
        op = g.AvgPoolOp(
            x,
            kernel=kernel,
            strides=strides,
            pads=pads,
            ceil_mode=ceil_mode,
            count_include_pad=a.get("count_include_pad", 0),
        )
    return _res(imp.emit(op))


@converter("GlobalAveragePool", "GlobalMaxPool")
def convert_global_pool(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    cls = g.GlobalAvgPoolOp if node.op_type == "GlobalAveragePool" else g.GlobalMaxPoolOp
    return _res(imp.emit(cls(imp.value(node.input[0]))))


# ----------------------------------------------------------------------------- reductions

_REDUCE: dict[str, tuple[type[g.GraphOp], int]] = {
    # op -> (graph op, first opset where axes is an input)
    "ReduceMean": (g.ReduceMeanOp, 18),
    "ReduceSum": (g.ReduceSumOp, 13),
    "ReduceMax": (g.ReduceMaxOp, 18),
}


@converter(*_REDUCE)
def convert_reduce(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    cls, axes_input_since = _REDUCE[node.op_type]
    a = attrs(node)
    rank = len(imp.shape(node.input[0]))
    if imp.opset >= axes_input_since:
        axes = imp.int_input(node, 1, "axes") if imp.has(node, 1) else []
    else:
        axes = list(a.get("axes", []))
    x = imp.value(node.input[0])
    if not axes and a.get("noop_with_empty_axes", 0):
        return _res(imp.emit(g.IdentityOp(x)))
    return _res(
        imp.emit(
            cls(
                x,
                axes=S.normalize_axes([int(v) for v in axes], rank),
                keepdims=a.get("keepdims", 1),
            )
        )
    )


# ----------------------------------------------------------------------------- data movement


def _reshape(imp: Importer, x: SSAValue, shape: Sequence[int]) -> list[Value]:
    return _res(imp.emit(g.ReshapeOp(x, shape)))


@converter("Reshape")
def convert_reshape(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    target = imp.int_input(node, 1, "shape")
    try:
        shape = S.reshape_target(imp.shape(node.input[0]), target, attrs(node).get("allowzero", 0))
    except S.ShapeError as e:
        raise imp.error(str(e)) from e
    return _reshape(imp, imp.value(node.input[0]), shape)


@converter("Flatten")
def convert_flatten(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    rank = len(imp.shape(node.input[0]))
    axis = attrs(node).get("axis", 1)
    axis = axis + rank if axis < 0 else axis
    return _res(imp.emit(g.FlattenOp(imp.value(node.input[0]), axis=axis)))


@converter("Transpose")
def convert_transpose(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    rank = len(imp.shape(node.input[0]))
    perm = attrs(node).get("perm", list(range(rank))[::-1])
    return _res(imp.emit(g.TransposeOp(imp.value(node.input[0]), perm=perm)))


@converter("Concat")
def convert_concat(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    ins = [n for n in node.input if n]
    if not ins:
        raise imp.error("has no inputs (every input name is empty)")
    axis = S.normalize_axis(attrs(node)["axis"], len(imp.shape(ins[0])))
    return _res(imp.emit(g.ConcatOp([imp.value(n) for n in ins], axis=axis)))


@converter("Split")
def convert_split(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    shape = imp.shape(node.input[0])
    axis = S.normalize_axis(a.get("axis", 0), len(shape))
    n = len(node.output)
    if imp.opset >= 13 and imp.has(node, 1):
        sizes = imp.int_input(node, 1, "split")
    elif "split" in a:
        sizes = list(a["split"])
    else:
        n = a.get("num_outputs", n)
        if n < 1:
            raise imp.error(f"num_outputs must be positive, got {n}")
        chunk = -(-shape[axis] // n)  # opset 18: the last chunk may be smaller
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(n)]
    if len(sizes) != len(node.output):
        raise imp.error(f"splits into {len(sizes)} parts but has {len(node.output)} outputs")
    return _res(imp.emit(g.SplitOp(imp.value(node.input[0]), axis=axis, sizes=sizes)))


@converter("Slice")
def convert_slice(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.shape(node.input[0])
    rank = len(shape)

    def ints(i: int, what: str) -> list[int] | None:
        if not imp.has(node, i):
            return None
        return imp.int_input(node, i, what)

    a = attrs(node)
    if imp.opset < 10:  # pragma: no cover - below MIN_OPSET, kept for completeness
        st, en, ax, sp = a["starts"], a["ends"], a.get("axes"), None
    else:
        st, en, ax, sp = ints(1, "starts"), ints(2, "ends"), ints(3, "axes"), ints(4, "steps")
    assert st is not None and en is not None  # required inputs (checked against the schema)
    for what, values in (("ends", en), ("axes", ax), ("steps", sp)):
        if values is not None and len(values) != len(st):
            raise imp.error(f"{what} has {_count(len(values), 'value')} but starts has {len(st)}")
    ax = ax if ax is not None else list(range(len(st)))
    sp = sp if sp is not None else [1] * len(st)
    starts, ends, steps = [0] * rank, list(shape), [1] * rank
    for s, e, axis, step in zip(st, en, ax, sp, strict=True):
        d = S.normalize_axis(axis, rank)
        try:
            starts[d], ends[d] = S.normalize_slice(shape[d], s, e, step)
        except S.ShapeError as err:
            raise imp.error(str(err)) from err
        steps[d] = step
    return _res(
        imp.emit(g.SliceOp(imp.value(node.input[0]), starts=starts, ends=ends, steps=steps))
    )


@converter("Squeeze", "Unsqueeze")
def convert_squeeze(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.shape(node.input[0])
    if imp.opset >= 13:
        axes = imp.int_input(node, 1, "axes") if imp.has(node, 1) else None
    else:
        axes = attrs(node).get("axes")
    x = imp.value(node.input[0])
    if node.op_type == "Squeeze":
        if axes is None:
            axes = [i for i, d in enumerate(shape) if d == 1]
        return _res(imp.emit(g.SqueezeOp(x, axes=S.normalize_axes(axes, len(shape)))))
    if axes is None:
        raise imp.error("axes are required")
    return _res(imp.emit(g.UnsqueezeOp(x, axes=S.normalize_axes(axes, len(shape) + len(axes)))))


@converter("Gather")
def convert_gather(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.shape(node.input[0])
    axis = S.normalize_axis(attrs(node).get("axis", 0), len(shape))
    idx = imp.const(node.input[1])
    if idx is not None:
        if not np.issubdtype(idx.dtype, np.integer):
            raise imp.error(f"indices ('{node.input[1]}') must be integers, got {idx.dtype}")
        bad = (idx < -shape[axis]) | (idx >= shape[axis])
        if bad.any():
            raise imp.error(f"indices out of range for axis {axis} of extent {shape[axis]}")
        indices = imp.value(node.input[1], dtype=np.int64)
    else:
        indices = imp.value(node.input[1])
    return _res(imp.emit(g.GatherOp(imp.value(node.input[0]), indices, axis=axis)))


@converter("Pad")
def convert_pad(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    mode = _s(a.get("mode", "constant"))
    if mode != "constant":
        raise imp.error(f"mode {mode!r} is not supported (only 'constant')")
    rank = len(imp.shape(node.input[0]))
    pads = imp.int_input(node, 1, "pads")
    value = imp.scalar_input(node, 2, "constant_value") if imp.has(node, 2) else 0.0
    if imp.has(node, 3):  # opset 18: pads only for the given axes
        axes = [S.normalize_axis(v, rank) for v in imp.int_input(node, 3, "axes")]
        if len(pads) != 2 * len(axes):
            raise imp.error(
                f"pads must have {2 * len(axes)} values (two per axis in {axes}), got {len(pads)}"
            )
        full = [0] * (2 * rank)
        for i, d in enumerate(axes):
            full[d], full[d + rank] = pads[i], pads[i + len(axes)]
        pads = full
    return _res(imp.emit(g.PadOp(imp.value(node.input[0]), pads=pads, value=value)))


# ----------------------------------------------------------------------------- constants


@converter("Constant")
def convert_constant(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if len(node.attribute) != 1:
        raise imp.error(f"needs exactly one value attribute, got {len(node.attribute)}")
    a = node.attribute[0]
    v = helper.get_attribute_value(a)
    if a.name == "value":
        return [tensor_array(v, f"Constant node '{imp.label}': attribute 'value'")]
    if a.name in ("value_float", "value_floats"):
        return [np.asarray(v, dtype=np.float32)]
    if a.name in ("value_int", "value_ints"):
        return [np.asarray(v, dtype=np.int64)]
    raise imp.error(f"constant attribute {a.name!r} is not supported")


@converter("ConstantOfShape")
def convert_constant_of_shape(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    # reached only when the shape is not constant: everything else is folded
    raise imp.error("input shape must be a constant")


@converter("Shape")
def convert_shape(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    # static shapes: always folded to a constant
    a = attrs(node)
    shape = np.asarray(imp.shape(node.input[0]), dtype=np.int64)
    return [shape[a.get("start", 0) : a.get("end", len(shape))]]


# ----------------------------------------------------------------------------- compositions


def _keep_or_squeeze(imp: Importer, y: SSAValue, axes: list[int], keepdims: int) -> SSAValue:
    return y if keepdims else imp.op(g.SqueezeOp(y, axes=axes))


def _reduce_axes(imp: Importer, node: onnx.NodeProto, axes_input_since: int) -> list[int]:
    rank = len(imp.shape(node.input[0]))
    a = attrs(node)
    if imp.opset >= axes_input_since:
        axes = imp.int_input(node, 1, "axes") if imp.has(node, 1) else []
    else:
        axes = list(a.get("axes", []))
    return list(S.normalize_axes([int(v) for v in axes], rank)) if axes else list(range(rank))


@converter(
    "ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum"
)
def convert_reduce_composed(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Reductions composed of ReduceSum/ReduceMax and elementwise ops: min(x) = -max(-x),
    L1 = sum|x|, L2 = sqrt(sum x^2), log-sum-exp = m + log(sum(exp(x - m)))."""
    a = attrs(node)
    since = 18
    keepdims = int(a.get("keepdims", 1))
    x = imp.value(node.input[0])
    if imp.has(node, 1) or "axes" in a or imp.opset < since:
        axes = _reduce_axes(imp, node, since)
    else:
        if a.get("noop_with_empty_axes", 0):
            return _res(imp.emit(g.IdentityOp(x)))
        axes = list(range(len(imp.shape_of(x))))
    t = node.op_type
    if t == "ReduceMin":  # bool: not any(not x)
        flip = g.NotOp if element_type_of(x) == i1 else g.NegOp
        m = imp.op(g.ReduceMaxOp(imp.op(flip(x)), axes=axes, keepdims=keepdims))
        return [imp.op(flip(m))]
    if t == "ReduceL1":
        return [imp.op(g.ReduceSumOp(imp.op(g.AbsOp(x)), axes=axes, keepdims=keepdims))]
    if t in ("ReduceL2", "ReduceSumSquare"):
        s = imp.op(g.ReduceSumOp(imp.op(g.MulOp(x, x)), axes=axes, keepdims=keepdims))
        return [imp.op(g.SqrtOp(s)) if t == "ReduceL2" else s]
    if t == "ReduceLogSum":
        return [imp.op(g.LogOp(imp.op(g.ReduceSumOp(x, axes=axes, keepdims=keepdims))))]
    m = imp.op(g.ReduceMaxOp(x, axes=axes, keepdims=1))
    e = imp.op(g.ExpOp(imp.op(g.SubOp(x, m))))
    y = imp.op(g.AddOp(imp.op(g.LogOp(imp.op(g.ReduceSumOp(e, axes=axes, keepdims=1)))), m))
    return [_keep_or_squeeze(imp, y, axes, keepdims)]


@converter("InstanceNormalization")
def convert_instance_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """(x - mean) / sqrt(var + eps) over the spatial dims of each (n, c), then per-channel
    scale and bias."""
    x, scale, bias = (imp.value(n) for n in node.input[:3])
    shape = imp.shape_of(x)
    if len(shape) < 3:
        raise imp.error(f"needs an input of rank 3 or more (N, C, spatial...), got {list(shape)}")
    axes = list(range(2, len(shape)))
    eps = float(attrs(node).get("epsilon", 1e-5))
    mean = imp.op(g.ReduceMeanOp(x, axes=axes, keepdims=1))
    d = imp.op(g.SubOp(x, mean))
    var = imp.op(g.ReduceMeanOp(imp.op(g.MulOp(d, d)), axes=axes, keepdims=1))
    y = imp.op(g.DivOp(d, imp.op(g.SqrtOp(imp.op(g.AddOp(var, imp.scalar(eps)))))))
    per_channel = [shape[1]] + [1] * (len(shape) - 2)
    y = imp.op(g.MulOp(y, imp.op(g.ReshapeOp(scale, per_channel))))
    return _res(imp.emit(g.AddOp(y, imp.op(g.ReshapeOp(bias, per_channel)))))


@converter("DepthToSpace", "SpaceToDepth")
def convert_depth_to_space(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Reshape - transpose - reshape, as the operator's definition spells it."""
    a = attrs(node)
    bs = int(a["blocksize"])
    x = imp.value(node.input[0])
    n, c, h, w = imp.shape_of(x)
    if node.op_type == "DepthToSpace":
        if _s(a.get("mode", "DCR")) == "DCR":
            t = imp.op(g.ReshapeOp(x, [n, bs, bs, c // (bs * bs), h, w]))
            t = imp.op(g.TransposeOp(t, perm=[0, 3, 4, 1, 5, 2]))
        else:
            t = imp.op(g.ReshapeOp(x, [n, c // (bs * bs), bs, bs, h, w]))
            t = imp.op(g.TransposeOp(t, perm=[0, 1, 4, 2, 5, 3]))
        return _res(imp.emit(g.ReshapeOp(t, [n, c // (bs * bs), h * bs, w * bs])))
    t = imp.op(g.ReshapeOp(x, [n, c, h // bs, bs, w // bs, bs]))
    crd = _s(a.get("mode", "DCR")) == "CRD"
    t = imp.op(g.TransposeOp(t, perm=[0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4]))
    return _res(imp.emit(g.ReshapeOp(t, [n, c * bs * bs, h // bs, w // bs])))


@converter("Tile")
def convert_tile(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x tiled `repeats` times: interleave unit dims, broadcast them to the repeats, merge."""
    reps = imp.int_input(node, 1, "repeats")
    x = imp.value(node.input[0])
    shape = imp.shape_of(x)
    if len(reps) != len(shape) or min(reps, default=1) < 1:
        raise imp.error(f"repeats {reps} must be {len(shape)} positive numbers")
    spread = [v for d in shape for v in (1, d)]
    grown = [v for r, d in zip(reps, shape, strict=True) for v in (r, d)]
    t = imp.op(g.ExpandOp(imp.op(g.ReshapeOp(x, spread)), shape=grown))
    return _res(imp.emit(g.ReshapeOp(t, [r * d for r, d in zip(reps, shape, strict=True)])))


@converter("Trilu")
def convert_trilu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """x where the (static) triangle mask holds, else 0."""
    x = imp.value(node.input[0])
    shape = imp.shape_of(x)
    k = imp.int_input(node, 1, "k")[0] if imp.has(node, 1) else 0
    rows, cols = np.indices(shape[-2:])
    upper = int(attrs(node).get("upper", 1))
    keep = (cols - rows >= k) if upper else (cols - rows <= k)
    zero = imp.scalar(0, like=x)
    return _res(imp.emit(g.WhereOp(imp.op(g.ConstantOp(keep)), x, zero)))


@converter("Size")
def convert_size(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return [np.asarray(math.prod(imp.shape(node.input[0])), dtype=np.int64)]  # static


# ----------------------------------------------------------------------------- entry point


def load_model(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        proto = model
        where = "model"
    else:
        path = Path(model)
        where = str(path)
        if not path.is_file():
            raise FrontendError(f"model file not found: {path}")
        try:
            proto = onnx.load(str(path), load_external_data=False)
        except Exception as e:  # protobuf raises assorted errors
            raise FrontendError(f"{path} is not a valid ONNX model: {e}") from e
        _load_external_data(proto, path)
    if not proto.HasField("graph") or proto.ir_version <= 0:
        raise FrontendError(f"{where} is not a valid ONNX model: no graph or IR version")
    return proto


def _tensors(proto: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every TensorProto of a model: initializers and tensor attributes, in subgraphs too."""
    graphs = [proto.graph]
    while graphs:
        graph = graphs.pop()
        yield from graph.initializer
        for sparse in graph.sparse_initializer:
            yield from (sparse.values, sparse.indices)
        for node in graph.node:
            for a in node.attribute:
                if a.HasField("t"):
                    yield a.t
                yield from a.tensors
                if a.HasField("g"):
                    graphs.append(a.g)
                graphs.extend(a.graphs)


def _check_external_size(
    t: onnx.TensorProto, keys: dict[str, str], file_size: int, where: str
) -> None:
    """The bytes an external tensor would read must be what its dims need, checked before
    reading: a model must not make the frontend read a huge file into memory."""
    if t.data_type not in _TENSOR_TYPES:
        raise FrontendError(
            f"{where} has element type {_type_name(t.data_type)}, which is not supported"
        )
    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise FrontendError(f"{where} has a negative dimension: dims {dims}")
    _check_elements(dims, where)
    try:
        offset = int(keys.get("offset") or 0)
        size = int(keys["length"]) if keys.get("length") else file_size - offset
    except ValueError:
        raise FrontendError(
            f"{where}: external data offset/length are not integers: "
            f"{keys.get('offset')!r}, {keys.get('length')!r}"
        ) from None
    need = math.prod(dims) * np.dtype(_TENSOR_TYPES[t.data_type]).itemsize
    if size != need:
        raise FrontendError(
            f"{where}: its external data holds {size} bytes, but dims {dims} of "
            f"{_type_name(t.data_type)} need {need}"
        )


def _load_external_data(proto: onnx.ModelProto, path: Path) -> None:
    """Read the tensors kept in external files next to the model at `path`.

    Each file must be a regular file inside the model's folder, reached without following a
    symbolic link and with no other hard link: a model must not be able to read (and then
    leak into its results) a file from elsewhere. onnx >= 1.21 refuses these too; this is
    the same rule, checked here in one place whatever onnx version is installed.
    """
    from onnx.external_data_helper import load_external_data_for_tensor

    root = path.parent.resolve()
    for t in _tensors(proto):
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        where = f"{path}: tensor '{t.name}'"
        keys = {e.key: e.value for e in t.external_data}
        location = keys.get("location", "")
        parts = Path(location).parts
        if not parts or Path(location).is_absolute() or ".." in parts:
            raise FrontendError(
                f"{where} has external data location {location!r}; it must be "
                "a relative path inside the model's folder"
            )
        current = root
        for part in parts:
            current = current / part
            try:
                info = os.lstat(current)
            except OSError as e:
                raise FrontendError(
                    f"{where}: external data file {location!r} cannot be read: {e.strerror or e}"
                ) from None
            if stat.S_ISLNK(info.st_mode):
                raise FrontendError(
                    f"{where}: external data path {location!r} goes through a symbolic link "
                    f"('{current.relative_to(root)}'); refusing to follow it"
                )
        if not stat.S_ISREG(info.st_mode):
            raise FrontendError(f"{where}: external data {location!r} is not a regular file")
        if info.st_nlink > 1:
            raise FrontendError(
                f"{where}: external data file {location!r} has other hard "
                "links; refusing it (it may be a file from elsewhere)"
            )
        _check_external_size(t, keys, info.st_size, where)
        try:
            load_external_data_for_tensor(t, str(root))
        except Exception as e:  # onnx's own checks (bounds, links) and I/O errors
            raise FrontendError(f"{where}: cannot load its external data: {e}") from None
        t.data_location = onnx.TensorProto.DEFAULT  # (onnx < 1.21 leaves these to the caller)
        del t.external_data[:]


def import_onnx(
    model: str | Path | onnx.ModelProto, input_shapes: dict[str, list[int]] | None = None
) -> ModuleOp:
    """Import an ONNX model (path or ModelProto) as `func.func @main` in the graph dialect.

    `input_shapes` binds symbolic/unknown input dims (input name -> full shape).
    Raises FrontendError for anything the frontend cannot import.
    """
    return Importer(upgrade_opset(load_model(model)), input_shapes).run()


def upgrade_opset(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` itself if its default-domain opset is supported, else the model upgraded to
    UPGRADE_TO_OPSET by onnx.version_converter; FrontendError with its reason if it cannot."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset >= MIN_OPSET or opset == 0:  # 0: no default-domain operators to upgrade
        return model
    try:
        return version_converter.convert_version(model, UPGRADE_TO_OPSET)
    except Exception as e:  # the converter reports unconvertible nodes as RuntimeError & co.
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FrontendError(
            f"ONNX opset {opset} model could not be upgraded to opset {UPGRADE_TO_OPSET} by "
            f"onnx's version converter: {why}"
        ) from None
