"""passes/conversions/loop_codegen/body.py: a linalg body inlined on registers."""

from __future__ import annotations

from xdsl.dialects import arith

from passes.conversions.loop_codegen.body import fma_multiplies
from tests.support.linalg_to_loops_kernels import generics, matmul_src, parse


def test_mac_body_folds_its_multiply() -> None:
    (matmul,) = generics(parse(matmul_src(2, 2, 2)))
    (mul,) = [op for op in matmul.body.block.ops if isinstance(op, arith.MulfOp)]
    assert fma_multiplies(matmul.body.block) == {mul}
