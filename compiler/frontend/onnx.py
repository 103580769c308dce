"""ONNX -> `graph` dialect importer.

One converter per ONNX operator (`CONVERTERS`), each reading the node's attributes and the
opset-dependent attribute-like inputs. Values known at import time (initializers, Constant,
Shape of static tensors and any node whose inputs are all known) stay numpy arrays and are
evaluated eagerly, so attribute-like inputs (Reshape's shape, Slice's starts, ...) are plain
numbers when a converter needs them; they become `graph.constant` only where an op consumes them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType, f32
from xdsl.ir import Block, Operation, Region, SSAValue

from compiler.frontend.errors import FrontendError
from dialects import graph as g
from dialects import graph_shapes as S

__all__ = ["CONVERTERS", "FrontendError", "import_onnx"]

MIN_OPSET = 11
Value = SSAValue | np.ndarray


def _hint(name: str) -> str | None:
    hint = re.sub(r"\W", "_", name).strip("_")
    return hint if hint and not hint[0].isdigit() else None


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

    # -- values ---------------------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def has(self, node: onnx.NodeProto, i: int) -> bool:
        return i < len(node.input) and node.input[i] != ""

    def lookup(self, name: str) -> Value:
        if name not in self.values:
            raise FrontendError(f"value '{name}' is used but not produced by any supported output")
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
                "a constant (computable at import time)")
        return v

    def value(self, name: str, dtype: type | None = np.float32) -> SSAValue:
        """The SSA value of `name`, materializing a constant (as `dtype`) if needed."""
        v = self.lookup(name)
        if isinstance(v, SSAValue):
            return v
        numeric = np.issubdtype(v.dtype, np.number) or v.dtype == np.bool_
        arr = v.astype(dtype) if dtype is not None and numeric else v
        op = self.emit(g.ConstantOp(arr))
        if (h := _hint(name)) is not None:
            op.results[0].name_hint = h
        return op.results[0]

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

    # -- driver ---------------------------------------------------------------------------

    def run(self) -> ModuleOp:
        if self.opset < MIN_OPSET:
            raise FrontendError(f"ONNX opset {self.opset} is not supported (need >= {MIN_OPSET})")
        self._check_supported()
        for init in self.graph.initializer:
            self.values[init.name] = numpy_helper.to_array(init)
        for sinit in self.graph.sparse_initializer:
            raise FrontendError(f"sparse initializer '{sinit.values.name}' is not supported")
        arg_types, arg_names = self._inputs()
        self.block = Block(arg_types=arg_types)
        for arg, name in zip(self.block.args, arg_names, strict=True):
            self.values[name] = arg
            if (h := _hint(name)) is not None:
                arg.name_hint = h
        for i, node in enumerate(self.graph.node):
            self.node, self.label = node, node.name or f"#{i}"
            self._convert(node)
        self.node = None
        results = [self.value(o.name) for o in self.graph.output]
        for o, r in zip(self.graph.output, results, strict=True):
            # the compiled signature is float32 only: any other result type would make the
            # caller's output buffer too small (or wrongly typed)
            if not isinstance(r.type, TensorType) or r.type.element_type != f32:
                raise FrontendError(f"model output '{o.name}' has type {r.type}; only float32 "
                                    "outputs are supported")
        self.emit(func.ReturnOp(*results))

        def names(ns: Sequence[str]) -> ArrayAttr[DictionaryAttr]:
            return ArrayAttr([DictionaryAttr({"ziggurat.name": StringAttr(n)}) for n in ns])

        fn = func.FuncOp("main", (arg_types, [r.type for r in results]), Region(self.block),
                         arg_attrs=names(arg_names),
                         res_attrs=names([o.name for o in self.graph.output]))
        module = ModuleOp([fn])
        module.verify()
        return module

    def _check_supported(self) -> None:
        bad: dict[str, list[str]] = {}
        for i, node in enumerate(self.graph.node):
            if node.domain not in ("", "ai.onnx") or node.op_type not in CONVERTERS:
                key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
                bad.setdefault(key, []).append(node.name or f"#{i}")
        if bad:
            parts = []
            for op_type in sorted(bad):
                nodes = bad[op_type]
                label = "node" if len(nodes) == 1 else "nodes"
                parts.append(f"{op_type} ({label} {', '.join(repr(n) for n in nodes)})")
            raise FrontendError(
                f"unsupported ONNX operators (opset {self.opset}): {', '.join(parts)}")

    def _inputs(self) -> tuple[list[TensorType], list[str]]:
        inits = {i.name for i in self.graph.initializer}
        inputs = [i for i in self.graph.input if i.name not in inits]
        known = {i.name for i in inputs}
        for name in self.input_shapes:
            if name not in known:
                raise FrontendError(
                    f"input_shapes names unknown input '{name}' (model inputs: "
                    f"{', '.join(repr(n) for n in sorted(known))})")
        types, names = [], []
        for inp in inputs:
            tt = inp.type.tensor_type
            if not inp.type.HasField("tensor_type") or tt.elem_type != onnx.TensorProto.FLOAT:
                et = onnx.TensorProto.DataType.Name(tt.elem_type) if inp.type.HasField(
                    "tensor_type") else "non-tensor"
                raise FrontendError(
                    f"model input '{inp.name}' has element type {et}; only float32 inputs "
                    "are supported")
            given = self.input_shapes.get(inp.name)
            dims = list(tt.shape.dim) if tt.HasField("shape") else None
            if given is not None:
                if dims is not None and len(dims) != len(given):
                    raise FrontendError(
                        f"input_shapes gives rank {len(given)} for input '{inp.name}' of rank "
                        f"{len(dims)}")
                if any(int(d) <= 0 for d in given):
                    raise FrontendError(f"input_shapes for '{inp.name}' must be positive: {given}")
                shape = [int(d) for d in given]
            else:
                if dims is None:
                    raise FrontendError(
                        f"input '{inp.name}' has no shape; pass it in input_shapes")
                shape = []
                for k, d in enumerate(dims):
                    if d.HasField("dim_value") and d.dim_value > 0:
                        shape.append(d.dim_value)
                    elif d.HasField("dim_value") and d.dim_value == 0:
                        raise FrontendError(
                            f"input '{inp.name}' has a zero-size dimension {k}; zero-size "
                            "tensors are not supported")
                    else:
                        sym = f" ('{d.dim_param}')" if d.dim_param else ""
                        raise FrontendError(
                            f"input '{inp.name}' has unknown dimension {k}{sym}; pass its shape "
                            "in input_shapes")
            types.append(TensorType(f32, shape))
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
            if isinstance(v, SSAValue) and 0 in self.shape_of(v):
                raise self.error(f"output '{name}' would have the zero-size shape "
                                 f"{list(self.shape_of(v))}; zero-size tensors are not supported")
            if name:
                self.values[name] = v
                if isinstance(v, SSAValue) and (h := _hint(name)) is not None:
                    v.name_hint = h

    def _fold(self, node: onnx.NodeProto) -> list[np.ndarray]:
        """Evaluate a node on import-time constants with ONNX's reference implementation."""
        from onnx.reference import ReferenceEvaluator

        feeds = {n: self.lookup(n) for n in node.input if n}
        try:
            ev = ReferenceEvaluator(node, opsets={"": self.opset})
            outs = ev.run(None, feeds)
        except Exception as e:  # any evaluator failure is a model problem
            raise self.error(f"constant folding failed: {e}") from e
        return [np.asarray(o) for o in outs]


def attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


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
    "Sqrt": g.SqrtOp, "Exp": g.ExpOp, "Log": g.LogOp, "Neg": g.NegOp, "Abs": g.AbsOp,
    "Reciprocal": g.ReciprocalOp, "Relu": g.ReluOp, "Sigmoid": g.SigmoidOp, "Tanh": g.TanhOp,
    "Erf": g.ErfOp, "HardSwish": g.HardSwishOp, "Identity": g.IdentityOp,
}
_BINARY: dict[str, type[g.GraphOp]] = {
    "Add": g.AddOp, "Sub": g.SubOp, "Mul": g.MulOp, "Div": g.DivOp, "Pow": g.PowOp,
}


@converter(*_UNARY)
def convert_unary(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return _res(imp.emit(_UNARY[node.op_type](imp.value(node.input[0]))))


@converter(*_BINARY)
def convert_binary(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a, b = imp.value(node.input[0]), imp.value(node.input[1])
    return _res(imp.emit(_BINARY[node.op_type](a, b)))


@converter("LeakyRelu")
def convert_leaky_relu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return _res(imp.emit(g.LeakyReluOp(imp.value(node.input[0]),
                                       alpha=attrs(node).get("alpha", 0.01))))


@converter("HardSigmoid")
def convert_hard_sigmoid(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    return _res(imp.emit(g.HardSigmoidOp(imp.value(node.input[0]), alpha=a.get("alpha", 0.2),
                                         beta=a.get("beta", 0.5))))


@converter("Gelu")
def convert_gelu(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    approx = _s(attrs(node).get("approximate", "none"))
    return _res(imp.emit(g.GeluOp(imp.value(node.input[0]), approximate=approx)))


@converter("Clip")
def convert_clip(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)  # opset < 11 used attributes; keep them as a fallback
    lo, hi = a.get("min", -math.inf), a.get("max", math.inf)
    if imp.has(node, 1):
        lo = float(imp.const_input(node, 1, "min"))
    if imp.has(node, 2):
        hi = float(imp.const_input(node, 2, "max"))
    return _res(imp.emit(g.ClipOp(imp.value(node.input[0]), min=lo, max=hi)))


@converter("Cast")
def convert_cast(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    to = attrs(node)["to"]
    if to != onnx.TensorProto.FLOAT:
        raise imp.error(f"cast of a computed tensor to {onnx.TensorProto.DataType.Name(to)} is "
                        "not supported (only to FLOAT)")
    return _res(imp.emit(g.CastOp(imp.value(node.input[0], dtype=None), to="f32")))


@converter("Dropout")
def convert_dropout(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    if imp.has(node, 2):  # opset 12+: training_mode input; inference (identity) unless true
        training = bool(imp.const_input(node, 2, "training_mode").reshape(-1)[0])
        ratio = float(imp.const_input(node, 1, "ratio").reshape(-1)[0]) if imp.has(
            node, 1) else 0.5
        if training and ratio != 0.0:
            raise imp.error("training_mode=1 (random dropout) is not supported (inference only)")
    if len(node.output) > 1 and node.output[1]:
        raise imp.error("the mask output is not supported")
    return _res(imp.emit(g.DropoutOp(imp.value(node.input[0]))))


# ----------------------------------------------------------------------------- linear algebra


def _auto_pad(mode: str, spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int], pads: Sequence[int]) -> list[int]:
    """Explicit (begins..., ends...) pads for an ONNX auto_pad mode."""
    if mode in ("NOTSET", ""):
        return list(pads) if pads else [0] * (2 * len(spatial))
    if mode == "VALID":
        return [0] * (2 * len(spatial))
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise FrontendError(f"unknown auto_pad {mode!r}")
    begins, ends = [], []
    for n, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        out = -(-n // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return begins + ends


def _window(imp: Importer, node: onnx.NodeProto, kernel: Sequence[int]
            ) -> tuple[list[int], list[int], list[int]]:
    a = attrs(node)
    x = imp.shape(node.input[0])
    if len(x) != 4 or len(kernel) != 2:
        raise imp.error(f"only 2-D (NCHW) inputs are supported, got rank {len(x)}")
    strides = list(a.get("strides", [1, 1]))
    dilations = list(a.get("dilations", [1, 1]))
    pads = _auto_pad(_s(a.get("auto_pad", "NOTSET")), x[2:], kernel, strides, dilations,
                     a.get("pads", []))
    return strides, pads, dilations


@converter("Conv")
def convert_conv(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    w_shape = imp.shape(node.input[1])
    kernel = list(a.get("kernel_shape", w_shape[2:]))
    strides, pads, dilations = _window(imp, node, kernel)
    bias = imp.value(node.input[2]) if imp.has(node, 2) else None
    return _res(imp.emit(g.ConvOp(imp.value(node.input[0]), imp.value(node.input[1]), bias,
                                  strides=strides, pads=pads, dilations=dilations,
                                  group=a.get("group", 1))))


@converter("Gemm")
def convert_gemm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    c = imp.value(node.input[2]) if imp.has(node, 2) else None
    return _res(imp.emit(g.GemmOp(imp.value(node.input[0]), imp.value(node.input[1]), c,
                                  alpha=a.get("alpha", 1.0), beta=a.get("beta", 1.0),
                                  trans_a=a.get("transA", 0), trans_b=a.get("transB", 0))))


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
    outs = _res(imp.emit(g.LayerNormOp(x, imp.value(node.input[1]), bias, axis=axis,
                                       epsilon=eps)))
    if any(node.output[1:3]):
        # the optional Mean and InvStdDev outputs (reduced dims kept as 1), from graph ops
        axes = list(range(axis, rank))
        mean = imp.emit(g.ReduceMeanOp(x, axes=axes, keepdims=1))
        d = imp.emit(g.SubOp(x, mean))
        var = imp.emit(g.ReduceMeanOp(imp.emit(g.MulOp(d, d)), axes=axes, keepdims=1))
        eps_c = imp.emit(g.ConstantOp(np.asarray(eps, dtype=np.float32)))
        inv = imp.emit(g.ReciprocalOp(imp.emit(g.SqrtOp(imp.emit(g.AddOp(var, eps_c))))))
        outs += [mean.results[0], inv.results[0]]
    return outs


@converter("BatchNormalization")
def convert_batch_norm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    if a.get("training_mode", 0):
        raise imp.error("training_mode=1 is not supported (inference only)")
    x, scale, bias, mean, var = (imp.value(n) for n in node.input[:5])
    return _res(imp.emit(g.BatchNormOp(x, scale, bias, mean, var,
                                       epsilon=a.get("epsilon", 1e-5))))


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
        op: Operation = g.MaxPoolOp(x, kernel=kernel, strides=strides, pads=pads,
                                    dilations=dilations, ceil_mode=ceil_mode)
    else:
        if dilations != [1, 1]:
            raise imp.error("dilated AveragePool is not supported")
        op = g.AvgPoolOp(x, kernel=kernel, strides=strides, pads=pads, ceil_mode=ceil_mode,
                         count_include_pad=a.get("count_include_pad", 0))
    return _res(imp.emit(op))


@converter("GlobalAveragePool", "GlobalMaxPool")
def convert_global_pool(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    cls = g.GlobalAvgPoolOp if node.op_type == "GlobalAveragePool" else g.GlobalMaxPoolOp
    return _res(imp.emit(cls(imp.value(node.input[0]))))


# ----------------------------------------------------------------------------- reductions

_REDUCE: dict[str, tuple[type[g.GraphOp], int]] = {
    # op -> (graph op, first opset where axes is an input)
    "ReduceMean": (g.ReduceMeanOp, 18), "ReduceSum": (g.ReduceSumOp, 13),
    "ReduceMax": (g.ReduceMaxOp, 18),
}


@converter(*_REDUCE)
def convert_reduce(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    cls, axes_input_since = _REDUCE[node.op_type]
    a = attrs(node)
    rank = len(imp.shape(node.input[0]))
    if imp.opset >= axes_input_since:
        axes = list(imp.const_input(node, 1, "axes").reshape(-1)) if imp.has(node, 1) else []
    else:
        axes = list(a.get("axes", []))
    x = imp.value(node.input[0])
    if not axes and a.get("noop_with_empty_axes", 0):
        return _res(imp.emit(g.IdentityOp(x)))
    return _res(imp.emit(cls(x, axes=S.normalize_axes([int(v) for v in axes], rank),
                             keepdims=a.get("keepdims", 1))))


# ----------------------------------------------------------------------------- data movement


def _reshape(imp: Importer, x: SSAValue, shape: Sequence[int]) -> list[Value]:
    return _res(imp.emit(g.ReshapeOp(x, shape)))


@converter("Reshape")
def convert_reshape(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    target = [int(v) for v in imp.const_input(node, 1, "shape").reshape(-1)]
    try:
        shape = S.reshape_target(imp.shape(node.input[0]), target,
                                 attrs(node).get("allowzero", 0))
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
    axis = S.normalize_axis(attrs(node)["axis"], len(imp.shape(ins[0])))
    return _res(imp.emit(g.ConcatOp([imp.value(n) for n in ins], axis=axis)))


@converter("Split")
def convert_split(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    shape = imp.shape(node.input[0])
    axis = S.normalize_axis(a.get("axis", 0), len(shape))
    n = len(node.output)
    if imp.opset >= 13 and imp.has(node, 1):
        sizes = [int(v) for v in imp.const_input(node, 1, "split").reshape(-1)]
    elif "split" in a:
        sizes = list(a["split"])
    else:
        n = a.get("num_outputs", n)
        chunk = -(-shape[axis] // n)  # opset 18: the last chunk may be smaller
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(n)]
    return _res(imp.emit(g.SplitOp(imp.value(node.input[0]), axis=axis, sizes=sizes)))


@converter("Slice")
def convert_slice(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.shape(node.input[0])
    rank = len(shape)

    def ints(i: int, what: str) -> list[int] | None:
        if not imp.has(node, i):
            return None
        return [int(v) for v in imp.const_input(node, i, what).reshape(-1)]

    a = attrs(node)
    if imp.opset < 10:  # pragma: no cover - below MIN_OPSET, kept for completeness
        st, en, ax, sp = a["starts"], a["ends"], a.get("axes"), None
    else:
        st, en, ax, sp = ints(1, "starts"), ints(2, "ends"), ints(3, "axes"), ints(4, "steps")
    assert st is not None and en is not None
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
    return _res(imp.emit(g.SliceOp(imp.value(node.input[0]), starts=starts, ends=ends,
                                   steps=steps)))


@converter("Squeeze", "Unsqueeze")
def convert_squeeze(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    shape = imp.shape(node.input[0])
    if imp.opset >= 13:
        axes = [int(v) for v in imp.const_input(node, 1, "axes").reshape(-1)] if imp.has(
            node, 1) else None
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
        bad = (idx < -shape[axis]) | (idx >= shape[axis])
        if bad.any():
            raise imp.error(f"indices out of range for axis {axis} of extent {shape[axis]}")
        indices = imp.value(node.input[1], dtype=np.int64)
    else:
        indices = imp.value(node.input[1], dtype=None)
    return _res(imp.emit(g.GatherOp(imp.value(node.input[0]), indices, axis=axis)))


@converter("Pad")
def convert_pad(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    mode = _s(a.get("mode", "constant"))
    if mode != "constant":
        raise imp.error(f"mode {mode!r} is not supported (only 'constant')")
    rank = len(imp.shape(node.input[0]))
    pads = [int(v) for v in imp.const_input(node, 1, "pads").reshape(-1)]
    value = float(imp.const_input(node, 2, "constant_value").reshape(-1)[0]) if imp.has(
        node, 2) else 0.0
    if imp.has(node, 3):  # opset 18: pads only for the given axes
        axes = [S.normalize_axis(int(v), rank)
                for v in imp.const_input(node, 3, "axes").reshape(-1)]
        full = [0] * (2 * rank)
        for i, d in enumerate(axes):
            full[d], full[d + rank] = pads[i], pads[i + len(axes)]
        pads = full
    return _res(imp.emit(g.PadOp(imp.value(node.input[0]), pads=pads, value=value)))


# ----------------------------------------------------------------------------- constants


@converter("Constant")
def convert_constant(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = node.attribute[0]
    v = helper.get_attribute_value(a)
    if a.name == "value":
        return [numpy_helper.to_array(v)]
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
    return [shape[a.get("start", 0):a.get("end", len(shape))]]


# ----------------------------------------------------------------------------- entry point


def _load(model: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        proto = model
        where = "model"
    else:
        path = Path(model)
        where = str(path)
        if not path.is_file():
            raise FrontendError(f"model file not found: {path}")
        try:
            proto = onnx.load(str(path))
        except Exception as e:  # protobuf raises assorted errors
            raise FrontendError(f"{path} is not a valid ONNX model: {e}") from e
    if not proto.HasField("graph") or proto.ir_version <= 0:
        raise FrontendError(f"{where} is not a valid ONNX model: no graph or IR version")
    return proto


def import_onnx(model: str | Path | onnx.ModelProto,
                input_shapes: dict[str, list[int]] | None = None) -> ModuleOp:
    """Import an ONNX model (path or ModelProto) as `func.func @main` in the graph dialect.

    `input_shapes` binds symbolic/unknown input dims (input name -> full shape).
    Raises FrontendError for anything the frontend cannot import.
    """
    return Importer(_load(model), input_shapes).run()
