"""@main keeps its arena between calls (convert-memref-to-llvm's slots): a model whose arena is
larger than what malloc serves from its heap (32 MB) does not map and page-fault it in afresh
at every call, calls from two threads at once each get an arena of their own, and closing the
model frees it."""

from __future__ import annotations

import resource
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
from onnx import TensorProto, helper

from compiler.model import compile_model

ROWS, COLS = 4096, 2560  # 42 MB of float32


def _model() -> onnx.ModelProto:
    """y = transpose(relu(x)), s = row sums of relu(x): relu's result has two readers, so it is
    neither folded into the transpose nor fused, and lives in the arena."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, COLS])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [COLS, ROWS])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [ROWS])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0]),
        helper.make_node("ReduceSum", ["r", "axes"], ["s"], keepdims=0),
    ]
    m = helper.make_model(
        helper.make_graph(nodes, "arena", [x], [y, s], initializer=[axes]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    m.ir_version = 9
    return m


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def test_a_large_arena_is_not_faulted_in_at_every_call() -> None:
    model = compile_model(_model(), optimize=False)
    arena = model.notes["ziggurat.memory_plan"].data["arena_bytes"].value.data
    assert arena >= ROWS * COLS * 4  # relu's result lives there
    x = np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32)
    run = model.runner({"x": x})
    run()  # the first call allocates the arena (and faults it in)
    before = _minor_faults()
    for _ in range(3):
        run()
    pages = arena // 4096
    assert _minor_faults() - before < pages // 10, "the arena was mapped afresh per call"
    np.testing.assert_array_equal(model.run({"x": x})["y"], np.maximum(x, 0).T)
    model.program.close()


def test_concurrent_calls_do_not_share_an_arena() -> None:
    model = compile_model(_model(), optimize=False)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((ROWS, COLS)).astype(np.float32) for _ in range(4)]

    def check(k: int) -> None:
        x = xs[k % len(xs)]
        np.testing.assert_array_equal(model.run({"x": x})["y"], np.maximum(x, 0).T)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(check, range(12)))
    model.program.close()
