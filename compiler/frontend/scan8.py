"""Scan-8's batch axis across onnx's version converter.

Scan-8 (opset 8) runs its body per entry of a leading batch axis; Scan-9 has none. onnx's
version converter upgrades a Scan-8 node by dropping the axis from the model's own inputs and
outputs (their declared shapes), without inserting anything, which is right only where the
Scan's inputs and outputs are those graph inputs and outputs and the batch is 1, and then
changes the model's signature. `check_scan8` refuses every other case with its reason before
the conversion; `restore_batch_axes` puts the axis back in the converted model's signature (a
Squeeze after each such input, an Unsqueeze before each such output), so the model takes and
returns what its author declared.
"""

from __future__ import annotations

import onnx
from onnx import helper

from compiler.frontend.errors import FrontendError


def _dims(value: onnx.ValueInfoProto) -> list[int | str]:
    return [
        d.dim_value if d.HasField("dim_value") else d.dim_param
        for d in value.type.tensor_type.shape.dim
    ]


def check_scan8(model: onnx.ModelProto) -> tuple[set[str], set[str]]:
    """The graph inputs and outputs whose batch axis the conversion drops (those of the Scan-8
    nodes); FrontendError where the conversion would be wrong."""
    graph = model.graph
    inputs = {i.name: i for i in graph.input}
    outputs = {o.name: o for o in graph.output}
    batched_in: set[str] = set()
    batched_out: set[str] = set()
    for k, node in enumerate(graph.node):
        if node.op_type != "Scan" or node.domain not in ("", "ai.onnx"):
            continue
        label = f"Scan node '{node.name or f'#{k}'}' (opset 8)"
        if node.input and node.input[0]:
            raise FrontendError(
                f"{label}: sequence_lens cannot be upgraded to Scan-9 by onnx's version "
                "converter (it has no such input)"
            )
        for names, table, kind, into in (
            (node.input[1:], inputs, "input", batched_in),
            (node.output, outputs, "output", batched_out),
        ):
            for name in names:
                if name not in table:
                    raise FrontendError(
                        f"{label}: {kind} '{name}' is not a graph {kind}; onnx's version "
                        "converter drops Scan-8's batch axis only from the model's own inputs "
                        "and outputs"
                    )
                dims = _dims(table[name])
                if not dims or dims[0] != 1:
                    raise FrontendError(
                        f"{label}: {kind} '{name}' has batch size {dims[0] if dims else '?'}; "
                        "onnx's version converter upgrades Scan-8 correctly only with batch 1"
                    )
                into.add(name)
    return batched_in, batched_out


def restore_batch_axes(
    original: onnx.ModelProto, converted: onnx.ModelProto, batched: tuple[set[str], set[str]]
) -> onnx.ModelProto:
    """`converted` taking and returning the original's batched shapes around its Scan nodes."""
    batched_in, batched_out = batched
    if not batched_in and not batched_out:
        return converted
    graph = converted.graph
    old_in = {i.name: i for i in original.graph.input}
    old_out = {o.name: o for o in original.graph.output}
    axes = "ziggurat_scan8_axis0"
    prologue = [helper.make_node("Constant", [], [axes], value_ints=[0])]
    for name in batched_in:
        inner = f"{name}__unbatched"
        for node in graph.node:
            node.input[:] = [inner if n == name else n for n in node.input]
        prologue.append(helper.make_node("Squeeze", [name, axes], [inner]))
    epilogue = []
    for name in batched_out:
        inner = f"{name}__unbatched"
        for node in graph.node:
            node.output[:] = [inner if n == name else n for n in node.output]
        epilogue.append(helper.make_node("Unsqueeze", [inner, axes], [name]))
    nodes = [*prologue, *graph.node, *epilogue]
    del graph.node[:]
    graph.node.extend(nodes)
    for group, table in ((graph.input, old_in), (graph.output, old_out)):
        for v in group:
            if v.name in batched_in | batched_out:
                v.type.CopyFrom(table[v.name].type)
    return converted
