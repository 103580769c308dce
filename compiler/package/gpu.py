"""The "opencl" and "cuda" backends of packages: a GpuArtifact to parts and back.

A GPU package holds the kernels' source (OpenCL C, or CUDA C and the PTX nvcc made of it), the
host plan as JSON in the manifest's section (compiler/backends/gpu/plan.py: inputs, outputs,
weights, arena, launches) and each weight as a .npy part. Loading builds the OpenCL C with
the OpenCL driver, or loads the PTX with the CUDA driver (no nvcc), through the runtimes the
compiled model uses (opencl_runtime.py, cuda_runtime.py): the same kernels, launches and
weights. A package for an API this host cannot run is refused before anything is built.
"""

from __future__ import annotations

from typing import Any

from compiler.backends.gpu.availability import unavailable_reason
from compiler.backends.gpu.cuda_check import check_ptx
from compiler.backends.gpu.device_program import DeviceProgram
from compiler.backends.gpu.plan import GpuArtifact, plan_from_json, plan_to_json
from compiler.errors import CompileError
from compiler.package.errors import PackageError
from compiler.package.llvm_cpu import _npy, _weight

APIS = ("opencl", "cuda")
SOURCE = {"opencl": "code/kernels.cl", "cuda": "code/kernels.cu"}
PTX = "code/kernels.ptx"
_API_NAME = {"opencl": "OpenCL", "cuda": "CUDA"}


def target(artifact: GpuArtifact) -> dict[str, Any]:
    """The manifest's `target`: the API, the preset the kernels were scheduled for, the device
    they were compiled on (if any) and, for CUDA, the PTX's SM architecture."""
    out: dict[str, Any] = {
        "api": artifact.api,
        "preset": artifact.preset,
        "device": artifact.device,
    }
    if artifact.arch is not None:
        out["arch"] = artifact.arch
    return out


def pack(path: str, api: str, artifact: Any) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(the manifest's section, member name -> bytes) of a GpuArtifact for `api`. CUDA's PTX
    is assembled by ptxas first where ptxas is installed (CompileError if it refuses it)."""
    if not isinstance(artifact, GpuArtifact) or artifact.api != api:
        raise PackageError(path, f"holds no {_API_NAME[api]} kernels that a package can hold")
    parts = {SOURCE[api]: artifact.source.encode()}
    weights = {}
    for i, (name, array) in enumerate(artifact.plan.weights.items()):
        weights[name] = f"weights/{i}.npy"
        parts[weights[name]] = _npy(array.reshape(-1))
    section: dict[str, Any] = {
        "source": SOURCE[api],
        "preset": artifact.preset,
        "plan": plan_to_json(artifact.plan),
        "weights": weights,
    }
    if api == "cuda":
        if artifact.ptx is None or artifact.arch is None:
            raise PackageError(path, "the CUDA kernels were not compiled to PTX")
        parts[PTX] = artifact.ptx.encode()
        section["ptx"] = PTX
        section["arch"] = artifact.arch
        section["ptxas"] = "checked" if check_ptx(artifact.ptx, artifact.arch) else "no ptxas"
    return section, parts


def _text(path: str, parts: dict[str, memoryview], member: Any, what: str) -> str:
    if not isinstance(member, str) or member not in parts:
        raise PackageError(path, f"manifest.json: the {what} names no part ({member!r})")
    try:
        return bytes(parts[member]).decode()
    except UnicodeDecodeError:
        raise PackageError(path, f"part {member!r} ({what}) is not UTF-8 text") from None


def unpack(
    path: str, api: str, manifest: dict[str, Any], parts: dict[str, memoryview]
) -> DeviceProgram:
    """The package's kernels built (OpenCL) or loaded (CUDA PTX) on this host's device, its
    weights uploaded. PackageError when this host cannot run `api` or the package does not
    hold what its section says."""
    name = _API_NAME[api]
    saved = manifest.get("target")
    if not isinstance(saved, dict) or saved.get("api") != api:
        got = saved.get("api") if isinstance(saved, dict) else None
        raise PackageError(path, f"its backend is {api} but its target is for {got!r}")
    reason = unavailable_reason(api)
    if reason is not None:
        raise PackageError(path, f"is a package for {api}, but {name} cannot run here: {reason}")
    section = manifest.get(api)
    if not isinstance(section, dict):
        raise PackageError(path, f"manifest.json has no `{api}` section")
    source = _text(path, parts, section.get("source"), "kernel source")
    try:
        members = dict(section["weights"])
        weights = {w: _weight(path, m, parts[m]) for w, m in members.items()}
        plan = plan_from_json(section["plan"], weights)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise PackageError(path, f"manifest.json: bad `{api}` section ({e!r})") from None
    try:
        if api == "cuda":
            from compiler.backends.gpu.cuda_runtime import CudaProgram

            ptx = _text(path, parts, section.get("ptx"), "PTX")
            arch = section.get("arch")
            return CudaProgram(plan, source, ptx=ptx, arch=arch if isinstance(arch, str) else None)
        from compiler.backends.gpu.opencl_runtime import OpenCLProgram

        return OpenCLProgram(plan, source)
    except CompileError as e:
        raise PackageError(path, f"its {name} kernels cannot be loaded here: {e}") from None
