"""What every `ziggurat` verb shares: the usage error, the output and input files, the
argparse value types, the model argument and the compile progress shown on a terminal.

Nothing here imports xDSL: `ziggurat --help` and `ziggurat run X.zpkg` stay fast.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from compiler.levels import GPU_LEVEL, LEVELS

GPU_EMITS = (GPU_LEVEL, "opencl", "cuda")
"""The GPU side of `--emit`: the gpu level (MLIR) and the kernels as OpenCL C or CUDA C."""
EMIT_LEVELS = (*LEVELS, "llvm-ir", "asm", *GPU_EMITS)
"""What `ziggurat compile --emit` prints: every IR level, then LLVM IR or assembly, and the
GPU level and kernel source."""
TARGETS = ("cpu", "opencl", "cuda")
"""`--target`: where the model runs (compiler.model.TARGETS; not imported: --help stays fast)."""
PACKAGE_SUFFIX = ".zpkg"
"""What `compile -o` writes as a package and `run` loads as one (compiler.package.SUFFIX)."""


class UsageError(Exception):
    """Bad command-line arguments (shape strings, files)."""


def parse_input_shapes(specs: Sequence[str] | None) -> dict[str, list[int]]:
    """`NAME=1x3x224x224` (or `NAME=1,3,224,224`) strings -> {name: dims}."""
    shapes: dict[str, list[int]] = {}
    for spec in specs or []:
        name, sep, dims = spec.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = [int(d) for d in re.split(r"[x,]", dims.lower())]
            if any(d <= 0 for d in shapes[name]):
                raise ValueError
        except ValueError:
            raise UsageError(
                f"bad --input-shape '{spec}': expected NAME=D1xD2x... (or D1,D2,...) "
                "with positive dims"
            ) from None
    return shapes


def parse_dims(specs: Sequence[str] | None) -> dict[str, int | tuple[int, int | None]]:
    """`NAME=N` (fix a symbolic dimension), `NAME=LO..HI` or `NAME=LO..` (bound it) strings ->
    {name: N or (LO, HI or None)}, as compile_symbolic's `dims` takes them."""
    dims: dict[str, int | tuple[int, int | None]] = {}
    for spec in specs or []:
        name, sep, value = spec.partition("=")
        lo, dots, hi = value.partition("..")
        try:
            if not sep or not name:
                raise ValueError
            if dots:
                bound = (int(lo), int(hi) if hi.strip() else None)
                if bound[0] < 0 or (bound[1] is not None and bound[1] < bound[0]):
                    raise ValueError
                dims[name] = bound
            else:
                size = int(value)
                if size < 0:
                    raise ValueError
                dims[name] = size
        except ValueError:
            raise UsageError(
                f"bad --dim '{spec}': expected NAME=N, NAME=LO..HI or NAME=LO.. with 0 <= LO <= HI"
            ) from None
    return dims


def write_file(path: str, write: Callable[[BinaryIO], object]) -> None:
    """Write the output file the user named, exactly there. A failure (no such folder, read-only,
    full disk) is a user error naming the path, and a half-written regular file is removed."""
    regular = False
    try:
        with open(path, "wb") as f:
            regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode) and not os.path.islink(path)
            write(f)
    except OSError as e:
        if regular:  # never a device (/dev/full) or what a link points to
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise UsageError(f"cannot write output file {path}: {e.strerror or e}") from None


def write_stdout(text: str) -> None:
    """Write to standard output; a full disk or closed file is a user error (a broken pipe is not
    ours to report: `| head` is normal use)."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise UsageError(f"cannot write to standard output: {e.strerror or e}") from None


def check_readable(path: str, what: str) -> None:
    """A user error naming `path` unless it is a regular file this process can read."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{what} not found: {path}")
    if p.is_dir():
        raise UsageError(f"{what} {path} is a directory")
    if not p.is_file():
        raise UsageError(f"{what} {path} is not a regular file")
    try:
        with open(p, "rb") as f:
            f.read(1)
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror or e}") from None


def write_text(text: str, output: str | None) -> None:
    if output:
        write_file(output, lambda f: f.write(text.encode("utf-8")))
    else:
        write_stdout(text if text.endswith("\n") else text + "\n")


def load_npz(path: str) -> dict:
    import numpy as np

    check_readable(path, "inputs file")
    try:  # allow_pickle=False: a text or object file must fail here, not ask to unpickle
        data = np.load(path, allow_pickle=False)
    except Exception:  # numpy raises several types for a bad archive
        data = None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise UsageError(
            f"{path} is not a valid .npz archive (make one with numpy.savez(path, NAME=array, ...))"
        )
    with data:
        try:
            return {k: data[k] for k in data.files}
        except Exception as e:
            raise UsageError(f"{path} is not a valid .npz archive: {e}") from None


def save_outputs(outputs: dict[str, Any], path: str) -> None:
    """The outputs to the .npz file the user named (exactly there: no `.npz` added), listed."""
    import numpy as np

    save: Callable[..., None] = np.savez  # numpy's stub types **kwds as its own options
    write_file(path, lambda f: save(f, **outputs))
    write_stdout(
        "".join(f"{name}: shape {list(value.shape)} -> {path}\n" for name, value in outputs.items())
    )


@contextlib.contextmanager
def progress_on_terminal() -> Iterator[None]:
    """On a terminal, one stderr line per compile step as it ends (`compile: loops 1.2 s`): a
    long compile is not silent. Logs and pipes get nothing (the result lines are what they
    need); --timing gives the whole report."""
    if not sys.stderr.isatty():
        yield
        return
    from compiler.compile_timing import CompileTimer, collecting

    def show(name: str, seconds: float) -> None:
        print(f"compile: {name} {seconds:.1f} s", file=sys.stderr, flush=True)

    with collecting(CompileTimer(on_step=show)):
        yield


def positive_seconds(text: str) -> float:
    """argparse type of `--seconds`: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got '{text}'") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds (got {text})")
    return value


def non_negative_int(text: str) -> int:
    """argparse type of a count or seed that may be 0 (`--seed`, `demo --trials`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more (got {text})")
    return value


def check_threads(threads: int) -> None:
    from passes.schedule.target import MAX_THREADS

    if threads < 1:
        raise UsageError(f"--threads must be at least 1 (got {threads})")
    if threads > MAX_THREADS:
        raise UsageError(
            f"--threads must be at most {MAX_THREADS}, the thread pool's limit (got {threads})"
        )


def model_arg(name: str) -> Any:
    """A path, or `zoo:NAME` for a built-in model."""
    from compiler import zoo

    try:
        model = zoo.model_from_arg(name)
    except KeyError as e:
        raise UsageError(str(e.args[0])) from None
    if isinstance(model, str):
        check_readable(model, "model file")
    return model
