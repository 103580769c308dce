"""outline-kernels: move each linalg op of `@main` into its own `func.func private @kernel_<n>`.

One function per kernel is what the scheduler, the tuner (one task per distinct kernel) and
the backends work on. Identical kernels (same op, attributes, body and argument types) share
one function, found by printing the outlined function with canonical value names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.dialects.linalg.ops import FillOp, GenericOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from dialects.attributes import GROUP_ATTR, PRIVATE_ARGS_ATTR
from passes.analysis.main_function import main_function


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


_VIEW_OPS = (
    memref.SubviewOp,
    memref.ExpandShapeOp,
    memref.CollapseShapeOp,
    memref.ReinterpretCastOp,
    memref.ViewOp,
    memref.GetGlobalOp,
    arith.ConstantOp,
)
"""Pure ops that may sit between the ops of one fusion group; they are cloned into its kernel."""

"""Kernel arguments whose contents nobody reads after the kernel (intermediates of its group)."""


def outline_ops(ops: list[Operation]) -> tuple[func.FuncOp, list[SSAValue]]:
    """A private function performing `ops` in order, and the values to call it with.

    Scalar constants are cloned into the kernel (so it stays self-contained); every other
    captured value becomes an argument.
    """
    defined = {r for o in ops for r in o.results}
    values: dict[SSAValue, None] = {}
    for o in ops:
        for v in _captured(o):
            if v not in defined:
                values.setdefault(v, None)
    consts = [v for v in values if isinstance(v.owner, arith.ConstantOp)]
    args = [v for v in values if v not in consts]
    block = Block(arg_types=[v.type for v in args])
    mapper: dict[SSAValue, SSAValue] = dict(zip(args, block.args, strict=True))
    for c in consts:
        assert isinstance(c.owner, Operation)
        clone = c.owner.clone(clone_name_hints=False)
        block.add_op(clone)
        mapper[c] = clone.results[0]
    for o in ops:
        clone = o.clone(value_mapper=mapper, clone_name_hints=False)
        clone.attributes.pop(GROUP_ATTR, None)  # served its purpose; would defeat deduplication
        block.add_op(clone)
    block.add_op(func.ReturnOp())
    fn = func.FuncOp("kernel", ([v.type for v in args], []), Region(block), "private")
    return fn, args


def outline_op(op: Operation) -> tuple[func.FuncOp, list[SSAValue]]:
    return outline_ops([op])


def _root(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, _VIEW_OPS[:4]):
        value = value.owner.operands[0]
    return value


def _top_level(op: Operation, main: func.FuncOp) -> Operation:
    """The op of @main's body that is or contains `op`."""
    while (parent := op.parent_op()) is not None and parent is not main:
        op = parent
    return op


def _removable(unit: list[Operation], main: func.FuncOp) -> set[Operation]:
    """The ops of `unit` that @main no longer needs once the kernel is called: all of them but
    the views (and constants) that something else still reads, and the views those stand on.

    A view is kept when any op that stays in @main uses it; an op that stays is not a reason
    to remove what it uses, so the decision runs from the last op of the unit backwards.
    """
    removed: set[Operation] = set()
    for o in reversed(unit):
        if all(_top_level(u.operation, main) in removed for r in o.results for u in r.uses):
            removed.add(o)
    return removed


def _private_args(removed: set[Operation], args: list[SSAValue], main: func.FuncOp) -> list[int]:
    """Indices of arguments that are arena intermediates used only by the ops in `removed` (the
    ops of this kernel that leave @main): nothing reads their contents after the kernel."""

    def uses_outside(v: SSAValue) -> bool:
        for use in v.uses:
            user = _top_level(use.operation, main)
            if user not in removed and not (
                isinstance(user, _VIEW_OPS[:4]) and not uses_outside(user.results[0])
            ):
                return True
        return False

    private = []
    for i, a in enumerate(args):
        root = _root(a)
        if isinstance(root.owner, memref.ViewOp) and not uses_outside(root.owner.results[0]):
            private.append(i)
    return private


def kernel_units(main: func.FuncOp) -> list[list[Operation]]:
    """The op lists that become kernels: each fusion group (with the views between its ops),
    and every ungrouped linalg op on its own."""
    ops = list(main.body.block.ops)
    pos = {o: i for i, o in enumerate(ops)}
    groups: dict[object, list[Operation]] = {}
    for o in ops:
        if isinstance(o, GenericOp | FillOp):
            g = o.attributes.get(GROUP_ATTR)
            key = ("group", g.value.data) if isinstance(g, IntegerAttr) else ("op", id(o))
            groups.setdefault(key, []).append(o)
    units = []
    for members in groups.values():
        span = ops[pos[members[0]] : pos[members[-1]] + 1]
        member_set = set(members)
        if all(o in member_set or isinstance(o, _VIEW_OPS) for o in span):
            # weights stay arguments (so identical kernels with other weights share code):
            # their get_global moves in front of the kernel
            for o in span:
                if isinstance(o, memref.GetGlobalOp) and o is not span[0]:
                    o.detach()
                    main.body.block.insert_op_before(o, span[0])
            span = [o for o in span if not isinstance(o, memref.GetGlobalOp)]
            units.append(span)
        else:  # something else runs in between: keep the ops apart
            units.extend([m] for m in members)
    units.sort(key=lambda u: pos[u[0]])
    return units


@dataclass(frozen=True)
class OutlineKernelsPass(ModulePass):
    """Outline every fusion group / linalg op of `@main` into a shared private kernel."""

    name: ClassVar[str] = "outline-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        main = main_function(op)
        if main is None or not main.body.blocks:
            return
        taken = {
            sym_name.data
            for o in op.body.block.ops
            if isinstance(sym_name := getattr(o, "sym_name", None), StringAttr)
        }
        kernels: dict[str, str] = {}
        counter = 0
        for unit in kernel_units(main):
            fn, args = outline_ops(unit)
            removed = _removable(unit, main)
            private = _private_args(removed, args, main)
            if private:
                fn.attributes[PRIVATE_ARGS_ATTR] = DenseArrayBase.from_list(i64, private)
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
            main.body.block.insert_op_before(call, unit[0])
            for o in reversed(unit):  # views still used by @main stay there
                if o in removed:
                    main.body.block.erase_op(o, safe_erase=False)
        # Scalar constants only used by outlined kernels are now dead in @main.
        for c in [o for o in main.body.block.ops if isinstance(o, arith.ConstantOp)]:
            if not c.result.uses:
                main.body.block.erase_op(c)
