"""Walks over ONNX graphs that the importer and the function expansion share: subgraph
attributes, every nested graph and node, an operator's domain-qualified name."""

from __future__ import annotations

from collections.abc import Iterator

import onnx


def subgraphs(node: onnx.NodeProto) -> list[tuple[str, onnx.GraphProto]]:
    """The node's graph-valued attributes (If's branches, Loop's and Scan's body) by name."""
    found = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            found.append((a.name, a.g))
        elif a.type == onnx.AttributeProto.GRAPHS:
            found.extend((f"{a.name}[{k}]", g_) for k, g_ in enumerate(a.graphs))
    return found


def all_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """The graph and, recursively, every subgraph of its nodes."""
    yield graph
    for node in graph.node:
        for _, sub in subgraphs(node):
            yield from all_graphs(sub)


def all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    for gr in all_graphs(graph):
        yield from gr.node


def op_key(node: onnx.NodeProto) -> str:
    """The operator's name in error messages: its type, prefixed by a non-default domain."""
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
