"""Packages: a compiled model as one self-contained file, and the lean runtime that runs it.

    compile_model("model.onnx").save("model.zpkg")     # or: ziggurat compile model.onnx -o model.zpkg
    model = load_package("model.zpkg")                 # numpy, llvmlite, ctypes: no xDSL, no ONNX
    outputs = model.run({"input": x})                  # same checks and results as CompiledModel

A package is a zip archive (format version 1):

    manifest.json       what the rest is: read first, see below
    code/kernel-<i>.o   one relocatable object file per kernel, as the compiler's workers built it
    code/main.o         @main (the kernel calls and the buffer plan); it refers to every weight
                        of weights/ as an external global, bound to the loaded array by name
    weights/<i>.npy     one 1-D array per large constant (numpy's .npy, stored uncompressed);
                        constants under 4 KiB are inside the object code

manifest.json holds `format` ("ziggurat-package") and `format_version`, `ziggurat_version`,
`backend` (which loader reads the rest: "llvm-cpu" is the only one so far), `target` (the LLVM
triple, CPU name and feature string the code was compiled for), `inputs` and `outputs` (name,
shape, dtype; compiler/tensor_spec.py's fields), `threads` (the default thread count),
`compile_options` (threads, layout, optimize, the schedules applied as `-p` pass strings),
`notes` (the `ziggurat.*` module attributes: memory plan, autotune statistics), the backend's
section under its own name (for "llvm-cpu": the object files in link order, the callable
functions' types, each weight's symbol and part, and `needs`, the runtimes the code calls:
"parallel-runtime" for compiler/parallel_runtime.py's thread pool, built or taken from its
cache when the package loads) and `parts`: the SHA-256 of every other member.

Loading runs the package's native code, so it is refused (PackageError, naming the file and the
problem) unless the file is a regular file owned by you or root and writable by nobody else, in a
directory others cannot write (a sticky one such as /tmp excepted); and unless the archive is
intact, every member path is plain and relative, every part is listed and matches its hash, the
format version is this one's, and this host has every CPU feature the code was compiled for.
Nothing is extracted to disk: members are read into memory from the one checked file.

The modules: errors.py (PackageError), format.py (names, version, manifest fields), writer.py
(save_package), reader.py (the file, archive and hash checks), host_check.py (target against
this host), llvm_cpu.py (the CPU backend's parts, both ways), loader.py (load_package),
loaded_model.py (LoadedModel), c_library.py (export_shared_library: the code as a shared
library with a C API, c_api.h and c_api.c). None imports xDSL, ONNX or the passes.
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
