"""The checks of a model and its nodes against ONNX before any conversion: the declared operator
set versions (`check_opsets`, MIN_OPSET), names that are text, and each node's inputs, outputs
and attributes against its operator schema (`_check_node`). Apart from the graph walk, which only
calls them, because they read onnx's schema tables, not the import's values."""

from __future__ import annotations

import onnx

from compiler.frontend.errors import FrontendError
from compiler.frontend.importer.values import ValueTable
from compiler.frontend.onnx_graph import all_nodes as _all_nodes
from compiler.frontend.onnx_graph import subgraphs

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


def _check_node(imp: ValueTable, node: onnx.NodeProto) -> None:
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
