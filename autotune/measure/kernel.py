"""What a measurement reads from a task's kernel IR: the kernel, its arguments, its private ones.

xDSL and the compiler are imported inside the functions, not here: the runner process imports
this package (to reach autotune/measure/runner.py) and must start without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autotune.measure.interfaces import Signature

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp


def parse_kernel(text: str) -> tuple[Context, ModuleOp, FuncOp]:
    """(context, module, the kernel) of a module holding one function with a body."""
    # imported here: keeps the runner process free of xDSL (see the module docstring)
    from xdsl.dialects import func
    from xdsl.parser import Parser

    from compiler.pass_runner import make_context

    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if len(kernels) != 1:
        raise ValueError(f"expected one kernel function with a body, got {len(kernels)}")
    return ctx, module, kernels[0]


def kernel_signature(kernel_ir: str) -> Signature:
    """(shape, numpy dtype name) of each memref argument of the kernel, in order."""
    # imported here: keeps the runner process free of xDSL (see the module docstring)
    from xdsl.dialects.builtin import MemRefType

    from dialects.dense import numpy_dtype

    _, _, kernel = parse_kernel(kernel_ir)
    out = []
    for t in kernel.function_type.inputs.data:
        if not isinstance(t, MemRefType):
            raise ValueError(f"kernel argument of type {t} is not a memref")
        shape = tuple(t.get_shape())
        strides, offset = tuple(t.get_strides() or ()), t.get_offset() or 0
        if offset or strides != tuple(MemRefType.strides_for_shape(shape) if shape else ()):
            # a view (subview) argument: the kernel addresses its whole underlying span from the
            # base pointer, so it gets a flat buffer that large (as it has in the real program)
            last = offset
            for n, s in zip(shape, strides):
                if s is None:
                    raise ValueError(f"kernel argument of type {t} has a dynamic stride")
                last += (n - 1) * int(s)
            shape = (last + 1,)
        out.append((shape, numpy_dtype(t.element_type).name))
    return out


def private_args(kernel_ir: str) -> set[int]:
    """Arguments whose contents are unspecified after the kernel (intermediates of a fused group:
    a fused schedule may never write them), so they are not compared with the reference."""
    # imported here: keeps the runner process free of xDSL (see the module docstring)
    from xdsl.dialects.builtin import DenseArrayBase

    _, _, kernel = parse_kernel(kernel_ir)
    attr = kernel.attributes.get("ziggurat.private_args")
    return set(attr.get_values()) if isinstance(attr, DenseArrayBase) else set()
