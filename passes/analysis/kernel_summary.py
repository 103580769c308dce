"""A kernel function in one line: its anchor generic, a readable description and its FLOPs.

The tuner names its tasks with these, and the kernel profiler names its rows with them, so a
kernel reads the same ("conv 1x64x56x56 k3x3") in a tuning log and in a profile.
"""

from __future__ import annotations

import math

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.linalg import ops as linalg

from dialects.attributes import WINOGRAD_ATTR
from passes.analysis.kernel_access import KernelInfo, analyze_kernel


def kernel_generics(fn: func.FuncOp) -> list[linalg.GenericOp]:
    """The kernel's linalg.generic ops in order: what `op=N` of the schedule passes counts."""
    return [op for op in fn.walk() if isinstance(op, linalg.GenericOp)]


def anchor_index(generics: list[linalg.GenericOp]) -> int:
    """The first generic with a reduction iterator, else the one with the most iterations."""
    infos = [analyze_kernel(g) for g in generics]
    for i, info in enumerate(infos):
        if info.reduction_loops:
            return i
    return max(range(len(infos)), key=lambda i: (math.prod(infos[i].extents), -i))


def _window_loops(info: KernelInfo) -> list[int]:
    """The reduction loops that slide a window (an input index adds them to an output loop:
    oh * s + kh), or all of them when none does; a blocked conv's channel loops are not."""
    par = set(info.parallel_loops)
    window = [
        d
        for d in info.reduction_loops
        if any(
            row[d] and any(row[p] for p in par)
            for a in info.accesses
            if not a.is_output
            for row in a.coefs
        )
    ]
    return window or info.reduction_loops


def describe_kernel(info: KernelInfo) -> str:
    """What the anchor computes and on what shape: `conv 1x64x56x56 k3x3`, `elementwise 1x10`."""
    body = [op.name for op in info.op.body.block.ops]
    out_shape = "x".join(str(s) for s in info.output.shape) or "scalar"
    reds = info.reduction_loops
    if not reds:
        return f"elementwise {out_shape}"
    half = info.op.attributes.get(WINOGRAD_ATTR)
    if isinstance(half, StringAttr):  # a pass of a Winograd transform: its tile's points
        points = info.extents[reds[0]]
        return f"winograd-{'in' if half.data == 'input' else 'out'} {out_shape} a{points}"
    if len(reds) >= 2 and ("arith.maximumf" in body or "arith.minimumf" in body):
        # a blocked pool's window has a size-1 dim for the block
        window = "x".join(str(info.extents[d]) for d in reds if info.extents[d] > 1)
        return f"pool {out_shape} k{window or 1}"
    if "arith.mulf" in body and info.accesses[1:2] and not info.accesses[1].is_output:
        if len(reds) == 1:
            k = info.extents[reds[0]]
            return f"matmul {out_shape} k{k}"
        window = "x".join(str(info.extents[d]) for d in _window_loops(info)[-2:])
        kind = "conv" if len(reds) >= 3 else "dwconv"
        return f"{kind} {out_shape} k{window}"
    return f"reduce {out_shape} r" + "x".join(str(info.extents[d]) for d in reds)


def kernel_flops(info: KernelInfo) -> float:
    """2 per multiply-add of a reduction (its iteration count otherwise): the GFLOP/s basis."""
    iterations = float(math.prod(info.extents))
    return 2.0 * iterations if info.reduction_loops else iterations


def summarize_kernel(fn: func.FuncOp) -> tuple[str, float] | None:
    """(description, FLOPs per call) of a kernel's anchor (`fill` for a kernel of fills only),
    or None if it holds no linalg op."""
    generics = kernel_generics(fn)
    if not generics:
        fills = [op for op in fn.walk() if isinstance(op, linalg.FillOp)]
        return ("fill", 0.0) if fills else None
    info = analyze_kernel(generics[anchor_index(generics)])
    return describe_kernel(info), kernel_flops(info)
