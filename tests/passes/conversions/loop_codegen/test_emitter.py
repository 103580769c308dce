"""passes/conversions/loop_codegen/emitter.py: the shared IR-building state (hoisted constants,
scoped reuse, index arithmetic, scf.for)."""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float32Type, IndexType, VectorType
from xdsl.ir import SSAValue

from passes.conversions.loop_codegen.emitter import (
    Emitter,
    pos_key,
    replaced,
    shifted,
)
from tests.support.linalg_to_loops_kernels import generics, matmul_src, parse


def make_emitter() -> Emitter:
    kernel = generics(parse(matmul_src(4, 4, 4)))[0]
    return Emitter(kernel)


def test_positions_are_copied_not_mutated() -> None:
    start = [(None, 0), (None, 3)]
    moved = replaced(start, 1, shifted(start[1], 2))
    assert moved == [(None, 0), (None, 5)] and start == [(None, 0), (None, 3)]
    assert pos_key(moved, 1) == (id(None), 5)


def test_constants_are_hoisted_once_before_the_nest() -> None:
    emit = make_emitter()
    two = emit.constant(2.0, Float32Type())
    assert emit.constant(2.0, Float32Type()) is two
    assert emit.index(0) is emit.anchor.result  # the anchor is index 0 itself
    splat = emit.constant(1.0, VectorType(Float32Type(), [8]))
    block = emit.anchor.parent_block()
    assert block is not None
    ops = list(block.ops)
    assert ops.index(two.owner) < ops.index(splat.owner) < ops.index(emit.anchor)  # type: ignore[arg-type]


def test_index_arithmetic_is_reused_in_nested_blocks_only() -> None:
    emit = make_emitter()
    lower, upper, five = emit.index(0), emit.index(8), emit.index(5)
    seen: dict[str, SSAValue] = {}

    def body(iv: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        seen["outer"] = emit.linear_index([2, 1], 3, [(iv, 1), (None, 4)])  # 2*(iv+1) + 4 + 3
        seen["five_plus_one"] = emit.position((five, 1))

        def inner(_iv: SSAValue, _args: list[SSAValue]) -> list[SSAValue]:
            seen["inner"] = emit.linear_index([2, 1], 3, [(iv, 1), (None, 4)])
            return []

        emit.for_loop(lower, upper, 1, [], inner)
        return []

    with emit.scope():
        emit.for_loop(lower, upper, 2, [], body)
        assert seen["inner"] is seen["outer"]  # built in the outer body, dominates the inner one
        # the loop body's scope is gone: what it built does not dominate code after the loop
        after = emit.position((five, 1))
        assert after is not seen["five_plus_one"] and isinstance(after.owner, arith.AddiOp)
        assert emit.position((five, 1)) is after
    loop = seen["outer"].owner.parent_op()
    assert isinstance(loop, scf.ForOp)
    assert loop.step.owner is emit.index(2).owner


def test_static_positions_fold_to_constants() -> None:
    emit = make_emitter()
    with emit.scope():
        assert emit.position((None, 7)) is emit.index(7)
        assert emit.linear_index([3, 0], 1, [(None, 2), (None, 9)]) is emit.index(7)
        assert emit.index(7).type == IndexType()
