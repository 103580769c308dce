"""outline-kernels: move each linalg op of `@main` into its own `func.func private @kernel_<n>`.

One function per kernel is what the scheduler, the tuner (one task per distinct kernel) and
the backends work on. Identical kernels (same op, attributes, body and argument types) share
one function, found by printing the outlined function with canonical value names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg.ops import FillOp, GenericOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass


def _captured(op: Operation) -> list[SSAValue]:
    """Operands of `op` and values its regions use from outside, in first-use order."""
    seen: dict[SSAValue, None] = dict.fromkeys(op.operands)
    inner = {r for o in op.walk() for r in o.results} | {
        a for region in op.regions for b in region.blocks for a in b.args
    }
    for nested in op.walk():
        if nested is op:
            continue
        for v in nested.operands:
            if v not in inner:
                seen.setdefault(v, None)
    return list(seen)


def outline_op(op: Operation) -> tuple[func.FuncOp, list[SSAValue]]:
    """A private function performing `op`, and the values to call it with.

    Scalar constants are cloned into the kernel (so it stays self-contained); every other
    captured value becomes an argument.
    """
    values = _captured(op)
    consts = [v for v in values if isinstance(v.owner, arith.ConstantOp)]
    args = [v for v in values if v not in consts]
    block = Block(arg_types=[v.type for v in args])
    mapper: dict[SSAValue, SSAValue] = dict(zip(args, block.args, strict=True))
    for c in consts:
        assert isinstance(c.owner, Operation)
        clone = c.owner.clone(clone_name_hints=False)
        block.add_op(clone)
        mapper[c] = clone.results[0]
    block.add_op(op.clone(value_mapper=mapper, clone_name_hints=False))
    block.add_op(func.ReturnOp())
    fn = func.FuncOp("kernel", ([v.type for v in args], []), Region(block), "private")
    return fn, args


@dataclass(frozen=True)
class OutlineKernelsPass(ModulePass):
    """Outline every linalg.generic / linalg.fill of `@main` into a shared private kernel."""

    name: ClassVar[str] = "outline-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        main = next(
            (
                f
                for f in op.body.block.ops
                if isinstance(f, func.FuncOp) and f.sym_name.data == "main"
            ),
            None,
        )
        if main is None or not main.body.blocks:
            return
        taken = {
            o.sym_name.data  # type: ignore[attr-defined]
            for o in op.body.block.ops
            if hasattr(o, "sym_name") and o.sym_name is not None  # type: ignore[attr-defined]
        }
        kernels: dict[str, str] = {}
        counter = 0
        for kernel_op in [o for o in main.body.block.ops if isinstance(o, GenericOp | FillOp)]:
            fn, args = outline_op(kernel_op)
            key = str(fn)
            if key not in kernels:
                while f"kernel_{counter}" in taken:
                    counter += 1
                name = f"kernel_{counter}"
                taken.add(name)
                fn.sym_name = fn.sym_name.__class__(name)
                op.body.block.insert_op_before(fn, main)
                kernels[key] = name
            else:
                fn.erase()
            call = func.CallOp(kernels[key], args, [])
            main.body.block.insert_op_before(call, kernel_op)
            main.body.block.erase_op(kernel_op)
        # Scalar constants only used by outlined kernels are now dead in @main.
        for c in [o for o in main.body.block.ops if isinstance(o, arith.ConstantOp)]:
            if not c.result.uses:
                main.body.block.erase_op(c)
