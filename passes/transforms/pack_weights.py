"""`pack-weights`: a matmul's (or a plain Gemm's) constant B [K, N] larger than the L2 is stored
at compile time as panels [N/P, K, P] of P columns each, P the width of a matmul's register
tile, and the product taken panel by panel: a batched matmul of A's rows [M, K] against the
panels, [N/P, M, P], put back in row order (a transpose when M > 1, a reshape only when M = 1).

Why: packed, each panel is one contiguous run of memory that a register tile sums down in one
pass, where B as [K, N] is read in short runs of a row each, a row stride apart. A product with
few rows (a decode step of a language model, one token per sequence) reads each weight once or
a few times and is bound by streaming B: the hardware prefetcher follows a panel at full speed.
With many rows the panel also stays in the L1/L2 while every row passes over it, the packing
that onnxruntime and BLAS libraries do at run time, done here once. Zen 4, one thread, 8
chained 768 x 3072 / 3072 x 768 products (75 MB of weights; relu between them), ms per chain,
`python tests/bench/bench_pack_weights.py`:

    rows M   as [K, N]   packed   onnxruntime
        1       4.55       2.84      4.57
        3       8.77       4.36      4.90
       16      12.30       7.82      9.05
       48      24.43      19.44     20.68
      128      50.11      48.03     49.47

Decode steps of GPT-2-, Llama- and Qwen2-shaped models: the README's table
(`python tests/bench/bench_decode.py`). Only a product whose working set (B, A's rows and the
result) outgrows this CPU's L2 is packed: where all three stay in the L2, B is read at cache
speed either way, and the product of a small model then loses more to the transpose back and to
the panel's narrower register tile than it gains (seen on DeiT-tiny at 64x64, whose B are
192 x 768: `ziggurat bench MODEL --profile` showed its products packed at 46 GFLOP/s, unpacked
at 74-88). B alone is not the measure: T5-small's 512 x 512 projections (1 MB, the size of a
Zen 4 L2) over 128 tokens have 0.5 MB of A and result beside them, and unpacked they ran at
85-90 GFLOP/s against 100-110 for its packed products (`python tests/bench/transformer_set.py
DIR && ziggurat bench DIR/t5.onnx --profile 0`: 0.77 -> 0.62 ms a call; the whole encoder
0.99x/0.98x -> 0.98x/0.96x onnxruntime in two alternating rounds). The transpose costs one pass
over the product
(M x N elements, against M x N x K multiply-adds). Runs after pad-weights, which makes N a
multiple of the vector width where that pays; its slice back to N is folded into the transposes
back (the whole panels, then the part of the last, concatenated), which bufferize writes straight
into the result: GPT-2's LM head went from a 14.0 ms transpose + 4.3 ms slice to one 6.1 ms
transpose (with the arena kept between calls; Intel Emerald Rapids, `python
tests/bench/lm_head.py LM.onnx && ziggurat bench LM.onnx --profile 5`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DYNAMIC_INDEX, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from dialects import graph as g
from passes.schedule.cpu_target import cpu_target
from passes.schedule.default import REDUCTION_VECTORS
from passes.schedule.options import MAX_OPTION, check_option, check_width_option
from passes.transforms.constant_weights import constant_weight, relayout_weight
from passes.transforms.fold_constants import prop

MIN_DEPTH = 64
"""K at least this: a shallower panel is too short a run to gain, and the transpose back would
rival the product."""
MIN_PANELS = 2
"""N at least this many panels: a single panel is the unpacked layout already."""


def packed_product(
    a: SSAValue, w: np.ndarray, panel: int, shape: Sequence[int], keep: int | None = None
) -> list[Operation]:
    """The ops computing a @ w (w [K, N] with whole panels) from w stored as panels, the last
    one giving the product in `shape` (a's leading dims, N; or `keep` < N, the first `keep`
    columns, when shape's last dim is `keep`)."""
    k, n = w.shape
    rows = math.prod(shape[:-1])
    ops: list[Operation] = []
    if _shape(a) != [rows, k]:
        ops.append(g.ReshapeOp(a, [rows, k]))
        a = ops[-1].results[0]
    panels = w.reshape(k, n // panel, panel).transpose(1, 0, 2)
    ops.append(g.ConstantOp(np.ascontiguousarray(panels)))
    ops.append(g.MatmulOp(a, ops[-1].results[0]))  # [N/P, M, P]
    if keep is not None:
        ops += _kept_columns(ops[-1].results[0], rows, panel, keep)
    elif rows > 1:
        ops.append(g.TransposeOp(ops[-1].results[0], perm=[1, 0, 2]))  # [M, N/P, P]
    ops.append(g.ReshapeOp(ops[-1].results[0], list(shape)))
    return ops


def _kept_columns(product: SSAValue, rows: int, panel: int, keep: int) -> list[Operation]:
    """The first `keep` columns of the panels' product [N/P, M, P] in row order, [M, keep]: the
    whole panels transposed back, the part of the next one likewise, then concatenated (no
    padding column is moved; bufferize has each transpose write its columns of the result)."""
    full, rest = divmod(keep, panel)
    ops: list[Operation] = []
    parts: list[SSAValue] = []
    for first, count, width in ((0, full, panel), (full, 1 if rest else 0, rest)):
        if not count:
            continue
        ops.append(
            g.SliceOp(
                product,
                starts=[first, 0, 0],
                ends=[first + count, rows, width],
                steps=[1, 1, 1],
            )
        )
        ops.append(g.TransposeOp(ops[-1].results[0], perm=[1, 0, 2]))  # [M, count, width]
        ops.append(g.ReshapeOp(ops[-1].results[0], [rows, count * width]))
        parts.append(ops[-1].results[0])
    if len(parts) > 1:
        ops.append(g.ConcatOp(parts, axis=1))
    return ops


def _trim(op: Operation) -> tuple[g.SliceOp, int] | None:
    """The slice keeping the first columns of `op`'s product (pad-weights' trim back to N) and
    how many, when it is the product's only user."""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or not isinstance(user := uses[0].operation, g.SliceOp):
        return None
    shape = _shape(op.results[0])
    starts, ends, steps = prop(user, "starts"), prop(user, "ends"), prop(user, "steps")
    rank = len(shape)
    if list(starts) != [0] * rank or list(steps) != [1] * rank or list(ends[:-1]) != shape[:-1]:
        return None
    return (user, ends[-1]) if 0 < ends[-1] < shape[-1] else None


class PackWeight(RewritePattern):
    """matmul(a [.., K], constant B [K, N]) -> reshape(transpose(matmul(a as [M, K], B as
    [N/P, K, P]), [1, 0, 2]), [.., N]) (no transpose when M = 1); a Gemm with alpha = beta = 1
    and neither operand transposed (how exporters write a Linear layer, once transpose-weights
    has stored B untransposed) the same, plus its C."""

    def __init__(self, panel: int, min_bytes: int) -> None:
        self.panel = panel
        self.min_bytes = min_bytes

    def _packs(self, w: np.ndarray, rows: int) -> bool:
        k, n = w.shape
        p = self.panel
        shaped = n % p == 0 and n >= MIN_PANELS * p and k >= MIN_DEPTH
        return shaped and working_set(w, rows) > self.min_bytes

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, g.MatmulOp | g.GemmOp):
            return
        w = constant_weight(op)
        a_shape = _shape(op.a)
        if w is None or not a_shape or DYNAMIC_INDEX in a_shape:  # run-time rows: no plan yet
            return
        if not self._packs(w, math.prod(a_shape[:-1])):
            return
        if isinstance(op, g.GemmOp):
            plain = [prop(op, "trans_a"), prop(op, "trans_b"), prop(op, "alpha"), prop(op, "beta")]
            if plain != [0, 0, 1.0, 1.0]:
                return
        trim = _trim(op) if isinstance(op, g.MatmulOp) else None
        if trim is not None and math.prod(_shape(op.result)[:-1]) > 1:
            # pad-weights' product trimmed back to N: the transposes back keep N columns only
            user, keep = trim
            ops = packed_product(op.a, w, self.panel, _shape(user.result), keep)
            weight = next(o for o in ops if isinstance(o, g.ConstantOp))
            relayout_weight(rewriter, op, weight, ops, replaced=user)
            return
        ops = packed_product(op.a, w, self.panel, _shape(op.result))
        weight = next(o for o in ops if isinstance(o, g.ConstantOp))
        if isinstance(op, g.GemmOp) and op.c is not None:
            ops.append(g.AddOp(ops[-1].results[0], op.c))
        relayout_weight(rewriter, op, weight, ops)


def working_set(w: np.ndarray, rows: int) -> int:
    """Bytes a product with constant B = `w` [K, N] over `rows` rows of A touches: B, A's
    rows x K and the result's rows x N (in B's element size)."""
    k, n = w.shape
    return w.nbytes + rows * (k + n) * w.itemsize


def _shape(v: SSAValue) -> list[int]:
    return list(v.type.get_shape())  # type: ignore[attr-defined]


@dataclass(frozen=True)
class PackWeightsPass(ModulePass):
    name = "pack-weights"

    width: int | None = None
    """Vector width in f32 lanes (a panel is REDUCTION_VECTORS of them); omitted: this CPU's
    widest."""
    min_bytes: int | None = None
    """A product whose working set (B, A's rows and the result, in bytes) is at most this
    stays as it is; omitted: the size of this CPU's L2."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_width_option(self.name, self.width)
        if self.min_bytes is not None:
            check_option(self.name, "min_bytes", self.min_bytes, 0, MAX_OPTION)
        cpu = cpu_target()
        panel = REDUCTION_VECTORS * (self.width or cpu.width)
        min_bytes = cpu.l2.size if self.min_bytes is None else self.min_bytes
        pattern = PackWeight(panel, min_bytes)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
