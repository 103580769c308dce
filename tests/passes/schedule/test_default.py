"""passes/schedule/default.py: the analytic default is a legal schedule that uses the vector unit."""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from compiler.model import compile_model, import_model, lower
from compiler.pass_runner import make_context, run_passes
from passes.schedule.cpu_target import cpu_target
from passes.schedule.default import (
    MIN_PARALLEL_ITERATIONS,
    default_schedule,
    parallel_schedule,
)
from passes.schedule.rules import (
    MAX_PANEL_ELEMENTS,
    check_pack,
    check_parallel,
    legalize,
    panel_shape,
)
from passes.schedule.target import host_vector_width
from tests.support.schedule_kernels import (
    ADD,
    RELU,
    blocked_conv,
    conv,
    kernel,
    matmul,
    panel_matmul,
    rows,
)


def test_matmul_vectorizes_the_contiguous_output_loop_with_reductions_innermost() -> None:
    _, info = kernel(matmul())
    s = default_schedule(info, 16)
    assert (s.vector, s.width) == (1, 16)
    assert s.unroll[1] % 16 == 0 and s.unroll[0] > 1  # a register tile of accumulators
    assert s.order == (0, 1, 2)
    assert legalize(s, info) == s


def test_a_body_that_compares_lane_values_gets_scalar_code() -> None:
    _, info = kernel(RELU)
    s = default_schedule(info, 8)
    assert (s.vector, s.width) == (-1, 1)


def test_a_row_reduction_over_its_contiguous_axis_is_vectorized_along_the_row() -> None:
    """A softmax/LayerNorm row's sum: lanes across rows would gather one element of each row per
    step (GATHER_LANE_COST); along the row they are one contiguous load, with four vector
    partials per row (REDUCTION_CHAINS) folded after the loop."""
    _, info = kernel(rows(128, 1024))
    s = default_schedule(info, 16)
    assert (s.vector, s.width) == (1, 16)
    assert s.unroll == (1, 4 * 16)
    assert legalize(s, info) == s
    # a row shorter than four vectors keeps one partial per vector
    assert default_schedule(kernel(rows(8, 40))[1], 16).unroll == (1, 2 * 16)
    # a reduction over the outer axis is contiguous along the rows: vectorized along them
    _, cols = kernel(
        rows(128, 1024)
        .replace("(i, j) -> (i, j)", "(i, j) -> (j, i)")
        .replace("memref<128x1024xf32>", "memref<1024x128xf32>")
    )
    assert default_schedule(cols, 16).vector == 0
    # a combine the lanes cannot reassociate stays scalar, across rows
    _, sub = kernel(rows(128, 1024, "%s = arith.subf %a, %acc : f32"))
    assert default_schedule(sub, 16).vector == -1


def test_the_gpu_default_never_vectorizes_a_reduction() -> None:
    """The GPU lowerings take parallel vector loops only: the CPU heuristic under them is asked
    for one (along_reduction=False)."""
    _, info = kernel(rows(128, 1024))
    assert default_schedule(info, 16, along_reduction=False).vector == -1


def test_a_row_reduction_default_computes_layernorm() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 37, 256)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)],
        "ln",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 37, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.full(256, 1.5, np.float32), "s"),
            numpy_helper.from_array(np.full(256, 0.25, np.float32), "b"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    got = compile_model(model).run({"x": x})["y"]
    mean = x.mean(-1, keepdims=True)
    want = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * 1.5 + 0.25
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_width_none_is_the_host_width() -> None:
    _, info = kernel(ADD)
    assert default_schedule(info).width == host_vector_width()


def test_one_thread_or_a_small_kernel_stays_sequential() -> None:
    _, info = kernel(matmul())
    s = default_schedule(info, 16)
    assert parallel_schedule(s, info, 1) == s
    _, tiny = kernel(ADD)
    assert math.prod(tiny.extents) < MIN_PARALLEL_ITERATIONS
    t = default_schedule(tiny, 8)
    assert parallel_schedule(t, tiny, 8) == t


def test_large_kernels_spread_leading_parallel_tiles_over_threads() -> None:
    _, info = kernel(matmul(512, 512, 512))
    s = parallel_schedule(default_schedule(info, 16), info, 4)
    assert s.parallel >= 1
    check_parallel(s, info)
    chunks = math.prod(
        info.extents[d] // (s.tile[d] or info.extents[d]) for d in s.order[: s.parallel]
    )
    assert chunks >= 4
    assert legalize(s, info) == s


def test_the_schedule_follows_the_cpus_caches_and_registers() -> None:
    zen4, zen5, avx2 = (cpu_target(n) for n in ("znver4", "znver5", "x86-64-v3"))
    _, info = kernel(matmul(64, 768, 64))
    # A's 8-row strip of the reduction: 24 KiB, over half of Zen 4's L1, under half of Zen 5's
    assert default_schedule(info, cpu=zen4).tile == (0, 0, 384)
    assert default_schedule(info, cpu=zen5).tile == (0, 0, 0)
    # half the register file in accumulators: 16 on AVX-512, 8 on AVX2
    s = default_schedule(info, cpu=avx2)
    assert (s.width, s.unroll[0] * s.unroll[1] // s.width) == (8, 8)


def test_the_reduction_is_tiled_only_for_what_the_next_register_tile_reads_again() -> None:
    """A 2-D matmul steps along B's columns and reads A's strip again (tiled above); a product
    over B's panels steps along A's rows, so a reduction tile would keep nothing in the L1 and
    send each tile of the result through memory once per reduction tile: untiled. A 3x3
    convolution's next output column reads most of this one's input window: still tiled."""
    zen4 = cpu_target("znver4")
    _, panels = kernel(panel_matmul())
    s = default_schedule(panels, cpu=zen4)
    assert s.tile == (0, 0, 0, 0)
    assert (s.vector, s.unroll[1], s.unroll[2]) == (2, 8, 32)  # 8 rows x 2 vectors
    assert legalize(s, panels) == s
    # ResNet-18's 3x3 convs at 112 x 112 in NCHW16c: the register tile steps along the output
    # columns, the input block loop (4) is tiled for the window the next tile reads again
    _, window = kernel(blocked_conv())
    s = default_schedule(window, cpu=zen4)
    assert s.unroll[2] == 1 and s.tile[4] == 4


def test_a_tile_whose_rows_crowd_the_l2_is_packed_within_the_panel_bound() -> None:
    zen4 = cpu_target("znver4")
    _, big = kernel(matmul(512, 1024, 1024))
    s = default_schedule(big, cpu=zen4)
    assert s.pack == (1,)
    assert math.prod(panel_shape(big, 1, s)) <= MAX_PANEL_ELEMENTS
    assert s.tile[1] % s.unroll[1] == 0
    check_pack(s, big)
    assert legalize(s, big) == s
    # a 256-wide B's tile spreads over the L2's sets: nothing to pack
    _, small = kernel(matmul(256, 256, 256))
    assert default_schedule(small, cpu=zen4).pack == ()


def test_a_packed_default_matmul_computes_the_product() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    # B an input, known only at run time (a constant B is stored packed by pack-weights)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "mm",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(a.shape)),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, list(b.shape)),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    mm = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    buffers = lower(import_model(mm), "buffers")
    run_passes(make_context(), buffers, ["default-schedule{cpu=znver4}"])
    assert "pack = [1]" in str(buffers)  # B's 4 KiB-strided rows crowd the L2: packed
    model = compile_model(mm, schedules=["default-schedule{cpu=znver4}"])
    (out,) = model.run({"x": a, "w": b}).values()
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)


def test_short_image_rows_get_a_two_loop_register_tile() -> None:
    """A pointwise conv on 14x14 (one vector per row): 16 output channels alone load 17 times
    per 16 FMAs, so 8 channels x 2 rows (10 loads) are tiled; on 56x56 (two vectors per row) 8
    channels alone load 10 times per 16 FMAs and the tile stays one loop (a second would halve
    the channels, doubling the passes over the input)."""
    zen5 = cpu_target("znver5")
    _, short = kernel(conv(cin=96, cout=576, hw=14, k=1))  # loops co, y, x, ci, ky, kx
    s = default_schedule(short, cpu=zen5)
    assert (s.vector, s.unroll[:3]) == (2, (8, 2, 16))
    assert legalize(s, short) == s
    _, long = kernel(conv(cin=24, cout=144, hw=56, k=1))
    s = default_schedule(long, cpu=zen5)
    assert (s.vector, s.unroll[:3]) == (2, (8, 1, 32))


DEPTHWISE = """
func.func @dw(%in: memref<144x58x58xf32>, %w: memref<144x3x3xf32>, %out: memref<144x56x56xf32>) {
  linalg.generic {indexing_maps = [
        affine_map<(c, y, x, ky, kx) -> (c, y + ky, x + kx)>,
        affine_map<(c, y, x, ky, kx) -> (c, ky, kx)>,
        affine_map<(c, y, x, ky, kx) -> (c, y, x)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%in, %w : memref<144x58x58xf32>, memref<144x3x3xf32>)
      outs(%out : memref<144x56x56xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  func.return
}
"""


def test_rows_that_reuse_only_broadcasts_stop_at_the_fmas_in_flight() -> None:
    """A depthwise conv's rows each load their own input vectors; only the weight broadcast is
    shared, so more accumulators than the FMA units keep busy (8 on Zen 5) buy nothing: 4 rows
    of two vectors, not 8. A pointwise conv's rows share the input vector: 16 channels stay."""
    zen5 = cpu_target("znver5")
    assert zen5.fma_in_flight == 8
    _, dw = kernel(DEPTHWISE)
    s = default_schedule(dw, cpu=zen5)
    assert (s.vector, s.unroll[1], s.unroll[2]) == (2, 4, 32)
    assert legalize(s, dw) == s
    _, pointwise = kernel(conv(cin=64, cout=192, hw=13, k=1))  # 13 rows: no two-loop tile
    s = default_schedule(pointwise, cpu=zen5)
    assert (s.vector, s.unroll[0]) == (2, 16)


def test_a_matrix_vector_product_walks_the_matrix_in_row_chunks() -> None:
    """One output row (a decode step's GEMV): the reduction in MATVEC_ROWS chunks across a
    vector-loop tile whose accumulators take a quarter of L1; with rows, nothing changes."""
    from passes.schedule.default import MATVEC_ROWS

    zen4, zen5 = cpu_target("znver4"), cpu_target("znver5")
    _, gemv = kernel(matmul(1, 768, 3072))
    s = default_schedule(gemv, cpu=zen4)
    assert s.tile[2] == MATVEC_ROWS
    assert 0 < s.tile[1] * 4 * 4 <= zen4.l1.size and 3072 % s.tile[1] == 0
    assert legalize(s, gemv) == s
    # the tile follows the L1 (32 KiB on Zen 4, 48 KiB on Zen 5)
    assert (default_schedule(gemv, cpu=zen5).tile[1] or 3072) > s.tile[1]
    # a width with no divisor near the tile (50272 = 32 x 1571) takes a remainder tile
    _, head = kernel(matmul(1, 768, 50272))
    h = default_schedule(head, cpu=zen4)
    assert h.tile[1] * 4 * 4 == zen4.l1.size and h.tile[2] == MATVEC_ROWS
    # 128 rows reuse B from registers: the register tile's schedule, not this one
    _, rows = kernel(matmul(128, 768, 3072))
    assert default_schedule(rows, cpu=zen4).tile[2] != MATVEC_ROWS


def test_a_matrix_vector_default_computes_the_product() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 1, 96)).astype(np.float32)
    w = rng.standard_normal((96, 1000)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "gemv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 96])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    got = compile_model(model).run({"x": x})["y"]
    np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-4)


def test_threads_split_the_rows_of_a_big_b_once_per_thread() -> None:
    """Every row chunk of a matmul streams all of B: with B over the L2 the rows are cut into
    one chunk per thread and the columns supply the other chunks; a B that fits keeps the
    usual CHUNKS_PER_THREAD row chunks per thread."""
    from passes.schedule.default import CHUNKS_PER_THREAD

    zen4 = cpu_target("znver4")
    _, big = kernel(matmul(128, 768, 4096))  # B: 12 MiB
    s = parallel_schedule(default_schedule(big, cpu=zen4), big, 2, zen4)
    check_parallel(s, big)
    assert 128 // (s.tile[0] or 128) == 2
    assert s.parallel == 2 and 4096 // s.tile[1] >= 2
    _, small = kernel(matmul(128, 256, 256))  # B: 256 KiB
    t = parallel_schedule(default_schedule(small, cpu=zen4), small, 2, zen4)
    assert 128 // t.tile[0] >= 2 * CHUNKS_PER_THREAD
