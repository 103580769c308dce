"""The importer's graph walk: `Importer` checks the model, binds initializers and inputs, converts
each node (folding it, calling its registered converter, or expanding its function body),
imports subgraphs inline, and builds the `main` func with its signature. The converter registry
(`CONVERTERS`, `@converter`) lives here, next to the walk that dispatches on it."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from compiler.frontend.errors import FrontendError
from compiler.frontend.function_expansion import has_function_body, import_expanded
from compiler.frontend.importer.folding import fold
from compiler.frontend.importer.model_checks import (
    MIN_OPSET,
    UPGRADE_TO_OPSET,
    _check_names,
    _check_node,
    check_opsets,
    counted,
)
from compiler.frontend.importer.tensors import (
    BOUNDARY_ELEMENTS,
    SUPPORTED_ELEMENTS,
    TENSOR_TYPES,
    WIDENED_ELEMENTS,
    check_elements,
    tensor_array,
    type_name,
)
from compiler.frontend.importer.values import Value, ValueTable, _hint, element_type_of
from compiler.frontend.onnx_graph import op_key as _op_key
from compiler.frontend.onnx_graph import subgraphs
from compiler.frontend.run_time_dims import RUN_TIME, RUN_TIME_DIM_OPS
from compiler.frontend.shape_binding import BoundShapes, bind
from compiler.registry import registrar
from dialects import graph as g
from dialects import graph_shapes as S
from dialects.attributes import (
    DTYPE_ATTR,
    INDEX_CHECK_ATTR,
    INDEX_EXTENT_ATTR,
    LENGTH_OF_ATTR,
    NAME_ATTR,
    RUN_TIME_AXIS_ATTR,
)
from dialects.dense import numpy_dtype

MAX_SUBGRAPH_NODES = 100_000
"""The most subgraph nodes (If branches, Loop and Scan bodies) one import converts, counting
each unrolled iteration again: unrolling is static specialization, and this bounds the IR it
can produce."""


class Importer(ValueTable):
    """One import: walks the model's graph (and its subgraphs, inline) node by node,
    checking, folding or converting each into the value table it extends."""

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
        bound = bind(self.graph) if self.run_time_dims else BoundShapes()
        for i, node in enumerate(self.graph.node):
            if i in bound.dead:  # shape arithmetic that only fed a target bound below
                continue
            if i in bound.inputs:
                node = self._with_bound_inputs(node, bound.inputs[i])
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
        for (indices, extent), what in self.index_checks.items():
            extra[len(results)] = {
                INDEX_CHECK_ATTR: StringAttr(what),
                INDEX_EXTENT_ATTR: IntegerAttr(extent, 64),
            }
            results.append(self._index_range(indices))
            out_names.append(f"{what}:index_range")
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

    def _with_bound_inputs(
        self, node: onnx.NodeProto, inputs: dict[int, np.ndarray]
    ) -> onnx.NodeProto:
        """A copy of `node` reading the constants shape_binding found for some inputs."""
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        for k, array in inputs.items():
            name = f"{node.input[k]}:bound"
            self.values[name] = array
            copy.input[k] = name
        return copy

    def _index_range(self, indices: SSAValue) -> SSAValue:
        """[max(indices), max(-1 - indices)] as i64: what INDEX_CHECK_ATTR's result holds (one
        reduction over the indices and their complement stacked; -1 - i, unlike -i, cannot
        overflow)."""
        idx = indices
        if str(element_type_of(idx)) != "i64":
            idx = self.op(g.CastOp(idx, to="i64"))
        shape = self.shape_of(idx)
        if RUN_TIME in shape:  # a count not known to flatten to: one reduction of each, stacked
            axes = list(range(len(shape)))
            highs = [
                self.op(g.ReduceMaxOp(v, axes=axes, keepdims=0))
                for v in (idx, self.op(g.SubOp(self.constant(np.int64(-1)), idx)))
            ]
            return self.op(g.ConcatOp([self.op(g.UnsqueezeOp(h, axes=[0])) for h in highs], axis=0))
        n = int(np.prod(shape, dtype=np.int64))
        flat = self.op(g.ReshapeOp(idx, [1, n]))
        complement = self.op(g.SubOp(self.constant(np.int64(-1)), flat))
        stacked = self.op(g.ConcatOp([flat, complement], axis=0))
        return self.op(g.ReduceMaxOp(stacked, axes=[1], keepdims=0))

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
                if any(int(d) < 0 and int(d) != RUN_TIME for d in given):
                    raise FrontendError(
                        f"input_shapes for '{inp.name}' must not be negative: {given}"
                    )
                shape = [int(d) for d in given]
                if RUN_TIME in shape:
                    self.run_time_dims = True
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

    def _check_run_time_dims(self, node: onnx.NodeProto) -> None:
        """Only the operators whose lowering sizes its results at run time may read a tensor
        with run-time dims (RUN_TIME_DIM_OPS); another is refused by name, not miscompiled."""
        if not self.run_time_dims or _op_key(node) in RUN_TIME_DIM_OPS:
            return
        for name in node.input:
            v = self.values.get(name) if name else None
            if isinstance(v, SSAValue) and RUN_TIME in getattr(v.type, "get_shape", tuple)():
                raise self.error(
                    f"input '{name}' has run-time dims ({v.type}); {node.op_type} is not "
                    "compiled for run-time sizes yet (compile it per size: input_shapes)"
                )

    def _convert(self, node: onnx.NodeProto) -> None:
        self._check_static(node)
        self._check_run_time_dims(node)
        ins = [n for n in node.input if n]
        try:
            # a node with subgraphs (If, Loop, Scan) is always converted: its converter imports
            # the bodies, whose constant parts fold node by node
            if (
                ins
                and all(isinstance(self.lookup(n), np.ndarray) for n in ins)
                and not subgraphs(node)
            ):
                outs: Sequence[Value] = fold(self, node)
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


Converter = Callable[[Importer, onnx.NodeProto], Sequence[Value]]


CONVERTERS: dict[str, Converter] = {}


converter = registrar(CONVERTERS)
"""`@converter("Op", ...)`: registers the decorated function as the converter of those ONNX
op types."""
