"""DeformConv composed in the frontend (compiler/frontend/ops/deform_conv.py): compiled end to
end and compared with onnx's reference implementation (2-D, the only rank it implements) or,
for 1-D and 3-D, with a direct numpy loop that is itself checked against onnx's in 2-D; plus
the errors of inconsistent shapes and attributes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import graph_model

F = TensorProto.FLOAT

rng = np.random.default_rng(0)


def rnd(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def out_shape(dims, kernel, strides, dilations, pads):
    r = len(dims)
    return [
        (dims[i] + pads[i] + pads[r + i] - (kernel[i] - 1) * dilations[i] - 1) // strides[i] + 1
        for i in range(r)
    ]


def case(
    n=1,
    c=2,
    oc=2,
    dims=(4, 4),
    kernel=(2, 2),
    group=1,
    offset_group=1,
    strides=None,
    dilations=None,
    pads=None,
    bias=False,
    mask=False,
    w_init=False,
    scale=1.0,
    opset=19,
):
    """A DeformConv model and random feeds (offsets of `scale` pixels, reaching outside)."""
    r = len(dims)
    s, d, p = strides or [1] * r, dilations or [1] * r, pads or [0] * (2 * r)
    out = out_shape(dims, kernel, s, d, p)
    k = math.prod(kernel)
    feeds = {
        "X": rnd(n, c, *dims),
        "O": rnd(n, offset_group * k * r, *out, scale=scale),
    }
    weights = rnd(oc, c // group, *kernel)
    inputs = [("X", F, [n, c, *dims])]
    inits = []
    if w_init:
        inits.append(("W", weights))
    else:
        feeds["W"] = weights
        inputs.append(("W", F, list(weights.shape)))
    inputs.append(("O", F, list(feeds["O"].shape)))
    names = ["X", "W", "O", "", ""]
    if bias:
        feeds["B"] = rnd(oc)
        inputs.append(("B", F, [oc]))
        names[3] = "B"
    if mask:
        feeds["M"] = rng.uniform(0, 1, (n, offset_group * k, *out)).astype(np.float32)
        inputs.append(("M", F, list(feeds["M"].shape)))
        names[4] = "M"
    while names[-1] == "":
        names.pop()
    attrs = {"group": group, "offset_group": offset_group, "kernel_shape": list(kernel)}
    if strides:
        attrs["strides"] = strides
    if dilations:
        attrs["dilations"] = dilations
    if pads:
        attrs["pads"] = pads
    node = helper.make_node("DeformConv", names, ["Y"], **attrs)
    return graph_model([node], inputs, [("Y", F)], inits, opset), feeds


def numpy_deform_conv(x, w, off, b, m, group, offset_group, strides, dilations, pads):
    """Deformable convolution over any number of spatial axes, one output at a time: each tap
    is linearly interpolated from its 2**r integer neighbours, outside ones reading 0."""
    n, c, *dims = x.shape
    oc, cpg, *kernel = w.shape
    r = len(dims)
    out = list(off.shape[2:])
    k = math.prod(kernel)
    off = off.reshape(n, offset_group, *kernel, r, *out).astype(np.float64)
    m = np.ones((n, offset_group * k, *out)) if m is None else m
    m = m.reshape(n, offset_group, *kernel, *out)
    y = np.zeros((n, oc, *out))
    cols = np.zeros((n, c, *kernel, *out))
    for bi, ci in itertools.product(range(n), range(c)):
        og = ci // (c // offset_group)
        for kk in itertools.product(*map(range, kernel)):
            for oo in itertools.product(*map(range, out)):
                pos = [
                    oo[a] * strides[a] - pads[a] + kk[a] * dilations[a] + off[bi, og, *kk, a, *oo]
                    for a in range(r)
                ]
                base = [math.floor(p) for p in pos]
                acc = 0.0
                for corner in itertools.product((0, 1), repeat=r):
                    at = [base[a] + corner[a] for a in range(r)]
                    if all(0 <= at[a] < dims[a] for a in range(r)):
                        wt = math.prod(1 - abs(pos[a] - at[a]) for a in range(r))
                        acc += wt * x[bi, ci, *at]
                cols[bi, ci, *kk, *oo] = acc * m[bi, og, *kk, *oo]
    for bi, o in itertools.product(range(n), range(oc)):
        gi = o // (oc // group)
        part = cols[bi, gi * cpg : (gi + 1) * cpg]
        y[bi, o] = np.tensordot(w[o], part, axes=(list(range(r + 1)), list(range(r + 1))))
    if b is not None:
        y += b.reshape(oc, *[1] * r)
    return y.astype(np.float32)


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], onnx_ref: bool) -> None:
    ours = compile_model(model).run(feeds)["Y"]
    if onnx_ref:
        ref = np.asarray(list(ReferenceEvaluator(model).run(None, feeds))[0])
    else:
        node = model.graph.node[0]
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        w = feeds.get("W")
        if w is None:
            w = onnx.numpy_helper.to_array(model.graph.initializer[0])
        r = feeds["X"].ndim - 2
        ref = numpy_deform_conv(
            feeds["X"],
            w,
            feeds["O"],
            feeds.get("B"),
            feeds.get("M"),
            a.get("group", 1),
            a.get("offset_group", 1),
            a.get("strides", [1] * r),
            a.get("dilations", [1] * r),
            a.get("pads", [0] * (2 * r)),
        )
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"pads": [1, 1, 1, 1], "bias": True, "mask": True, "w_init": True},
        {"strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 2, 1], "n": 2},
        {"c": 4, "oc": 6, "group": 2, "offset_group": 2, "mask": True, "bias": True},
        {"c": 4, "oc": 2, "group": 2, "offset_group": 4, "kernel": (3, 2), "pads": [1, 0, 1, 0]},
        {"scale": 40.0, "pads": [2, 2, 2, 2], "opset": 22},  # every tap far outside: bias only
    ],
)
def test_deform_conv_2d_matches_onnx_reference(kw):
    check(*case(**kw), onnx_ref=True)


def test_numpy_reference_agrees_with_onnx_in_2d():
    """The loop reference of the 1-D/3-D tests against onnx's on an involved 2-D case."""
    model, feeds = case(
        c=4, oc=2, group=2, offset_group=2, strides=[2, 1], pads=[1, 0, 0, 1], mask=True, bias=True
    )
    ref = ReferenceEvaluator(model).run(None, feeds)[0]
    ours = numpy_deform_conv(
        feeds["X"], feeds["W"], feeds["O"], feeds["B"], feeds["M"], 2, 2, [2, 1], [1, 1],
        [1, 0, 0, 1],
    )  # fmt: skip
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "kw",
    [
        {"dims": (7,), "kernel": (3,), "strides": [2], "dilations": [2], "pads": [2, 1],
         "c": 4, "oc": 4, "group": 2, "offset_group": 2, "mask": True, "bias": True},
        {"dims": (3, 4, 3), "kernel": (2, 2, 2), "pads": [1, 0, 0, 0, 1, 0], "mask": True,
         "bias": True, "strides": [1, 2, 1]},
    ],
)  # fmt: skip
def test_deform_conv_1d_and_3d(kw):
    check(*case(**kw), onnx_ref=False)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"kernel_shape": [3, 3]}, r"kernel_shape \[3, 3\] does not match W's spatial shape"),
        ({"group": 3}, "does not fit X of shape .* with group=3"),
        ({"offset_group": 3}, r"C \(4\) must be divisible by offset_group \(3\)"),
        ({"strides": [0, 1]}, "strides and dilations must be >= 1"),
        ({"pads": [1, 1]}, "pads must have 4 values"),
        ({"strides": [2, 2]}, r"offset must have shape \[1, 8, 2, 2\]"),
        ({"group": 0}, "group and offset_group must be >= 1"),
        ({"dilations": [5, 1]}, r"the dilated kernel \[6, 2\] is larger than the padded input"),
    ],
)
def test_deform_conv_errors(change, message):
    model, _ = case(c=4, oc=4)
    node = model.graph.node[0]
    for name, value in change.items():
        for a in list(node.attribute):
            if a.name == name:
                node.attribute.remove(a)
        node.attribute.append(helper.make_attribute(name, value))
    with pytest.raises(FrontendError, match="DeformConv node .*" + message):
        import_onnx(model)


@pytest.mark.parametrize(
    "inputs, message",
    [
        ([("X", F, [1, 4, 4, 4]), ("W", F, [4, 4, 2]), ("O", F, [1, 8, 3, 3])], "W must have rank 4"),
        ([("X", F, [1, 4]), ("W", F, [4, 4]), ("O", F, [1, 4])], "X must have rank >= 3"),
        ([("X", F, [1, 4, 4, 4]), ("W", F, [4, 4, 2, 2]), ("O", F, [1, 8, 3, 3]),
          ("B", F, [3])], r"B must have shape \[4\]"),
        ([("X", F, [1, 4, 4, 4]), ("W", F, [4, 4, 2, 2]), ("O", F, [1, 8, 3, 3]),
          ("", F, None), ("M", F, [1, 4, 3, 2])], r"mask must have shape \[1, 4, 3, 3\]"),
        ([("X", TensorProto.INT64, [1, 4, 4, 4]), ("W", F, [4, 4, 2, 2]), ("O", F, [1, 8, 3, 3])],
         "X must be a float tensor"),
    ],
)  # fmt: skip
def test_deform_conv_shape_errors(inputs, message):
    names = [name for name, _, _ in inputs]
    node = helper.make_node("DeformConv", names, ["Y"])
    model = graph_model([node], [i for i in inputs if i[0]], [("Y", F)], opset=19)
    with pytest.raises(FrontendError, match="DeformConv node .*" + message):
        import_onnx(model)
