"""Name -> factory tables for the dialects and passes of the layers up to the compiler.

Imports are lazy so that `ziggurat --help` and `xdsl-opt` stay fast. Higher layers add their
own tables (the tuner's `autotune` pass: autotune/registry.py); the command-line layer merges
them into `compiler.cli.universe.UNIVERSE`, the `xdsl.universe` entry point.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeVar

from xdsl.ir import Dialect
from xdsl.passes import ModulePass

F = TypeVar("F")


def registrar(table: dict[str, F]) -> Callable[..., Callable[[F], F]]:
    """A decorator factory filling `table`: `@register("a", "b")` records the function it
    decorates under each name (the ONNX converters, the GPU C printer's op handlers)."""

    def register(*names: str) -> Callable[[F], F]:
        def record(fn: F) -> F:
            for name in names:
                table[name] = fn
            return fn

        return record

    return register


def _lazy(spec: str) -> Callable[[], object]:
    module, _, attr = spec.partition(":")

    def load() -> object:
        return getattr(importlib.import_module(module), attr)

    return load


DIALECTS: dict[str, str] = {
    "graph": "dialects.graph:Graph",
    "sched": "dialects.sched:Sched",
}

PASSES: dict[str, str] = {
    # cross-level lowerings
    "convert-graph-to-linalg": "passes.conversions.convert_graph_to_linalg:ConvertGraphToLinalgPass",
    "convert-linalg-to-loops": "passes.conversions.linalg_to_loops:ConvertLinalgToLoopsPass",
    "convert-linalg-to-gpu": "passes.conversions.linalg_to_gpu:ConvertLinalgToGpuPass",
    "convert-vector-to-llvm": "passes.conversions.convert_vector_to_llvm:ConvertVectorToLLVMPass",
    "convert-memref-to-llvm": "passes.conversions.convert_memref_to_llvm:ConvertMemRefToLLVMPass",
    "convert-math-to-llvm": "passes.conversions.convert_math_to_llvm:ConvertMathToLLVMPass",
    "convert-arith-to-llvm": "passes.conversions.convert_arith_to_llvm:ConvertArithToLLVMPass",
    "convert-index-to-llvm": "passes.conversions.convert_index_to_llvm:ConvertIndexToLLVMPass",
    "convert-cf-to-llvm": "passes.conversions.convert_cf_to_llvm:ConvertCfToLLVMPass",
    "convert-func-to-llvm": "passes.conversions.convert_func_to_llvm:ConvertFuncToLLVMPass",
    "convert-parallel-to-runtime": "passes.conversions.convert_parallel_to_runtime:ConvertParallelToRuntimePass",
    # graph-level optimizations
    "fold-constants": "passes.transforms.fold_constants:FoldConstantsPass",
    "fold-batchnorm": "passes.transforms.fold_batchnorm:FoldBatchnormPass",
    "transpose-weights": "passes.transforms.transpose_weights:TransposeWeightsPass",
    "pad-weights": "passes.transforms.pad_weights:PadWeightsPass",
    "pack-weights": "passes.transforms.pack_weights:PackWeightsPass",
    "simplify": "passes.transforms.simplify:SimplifyPass",
    "blocked-layout": "passes.transforms.blocked_layout:BlockedLayoutPass",
    "winograd": "passes.transforms.winograd:WinogradPass",
    "fuse-ops": "passes.transforms.fuse_ops:FuseOpsPass",
    "fold-transposes": "passes.transforms.fold_transposes:FoldTransposesPass",
    "fuse-elementwise": "passes.transforms.fuse_elementwise:FuseElementwisePass",
    # same-level transforms
    "resolve-dynamic-memrefs": "passes.transforms.resolve_dynamic_memrefs:ResolveDynamicMemrefsPass",
    "bufferize": "passes.transforms.bufferize:BufferizePass",
    "outline-kernels": "passes.transforms.outline_kernels:OutlineKernelsPass",
    "profile-kernels": "passes.transforms.profile_kernels:ProfileKernelsPass",
    "default-schedule": "passes.transforms.default_schedule:DefaultSchedulePass",
    "tile": "passes.transforms.tile:TilePass",
    "interchange": "passes.transforms.interchange:InterchangePass",
    "parallelize": "passes.transforms.parallelize:ParallelizePass",
    "pack": "passes.transforms.pack:PackPass",
    "vectorize": "passes.transforms.vectorize:VectorizePass",
    "unroll-jam": "passes.transforms.unroll_jam:UnrollJamPass",
    "split-reduction": "passes.transforms.split_reduction:SplitReductionPass",
}

# xDSL already registers a (different, schedule-less) `convert-linalg-to-loops`; a Universe may
# not redefine a name, so stock xdsl-opt sees ours under a prefixed alias. ziggurat-opt uses ours.
UNIVERSE_ALIASES = {"convert-linalg-to-loops": "ziggurat-convert-linalg-to-loops"}


def load_pass(spec: str) -> type[ModulePass]:
    """The pass class named by a `module:Class` spec of a registry table."""
    return _lazy(spec)()  # type: ignore[return-value]


def get_dialect(name: str) -> Dialect:
    return _lazy(DIALECTS[name])()  # type: ignore[return-value]


def get_pass(name: str) -> type[ModulePass]:
    return load_pass(PASSES[name])


def llvm_with_extras() -> Dialect:
    """Factory for the `llvm` registration: xDSL's dialect plus dialects/llvm_extras.py's ops."""
    factory = _lazy("dialects.llvm_extras:llvm_with_extras")()
    return factory()  # type: ignore[operator]


def dialect_factories() -> dict[str, Callable[[], Dialect]]:
    return {name: _lazy(spec) for name, spec in DIALECTS.items()}  # type: ignore[misc]


def pass_factories(
    passes: dict[str, str] | None = None,
) -> dict[str, Callable[[], type[ModulePass]]]:
    """Name -> lazy class loader for `passes` (by default this layer's PASSES)."""
    return {name: _lazy(spec) for name, spec in (PASSES if passes is None else passes).items()}  # type: ignore[misc]
