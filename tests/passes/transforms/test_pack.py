"""`pack{operands=...}` (passes/transforms/pack.py): operand packing.

The pass edits only the `pack` field of the schedules it targets. After convert-linalg-to-loops
each cache tile copies the box of every packed operand that it reads into a contiguous,
64-byte-aligned stack panel and reads the operand from there; results must equal numpy for
matmul (both operands), strided conv windows, remainder tiles, reduction tiles, fused kernels
and parallel tiles. Bad operand lists and panels too large for the stack are one error.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from compiler.errors import CompileError
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import LEVELS
from tests.support.schedule_options import assert_one_option_error, assert_rejected_without_kernels
from tests.support.scheduled_kernels import (
    conv_reference,
    conv_src,
    fused_src,
    loops_ir,
    matmul_src,
    run_kernel,
    scheduled,
)

RNG = np.random.default_rng(11)


def test_sets_only_the_packed_operands() -> None:
    src = matmul_src(32, 64, 64)
    (before,) = scheduled(src, ["default-schedule{width=8}", "tile{sizes=8,32,16}"])
    assert before.pack == ()
    passes = ["default-schedule{width=8}", "tile{sizes=8,32,16}", "pack{operands=1,0}"]
    (after,) = scheduled(src, passes)
    assert after == replace(before, pack=(1, 0))
    (off,) = scheduled(src, [*passes, "pack"])
    assert off == before


def test_panel_is_allocated_copied_and_read() -> None:
    text = loops_ir(
        matmul_src(32, 64, 64),
        ["default-schedule{width=8}", "tile{sizes=8,32,16}", "pack{operands=1}"],
    )
    assert (
        "memref.alloca() {alignment = 64 : i64} : memref<512xf32>" in text
    )  # a 16 x 32 panel of B
    assert text.count("memref<512xf32>, vector<8xf32>") > 0  # vector loads from the panel
    assert "vector.load %b" not in text  # B itself is only read by the copy


@pytest.mark.parametrize(
    "tiles,operands",
    [
        ("8,32,16", "1"),
        ("8,32,16", "0"),
        ("8,32,16", "0,1"),
        ("5,24,7", "0,1"),
        ("0,0,16", "1"),
        ("8,0,0", "0"),
    ],
)
def test_matmul_packed(tiles: str, operands: str) -> None:
    m, k, n = 21, 37, 48
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    got = run_kernel(
        matmul_src(m, k, n),
        ["default-schedule{width=8}", f"tile{{sizes={tiles}}}", f"pack{{operands={operands}}}"],
        [a, b],
        (m, n),
    )
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride", [1, 2])
def test_conv_window_packed(stride: int) -> None:
    """The input operand's box is a strided window (coefficients 2 and 1): its panel holds the
    whole window, read back with the window's own coefficients."""
    c, h, o, k = 5, 13, 16, 3
    x = RNG.standard_normal((1, c, h, h)).astype(np.float32)
    w = RNG.standard_normal((c, k, k, o)).astype(np.float32)
    ref = conv_reference(x, w, stride)
    passes = ["default-schedule{width=8}", "tile{sizes=0,8,2,0,0,0,0}", "pack{operands=0,1}"]
    got = run_kernel(conv_src(c, h, o, k, stride), passes, [x, w], ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_fused_and_parallel_packed() -> None:
    from compiler import parallel_runtime
    from compiler.backends.llvm_cpu.compile import compile_module
    from compiler.runtime import aligned_copy, aligned_empty

    m, k, n = 12, 17, 40
    ctx = make_context()
    module = Parser(ctx, fused_src(m, k, n, "3")).parse_module()
    passes = [
        "default-schedule{width=8}",
        "tile{sizes=4,0,0 op=1}",
        "pack{operands=0,1 op=1}",
        "parallelize{loops=1 op=1}",
    ]
    run_passes(
        ctx, module, [*passes, "convert-linalg-to-loops", *LEVELS["llvm-dialect"]], verify_each=True
    )
    a, b = (
        RNG.standard_normal((m, k)).astype(np.float32),
        RNG.standard_normal((k, n)).astype(np.float32),
    )
    bias, res = (
        RNG.standard_normal(n).astype(np.float32),
        RNG.standard_normal((m, n)).astype(np.float32),
    )
    t, y = aligned_empty((m, n)), aligned_empty((m, n))
    before = parallel_runtime.get_num_threads()
    parallel_runtime.set_num_threads(2)
    try:
        compile_module(module).function("kernel")(
            *[aligned_copy(v) for v in (a, b, bias)], t, aligned_copy(res), y
        )
    finally:
        parallel_runtime.set_num_threads(before)
    np.testing.assert_allclose(y, np.maximum(a @ b + bias + res, 0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "passes,message",
    [
        (
            ["default-schedule", "pack{operands=2}"],
            "option 'operands': 2 is out of range; allowed: 0..1",
        ),
        (["default-schedule", "tile{sizes=0,0,0}", "pack{operands=1}"], "exceeds 32768"),
    ],
)
def test_bad_pack(passes: list[str], message: str) -> None:
    ctx = make_context()
    module = Parser(ctx, matmul_src(64, 1024, 64)).parse_module()
    with pytest.raises(CompileError, match=message):
        run_passes(ctx, module, passes)


BAD = [
    (
        "pack{operands=2}",
        "pack: option 'operands': 2 is out of range; allowed: 0..1 (the kernel's inputs",
    ),
    (
        "pack{operands=-1}",
        "pack: option 'operands': -1 is out of range; allowed: an input operand of the kernel",
    ),
    ("pack{operands=1,1}", "pack: option 'operands': 1,1 names an operand twice"),
]


@pytest.mark.parametrize(("pipeline", "message"), BAD, ids=[p for p, _ in BAD])
def test_out_of_range_option_is_one_error_naming_pass_option_and_range(
    capsys: pytest.CaptureFixture[str], scheduled_matmul: Path, pipeline: str, message: str
) -> None:
    assert_one_option_error(capsys, scheduled_matmul, pipeline, message)


def test_option_errors_come_before_the_kernels_are_looked_at(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert_rejected_without_kernels(capsys, tmp_path, "pack{operands=-1}")
