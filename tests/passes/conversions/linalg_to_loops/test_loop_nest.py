"""passes/conversions/linalg_to_loops/loop_nest.py: which tile loops run across threads, and the
nest that replaces a kernel (point loops, the reduction loop carrying the accumulators)."""

from __future__ import annotations

from xdsl.dialects import memref, scf, vector

from dialects.sched import Schedule
from passes.analysis.kernel_access import analyze_kernel
from passes.conversions.linalg_to_loops.loop_nest import LoopNestGenerator
from tests.support.linalg_to_loops_kernels import generics, matmul_generator, matmul_src, parse


def test_threads_take_only_tiles_without_remainder() -> None:
    gen = matmul_generator(Schedule((2, 8, 0), (0, 1, 2), (1, 1, 1), parallel=2), m=6, n=20)
    assert gen.parallel_dims([6, 20, 5]) == [0]  # 20 % 8 leaves a peeled tile: stop there
    gen = matmul_generator(Schedule((0, 4, 0), (0, 1, 2), (1, 1, 1), parallel=2), m=6, n=20)
    assert gen.parallel_dims([6, 20, 5]) == [1]  # loop 0 is untiled: every thread runs it all


def test_generated_nest_replaces_the_kernel() -> None:
    schedule = Schedule((0, 0, 0), (0, 1, 2), (2, 16, 1), vector=1, width=8, parallel=0)
    module = parse(matmul_src(4, 3, 16))
    matmul = generics(module)[0]
    LoopNestGenerator(analyze_kernel(matmul), schedule).generate()
    assert generics(module) == []
    ops = list(module.walk())
    fmas = [op for op in ops if isinstance(op, vector.FMAOp)]
    # 2 x 2 accumulators (rows x vector chunks), one fma each per step of k
    loops = [op for op in ops if isinstance(op, scf.ForOp)]
    assert len(fmas) == 4 and len(loops) == 2  # the point loop over m (step 2), the k loop
    k_loop = next(loop for loop in loops if loop.iter_args)
    assert len(k_loop.iter_args) == 4  # the accumulators are carried, stored once after
    stores = [op for op in ops if isinstance(op, vector.StoreOp)]
    assert len(stores) == 4 and all(store.parent_op() is not k_loop for store in stores)
    assert not any(isinstance(op, memref.StoreOp) for op in ops)
