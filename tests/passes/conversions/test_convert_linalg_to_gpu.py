"""passes/conversions/linalg_to_gpu: kernel functions -> gpu.module kernels and launches.

The kernels' numbers are checked where they run (tests/compiler/backends/gpu/); here: structure,
legality errors, and that every whole model lowers for every preset.
"""

from __future__ import annotations

import pytest
from xdsl.dialects import gpu
from xdsl.utils.exceptions import DiagnosticException

from compiler import zoo
from compiler.model import import_model, lower_to_gpu
from compiler.pass_runner import make_context, run_passes
from passes.conversions.linalg_to_gpu import ConvertLinalgToGpuPass
from passes.schedule.gpu_target import PRESETS
from tests.support.schedule_kernels import parse

MAIN = """
func.func @main(%a: memref<64x32xf32>, %b: memref<32x64xf32>, %c: memref<64x64xf32>) {
  func.call @matmul(%a, %b, %c) : (memref<64x32xf32>, memref<32x64xf32>, memref<64x64xf32>) -> ()
  func.call @matmul(%a, %b, %c) : (memref<64x32xf32>, memref<32x64xf32>, memref<64x64xf32>) -> ()
  func.return
}
"""


def matmul_module(schedule: str = "") -> str:
    attrs = f" attrs = {{sched.schedule = #sched.schedule<{schedule}>}}" if schedule else ""
    return f"""
func.func private @matmul(%a: memref<64x32xf32>, %b: memref<32x64xf32>, %c: memref<64x64xf32>) {{
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%c : memref<64x64xf32>)
  linalg.generic {{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%a, %b : memref<64x32xf32>, memref<32x64xf32>) outs(%c : memref<64x64xf32>){attrs} {{
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }}
  func.return
}}
{MAIN}"""


def convert(text: str, target: str = "cuda"):
    module = parse(text)
    ConvertLinalgToGpuPass(target=target).apply(make_context(), module)
    module.verify()
    return module


STAGED = (
    "tile = [32, 32, 8], order = [0, 1, 2], unroll = [4, 4, 1], vector = -1, width = 1, "
    "pack = [0, 1]"
)


def test_every_call_becomes_the_launches_of_its_kernels() -> None:
    module = convert(matmul_module(STAGED))
    kernels = [op for op in module.walk() if isinstance(op, gpu.FuncOp)]
    launches = [op for op in module.walk() if isinstance(op, gpu.LaunchFuncOp)]
    names = [k.sym_name.data for k in kernels]
    # the staged matmul cannot hold the fill: two kernels, launched in order at each call
    assert names == ["matmul_0", "matmul_1"]
    assert [lf.kernel.nested_references.data[0].data for lf in launches] == names * 2
    assert all("gpu.kernel" in k.attributes for k in kernels)
    assert "gpu.container_module" in module.attributes
    assert not any(op.name == "func.call" for op in module.walk())
    assert not any(op.name.startswith("linalg.") for op in module.walk())


@pytest.mark.parametrize("target", ["opencl-cpu", "cuda"])
def test_an_untiled_reduction_keeps_its_fill_fused(target: str) -> None:
    """K = 32 fits one staging step: the default keeps the whole reduction in the nest, so the
    fill runs in it too (one kernel); only SIMT targets stage operands (barriers)."""
    module = convert(matmul_module(), target)
    assert [k.sym_name.data for k in module.walk() if isinstance(k, gpu.FuncOp)] == ["matmul"]
    barriers = sum(isinstance(op, gpu.BarrierOp) for op in module.walk())
    assert barriers == (0 if target == "opencl-cpu" else 2)


def test_staging_makes_workgroup_buffers_and_barriers() -> None:
    module = convert(matmul_module(STAGED))
    shared = [op for op in module.walk() if op.name == "memref.global"]
    assert [str(op.properties["type"]) for op in shared] == ["memref<256xf32, 3 : i64>"] * 2
    assert sum(isinstance(op, gpu.BarrierOp) for op in module.walk()) == 2


def test_an_illegal_schedule_is_a_diagnostic_naming_the_kernel_and_rule() -> None:
    sched = "tile = [48, 32, 8], order = [0, 1, 2], unroll = [4, 4, 1], vector = -1, width = 1"
    with pytest.raises(
        DiagnosticException, match="@matmul on cuda: loop 0: block tile 48 does not divide 64"
    ):
        convert(matmul_module(sched))


def test_unknown_target_is_a_diagnostic() -> None:
    with pytest.raises(DiagnosticException, match="option 'target': unknown GPU target 'npu'"):
        convert(matmul_module(), "npu")


@pytest.mark.parametrize("target", list(PRESETS))
@pytest.mark.parametrize("model", ["mlp", "small_cnn", "transformer_block"])
def test_whole_models_lower_for_every_preset(model: str, target: str) -> None:
    module = import_model(getattr(zoo, model)())
    lower_to_gpu(module, target, make_context())
    module.verify()
    ops = {op.name for op in module.walk()}
    assert "gpu.launch_func" in ops and "func.call" not in ops
    assert not any(name.startswith("linalg.") for name in ops)
    _ = run_passes  # the same passes as `ziggurat-opt -p to-gpu`
