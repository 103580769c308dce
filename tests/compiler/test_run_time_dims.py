"""One compile for every size (compiler/symbolic_model.py `once`, compiler/frontend/run_time_dims.py):
a model whose symbolic dims reach only operators compiled for run-time sizes is imported with
those dims `?`, compiled once, and run at any size against onnxruntime; any other model is
compiled per size, with the operator that stops it named.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import CompileError, InputError
from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.frontend.run_time_dims import RUN_TIME
from compiler.package import PackageError, load_package
from compiler.package.c_library import export_shared_library
from compiler.symbolic_model import compile_symbolic
from compiler.tensor_spec import RUN_TIME_DIM

RNG = np.random.default_rng(0)
F = TensorProto.FLOAT


def _model(nodes, weights: dict[str, np.ndarray], x: list, y: list) -> onnx.ModelProto:  # type: ignore[no-untyped-def]
    graph = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info("x", F, x)],
        [helper.make_tensor_value_info("y", F, y)],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m


def _w(*shape: int) -> np.ndarray:
    """Weights that depend on their shape only: a builder gives the same model each call."""
    return np.random.default_rng(sum(shape) * 31 + len(shape)).uniform(-0.5, 0.5, shape)


def mlp() -> onnx.ModelProto:
    """MatMul (10 columns: its weights are padded to the vector width), Add, Relu."""
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"]),
        helper.make_node("Add", ["h", "B"], ["a"]),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    return _model(nodes, {"W": _w(24, 10), "B": _w(10)}, ["batch", 24], ["batch", 10])


def encoder_block() -> onnx.ModelProto:
    """LayerNorm, a projection, tanh, softmax over the features, a residual: [batch, seq, 40]."""
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["n", "W"], ["p"]),
        helper.make_node("Tanh", ["p"], ["t"]),
        helper.make_node("Softmax", ["t"], ["s"], axis=-1),
        helper.make_node("Mul", ["s", "x"], ["m"]),
        helper.make_node("Sub", ["m", "x"], ["y"]),
    ]
    weights = {"g": 1 + _w(40), "b": _w(40), "W": _w(40, 40)}
    return _model(nodes, weights, ["batch", "seq", 40], ["batch", "seq", 40])


def rms_norm() -> onnx.ModelProto:
    """Llama's RMSNorm: x / sqrt(mean(x^2) + eps) * g over [1, seq, 48] (the mean keeps its dim)."""
    nodes = [
        helper.make_node("Pow", ["x", "two"], ["p"]),
        helper.make_node("ReduceMean", ["p"], ["m"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["m", "eps"], ["e"]),
        helper.make_node("Sqrt", ["e"], ["s"]),
        helper.make_node("Div", ["x", "s"], ["d"]),
        helper.make_node("Mul", ["d", "g"], ["y"]),
    ]
    weights = {"two": np.array(2.0), "eps": np.array(1e-6), "g": 1 + _w(48)}
    return _model(nodes, weights, [1, "seq", 48], [1, "seq", 48])


def gemms() -> onnx.ModelProto:
    """Gemm with transB and beta (C added after the product, sized by it), then a plain one."""
    nodes = [
        helper.make_node("Gemm", ["x", "W", "C"], ["h"], transB=1, beta=0.5),
        helper.make_node("Gemm", ["h", "V", "D"], ["y"]),
    ]
    weights = {"W": _w(12, 20), "C": _w(1, 12), "V": _w(12, 5), "D": _w(5)}
    return _model(nodes, weights, ["batch", 20], ["batch", 5])


def heads() -> onnx.ModelProto:
    """A batched product per head: [4, seq, 16] @ [4, 16, 8] (the head stride is seq * 16)."""
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"])]
    return _model(nodes, {"W": _w(4, 16, 8)}, [4, "seq", 16], [4, "seq", 8])


def concatenated() -> onnx.ModelProto:
    """Concat along the run-time axis: the result is as long as both inputs together."""
    nodes = [
        helper.make_node("Concat", ["x", "x"], ["t"], axis=0),
        helper.make_node("Relu", ["t"], ["y"]),
    ]
    return _model(nodes, {}, ["n", 6], ["2 * n", 6])


def cumulative() -> onnx.ModelProto:
    """CumSum is not compiled for run-time sizes: this model is compiled per size."""
    nodes = [helper.make_node("CumSum", ["x", "axis"], ["y"])]
    model = _model(nodes, {}, ["n", 6], ["n", 6])
    model.graph.initializer.append(numpy_helper.from_array(np.array(1, np.int64), "axis"))
    return model


def _ints(name: str, *values: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def split_heads() -> onnx.ModelProto:
    """Exporters' shape arithmetic: [batch, seq, 24] reshaped into 4 heads through Shape,
    Gather, Unsqueeze and Concat, a softmax per head, and back (the targets bound to the
    symbols by compiler/frontend/shape_binding.py)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
        helper.make_node("Gather", ["s", "i1"], ["q"], axis=0),
        helper.make_node("Unsqueeze", ["b", "zero"], ["bu"]),
        helper.make_node("Unsqueeze", ["q", "zero"], ["qu"]),
        helper.make_node("Concat", ["bu", "qu", "heads", "width"], ["split"], axis=0),
        helper.make_node("Reshape", ["x", "split"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
        helper.make_node("Softmax", ["t"], ["p"], axis=-1),
        helper.make_node("Transpose", ["p"], ["u"], perm=[0, 2, 1, 3]),
        helper.make_node("Concat", ["bu", "qu", "all"], ["merge"], axis=0),
        helper.make_node("Reshape", ["u", "merge"], ["y"]),
    ]
    model = _model(nodes, {}, ["batch", "seq", 24], ["batch", "seq", 24])
    model.graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(0, np.int64), "i0"),
            numpy_helper.from_array(np.array(1, np.int64), "i1"),
            _ints("zero", 0),
            _ints("heads", 4),
            _ints("width", 6),
            _ints("all", 24),
        ]
    )
    return model


def positions() -> onnx.ModelProto:
    """A learned position table read at Range(0, seq), the length read from x's shape at run
    time (graph.shape, graph.range), added to x: [batch, seq, 16]."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i1"], ["n"], axis=0),
        helper.make_node("Range", ["start", "n", "step"], ["slots"]),
        helper.make_node("Gather", ["table", "slots"], ["pos"], axis=0),
        helper.make_node("Add", ["x", "pos"], ["y"]),
    ]
    model = _model(nodes, {"table": _w(400, 16)}, ["batch", "seq", 16], ["batch", "seq", 16])
    model.graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(v, np.int64), n)
            for n, v in (("i1", 1), ("start", 0), ("step", 1))
        ]
    )
    return model


def rotate_half() -> onnx.ModelProto:
    """Rotary embeddings' rotate_half with Split and Slice along the static axis (the first half
    at offset 0 too): concat(-x2, x1) * x + x[..., :8] broadcast, [batch, seq, 16]."""
    nodes = [
        helper.make_node("Split", ["x", "halves"], ["x1", "x2"], axis=-1),
        helper.make_node("Neg", ["x2"], ["n2"]),
        helper.make_node("Concat", ["n2", "x1"], ["rot"], axis=-1),
        helper.make_node("Slice", ["x", "s0", "s8", "axes"], ["first"]),
        helper.make_node("Slice", ["x", "s8", "s16", "axes"], ["second"]),
        helper.make_node("Concat", ["second", "first"], ["swapped"], axis=-1),
        helper.make_node("Mul", ["rot", "swapped"], ["y"]),
    ]
    model = _model(nodes, {}, ["batch", "seq", 16], ["batch", "seq", 16])
    model.graph.initializer.extend(
        [_ints("halves", 8, 8), _ints("s0", 0), _ints("s8", 8), _ints("s16", 16), _ints("axes", 2)]
    )
    return model


def repeat_kv() -> onnx.ModelProto:
    """Grouped-query attention's repeat_kv: Expand to a target computed from x's shape, then a
    Reshape merging the static group dims, [batch, 2, seq, 8] -> [batch, 6, seq, 8]."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
        helper.make_node("Gather", ["s", "i2"], ["q"], axis=0),
        helper.make_node("Unsqueeze", ["b", "zero"], ["bu"]),
        helper.make_node("Unsqueeze", ["q", "zero"], ["qu"]),
        helper.make_node("Unsqueeze", ["x", "two"], ["x5"]),
        helper.make_node("Concat", ["bu", "kv", "rep", "qu", "hd"], ["target"], axis=0),
        helper.make_node("Expand", ["x5", "target"], ["e"]),
        helper.make_node("Concat", ["bu", "heads", "qu", "hd"], ["merged"], axis=0),
        helper.make_node("Reshape", ["e", "merged"], ["y"]),
    ]
    model = _model(nodes, {}, ["batch", 2, "seq", 8], ["batch", 6, "seq", 8])
    model.graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(0, np.int64), "i0"),
            numpy_helper.from_array(np.array(2, np.int64), "i2"),
            _ints("zero", 0),
            _ints("two", 2),
            _ints("kv", 2),
            _ints("rep", 3),
            _ints("hd", 8),
            _ints("heads", 6),
        ]
    )
    return model


def _reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


SHAPES = {
    "mlp": (mlp, [(1, 24), (3, 24), (7, 24), (64, 24), (300, 24)]),
    "encoder_block": (
        encoder_block,
        [(b, s, 40) for b in (1, 3) for s in (1, 7, 64, 300)],
    ),
    "heads": (heads, [(4, s, 16) for s in (1, 7, 64, 300)]),
    "gemms": (gemms, [(1, 20), (3, 20), (65, 20)]),
    "rms_norm": (rms_norm, [(1, s, 48) for s in (1, 7, 64, 300)]),
    "concatenated": (concatenated, [(1, 6), (5, 6), (70, 6)]),
    "split_heads": (split_heads, [(b, s, 24) for b in (1, 3) for s in (1, 7, 64, 300)]),
    "positions": (positions, [(b, s, 16) for b in (1, 3) for s in (1, 7, 64, 300)]),
    "rotate_half": (rotate_half, [(b, s, 16) for b in (1, 3) for s in (1, 7, 70)]),
    "repeat_kv": (repeat_kv, [(b, 2, s, 8) for b in (1, 3) for s in (1, 7, 70)]),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_compiled_once_matches_onnxruntime_at_every_size(name: str) -> None:
    build, shapes = SHAPES[name]
    onnx_model = build()
    model = compile_symbolic(onnx_model, cache=False)
    for shape in shapes:
        x = RNG.uniform(-1, 1, shape).astype(np.float32)
        got = model.run({"x": x})["y"]
        np.testing.assert_allclose(got, _reference(onnx_model, x), rtol=1e-4, atol=1e-4)
    assert model.compiles == 1 and model.one_compile_refused is None
    once = model.once()
    assert RUN_TIME_DIM in once.inputs[0].shape


def test_a_model_with_another_operator_is_compiled_per_size_saying_why() -> None:
    onnx_model = cumulative()
    model = compile_symbolic(onnx_model, cache=False)
    for n in (1, 5, 5, 9):
        x = RNG.uniform(-1, 1, (n, 6)).astype(np.float32)
        np.testing.assert_array_equal(model.run({"x": x})["y"], _reference(onnx_model, x))
    assert model.once() is None
    assert model.one_compile_refused == (
        "CumSum node '#0' reads 'x', whose shape depends on the symbols; CumSum is not "
        "compiled for run-time sizes yet"
    )
    assert model.compiles == 3  # sizes 1, 5 and 9


def test_one_compile_required_is_an_error_naming_the_operator() -> None:
    model = compile_symbolic(cumulative(), one_compile=True, cache=False)
    with pytest.raises(
        CompileError,
        match="cannot compile the model once for every size: CumSum node '#0' reads 'x'",
    ):
        model.run({"x": np.zeros((2, 6), np.float32)})


def test_the_importer_refuses_an_operator_not_compiled_for_run_time_sizes() -> None:
    with pytest.raises(
        FrontendError,
        match=r"CumSum node '#0': input 'x' has run-time dims "
        r"\(tensor<\?x6xf32>\); CumSum is not compiled for run-time sizes yet",
    ):
        import_onnx(cumulative(), {"x": [RUN_TIME, 6]})


def test_sizes_outside_the_bounds_are_refused_before_running() -> None:
    model = compile_symbolic(mlp(), dims={"batch": (1, 100)}, cache=False)
    model.run({"x": np.zeros((100, 24), np.float32)})
    with pytest.raises(InputError, match=r"symbol 'batch' is 101 in input 'x' \(axis 0\), outside"):
        model.run({"x": np.zeros((101, 24), np.float32)})
    with pytest.raises(InputError, match=r"input 'x' has shape \[3, 25\]; the model expects"):
        model.run({"x": np.zeros((3, 25), np.float32)})
    assert model.compiles == 1


def test_the_compile_cache_serves_the_one_compile_to_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZIGGURAT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ZIGGURAT_NO_CACHE", raising=False)  # tests/conftest.py turns it off
    first = compile_symbolic(mlp())
    x = RNG.uniform(-1, 1, (5, 24)).astype(np.float32)
    expected = first.run({"x": x})["y"]
    second = compile_symbolic(mlp())  # a new process would do the same: a load, no compile
    np.testing.assert_array_equal(second.run({"x": x})["y"], expected)
    assert type(second.once()).__name__ == "LoadedModel"
    x7 = RNG.uniform(-1, 1, (7, 24)).astype(np.float32)
    np.testing.assert_allclose(second.run({"x": x7})["y"], _reference(mlp(), x7), atol=1e-5)


def test_a_package_keeps_the_run_time_dims(tmp_path: Path) -> None:
    model = compile_symbolic(mlp(), cache=False)
    once = model.once()
    path = tmp_path / "mlp.zpkg"
    once.save(path)
    with zipfile.ZipFile(path) as z:
        manifest = json.loads(z.read("manifest.json"))
    assert [e["shape"] for e in manifest["inputs"]] == [[None, 24]]  # null: a run-time dim
    loaded = load_package(path)
    x = RNG.uniform(-1, 1, (6, 24)).astype(np.float32)
    got = loaded.run({"x": x}, output_shapes=[[6, 10]])["y"]
    np.testing.assert_allclose(got, _reference(mlp(), x), atol=1e-5)
    with pytest.raises(InputError, match="this model's outputs have run-time dims"):
        loaded.run({"x": x})
    with pytest.raises(PackageError, match=r"input 'x' has run-time dims \[\?, 24\]: the C API"):
        export_shared_library(path, tmp_path / "lib")


def test_threads_and_a_gpu_target() -> None:
    """With threads the blocks run as they are (correct at every size); the GPU lowering does
    not take run-time dims yet, so an OpenCL model is compiled per size, saying so."""
    onnx_model = encoder_block()
    model = compile_symbolic(onnx_model, threads=2, cache=False)
    for shape in [(2, 9, 40), (1, 70, 40)]:
        x = RNG.uniform(-1, 1, shape).astype(np.float32)
        got = model.run({"x": x})["y"]
        np.testing.assert_allclose(got, _reference(onnx_model, x), rtol=1e-4, atol=1e-4)
    assert model.compiles == 1
    gpu = compile_symbolic(mlp(), target="opencl", cache=False)
    x = RNG.uniform(-1, 1, (5, 24)).astype(np.float32)
    np.testing.assert_allclose(gpu.run({"x": x})["y"], _reference(mlp(), x), atol=1e-5)
    assert gpu.one_compile_refused is not None
    assert (
        "convert-linalg-to-gpu" in gpu.one_compile_refused
        and "memref<?x10xf32>" in gpu.one_compile_refused
    )


def _plus(reduced: str) -> onnx.NodeProto:
    """x + the reduction (kept dims broadcast back): the output has x's shape."""
    return helper.make_node("Add", ["x", reduced], ["y"])


def _scalar(v: float) -> np.ndarray:
    return np.array(v, np.float32)


ONE_OP = {
    "Transpose": ([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1])], {}),
    "Max": ([helper.make_node("Max", ["x", "c"], ["y"])], {"c": _w(9)}),
    "Min": ([helper.make_node("Min", ["x", "c"], ["y"])], {"c": _w(9)}),
    "Clip": (
        [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
        {"lo": _scalar(-0.2), "hi": _scalar(0.3)},
    ),
    "Pow": ([helper.make_node("Pow", ["x", "e"], ["y"])], {"e": _scalar(2.0)}),
    "LeakyRelu": ([helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)], {}),
    "HardSigmoid": ([helper.make_node("HardSigmoid", ["x"], ["y"])], {}),
    "Softplus": ([helper.make_node("Softplus", ["x"], ["y"])], {}),
    "Log": ([helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Log", ["a"], ["y"])], {}),
    "Reciprocal": ([helper.make_node("Reciprocal", ["x"], ["y"])], {}),
    "LogSoftmax": ([helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)], {}),
    "Exp": ([helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Sqrt", ["e"], ["y"])], {}),
    "ReduceMean": ([helper.make_node("ReduceMean", ["x"], ["r"], axes=[-1]), _plus("r")], {}),
    "ReduceMax": ([helper.make_node("ReduceMax", ["x"], ["r"], axes=[1]), _plus("r")], {}),
    "ReduceMin": ([helper.make_node("ReduceMin", ["x"], ["r"], axes=[-1]), _plus("r")], {}),
}


@pytest.mark.parametrize("op", list(ONE_OP))
def test_each_operator_compiled_for_run_time_sizes(op: str) -> None:
    nodes, weights = ONE_OP[op]
    out = ["batch", 9, "seq"] if op == "Transpose" else ["batch", "seq", 9]
    onnx_model = _model(nodes, weights, ["batch", "seq", 9], out)
    model = compile_symbolic(onnx_model, one_compile=True, cache=False)
    for shape in [(1, 1, 9), (3, 70, 9)]:
        x = RNG.uniform(-1, 1, shape).astype(np.float32)
        got = model.run({"x": x})["y"]
        np.testing.assert_allclose(got, _reference(onnx_model, x), rtol=1e-4, atol=1e-5)
    assert model.compiles == 1
