"""The printer's entry points: a flavour by name, its prelude, and one function or a whole
gpu.module printed as a C program. Importing it registers every op handler (ops/)."""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.ir import Operation

from compiler.backends.gpu.c_printer import ops  # noqa: F401  (registers the op handlers)
from compiler.backends.gpu.c_printer.cuda import _Cuda
from compiler.backends.gpu.c_printer.errors import PrintError
from compiler.backends.gpu.c_printer.flavour import FLAVOURS, _Flavour
from compiler.backends.gpu.c_printer.function_printer import _FunctionPrinter
from compiler.backends.gpu.c_printer.opencl import _OpenCL


def _flavour(name: str) -> _Flavour:
    if name == "opencl":
        return _OpenCL()
    if name == "cuda":
        return _Cuda()
    raise PrintError(f"unknown C flavour '{name}' (known: {', '.join(FLAVOURS)})")


def prelude(flavour: str, uses_f64: bool = False) -> str:
    """The helpers every printed program starts with (guarded: texts may be concatenated)."""
    return _flavour(flavour).prelude(uses_f64)


def print_function(fn: Operation, flavour: str, kernel: bool = True) -> str:
    """One gpu.func or loop-level func.func (memref arguments, no results) as a C program: the
    prelude, then the function as a kernel (the parameter convention) or, with kernel=False, as
    a device function taking one plain pointer per memref."""
    fl = _flavour(flavour)
    printer = _FunctionPrinter(fn, fl, kernel)
    text = printer.print()
    return fl.prelude(printer.uses_f64) + "\n" + text


def print_module(module: Operation, flavour: str) -> str:
    """Every gpu.func of a gpu.module as a kernel, after the flavour's prelude."""
    fl = _flavour(flavour)
    if not isinstance(module, gpu.ModuleOp):
        raise PrintError(f"print_module takes a gpu.module, not '{module.name}'")
    module_name = module.sym_name.data
    texts, uses_f64 = [], False
    for op in module.body.block.ops:
        if isinstance(op, gpu.FuncOp):
            printer = _FunctionPrinter(op, fl, kernel=True)
            texts.append(printer.print())
            uses_f64 |= printer.uses_f64
        elif op.name != "memref.global":
            raise PrintError(
                f"{fl.name}: cannot print '{op.name}' in gpu.module @{module_name}: only "
                "gpu.func kernels and workgroup memref.globals are printed"
            )
    return fl.prelude(uses_f64) + "\n" + "\n".join(texts)
