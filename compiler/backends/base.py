"""The seam between the compiler and its back ends: what every target ("cpu", "opencl", "cuda")
does, named once (compiler/backends/registry.py BACKENDS holds one of each).

    backend.check_available()                      # CompileError: why it cannot run here
    backend.lower(module, ctx, timings, options)   # to its last IR level (in place)
    artifact = backend.emit(module, ctx, n_inputs, options)  # what a package holds and loads
    program = backend.load(artifact, threads)      # a Program: function("main")(*arrays)
    section, parts = backend.pack(path, artifact)  # the package's backend section and members
    program = backend.unpack(path, manifest, parts, threads)

The artifact is the backend's own: for the CPU, the JIT-loaded LLVMCPUProgram itself (its
kernels' object files and @main's IR are what a package saves: the workers build and load in
one go); for a GPU, a compiler.backends.gpu.plan.GpuArtifact (kernel source, PTX for CUDA, the
host plan, the preset the kernels were scheduled for). Nothing here imports xDSL, ONNX or the
passes at import time: the lean package runtime (compiler/package/loader.py) reaches `unpack`
through the registry; `lower` and `emit` import the compiler when they are called.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from compiler.errors import CompileError

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass


class Program(Protocol):
    """Loaded code: what compiler/host_model.py HostModel runs. `function("main")` takes the
    inputs then the output buffers (numpy arrays, or on the CPU their pointers)."""

    def function(self, name: str) -> Callable[..., Any]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class CompileOptions:
    """How `Backend.lower` lowers a module and `Backend.emit` compiles it (see
    compiler/model.py compile_module)."""

    optimize: bool
    """Whether the graph-level passes (folding, fusion) run."""
    schedules: Sequence[str | ModulePass]
    """Passes run on the kernels before the default schedules."""
    threads: int
    """The threads a CPU's parallel loops are scheduled for."""
    layout: str
    """The CPU's convolution layout (compiler/pipelines.py LAYOUTS)."""
    preset: str | None
    """The preset the kernels are scheduled for, resolved (`Backend.resolve_preset`)."""
    jobs: int | None = None
    """The worker processes `emit` compiles the kernels in, where the backend uses any (None:
    one per core)."""


A = TypeVar("A")
"""A backend's artifact type."""


class Backend(ABC, Generic[A]):
    """One target of the model API, the CLI and packages (see the module)."""

    name: ClassVar[str]
    """The target's name (`compile_model(target=...)`, `--target`)."""
    package_backend: ClassVar[str]
    """The manifest's `backend` for its packages (and the name of their section)."""
    cached: ClassVar[bool] = False
    """Whether compiler/compile_cache.py keeps its models (keyed by this CPU's target)."""
    threaded: ClassVar[bool] = False
    """Whether its programs run parallel loops on the host's thread pool (`threads`)."""
    layouts: ClassVar[tuple[str, ...] | None] = None
    """The `layout` values it takes (None: every one of compiler/pipelines.py LAYOUTS)."""

    def unavailable_reason(self) -> str | None:
        """None when its programs can run on this machine, else why not (one line)."""
        return None

    def check_available(self) -> None:
        """CompileError naming the reason when it cannot run here (before compiling)."""
        reason = self.unavailable_reason()
        if reason is not None:
            raise CompileError(f"target '{self.name}' cannot run on this machine: {reason}")

    def resolve_preset(self, preset: str | None) -> str | None:
        """The preset the kernels are scheduled for: `preset`, else this backend's default
        (a GPU's device kind); None for a backend without presets."""
        return None

    @abstractmethod
    def lower(
        self, module: ModuleOp, ctx: Context, timings: dict[str, float], options: CompileOptions
    ) -> ModuleOp:
        """`module` (graph level) lowered in place to the backend's last IR level."""

    @abstractmethod
    def emit(self, module: ModuleOp, ctx: Context, num_inputs: int, options: CompileOptions) -> A:
        """The artifact of a module at the backend's last level (`num_inputs`: how many of
        @main's arguments are inputs; `options`: those `lower` was given)."""

    @abstractmethod
    def load(self, artifact: A, threads: int) -> Program:
        """The artifact, loaded to run here (CompileError when it cannot be)."""

    @abstractmethod
    def package_target(self, artifact: A) -> dict[str, Any]:
        """The manifest's `target`: what the code was compiled for."""

    @abstractmethod
    def pack(self, path: str, artifact: A) -> tuple[dict[str, Any], dict[str, bytes]]:
        """(the manifest's backend section, member name -> bytes); PackageError naming `path`
        when the artifact is not this backend's."""

    @abstractmethod
    def unpack(
        self, path: str, manifest: dict[str, Any], parts: dict[str, memoryview], threads: int
    ) -> Program:
        """A verified package's program, loaded (PackageError for what does not fit here)."""
