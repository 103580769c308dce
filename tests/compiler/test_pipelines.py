"""compiler/pipelines.py: the levels of the README's table, composed by name.

Every level can be emitted (`ziggurat compile --emit LEVEL`), each named level pipeline lowers
exactly one level, and composing levels gives the same IR as the whole default pipeline. The
llvm-dialect level's conversions together legalize everything, into IR mlir-opt accepts.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from xdsl.dialects import func, llvm, memref, scf
from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp
from xdsl.dialects.linalg.ops import GenericOp

from compiler import zoo
from compiler.cli.main import main
from compiler.model import import_model, lower
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import (
    IMPORTED,
    LEVELS,
    ORDER,
    PIPELINES,
    PipelineError,
    expand,
    levels_between,
    lowering,
)
from compiler.registry import PASSES, get_pass
from tests.support import llvm_kernels

README_LEVELS = ["graph", "tensor", "buffers", "loops", "llvm-dialect"]


def _names(module: ModuleOp) -> set[str]:
    return {op.name for op in module.walk()}


def test_levels_are_the_readme_table_in_order():
    assert list(LEVELS) == README_LEVELS
    assert ORDER == (IMPORTED, *README_LEVELS)


def test_lowering_composes_levels_by_name():
    assert lowering("tensor", "buffers") == ["bufferize", "outline-kernels"]
    assert lowering(IMPORTED, "llvm-dialect") == [p for lv in README_LEVELS for p in LEVELS[lv]]
    assert lowering("tensor", "loops") == [*LEVELS["buffers"], *LEVELS["loops"]]
    assert levels_between("graph", "graph") == []
    assert levels_between(IMPORTED, "tensor") == ["graph", "tensor"]


def test_unknown_or_backward_levels_are_errors():
    with pytest.raises(PipelineError, match="unknown level 'bufers'.*buffers"):
        lowering("tensor", "bufers")
    with pytest.raises(PipelineError, match="'tensor' comes before level 'loops'"):
        lowering("loops", "tensor")


def test_named_pipelines_expand_to_their_level():
    for level, passes in LEVELS.items():
        assert [a.name for a in expand(f"to-{level}")] == list(passes)
    assert [a.name for a in expand("cpu-default")] == lowering(IMPORTED, "llvm-dialect")
    assert PIPELINES["cleanup"] == "canonicalize,cse,dce"


def test_each_level_has_its_dialects():
    """Lowering the small CNN one level at a time: what each level of the table promises."""
    module = import_model(zoo.small_cnn())
    ctx = make_context()
    seen = {}
    start = IMPORTED
    for level in README_LEVELS:
        lower(module, level, ctx, start=start)
        seen[level] = _names(module)
        start = level
    assert "graph.fused" in seen["graph"]
    assert GenericOp.name in seen["tensor"] and not any(
        n.startswith("graph.") for n in seen["tensor"]
    )
    assert memref.AllocOp.name not in seen["tensor"]
    assert GenericOp.name in seen["buffers"] and func.CallOp.name in seen["buffers"]
    assert not any(n.startswith("tensor.") for n in seen["buffers"])
    assert GenericOp.name not in seen["loops"] and scf.ForOp.name in seen["loops"]
    assert all(n.startswith(("llvm.", "builtin.")) for n in seen["llvm-dialect"]), seen[
        "llvm-dialect"
    ]


def test_step_by_step_equals_the_whole_pipeline():
    whole = import_model(zoo.mlp())
    run_passes(make_context(), whole, lowering(IMPORTED, "llvm-dialect"))
    stepped = import_model(zoo.mlp())
    ctx = make_context()
    lower(stepped, "buffers", ctx)
    lower(stepped, "llvm-dialect", ctx, start="buffers")
    assert str(stepped) == str(whole)


@pytest.mark.parametrize("level", README_LEVELS)
def test_every_level_is_emitted_by_the_cli(tmp_path, level):
    path = tmp_path / "mlp.onnx"
    path.write_bytes(zoo.mlp().SerializeToString())
    out = tmp_path / f"mlp.{level}.mlir"
    assert main(["compile", str(path), "--emit", level, "-o", str(out)]) == 0
    module = run_text = out.read_text()
    assert "func.func @main" in run_text or "llvm.func @main" in run_text
    # what was emitted parses back, and lowering it the rest of the way works
    from xdsl.parser import Parser

    parsed = Parser(make_context(), module).parse_module()
    lower(parsed, "llvm-dialect", make_context(), start=level)
    assert "llvm.func @main" in str(parsed)


# the llvm-dialect level: ziggurat's own convert-*-to-llvm passes (xDSL provides scf-to-cf and
# the cast cleanup) compose into a full legalization that the real mlir-opt accepts

MLIR_OPT = shutil.which("mlir-opt-22") or shutil.which("mlir-opt")


def _only_llvm(module: ModuleOp) -> None:
    for op in module.walk():
        if op is module:
            continue
        assert op.dialect_name() == "llvm", f"left over: {op.name}"
        for t in [*op.operand_types, *op.result_types]:
            assert "index" not in str(t) and "memref" not in str(t), f"{op.name}: {t}"


def test_llvm_level_passes_are_registered_under_fixed_names() -> None:
    ours = [p for p in LEVELS["llvm-dialect"] if p in PASSES]
    assert ours == [
        "resolve-dynamic-memrefs",
        "convert-parallel-to-runtime",
        "convert-vector-to-llvm",
        "convert-memref-to-llvm",
        "convert-math-to-llvm",
        "convert-arith-to-llvm",
        "convert-index-to-llvm",
        "convert-cf-to-llvm",
        "convert-func-to-llvm",
    ]
    assert all(get_pass(name).name == name for name in ours)


def test_llvm_level_legalizes_everything() -> None:
    module = llvm_kernels.lower(llvm_kernels.matmul_mlir())
    _only_llvm(module)
    assert not any(isinstance(op, UnrealizedConversionCastOp) for op in module.walk())
    fn = next(op for op in module.ops if isinstance(op, llvm.FuncOp))
    assert [str(t) for t in fn.function_type.inputs] == ["!llvm.ptr"] * 3


@pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt-22 not installed")
def test_llvm_level_output_accepted_by_mlir_opt(tmp_path: Path) -> None:
    assert MLIR_OPT is not None
    path = tmp_path / "matmul.mlir"
    path.write_text(str(llvm_kernels.lower(llvm_kernels.matmul_mlir())))
    proc = subprocess.run([MLIR_OPT, str(path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "llvm.func @matmul" in proc.stdout


def test_layout_passes_stand_for_blocked_layout() -> None:
    from compiler.model import level_passes
    from compiler.pipelines import layout_passes

    assert layout_passes("auto") == ["blocked-layout"]
    assert layout_passes("NCHW") == []
    assert layout_passes("NCHW8c") == ["blocked-layout{block=8}"]
    with pytest.raises(PipelineError, match="unknown layout 'NHWC'"):
        layout_passes("NHWC")
    graph = level_passes("graph", layout="NCHW16c")
    # the Winograd rewrite follows the layout: it rewrites blocked convs only
    assert graph[graph.index("fuse-ops") - 2 :][:2] == ["blocked-layout{block=16}", "winograd"]
    assert "blocked-layout" not in level_passes("graph", layout="NCHW")
