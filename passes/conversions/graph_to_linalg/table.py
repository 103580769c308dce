"""What every family of lowerings shares: the table-driven pattern base and the window helpers.

A lowering is a function from a graph op (its class declares operands and typed properties,
defaults included) and an `Emitter` to the values that replace the op's results. A family's
`GraphLowering` subclass owns a `LoweringTable` from op classes to lowerings and dispatches on
the op's class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from dialects.graph import WindowOp
from passes.analysis.pass_errors import op_error
from passes.conversions.convert_graph_to_linalg_builder import (
    Body,
    Emitter,
    Shape,
    dim,
    shape_of,
)

OpT = TypeVar("OpT", bound=Operation)

Lowered = SSAValue | Sequence[SSAValue]
"""What a lowering returns: the replacement of the op's one result, or of each of its results."""

Lowering = Callable[[OpT, Emitter], Lowered]


class LoweringTable(dict[type[Operation], Lowering[Any]]):
    """Graph op class -> its lowering."""

    def register(self, *types: type[OpT]) -> Callable[[Lowering[OpT]], Lowering[OpT]]:
        """Decorator: `fn` lowers the ops of `types`."""

        def add(fn: Lowering[OpT]) -> Lowering[OpT]:
            for t in types:
                self[t] = fn
            return fn

        return add


class GraphLowering(RewritePattern):
    """Base: replace an op whose class is in `lowerings` by what its lowering emits."""

    lowerings: ClassVar[Mapping[type[Operation], Lowering[Any]]] = {}
    ops: ClassVar[tuple[str, ...]] = ()
    """The names of the ops in `lowerings` (set for each subclass)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.ops = tuple(t.name for t in cls.lowerings)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        lower = self.lowerings.get(type(op))
        if lower is None:
            return
        em = Emitter()
        results = lower(op, em)
        if em.unsized():
            raise op_error(
                op,
                f"convert-graph-to-linalg: {op.name} with run-time dims "
                f"({', '.join(str(r.type) for r in op.results)}) is not lowered yet",
            )
        rewriter.replace(op, em.ops, [results] if isinstance(results, SSAValue) else list(results))


def out_shape(op: Operation, i: int = 0) -> Shape:
    return shape_of(op.results[i])


def mac(b: Body, a: list[SSAValue]) -> SSAValue:
    """out + x * w: the multiply-accumulate body of conv and matmul."""
    return b.add(a[2], b.mul(a[0], a[1]))


def copy(b: Body, a: list[SSAValue]) -> SSAValue:
    """The body of a generic that only moves its first input."""
    return a[0]


def window(op: WindowOp, rank: int) -> tuple[tuple[int, ...], ...]:
    """strides, pads (begins..., ends...), dilations of a window op over `rank` spatial dims; an
    empty property (its declared default) means ones, zeros, ones."""
    return (
        op.strides.get_values() or (1,) * rank,
        op.pads.get_values() or (0,) * (2 * rank),
        op.dilations.get_values() or (1,) * rank,
    )


def window_exprs(
    first_out: int, first_win: int, strides: Sequence[int], dils: Sequence[int]
) -> list[AffineExpr]:
    """out_i * stride_i + k_i * dilation_i for each spatial dim, loops numbered from
    first_out (the output positions) and first_win (the window offsets)."""
    return [
        dim(first_out + i) * s + dim(first_win + i) * d
        for i, (s, d) in enumerate(zip(strides, dils, strict=True))
    ]


__all__ = [
    "GraphLowering",
    "Lowered",
    "Lowering",
    "LoweringTable",
    "copy",
    "mac",
    "out_shape",
    "window",
    "window_exprs",
]
