"""bufferize with run-time sizes: a tensor-level function whose tensors have `?` dims lowers to
machine code once and runs at any size.

Intermediates with `?` dims are allocated per call (memref.alloc with the sizes the tensors were
made with), in front of the fusion group of their first kernel, and freed after the group of
their last; the static ones stay in the planned arena. A kernel may still write in place, and
the last one writes the out-param.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from compiler.backends.llvm_cpu.compile import compile_module
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import lowering
from compiler.runtime import aligned_copy, aligned_empty

MLIR_OPT = shutil.which("mlir-opt-22")
RNG = np.random.default_rng(0)
W = RNG.uniform(-1, 1, (16, 8)).astype(np.float32)
B = RNG.uniform(-1, 1, 8).astype(np.float32)


def _dense(a: np.ndarray) -> str:
    return f'dense<"0x{a.tobytes().hex().upper()}">'


ID = "affine_map<(d0, d1) -> (d0, d1)>"
MLP = f"""
func.func @main(%x: tensor<?x16xf32>) -> tensor<?x8xf32> {{
  %w = arith.constant {_dense(W)} : tensor<16x8xf32>
  %b = arith.constant {_dense(B)} : tensor<8xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %bias = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d1)>, {ID}], iterator_types = ["parallel", "parallel"]}} ins(%b : tensor<8xf32>) outs(%e : tensor<?x8xf32>) attrs = {{ziggurat.group = 0 : i64}} {{
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }} -> tensor<?x8xf32>
  %mm = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}} ins(%x, %w : tensor<?x16xf32>, tensor<16x8xf32>) outs(%bias : tensor<?x8xf32>) attrs = {{ziggurat.group = 0 : i64}} {{
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }} -> tensor<?x8xf32>
  %e2 = tensor.empty(%n) : tensor<?x8xf32>
  %r = linalg.generic {{indexing_maps = [{ID}, {ID}], iterator_types = ["parallel", "parallel"]}} ins(%mm : tensor<?x8xf32>) outs(%e2 : tensor<?x8xf32>) attrs = {{ziggurat.group = 0 : i64}} {{
  ^bb0(%v: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %t = arith.maximumf %v, %z : f32
    linalg.yield %t : f32
  }} -> tensor<?x8xf32>
  %e3 = tensor.empty(%n) : tensor<?x8xf32>
  %sq = linalg.generic {{indexing_maps = [{ID}, {ID}], iterator_types = ["parallel", "parallel"]}} ins(%r : tensor<?x8xf32>) outs(%e3 : tensor<?x8xf32>) attrs = {{ziggurat.group = 1 : i64}} {{
  ^bb0(%v: f32, %o: f32):
    %t = arith.mulf %v, %v : f32
    linalg.yield %t : f32
  }} -> tensor<?x8xf32>
  func.return %sq : tensor<?x8xf32>
}}
"""


def _lowered(stop: str) -> ModuleOp:
    ctx = make_context()
    module = Parser(ctx, MLP).parse_module()
    run_passes(ctx, module, lowering("tensor", stop), verify_each=True)
    return module


def test_one_compile_runs_every_batch() -> None:
    main = compile_module(_lowered("llvm-dialect")).function("main")
    for n in [0, 1, 3, 7, 64, 65, 300]:
        x, y = aligned_copy(RNG.uniform(-1, 1, (n, 16)).astype(np.float32)), aligned_empty((n, 8))
        main(x, y, n, n)  # then the sizes of x's and y's `?` dims
        np.testing.assert_allclose(y, np.maximum(x @ W + B, 0) ** 2, rtol=1e-5, atol=1e-6)


def test_run_time_intermediates_are_allocated_per_call_around_their_kernels() -> None:
    module = _lowered("buffers")
    main = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    ops = [op for op in main.body.block.ops]
    names = [op.name for op in ops]
    # one buffer for the intermediate: the relu wrote over the product in place (no alloc for
    # %e2 survives) and the square writes the out-param (no copy)
    allocs = [op for op in ops if isinstance(op, memref.AllocOp)]
    assert len(allocs) == 1 and allocs[0].dynamic_sizes
    (size,) = allocs[0].dynamic_sizes
    assert isinstance(size.owner, memref.DimOp) and size.owner.source is main.body.block.args[0]
    calls = [k for k, name in enumerate(names) if name == "func.call"]
    assert len(calls) == 2
    assert names.index("memref.alloc") < calls[0]
    assert names.index("memref.dealloc") == calls[1] + 1
    last = ops[calls[1]]
    assert isinstance(last, func.CallOp) and last.arguments[-1] is main.body.block.args[1]


@pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt-22 not installed")
@pytest.mark.parametrize("level", ["buffers", "loops"])
def test_mlir_opt_accepts_the_levels(level: str) -> None:
    r = subprocess.run(
        [str(MLIR_OPT), "--verify-each"], input=str(_lowered(level)), capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
