"""blocked-layout: convs in NCHW[b]c compute what the NCHW model computes (compiled, on random
inputs), and the transforms back to NCHW are left only where a layout-bound op needs them."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.ir import SSAValue

from compiler.model import compile_model
from compiler.zoo import random_inputs
from dialects import graph as g
from passes.schedule.cpu_target import cpu_target
from passes.transforms.blocked_layout import (
    BlockedLayoutPass,
    block_constant,
    block_layout,
    channel_block,
    full_width_share,
    transform_cost_share,
)
from tests.support.graph_build import apply_and_compare, build, op_names
from tests.support.references import onnxruntime_run

RNG = np.random.default_rng(0)


def const(b: Builder, *shape: int) -> SSAValue:
    return b.insert(g.ConstantOp((RNG.standard_normal(shape) * 0.3).astype(np.float32))).result


def conv(b: Builder, x: SSAValue, m: int, k: int, **props: object) -> SSAValue:
    c = x.type.get_shape()[1]  # type: ignore[attr-defined]
    group = int(props.get("group", 1))  # type: ignore[call-overload]
    pad = k // 2
    props = {"pads": [pad] * 4, **props}
    return b.insert(g.ConvOp(x, const(b, m, c // group, k, k), const(b, m), **props)).result


def counts(m) -> Counter[str]:
    return Counter(op_names(m))


@pytest.mark.parametrize(
    ("channels", "width", "block"),
    [(16, 16, 16), (32, 16, 16), (24, 16, 8), (40, 16, 8), (12, 16, 4), (3, 16, 3), (58, 16, 0)]
    + [(10, 8, 0), (6, 8, 6), (64, 8, 8)],
)
def test_channel_block(channels: int, width: int, block: int) -> None:
    assert channel_block(channels, width) == block


def test_block_constant_broadcasts_like_the_nchw_one() -> None:
    x = RNG.standard_normal((1, 16, 3, 5)).astype(np.float32)
    xb = x.reshape(1, 2, 8, 3, 5).transpose(0, 1, 3, 4, 2)
    for c64 in (RNG.standard_normal((16, 1, 1)), RNG.standard_normal((1, 1, 5)), 2.0):
        c = np.asarray(c64, np.float32)
        cb = block_constant(c, 4, 8)
        assert cb is not None
        want = (x * c).reshape(1, 2, 8, 3, 5).transpose(0, 1, 3, 4, 2)
        np.testing.assert_array_equal(xb * cb, want)
    assert block_constant(np.ones((12, 1, 1), np.float32), 4, 8) is None


CHAINS = {
    # dense 3x3 with bias, relu, a residual add: transforms at the input and the output only
    "dense+residual": (
        [(1, 16, 9, 9)],
        lambda b, a: [
            b.insert(g.AddOp(b.insert(g.ReluOp(conv(b, a[0], 16, 3))).result, conv(b, a[0], 16, 1)))
        ],
        {"graph.conv_nchwc": 2, "graph.layout_transform": 2},
    ),
    # strides, dilations, asymmetric pads; 3 input channels (the 3c block of an RGB image)
    "window": (
        [(1, 3, 11, 10)],
        lambda b, a: [conv(b, a[0], 16, 3, strides=[2, 2], dilations=[2, 1], pads=[0, 1, 2, 1])],
        {"graph.conv_nchwc": 1, "graph.layout_transform": 2},
    ),
    # depthwise 3x3/2 then 5x5, clip (relu6), a pointwise conv to 24 channels (whose block is
    # 8 even at block 16: the result leaves in its own layout)
    "depthwise": (
        [(1, 32, 12, 12)],
        lambda b, a: [
            conv(
                b,
                b.insert(
                    g.ClipOp(
                        conv(b, conv(b, a[0], 32, 3, group=32, strides=[2, 2]), 32, 5, group=32),
                        min=0.0,
                        max=6.0,
                    )
                ).result,
                24,
                1,
            )
        ],
        {"graph.conv_nchwc": 3, "graph.layout_transform": 2},
    ),
    # squeeze-and-excitation with a hard-swish, a scalar constant and a global pool at the end
    "squeeze-excite": (
        [(1, 16, 7, 7)],
        lambda b, a: [
            b.insert(
                g.GlobalAvgPoolOp(
                    b.insert(
                        g.MulOp(
                            h := conv(b, a[0], 32, 3),
                            b.insert(
                                g.SigmoidOp(
                                    conv(
                                        b,
                                        b.insert(
                                            g.HardSwishOp(
                                                conv(b, b.insert(g.GlobalAvgPoolOp(h)).result, 8, 1)
                                            )
                                        ).result,
                                        32,
                                        1,
                                    )
                                )
                            ).result,
                        )
                    ).result
                )
            )
        ],
        {"graph.conv_nchwc": 3, "graph.layout_transform": 2, "graph.reduce_mean": 2},
    ),
    # grouped convs whose groups hold whole blocks (ResNeXt's, ShuffleNet-v1's): 16 channels
    # per group in, 16 and 32 out
    "grouped": (
        [(1, 16, 8, 8)],
        lambda b, a: [
            conv(
                b,
                b.insert(g.ReluOp(conv(b, conv(b, a[0], 32, 1), 32, 3, group=2))).result,
                64,
                1,
                group=2,
            )
        ],
        {"graph.conv_nchwc": 3, "graph.layout_transform": 2},
    ),
    # pools (ceil mode, padding, count_include_pad) and a channel concat between convs
    "pools+concat": (
        [(1, 8, 10, 10)],
        lambda b, a: [
            conv(
                b,
                b.insert(
                    g.ConcatOp(
                        [
                            b.insert(
                                g.MaxPoolOp(
                                    conv(b, a[0], 16, 3),
                                    kernel=[3, 3],
                                    strides=[2, 2],
                                    ceil_mode=1,
                                )
                            ).result,
                            b.insert(
                                g.AvgPoolOp(
                                    conv(b, a[0], 8, 1),
                                    kernel=[3, 3],
                                    strides=[2, 2],
                                    pads=[1, 1, 0, 0],
                                    count_include_pad=1,
                                )
                            ).result,
                        ],
                        axis=1,
                    )
                ).result,
                16,
                3,
            )
        ],
        # at block 16 the halves are 16c and 8c: the concat runs in NCHW between transforms
        {"graph.conv_nchwc": 3, "graph.layout_transform": {8: 2, 16: 5}, "graph.max_pool": 1},
    ),
}


@pytest.mark.parametrize("block", [8, 16])
@pytest.mark.parametrize("case", list(CHAINS))
def test_blocked_model_matches_nchw(case: str, block: int) -> None:
    shapes, fn, expect = CHAINS[case]
    m = build(shapes, fn)
    apply_and_compare(m, BlockedLayoutPass(block=block), rtol=2e-5)
    got = counts(m)
    assert "graph.conv" not in got
    for name, n in expect.items():
        assert got[name] == (n[block] if isinstance(n, dict) else n), (name, got)


def test_unblockable_convs_stay_nchw() -> None:
    """A grouped conv with 3 output channels per group, 58 channels (no block of 4 or more)
    and run-time weights."""

    def fn(b: Builder, a: list[SSAValue]) -> list[SSAValue]:
        grouped = conv(b, a[0], 12, 3, group=4)
        odd = conv(b, a[0], 58, 1)
        runtime = b.insert(g.ConvOp(a[0], b.insert(g.ReluOp(a[1])).result, None)).result
        return [grouped, odd, runtime]

    m = build([(1, 16, 6, 6), (16, 16, 1, 1)], fn)
    apply_and_compare(m, BlockedLayoutPass(block=16))
    got = counts(m)
    assert got["graph.conv"] == 3 and "graph.layout_transform" not in got


def test_mobile_block_model_matches_onnxruntime() -> None:
    """The whole pipeline (the CPU's block) on an inverted-residual model with SE, checked
    against onnxruntime: the layout must not change what the model computes."""
    from onnx import TensorProto, helper, numpy_helper

    def w(name: str, *shape: int) -> object:
        return numpy_helper.from_array((RNG.standard_normal(shape) * 0.2).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Clip", ["a", "lo", "hi"], ["a6"]),
        helper.make_node("Conv", ["a6", "w1"], ["e"]),
        helper.make_node("Relu", ["e"], ["er"]),
        helper.make_node("Conv", ["er", "wd"], ["d"], pads=[1, 1, 1, 1], group=96),
        helper.make_node("GlobalAveragePool", ["d"], ["p"]),
        helper.make_node("Conv", ["p", "ws"], ["s"]),
        helper.make_node("Sigmoid", ["s"], ["sg"]),
        helper.make_node("Mul", ["d", "sg"], ["ds"]),
        helper.make_node("Conv", ["ds", "w2"], ["y0"]),
        helper.make_node("Add", ["y0", "a6"], ["y"]),
    ]
    inits = [
        w("w0", 24, 3, 3, 3),
        w("w1", 96, 24, 1, 1),
        w("wd", 96, 1, 3, 3),
        w("ws", 96, 96, 1, 1),
        w("w2", 24, 96, 1, 1),
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6.0, np.float32), "hi"),
    ]
    graph = helper.make_graph(
        nodes,
        "inverted_residual",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 30, 30])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = random_inputs(model)
    compiled = compile_model(model)
    (ref,) = onnxruntime_run(model, feeds)
    np.testing.assert_allclose(compiled.run(feeds)["y"], ref, rtol=1e-4, atol=1e-4)


def test_default_blocks_only_where_whole_vectors_do_most_of_the_work() -> None:
    """With no block given, a model whose convs would mostly run in blocks narrower than the
    CPU's vector (RegNet's 104 channels: 8 of 16 lanes) stays NCHW; one in whole vectors is
    blocked. Channel counts are derived from this CPU's width."""
    w = cpu_target().width
    narrow = (w // 2) * 3  # its block is half a vector

    def net(channels: int):
        return build(
            [(1, 3, 12, 12)],
            lambda b, a: [conv(b, conv(b, conv(b, a[0], channels, 3), channels, 3), channels, 1)],
        )

    m = net(narrow)
    BlockedLayoutPass().apply(Context(), m)
    assert "graph.conv_nchwc" not in counts(m) and counts(m)["graph.conv"] == 3
    m = net(2 * w)
    BlockedLayoutPass().apply(Context(), m)
    assert counts(m)["graph.conv_nchwc"] == 3
    # a lone depthwise conv: entering and leaving the layout costs more than its 9 MACs/pixel
    lone = build([(1, 2 * w, 8, 8)], lambda b, a: [conv(b, a[0], 2 * w, 3, group=2 * w)])
    BlockedLayoutPass().apply(Context(), lone)
    assert counts(lone)["graph.conv"] == 1 and "graph.layout_transform" not in counts(lone)


def test_transform_cost_share() -> None:
    cpu = cpu_target("znver5")  # 16 lanes x 2 FMA units
    m = build([(1, 16, 6, 6)], lambda b, a: [conv(b, a[0], 16, 3, group=16)])
    block_layout(m, 16)
    # two transforms of 576 elements against 576 x 9 multiply-adds
    assert transform_cost_share(m, cpu) == pytest.approx(2 * 576 * 32 / (576 * 9))


def test_full_width_share() -> None:
    w = 16
    m = build([(1, 16, 6, 6)], lambda b, a: [conv(b, conv(b, a[0], 16, 3), 24, 3)])
    block_layout(m, w)
    # 16 -> 16 (whole vectors) and 16 -> 24 (8c out): 16 * 16 vs 24 * 16 multiply-adds per pixel
    assert full_width_share(m, w) == pytest.approx(256 / (256 + 384))
