"""Small facts about a linalg.generic's indexing maps and loops, shared by the tensor-level
rewrites (fuse-elementwise, fold-transposes)."""

from __future__ import annotations

from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.ir.affine import AffineMap


def all_parallel(op: GenericOp) -> bool:
    """Whether every loop of `op` is parallel."""
    return all(it.data == IteratorType.PARALLEL for it in op.iterator_types)


def is_permutation(m: AffineMap) -> bool:
    """Whether `m` permutes its dims (every dim once, nothing else)."""
    return len(m.results) == m.num_dims and m.is_projected_permutation()


def indexing_maps(op: GenericOp) -> list[AffineMap]:
    """`op`'s indexing maps, inputs then outputs."""
    return [m.data for m in op.indexing_maps]
