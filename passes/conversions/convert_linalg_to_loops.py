"""`convert-linalg-to-loops`: materialize each scheduled linalg kernel on memrefs as one loop nest.

The `#sched.schedule` of a kernel (passes/transforms/default_schedule.py computes one when it has
none) decides the nest:

    tile loops (cache level, in `order`; partial last tiles peeled statically)
      point loops over parallel dims (step = register tile; remainders peeled statically)
        register tile: one accumulator per (position, vector chunk), loaded once
          reduction loops (scf.for with the accumulators as iter_args, unrolled by `unroll`)
            the body, replicated per register-tile position, on vector<W x f32> values
        accumulators stored once

so for matmul- and conv-like kernels the inner loop is a broadcast-load-FMA sequence on
registers, which is what fast CPU code looks like (DESIGN.md). Every shape is static, so peeling
produces static trip counts and no masks.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    VectorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import SCHEDULE_ATTR_NAME, Schedule, ScheduleAttr
from passes.analysis.kernel_access import (
    KernelAnalysisError,
    KernelInfo,
    OperandAccess,
    analyze_kernel,
)
from passes.transforms.default_schedule import default_schedule
from passes.transforms.outline_kernels import PRIVATE_ARGS_ATTR
from passes.transforms.pack import check_pack
from passes.transforms.parallelize import check_parallel

Pos = tuple[SSAValue | None, int]
"""A loop position: an SSA index (or none) plus a static offset."""


def fill_to_generic(fill: linalg.FillOp) -> linalg.GenericOp:
    """linalg.fill on a memref as the equivalent generic, so one generator handles both."""
    out = fill.outputs[0]
    assert isinstance(out.type, MemRefType)
    rank = out.type.get_num_dims()
    block = Block(arg_types=[fill.inputs[0].type, out.type.element_type])
    block.add_op(linalg.YieldOp(block.args[0]))
    return linalg.GenericOp(
        inputs=[fill.inputs[0]],
        outputs=[out],
        body=Region(block),
        indexing_maps=[
            AffineMapAttr(AffineMap(rank, 0, ())),
            AffineMapAttr(AffineMap.identity(rank)),
        ],
        iterator_types=ArrayAttr([IteratorTypeAttr.parallel()] * rank),
        result_types=[],
    )


@dataclass
class _Scope:
    """Values materialized in one block, reusable by the blocks nested in it."""

    memo: dict[object, SSAValue]


@dataclass
class _Stage:
    """A generic body to evaluate, and where each block argument comes from: an index into the
    generator's accesses, or None for the running value (accumulator / previous result)."""

    block: Block
    sources: list[int | None]


@dataclass
class Fusion:
    """Generics fused around a reduction kernel G writing T: a prologue that computes T's initial
    value, and elementwise epilogues applied to the finished value before the single store."""

    prologue: linalg.GenericOp | None
    epilogues: list[linalg.GenericOp]
    chain_input: dict[linalg.GenericOp, int]  # which input of each epilogue is the running value


def compose_access(acc: OperandAccess, t: OperandAccess) -> OperandAccess:
    """An access of a generic whose loops are T's coordinates, rewritten in G's loop space.

    T's coordinate e is `t.consts[e] + sum_d t.coefs[e][d] * i_d`, so a linear map of T's
    coordinates stays linear in G's loops.
    """
    n = len(t.coefs[0]) if t.coefs else 0
    coefs = [
        [sum(row[e] * t.coefs[e][d] for e in range(len(row))) for d in range(n)] for row in acc.coefs
    ]
    consts = [c + sum(row[e] * t.consts[e] for e in range(len(row))) for row, c in zip(acc.coefs, acc.consts)]
    out = OperandAccess(acc.value, acc.is_output, acc.shape, acc.mem_strides, acc.offset, coefs, consts)
    out.loop_strides = [
        sum(acc.mem_strides[r] * coefs[r][d] for r in range(len(coefs))) for d in range(n)
    ]
    return out


class LoopNestGenerator:
    """Emits the loop nest of one kernel in place of the linalg op."""

    def __init__(self, info: KernelInfo, sched: Schedule, fusion: Fusion | None = None):
        self.info = info
        self.s = sched
        self.op = info.op
        self.n = info.num_loops
        self.v = sched.vector
        self.w = sched.width if sched.vector >= 0 else 1
        self.scopes: list[_Scope] = []
        # every operand access of every stage, in the main kernel's loop space
        self.accesses: list[OperandAccess] = list(info.accesses)
        n_main = len(info.accesses)
        self.main = _Stage(self.op.body.block, [*range(n_main - 1), None])
        self.prologue: _Stage | None = None
        self.epilogues: list[_Stage] = []
        self.store_index = n_main - 1
        if fusion is not None:
            self._add_fusion(fusion)
        self.written = {self.accesses[self.store_index].value, info.output.value}
        self.first_tile = self.last_tile = True  # position among reduction cache tiles
        self.fused_mul: set[Operation] = set()
        for stage in [self.main, self.prologue, *self.epilogues]:
            if stage is not None:
                self._find_fma(stage.block)
        # constants live before everything generated, so they dominate every use
        self.anchor = arith.ConstantOp(IntegerAttr(0, IndexType()))
        Builder(InsertPoint.before(self.op)).insert(self.anchor)
        self.consts: dict[tuple[object, Attribute], SSAValue] = {
            (0, IndexType()): self.anchor.result
        }
        self.b = Builder(InsertPoint.before(self.op))
        self.bases: dict[int, SSAValue] = {}  # packed operands: panel index of the tile's start

    def _add_fusion(self, fusion: Fusion) -> None:
        """Bring the prologue/epilogue generics' accesses into this kernel's loop space."""
        t = self.info.output
        if fusion.prologue is not None:
            pinfo = analyze_kernel(fusion.prologue)
            sources: list[int | None] = []
            for acc in pinfo.accesses[:-1]:
                sources.append(len(self.accesses))
                self.accesses.append(compose_access(acc, t))
            self.prologue = _Stage(fusion.prologue.body.block, [*sources, None])
        for e in fusion.epilogues:
            einfo = analyze_kernel(e)
            sources = []
            for k, acc in enumerate(einfo.accesses[:-1]):
                if k == fusion.chain_input[e]:
                    sources.append(None)  # the running value, never in memory
                else:
                    sources.append(len(self.accesses))
                    self.accesses.append(compose_access(acc, t))
            self.epilogues.append(_Stage(e.body.block, [*sources, None]))
            self.store_index = len(self.accesses)
            self.accesses.append(compose_access(einfo.accesses[-1], t))

    # ------------------------------------------------------------------ helpers
    def _find_fma(self, block: Block) -> None:
        """Fold `addf(x, mulf(a, b))` with a single-use mulf into one fma."""
        for op in block.ops:
            if isinstance(op, arith.AddfOp):
                for operand in (op.lhs, op.rhs):
                    owner = operand.owner
                    if isinstance(owner, arith.MulfOp) and owner.result.has_one_use():
                        self.fused_mul.add(owner)
                        break

    def const(self, value: int | float, typ: Attribute) -> SSAValue:
        key = (value, typ)
        if key not in self.consts:
            if isinstance(typ, VectorType):
                attr: Attribute = DenseIntOrFPElementsAttr.from_list(typ, [value])
            elif isinstance(typ, IndexType | IntegerType):
                attr = IntegerAttr(int(value), typ)  # type: ignore[arg-type]
            else:
                attr = FloatAttr(float(value), typ)  # type: ignore[arg-type]
            c = arith.ConstantOp(attr, typ)
            Builder(InsertPoint.before(self.anchor)).insert(c)
            self.consts[key] = c.result
        return self.consts[key]

    def idx(self, value: int) -> SSAValue:
        return self.const(value, IndexType())

    def lookup(self, key: object) -> SSAValue | None:
        for scope in reversed(self.scopes):
            if key in scope.memo:
                return scope.memo[key]
        return None

    def remember(self, key: object, value: SSAValue) -> SSAValue:
        self.scopes[-1].memo[key] = value
        return value

    def pos_value(self, p: Pos) -> SSAValue:
        ssa, off = p
        if ssa is None:
            return self.idx(off)
        if off == 0:
            return ssa
        key = ("add", ssa, off)
        found = self.lookup(key)
        if found is not None:
            return found
        return self.remember(key, self.b.insert(arith.AddiOp(ssa, self.idx(off))).result)

    def index_expr(self, coefs: Sequence[int], const: int, pos: Sequence[Pos]) -> SSAValue:
        """`const + sum(coef_d * pos_d)` as index arithmetic, reusing what outer blocks built."""
        total = const
        terms: list[tuple[SSAValue, int]] = []
        for d, c in enumerate(coefs):
            if c == 0:
                continue
            ssa, off = pos[d]
            total += c * off
            if ssa is not None:
                terms.append((ssa, c))
        key = ("expr", tuple((id(s), c) for s, c in terms), total)
        found = self.lookup(key)
        if found is not None:
            return found
        acc: SSAValue | None = None
        for ssa, c in terms:
            t = ssa if c == 1 else self.b.insert(arith.MuliOp(ssa, self.idx(c))).result
            acc = t if acc is None else self.b.insert(arith.AddiOp(acc, t)).result
        if acc is None:
            return self.idx(total)
        if total != 0:
            acc = self.b.insert(arith.AddiOp(acc, self.idx(total))).result
        return self.remember(key, acc)

    def for_loop(
        self, lb: SSAValue, ub: SSAValue, step: int, iter_args: Sequence[SSAValue], body
    ) -> list[SSAValue]:
        """Emit scf.for; `body(iv, args) -> yielded values` builds the loop body."""
        block = Block(arg_types=[IndexType(), *[a.type for a in iter_args]])
        loop = scf.ForOp(lb, ub, self.idx(step), list(iter_args), block)
        self.b.insert(loop)
        saved = self.b
        self.b = Builder(InsertPoint.at_end(block))
        self.scopes.append(_Scope({}))
        results = body(block.args[0], list(block.args[1:]))
        self.b.insert(scf.YieldOp(*results))
        self.scopes.pop()
        self.b = saved
        return list(loop.results)

    # ------------------------------------------------------------ operand access
    def operand_indices(self, i: int, pos: Sequence[Pos]) -> list[SSAValue]:
        a = self.accesses[i]
        indices = [self.index_expr(a.coefs[r], a.consts[r], pos) for r in range(len(a.coefs))]
        if i in self.bases:  # a packed panel: relative to the tile's first element
            indices = [self.rebase(i, x) for x in indices]
        return indices

    def rebase(self, i: int, index: SSAValue) -> SSAValue:
        key = ("rebase", index, self.bases[i])
        found = self.lookup(key)
        if found is not None:
            return found
        return self.remember(key, self.b.insert(arith.SubiOp(index, self.bases[i])).result)

    def load(self, i: int, pos: list[Pos], width: int) -> SSAValue:
        a = self.accesses[i]
        value = a.value
        if a.is_scalar:
            return self.splat(value, width)
        if value in self.written:
            # the output is stored to between loads: never reuse a load of it
            self.scopes.append(_Scope({}))
            try:
                return self._load(i, a, pos, width)
            finally:
                self.scopes.pop()
        return self._load(i, a, pos, width)

    def _load(self, i: int, a, pos: list[Pos], width: int) -> SSAValue:
        value = a.value
        elem = value.type.element_type  # type: ignore[attr-defined]
        if width == 1 or a.invariant_to(self.v):
            key = ("load", i, id(value), tuple(self.pos_key(pos, d) for d in range(self.n) if any(row[d] for row in a.coefs)))
            found = self.lookup(key)
            if found is None:
                found = self.b.insert(memref.LoadOp.get(value, self.operand_indices(i, pos))).res
                self.remember(key, found)
            return self.splat(found, width)
        if a.contiguous_along(self.v):
            key = ("vload", i, id(value), width, tuple(self.pos_key(pos, d) for d in range(self.n) if any(row[d] for row in a.coefs)))
            found = self.lookup(key)
            if found is None:
                op = vector.LoadOp(value, self.operand_indices(i, pos), VectorType(elem, [width]))
                found = self.remember(key, self.b.insert(op).result)
            return found
        flat, first, step = self.flat_access(i, pos)  # gather: lane by lane through a scratch
        scratch = self.scratch(elem)

        def lane_copy(lane: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            at = self.b.insert(arith.AddiOp(first, self.b.insert(arith.MuliOp(lane, self.idx(step))).result)).result
            x = self.b.insert(memref.LoadOp.get(flat, [at])).res
            self.b.insert(memref.StoreOp.get(x, scratch, [lane]))
            return []

        self.for_loop(self.idx(0), self.idx(width), 1, [], lane_copy)
        return self.b.insert(vector.LoadOp(scratch, [self.idx(0)], VectorType(elem, [width]))).result

    def scratch(self, elem: Attribute) -> SSAValue:
        """A stack buffer of one vector: strided gathers and scatters go through it as a loop,
        which keeps the IR small (LLVM unrolls it and promotes the buffer to registers)."""
        return self.stack_buffer(("scratch", elem), elem, max(self.w, 1))

    def stack_buffer(self, key: object, elem: Attribute, size: int) -> SSAValue:
        """A 64-byte-aligned 1-D stack buffer, allocated once at the start of the function."""
        if key not in self.consts:
            alloca = memref.AllocaOp.get(elem, 64, [size])
            # at the very start of the function: an alloca in LLVM's entry block is promoted to
            # registers; one after earlier loops would be a dynamic stack allocation
            entry = self.op.parent_block()
            while entry is not None and not isinstance(entry.parent_op(), func.FuncOp):
                entry = entry.parent_op().parent_block()  # type: ignore[union-attr]
            at = InsertPoint.at_start(entry) if entry is not None else InsertPoint.before(self.anchor)
            Builder(at).insert(alloca)
            self.consts[key] = alloca.memref
        return self.consts[key]

    def flat_view(self, i: int) -> SSAValue:
        """A 1-D view of operand i's whole buffer (reinterpret_cast), for per-lane accesses:
        each lane then costs one add instead of a full multi-dimensional index."""
        key = ("flat", i)
        if key in self.consts:
            return self.consts[key]
        a = self.accesses[i]
        extent = a.offset + sum((n - 1) * s for n, s in zip(a.shape, a.mem_strides)) + 1
        mtype = MemRefType(a.value.type.element_type, [extent])  # type: ignore[attr-defined]
        cast = memref.ReinterpretCastOp(a.value, [], [], [], [0], [extent], [1], mtype)
        Builder(InsertPoint.before(self.anchor)).insert(cast)
        self.consts[key] = cast.result
        return cast.result

    def flat_access(self, i: int, pos: Sequence[Pos]) -> tuple[SSAValue, SSAValue, int]:
        """(flat view, linear index of lane 0, element step between lanes) of operand i at pos."""
        a = self.accesses[i]
        const = a.offset + sum(s * c for s, c in zip(a.mem_strides, a.consts))
        first = self.index_expr(a.loop_strides, const, pos)
        if i in self.bases:  # a packed panel is flat already
            return a.value, self.rebase(i, first), a.loop_strides[self.v]
        return self.flat_view(i), first, a.loop_strides[self.v]

    def store(self, value: SSAValue, pos: list[Pos], width: int, index: int | None = None) -> None:
        i = self.store_index if index is None else index
        a = self.accesses[i]
        if width == 1:
            self.b.insert(memref.StoreOp.get(value, a.value, self.operand_indices(i, pos)))
        elif a.contiguous_along(self.v):
            self.b.insert(vector.StoreOp(value, a.value, self.operand_indices(i, pos)))
        else:  # scatter, lane by lane through a scratch
            flat, first, step = self.flat_access(i, pos)
            scratch = self.scratch(value.type.element_type)  # type: ignore[attr-defined]
            self.b.insert(vector.StoreOp(value, scratch, [self.idx(0)]))

            def lane_copy(lane: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                at = self.b.insert(arith.AddiOp(first, self.b.insert(arith.MuliOp(lane, self.idx(step))).result)).result
                x = self.b.insert(memref.LoadOp.get(scratch, [lane])).res
                self.b.insert(memref.StoreOp.get(x, flat, [at]))
                return []

            self.for_loop(self.idx(0), self.idx(width), 1, [], lane_copy)

    def splat(self, value: SSAValue, width: int) -> SSAValue:
        if width == 1 or isinstance(value.type, VectorType):
            return value
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
            return self.const(owner.value.value.data, VectorType(value.type, [width]))
        key = ("splat", value, width)
        found = self.lookup(key)
        if found is not None:
            return found
        res = self.b.insert(vector.BroadcastOp(value, VectorType(value.type, [width]))).vector
        return self.remember(key, res)

    @staticmethod
    def pos_key(pos: Sequence[Pos], d: int) -> tuple[int, int]:
        ssa, off = pos[d]
        return (id(ssa), off)

    # ------------------------------------------------------------------ the body
    def eval_body(
        self, pos: list[Pos], width: int, value: SSAValue | None, stage: _Stage | None = None
    ) -> SSAValue:
        """Emit one stage's body at `pos`; `value` feeds the argument that reads the running value
        (the accumulator, or the previous stage's result); other arguments are loaded."""
        stage = stage or self.main
        block = stage.block
        env: dict[SSAValue, SSAValue] = {}
        for arg, src in zip(block.args, stage.sources):
            if not arg.uses:
                continue
            if src is None:
                env[arg] = value if value is not None else self.load(self.store_index, pos, width)
            else:
                env[arg] = self.load(src, pos, width)
        for op in block.ops:
            if isinstance(op, linalg.YieldOp):
                return env[op.operands[0]]
            if op in self.fused_mul:
                continue
            if isinstance(op, linalg.IndexOp):
                env[op.result] = self.pos_value(pos[op.dim.value.data])
                continue
            if isinstance(op, arith.ConstantOp):
                env[op.result] = self.const_from(op)
                continue
            if isinstance(op, arith.AddfOp) and self._fma_operand(op) is not None:
                mul, other = self._fma_operand(op)  # type: ignore[misc]
                a, b_, c = (self.widen(env[mul.lhs], width), self.widen(env[mul.rhs], width), self.widen(env[other], width))
                if width > 1:
                    env[op.result] = self.b.insert(vector.FMAOp(a, b_, c)).res
                else:
                    env[op.result] = self.b.insert(xmath.FmaOp(a, b_, c)).result
                continue
            operands = [env.get(x, x) for x in op.operands]
            vec = width > 1 and any(isinstance(x.type, VectorType) for x in operands)
            if vec:
                # a scalar select condition picks whole vectors: keep it scalar
                keep = {0} if isinstance(op, arith.SelectOp) else set()
                operands = [x if k in keep else self.widen(x, width) for k, x in enumerate(operands)]
            result_types = [
                VectorType(r.type, [width]) if vec else r.type for r in op.results
            ]
            new = op.__class__.create(
                operands=operands,
                result_types=result_types,
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
            self.b.insert(new)
            for old, res in zip(op.results, new.results):
                env[old] = res
        raise DiagnosticException("linalg.generic body has no linalg.yield")

    def _fma_operand(self, op: arith.AddfOp):
        for operand, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if operand.owner in self.fused_mul:
                return operand.owner, other
        return None

    def const_from(self, op: arith.ConstantOp) -> SSAValue:
        v = op.value
        if isinstance(v, FloatAttr):
            return self.const(v.value.data, op.result.type)
        if isinstance(v, IntegerAttr):
            return self.const(v.value.data, op.result.type)
        c = op.clone()
        Builder(InsertPoint.before(self.anchor)).insert(c)
        return c.result

    def widen(self, x: SSAValue, width: int) -> SSAValue:
        if width == 1 or isinstance(x.type, VectorType):
            return x
        return self.splat(x, width)

    # ------------------------------------------------------------- loop levels
    def generate(self) -> None:
        self.scopes.append(_Scope({}))
        start = [(None, 0)] * self.n
        size = list(self.info.extents)
        self.parallel_level(start, size)
        self.scopes.pop()
        self.op.detach()
        self.op.erase()

    def packed_tile(self, start: list[Pos], size: list[int], body) -> None:
        """Operand packing: copy the box of each packed operand that this cache tile reads into a
        contiguous stack panel, then run `body` with those operands read from the panels."""
        saved = {i: self.accesses[i] for i in self.s.pack}
        self.scopes.append(_Scope({}))
        for i in self.s.pack:
            a = self.accesses[i]
            box = [1 + sum(c * (size[d] - 1) for d, c in enumerate(row)) for row in a.coefs]
            strides = [math.prod(box[r + 1 :]) for r in range(len(box))]
            elem = a.value.type.element_type  # type: ignore[attr-defined]
            panel = self.stack_buffer(("pack", i, tuple(box)), elem, math.prod(box))
            lo = [self.index_expr(row, a.consts[r], start) for r, row in enumerate(a.coefs)]
            self.copy_box(a.value, panel, lo, box, strides)
            # read from the panel: linear index = sum_d lin[d] * pos_d - (the same at the tile start)
            lin = [sum(strides[r] * row[d] for r, row in enumerate(a.coefs)) for d in range(self.n)]
            self.accesses[i] = OperandAccess(panel, False, (math.prod(box),), (1,), 0, [lin], [0], lin)
            self.bases[i] = self.index_expr(lin, 0, start)
        try:
            body()
        finally:
            self.scopes.pop()
            for i, a in saved.items():
                self.accesses[i] = a
                self.bases.pop(i, None)

    def copy_box(self, src: SSAValue, panel: SSAValue, lo: list[SSAValue], box: list[int], strides: list[int]) -> None:
        """panel[sum_r j_r * strides[r]] = src[lo_0 + j_0, ...] for j in the box (row-major)."""

        def level(r: int, at: list[SSAValue], dst: SSAValue | None) -> None:
            if r == len(box):
                x = self.b.insert(memref.LoadOp.get(src, at)).res
                self.b.insert(memref.StoreOp.get(x, panel, [dst if dst is not None else self.idx(0)]))
                return

            def step(j: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                index = self.b.insert(arith.AddiOp(lo[r], j)).result
                off = j if strides[r] == 1 else self.b.insert(arith.MuliOp(j, self.idx(strides[r]))).result
                level(r + 1, [*at, index], off if dst is None else self.b.insert(arith.AddiOp(dst, off)).result)
                return []

            self.for_loop(self.idx(0), self.idx(box[r]), 1, [], step)

        level(0, [], None)

    def parallel_dims(self, size: list[int]) -> list[int]:
        """The loops whose cache tiles run across threads: the tiled ones among the first
        `parallel` loops of the order, up to the first whose tile leaves a remainder (a peeled
        remainder tile is different code, so it cannot share the collapsed parallel space)."""
        dims = []
        for d in self.s.order[: self.s.parallel]:
            t = self.s.tile[d]
            if t == 0 or t >= size[d]:
                continue  # no tile loop: every thread covers the whole extent
            if size[d] % t:
                break
            dims.append(d)
        return dims

    def parallel_level(self, start: list[Pos], size: list[int]) -> None:
        """The full cache tiles of the parallel loops as one scf.parallel, the rest inside it."""
        dims = self.parallel_dims(size)
        if not dims:
            self.tile_level(0, start, size)
            return
        block = Block(arg_types=[IndexType()] * len(dims))
        loop = scf.ParallelOp(
            [self.idx(0)] * len(dims),
            [self.idx(size[d]) for d in dims],
            [self.idx(self.s.tile[d]) for d in dims],
            Region(block),
        )
        self.b.insert(loop)
        saved = self.b
        self.b = Builder(InsertPoint.at_end(block))
        self.scopes.append(_Scope({}))
        for d, iv in zip(dims, block.args):
            start = _with(start, d, (iv, 0))
            size = _with(size, d, self.s.tile[d])
        self.tile_level(0, start, size, skip=frozenset(dims))
        self.b.insert(scf.ReduceOp())
        self.scopes.pop()
        self.b = saved

    def tile_level(self, k: int, start: list[Pos], size: list[int], skip: frozenset[int] = frozenset()) -> None:
        if k == self.n:
            par = [d for d in self.s.order if self.info.iterators[d] == "parallel"]
            if self.s.pack:
                self.packed_tile(start, size, lambda: self.point_level(par, 0, start, size))
            else:
                self.point_level(par, 0, start, size)
            return
        d = self.s.order[k]
        t = self.s.tile[d]
        if t == 0 or t >= size[d] or d in skip:
            self.tile_level(k + 1, start, size, skip)
            return
        inner = lambda st, sz: self.tile_level(k + 1, st, sz, skip)  # noqa: E731
        if self.info.iterators[d] == "reduction" and (self.prologue or self.epilogues):
            self.split_reduction(d, t, start, size, inner)
        else:
            self.split(d, t, start, size, inner)

    def split_reduction(self, d: int, step: int, start: list[Pos], size: list[int], inner) -> None:
        """Reduction tiles with fused epilogues: every tile but the last carries partial sums
        through the output buffer; the last applies the epilogues before the final store."""
        nfull, rem = divmod(size[d], step)
        pieces = [(o, step) for o in range(0, nfull * step, step)] + ([(nfull * step, rem)] if rem else [])
        last, before = pieces[-1], pieces[:-1]
        saved = (self.first_tile, self.last_tile)
        base = start[d]
        self.first_tile, self.last_tile = self.prologue is not None, False
        if len(before) == 1:
            inner(_with(start, d, (base[0], base[1] + before[0][0])), _with(size, d, step))
        elif before:  # all full tiles: one loop
            assert self.prologue is None, "a fused prologue needs the first tile peeled"
            lb = self.pos_value((base[0], base[1]))
            ub = self.pos_value((base[0], base[1] + before[-1][0] + step))

            def body(iv: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                inner(_with(start, d, (iv, 0)), _with(size, d, step))
                return []

            self.for_loop(lb, ub, step, [], body)
        self.first_tile, self.last_tile = len(pieces) == 1, True
        inner(_with(start, d, (base[0], base[1] + last[0])), _with(size, d, last[1]))
        self.first_tile, self.last_tile = saved

    def split(self, d: int, step: int, start: list[Pos], size: list[int], inner) -> None:
        """Full blocks of `step` along loop d in an scf.for, then the remainder block peeled."""
        nfull, rem = divmod(size[d], step)
        if nfull == 1:
            inner(start, _with(size, d, step))
        elif nfull > 1:
            lb = self.pos_value(start[d])
            ub = self.pos_value((start[d][0], start[d][1] + nfull * step))

            def body(iv: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                inner(_with(start, d, (iv, 0)), _with(size, d, step))
                return []

            self.for_loop(lb, ub, step, [], body)
        if rem:
            inner(_with(start, d, (start[d][0], start[d][1] + nfull * step)), _with(size, d, rem))

    def point_level(self, par: list[int], j: int, start: list[Pos], size: list[int]) -> None:
        if j == len(par):
            self.register_tile(start, size)
            return
        d = par[j]
        u = min(self.s.unroll[d], size[d])
        self.split(d, u, start, size, lambda st, sz: self.point_level(par, j + 1, st, sz))

    def positions(self, start: list[Pos], size: list[int]) -> list[tuple[list[Pos], int]]:
        """Register-tile positions: (loop positions, vector width) per accumulator."""
        per_dim: list[list[tuple[int, int]]] = []
        for d in range(self.n):
            if self.info.iterators[d] != "parallel":
                per_dim.append([(0, 1)])
            elif d == self.v:
                per_dim.append([(o, min(self.w, size[d] - o)) for o in range(0, size[d], self.w)])
            else:
                per_dim.append([(o, 1) for o in range(size[d])])
        out = []
        for combo in itertools.product(*per_dim):
            pos = [(start[d][0], start[d][1] + combo[d][0]) for d in range(self.n)]
            width = combo[self.v][1] if self.v >= 0 else 1
            out.append((pos, width))
        return out

    def register_tile(self, start: list[Pos], size: list[int]) -> None:
        tiles = self.positions(start, size)
        reds = [d for d in self.s.order if self.info.iterators[d] == "reduction"]
        if not reds:
            for pos, width in tiles:
                self.store(self.eval_body(pos, width, None), pos, width)
            return
        partial = len(self.info.accesses) - 1  # the reduction's own output buffer
        if self.prologue is not None and self.first_tile:  # the initial value, in registers
            accs = [self.eval_body(pos, width, None, self.prologue) for pos, width in tiles]
        else:
            accs = [self.load(partial, pos, width) for pos, width in tiles]
        accs = self.reduction_level(reds, 0, start, size, tiles, accs)
        for (pos, width), acc in zip(tiles, accs):
            if not self.last_tile:  # a partial sum: back to the output buffer
                self.store(acc, pos, width, partial)
                continue
            for stage in self.epilogues:  # applied to the finished accumulator, in registers
                acc = self.eval_body(pos, width, acc, stage)
            self.store(acc, pos, width)

    def reduction_level(
        self,
        reds: list[int],
        j: int,
        start: list[Pos],
        size: list[int],
        tiles: list[tuple[list[Pos], int]],
        accs: list[SSAValue],
    ) -> list[SSAValue]:
        if j == len(reds):
            new = []
            for (pos, width), acc in zip(tiles, accs):
                p = [start[d] if self.info.iterators[d] == "reduction" else pos[d] for d in range(self.n)]
                new.append(self.eval_body(p, width, acc))
            return new
        d = reds[j]
        u = max(1, min(self.s.unroll[d], size[d]))
        nfull, rem = divmod(size[d], u)

        def unrolled(st: list[Pos], accs_in: list[SSAValue]) -> list[SSAValue]:
            cur = accs_in
            for o in range(u):
                cur = self.reduction_level(
                    reds, j + 1, _with(st, d, (st[d][0], st[d][1] + o)), _with(size, d, 1), tiles, cur
                )
            return cur

        if nfull == 1:
            accs = unrolled(start, accs)
        elif nfull > 1:
            lb = self.pos_value(start[d])
            ub = self.pos_value((start[d][0], start[d][1] + nfull * u))
            accs = self.for_loop(lb, ub, u, accs, lambda iv, a: unrolled(_with(start, d, (iv, 0)), a))
        for o in range(rem):
            accs = self.reduction_level(
                reds, j + 1, _with(start, d, (start[d][0], start[d][1] + nfull * u + o)), _with(size, d, 1), tiles, accs
            )
        return accs


def _with(xs: list, i: int, value) -> list:
    ys = list(xs)
    ys[i] = value
    return ys


def lower_kernel(op: linalg.GenericOp, fusion: Fusion | None = None) -> None:
    """Replace one linalg.generic on memrefs (and the generics fused with it) by its loop nest."""
    try:
        info = analyze_kernel(op)
    except KernelAnalysisError as e:
        raise DiagnosticException(f"convert-linalg-to-loops: {e}\n  in: {op}") from e
    attr = op.attributes.get(SCHEDULE_ATTR_NAME)
    sched = attr.schedule() if isinstance(attr, ScheduleAttr) else default_schedule(info)
    try:
        sched.check(info.num_loops)
    except ValueError as e:
        raise DiagnosticException(f"convert-linalg-to-loops: bad schedule for kernel: {e}") from e
    if sched.vector >= 0 and info.iterators[sched.vector] != "parallel":
        raise DiagnosticException("convert-linalg-to-loops: only parallel loops can be vectorized")
    try:
        check_parallel(sched, info)
        check_pack(sched, info)
    except ValueError as e:
        raise DiagnosticException(f"convert-linalg-to-loops: bad schedule for kernel: {e}") from e
    if fusion is not None:
        # fused stages know the first and last reduction tile of one reduction loop only
        reds = [d for d in sched.order if info.iterators[d] == "reduction" and 0 < sched.tile[d] < info.extents[d]]
        tile = tuple(0 if d in reds[1:] else t for d, t in enumerate(sched.tile))
        sched = replace(sched, tile=tile)
    LoopNestGenerator(info, sched, fusion).generate()
    if fusion is not None:
        for fused in [fusion.prologue, *fusion.epilogues]:
            if fused is not None:
                fused.detach()
                fused.erase()


def _tiled_reduction(sched: Schedule, g: linalg.GenericOp) -> bool:
    """Whether a reduction loop of g is split into cache tiles by its schedule."""
    extents = analyze_kernel(g).extents
    return any(
        it.data == IteratorType.REDUCTION and 0 < sched.tile[d] < extents[d]
        for d, it in enumerate(g.iterator_types)
    )


def _body_vectorizable(block: Block) -> bool:
    """Elementwise arith/math only, no comparison of lane values (see vectorizable_along)."""
    varying = set(block.args)
    for op in block.ops:
        if isinstance(op, linalg.YieldOp):
            continue
        if op.dialect_name() not in ("arith", "math") or isinstance(op, arith.IndexCastOp):
            return False
        if any(x in varying for x in op.operands):
            if isinstance(op, arith.CmpfOp | arith.CmpiOp):
                return False
            varying.update(op.results)
    return True


def _is_identity_parallel(g: linalg.GenericOp, value: SSAValue) -> bool:
    """g is all-parallel, writes one buffer with an identity map over `value`'s shape, and
    does not read its output."""
    if g.results or len(g.outputs) != 1 or any(
        it.data != IteratorType.PARALLEL for it in g.iterator_types
    ):
        return False
    out_map = g.indexing_maps.data[-1].data
    shape = value.type.get_shape() if isinstance(value.type, MemRefType) else None
    out_t = g.outputs[0].type
    return (
        shape is not None
        and out_map == AffineMap.identity(len(shape))
        and isinstance(out_t, MemRefType)
        and tuple(out_t.get_shape()) == tuple(shape)
        and not g.body.block.args[-1].uses
    )


def _root_arg(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, memref.SubviewOp | memref.ExpandShapeOp | memref.CollapseShapeOp):
        value = value.owner.operands[0]
    return value


def find_fusion(g: linalg.GenericOp, vectorized: bool) -> Fusion | None:
    """The prologue/epilogue generics that can run in g's register tile, if any.

    Fusing an epilogue skips writing g's output T, so T must be one of the kernel's private
    arguments (an intermediate nobody reads after the kernel: see outline-kernels).
    """
    if not any(it.data == IteratorType.REDUCTION for it in g.iterator_types) or len(g.outputs) != 1:
        return None
    fn = g.parent_op()
    if not isinstance(fn, func.FuncOp):
        return None
    private_attr = fn.attributes.get(PRIVATE_ARGS_ATTR)
    private = {fn.body.block.args[i] for i in private_attr.get_values()} if isinstance(private_attr, DenseArrayBase) else set()
    t = g.outputs[0]
    users = [u.operation for u in t.uses]
    prologue = None
    before = [u for u in users if u is not g and u.is_before_in_block(g)]
    if len(before) == 1 and isinstance(before[0], linalg.GenericOp):  # only the initializer
        cand = before[0]
        if (
            list(cand.outputs) == [t]
            and _is_identity_parallel(cand, t)
            and (not vectorized or _body_vectorizable(cand.body.block))
        ):
            prologue = cand
    epilogues: list[linalg.GenericOp] = []
    chain: dict[linalg.GenericOp, int] = {}
    current = t
    while True:
        readers = list(dict.fromkeys(u.operation for u in current.uses if u.operation not in (g, prologue, *epilogues)))
        if len(readers) != 1 or not isinstance(readers[0], linalg.GenericOp):
            break
        e = readers[0]
        # the running value never reaches memory: fine when nobody else reads it after the kernel
        # (a private argument) or when the epilogue overwrites it in place
        if not ((current in private and current is _root_arg(current)) or list(e.outputs) == [current]):
            break
        ins = list(e.inputs)
        if ins.count(current) != 1 or not _is_identity_parallel(e, current):
            break
        k = ins.index(current)
        if e.indexing_maps.data[k].data != AffineMap.identity(len(current.type.get_shape())):  # type: ignore[attr-defined]
            break
        if vectorized and not _body_vectorizable(e.body.block):
            break
        epilogues.append(e)
        chain[e] = k
        current = e.outputs[0]
    if prologue is None and not epilogues:
        return None
    return Fusion(prologue, epilogues, chain)


@dataclass(frozen=True)
class ConvertLinalgToLoopsPass(ModulePass):
    """Lower every linalg.generic / linalg.fill on memrefs to scheduled scf/vector loops."""

    name = "convert-linalg-to-loops"

    fuse: bool = True
    """Run a reduction's initializing generic and its elementwise consumers inside its loop
    nest (register-level producer/consumer fusion within one kernel function)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fill in [o for o in op.walk() if isinstance(o, linalg.FillOp)]:
            if not isinstance(fill.outputs[0].type, MemRefType):
                raise DiagnosticException("convert-linalg-to-loops expects linalg.fill on memrefs (run bufferize first)")
            generic = fill_to_generic(fill)
            if SCHEDULE_ATTR_NAME in fill.attributes:
                generic.attributes[SCHEDULE_ATTR_NAME] = fill.attributes[SCHEDULE_ATTR_NAME]
            Builder(InsertPoint.before(fill)).insert(generic)
            fill.detach()
            fill.erase()
        generics = [o for o in op.walk() if isinstance(o, linalg.GenericOp)]
        if any(g.results for g in generics):
            raise DiagnosticException("convert-linalg-to-loops expects linalg.generic on memrefs (run bufferize first)")
        plans: dict[Operation, Fusion] = {}
        fused: set[Operation] = set()
        for g in generics if self.fuse else []:  # decide every fusion before lowering anything
            if g in fused:
                continue
            attr = g.attributes.get(SCHEDULE_ATTR_NAME)
            sched = attr.schedule() if isinstance(attr, ScheduleAttr) else default_schedule(analyze_kernel(g))
            fusion = find_fusion(g, sched.vector >= 0)
            if fusion is not None and _tiled_reduction(sched, g):
                # with reduction cache tiles the initializer stays a loop nest of its own: fusing it
                # too would need a third copy of the nest for the first tile (compile time)
                fusion = replace(fusion, prologue=None) if fusion.epilogues else None
            if fusion is not None:
                plans[g] = fusion
                fused.update(x for x in [fusion.prologue, *fusion.epilogues] if x is not None)
        for g in generics:
            if g not in fused:
                lower_kernel(g, plans.get(g))


__all__ = ["ConvertLinalgToLoopsPass", "lower_kernel"]
