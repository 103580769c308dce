"""The IR-building state every part of the loop generator shares.

One insertion point that moves into each loop body as it is built; scopes of reusable values
(index arithmetic, loads, splats built in a block are reused by the blocks nested in it, never by
siblings, so every reuse is dominated); and values hoisted above the kernel once per function
(constants, flat views, stack buffers), so they dominate every loop that uses them.

Shared: the CPU nest (linalg_to_loops) and the GPU kernel body (linalg_to_gpu) are built through
the same Emitter, so both reuse index arithmetic and hoist constants the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar, cast

from xdsl.builder import Builder
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

Pos = tuple[SSAValue | None, int]
"""A loop position: an SSA index (or none) plus a static offset."""

T = TypeVar("T")
OpT = TypeVar("OpT", bound=Operation)

LoopBody = Callable[[SSAValue, list[SSAValue]], list[SSAValue]]
"""Builds one loop body: `(induction variable, iter_args) -> yielded values`."""


def replaced(items: Sequence[T], index: int, value: T) -> list[T]:
    """A copy of `items` with one entry replaced: loop levels share their callers' positions and
    sizes, so they are never mutated."""
    out = list(items)
    out[index] = value
    return out


def shifted(pos: Pos, offset: int) -> Pos:
    """`pos + offset`, kept static: no index arithmetic is emitted until a value is needed."""
    return (pos[0], pos[1] + offset)


def pos_key(pos: Sequence[Pos], loop: int) -> tuple[int, int]:
    """A hashable stand-in for loop `loop`'s position, to key reused loads by."""
    ssa, offset = pos[loop]
    return (id(ssa), offset)


class Emitter:
    """Builds the loop nest of one kernel in place of the kernel op."""

    def __init__(self, kernel: Operation):
        self.kernel = kernel
        # constants live before everything generated, so they dominate every use
        self.anchor = arith.ConstantOp(IntegerAttr(0, IndexType()))
        Builder(InsertPoint.before(kernel)).insert(self.anchor)
        self.constants: dict[tuple[object, Attribute], SSAValue] = {
            (0, IndexType()): self.anchor.result
        }
        self.hoisted: dict[object, SSAValue] = {}  # flat views and stack buffers, by key
        self.builder = Builder(InsertPoint.before(kernel))
        self.scopes: list[dict[object, SSAValue]] = []

    def insert(self, op: OpT) -> OpT:
        return self.builder.insert(op)

    # ------------------------------------------------------------ function-level values
    def constant(self, value: int | float, typ: Attribute) -> SSAValue:
        """An arith.constant (a splat for a vector type), one per value and type per function."""
        key = (value, typ)
        if key not in self.constants:
            attr: IntegerAttr | FloatAttr | DenseIntOrFPElementsAttr
            if isinstance(typ, VectorType):
                attr = DenseIntOrFPElementsAttr.from_list(typ, [value])
            elif isinstance(typ, IndexType | IntegerType):
                attr = IntegerAttr(int(value), typ)
            else:
                attr = FloatAttr(float(value), cast(AnyFloat, typ))
            const = arith.ConstantOp(attr, typ)
            self.hoist(const)
            self.constants[key] = const.result
        return self.constants[key]

    def index(self, value: int) -> SSAValue:
        return self.constant(value, IndexType())

    def hoist(self, op: Operation) -> None:
        """Insert op with the constants, ahead of the whole loop nest."""
        Builder(InsertPoint.before(self.anchor)).insert(op)

    def stack_buffer(self, key: object, elem: Attribute, size: int) -> SSAValue:
        """A 64-byte-aligned 1-D stack buffer, allocated once at the start of the function."""
        if key not in self.hoisted:
            alloca = memref.AllocaOp.get(elem, 64, [size])
            # at the very start of the function: an alloca in LLVM's entry block is promoted to
            # registers; one after earlier loops would be a dynamic stack allocation
            entry = self.kernel.parent_block()
            while entry is not None and not isinstance(entry.parent_op(), func.FuncOp | gpu.FuncOp):
                entry = entry.parent_op().parent_block()  # type: ignore[union-attr]
            at = (
                InsertPoint.at_start(entry)
                if entry is not None
                else InsertPoint.before(self.anchor)
            )
            Builder(at).insert(alloca)
            self.hoisted[key] = alloca.memref
        return self.hoisted[key]

    # ------------------------------------------------------------------- reuse scopes
    def lookup(self, key: object) -> SSAValue | None:
        """A value built for `key` in this block or one enclosing it."""
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        return None

    def remember(self, key: object, value: SSAValue) -> SSAValue:
        self.scopes[-1][key] = value
        return value

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Values remembered inside are forgotten on exit (a block ends, or memory changes)."""
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()

    @contextmanager
    def inside(self, block: Block) -> Iterator[None]:
        """Build at the end of `block`, in a scope of its own."""
        saved = self.builder
        self.builder = Builder(InsertPoint.at_end(block))
        try:
            with self.scope():
                yield
        finally:
            self.builder = saved

    # --------------------------------------------------------------- index arithmetic
    def position(self, pos: Pos) -> SSAValue:
        """The index value of a loop position."""
        ssa, offset = pos
        if ssa is None:
            return self.index(offset)
        if offset == 0:
            return ssa
        key = ("add", ssa, offset)
        found = self.lookup(key)
        if found is not None:
            return found
        return self.remember(key, self.insert(arith.AddiOp(ssa, self.index(offset))).result)

    def linear_index(self, coefs: Sequence[int], const: int, pos: Sequence[Pos]) -> SSAValue:
        """`const + sum(coef_d * pos_d)` as index arithmetic, reusing what outer blocks built."""
        total = const
        terms: list[tuple[SSAValue, int]] = []
        for loop, coef in enumerate(coefs):
            if coef == 0:
                continue
            ssa, offset = pos[loop]
            total += coef * offset
            if ssa is not None:
                terms.append((ssa, coef))
        key = ("expr", tuple((id(ssa), coef) for ssa, coef in terms), total)
        found = self.lookup(key)
        if found is not None:
            return found
        acc: SSAValue | None = None
        for ssa, coef in terms:
            term = ssa if coef == 1 else self.insert(arith.MuliOp(ssa, self.index(coef))).result
            acc = term if acc is None else self.insert(arith.AddiOp(acc, term)).result
        if acc is None:
            return self.index(total)
        if total != 0:
            acc = self.insert(arith.AddiOp(acc, self.index(total))).result
        return self.remember(key, acc)

    # -------------------------------------------------------------------------- loops
    def for_loop(
        self,
        lower: SSAValue,
        upper: SSAValue,
        step: int,
        iter_args: Sequence[SSAValue],
        body: LoopBody,
    ) -> list[SSAValue]:
        """Emit scf.for; `body(iv, args) -> yielded values` builds the loop body."""
        block = Block(arg_types=[IndexType(), *[a.type for a in iter_args]])
        loop = scf.ForOp(lower, upper, self.index(step), list(iter_args), block)
        self.insert(loop)
        with self.inside(block):
            results = body(block.args[0], list(block.args[1:]))
            self.insert(scf.YieldOp(*results))
        return list(loop.results)
