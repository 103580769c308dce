"""`vectorize{dim=D width=W}` (passes/transforms/vectorize.py): which loop of a kernel runs as
vector lanes, and how wide (dim=-1: scalar code).

The pass edits the `vector` and `width` fields of the schedules it targets, and the register
tile of the vector loop, which counts elements: rounded up to a multiple of the new width, the
old vector loop's back to counting iterations. After convert-linalg-to-loops the accumulators
and the fmas are vectors of the width along that loop, or scalars. Every choice computes the
same result. A dim or width out of range, or a loop that cannot be vectorized, is one error.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, VectorType, f32
from xdsl.dialects.linalg import GenericOp
from xdsl.parser import Parser

from compiler.errors import CompileError
from compiler.pass_runner import make_context, run_passes
from passes.schedule.attached import schedule_of
from tests.support.schedule_options import (
    HUGE,
    assert_one_option_error,
    assert_rejected_without_kernels,
    scheduled_after,
)
from tests.support.scheduled_kernels import (
    bias_relu_src,
    lowered,
    matmul_src,
    rowmax_src,
    run_kernel,
    scheduled,
)

W8 = "default-schedule{width=8 cpu=znver4}"  # a fixed CPU: its register file sets the tile
"""Register tile of MATMUL: 5 rows x 16 columns (two vectors of 8 along j), k unrolled by 1."""
MATMUL = matmul_src(20, 12, 32)
"""i: 20 iterations, j: 32, k: 12."""
RNG = np.random.default_rng(13)


def register_tile(module: ModuleOp) -> tuple[list[str], Counter[str]]:
    """The types of the accumulators the first reduction loop of `module` carries, and the ops
    of its body by name."""
    loop = next(op for op in module.walk() if isinstance(op, scf.ForOp) and op.iter_args)
    return [str(v.type) for v in loop.iter_args], Counter(op.name for op in loop.body.walk())


def test_sets_the_vector_loop_and_width_and_rounds_its_register_tile() -> None:
    (before,) = scheduled(MATMUL, [W8])
    assert (before.vector, before.width, before.unroll) == (1, 8, (5, 16, 1))
    (narrower,) = scheduled(MATMUL, [W8, "vectorize{dim=1 width=4}"])
    assert narrower == replace(before, width=4)
    # i becomes the vector loop: its 5 rows round up to 8 lanes; j's 16 elements were 2 vectors
    (along_i,) = scheduled(MATMUL, [W8, "vectorize{dim=0 width=4}"])
    assert along_i == replace(before, vector=0, width=4, unroll=(8, 2, 1))
    (scalar,) = scheduled(MATMUL, [W8, "vectorize{dim=-1}"])
    assert scalar == replace(before, vector=-1, width=1)


def test_accumulators_and_fmas_are_vectors_of_the_width() -> None:
    accs, ops = register_tile(lowered(MATMUL, [W8]))
    assert accs == [str(VectorType(f32, [8]))] * 10  # 5 rows x 2 vectors
    assert ops["vector.fma"] == 10 and ops["math.fma"] == 0
    accs, ops = register_tile(lowered(MATMUL, [W8, "vectorize{dim=1 width=4}"]))
    assert accs == [str(VectorType(f32, [4]))] * 20  # 5 rows x 4 vectors
    assert ops["vector.fma"] == 20 and ops["vector.load"] == 4


def test_dim_minus_one_is_scalar_code() -> None:
    module = lowered(MATMUL, [W8, "vectorize{dim=-1}"])
    accs, ops = register_tile(module)
    assert accs == ["f32"] * 80  # 5 x 16 scalar accumulators
    assert ops["math.fma"] == 80
    assert not [op for op in module.walk() if op.name.startswith("vector.")]
    assert "vector<" not in str(module)


@pytest.mark.parametrize(
    "vectorize", ["vectorize{dim=-1}", "vectorize{dim=1 width=4}", "vectorize{dim=0 width=4}"]
)
def test_every_vector_loop_matches_numpy(vectorize: str) -> None:
    m, k, n = 21, 37, 45  # n: no multiple of the width, the last vector is partial
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    got = run_kernel(matmul_src(m, k, n), [W8, vectorize], [a, b], (m, n))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("vectorize", ["vectorize{dim=0 width=4}", "vectorize{dim=1 width=16}"])
def test_vectorized_broadcast_kernel_matches_numpy(vectorize: str) -> None:
    x = RNG.standard_normal((7, 45)).astype(np.float32)
    bias = RNG.standard_normal(45).astype(np.float32)
    got = run_kernel(bias_relu_src(7, 45), [W8, vectorize], [x, bias], (7, 45))
    np.testing.assert_allclose(got, np.maximum(x + bias, 0), rtol=1e-6)


def test_a_reduction_loop_is_vectorized_only_where_its_partials_combine() -> None:
    """A max's lanes along the row are partial maxima (folded after the loop); a subtraction
    cannot be reassociated."""
    ctx = make_context()
    module = Parser(ctx, rowmax_src(9, 33)).parse_module()
    run_passes(ctx, module, [W8, "vectorize{dim=1 width=8}"])
    (generic,) = [op for op in module.walk() if isinstance(op, GenericOp)]
    s = schedule_of(generic)
    assert (s.vector, s.width) == (1, 8)
    ctx = make_context()
    module = Parser(ctx, rowmax_src(9, 33).replace("maximumf %o, %a", "subf %a, %o")).parse_module()
    with pytest.raises(CompileError, match="reduction loop 1 cannot be vectorized: the body is"):
        run_passes(ctx, module, [W8, "vectorize{dim=1}"])


BAD = [
    (
        "vectorize{dim=0 width=-4}",
        "vectorize: option 'width': -4 is out of range; allowed: 1..64 (omit it for the host CPU's widest)",
    ),
    (
        f"vectorize{{dim=0 width={HUGE}}}",
        f"vectorize: option 'width': {HUGE} is out of range; allowed: 1..64",
    ),
    (
        "vectorize{dim=-2}",
        "vectorize: option 'dim': -2 is out of range; allowed: -1 (scalar code) or a loop",
    ),
    (
        "vectorize{dim=3}",
        "vectorize: option 'dim': loop 3 does not exist; allowed: -1..2 (-1: scalar code; the kernel has 3 loops)",
    ),
]


@pytest.mark.parametrize(("pipeline", "message"), BAD, ids=[p for p, _ in BAD])
def test_out_of_range_option_is_one_error_naming_pass_option_and_range(
    capsys: pytest.CaptureFixture[str], scheduled_matmul: Path, pipeline: str, message: str
) -> None:
    assert_one_option_error(capsys, scheduled_matmul, pipeline, message)


def test_option_errors_come_before_the_kernels_are_looked_at(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert_rejected_without_kernels(capsys, tmp_path, "vectorize{width=-1}")


def test_width_past_the_extent_rounds_the_register_tile(
    capsys: pytest.CaptureFixture[str], scheduled_matmul: Path
) -> None:
    out = scheduled_after(capsys, scheduled_matmul, "vectorize{dim=1 width=64}")
    assert "unroll = [8, 64, 1], vector = 1, width = 64" in out


def test_wide_vectors_compute_the_same_result() -> None:
    a = RNG.standard_normal((12, 20)).astype(np.float32)
    b = RNG.standard_normal((20, 24)).astype(np.float32)
    passes = [W8, "vectorize{dim=1 width=64}", "tile{sizes=5,0,1000}"]
    got = run_kernel(matmul_src(12, 20, 24), passes, [a, b], (12, 24))
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
