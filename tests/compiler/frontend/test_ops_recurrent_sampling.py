"""Recurrent layers (RNN, GRU, LSTM), sampling (GridSample, AffineGrid) and spectral operators
composed in the frontend (compiler/frontend/ops/recurrent.py, sampling.py, spectral.py):
compiled end to end and compared with onnxruntime, plus the errors of unsupported attributes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import graph_model
from tests.support.references import onnxruntime_run as reference

F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32

rng = np.random.default_rng(0)


def make(nodes, inputs, outputs, inits=(), opset=22) -> onnx.ModelProto:
    return graph_model(nodes, inputs, outputs, inits, opset)


def check(
    model: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    tol: float = 1e-4,
    onnx_ref: bool = False,
    optimize: bool = True,
) -> None:
    """Compare with onnxruntime, or with onnx's reference evaluator (`onnx_ref`: where
    onnxruntime departs from it, as for GridSample's cubic border padding). `optimize=False`
    (no fusion) where fused kernels of many elementwise ops take long to compile."""
    ours = compile_model(model, optimize=optimize).run(feeds)
    ref = ReferenceEvaluator(model).run(None, feeds) if onnx_ref else reference(model, feeds)
    for (name, o), r in zip(ours.items(), ref, strict=True):
        assert o.shape == r.shape, name
        np.testing.assert_allclose(o, r, rtol=tol, atol=tol, err_msg=name)


def rnd(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ----------------------------------------------------------------------------- recurrent


def recurrent_model(
    kind,
    seq,
    batch,
    inp,
    hid,
    dirs,
    *,
    layout=0,
    lens=None,
    runtime_lens=False,
    initial=True,
    peepholes=False,
    seed=0,
    **attrs,
):
    """One RNN/GRU/LSTM node with every optional input; weights are initializers drawn from
    `seed`."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    xs = [seq, batch, inp] if layout == 0 else [batch, seq, inp]
    ss = [dirs, batch, hid] if layout == 0 else [batch, dirs, hid]
    w = np.random.default_rng(seed)
    inits = [
        ("W", (w.standard_normal((dirs, gates * hid, inp)) * 0.5).astype(np.float32)),
        ("R", (w.standard_normal((dirs, gates * hid, hid)) * 0.5).astype(np.float32)),
        ("B", (w.standard_normal((dirs, 2 * gates * hid)) * 0.5).astype(np.float32)),
    ]
    inputs = [("X", F, xs)]
    names = ["X", "W", "R", "B", "", "", "", ""]
    if lens is not None:
        names[4] = "L"
        if runtime_lens:
            inputs.append(("L", I32, [batch]))
        else:
            inits.append(("L", np.asarray(lens, dtype=np.int32)))
    if initial:
        names[5] = "H0"
        inputs.append(("H0", F, ss))
        if kind == "LSTM":
            names[6] = "C0"
            inputs.append(("C0", F, ss))
    if peepholes:
        names[7] = "P"
        inits.append(("P", (w.standard_normal((dirs, 3 * hid)) * 0.5).astype(np.float32)))
    while names and names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    direction = "bidirectional" if dirs == 2 else attrs.pop("direction", "forward")
    node = helper.make_node(
        kind, names, outs, hidden_size=hid, layout=layout, direction=direction, **attrs
    )
    return make([node], inputs, [(o, F) for o in outs], inits)


def recurrent_feeds(model, kind, lens=None) -> dict[str, np.ndarray]:
    feeds = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.type.tensor_type.elem_type == I32:
            feeds[i.name] = np.asarray(lens, dtype=np.int32)
        else:
            feeds[i.name] = rnd(*shape)
    return feeds


@pytest.mark.parametrize(
    "kind, dirs, kw",
    [
        (
            "RNN",
            2,
            dict(
                layout=1,
                activations=["Relu", "Affine"],
                activation_alpha=[0.7],
                activation_beta=[0.2],
            ),
        ),
        ("RNN", 1, dict(direction="reverse", lens=[3, 1], clip=1.5)),
        ("GRU", 2, dict(linear_before_reset=1, lens=[2, 4], runtime_lens=True)),
        (
            "GRU",
            1,
            dict(
                activations=["HardSigmoid", "LeakyRelu"],
                activation_alpha=[0.3, 0.05],
                activation_beta=[0.45],
                layout=1,
            ),
        ),
        ("LSTM", 2, dict(peepholes=True, lens=[4, 2], layout=1)),
        (
            "LSTM",
            1,
            dict(
                input_forget=1,
                clip=2.0,
                direction="reverse",
                peepholes=True,
                activations=["Sigmoid", "ScaledTanh", "Softsign"],
                activation_alpha=[0.9],
                activation_beta=[1.1],
            ),
        ),
    ],
)
def test_recurrent_matches_onnxruntime(kind, dirs, kw):
    """onnxruntime has no layout 1: its reference runs the layout-0 model on transposed data."""
    kw = dict(kw)
    layout = kw.pop("layout", 0)
    m = recurrent_model(kind, 4, 2, 3, 5, dirs, layout=layout, **kw)
    feeds = recurrent_feeds(m, kind, kw.get("lens"))
    ours = compile_model(m).run(feeds)
    ref_feeds = {
        n: (np.swapaxes(v, 0, 1) if layout == 1 and v.ndim == 3 else v) for n, v in feeds.items()
    }
    ref = reference(recurrent_model(kind, 4, 2, 3, 5, dirs, **kw), ref_feeds)
    for (name, o), r in zip(ours.items(), ref, strict=True):
        if layout == 1:
            r = np.transpose(r, [2, 0, 1, 3]) if r.ndim == 4 else np.swapaxes(r, 0, 1)
        assert o.shape == r.shape, name
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-4, err_msg=name)


def test_recurrent_other_activations():
    """Elu, Softplus, ThresholdedRelu, Tanh in one LSTM, without initial states."""
    m = recurrent_model(
        "LSTM",
        3,
        2,
        3,
        4,
        1,
        initial=False,
        activations=["Sigmoid", "Elu", "Softplus"],
        activation_alpha=[0.8],
    )
    check(m, recurrent_feeds(m, "LSTM"))
    m = recurrent_model(
        "RNN",
        3,
        2,
        3,
        4,
        1,
        initial=False,
        activations=["ThresholdedRelu"],
        activation_alpha=[0.1],
    )
    check(m, recurrent_feeds(m, "RNN"))


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(activations=["Gelu"]), "unsupported activation function 'Gelu'"),
        (dict(activations=["Tanh", "Tanh"]), "activations must list 1 functions"),
        (dict(lens=[5, 1]), r"sequence_lens must lie in \[0, 4\]"),
        (dict(layout=2), "layout must be 0 or 1, got 2"),
        (dict(direction="sideways"), "direction must be forward, reverse or bidirectional"),
    ],
)
def test_recurrent_errors(kw, message):
    m = recurrent_model("RNN", 4, 2, 3, 5, 1, **kw)
    with pytest.raises(FrontendError, match="RNN node .*" + message):
        import_onnx(m)


# ----------------------------------------------------------------------------- sampling


def grid_sample_model(xs, gs, configs, opset=22) -> onnx.ModelProto:
    """One GridSample node per (mode, padding_mode, align_corners), all on the same X and grid."""
    nodes = [
        helper.make_node(
            "GridSample", ["X", "G"], [f"Y{k}"], mode=m, padding_mode=p, align_corners=a
        )
        for k, (m, p, a) in enumerate(configs)
    ]
    return make(
        nodes,
        [("X", F, xs), ("G", F, gs)],
        [(f"Y{k}", F) for k in range(len(configs))],
        opset=opset,
    )


def test_grid_sample_2d_every_mode_and_padding():
    """Grid points reach outside [-1, 1], so every padding mode matters."""
    configs = [
        ("linear", "zeros", 0),
        ("nearest", "border", 1),
        ("cubic", "reflection", 1),
    ]
    m = grid_sample_model([2, 3, 4, 5], [2, 3, 6, 2], configs)
    feeds = {"X": rnd(2, 3, 4, 5), "G": rnd(2, 3, 6, 2, scale=0.9)}
    check(m, feeds, onnx_ref=True, optimize=False)


def test_grid_sample_3d_and_opset16_names():
    m = grid_sample_model(
        [1, 2, 3, 4, 5],
        [1, 2, 3, 4, 3],
        [("linear", "border", 0), ("nearest", "reflection", 0)],
    )
    feeds = {"X": rnd(1, 2, 3, 4, 5), "G": rnd(1, 2, 3, 4, 3, scale=0.9)}
    check(m, feeds, onnx_ref=True, optimize=False)
    m = grid_sample_model([1, 2, 4, 3], [1, 5, 2, 2], [("bilinear", "zeros", 1)], opset=16)
    check(m, {"X": rnd(1, 2, 4, 3), "G": rnd(1, 5, 2, 2, scale=0.9)})


@pytest.mark.parametrize(
    "xs, gs, attrs, opset, message",
    [
        ([1, 1, 3, 3], [1, 2, 2, 2], dict(mode="area"), 22, "mode must be one of linear"),
        ([1, 1, 3, 3], [1, 2, 2, 2], dict(mode="linear"), 16, "mode must be one of bilinear"),
        ([1, 1, 3, 3], [1, 2, 2, 2], dict(padding_mode="mirror"), 22, "padding_mode must be"),
        ([1, 1, 2, 3, 3], [1, 2, 2, 2, 3], {}, 16, "X must be 4-D at opset 16"),
        ([1, 1, 3, 3], [1, 2, 2, 3], {}, 22, r"grid must have shape \[1, <2 output sizes>, 2\]"),
    ],
)
def test_grid_sample_errors(xs, gs, attrs, opset, message):
    node = helper.make_node("GridSample", ["X", "G"], ["Y"], **attrs)
    m = make([node], [("X", F, xs), ("G", F, gs)], [("Y", F)], opset=opset)
    with pytest.raises(FrontendError, match="GridSample node .*" + message):
        import_onnx(m)


@pytest.mark.filterwarnings("ignore:divide by zero")  # the reference's step for a size-1 axis
@pytest.mark.parametrize("size, align", [([2, 3, 4, 5], 0), ([1, 2, 3, 1, 4], 1)])
def test_affine_grid(size, align):
    r = len(size) - 2
    node = helper.make_node("AffineGrid", ["T", "S"], ["Y"], align_corners=align)
    m = make(
        [node],
        [("T", F, [size[0], r, r + 1])],
        [("Y", F)],
        [("S", np.asarray(size, np.int64))],
        opset=20,
    )
    check(m, {"T": rnd(size[0], r, r + 1)}, onnx_ref=True)  # onnxruntime differs on size 1


def test_affine_grid_needs_a_constant_size():
    node = helper.make_node("AffineGrid", ["T", "S"], ["Y"])
    m = make([node], [("T", F, [1, 2, 3]), ("S", I64, [4])], [("Y", F)], opset=20)
    with pytest.raises(FrontendError, match="AffineGrid node .*input size .* must be a constant"):
        import_onnx(m)


# ----------------------------------------------------------------------------- spectral


@pytest.mark.parametrize(
    "shape, attrs, length, axis",
    [
        ([2, 6, 1], dict(onesided=1), 8, 1),  # rfft, zero-padded
        ([2, 5, 3, 2], dict(inverse=1), 4, -3),  # complex inverse, truncated
        ([2, 4, 2], dict(inverse=1, onesided=1), None, 1),  # irfft: real output
        ([3, 7, 2], {}, None, -2),
    ],
)
def test_dft(shape, attrs, length, axis):
    ins = ["x", "n" if length else "", "axis"]
    node = helper.make_node("DFT", ins, ["y"], **attrs)
    inits = [("axis", np.asarray(axis, np.int64))]
    if length:
        inits.append(("n", np.asarray(length, np.int64)))
    m = make([node], [("x", F, shape)], [("y", F)], inits, opset=20)
    check(m, {"x": rnd(*shape)}, onnx_ref=True)


def test_dft_opset17_axis_attribute_and_stft_and_windows():
    nodes = [
        helper.make_node("DFT", ["x"], ["y"], axis=1, onesided=1),
        helper.make_node("HannWindow", ["size"], ["w"], periodic=0),
        helper.make_node("STFT", ["x", "step", "w"], ["s"], onesided=1),
        helper.make_node("BlackmanWindow", ["size"], ["b"]),
        helper.make_node("Mul", ["b", "b"], ["b2"]),
    ]
    inits = [("size", np.asarray(4, np.int64)), ("step", np.asarray(3, np.int64))]
    m = make([*nodes], [("x", F, [2, 10, 1])], [("y", F), ("s", F), ("b2", F)], inits, opset=17)
    check(m, {"x": rnd(2, 10, 1)}, onnx_ref=True)


@pytest.mark.parametrize(
    "node, inputs, message",
    [
        (helper.make_node("DFT", ["x", "", "a"], ["y"]), [("a", I64, [])], "input axis"),
        (helper.make_node("HannWindow", ["a"], ["y"]), [("a", I64, [])], "input size"),
        (helper.make_node("STFT", ["x", "a"], ["y"]), [("a", I64, [])], "input frame_step"),
    ],
)
def test_spectral_needs_constants(node, inputs, message):
    m = make([node], [("x", F, [1, 8, 1]), *inputs], [("y", F)], opset=20)
    with pytest.raises(
        FrontendError, match=f"{node.op_type} node .*{message} .* must be a constant"
    ):
        import_onnx(m)
