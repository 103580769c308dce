"""Function expansion ("decompose"): an operator without a converter whose ONNX schema defines a
function body (a FunctionProto, fixed or built from the node's attributes and input types) is
imported as that body, inlined in place of the node, so every function-defined operator of any
domain works; a hand-written converter, which makes better IR, still wins where one exists.

The expansion follows onnx's own `_expanded` test generator (onnx/backend/test/case/node): the
body's formal inputs and outputs become the node's actual names (an absent optional input the
empty name), its internal names get a per-node prefix, and an attribute reference
(`ref_attr_name`) takes the node's attribute, else the schema's or the function's default, and is
dropped where none exists (as the spec says). Unlike that generator, names the body does not
define (a user subgraph inlined by a context-dependent body may read the enclosing graph) are
left alone, and a graph attribute given by the node is carried over intact.

The body is imported by `Importer.subgraph` under its own opset imports (converters are versioned
by opset): a function written for opset 18 keeps opset-18 semantics in an opset-26 model. A body
of the default domain that imports no default-domain opset runs at its function version; one of
another domain (FlexAttention) at the model's default opset. A body node that is itself
function-defined is expanded again by the same path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Protocol

import numpy as np
import onnx
from onnx import helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx_graph import all_nodes, op_key, subgraphs

Value = SSAValue | np.ndarray


class Importer(Protocol):
    """What expansion needs of compiler.frontend.importer.Importer, which calls it (a protocol,
    so this module does not import the importer back)."""

    opset: int
    opsets: dict[str, int]
    label: str
    min_opset: int

    def has_converter(self, key: str) -> bool: ...

    def error(self, msg: str) -> FrontendError: ...

    def lookup(self, name: str) -> Value: ...

    def subgraph(self, body: onnx.GraphProto, args: Sequence[Value], where: str) -> list[Value]: ...


MAX_EXPANSION_DEPTH = 16
"""The most function expansions nested in one another: ONNX's bodies nest two or three deep;
this stops a body that (through others) calls its own operator."""

_DEPTH: ContextVar[int] = ContextVar("function_expansion_depth", default=0)


def _domain(node: onnx.NodeProto) -> str:
    return "" if node.domain in ("", "ai.onnx") else node.domain


def _version(
    node: onnx.NodeProto, opsets: Mapping[str, int]
) -> tuple[onnx.defs.OpSchema, int, bool] | None:
    """The schema, the function version to use (the newest one not above the opset of the node's
    domain: onnx keys bodies by exact version) and whether it is context-dependent; None when
    the operator has no body at that opset."""
    opset = opsets.get(_domain(node))
    if opset is None:
        return None
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, _domain(node))
    except onnx.defs.SchemaError:
        return None
    fixed = [v for v in schema.function_opset_versions if v <= opset]  # type: ignore[attr-defined]
    built = [v for v in schema.context_dependent_function_opset_versions if v <= opset]  # type: ignore[attr-defined]
    if not fixed and not built:
        return None
    if fixed and (not built or max(fixed) >= max(built)):
        return schema, max(fixed), False
    return schema, max(built), True


def _opsets(imp: Importer) -> dict[str, int]:
    return {**imp.opsets, "": imp.opset}


def has_function_body(imp: Importer, node: onnx.NodeProto) -> bool:
    """Whether the node can be imported as its function body: the operator has one at the model's
    opset, and every operator the body uses has a converter or a body of its own. Otherwise the
    node is reported as unsupported with the others (Bernoulli, whose body draws with
    RandomUniformLike). Operators of the node's own graph attributes (FlexAttention's score_mod)
    are the model's: an unsupported one fails when imported, naming the inner node."""
    found = _version(node, _opsets(imp))
    if found is None:
        return False
    try:
        fn, opsets = _function(imp, node, *found)
    except FrontendError:
        return True  # importing it says why
    given = {op_key(n) for _, graph in subgraphs(node) for n in all_nodes(graph)}
    body = onnx.GraphProto()
    body.node.extend(fn.node)
    for n in all_nodes(body):
        key = op_key(n)
        if not imp.has_converter(key) and key not in given and _version(n, opsets) is None:
            return False
    return True


_ELEMENTS = {
    "f32": onnx.TensorProto.FLOAT,
    "f64": onnx.TensorProto.DOUBLE,
    "f16": onnx.TensorProto.FLOAT16,
    "i64": onnx.TensorProto.INT64,
    "i32": onnx.TensorProto.INT32,
    "i16": onnx.TensorProto.INT16,
    "i8": onnx.TensorProto.INT8,
    "i1": onnx.TensorProto.BOOL,
}


def _type_of(imp: Importer, name: str) -> onnx.TypeProto:
    """The input's type as ziggurat computes it (float16 is computed as float32, so a
    context-dependent body is built for float32 and casts nothing back)."""
    if not name:
        return onnx.TypeProto()  # an absent optional input
    v = imp.lookup(name)
    if isinstance(v, np.ndarray):
        return helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
    assert isinstance(v.type, TensorType)
    elem = _ELEMENTS.get(str(v.type.element_type), onnx.TensorProto.UNDEFINED)
    return helper.make_tensor_type_proto(elem, list(v.type.get_shape()))


def _function(
    imp: Importer,
    node: onnx.NodeProto,
    schema: onnx.defs.OpSchema,
    version: int,
    context_dependent: bool,
) -> tuple[onnx.FunctionProto, dict[str, int]]:
    """The node's function body and the opsets (domain -> version) it is written against."""
    try:
        if context_dependent:
            types = [_type_of(imp, n).SerializeToString() for n in node.input]
            # (onnx's stubs lack these OpSchema methods)
            text = schema.get_context_dependent_function_with_opset_version(  # type: ignore[attr-defined]
                version, node.SerializeToString(), types
            )
        else:
            text = schema.get_function_with_opset_version(version)  # type: ignore[attr-defined]
    except Exception as e:  # onnx's function builders report bad nodes by raising
        raise imp.error(f"building its function body failed: {e}") from e
    fn = onnx.FunctionProto()
    fn.ParseFromString(text)
    if not fn.node:
        raise imp.error(
            f"its function body (version {version}) could not be built for this node and "
            "these input types"
        )
    opsets = dict(imp.opsets)
    opsets[""] = imp.opset
    if _domain(node) == "":
        opsets[""] = version  # what the body was written against, unless it says otherwise
    declared = {"" if o.domain == "ai.onnx" else o.domain: o.version for o in fn.opset_import}
    if "" not in declared:
        _check_assumed_opset(imp, fn, opsets[""])
    opsets.update(declared)
    if opsets[""] < imp.min_opset:
        raise imp.error(
            f"its function body is written for opset {opsets['']}, below the oldest opset "
            f"ziggurat imports ({imp.min_opset}); converting it is not supported"
        )
    return fn, opsets


def _check_assumed_opset(imp: Importer, fn: onnx.FunctionProto, opset: int) -> None:
    """A body that declares no default-domain opset (FlexAttention's) is assumed to be written
    for the one it runs at; refuse clearly where a node of it does not exist there (FlexAttention
    needs 15, for Shape's start and end) rather than converting versions."""
    for n in fn.node:
        if n.domain not in ("", "ai.onnx"):
            continue
        try:
            schema = onnx.defs.get_schema(n.op_type, opset, "")
        except onnx.defs.SchemaError:
            schema = None
        missing = [a.name for a in n.attribute if schema and a.name not in schema.attributes]
        if schema is None or missing:
            what = f"{n.op_type} with attribute {missing[0]!r}" if missing else n.op_type
            raise imp.error(
                f"its function body uses {what}, which opset {opset} of the default domain "
                "lacks; the model needs a newer default-domain opset"
            )


def _attributes(
    node: onnx.NodeProto, schema: onnx.defs.OpSchema, fn: onnx.FunctionProto
) -> dict[str, onnx.AttributeProto]:
    """What an attribute reference resolves to: the node's attribute, else the schema's default,
    else the function's own default."""
    given = {a.name: a for a in node.attribute}
    defaults = [(name, spec.default_value) for name, spec in schema.attributes.items()]
    defaults += [(a.name, a) for a in fn.attribute_proto]
    for name, default in defaults:
        if name not in given and default.type != onnx.AttributeProto.UNDEFINED:
            copy = onnx.AttributeProto()
            copy.CopyFrom(default)
            copy.name = name
            given[name] = copy
    return given


def _defined(nodes: Iterable[onnx.NodeProto]) -> set[str]:
    return {o for n in nodes for o in n.output if o}


def _rename(
    nodes: Iterable[onnx.NodeProto],
    names: Mapping[str, str],
    attributes: Mapping[str, onnx.AttributeProto],
    prefix: str,
) -> list[onnx.NodeProto]:
    """The nodes with their names mapped (a name not in `names` is a reference to the enclosing
    graph: kept) and their attribute references resolved, recursively into their subgraphs."""
    out = []
    for node in nodes:
        new = onnx.NodeProto()
        new.CopyFrom(node)
        del new.input[:], new.output[:], new.attribute[:]
        new.input.extend(names.get(n, n) if n else "" for n in node.input)
        new.output.extend(names.get(n, n) if n else "" for n in node.output)
        for a in node.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in attributes:  # as given (a graph too: kept intact)
                    ref = new.attribute.add()
                    ref.CopyFrom(attributes[a.ref_attr_name])
                    ref.name = a.name
                continue  # a missing attribute is omitted (the spec's rule)
            copy = new.attribute.add()
            copy.CopyFrom(a)
            bodies = [copy.g] if a.type == onnx.AttributeProto.GRAPH else list(copy.graphs)
            for body in bodies:
                _rename_graph(body, names, attributes, prefix)
        out.append(new)
    return out


def _rename_graph(
    body: onnx.GraphProto,
    outer: Mapping[str, str],
    attributes: Mapping[str, onnx.AttributeProto],
    prefix: str,
) -> None:
    """Rename a subgraph of the function body in place: its own names (inputs, initializers,
    node outputs) get the prefix and shadow the body's."""
    own = {i.name for i in body.input} | {i.name for i in body.initializer}
    own |= {s.values.name for s in body.sparse_initializer} | _defined(body.node)
    names = {**outer, **{n: prefix + n for n in own}}
    for v in [*body.input, *body.output, *body.value_info]:
        v.name = names.get(v.name, v.name)
    for t in body.initializer:
        t.name = names[t.name]
    for s in body.sparse_initializer:
        s.values.name = names[s.values.name]
    renamed = _rename(body.node, names, attributes, prefix)
    del body.node[:]
    body.node.extend(renamed)


def _expand(
    imp: Importer, node: onnx.NodeProto
) -> tuple[list[onnx.NodeProto], dict[str, int]] | None:
    found = _version(node, _opsets(imp))
    if found is None:
        return None
    fn, opsets = _function(imp, node, *found)
    names: dict[str, str] = {}
    for k, formal in enumerate(fn.input):
        names[formal] = node.input[k] if k < len(node.input) else ""
    for k, formal in enumerate(fn.output):
        # an absent output stays internal: the body may still use it as an intermediate
        if k < len(node.output) and node.output[k]:
            names[formal] = node.output[k]
    internal = (_defined(fn.node) | _nested_names(fn.node)) - names.keys()
    # the prefix must not capture a name of the enclosing graph that the body reads
    outside = {n for n in node.input if n} | (_used(fn.node) - internal - names.keys())
    prefix = f"{imp.label}/{node.op_type}:"
    while any(prefix + n in outside for n in internal):
        prefix += "'"
    names.update({n: prefix + n for n in internal})
    return _rename(fn.node, names, _attributes(node, found[0], fn), prefix), opsets


def expand(imp: Importer, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    """The node replaced by its operator's function body (None if the operator has none at the
    model's opset of its domain)."""
    found = _expand(imp, node)
    return None if found is None else found[0]


def _nested_names(nodes: Iterable[onnx.NodeProto]) -> set[str]:
    """Names defined inside the nodes' subgraphs (only referenced from within them)."""
    found: set[str] = set()
    for n in nodes:
        for a in n.attribute:
            if a.ref_attr_name:
                continue
            for body in [a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs:
                found |= {i.name for i in body.input} | {i.name for i in body.initializer}
                found |= _defined(body.node) | _nested_names(body.node)
    return found


def _used(nodes: Iterable[onnx.NodeProto]) -> set[str]:
    """Every name the nodes (and their subgraphs) read."""
    found: set[str] = set()
    for n in nodes:
        found.update(x for x in n.input if x)
        for a in n.attribute:
            for body in [a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs:
                found |= _used(body.node) | {o.name for o in body.output}
    return found


def import_expanded(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Import the node as its expanded function body (inline, in the current block); its
    outputs, one per node output (an absent one as an empty placeholder)."""
    depth = _DEPTH.get()
    if depth >= MAX_EXPANSION_DEPTH:
        raise imp.error(
            f"function bodies nest more than {MAX_EXPANSION_DEPTH} deep (a body that calls "
            "its own operator?)"
        )
    found = _expand(imp, node)
    if found is None:
        raise imp.error("the operator has neither a converter nor a function body")
    nodes, opsets = found
    present = [o for o in node.output if o]
    body = helper.make_graph(
        nodes, f"{node.op_type}_expanded", [], [onnx.ValueInfoProto(name=o) for o in present]
    )
    saved = imp.opset, imp.opsets
    token = _DEPTH.set(depth + 1)
    imp.opset, imp.opsets = opsets[""], opsets
    try:
        outs = iter(imp.subgraph(body, [], f"{imp.label} ({node.op_type}, expanded)"))
    finally:
        imp.opset, imp.opsets = saved
        _DEPTH.reset(token)
    return [next(outs) if o else np.zeros((0,), np.float32) for o in node.output]
