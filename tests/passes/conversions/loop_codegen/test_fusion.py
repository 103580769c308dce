"""passes/conversions/loop_codegen/fusion.py: which initializer and elementwise consumers run
inside a reduction's loop nest, and when a body can be vectorized."""

from __future__ import annotations

from xdsl.dialects import arith

from dialects.sched import Schedule
from passes.conversions.loop_codegen.fusion import find_fusion, has_tiled_reduction
from passes.schedule.rules import body_vectorizes
from tests.support.linalg_to_loops_kernels import fused_src, generics, matmul_src, parse


def test_private_intermediate_fuses_initializer_and_epilogue() -> None:
    init, matmul, epilogue = generics(parse(fused_src(6, 17, 40, private=True)))
    fusion = find_fusion(matmul, vectorized=True)
    assert fusion is not None
    assert fusion.prologue is init
    assert fusion.epilogues == [epilogue]
    assert fusion.chain_input == {epilogue: 0}  # the epilogue reads T as its first input


def test_escaping_output_keeps_its_epilogue_in_memory() -> None:
    init, matmul, _ = generics(parse(fused_src(6, 17, 40, private=False)))
    fusion = find_fusion(matmul, vectorized=True)
    assert fusion is not None and fusion.prologue is init and fusion.epilogues == []


def test_elementwise_kernels_fuse_nothing() -> None:
    _, _, epilogue = generics(parse(fused_src(6, 17, 40, private=True)))
    assert find_fusion(epilogue, vectorized=False) is None


def test_tiled_reduction_is_detected() -> None:
    (matmul,) = generics(parse(matmul_src(8, 16, 8)))
    untiled = Schedule((4, 4, 0), (0, 1, 2), (1, 1, 1))
    assert not has_tiled_reduction(untiled, matmul)
    assert has_tiled_reduction(Schedule((0, 0, 4), (0, 1, 2), (1, 1, 1)), matmul)
    assert not has_tiled_reduction(Schedule((0, 0, 16), (0, 1, 2), (1, 1, 1)), matmul)


def test_lane_comparisons_are_not_vectorizable() -> None:
    _, _, epilogue = generics(parse(fused_src(2, 2, 2, private=True)))
    assert body_vectorizes(epilogue.body.block)
    block = epilogue.body.block
    add = next(op for op in block.ops if isinstance(op, arith.AddfOp))
    cmp = arith.CmpfOp(add.result, add.result, "olt")
    block.insert_op_after(cmp, add)
    assert not body_vectorizes(block)
