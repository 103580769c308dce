"""DFT (opsets 17 and 20), STFT (opset 17) and the window functions, composed of graph ops.

A discrete Fourier transform along one axis, with its padding or truncation to dft_length, its
one-sided output and its inverse (including the real inverse of a one-sided spectrum), is a
real-linear map of the (axis, real/imaginary) pairs, all static: its matrix is computed at
import time by applying onnx's reference transform (numpy.fft) to the unit basis, and the
operator becomes one matmul with the axis moved last. STFT cuts frames with one static gather,
weights them by the window and transforms them the same way. HannWindow, HammingWindow and
BlackmanWindow fold at import time when their size is known; their output's length is their
input's value, so a run-time size cannot be compiled.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx.reference.ops.op_dft import _cfft, _cifft
from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from compiler.frontend.importer import Importer, Value, attrs, converter, element_type_of
from dialects import graph as g

MAX_MATRIX_ELEMENTS = 2**24
"""The most elements of a transform's dense matrix: (input length x 1|2) x (output length x 2)."""


def transform_matrix(
    imp: Importer, length: int, comps: int, n: int, inverse: bool, onesided: bool
) -> np.ndarray:
    """The (length * comps, out_length * out_comps) float32 matrix of a DFT along one axis of
    `length` elements with `comps` (1: real, 2: complex) components, as the reference computes
    it: row j is the transform of the j-th unit input."""
    rows = length * comps
    basis = np.eye(rows, dtype=np.float64).reshape(rows, length, comps)
    out_len = n // 2 + 1 if onesided and not inverse else n
    out_comps = 1 if inverse and onesided else 2
    imp.check_elements([rows, out_len * out_comps], "the DFT matrix", MAX_MATRIX_ELEMENTS)
    if inverse:
        y = _cifft(basis, n, axis=1, onesided=onesided)
    else:
        y = _cfft(basis, n, axis=1, onesided=onesided, normalize=False)
    return y.reshape(rows, -1).astype(np.float32)


def along_axis(
    imp: Importer, x: SSAValue, axis: int, matrix: np.ndarray, out_comps: int
) -> SSAValue:
    """Apply a transform matrix to x's (axis, last) pair of dims."""
    s = imp.shape_of(x)
    r = len(s)
    rest = [d for d in range(r - 1) if d != axis]
    perm = [*rest, axis, r - 1]
    moved = imp.op(g.TransposeOp(x, perm=perm)) if perm != list(range(r)) else x
    lead = [s[d] for d in rest]
    flat = imp.op(g.ReshapeOp(moved, [*lead, s[axis] * s[-1]]))
    y = imp.op(g.MatmulOp(flat, imp.op(g.ConstantOp(matrix))))
    y = imp.op(g.ReshapeOp(y, [*lead, matrix.shape[1] // out_comps, out_comps]))
    if perm == list(range(r)):
        return y
    return imp.op(g.TransposeOp(y, perm=[int(i) for i in np.argsort(perm)]))


@converter("DFT")
def convert_dft(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    inverse, onesided = int(a.get("inverse", 0)), int(a.get("onesided", 0))
    if inverse not in (0, 1) or onesided not in (0, 1):
        raise imp.error(f"inverse and onesided must be 0 or 1, got {inverse} and {onesided}")
    x = imp.value(node.input[0])
    s = imp.shape_of(x)
    r = len(s)
    if r < 2 or s[-1] not in (1, 2):
        raise imp.error(
            f"input must end in a dim of 1 (real) or 2 (complex) after the signal dims, got "
            f"shape {list(s)}"
        )
    if element_type_of(x) != f32:
        raise imp.error(f"input must be float32, got {element_type_of(x)}")
    if imp.opset >= 20:
        axis = int(imp.scalar_input(node, 2, "axis")) if imp.has(node, 2) else -2
    else:
        axis = int(a.get("axis", 1))
    if not -r <= axis <= r - 1 or axis % r == r - 1:
        raise imp.error(
            f"axis {axis} must name a signal dim, in [{-r}, {-2}] or [0, {r - 2}] for an input "
            f"of rank {r}"
        )
    axis %= r
    if imp.has(node, 1):
        n = int(imp.scalar_input(node, 1, "dft_length"))
        if n < 1:
            raise imp.error(f"dft_length must be positive, got {n}")
    else:
        n = 2 * (s[axis] - 1) if inverse and onesided else s[axis]
        if n < 1:
            raise imp.error(f"the inverse one-sided transform of {s[axis]} bins has no length")
    m = transform_matrix(imp, s[axis], s[-1], n, bool(inverse), bool(onesided))
    return [along_axis(imp, x, axis, m, 1 if inverse and onesided else 2)]


@converter("STFT")
def convert_stft(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Frames (batch, frames, frame_length, comps) gathered at static positions, weighted by
    the window, then transformed along the frame axis."""
    onesided = int(attrs(node).get("onesided", 1))
    if onesided not in (0, 1):
        raise imp.error(f"onesided must be 0 or 1, got {onesided}")
    x = imp.value(node.input[0])
    s = imp.shape_of(x)
    if len(s) != 3 or s[-1] not in (1, 2):
        raise imp.error(f"signal must have shape [batch, length, 1 or 2], got {list(s)}")
    if element_type_of(x) != f32:
        raise imp.error(f"signal must be float32, got {element_type_of(x)}")
    step = int(imp.scalar_input(node, 1, "frame_step"))
    if step < 1:
        raise imp.error(f"frame_step must be positive, got {step}")
    window = imp.value(node.input[2]) if imp.has(node, 2) else None
    win_len = imp.shape_of(window)[0] if window is not None else None
    if window is not None and len(imp.shape_of(window)) != 1:
        raise imp.error(f"window must be 1-D, got shape {list(imp.shape_of(window))}")
    if imp.has(node, 3):
        frame = int(imp.scalar_input(node, 3, "frame_length"))
        if win_len is not None and win_len != frame:
            raise imp.error(f"frame_length {frame} differs from the window's length {win_len}")
    else:
        frame = win_len if win_len is not None else s[1]
    if not 1 <= frame <= s[1]:
        raise imp.error(f"frame_length {frame} must be in [1, {s[1]}] (the signal's length)")
    frames = 1 + (s[1] - frame) // step
    idx = (np.arange(frames)[:, None] * step + np.arange(frame)[None, :]).astype(np.int64)
    cut = imp.op(g.GatherOp(x, imp.op(g.ConstantOp(idx)), axis=1))  # (B, F, L, C)
    if window is not None:
        if element_type_of(window) != f32:
            raise imp.error(f"window must be float32, got {element_type_of(window)}")
        cut = imp.op(g.MulOp(cut, imp.op(g.ReshapeOp(window, [frame, 1]))))
    m = transform_matrix(imp, frame, s[-1], frame, False, bool(onesided))
    return [along_axis(imp, cut, 2, m, 2)]


@converter("HannWindow", "HammingWindow", "BlackmanWindow")
def convert_window(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Only reached with a run-time size (a constant one folds): the output's length would be
    a run-time value."""
    imp.const_input(node, 0, "size")
    raise imp.error("unreachable: a constant size folds")  # pragma: no cover
