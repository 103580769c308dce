"""The importer's value table: ONNX value name -> SSA value or import-time numpy constant, with
what converters ask of it (constant inputs, materialized constants, shapes, emitted ops, errors
that name the node). `ValueTable` is the base of `Importer`; apart from the graph walk so that
the checks and the constant folder can take the table without importing the walk."""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import (
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from compiler.frontend.errors import FrontendError
from compiler.frontend.importer.tensors import MAX_ELEMENTS, check_elements
from compiler.frontend.onnx_graph import all_graphs as _all_graphs
from compiler.frontend.onnx_graph import all_nodes as _all_nodes
from dialects import graph as g
from dialects.dense import numpy_dtype

MAX_COMPOSED_ELEMENTS = 2**26
"""The most elements of an intermediate that a composed operator builds beyond its own inputs
and outputs (TopK's and CumSum's n x n comparisons per slice, a scatter's positions x updates
match, MaxUnpool's and Col2Im's maps): it grows quadratically, so a larger one is refused rather
than exhausting memory."""
Value = SSAValue | np.ndarray


def element_type_of(v: SSAValue) -> Attribute:
    assert isinstance(v.type, TensorType)
    return v.type.element_type


def _hint(name: str) -> str | None:
    """An SSA name hint from an ONNX name: MLIR allows only [A-Za-z0-9_$.-] (ASCII)."""
    hint = re.sub(r"[^A-Za-z0-9_$.-]", "_", name).strip("_")
    return hint if hint and not hint[0].isdigit() else None


class ValueTable:
    """State of one import (the base of `Importer`, which walks the graph): ONNX value name ->
    SSA value or import-time numpy constant, the block ops are emitted into, the current node."""

    def __init__(self, model: onnx.ModelProto, input_shapes: dict[str, list[int]] | None):
        self.model = model
        self.graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        self.opsets = {
            ("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import
        }
        """The model's operator set version of each domain ("" the default one)."""
        self.input_shapes = dict(input_shapes or {})
        self.run_time_dims = False
        """Whether an input has dims known only at run time (run_time_dims.RUN_TIME)."""
        self.values: MutableMapping[str, Value] = {}
        self.block = Block()
        self.node: onnx.NodeProto | None = None
        self.label = ""  # the current node's name, or #index for unnamed nodes
        self.used_names = {n for node in _all_nodes(self.graph) for n in node.input if n} | {
            o.name for graph in _all_graphs(self.graph) for o in graph.output
        }
        """Value names that a node (of any subgraph) reads or a graph returns (an output
        outside it is unused)."""
        self.subgraph_nodes = 0
        """Subgraph nodes converted so far (MAX_SUBGRAPH_NODES bounds it)."""
        self.run_time_lengths: dict[SSAValue, tuple[int, SSAValue]] = {}
        """Values whose extent along one axis is only known at run time (NonZero, Unique,
        NonMaxSuppression) -> (axis, their length: an i64 scalar). Their static type is an upper
        bound, padded with zeros past the length; they can only be model outputs, which the
        executable trims (see `bounded`)."""
        self.index_checks: dict[tuple[SSAValue, int], str] = {}
        """Indices read at run time that the caller's inputs decide (a token id into an
        embedding), with the extent of the axis they index -> what reads them: the executable
        checks them (see `check_indices`)."""

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
        return self.constant(np.float32(v) if like is None else v, like)

    def constant(
        self, a: np.ndarray | np.generic | float, like: SSAValue | None = None
    ) -> SSAValue:
        """A graph.constant of `a` (a static mask, index array or weight), as `like`'s element
        type if given."""
        arr = np.asarray(a)
        if like is not None:
            arr = arr.astype(numpy_dtype(element_type_of(like)))
        return self.emit(g.ConstantOp(arr)).results[0]

    def bounded(self, v: SSAValue, axis: int, length: SSAValue) -> SSAValue:
        """Mark `v` as holding only `length` (an i64 scalar computed at run time) valid entries
        along `axis`: a data-dependent output shape. Every shape here is static, so `v` is
        allocated at an upper bound; a model output is trimmed to the length when the model
        runs, and any node reading `v` is refused, naming it."""
        assert self.shape_of(length) == () and element_type_of(length) == i64
        self.run_time_lengths[v] = (axis, length)
        return v

    def check_indices(self, indices: SSAValue, extent: int, what: str) -> None:
        """Have the executable refuse a run where `indices` (computed from the inputs) fall
        outside [-extent, extent): the kernels clamp them, which reads in bounds but is not the
        model's result. `what` names the read in the error; the first reader of equal indices
        and extent names it."""
        self.index_checks.setdefault((indices, extent), what)

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

    @classmethod
    def empty(cls, v: SSAValue) -> np.ndarray:
        """A zero-size tensor as the import-time constant it is (it has no values to compute):
        whatever consumes it folds, so no kernel ever sees a zero-size buffer."""
        return np.zeros(cls.shape_of(v), numpy_dtype(element_type_of(v)))

    def error(self, msg: str) -> FrontendError:
        node = self.node
        where = f"{node.op_type} node '{self.label}': " if node is not None else ""
        return FrontendError(where + msg)

    def check_elements(self, shape: Sequence[int], what: str, limit: int = MAX_ELEMENTS) -> None:
        try:
            check_elements(shape, what, limit)
        except FrontendError as e:
            raise self.error(str(e)) from None

    def check_composed(self, elements: int, what: str) -> None:
        """Refuse a composition whose largest intermediate would hold more than
        MAX_COMPOSED_ELEMENTS elements: `what` (the operator, its sizes and that count), then
        the limit."""
        if elements > MAX_COMPOSED_ELEMENTS:
            raise self.error(f"{what}, over the limit of {MAX_COMPOSED_ELEMENTS}")


def results(op: Operation) -> list[Value]:
    return list(op.results)
