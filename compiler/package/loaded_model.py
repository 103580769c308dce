"""LoadedModel: a package's code, loaded, run on numpy arrays like the CompiledModel it was.

The same boundary as CompiledModel (compiler/tensor_spec.py): the same input checks and errors,
the same output conversion and trimming, so that a package and the model it was saved from
are interchangeable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler import parallel_runtime
from compiler.runtime import aligned_copy, aligned_empty
from compiler.tensor_spec import TensorSpec, check_inputs, results


@dataclass
class LoadedModel:
    """A model loaded from a package (`load_package`); `run` maps input arrays to outputs."""

    path: str
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    program: Any
    """The loaded code (for "llvm-cpu": a compiler.backends.llvm_cpu.jit.LLVMCPUProgram)."""
    threads: int = 1
    """Threads of the parallel-for runtime while this model runs (default: the package's)."""
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.inputs]

    @property
    def output_names(self) -> list[str]:
        """The model's outputs (not the hidden lengths of data-dependent ones)."""
        return [s.name for s in self.outputs if s.length_of is None]

    def _use_threads(self) -> None:
        if getattr(self.program, "parallel", False):
            parallel_runtime.set_num_threads(self.threads)

    def _buffers(self, feeds: Mapping[str, np.ndarray]) -> tuple[list[Any], list[np.ndarray]]:
        args = [aligned_copy(a) for a in check_inputs(self.inputs, feeds)]
        return args, [aligned_empty(s.shape, s.buffer_dtype) for s in self.outputs]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Outputs by name; InputError for a wrong input name, dtype or shape."""
        args, outs = self._buffers(feeds)
        self._use_threads()
        self.program.function("main")(*args, *outs)
        return results(self.outputs, outs)

    def runner(self, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
        """A zero-argument callable that runs the model on fixed buffers (for timing)."""
        args, outs = self._buffers(feeds)
        fn = self.program.function("main")
        self._use_threads()
        return lambda: fn(*args, *outs)

    def close(self) -> None:
        """Free the loaded code now rather than when collected."""
        self.program.close()
