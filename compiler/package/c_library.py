"""export_shared_library: a package's code as a shared library with a small C API and header.

For programs that are not Python (as onnx-mlir and TVM offer): the package's object files,
unchanged, linked by the system C compiler with c_api.c (the `zg_*` functions, c_api.h), a
generated table of the model's inputs and outputs, the weights and, when the code runs parallel
loops, compiler/parallel_runtime.c. Nothing is compiled again from IR.

The weights are bound exactly as the Python loader binds them (llvm_cpu.py): @main refers to
each as an external global whose address is the data, so an assembly file defines each symbol
as 64-byte-aligned data `.incbin`-ed from its .npy part (header skipped). It is writable data, as
the loader's numpy arrays are: the package does not say which globals the code only reads.

The code was compiled with LLVM's JIT code model (64-bit absolute addresses), not as
position-independent code, so the library carries text relocations (`-z notext`): glibc's loader
applies them; a system that forbids them (some SELinux policies) cannot load it. Only the `zg_*`
functions are exported (a version script): the kernels, @main (named `main` in the objects) and
the thread pool stay private to the library.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from compiler import parallel_runtime
from compiler.package import llvm_cpu
from compiler.package.errors import PackageError
from compiler.package.format import spec_from_json
from compiler.package.host_check import check_host
from compiler.package.reader import read_package
from compiler.tensor_spec import TensorSpec, spelled

HERE = Path(__file__).parent
API_SOURCE = HERE / "c_api.c"
API_HEADER = HERE / "c_api.h"
HEADER_NAME = "ziggurat_model.h"
"""The header written next to the library (the same API for every model)."""
CFLAGS = ("-O2", "-std=c11", "-fPIC", "-pthread", "-shared")
LDFLAGS = ("-Wl,-z,notext", "-Wl,-z,noexecstack", "-Wl,--no-undefined")
_LINK_TIMEOUT_S = 300

_SYMBOL = re.compile(r"[A-Za-z_.$][A-Za-z0-9_.$]*")
"""What a weight symbol may be: a name the assembler takes as it is."""
_VERSION_SCRIPT = "{ global: zg_*; local: *; };\n"


def _c_string(text: str) -> str:
    """`text` as a C string literal (UTF-8; anything but plain ASCII as octal escapes)."""
    out = []
    for b in text.encode():
        c = chr(b)
        out.append(c if 32 <= b < 127 and c not in '"\\?' else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _tables(prefix: str, specs: list[TensorSpec]) -> list[str]:
    """C definitions of one side's names, dtypes, ranks, shapes and sizes (arrays padded to one
    entry: C has no empty arrays)."""
    rows = [
        f"static const int64_t zg_{prefix}_shape_{i}[] = "
        f"{{{', '.join(str(d) for d in s.shape) or '0'}}};"
        for i, s in enumerate(specs)
    ]

    def table(ctype: str, name: str, items: list[str], pad: str) -> str:
        return f"static {ctype} zg_{prefix}_{name}[] = {{{', '.join(items or [pad])}}};"

    rows += [
        table("const char *const", "names", [_c_string(s.name) for s in specs], "0"),
        table("const char *const", "dtypes", [_c_string(s.dtype.name) for s in specs], "0"),
        table("const int", "ranks", [str(len(s.shape)) for s in specs], "0"),
        table(
            "const int64_t *const",
            "shapes",
            [f"zg_{prefix}_shape_{i}" for i in range(len(specs))],
            "0",
        ),
        table(
            "const int64_t",
            "bytes",
            [str(int(np.prod(s.shape, dtype=np.int64)) * s.dtype.itemsize) for s in specs],
            "0",
        ),
    ]
    return rows


def _model_tables(
    inputs: list[TensorSpec],
    outputs: list[TensorSpec],
    threads: int,
    parallel: bool,
    checks: list[TensorSpec] | None = None,
) -> str:
    """zg_model_tables.h: what c_api.c needs to know of this model, and the call of @main.
    `checks`: @main's index-check results, after the outputs (tensor_spec.check_indices):
    zg_call_main passes them buffers of its own and returns the first whose indices fell out
    of range (its description and the index in `what` and `bad`), else -1."""
    checks = checks or []
    n_in, n_out, n_chk = len(inputs), len(outputs), len(checks)
    params = ", ".join(["void *"] * (n_in + n_out + n_chk)) or "void"
    args = ", ".join(
        [f"in[{i}]" for i in range(n_in)]
        + [f"out[{i}]" for i in range(n_out)]
        + [f"chk[{k}]" for k in range(n_chk)]
    )
    verdicts = []
    for k, c in enumerate(checks):
        e = int(c.index_extent or 0)
        verdicts += [
            f"    if (chk[{k}][0] >= {e}LL || chk[{k}][1] >= {e}LL) {{",
            f"        *what = {_c_string(c.index_check or '')};",
            f"        *bad = chk[{k}][0] >= {e}LL ? chk[{k}][0] : -1 - chk[{k}][1];",
            f"        *extent = {e}LL;",
            "        return 0;",
            "    }",
        ]
    return "\n".join(
        [
            "/* Generated by compiler/package/c_library.py: this model's tensors and @main. */",
            f"#define ZG_NUM_INPUTS {n_in}",
            f"#define ZG_NUM_OUTPUTS {n_out}",
            f"#define ZG_DEFAULT_THREADS {threads}",
            f"#define ZG_PARALLEL {int(parallel)}",
            *_tables("in", inputs),
            *_tables("out", outputs),
            "/* @main is `main` in the objects: an asm label, as C reserves the name. */",
            f'extern void zg_package_main({params}) __asm__("main");',
            "/* Calls @main; 0 and the read out of range, if the inputs' indices fell outside",
            "   what they index (the kernels clamped them), else -1. */",
            "static int zg_call_main(void *const *in, void *const *out, const char **what,",
            "                        long long *bad, long long *extent) {",
            "    (void)in; (void)out; (void)what; (void)bad; (void)extent;",
            f"    long long chk[{max(1, n_chk)}][2];",
            "    (void)chk;",
            f"    zg_package_main({args});",
            *verdicts,
            "    return -1;",
            "}",
            "",
        ]
    )


def _weight_span(path: str, member: str, blob: memoryview) -> tuple[int, int]:
    """(offset, size in bytes) of a .npy part's data, checked as the loader checks it."""
    head = io.BytesIO(bytes(blob[:65536]))
    try:
        version = np.lib.format.read_magic(head)
        read = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read(head)
    except (ValueError, OSError, EOFError) as e:
        raise PackageError(path, f"part {member!r} is not a .npy array ({e})") from None
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    start = head.tell()
    if not dtype.isnative or (fortran and len(shape) > 1) or start + size != len(blob):
        raise PackageError(path, f"part {member!r} is not a flat native numeric array")
    return start, size


def _weights_asm(
    path: str, weights: dict[str, str], parts: dict[str, memoryview], build: Path
) -> str:
    """weights.S: each weight symbol defined as its part's data; the parts written to `build`."""
    lines = ["/* Generated by compiler/package/c_library.py: the weights @main refers to. */"]
    for i, (symbol, member) in enumerate(sorted(weights.items())):
        if not _SYMBOL.fullmatch(symbol):
            raise PackageError(path, f"weight symbol {symbol!r} is not a plain name")
        start, size = _weight_span(path, member, parts[member])
        (build / f"weight-{i}.npy").write_bytes(parts[member])
        lines += [
            f'.section .data.{symbol},"aw"',
            ".balign 64",
            f".globl {symbol}",
            f"{symbol}:",
            f'.incbin "weight-{i}.npy", {start}, {size}',
        ]
    return "\n".join(lines) + "\n"


def _specs(path: str, manifest: dict[str, Any], key: str) -> list[TensorSpec]:
    try:
        specs = [spec_from_json(e) for e in manifest[key]]
    except (ValueError, TypeError, KeyError) as e:
        raise PackageError(path, f"manifest.json: bad `{key}` ({e})") from None
    for s in specs:
        if s.run_time_dims:
            raise PackageError(
                path,
                f"{key[:-1]} {s.name!r} has run-time dims {spelled(s.shape)}: the C API passes "
                "static shapes only (compile the model for one size to export it)",
            )
        if s.compute_dtype is not None or s.run_time_axis is not None or s.length_of:
            raise PackageError(
                path,
                f"{key[:-1]} {s.name!r} is "
                + ("computed as " + s.compute_dtype.name if s.compute_dtype else "data-dependent")
                + ": the C API passes tensors as they are and supports neither yet",
            )
    return specs


def _link(args: list[str], build: Path) -> None:
    """Run the C compiler in `build`; ParallelRuntimeError with its messages if it fails."""
    argv = parallel_runtime._compiler()
    try:
        proc = subprocess.run(
            [*argv, *args], cwd=build, capture_output=True, text=True, timeout=_LINK_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise parallel_runtime.ParallelRuntimeError(
            f"linking the model's C library with {argv[0]!r} failed ({e})"
        ) from e
    if proc.returncode != 0:
        stderr = " | ".join(line for line in proc.stderr.strip().splitlines() if line.strip())
        raise parallel_runtime.ParallelRuntimeError(
            f"linking the model's C library with {argv[0]!r} failed (exit code "
            f"{proc.returncode}): {stderr[:2000] or 'no output'}"
        )


def _package(package: Any, scratch: Path) -> str:
    """A path to the package: `package` itself, or a CompiledModel saved to `scratch`."""
    if hasattr(package, "save") and not isinstance(package, (str, os.PathLike)):
        saved = scratch / "model.zpkg"
        package.save(saved)
        return str(saved)
    return os.fspath(package)


def export_shared_library(
    package: Any, out_dir: str | os.PathLike[str], name: str = "model"
) -> Path:
    """Write `lib<name>.so` and ziggurat_model.h (c_api.h) for a package (a path) or a compiled
    model (anything with `save`, e.g. CompiledModel) into `out_dir`; return the library's path.

    PackageError for a package that is not fit to run on this host or that the C API cannot
    express; parallel_runtime.ParallelRuntimeError (with how to fix it) if there is no working C
    compiler (`$CC`, else `cc`) or the link fails."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise ValueError(f"library name {name!r} must be letters, digits, '_' or '-'")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zg-c-library-") as tmp:
        build = Path(tmp)
        contents = read_package(_package(package, build))
        path, manifest, parts = contents.path, contents.manifest, contents.parts
        if manifest.get("backend") != llvm_cpu.BACKEND:
            raise PackageError(
                path,
                f"is for backend {manifest.get('backend')!r}; only llvm-cpu packages "
                "can be exported as a C library",
            )
        check_host(path, manifest.get("target"))
        inputs, results = _specs(path, manifest, "inputs"), _specs(path, manifest, "outputs")
        checks = [s for s in results if s.index_check is not None]
        outputs = [s for s in results if s.index_check is None]
        if outputs + checks != results:  # @main returns the checks last
            raise PackageError(path, "manifest.json: an index check comes before an output")
        section: Any = manifest.get(llvm_cpu.BACKEND)
        try:
            objects, weights = list(section["objects"]), dict(section["weights"])
            needs = list(section["needs"])
            signature = section["functions"]["main"]
        except (KeyError, TypeError) as e:
            raise PackageError(
                path, f"manifest.json: bad `{llvm_cpu.BACKEND}` section ({e!r})"
            ) from None
        missing = [m for m in [*objects, *weights.values()] if m not in parts]
        if missing:
            raise PackageError(path, f"manifest.json names members it does not hold: {missing}")
        if signature != [["ptr"] * (len(inputs) + len(outputs) + len(checks)), None]:
            raise PackageError(
                path, f"its main function has type {signature!r}, not one pointer per tensor"
            )
        unknown = [n for n in needs if n not in llvm_cpu.NEEDS]
        if unknown:
            raise PackageError(path, f"needs {unknown}, which this ziggurat does not provide")
        parallel = llvm_cpu.PARALLEL_RUNTIME in needs
        saved = manifest.get("threads", 1)
        threads = saved if isinstance(saved, int) and saved >= 1 else 1

        sources = [str(API_SOURCE), "weights.S"]
        if parallel:
            sources.append(str(parallel_runtime.SOURCE))
        for i, member in enumerate(objects):
            (build / f"object-{i}.o").write_bytes(parts[member])
        (build / "weights.S").write_text(_weights_asm(path, weights, parts, build))
        (build / "zg_model_tables.h").write_text(
            _model_tables(inputs, outputs, threads, parallel, checks)
        )
        shutil.copyfile(API_HEADER, build / HEADER_NAME)
        (build / "exports.map").write_text(_VERSION_SCRIPT)
        target = out / f"lib{name}.so"
        _link(
            [
                *CFLAGS,
                f"-I{build}",
                "-o",
                str(build / target.name),
                *sources,
                *(f"object-{i}.o" for i in range(len(objects))),
                *LDFLAGS,
                "-Wl,--version-script=exports.map",
            ],
            build,
        )
        shutil.copyfile(build / target.name, target)
        shutil.copyfile(API_HEADER, out / HEADER_NAME)
    return target
