"""The op handlers, one module per dialect family; importing this package registers them all
with the function printer (`_handles`)."""

from compiler.backends.gpu.c_printer.ops import arith_math, gpu_func, memref, scf, vector

__all__ = ["arith_math", "gpu_func", "memref", "scf", "vector"]
