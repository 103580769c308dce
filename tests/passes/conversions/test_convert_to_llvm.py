"""The convert-*-to-llvm passes: composition, full legalization, MLIR-22 compatibility."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp

from compiler.pipelines import LEVEL_PASSES
from compiler.registry import PASSES, get_pass

_KERNELS = Path(__file__).resolve().parents[2] / "backends" / "llvm_kernels.py"
_spec = importlib.util.spec_from_file_location("llvm_kernels", _KERNELS)
assert _spec and _spec.loader
kernels = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("llvm_kernels", kernels)
_spec.loader.exec_module(kernels)

MLIR_OPT = shutil.which("mlir-opt-22") or shutil.which("mlir-opt")

# ziggurat's own LLVM conversions, in pipeline order (xDSL provides scf-to-cf and the cast cleanup)
NAMES = [p for p in LEVEL_PASSES["llvm-dialect"] if p in PASSES]

ADD = """
func.func @add(%a: memref<1000xf32>, %b: memref<1000xf32>, %c: memref<1000xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c992 = arith.constant 992 : index
  scf.for %i = %c0 to %c992 step %c16 {
    %x = vector.load %a[%i] : memref<1000xf32>, vector<16xf32>
    %y = vector.load %b[%i] : memref<1000xf32>, vector<16xf32>
    %z = arith.addf %x, %y : vector<16xf32>
    vector.store %z, %c[%i] : memref<1000xf32>, vector<16xf32>
  }
  func.return
}
"""


def _only_llvm(module: ModuleOp) -> None:
    for op in module.walk():
        if op is module:
            continue
        assert op.dialect_name() == "llvm", f"left over: {op.name}"
        for t in [*op.operand_types, *op.result_types]:
            assert "index" not in str(t) and "memref" not in str(t), f"{op.name}: {t}"


@pytest.mark.parametrize("name", NAMES)
def test_registered_under_fixed_name(name: str) -> None:
    cls = get_pass(name)
    assert cls.name == name


def test_each_pass_alone_leaves_casts_not_errors() -> None:
    """Partial conversion: each pass runs alone and bridges with unrealized casts."""
    for name in NAMES:
        ctx = kernels.context()
        module = kernels.parse(ADD)
        get_pass(name)().apply(ctx, module)
        module.verify()


def test_full_pipeline_legalizes_everything() -> None:
    module = kernels.lower(kernels.matmul_mlir())
    _only_llvm(module)
    assert not any(isinstance(op, UnrealizedConversionCastOp) for op in module.walk())
    func = next(op for op in module.ops if isinstance(op, llvm.FuncOp))
    assert [str(t) for t in func.function_type.inputs] == ["!llvm.ptr"] * 3


def test_vector_loads_carry_alignment() -> None:
    module = kernels.lower(ADD)
    loads = [op for op in module.walk() if isinstance(op, llvm.LoadOp | llvm.StoreOp)]
    assert loads and all(op.alignment is not None for op in loads)


@pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt-22 not installed")
@pytest.mark.parametrize("which", ["matmul", "add"])
def test_llvm_level_output_accepted_by_mlir_opt(which: str, tmp_path: Path) -> None:
    text = kernels.matmul_mlir() if which == "matmul" else ADD
    path = tmp_path / f"{which}.mlir"
    path.write_text(str(kernels.lower(text)))
    proc = subprocess.run([MLIR_OPT, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "llvm.func @" in proc.stdout
