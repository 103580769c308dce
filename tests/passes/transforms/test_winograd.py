"""winograd: stride-1 3x3 blocked convs become transform -> matmul -> transform, and the
compiled result is the conv's (float64 numpy reference); the transforms are exact; the default
keeps the direct conv where the transforms would cost more than they save."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import DiagnosticException

from dialects import graph as g
from dialects.winograd import alpha, matrices, transform_weights
from passes.schedule.cpu_target import cpu_target
from passes.transforms.blocked_layout import BlockedLayoutPass
from passes.transforms.winograd import (
    WinogradPass,
    choose_tile,
    reuse_efficiency,
    winograd_macs,
)
from tests.support.graph_build import build, op_names, run_compiled

RNG = np.random.default_rng(0)


def reference_conv(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, pads: list[int]
) -> np.ndarray:
    """Direct stride-1 correlation in float64: (N, C, H, W) * (K, C, kh, kw)."""
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    kh, kw = w.shape[2:]
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    y = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,kc->nkhw", xp[:, :, i : i + oh, j : j + ow], w[:, :, i, j])
    return y + (0.0 if b is None else b[None, :, None, None])


@pytest.mark.parametrize("m", [2, 4])
def test_transforms_compute_a_3x3_correlation(m: int) -> None:
    bt, gm, at = matrices(m)
    a = alpha(m)
    d, w = RNG.standard_normal((a, a)), RNG.standard_normal((3, 3))
    y = at @ ((gm @ w @ gm.T) * (bt @ d @ bt.T)) @ at.T
    want = [[np.sum(d[i : i + 3, j : j + 3] * w) for j in range(m)] for i in range(m)]
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


def test_transform_weights_layout() -> None:
    w = RNG.standard_normal((5, 3, 3, 3)).astype(np.float32)
    u = transform_weights(w, 4)
    _, gm, _ = matrices(4)
    assert u.shape == (36, 3, 5) and u.dtype == np.float32
    np.testing.assert_allclose(u[2 * 6 + 5, 1, 4], (gm @ w[4, 1] @ gm.T)[2, 5], rtol=1e-6)


def conv_model(
    c: int, k: int, h: int, w: int, pads: list[int], bias: bool, epilogue: bool
) -> tuple[object, np.ndarray, np.ndarray | None]:
    wt = (RNG.standard_normal((k, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    bs = RNG.standard_normal(k).astype(np.float32) if bias else None

    def body(b: Builder, a: list[SSAValue]) -> list[SSAValue]:
        wv = b.insert(g.ConstantOp(wt)).result
        bv = b.insert(g.ConstantOp(bs)).result if bs is not None else None
        y = b.insert(g.ConvOp(a[0], wv, bv, pads=pads)).result
        if epilogue:  # relu, then a residual add of the input: both fuse into the output half
            y = b.insert(g.AddOp(b.insert(g.ReluOp(y)).result, a[0])).result
        return [y]

    return build([(1, c, h, w)], body), wt, bs


CASES = {
    # ResNet's 56x56 block: F(4x4), bias, relu and residual fused into the output half
    "resnet-block": (16, 16, 8, 12, [1, 1, 1, 1], True, True, 16),
    # no padding (output 6x10: F(2x2) only), no bias
    "valid": (8, 16, 8, 12, [0, 0, 0, 0], False, False, 8),
    # asymmetric pads, 24 channels (blocks of 8), more output than input channels; an 8x8
    # output, cut from 12x12 by F(4x4) (3x3 tiles of 4) ...
    "asymmetric": (24, 40, 9, 7, [2, 0, 1, 3], True, False, 8),
    # ... and 7x7 (ResNet's last stage) cut from 8x8 by both, with the fused epilogue
    "cut": (16, 16, 7, 7, [1, 1, 1, 1], True, True, 16),
}


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("case", list(CASES))
def test_winograd_conv_matches_direct(case: str, tile: int) -> None:
    c, k, h, w, pads, bias, epilogue, block = CASES[case]
    m, wt, bs = conv_model(c, k, h, w, pads, bias, epilogue)
    BlockedLayoutPass(block=block).apply(Context(), m)
    WinogradPass(tile=tile).apply(Context(), m)
    m.verify()
    names = Counter(op_names(m))
    assert names["graph.winograd_input"] == names["graph.winograd_output"] == 1
    assert "graph.conv_nchwc" not in names
    x = RNG.standard_normal((1, c, h, w)).astype(np.float32)
    want = reference_conv(x, wt, bs, pads)
    if epilogue:
        want = np.maximum(want, 0.0) + x
    (got,) = run_compiled(m, [x])
    # F(4x4)'s transforms scale by up to 8 and 1/24: a few float32 roundings of the largest
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * max(1.0, np.abs(want).max()))


def test_cut_tiles_pad_the_input_to_whole_tiles() -> None:
    m, _, _ = conv_model(16, 16, 7, 5, [1, 1, 1, 1], False, False)
    BlockedLayoutPass(block=16).apply(Context(), m)
    WinogradPass(tile=4).apply(Context(), m)
    (wi,) = [op for op in m.walk() if isinstance(op, g.WinogradInputOp)]
    (wo,) = [op for op in m.walk() if isinstance(op, g.WinogradOutputOp)]
    # 7x5 output in 4x4 tiles: 2x2 tiles of 8x8, so 1 more row and 3 more columns of padding
    assert list(wi.properties["pads"].get_values()) == [1, 1, 2, 4]  # type: ignore[attr-defined]
    assert wi.result.type.get_shape() == (36, 4, 16)  # type: ignore[attr-defined]
    assert wo.result.type.get_shape() == (1, 1, 7, 5, 16)  # type: ignore[attr-defined]


def test_strided_dilated_grouped_and_5x5_convs_stay_direct() -> None:
    def body(b: Builder, a: list[SSAValue]) -> list[SSAValue]:
        def conv(k: int, group: int = 1, **props: object) -> SSAValue:
            wv = b.insert(g.ConstantOp(np.ones((32, 32 // group, k, k), np.float32))).result
            return b.insert(g.ConvOp(a[0], wv, None, group=group, **props)).result

        return [
            conv(3, strides=[2, 2], pads=[1, 1, 1, 1]),
            conv(3, dilations=[2, 2], pads=[2, 2, 2, 2]),
            conv(3, group=2, pads=[1, 1, 1, 1]),
            conv(5, pads=[2, 2, 2, 2]),
        ]

    m = build([(1, 32, 8, 8)], body)
    BlockedLayoutPass(block=16).apply(Context(), m)
    WinogradPass(tile=4).apply(Context(), m)
    assert Counter(op_names(m))["graph.conv_nchwc"] == 4


def test_tile_minus_one_does_nothing_and_bad_tiles_are_refused() -> None:
    m, _, _ = conv_model(16, 16, 8, 8, [1, 1, 1, 1], True, False)
    BlockedLayoutPass(block=16).apply(Context(), m)
    before = str(m)
    WinogradPass(tile=-1).apply(Context(), m)
    assert str(m) == before
    # a diagnostic naming the option (ziggurat-opt's `error:` line), not an internal error
    for tile in (3, -2, 2**31):
        with pytest.raises(
            DiagnosticException,
            match=rf"^winograd: option 'tile': {tile} is out of range; allowed: -1 \(none\), 0 ",
        ):
            WinogradPass(tile=tile).apply(Context(), m)


def test_default_rule_weighs_transforms_against_products() -> None:
    # few channels: the transforms outweigh the saved products
    assert winograd_macs(4, 8, 8) / 16 > 9 * 8 * 8
    assert winograd_macs(4, 64, 64) / 16 < 9 * 64 * 64 / 1.5
    cpu = cpu_target("znver5")

    def chosen(c: int, size: int) -> int:
        m, _, _ = conv_model(c, c, size, size, [1, 1, 1, 1], False, False)
        BlockedLayoutPass(block=16 if c % 16 == 0 else 8).apply(Context(), m)
        conv = next(op for op in m.walk() if isinstance(op, g.ConvNchwcOp))
        return choose_tile(conv, cpu)

    assert chosen(8, 16) == 0
    assert chosen(64, 16) == 4
    # a 14x14 output takes F(2x2): F(4x4) would compute 16x16 for it
    assert chosen(256, 14) == 2
    # few tiles per product leave the weight stream the bound: an 8x8 image has 4 F(4x4)
    # tiles (F(2x2): 16), a 4x4 image 4 F(2x2) ones
    assert chosen(64, 8) == 2
    assert chosen(256, 4) == 0
    # ResNet's 7x7 layer: cut F(2x2) tiles (8x8 computed) beat a direct conv whose weights
    # serve only 49 pixels
    assert chosen(512, 7) == 2
    assert reuse_efficiency(16, cpu) == 0.5
