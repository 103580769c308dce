"""LoadedModel: a package's code, loaded, run on numpy arrays like the CompiledModel it was.

The same boundary as CompiledModel (compiler/tensor_spec.py): the same input checks and errors,
the same output conversion and trimming, so that a package and the model it was saved from
are interchangeable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.host_model import HostModel
from compiler.tensor_spec import TensorSpec


@dataclass
class LoadedModel(HostModel):
    """A model loaded from a package (`load_package`); `run` maps input arrays to outputs."""

    path: str
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    program: Any
    """The loaded code (for "llvm-cpu": a compiler.backends.llvm_cpu.jit.LLVMCPUProgram)."""
    threads: int = 1
    """Threads of the parallel-for runtime while this model runs (default: the package's)."""
    manifest: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        """Free the loaded code now rather than when collected."""
        self.program.close()
