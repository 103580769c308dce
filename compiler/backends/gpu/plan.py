"""A GPU model as plain data: the host plan (buffers, weights, arena size and launches) that
host_plan.py reads from the gpu-level @main and the GPU runtimes (opencl_runtime.py,
cuda_runtime.py) run, and the GpuArtifact that the GPU backends emit (plan and kernel code).

Free of xDSL (numpy and the standard library only), so that the lean package runtime
(compiler/package/) can load a saved plan: `plan_to_json` / `plan_from_json` are the package
format's `plan` (the weights' data travel as .npy parts, see compiler/package/gpu.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import prod
from typing import Any, Literal

import numpy as np

from compiler.errors import InputError

BufferKind = Literal["input", "output", "weight", "arena"]


@dataclass(frozen=True)
class BufferRef:
    """A kernel argument: the device buffer holding its root and the byte shift into it.

    `key`: the input's or output's position among the inputs or outputs, the weight's global
    name, or 0 for the (single) arena."""

    kind: BufferKind
    key: int | str
    byte_offset: int = 0


@dataclass(frozen=True)
class BufferSpec:
    """One of @main's arguments: an input or an output buffer."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * self.dtype.itemsize


@dataclass(frozen=True)
class Launch:
    """One gpu.launch_func: kernel name (the gpu.func's sym_name), grid and block (x, y, z)."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[BufferRef, ...]


@dataclass(frozen=True, eq=False)
class HostPlan:
    """What running @main on a GPU takes (no xDSL objects: it outlives the module)."""

    inputs: tuple[BufferSpec, ...]
    outputs: tuple[BufferSpec, ...]
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    """Global name -> its data (C-contiguous, the global's shape and dtype), first use first."""
    arena_bytes: int = 0
    launches: tuple[Launch, ...] = ()

    def check_arguments(self, arrays: Sequence[Any]) -> None:
        """InputError unless `arrays` are the inputs then the outputs, as @main takes them:
        C-contiguous numpy arrays of the plan's shapes and dtypes, the outputs writeable."""
        specs = [*self.inputs, *self.outputs]
        if len(arrays) != len(specs):
            raise InputError(
                f"main takes {len(self.inputs)} input and {len(self.outputs)} output arrays, "
                f"got {len(arrays)} arrays"
            )
        for i, (a, spec) in enumerate(zip(arrays, specs)):
            what = f"{'input' if i < len(self.inputs) else 'output'} '{spec.name}'"
            if not isinstance(a, np.ndarray):
                raise InputError(f"{what} is a {type(a).__name__}, not a numpy array")
            if a.dtype != spec.dtype or tuple(a.shape) != spec.shape:
                raise InputError(
                    f"{what} is {a.dtype}{list(a.shape)}; main expects {spec.dtype}{list(spec.shape)}"
                )
            if not a.flags.c_contiguous:
                raise InputError(f"{what} is not C-contiguous")
            if i >= len(self.inputs) and not a.flags.writeable:
                raise InputError(f"{what} is read-only")

    def input_arrays(self, feeds: Sequence[Any] | Mapping[str, Any]) -> list[np.ndarray]:
        """The input arrays, in order, from a sequence or from a mapping by input name, as
        C-contiguous arrays of the plan's dtypes (InputError for a missing or unknown name)."""
        if isinstance(feeds, Mapping):
            unknown = sorted(set(feeds) - {s.name for s in self.inputs})
            missing = [s.name for s in self.inputs if s.name not in feeds]
            if unknown or missing:
                raise InputError(f"feeds: unknown inputs {unknown}, missing inputs {missing}")
            feeds = [feeds[s.name] for s in self.inputs]
        arrays = [np.ascontiguousarray(a) for a in feeds]
        if len(arrays) != len(self.inputs):
            raise InputError(f"main takes {len(self.inputs)} inputs, got {len(arrays)}")
        self.check_arguments([*arrays, *(np.empty(s.shape, s.dtype) for s in self.outputs)])
        return arrays


BUFFER_KINDS: tuple[BufferKind, ...] = ("input", "output", "weight", "arena")


def plan_to_json(plan: HostPlan) -> dict[str, Any]:
    """The plan as JSON-able data; the weights by name, shape and dtype only (their data is
    stored beside it)."""

    def spec(s: BufferSpec) -> dict[str, Any]:
        return {"name": s.name, "shape": list(s.shape), "dtype": s.dtype.name}

    def ref(r: BufferRef) -> list[Any]:
        return [r.kind, r.key, r.byte_offset]

    return {
        "inputs": [spec(s) for s in plan.inputs],
        "outputs": [spec(s) for s in plan.outputs],
        "weights": [
            {"name": n, "shape": list(w.shape), "dtype": w.dtype.name}
            for n, w in plan.weights.items()
        ],
        "arena_bytes": plan.arena_bytes,
        "launches": [
            {
                "kernel": x.kernel,
                "grid": list(x.grid),
                "block": list(x.block),
                "args": [ref(r) for r in x.args],
            }
            for x in plan.launches
        ],
    }


def _int(value: Any, what: str, low: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{what} is {value!r}, not an integer >= {low}")
    return value


def _xyz(value: Any, what: str, low: int) -> tuple[int, int, int]:
    if not isinstance(value, list) or len(value) != 3:
        raise ValueError(f"{what} is {value!r}, not three integers")
    x, y, z = (_int(v, what, low) for v in value)
    return (x, y, z)


def _spec(d: Any, what: str) -> BufferSpec:
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise ValueError(f"{what} {d!r} has no name")
    shape = d.get("shape")
    if not isinstance(shape, list):
        raise ValueError(f"{what} {d['name']!r} has no shape")
    dtype = np.dtype(str(d.get("dtype")))
    if dtype.kind not in "biuf":
        raise ValueError(f"{what} {d['name']!r} has dtype {dtype}, not a number type")
    return BufferSpec(d["name"], tuple(_int(n, f"{what} shape") for n in shape), dtype)


def plan_from_json(data: Any, weights: Mapping[str, np.ndarray]) -> HostPlan:
    """plan_to_json's data back to a HostPlan, each weight's data from `weights` (by name,
    reshaped to the plan's shape); ValueError (or TypeError, KeyError) naming what is wrong."""
    if not isinstance(data, dict):
        raise ValueError("the plan is not a table")
    inputs = tuple(_spec(d, "input") for d in data["inputs"])
    outputs = tuple(_spec(d, "output") for d in data["outputs"])
    arrays: dict[str, np.ndarray] = {}
    for d in data["weights"]:
        spec = _spec(d, "weight")
        array = weights[spec.name]
        if array.dtype != spec.dtype or array.size != prod(spec.shape):
            raise ValueError(
                f"weight {spec.name!r} is {array.dtype}[{array.size}], not "
                f"{spec.dtype}{list(spec.shape)}"
            )
        arrays[spec.name] = array.reshape(spec.shape)
    counts = {"input": len(inputs), "output": len(outputs)}
    launches = []
    for i, d in enumerate(data["launches"]):
        what = f"launch {i}"
        if not isinstance(d, dict) or not isinstance(d.get("kernel"), str):
            raise ValueError(f"{what} names no kernel")
        args = []
        for a in d["args"]:
            if not (isinstance(a, list) and len(a) == 3 and a[0] in BUFFER_KINDS):
                raise ValueError(f"{what}: bad argument {a!r}")
            kind, key, offset = a
            if kind in counts and not (
                isinstance(key, int) and not isinstance(key, bool) and 0 <= key < counts[kind]
            ):
                raise ValueError(f"{what}: argument {a!r} names no {kind}")
            if kind == "weight" and key not in arrays:
                raise ValueError(f"{what}: argument {a!r} names no weight of the plan")
            if kind == "arena" and key != 0:
                raise ValueError(f"{what}: argument {a!r} names no arena")
            args.append(BufferRef(kind, key, _int(offset, f"{what} byte offset")))
        launches.append(
            Launch(
                d["kernel"],
                _xyz(d["grid"], f"{what} grid", 0),
                _xyz(d["block"], f"{what} block", 1),
                tuple(args),
            )
        )
    return HostPlan(
        inputs=inputs,
        outputs=outputs,
        weights=arrays,
        arena_bytes=_int(data["arena_bytes"], "arena_bytes"),
        launches=tuple(launches),
    )


@dataclass(frozen=True, eq=False)
class GpuArtifact:
    """What a GPU backend emits and a GPU package holds: everything needed to run the model on
    a device of its API, without the IR."""

    api: str
    """"opencl" or "cuda"."""
    preset: str
    """The device kind the kernels were scheduled for (passes/schedule/gpu_target.py)."""
    source: str
    """The kernels as OpenCL C or CUDA C."""
    plan: HostPlan
    ptx: str | None = None
    """CUDA: the source compiled by nvcc (compiler/backends/gpu/cuda_check.py cuda_to_ptx)."""
    arch: str | None = None
    """CUDA: the SM architecture of `ptx` (`sm_90`)."""
    device: str = ""
    """The device it was compiled on, if it was loaded on one (informative)."""
