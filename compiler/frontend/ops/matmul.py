"""Converters of the matrix products: Gemm, MatMul."""

from __future__ import annotations

import onnx

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    results,
)
from dialects import graph as g


@converter("Gemm")
def convert_gemm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    c = imp.value(node.input[2]) if imp.has(node, 2) else None
    return results(
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
    return results(imp.emit(g.MatmulOp(imp.value(node.input[0]), imp.value(node.input[1]))))
