"""Packages: a compiled model as one self-contained file, and the lean runtime that runs it.

    compile_model("model.onnx").save("model.zpkg")     # or: ziggurat compile model.onnx -o model.zpkg
    model = load_package("model.zpkg")                 # numpy, llvmlite, ctypes: no xDSL, no ONNX
    outputs = model.run({"input": x})                  # same checks and results as CompiledModel

A package is a zip archive (format version 1); for the CPU ("llvm-cpu"):

    manifest.json       what the rest is: read first, see below
    code/kernel-<i>.o   one relocatable object file per kernel, as the compiler's workers built it
    code/main.o         @main (the kernel calls and the buffer plan); it refers to every weight
                        of weights/ as an external global, bound to the loaded array by name
    weights/<i>.npy     one 1-D array per large constant (numpy's .npy, stored uncompressed);
                        constants under 4 KiB are inside the object code

for a GPU ("opencl", "cuda": `compile_model(m, target="opencl")`, `ziggurat compile --target`):

    code/kernels.cl     the kernels as OpenCL C, built by the OpenCL driver when it loads; or
    code/kernels.cu     the kernels as CUDA C (informative: loading does not compile it) and
    code/kernels.ptx    the PTX nvcc compiled it to, JIT-compiled by the CUDA driver on loading
    weights/<i>.npy     every weight, as for the CPU

manifest.json holds `format` ("ziggurat-package") and `format_version`, `ziggurat_version`,
`backend` (which backend loads the rest: compiler/backends/registry.py PACKAGE_BACKENDS,
"llvm-cpu", "opencl" or "cuda"), `target` (for the CPU: the LLVM triple, CPU name and feature
string the code was compiled for; for a GPU: `api`, the `preset` the kernels were scheduled for
(passes/schedule/gpu_target.py), the `device` they were compiled on if any, and for CUDA the
PTX's `arch`, e.g. sm_90), `inputs` and `outputs` (name,
shape, dtype; compiler/tensor_spec.py's fields; since format version 2 an output may be an
index check, `index_check` and `index_extent`, which the runtimes judge and never return), `threads` (the default thread count),
`compile_options` (threads, layout, optimize, the schedules applied as `-p` pass strings),
`notes` (the `ziggurat.*` module attributes: memory plan, autotune statistics), the backend's
section under its own name (for "llvm-cpu": the object files in link order, the callable
functions' types, each weight's symbol and part, and `needs`, the runtimes the code calls:
"parallel-runtime" for compiler/parallel_runtime.py's thread pool, built or taken from its
cache when the package loads; for "opencl" and "cuda": `source`, the kernel source's member,
`preset`, `plan`, the host plan as JSON (compiler/backends/gpu/plan.py: inputs, outputs and
weights with shapes and dtypes, arena bytes, launches with kernel, grid, block and arguments as
[kind, key, byte offset]) and `weights`, each weight's part; for "cuda" also `ptx`, `arch` and
`ptxas`: "checked" when ptxas assembled the PTX for that arch at save time, "no ptxas" where it
was not installed) and `parts`: the SHA-256 of every other member. A compile cache's entry
(compiler/compile_cache.py) also lists `shared_parts`: the weights it keeps outside, in the
cache's store as `<sha256>.npy`; it loads only with `load_package(shared_parts=store)`, and
`writer.self_contained_copy` makes a package of it. A CUDA package is written
without a GPU (nvcc makes the PTX); running one needs pycuda and a device of `arch` or newer.

Loading runs the package's native code, so it is refused (PackageError, naming the file and the
problem) unless the file is a regular file owned by you or root and writable by nobody else, in a
directory others cannot write (a sticky one such as /tmp excepted); and unless the archive is
intact, every member path is plain and relative, every part is listed and matches its hash, the
format version is this one's, and this host has every CPU feature the code was compiled for
(a GPU package: this host can run its API, pyopencl with an OpenCL device or pycuda with a CUDA
GPU, the plan fits the manifest's inputs and outputs, and the kernels build or load; `target=`
of load_package, `--target` of `ziggurat run`, refuses a package for another target).
Nothing is extracted to disk: members are read into memory from the one checked file.

The modules: errors.py (PackageError), format.py (names, version, manifest fields), writer.py
(save_package), reader.py (the file, archive and hash checks), host_check.py (target against
this host), llvm_cpu.py (the CPU backend's parts, both ways), gpu.py (the GPU backends'
parts, both ways), loader.py (load_package),
loaded_model.py (LoadedModel), c_library.py (export_shared_library: the code as a shared
library with a C API, c_api.h and c_api.c; CPU packages only). None imports xDSL, ONNX or the
passes; pyopencl and pycuda are imported only when a GPU package loads.
"""

from compiler.package.errors import PackageError
from compiler.package.format import FORMAT_VERSION, SUFFIX
from compiler.package.loaded_model import LoadedModel
from compiler.package.loader import load_package
from compiler.package.writer import save_package

__all__ = [
    "FORMAT_VERSION",
    "SUFFIX",
    "LoadedModel",
    "PackageError",
    "load_package",
    "save_package",
]
