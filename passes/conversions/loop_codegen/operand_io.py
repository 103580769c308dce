"""Loads and stores of the kernel's operands at a loop position, `width` lanes at a time.

An operand is read as a scalar (splat to the vector width when it does not vary along the vector
loop), as one vector.load when the vector loop walks its innermost dimension with unit stride, as
two overlapping vector loads and one shuffle with stride 2 (a stride-2 convolution or pooling
window), and otherwise lane by lane through a one-vector stack scratch (a gather; stores scatter
the same way). Operands copied into a panel (panels.py: a CPU stack panel or a GPU workgroup
buffer) are addressed relative to the tile's start.

Shared: a GPU thread reads and writes its register tile's operands exactly as a CPU point does.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref, vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    MemRefType,
    StridedLayoutAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from passes.analysis.kernel_access import OperandAccess
from passes.conversions.loop_codegen.emitter import Emitter, Pos, pos_key


class OperandIO:
    """Memory accesses of one loop nest; `accesses` is shared with the stages (and rewritten in
    place while a packed tile is being generated)."""

    def __init__(
        self,
        emitter: Emitter,
        accesses: list[OperandAccess],
        written: set[SSAValue],
        num_loops: int,
        vector_loop: int,
        vector_width: int,
    ):
        self.emitter = emitter
        self.accesses = accesses
        self.written = written  # buffers stored to inside the nest: loads of them are not reused
        self.vector_loop = vector_loop
        self.vector_width = vector_width
        self.num_loops = num_loops
        self.panel_origins: dict[int, SSAValue] = {}  # packed operands: panel index of tile start

    # --------------------------------------------------------------------- addressing
    def indices(self, operand: int, pos: Sequence[Pos]) -> list[SSAValue]:
        """The memref indices of an operand at a loop position."""
        access = self.accesses[operand]
        indices = [
            self.emitter.linear_index(access.coefs[r], access.consts[r], pos)
            for r in range(len(access.coefs))
        ]
        if operand in self.panel_origins:  # a packed panel: relative to the tile's first element
            indices = [self._relative_to_panel(operand, x) for x in indices]
        return indices

    def _relative_to_panel(self, operand: int, index: SSAValue) -> SSAValue:
        origin = self.panel_origins[operand]
        key = ("rebase", index, origin)
        found = self.emitter.lookup(key)
        if found is not None:
            return found
        return self.emitter.remember(key, self.emitter.insert(arith.SubiOp(index, origin)).result)

    def flat_view(self, operand: int) -> SSAValue:
        """A 1-D view of an operand's whole buffer (reinterpret_cast), for per-lane accesses:
        each lane then costs one add instead of a full multi-dimensional index."""
        key = ("flat", operand)
        if key in self.emitter.hoisted:
            return self.emitter.hoisted[key]
        access = self.accesses[operand]
        extent = (
            access.offset + sum((n - 1) * s for n, s in zip(access.shape, access.mem_strides)) + 1
        )
        elem = access.value.type.element_type  # type: ignore[attr-defined]
        if access.runtime_offset:  # a block at a run-time offset: the view starts there
            meta = memref.ExtractStridedMetaDataOp(access.value)
            self.emitter.hoist(meta)
            cast = memref.ReinterpretCastOp.from_dynamic(
                access.value,
                [meta.offset],
                [extent],
                [1],
                MemRefType(elem, [extent], StridedLayoutAttr([1], None)),
            )
        else:
            cast = memref.ReinterpretCastOp(
                access.value, [], [], [], [0], [extent], [1], MemRefType(elem, [extent])
            )
        self.emitter.hoist(cast)
        self.emitter.hoisted[key] = cast.result
        return cast.result

    def flat_access(self, operand: int, pos: Sequence[Pos]) -> tuple[SSAValue, SSAValue, int]:
        """(flat view, linear index of lane 0, element step between lanes) of an operand at pos."""
        access = self.accesses[operand]
        const = access.offset + sum(s * c for s, c in zip(access.mem_strides, access.consts))
        first = self.emitter.linear_index(access.loop_strides, const, pos)
        lane_step = access.loop_strides[self.vector_loop]
        if operand in self.panel_origins:  # a packed panel is flat already
            return access.value, self._relative_to_panel(operand, first), lane_step
        return self.flat_view(operand), first, lane_step

    def scratch(self, elem: Attribute) -> SSAValue:
        """A stack buffer of one vector: strided gathers and scatters go through it as a loop,
        which keeps the IR small (LLVM unrolls it and promotes the buffer to registers)."""
        return self.emitter.stack_buffer(("scratch", elem), elem, max(self.vector_width, 1))

    def _lane_address(self, first: SSAValue, lane: SSAValue, lane_step: int) -> SSAValue:
        emit = self.emitter
        offset = emit.insert(arith.MuliOp(lane, emit.index(lane_step))).result
        return emit.insert(arith.AddiOp(first, offset)).result

    # -------------------------------------------------------------------------- loads
    def splat(self, value: SSAValue, width: int) -> SSAValue:
        """`value` on every lane (unchanged when already a vector, or for scalar code)."""
        if width == 1 or isinstance(value.type, VectorType):
            return value
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
            return self.emitter.constant(owner.value.value.data, VectorType(value.type, [width]))
        key = ("splat", value, width)
        found = self.emitter.lookup(key)
        if found is not None:
            return found
        vec = self.emitter.insert(vector.BroadcastOp(value, VectorType(value.type, [width])))
        return self.emitter.remember(key, vec.vector)

    def load(self, operand: int, pos: list[Pos], width: int) -> SSAValue:
        """An operand's value at pos, as `width` lanes along the vector loop."""
        access = self.accesses[operand]
        if access.is_scalar:
            return self.splat(access.value, width)
        if access.value in self.written:
            # the output is stored to between loads: never reuse a load of it
            with self.emitter.scope():
                return self._load(operand, access, pos, width)
        return self._load(operand, access, pos, width)

    def _load(self, operand: int, access: OperandAccess, pos: list[Pos], width: int) -> SSAValue:
        emit = self.emitter
        value = access.value
        elem = value.type.element_type  # type: ignore[attr-defined]
        # loads are reused at the same position of the loops the operand depends on
        varying = tuple(
            pos_key(pos, d) for d in range(self.num_loops) if any(row[d] for row in access.coefs)
        )
        if width == 1 or access.invariant_to(self.vector_loop):
            key: tuple[object, ...] = ("load", operand, id(value), varying)
            found = emit.lookup(key)
            if found is None:
                found = emit.insert(memref.LoadOp.get(value, self.indices(operand, pos))).res
                emit.remember(key, found)
            return self.splat(found, width)
        if access.contiguous_along(self.vector_loop):
            key = ("vload", operand, id(value), width, varying)
            found = emit.lookup(key)
            if found is None:
                load = vector.LoadOp(value, self.indices(operand, pos), VectorType(elem, [width]))
                found = emit.remember(key, emit.insert(load).result)
            return found
        flat, first, lane_step = self.flat_access(operand, pos)
        if lane_step == 2 and width % 2 == 0:
            key = ("vload2", operand, id(value), width, varying)
            found = emit.lookup(key)
            if found is None:
                found = emit.remember(key, self._even_lanes(flat, first, elem, width))
            return found
        scratch = self.scratch(elem)  # gather through a scratch
        self._copy_lanes(flat, first, lane_step, scratch, width, gather=True)
        return emit.insert(
            vector.LoadOp(scratch, [emit.index(0)], VectorType(elem, [width]))
        ).result

    def _copy_lanes(
        self,
        flat: SSAValue,
        first: SSAValue,
        lane_step: int,
        scratch: SSAValue,
        width: int,
        gather: bool,
    ) -> None:
        """A loop copying `width` lanes, one element each, between flat[first + lane * lane_step]
        and scratch[lane]: into the scratch (a gather), or out of it (a scatter)."""
        emit = self.emitter

        def lane_copy(lane: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            at = self._lane_address(first, lane, lane_step)
            src, src_at, dst, dst_at = (
                (flat, at, scratch, lane) if gather else (scratch, lane, flat, at)
            )
            element = emit.insert(memref.LoadOp.get(src, [src_at])).res
            emit.insert(memref.StoreOp.get(element, dst, [dst_at]))
            return []

        emit.for_loop(emit.index(0), emit.index(width), 1, [], lane_copy)

    def _even_lanes(self, flat: SSAValue, first: SSAValue, elem: Attribute, width: int) -> SSAValue:
        """flat[first + 2 * i] for i < width: vectors at `first` and at `first + width - 1`
        cover exactly elements first .. first + 2 * (width - 1), so nothing outside the
        operand's span is read; the even offsets are lanes 0, 2, .., width - 2 of the first and
        1, 3, .., width - 1 of the second (one vpermt2ps with AVX-512)."""
        emit = self.emitter
        typ = VectorType(elem, [width])
        low = emit.insert(vector.LoadOp(flat, [first], typ)).result
        shifted = emit.insert(arith.AddiOp(first, emit.index(width - 1))).result
        high = emit.insert(vector.LoadOp(flat, [shifted], typ)).result
        mask = [*range(0, width, 2), *range(width + 1, 2 * width, 2)]
        shuffle = vector.ShuffleOp(low, high, DenseArrayBase.from_list(i64, mask), result_type=typ)
        return emit.insert(shuffle).result

    # ------------------------------------------------------------------------- stores
    def store(self, value: SSAValue, operand: int, pos: list[Pos], width: int) -> None:
        """Write `width` lanes of `value` to an operand at pos."""
        emit = self.emitter
        access = self.accesses[operand]
        if width == 1:
            emit.insert(memref.StoreOp.get(value, access.value, self.indices(operand, pos)))
        elif access.contiguous_along(self.vector_loop):
            emit.insert(vector.StoreOp(value, access.value, self.indices(operand, pos)))
        else:  # scatter, lane by lane through a scratch
            flat, first, lane_step = self.flat_access(operand, pos)
            scratch = self.scratch(value.type.element_type)  # type: ignore[attr-defined]
            emit.insert(vector.StoreOp(value, scratch, [emit.index(0)]))
            self._copy_lanes(flat, first, lane_step, scratch, width, gather=False)
