"""passes/conversions/loop_codegen/stages.py: the bodies one fused nest evaluates, and their
accesses composed into the reduction kernel's loop space."""

from __future__ import annotations

from passes.analysis.kernel_access import analyze_kernel
from passes.conversions.loop_codegen.fusion import find_fusion
from passes.conversions.loop_codegen.stages import KernelStages, compose_access
from tests.support.linalg_to_loops_kernels import fused_src, generics, parse


def test_composed_access_is_in_the_kernels_loop_space() -> None:
    init, matmul, _ = generics(parse(fused_src(6, 17, 40, private=True)))
    target = analyze_kernel(matmul).output  # T[m, n] in loops (m, n, k)
    bias = analyze_kernel(init).accesses[0]  # bias[j] in loops (i, j) of T
    composed = compose_access(bias, target)
    assert composed.coefs == [[0, 1, 0]] and composed.consts == [0]
    assert composed.loop_strides == [0, 1, 0]


def test_stages_of_a_fused_kernel() -> None:
    init, matmul, epilogue = generics(parse(fused_src(6, 17, 40, private=True)))
    fusion = find_fusion(matmul, vectorized=True)
    info = analyze_kernel(matmul)
    stages = KernelStages.build(info, fusion)
    # a, b, t; then the bias (prologue), the residual and y (epilogue)
    assert [a.value for a in stages.accesses] == [
        *matmul.inputs,
        matmul.outputs[0],
        init.inputs[0],
        epilogue.inputs[1],
        epilogue.outputs[0],
    ]
    assert stages.main.sources == [0, 1, None]
    assert stages.prologue is not None and stages.prologue.sources == [3, None]
    assert [s.sources for s in stages.epilogues] == [[None, 4, None]]
    assert (stages.output_index, stages.store_index) == (2, 5)
    assert stages.all() == [stages.main, stages.prologue, *stages.epilogues]
