"""IR-building helpers for convert-graph-to-linalg.

`Emitter` collects the tensor-level ops that replace one graph op, so each pattern reads like
the math it implements; `Body` builds the scalar region of a linalg.generic. Everything here
emits only the ops the TENSOR level contract allows (see levels.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, math, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    AnyFloat,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
    f32,
    i64,
)
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import FillOp, GenericOp, IndexOp, YieldOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint

from dialects import graph
from dialects.dense import dense_to_numpy, numpy_to_dense

Shape = tuple[int, ...]
Exprs = Sequence[AffineExpr]

NEG_INF = float("-inf")


def dim(i: int) -> AffineExpr:
    return AffineExpr.dimension(i)


def cst(c: int) -> AffineExpr:
    return AffineExpr.constant(c)


def shape_of(value: SSAValue) -> Shape:
    t = value.type
    assert isinstance(t, TensorType), f"expected a ranked tensor, got {t}"
    return tuple(t.get_shape())


def elem_of(value: SSAValue) -> Attribute:
    t = value.type
    assert isinstance(t, TensorType)
    return t.element_type


def identity(rank: int, offset: int = 0) -> list[AffineExpr]:
    return [dim(offset + i) for i in range(rank)]


def broadcast_exprs(in_shape: Shape, out_shape: Shape) -> list[AffineExpr]:
    """numpy broadcasting as a map: missing leading dims dropped, stretched size-1 dims -> 0."""
    lead = len(out_shape) - len(in_shape)
    return [
        cst(0) if d == 1 and out_shape[lead + i] != 1 else dim(lead + i)
        for i, d in enumerate(in_shape)
    ]


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The (read-only) numpy value of a tensor produced by graph.constant / arith.constant, else
    None."""
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp | arith.ConstantOp):
        return None
    attr = owner.value
    if not isinstance(attr, DenseIntOrFPElementsAttr):
        return None
    return dense_to_numpy(attr)


def reassociation(small: Shape, big: Shape) -> list[list[int]] | None:
    """Group `big`'s dims into contiguous runs whose products are `small`'s dims (None if none)."""
    if not small:
        return [] if all(d == 1 for d in big) else None
    groups: list[list[int]] = []
    j = 0
    for i, s in enumerate(small):
        group: list[int] = []
        p = 1
        while j < len(big):
            group.append(j)
            p *= big[j]
            j += 1
            if p == s:
                break
            if p > s:
                return None
        if p != s or not group:
            return None
        if i == len(small) - 1:
            while j < len(big) and big[j] == 1:
                group.append(j)
                j += 1
        groups.append(group)
    return groups if j == len(big) else None


def run_time_reassociation(small: Shape, big: Shape) -> list[list[int]] | None:
    """The groups of `big`'s dims, one per dim of `small`, when shapes have `?` dims: a `?` of
    `small` is one `?` of `big` (with unit dims beside it), a static dim the product of a run
    of static ones; unit dims join the group before them (leading ones the first). Else None:
    a `?` made of several dims, or split into several, has no size to give."""
    if len(big) <= len(small) or not small:
        return None
    groups: list[list[int]] = []
    j = 0
    for i, s in enumerate(small):
        group: list[int] = []
        if s == DYNAMIC_INDEX:
            while j < len(big) and big[j] == 1:
                group.append(j)
                j += 1
            if j == len(big) or big[j] != DYNAMIC_INDEX:
                return None
            group.append(j)
            j += 1
        else:
            p = 1
            while j < len(big) and big[j] != DYNAMIC_INDEX:
                group.append(j)
                p *= big[j]
                j += 1
                if p == s:
                    break
            if p != s or not group:
                return None
        if i == len(small) - 1 or small[i + 1] != 1:
            while j < len(big) and big[j] == 1:
                group.append(j)
                j += 1
        groups.append(group)
    return groups if j == len(big) else None


def is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def scalar_attr(value: float | int | bool, elem: Attribute) -> FloatAttr | IntegerAttr:
    """`value` as a constant of scalar type `elem`: -inf/inf become the integer type's extremes,
    a bool is 0 or 1."""
    if isinstance(elem, AnyFloat):
        return FloatAttr(float(value), elem)
    assert isinstance(elem, IntegerType), f"not a scalar element type: {elem}"
    width = elem.width.data
    if width == 1:  # -inf is false, the least bool
        return IntegerAttr(int(value != NEG_INF and bool(value)), elem)
    lo, hi = -(2 ** (width - 1)), 2 ** (width - 1) - 1
    v = value if isinstance(value, int) else lo if value == NEG_INF else hi if value > hi else value
    return IntegerAttr(max(lo, min(hi, int(v))), elem)


class Body:
    """Builds the scalar body of a linalg.generic; methods return SSA values.

    Arithmetic dispatches on the operands' element type: float ops for f32, signed integer ops
    for i64/i32, and on i1 (bool) the unsigned ones.
    """

    def __init__(self, block: Block) -> None:
        self.builder = Builder(InsertPoint.at_end(block))
        self.args = list(block.args)

    def op(self, op: Operation) -> SSAValue:
        self.builder.insert(op)
        return op.results[0]

    def f(self, value: float) -> SSAValue:
        return self.const(value, f32)

    def const(self, value: float | int | bool, like: SSAValue | Attribute) -> SSAValue:
        """A constant of `like`'s type (a value's, or the type itself)."""
        elem = like.type if isinstance(like, SSAValue) else like
        return self.op(arith.ConstantOp(scalar_attr(value, elem)))

    @staticmethod
    def _float(a: SSAValue) -> bool:
        return is_float(a.type)

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.AddfOp(a, b) if self._float(a) else arith.AddiOp(a, b))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.SubfOp(a, b) if self._float(a) else arith.SubiOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.MulfOp(a, b) if self._float(a) else arith.MuliOp(a, b))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """a / b; on integers truncated toward zero (C, onnxruntime)."""
        return self.op(arith.DivfOp(a, b) if self._float(a) else arith.DivSIOp(a, b))

    def max(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if self._float(a):
            return self.op(arith.MaximumfOp(a, b))
        return self.op(arith.MaxUIOp(a, b) if _is_bool(a) else arith.MaxSIOp(a, b))

    def min(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if self._float(a):
            return self.op(arith.MinimumfOp(a, b))
        return self.op(arith.MinUIOp(a, b) if _is_bool(a) else arith.MinSIOp(a, b))

    def neg(self, a: SSAValue) -> SSAValue:
        return self.op(arith.NegfOp(a)) if self._float(a) else self.sub(self.const(0, a), a)

    def exp(self, a: SSAValue) -> SSAValue:
        return self.op(math.ExpOp(a))

    def log(self, a: SSAValue) -> SSAValue:
        return self.op(math.LogOp(a))

    def sqrt(self, a: SSAValue) -> SSAValue:
        return self.op(math.SqrtOp(a))

    def tanh(self, a: SSAValue) -> SSAValue:
        return self.op(math.TanhOp(a))

    def erf(self, a: SSAValue) -> SSAValue:
        return self.op(math.ErfOp(a))

    def select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.SelectOp(c, a, b))

    def cmpf(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.CmpfOp(a, b, pred))

    def compare(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """a <pred> b for pred in eq, ne, lt, le, gt, ge: ordered float comparisons (false on
        nan, `ne` true), signed integer ones, unsigned on bool."""
        if self._float(a):
            return self.cmpf("une" if pred == "ne" else "o" + pred, a, b)
        if pred in ("eq", "ne"):
            return self.op(arith.CmpiOp(a, b, pred))
        return self.op(arith.CmpiOp(a, b, ("u" if _is_bool(a) else "s") + pred))

    def convert(self, a: SSAValue, to: Attribute) -> SSAValue:
        """a as element type `to` with ONNX Cast's semantics (see graph.cast)."""
        src = a.type
        if src == to:
            return a
        if isinstance(to, IntegerType) and to.width.data == 1:  # to bool: != 0
            return self.compare("ne", a, self.const(0, a))
        if is_float(src) and is_float(to):
            wider = src.bitwidth < to.bitwidth  # type: ignore[attr-defined]
            return self.op((arith.ExtFOp if wider else arith.TruncFOp)(a, to))
        if isinstance(to, AnyFloat):
            return self.op((arith.UIToFPOp if _is_bool(a) else arith.SIToFPOp)(a, to))
        assert isinstance(to, IntegerType)
        if is_float(src):
            return self.op(arith.FPToSIOp(a, to))
        assert isinstance(src, IntegerType)
        if src.width.data < to.width.data:
            return self.op((arith.ExtUIOp if _is_bool(a) else arith.ExtSIOp)(a, to))
        return self.op(arith.TruncIOp(a, to))

    def index(self, d: int) -> SSAValue:
        return self.op(IndexOp(d))


def _is_bool(a: SSAValue) -> bool:
    return isinstance(a.type, IntegerType) and a.type.width.data == 1


BodyFn = Callable[[Body, list[SSAValue]], SSAValue]


class Emitter:
    """Accumulates the ops replacing one graph op; the pattern inserts them all at once."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    # -- values -------------------------------------------------------------------------------

    def empty(self, shape: Shape, elem: Attribute = f32) -> SSAValue:
        return self.add(tensor.EmptyOp([], TensorType(elem, list(shape))))

    def scalar(self, value: float, elem: Attribute = f32) -> SSAValue:
        return self.add(arith.ConstantOp(scalar_attr(value, elem)))

    def dense(self, arr: np.ndarray) -> SSAValue:
        """A constant tensor of a graph element type (f32, i64, i32, bool)."""
        if arr.dtype not in (np.float32, np.int64, np.int32, np.bool_):
            raise NotImplementedError(f"dense constant of dtype {arr.dtype}")
        return self.add(arith.ConstantOp(numpy_to_dense(arr)))

    def fill(self, value: float, shape: Shape, elem: Attribute = f32) -> SSAValue:
        """A tensor of `value` (as `elem`: -inf is an integer type's minimum)."""
        init = self.empty(shape, elem)
        c = self.scalar(value, elem)
        t = TensorType(elem, list(shape))
        return self.add(FillOp([c], [init], [t]))

    # -- linalg.generic -----------------------------------------------------------------------

    def generic(
        self,
        inputs: Sequence[SSAValue],
        input_maps: Sequence[Exprs],
        init: SSAValue,
        out_map: Exprs,
        iterators: str,
        body: BodyFn,
    ) -> SSAValue:
        """One linalg.generic; `iterators` is a string of 'p' / 'r', one per loop."""
        n = len(iterators)
        maps = [AffineMapAttr(AffineMap(n, 0, tuple(m))) for m in [*input_maps, out_map]]
        iters = [
            IteratorTypeAttr.parallel() if c == "p" else IteratorTypeAttr.reduction()
            for c in iterators
        ]
        init = self._size_init(init, inputs, input_maps, out_map)
        block = Block(arg_types=[elem_of(v) for v in [*inputs, init]])
        b = Body(block)
        result = body(b, list(block.args))
        b.builder.insert(YieldOp(result))
        return self.add(GenericOp(list(inputs), [init], Region(block), maps, iters, [init.type]))

    def _size_init(
        self,
        init: SSAValue,
        inputs: Sequence[SSAValue],
        input_maps: Sequence[Exprs],
        out_map: Exprs,
    ) -> SSAValue:
        """Give the `tensor.empty` made here for `init` (through its fills) the run-time sizes of
        its `?` dims: each is the loop of the output map, whose extent an input indexed by that
        loop alone holds (`tensor.dim`). The empty and its fills move after those dims; the
        init to use (`init` itself unless it was that empty)."""
        chain: list[Operation] = []
        owner = init.owner
        while isinstance(owner, FillOp) and owner in self.ops:
            chain.append(owner)
            owner = owner.outputs[0].owner
        empty = owner
        if not isinstance(empty, tensor.EmptyOp) or empty not in self.ops:
            return init
        shape = list(empty.tensor.type.get_shape())
        missing = [k for k, d in enumerate(shape) if d == DYNAMIC_INDEX]
        if not missing or len(empty.dynamic_sizes) == len(missing):
            return init
        sizes: list[SSAValue] = []
        dims: list[Operation] = []
        for k in missing:
            loop = out_map[k]
            found = next(
                (
                    (v, r)
                    for v, m in zip(inputs, input_maps, strict=True)
                    for r, e in enumerate(m)
                    if isinstance(loop, AffineDimExpr)
                    and e == loop
                    and shape_of(v)[r] == DYNAMIC_INDEX
                ),
                None,
            )
            if found is None:
                return init  # left unsized: the pattern reports the op
            index = arith.ConstantOp(IntegerAttr(found[1], IndexType()))
            size = tensor.DimOp(found[0], index.result)
            dims += [index, size]
            sizes.append(size.result)
        sized = tensor.EmptyOp(sizes, empty.tensor.type)
        for op in [empty, *reversed(chain)]:
            self.ops.remove(op)
        empty.tensor.replace_all_uses_with(sized.tensor)
        self.ops += [*dims, sized, *reversed(chain)]
        return sized.tensor if init is empty.tensor else init

    def unsized(self) -> bool:
        """Whether a `tensor.empty` or `tensor.expand_shape` made here lacks the run-time size
        of a `?` dim (the lowering of that op does not take run-time sizes yet)."""
        for op in self.ops:
            if isinstance(op, tensor.EmptyOp):
                given, shape = len(op.dynamic_sizes), op.tensor.type.get_shape()
            elif isinstance(op, tensor.ExpandShapeOp):
                given, shape = len(op.dynamic_output_shape), op.static_output_shape.get_values()
            else:
                continue
            if given != list(shape).count(DYNAMIC_INDEX):
                return True
        return False

    def map_elementwise(
        self,
        inputs: Sequence[SSAValue],
        out_shape: Shape,
        body: BodyFn,
        input_maps: Sequence[Exprs] | None = None,
        elem: Attribute | None = None,
    ) -> SSAValue:
        """A parallel generic over `out_shape` with elements of type `elem` (default: the first
        input's); inputs broadcast numpy-style unless maps given."""
        if input_maps is None:
            input_maps = [broadcast_exprs(shape_of(v), out_shape) for v in inputs]
        if elem is None:
            elem = elem_of(inputs[0]) if inputs else f32
        rank = len(out_shape)
        return self.generic(
            inputs,
            input_maps,
            self.empty(out_shape, elem),
            identity(rank),
            "p" * rank,
            lambda b, a: body(b, a[: len(inputs)]),
        )

    def reduce(
        self,
        x: SSAValue,
        axes: Sequence[int],
        kind: str,
        pre: Callable[[Body, SSAValue], SSAValue] | None = None,
    ) -> SSAValue:
        """Reduce `x` over `axes` ("sum", "prod" or "max"), dropping them; a total reduction
        gives (1,).

        The (1,) case uses an extra unit loop so no output map needs a constant.
        """
        shape = shape_of(x)
        rank = len(shape)
        red = set(axes)
        kept = [i for i in range(rank) if i not in red]
        if kept:
            out_shape: Shape = tuple(shape[i] for i in kept)
            out_map = [dim(i) for i in kept]
            iters = "".join("r" if i in red else "p" for i in range(rank))
        else:
            out_shape = (1,)
            out_map = [dim(rank)]
            iters = "r" * rank + "p"
        start = {"sum": 0.0, "prod": 1.0, "max": NEG_INF}[kind]
        init = self.fill(start, out_shape, elem_of(x))

        def body(b: Body, a: list[SSAValue]) -> SSAValue:
            v = pre(b, a[0]) if pre is not None else a[0]
            if kind == "sum":
                return b.add(a[1], v)
            return b.mul(a[1], v) if kind == "prod" else b.max(a[1], v)

        return self.generic([x], [identity(rank)], init, out_map, iters, body)

    @staticmethod
    def reduced_exprs(rank: int, axes: Sequence[int]) -> list[AffineExpr]:
        """How a `reduce` result is read back inside a loop nest over the full shape."""
        kept = [dim(i) for i in range(rank) if i not in set(axes)]
        return kept if kept else [cst(0)]

    # -- data movement ------------------------------------------------------------------------

    def extract_slice(
        self, x: SSAValue, offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int]
    ) -> SSAValue:
        t = TensorType(elem_of(x), list(sizes))
        return self.add(tensor.ExtractSliceOp(x, list(offsets), list(sizes), list(strides), t))

    def insert_slice(
        self,
        src: SSAValue,
        dest: SSAValue,
        offsets: Sequence[int],
        strides: Sequence[int] | None = None,
    ) -> SSAValue:
        return self.add(
            tensor.InsertSliceOp.from_static_parameters(
                src, dest, list(offsets), list(shape_of(src)), list(strides) if strides else None
            )
        )

    def pad(self, x: SSAValue, lows: Sequence[int], highs: Sequence[int], value: float) -> SSAValue:
        """Constant padding: fill + insert_slice; negative pads crop first (extract_slice)."""
        shape = shape_of(x)
        if any(p < 0 for p in [*lows, *highs]):
            offs = [max(0, -lo) for lo in lows]
            sizes = [
                s - max(0, -lo) - max(0, -hi) for s, lo, hi in zip(shape, lows, highs, strict=True)
            ]
            x = self.extract_slice(x, offs, sizes, [1] * len(shape))
            shape = tuple(sizes)
            lows = [max(0, p) for p in lows]
            highs = [max(0, p) for p in highs]
        if not any(lows) and not any(highs):
            return x
        padded = tuple(s + lo + hi for s, lo, hi in zip(shape, lows, highs, strict=True))
        # only the border is filled (slabs that do not overlap), then x is copied inside: one
        # pass over the padded tensor instead of a full fill followed by the copy
        out = self.empty(padded, elem_of(x))
        for k in range(len(shape)):
            for start, extent in ((0, lows[k]), (lows[k] + shape[k], highs[k])):
                if extent == 0:
                    continue
                offs = [lows[j] if j < k else 0 for j in range(len(shape))]
                sizes = [shape[j] if j < k else padded[j] for j in range(len(shape))]
                offs[k], sizes[k] = start, extent
                out = self.insert_slice(self.fill(value, tuple(sizes), elem_of(x)), out, offs)
        return self.insert_slice(x, out, lows)

    def _reshape_op(
        self, x: SSAValue, shape: Shape, groups: list[list[int]], expand: bool
    ) -> SSAValue:
        reassoc = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])
        t = TensorType(elem_of(x), list(shape))
        if expand:
            sizes = self._expanded_sizes(x, shape, groups)
            return self.add(tensor.ExpandShapeOp(x, sizes, reassoc, list(shape), t))
        return self.add(
            tensor.CollapseShapeOp.build(
                operands=[x], result_types=[t], properties={"reassociation": reassoc}
            )
        )

    def _expanded_sizes(self, x: SSAValue, shape: Shape, groups: list[list[int]]) -> list[SSAValue]:
        """The run-time sizes of an expansion's `?` dims: a group whose other dims are 1 takes
        its source dim's (`tensor.dim`); any other `?` is left unsized (reported by `unsized`)."""
        sizes: list[SSAValue] = []
        for k, group in enumerate(groups):
            run_time = [d for d in group if shape[d] == DYNAMIC_INDEX]
            if not run_time:
                continue
            if len(run_time) > 1 or any(shape[d] != 1 for d in group if d not in run_time):
                return []
            index = self.add(arith.ConstantOp(IntegerAttr(k, IndexType())))
            sizes.append(self.add(tensor.DimOp(x, index)))
        return sizes

    def reshape(self, x: SSAValue, shape: Shape) -> SSAValue:
        """One collapse or expand when the reassociation is simple, else collapse-to-1-D + expand."""
        old = shape_of(x)
        shape = tuple(shape)
        if old == shape:
            return x
        if DYNAMIC_INDEX in (*old, *shape):  # run-time sizes: `?` dims stay whole
            groups = run_time_reassociation(old, shape)
            if groups is None:
                groups = run_time_reassociation(shape, old)
                if groups is None:  # left unsized: `unsized` reports the op
                    return self.add(tensor.EmptyOp([], TensorType(elem_of(x), list(shape))))
                return self._reshape_op(x, shape, groups, expand=False)
            return self._reshape_op(x, shape, groups, expand=True)
        if len(shape) < len(old) and (g := reassociation(shape, old)) is not None:
            return self._reshape_op(x, shape, g, expand=False)
        if not old:
            # xDSL's tensor.expand_shape verifier rejects the empty reassociation of a rank-0
            # source (MLIR accepts it): broadcast the one element instead
            return self.map_elementwise([x], shape, lambda b, a: a[0], [[]])
        if len(shape) > len(old) and (g := reassociation(old, shape)) is not None:
            return self._reshape_op(x, shape, g, expand=True)
        n = prod(old)
        flat = x if len(old) == 1 else self._reshape_op(x, (n,), [list(range(len(old)))], False)
        if len(shape) == 1:
            return flat
        return self._reshape_op(flat, shape, [list(range(len(shape)))], expand=True)
