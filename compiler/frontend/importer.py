"""The ONNX import machinery: the element-type tables, the `Importer` (ONNX value name -> SSA
value or import-time numpy constant, node checks against the operator schemas, constant
folding, the driver) and the converter registry (`CONVERTERS`, `@converter`).

Values known at import time (initializers, Constant, Shape of static tensors and any node whose
inputs are all known) stay numpy arrays and are evaluated eagerly, so attribute-like inputs
(Reshape's shape, Slice's starts, ...) are plain numbers when a converter needs them; they
become `graph.constant` only where an op consumes them. The converters live in
compiler/frontend/ops/, one module per operator family.

Subgraphs (If branches, Loop and Scan bodies) are imported inline by `Importer.subgraph`, with
the same converters, in a scope that sees the enclosing graphs' values by name: control flow is
specialized statically (ops/control_flow.py), never kept as a region.
"""

from __future__ import annotations

import math
import re
from collections import ChainMap
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
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
from compiler.frontend.function_expansion import has_function_body, import_expanded
from compiler.frontend.onnx_graph import all_graphs as _all_graphs
from compiler.frontend.onnx_graph import all_nodes as _all_nodes
from compiler.frontend.onnx_graph import op_key as _op_key
from compiler.frontend.onnx_graph import subgraphs
from dialects import graph as g
from dialects import graph_shapes as S
from dialects.attributes import DTYPE_ATTR, LENGTH_OF_ATTR, NAME_ATTR, RUN_TIME_AXIS_ATTR
from dialects.dense import numpy_dtype

MIN_OPSET = 11


UPGRADE_TO_OPSET = 13
"""Models below MIN_OPSET (from opset 1) are upgraded to this opset by onnx's version converter
(a maintained library that knows every operator's changes) before import; 13 is the newest opset
its adapters reach from old opsets for every operator those models use."""


MAX_DECLARED_OPSET = 2**31 - 1
"""The newest opset a model may declare for a domain onnx has no schemas of (a vendor's): onnx's
schema lookup takes a C int."""


def check_opsets(model: onnx.ModelProto, where: str) -> None:
    """Refuse operator set versions no onnx release defines (below 1, past the newest that the
    installed onnx knows for its domain), naming `where` (the model) and the domain, and a model
    that uses default-domain operators without declaring that domain's opset."""
    newest = {"": onnx.defs.onnx_opset_version(), "ai.onnx.ml": onnx.defs.onnx_ml_opset_version()}
    owners = [("", model.opset_import)]
    owners += [(f" (in its function '{fn.name}')", fn.opset_import) for fn in model.functions]
    for owner, imports in owners:
        for o in imports:
            domain = "" if o.domain == "ai.onnx" else o.domain
            last = newest.get(domain, MAX_DECLARED_OPSET)
            if not 1 <= o.version <= last:
                name = f"domain '{o.domain}'" if o.domain else "the default domain (ai.onnx)"
                known = (
                    f"onnx {onnx.__version__} defines opsets 1..{last}"
                    if domain in newest
                    else f"an opset version is 1..{last}"
                )
                raise FrontendError(
                    f"{where}{owner} declares opset {o.version} for {name}; {known}"
                )
    if not any(o.domain in ("", "ai.onnx") for o in model.opset_import):
        node = next((n for n in _all_nodes(model.graph) if n.domain in ("", "ai.onnx")), None)
        if node is not None:
            raise FrontendError(
                f"{where} uses operators of the default domain ({node.op_type} node "
                f"'{node.name}') but declares no opset for it (opset_import)"
            )


MAX_ELEMENTS = 2**31
"""The most elements a tensor may have (declared, stored or computed); checked before any
allocation, so a declared 2**40 dimension is an error, not an exhausted machine."""


MAX_FOLDED_ELEMENTS = 2**28
"""The most elements of a value computed at import time (constant folding): such a value is
held in memory and then written into the IR."""


MAX_SUBGRAPH_NODES = 100_000
"""The most subgraph nodes (If branches, Loop and Scan bodies) one import converts, counting
each unrolled iteration again: unrolling is static specialization, and this bounds the IR it
can produce."""


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


def check_elements(shape: Sequence[int], what: str, limit: int = MAX_ELEMENTS) -> None:
    """Refuse a tensor of more than `limit` elements (before anything of that size exists)."""
    n = math.prod(int(d) for d in shape)
    if n > limit:
        raise FrontendError(
            f"{what} has shape {[int(d) for d in shape]} ({n} elements), over the limit of "
            f"2**{limit.bit_length() - 1} = {limit} elements per tensor"
        )


# element type -> numpy type, for the tensor types the frontend accepts in initializers
TENSOR_TYPES: dict[int, type] = {
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
GRAPH_ELEMENTS: dict[int, Attribute] = {
    onnx.TensorProto.FLOAT: f32,
    onnx.TensorProto.INT64: i64,
    onnx.TensorProto.INT32: i32,
    onnx.TensorProto.BOOL: i1,
}


CAST_TARGETS: dict[int, str] = {k: str(v) for k, v in GRAPH_ELEMENTS.items()}
"""ONNX element type -> the name graph.cast takes (`f32`, `i64`, ...)."""


WIDENED_ELEMENTS: dict[int, Attribute] = {
    onnx.TensorProto.FLOAT16: f32,
    onnx.TensorProto.INT8: i32,
    onnx.TensorProto.UINT8: i32,
    onnx.TensorProto.INT16: i32,
    onnx.TensorProto.UINT16: i32,
    onnx.TensorProto.UINT32: i64,
}
"""Model input and output element types computed in a wider graph type: the integers exactly
(every value fits), float16 in float32 (so results are rounded once, at the output, instead of
after every operation). The compiled model takes and returns the declared type
(dialects/attributes.py's DTYPE_ATTR records it)."""


BOUNDARY_ELEMENTS: dict[int, Attribute] = {**GRAPH_ELEMENTS, **WIDENED_ELEMENTS}
"""Every element type a model input or output may have -> the graph type computing it."""


SUPPORTED_ELEMENTS = (
    "FLOAT, INT64, INT32 and BOOL, and FLOAT16, INT8, UINT8, INT16, UINT16 and UINT32 "
    "(computed in float32, int32 or int64)"
)


# where a tensor without raw_data keeps its values (one per element for these types)
_DATA_FIELDS: dict[int, str] = {
    onnx.TensorProto.FLOAT: "float_data",
    onnx.TensorProto.DOUBLE: "double_data",
    onnx.TensorProto.INT64: "int64_data",
    onnx.TensorProto.UINT32: "uint64_data",
    onnx.TensorProto.UINT64: "uint64_data",
}


def type_name(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"<unknown data type {elem_type}>"


def tensor_array(t: onnx.TensorProto, what: str) -> np.ndarray:
    """The value of a TensorProto, once its type, dims and data are checked to agree."""
    name = type_name(t.data_type)
    if t.data_type not in TENSOR_TYPES:
        raise FrontendError(f"{what} has element type {name}, which is not supported")
    dims = [int(d) for d in t.dims]
    if any(d < 0 for d in dims):
        raise FrontendError(f"{what} has a negative dimension: dims {dims}")
    check_elements(dims, what)
    if t.data_location == onnx.TensorProto.EXTERNAL:
        raise FrontendError(
            f"{what} keeps its data in an external file; load the model from "
            "its path so the file can be found (and checked)"
        )
    n = math.prod(dims)
    dtype = np.dtype(TENSOR_TYPES[t.data_type])
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
        self.opsets = {
            ("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import
        }
        """The model's operator set version of each domain ("" the default one)."""
        self.input_shapes = dict(input_shapes or {})
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

    def _check_static(self, node: onnx.NodeProto) -> None:
        if not self.run_time_lengths:  # the common case: no walk over subgraphs per node
            return
        for name in [*node.input, *_outer_names(node)]:
            v = self.values.get(name) if name else None
            if isinstance(v, SSAValue) and v in self.run_time_lengths:
                axis = self.run_time_lengths[v][0]
                raise self.error(
                    f"input '{name}' has a data-dependent shape (its extent along axis {axis} "
                    "is only known at run time); ziggurat compiles static shapes, so such a "
                    "value can only be a model output"
                )

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

    # -- subgraphs ------------------------------------------------------------------------

    def subgraph(self, body: onnx.GraphProto, args: Sequence[Value], where: str) -> list[Value]:
        """Import a subgraph (an If branch, a Loop or Scan body) inline into the current block,
        its inputs bound to `args`, and return its outputs. The body sees the enclosing
        scopes' values by name; the names it defines vanish afterwards, so a body can be
        imported once per unrolled iteration. `where` prefixes the body's node labels."""
        outer_node, outer_label = self.node, self.label
        if len(args) != len(body.input):
            raise self.error(
                f"{where} declares {counted(len(body.input), 'input')}, but the operator "
                f"binds {len(args)}"
            )
        self.subgraph_nodes += len(body.node)
        if self.subgraph_nodes > MAX_SUBGRAPH_NODES:
            raise self.error(
                f"importing {where} exceeds the budget of {MAX_SUBGRAPH_NODES} subgraph nodes "
                "per model (every unrolled iteration counts)"
            )
        outer = self.values
        self.values = ChainMap({}, outer)
        try:
            for init in body.initializer:
                self.values[init.name] = tensor_array(init, f"{where}: initializer '{init.name}'")
            for sinit in body.sparse_initializer:
                raise self.error(
                    f"{where}: sparse initializer '{sinit.values.name}' is not supported"
                )
            for inp, v in zip(body.input, args, strict=True):
                self.values[inp.name] = v
            for i, node in enumerate(body.node):
                self.node, self.label = node, f"{where}/{node.name or f'#{i}'}"
                _check_node(self, node)
                if not self._supported(node) and not self._foldable(node):
                    key = _op_key(node)
                    raise FrontendError(
                        f"unsupported ONNX operators (opset {self.opset}): {key} "
                        f"(node '{self.label}')"
                    )
                self._convert(node)
            self.node, self.label = outer_node, outer_label
            outs = []
            for o in body.output:
                if o.name not in self.values:
                    raise self.error(
                        f"{where}: output '{o.name}' is not produced by any node, initializer "
                        "or input of the subgraph or its enclosing graphs"
                    )
                v = self.values[o.name]
                if isinstance(v, SSAValue) and v in self.run_time_lengths:
                    raise self.error(
                        f"{where}: output '{o.name}' has a data-dependent shape; only a model "
                        "output can"
                    )
                outs.append(v)
            return outs
        finally:
            self.values = outer
            self.node, self.label = outer_node, outer_label

    def probe_subgraph(
        self, body: onnx.GraphProto, args: Sequence[Value], where: str
    ) -> list[tuple[tuple[int, ...], np.dtype]]:
        """The shapes and element types of a subgraph's outputs, found by importing it into a
        scratch block that is then discarded (for a loop that runs no iteration, whose scan
        outputs are empty tensors of the body's output shapes)."""
        saved = self.block
        self.block = Block()
        try:
            outs = self.subgraph(body, args, where)
            return [
                (tuple(o.shape), o.dtype)
                if isinstance(o, np.ndarray)
                else (self.shape_of(o), np.dtype(numpy_dtype(element_type_of(o))))
                for o in outs
            ]
        finally:
            for op in reversed(list(self.block.ops)):
                self.block.erase_op(op, safe_erase=False)
            self.block = saved

    # -- driver ---------------------------------------------------------------------------

    def run(self) -> ModuleOp:
        check_opsets(self.model, "the model")
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
        arg_types, arg_names, arg_elems = self._inputs()
        self.block = Block(arg_types=arg_types)
        for arg, name in zip(self.block.args, arg_names, strict=True):
            self.values[name] = self.empty(arg) if 0 in self.shape_of(arg) else arg
            if (h := _hint(name)) is not None:
                arg.name_hint = h
        unsupported: dict[str, list[str]] = {}
        poisoned: set[str] = set()  # outputs of unsupported nodes and of the nodes they feed
        for i, node in enumerate(self.graph.node):
            self.node, self.label = node, node.name or f"#{i}"
            if any(n in poisoned for n in [*node.input, *_outer_names(node)]):
                poisoned.update(node.output)
                continue
            _check_node(self, node)
            if not self._supported(node) and not self._foldable(node):
                key = _op_key(node)
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
        # data-dependent outputs: their lengths are extra results the executable reads
        bounded = {
            k: self.run_time_lengths[r] for k, r in enumerate(results) if r in self.run_time_lengths
        }
        out_types: list[int] = []
        for k, (o, r) in enumerate(zip(self.graph.output, results, strict=True)):
            # the compiled signature is the declared one: a value computed in another element
            # type (a constant kept as int64, say) is converted to it
            declared = o.type.tensor_type.elem_type if o.type.HasField("tensor_type") else 0
            if declared and declared not in BOUNDARY_ELEMENTS:
                raise FrontendError(
                    f"model output '{o.name}' has element type {type_name(declared)}; "
                    f"supported: {SUPPORTED_ELEMENTS}"
                )
            if declared and element_type_of(r) != BOUNDARY_ELEMENTS[declared]:
                results[k] = self.op(g.CastOp(r, to=str(BOUNDARY_ELEMENTS[declared])))
            out_types.append(declared)
        out_names = [o.name for o in self.graph.output]
        extra: dict[int, dict[str, Attribute]] = {}
        for k, (axis, length) in bounded.items():
            extra[k] = {RUN_TIME_AXIS_ATTR: IntegerAttr(axis, 64)}
            extra[len(results)] = {LENGTH_OF_ATTR: StringAttr(out_names[k])}
            results.append(length)
            out_names.append(f"{out_names[k]}:length")
            out_types.append(0)
        self.block.add_op(func.ReturnOp(*results))  # verified with its function

        def names(
            ns: Sequence[str], elems: Sequence[int], more: dict[int, dict[str, Attribute]]
        ) -> ArrayAttr[DictionaryAttr]:
            dicts = []
            for k, (n, e) in enumerate(zip(ns, elems, strict=True)):
                entries: dict[str, Attribute] = {NAME_ATTR: StringAttr(n), **more.get(k, {})}
                if e in WIDENED_ELEMENTS:
                    entries[DTYPE_ATTR] = StringAttr(np.dtype(TENSOR_TYPES[e]).name)
                dicts.append(DictionaryAttr(entries))
            return ArrayAttr(dicts)

        fn = func.FuncOp(
            "main",
            (arg_types, [r.type for r in results]),
            Region(self.block),
            arg_attrs=names(arg_names, arg_elems, {}),
            res_attrs=names(out_names, out_types, extra),
        )
        module = ModuleOp([fn])
        module.verify()
        return module

    min_opset = MIN_OPSET

    @staticmethod
    def has_converter(key: str) -> bool:
        """Whether a converter is registered for this domain-qualified operator."""
        return key in CONVERTERS

    def _supported(self, node: onnx.NodeProto) -> bool:
        """A converter, else a function body to expand (compiler/frontend/function_expansion.py)."""
        return _op_key(node) in CONVERTERS or has_function_body(self, node)

    def _foldable(self, node: onnx.NodeProto) -> bool:
        """Whether the node computes from import-time constants only (so onnx's reference
        evaluator folds it, whatever the operator). Not a node with subgraphs: those may read
        run-time values of the outer scope, which the evaluator of the one node lacks."""
        ins = [n for n in node.input if n]
        return (
            node.domain in ("", "ai.onnx", "ai.onnx.ml")
            and bool(ins)
            and not subgraphs(node)
            and all(isinstance(self.values.get(n), np.ndarray) for n in ins)
        )

    def _inputs(self) -> tuple[list[TensorType], list[str], list[int]]:
        """The graph inputs' types (widened where BOUNDARY_ELEMENTS says), names and declared
        ONNX element types."""
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
            if not inp.type.HasField("tensor_type") or tt.elem_type not in BOUNDARY_ELEMENTS:
                et = type_name(tt.elem_type) if inp.type.HasField("tensor_type") else "non-tensor"
                raise FrontendError(
                    f"model input '{inp.name}' has element type {et}; supported: "
                    f"{SUPPORTED_ELEMENTS}"
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
                    if d.HasField("dim_value") and d.dim_value >= 0:
                        shape.append(d.dim_value)
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
            check_elements(shape, f"input '{inp.name}'")
            types.append(TensorType(BOUNDARY_ELEMENTS[tt.elem_type], shape))
            names.append(inp.name)
        return types, names, [i.type.tensor_type.elem_type for i in inputs]

    def _convert(self, node: onnx.NodeProto) -> None:
        self._check_static(node)
        ins = [n for n in node.input if n]
        try:
            # a node with subgraphs (If, Loop, Scan) is always converted: its converter imports
            # the bodies, whose constant parts fold node by node
            if (
                ins
                and all(isinstance(self.lookup(n), np.ndarray) for n in ins)
                and not subgraphs(node)
            ):
                outs: Sequence[Value] = self._fold(node)
            elif _op_key(node) in CONVERTERS:
                outs = CONVERTERS[_op_key(node)](self, node)
            else:  # no converter: the operator's function body, inlined (_supported checked)
                outs = import_expanded(self, node)
        except S.ShapeError as e:
            raise self.error(str(e)) from e
        for name, v in zip(node.output, outs, strict=False):
            if isinstance(v, SSAValue):
                self.check_elements(self.shape_of(v), f"output '{name}'")
            if isinstance(v, SSAValue) and 0 in self.shape_of(v):
                v = self.empty(v)
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
            ev = ReferenceEvaluator(node, opsets={**self.opsets, "": self.opset})
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


def _fold_squeeze(node: onnx.NodeProto, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    given = attrs(node).get("axes", args[1] if len(args) > 1 else None)
    if given is None:
        return [np.squeeze(x)]
    axes = sorted({int(a) % max(x.ndim, 1) for a in np.asarray(given).reshape(-1)})
    if any(x.shape[a] != 1 for a in axes):
        raise ValueError(f"cannot squeeze axes {axes} of shape {list(x.shape)}")
    return [np.squeeze(x, axis=tuple(axes))]


def _fold_unsqueeze(node: onnx.NodeProto, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    given = attrs(node).get("axes", args[1] if len(args) > 1 else None)
    if given is None:
        raise ValueError("no axes given")
    rank = x.ndim + len(np.asarray(given).reshape(-1))
    axes = sorted(int(a) % rank for a in np.asarray(given).reshape(-1))
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axes {axes}")
    return [np.expand_dims(x, axis=tuple(axes))]


_FOLDERS: dict[str, Callable[[onnx.NodeProto, list[np.ndarray]], list[np.ndarray]]] = {
    # onnx's reference GatherElements (1.23) fails when the indices' shape differs from the
    # data's (it reshapes one gathered element); numpy's take_along_axis is the same operator
    "GatherElements": _fold_gather_elements,
    # its Squeeze and Unsqueeze of opset 11 (axes as an attribute) run the opset-13 code:
    # Unsqueeze fails and Squeeze drops every unit axis
    "Squeeze": _fold_squeeze,
    "Unsqueeze": _fold_unsqueeze,
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


def _outer_names(node: onnx.NodeProto) -> set[str]:
    """The names the node's subgraphs read from enclosing scopes (outer-scope references)."""
    found: set[str] = set()
    for _, sub in subgraphs(node):
        defined = {i.name for i in sub.input} | {i.name for i in sub.initializer}
        used: set[str] = set()
        for n in sub.node:
            used.update(x for x in [*n.input, *_outer_names(n)] if x and x not in defined)
            defined.update(n.output)
        used.update(o.name for o in sub.output if o.name not in defined)
        found |= used
    return found


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
        for _, sub in subgraphs(node):
            _check_names(sub)


def _schema(op_type: str, opset: int, domain: str = "") -> onnx.defs.OpSchema | None:
    """The operator's schema at this opset of its domain, else its newest one (None if ONNX
    has none)."""
    domain = "" if domain == "ai.onnx" else domain
    for version in (opset, onnx.defs.onnx_opset_version()):
        try:
            return onnx.defs.get_schema(op_type, version, domain)
        except onnx.defs.SchemaError:
            continue
    try:
        return onnx.defs.get_schema(op_type, domain)
    except onnx.defs.SchemaError:
        return None


def counted(n: int, noun: str) -> str:
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
    domain = "" if node.domain == "ai.onnx" else node.domain
    schema = _schema(node.op_type, imp.opsets.get(domain, imp.opset), domain)
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
            f"has {counted(n_in, 'input')}; the operator takes {schema.min_input}"
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
            f"has {counted(n_out, 'output')}; the operator has {schema.min_output}"
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


def text(v: Any) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


Converter = Callable[[Importer, onnx.NodeProto], Sequence[Value]]


CONVERTERS: dict[str, Converter] = {}


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    def reg(fn: Converter) -> Converter:
        for t in op_types:
            CONVERTERS[t] = fn
        return fn

    return reg


def results(op: Operation) -> list[Value]:
    return list(op.results)
