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
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
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
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from dialects.sched import SCHEDULE_ATTR_NAME, Schedule, ScheduleAttr
from passes.analysis.kernel_access import KernelAnalysisError, KernelInfo, analyze_kernel
from passes.transforms.default_schedule import default_schedule

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


class LoopNestGenerator:
    """Emits the loop nest of one kernel in place of the linalg op."""

    def __init__(self, info: KernelInfo, sched: Schedule):
        self.info = info
        self.s = sched
        self.op = info.op
        self.n = info.num_loops
        self.v = sched.vector
        self.w = sched.width if sched.vector >= 0 else 1
        self.scopes: list[_Scope] = []
        self.body_ops = list(self.op.body.block.ops)
        self.fused_mul: set[Operation] = set()
        self._find_fma()
        # constants live before everything generated, so they dominate every use
        self.anchor = arith.ConstantOp(IntegerAttr(0, IndexType()))
        Builder(InsertPoint.before(self.op)).insert(self.anchor)
        self.consts: dict[tuple[object, Attribute], SSAValue] = {
            (0, IndexType()): self.anchor.result
        }
        self.b = Builder(InsertPoint.before(self.op))

    # ------------------------------------------------------------------ helpers
    def _find_fma(self) -> None:
        """Fold `addf(x, mulf(a, b))` with a single-use mulf into one fma."""
        for op in self.body_ops:
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
    def vec_type(self, elem: Attribute, width: int) -> Attribute:
        return VectorType(elem, [width]) if width > 1 else elem

    def operand_indices(self, i: int, pos: Sequence[Pos]) -> list[SSAValue]:
        a = self.info.accesses[i]
        return [self.index_expr(a.coefs[r], a.consts[r], pos) for r in range(len(a.coefs))]

    def load(self, i: int, pos: list[Pos], width: int) -> SSAValue:
        a = self.info.accesses[i]
        value = a.value
        if a.is_scalar:
            return self.splat(value, width)
        if value is self.info.output.value:
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
            key = ("load", i, tuple(self.pos_key(pos, d) for d in range(self.n) if any(row[d] for row in a.coefs)))
            found = self.lookup(key)
            if found is None:
                found = self.b.insert(memref.LoadOp.get(value, self.operand_indices(i, pos))).res
                self.remember(key, found)
            return self.splat(found, width)
        if a.contiguous_along(self.v):
            key = ("vload", i, width, tuple(self.pos_key(pos, d) for d in range(self.n) if any(row[d] for row in a.coefs)))
            found = self.lookup(key)
            if found is None:
                op = vector.LoadOp(value, self.operand_indices(i, pos), VectorType(elem, [width]))
                found = self.remember(key, self.b.insert(op).result)
            return found
        flat, first, step = self.flat_access(i, pos)  # gather: one scalar load per lane
        lanes = [
            self.b.insert(memref.LoadOp.get(flat, [self.offset_index(first, lane * step)])).res
            for lane in range(width)
        ]
        return self.build_vector(lanes, elem)

    def flat_view(self, i: int) -> SSAValue:
        """A 1-D view of operand i's whole buffer (reinterpret_cast), for per-lane accesses:
        each lane then costs one add instead of a full multi-dimensional index."""
        key = ("flat", i)
        if key in self.consts:
            return self.consts[key]
        a = self.info.accesses[i]
        extent = a.offset + sum((n - 1) * s for n, s in zip(a.shape, a.mem_strides)) + 1
        mtype = MemRefType(a.value.type.element_type, [extent])  # type: ignore[attr-defined]
        cast = memref.ReinterpretCastOp(a.value, [], [], [], [0], [extent], [1], mtype)
        Builder(InsertPoint.before(self.anchor)).insert(cast)
        self.consts[key] = cast.result
        return cast.result

    def flat_access(self, i: int, pos: Sequence[Pos]) -> tuple[SSAValue, SSAValue, int]:
        """(flat view, linear index of lane 0, element step between lanes) of operand i at pos."""
        a = self.info.accesses[i]
        const = a.offset + sum(s * c for s, c in zip(a.mem_strides, a.consts))
        first = self.index_expr(a.loop_strides, const, pos)
        return self.flat_view(i), first, a.loop_strides[self.v]

    def offset_index(self, base: SSAValue, offset: int) -> SSAValue:
        if offset == 0:
            return base
        return self.pos_value((base, offset))

    def build_vector(self, lanes: Sequence[SSAValue], elem: Attribute) -> SSAValue:
        vec = self.splat(lanes[0], len(lanes))
        for lane, x in enumerate(lanes[1:], start=1):
            vec = self.b.insert(vector.InsertOp(x, vec, [lane], vec.type)).result
        return vec

    def store(self, value: SSAValue, pos: list[Pos], width: int) -> None:
        i = len(self.info.accesses) - 1
        a = self.info.accesses[i]
        if width == 1:
            self.b.insert(memref.StoreOp.get(value, a.value, self.operand_indices(i, pos)))
        elif a.contiguous_along(self.v):
            self.b.insert(vector.StoreOp(value, a.value, self.operand_indices(i, pos)))
        else:  # scatter
            flat, first, step = self.flat_access(i, pos)
            for lane in range(width):
                x = self.b.insert(vector.ExtractOp(value, [lane], value.type.element_type)).result  # type: ignore[attr-defined]
                self.b.insert(memref.StoreOp.get(x, flat, [self.offset_index(first, lane * step)]))

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
    def eval_body(self, pos: list[Pos], width: int, out_value: SSAValue | None) -> SSAValue:
        block = self.op.body.block
        env: dict[SSAValue, SSAValue] = {}
        n_in = len(self.op.inputs)
        for k, arg in enumerate(block.args):
            if k < n_in:
                if arg.uses:
                    env[arg] = self.load(k, pos, width)
            elif arg.uses:
                env[arg] = out_value if out_value is not None else self.load(k, pos, width)
        for op in self.body_ops:
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
        self.tile_level(0, start, size)
        self.scopes.pop()
        self.op.detach()
        self.op.erase()

    def tile_level(self, k: int, start: list[Pos], size: list[int]) -> None:
        if k == self.n:
            par = [d for d in self.s.order if self.info.iterators[d] == "parallel"]
            self.point_level(par, 0, start, size)
            return
        d = self.s.order[k]
        t = self.s.tile[d]
        if t == 0 or t >= size[d]:
            self.tile_level(k + 1, start, size)
            return
        self.split(d, t, start, size, lambda st, sz: self.tile_level(k + 1, st, sz))

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
        out_index = len(self.info.accesses) - 1
        if not reds:
            for pos, width in tiles:
                self.store(self.eval_body(pos, width, None), pos, width)
            return
        accs = [self.load(out_index, pos, width) for pos, width in tiles]
        accs = self.reduction_level(reds, 0, start, size, tiles, accs)
        for (pos, width), acc in zip(tiles, accs):
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


def lower_kernel(op: linalg.GenericOp) -> None:
    """Replace one linalg.generic on memrefs by its scheduled loop nest."""
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
    LoopNestGenerator(info, sched).generate()


@dataclass(frozen=True)
class ConvertLinalgToLoopsPass(ModulePass):
    """Lower every linalg.generic / linalg.fill on memrefs to scheduled scf/vector loops."""

    name = "convert-linalg-to-loops"

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
        for g in [o for o in op.walk() if isinstance(o, linalg.GenericOp)]:
            if g.results:
                raise DiagnosticException("convert-linalg-to-loops expects linalg.generic on memrefs (run bufferize first)")
            lower_kernel(g)


__all__ = ["ConvertLinalgToLoopsPass", "lower_kernel"]
