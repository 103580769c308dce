"""Name -> factory tables for ziggurat's dialects and passes.

Imports are lazy so that `ziggurat --help` and `xdsl-opt` stay fast. `UNIVERSE` is the
`xdsl.universe` entry point: stock `xdsl-opt` sees our dialects and passes through it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe


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
    "convert-linalg-to-loops": "passes.conversions.convert_linalg_to_loops:ConvertLinalgToLoopsPass",
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
    "simplify": "passes.transforms.simplify:SimplifyPass",
    "fuse-ops": "passes.transforms.fuse_ops:FuseOpsPass",
    # same-level transforms
    "bufferize": "passes.transforms.bufferize:BufferizePass",
    "outline-kernels": "passes.transforms.outline_kernels:OutlineKernelsPass",
    "default-schedule": "passes.transforms.default_schedule:DefaultSchedulePass",
    "autotune": "passes.transforms.autotune:AutotunePass",
    "tile": "passes.transforms.tile:TilePass",
    "interchange": "passes.transforms.interchange:InterchangePass",
    "parallelize": "passes.transforms.parallelize:ParallelizePass",
    "pack": "passes.transforms.pack:PackPass",
    "vectorize": "passes.transforms.vectorize:VectorizePass",
    "unroll-jam": "passes.transforms.unroll_jam:UnrollJamPass",
}

# xDSL already registers a (different, schedule-less) `convert-linalg-to-loops`; a Universe may
# not redefine a name, so stock xdsl-opt sees ours under a prefixed alias. ziggurat-opt uses ours.
_UNIVERSE_ALIASES = {"convert-linalg-to-loops": "ziggurat-convert-linalg-to-loops"}


def get_dialect(name: str) -> Dialect:
    return _lazy(DIALECTS[name])()  # type: ignore[return-value]


def get_pass(name: str) -> type[ModulePass]:
    return _lazy(PASSES[name])()  # type: ignore[return-value]


def llvm_with_extras() -> Dialect:
    """Factory for the `llvm` registration: xDSL's dialect plus dialects/llvm_extras.py's ops."""
    from dialects.llvm_extras import llvm_with_extras as factory

    return factory()


def dialect_factories() -> dict[str, Callable[[], Dialect]]:
    return {name: _lazy(spec) for name, spec in DIALECTS.items()}  # type: ignore[misc]


def pass_factories() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: _lazy(spec) for name, spec in PASSES.items()}  # type: ignore[misc]


UNIVERSE = Universe(
    all_dialects=dialect_factories(),
    all_passes={_UNIVERSE_ALIASES.get(n, n): f for n, f in pass_factories().items()},
)
