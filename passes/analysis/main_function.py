"""The module's entry function: `@main`, which bufferize, outline-kernels and the CLI work on."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp


def main_function(module: ModuleOp) -> func.FuncOp | None:
    """`func.func @main` at the top of `module`, or None."""
    return next(
        (
            f
            for f in module.body.block.ops
            if isinstance(f, func.FuncOp) and f.sym_name.data == "main"
        ),
        None,
    )
