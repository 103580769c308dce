"""Read-only analysis of a linalg.generic on memrefs: loop extents and per-operand access strides.

Every indexing map ziggurat emits is affine-linear in the loop indices, so each operand access is
`base + sum(stride[d] * i_d)` in elements. The default scheduler, the loop generator and the
tuner's features all reason about kernels through this one description.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineMap


class KernelAnalysisError(Exception):
    """The kernel is outside what the loop generator handles (names the reason)."""


@dataclass
class OperandAccess:
    """How one operand of the kernel is read or written."""

    value: SSAValue
    is_output: bool
    shape: tuple[int, ...]
    mem_strides: tuple[int, ...]  # element stride of each memref dimension
    offset: int  # static layout offset in elements
    coefs: list[list[int]]  # coefs[r][d]: coefficient of loop d in map result r
    consts: list[int]  # constant term of each map result
    loop_strides: list[int] = field(default_factory=list)  # element stride per loop
    runtime_offset: bool = False
    """The layout offset is `?` (a block of a kernel with run-time extents, dynamic_blocks.py):
    `offset` is 0 and the flat view adds the run-time one."""

    @property
    def is_scalar(self) -> bool:
        """A plain SSA scalar (not a memref): its value is used as is."""
        return not isinstance(self.value.type, MemRefType)

    def contiguous_along(self, d: int) -> bool:
        """True when loop d walks the innermost memref dimension with unit stride (vector.load)."""
        if self.is_scalar or not self.shape:
            return False
        last = len(self.coefs) - 1
        return (
            self.coefs[last][d] == 1
            and all(self.coefs[r][d] == 0 for r in range(last))
            and self.mem_strides[last] == 1
        )

    def invariant_to(self, d: int) -> bool:
        return all(row[d] == 0 for row in self.coefs)


@dataclass
class KernelInfo:
    op: GenericOp
    extents: list[int]
    iterators: list[str]  # "parallel" | "reduction" per loop
    accesses: list[OperandAccess]  # inputs then outputs, as the block arguments

    @property
    def num_loops(self) -> int:
        return len(self.extents)

    @property
    def reduction_loops(self) -> list[int]:
        return [d for d, it in enumerate(self.iterators) if it == "reduction"]

    @property
    def parallel_loops(self) -> list[int]:
        return [d for d, it in enumerate(self.iterators) if it == "parallel"]

    @property
    def output(self) -> OperandAccess:
        return self.accesses[-1]


def has_dynamic_shape(op: GenericOp) -> bool:
    """Whether a kernel has run-time extents (a memref operand with a `?` dim): it is lowered as
    static blocks (linalg_to_loops/dynamic_blocks.py), each scheduled on its own."""
    return any(
        isinstance(v.type, MemRefType) and DYNAMIC_INDEX in v.type.get_shape() for v in op.operands
    )


def linear_form(amap: AffineMap) -> tuple[list[list[int]], list[int]]:
    """Coefficients and constants of an affine-linear map; raises if a result is not linear."""
    n = amap.num_dims
    zero = amap.eval([0] * n, [0] * amap.num_symbols)
    coefs = [[0] * n for _ in amap.results]
    for d in range(n):
        unit = [0] * n
        unit[d] = 1
        at1 = amap.eval(unit, [0] * amap.num_symbols)
        unit[d] = 3
        at3 = amap.eval(unit, [0] * amap.num_symbols)
        for r in range(len(amap.results)):
            c = at1[r] - zero[r]
            if at3[r] - zero[r] != 3 * c:
                raise KernelAnalysisError(f"indexing map {amap} is not affine-linear")
            coefs[r][d] = c
    # a second probe with all dims set catches cross terms such as d0 floordiv d1
    probe = [5 + 2 * d for d in range(n)]
    got = amap.eval(probe, [0] * amap.num_symbols)
    for r in range(len(amap.results)):
        if got[r] != zero[r] + sum(c * p for c, p in zip(coefs[r], probe)):
            raise KernelAnalysisError(f"indexing map {amap} is not affine-linear")
    return coefs, list(zero)


def analyze_kernel(op: GenericOp) -> KernelInfo:
    maps = [m.data for m in op.indexing_maps]
    iterators = [
        "reduction" if it.data == IteratorType.REDUCTION else "parallel" for it in op.iterator_types
    ]
    n = len(iterators)
    operands = list(op.inputs) + list(op.outputs)
    accesses: list[OperandAccess] = []
    extents: list[int | None] = [None] * n
    for i, (value, amap) in enumerate(zip(operands, maps, strict=True)):
        is_output = i >= len(op.inputs)
        coefs, consts = linear_form(amap)
        if isinstance(value.type, MemRefType):
            mtype: MemRefType = value.type
            shape = tuple(mtype.get_shape())
            strides = mtype.get_strides()
            offset = mtype.get_offset()
            if any(s < 0 for s in shape):
                raise KernelAnalysisError(f"operand #{i} has a dynamic shape: {mtype}")
            # a unit dim's stride is never used (its index is 0): a run-time one is fine
            if strides is None or any(
                s is None and n != 1 for s, n in zip(strides, shape, strict=True)
            ):
                raise KernelAnalysisError(f"operand #{i} has a dynamic layout: {mtype}")
            mem_strides = tuple(0 if s is None else int(s) for s in strides)
            runtime_offset = offset is None
            offset = offset or 0
        else:
            if coefs:
                raise KernelAnalysisError(f"operand #{i} is not a memref: {value.type}")
            shape, mem_strides, offset, runtime_offset = (), (), 0, False
        acc = OperandAccess(value, is_output, shape, mem_strides, int(offset), coefs, consts)
        acc.runtime_offset = runtime_offset
        acc.loop_strides = [
            sum(mem_strides[r] * coefs[r][d] for r in range(len(coefs))) for d in range(n)
        ]
        accesses.append(acc)
        for r, row in enumerate(coefs):
            nz = [d for d in range(n) if row[d] != 0]
            if len(nz) == 1 and row[nz[0]] == 1 and consts[r] == 0 and extents[nz[0]] is None:
                extents[nz[0]] = shape[r]
    # a loop seen only inside compound expressions (e.g. a conv window) takes the largest extent
    # that keeps every access in bounds
    for d in range(n):
        if extents[d] is not None:
            continue
        bound: int | None = None
        for acc in accesses:
            for r, row in enumerate(acc.coefs):
                if row[d] > 0:
                    rest = acc.consts[r] + sum(
                        row[e] * ((extents[e] or 1) - 1) for e in range(n) if e != d and row[e] > 0
                    )
                    b = (acc.shape[r] - 1 - rest) // row[d] + 1
                    bound = b if bound is None else min(bound, b)
        if bound is None:
            raise KernelAnalysisError(f"cannot infer the extent of loop d{d}")
        extents[d] = bound
    return KernelInfo(op, [int(e) for e in extents], iterators, accesses)  # type: ignore[arg-type]
