"""bufferize: TENSOR level -> BUFFER level (destination-passing style on memrefs).

xDSL has no one-shot bufferization, and our input is narrow (see the level contracts), so this
is a direct, in-order rewrite of `@main`:

* tensor arguments become memref arguments; results become trailing out-params;
* dense constants become `memref.global` + `memref.get_global` (deduplicated);
* every DPS op (linalg.fill / linalg.generic) writes into the buffer of its `outs` tensor, in
  place when that tensor (and everything sharing its buffer) is dead afterwards, else into a
  fresh buffer (filled by a copy first when the body reads the init value);
* an elementwise generic whose init is a fresh `tensor.empty` overwrites a dead, same-typed
  intermediate input instead (see `elementwise_in_place_input` for why that is safe);
* reshapes and slices become memref views; insert_slice becomes subview + copy;
* a late copy-elision step makes producers write straight into insert_slice destinations and
  out-params (copy-free concat/pad, last kernel writes the output);
* all intermediate buffers are `memref.view`s into one 64-byte-aligned arena, placed by a
  planner from `memory_plan.py` (greedy reuse by liveness by default); one with `?` dims is a
  `memref.alloc` of its run-time sizes instead (allocated per call, freed after its last kernel).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar, cast

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i8,
    i64,
)
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import FillOp, GenericOp, YieldOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from dialects.attributes import GROUP_ATTR, MEMORY_PLAN_ATTR
from passes.analysis.main_function import main_function
from passes.analysis.pass_errors import op_error
from passes.transforms.bufferize_types import (
    collapse_type,
    expand_type,
    is_collapsible,
    memref_bytes,
    subview_type,
    tensor_to_memref,
)
from passes.transforms.memory_plan import PLANNERS, BufferRequest, MemoryPlan, check_plan

_VIEW_OPS = (memref.SubviewOp, memref.ExpandShapeOp, memref.CollapseShapeOp)

_OpT = TypeVar("_OpT", bound=Operation)


def _memref_type(value: SSAValue) -> MemRefType[Attribute]:
    """The type of `value`, a buffer (memref) by construction of this pass."""
    t = value.type
    assert isinstance(t, MemRefType), t
    return t


def _tensor_type(t: Attribute) -> TensorType[Attribute]:
    """`t`, a tensor type by the TENSOR-level contract of the input."""
    assert isinstance(t, TensorType), t
    return t


def build_copy(src: SSAValue, dst: SSAValue) -> GenericOp:
    """A copy as a linalg.generic (identity maps, parallel), so it is scheduled like any kernel."""
    src_t = _memref_type(src)
    rank = src_t.get_num_dims()
    identity = AffineMapAttr(AffineMap.identity(rank))
    body = Block(arg_types=[src_t.element_type, src_t.element_type])
    body.add_op(YieldOp(body.args[0]))
    return GenericOp(
        [src],
        [dst],
        Region(body),
        [identity, identity],
        [IteratorTypeAttr.parallel()] * rank,
    )


def is_copy(op: Operation) -> bool:
    """Whether `op` is a copy generic as built by `build_copy`."""
    if not isinstance(op, GenericOp) or len(op.inputs) != 1 or len(op.outputs) != 1:
        return False
    maps = [m.data for m in op.indexing_maps]
    if any(m != AffineMap.identity(m.num_dims) for m in maps):
        return False
    if any(it.data.value != "parallel" for it in op.iterator_types):
        return False
    ops = list(op.body.block.ops)
    return (
        len(ops) == 1
        and isinstance(ops[0], YieldOp)
        and ops[0].operands[0] is op.body.block.args[0]
    )


def _reassociation(op: tensor.ExpandShapeOp | tensor.CollapseShapeOp) -> list[list[int]]:
    return [[d.value.data for d in g.data] for g in op.reassociation.data]


def _retyped_views(
    root: SSAValue, new_type: MemRefType[Attribute], skip: set[Operation]
) -> list[tuple[Operation, Operation]] | None:
    """Every view of `root` (transitively; not those in `skip`) rebuilt for `root` having
    `new_type` instead: (old view, new view) in dependency order, the new ones still reading
    the old operands; None when a collapse no longer fits the new strides. A view's type is
    computed from its source's, so replacing a buffer by one of another layout must retype
    them all."""
    out: list[tuple[Operation, Operation]] = []
    work: list[tuple[SSAValue, MemRefType[Attribute]]] = [(root, new_type)]
    while work:
        value, vtype = work.pop(0)
        for use in list(value.uses):
            op = use.operation
            if op in skip or not isinstance(op, _VIEW_OPS):
                continue
            if isinstance(op, memref.SubviewOp):
                t = subview_type(
                    vtype,
                    list(op.static_offsets.get_values()),
                    list(op.static_sizes.get_values()),
                    list(op.static_strides.get_values()),
                    _memref_type(op.results[0]).get_shape(),
                )
            else:
                groups = [[d.value.data for d in g.data] for g in op.reassociation.data]
                if isinstance(op, memref.ExpandShapeOp):
                    t = expand_type(vtype, groups, _memref_type(op.results[0]).get_shape())
                elif is_collapsible(vtype, groups):
                    t = collapse_type(vtype, groups)
                else:
                    return None
            new = type(op).create(
                operands=list(op.operands),
                result_types=[t],
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
            out.append((op, new))
            work.append((op.results[0], t))
    return out


def _returned(value: SSAValue) -> bool:
    """Whether `value` is a result of the function, itself or through reshapes."""
    work = [value]
    while work:
        for use in work.pop().uses:
            user = use.operation
            if isinstance(user, func.ReturnOp):
                return True
            if isinstance(user, tensor.CollapseShapeOp | tensor.ExpandShapeOp):
                work.append(user.results[0])
    return False


def _top_level(op: Operation, positions: dict[Operation, int]) -> Operation | None:
    cur: Operation | None = op
    while cur is not None and cur not in positions:
        cur = cur.parent_op()
    return cur


@dataclass
class _Bufferizer:
    """State of one bufferization of one function."""

    module: ModuleOp
    old: func.FuncOp
    planner: str
    vmap: dict[SSAValue, SSAValue] = field(default_factory=dict)
    base: dict[SSAValue, SSAValue] = field(default_factory=dict)
    residents: dict[SSAValue, list[SSAValue]] = field(default_factory=dict)
    plan_views: list[memref.ViewOp] = field(default_factory=list)
    planned: dict[SSAValue, memref.ViewOp] = field(default_factory=dict)
    """The results of `plan_views`, to their view: whether a buffer is a planned intermediate
    in constant time (a scan of the list made long models quadratic)."""
    prologue: list[Operation] = field(default_factory=list)
    body: list[Operation] = field(default_factory=list)
    copies: list[GenericOp] = field(default_factory=list)
    globals_: dict[tuple[Attribute, Attribute], memref.GetGlobalOp] = field(default_factory=dict)
    last_use: dict[SSAValue, int] = field(default_factory=dict)
    roles: dict[tuple[SSAValue, int], list[str]] = field(default_factory=dict)
    symbols: set[str] | None = None
    next_constant: int = 0
    dynamic: dict[SSAValue, memref.AllocOp] = field(default_factory=dict)
    """Intermediates with run-time sizes (`?` dims): allocated per call where they are made
    and freed after their last kernel; the planned arena holds the static ones."""

    def __post_init__(self) -> None:
        self.arena_placeholder = memref.AllocOp.get(i8, 64, [0])

    # ---- tensor-level liveness -------------------------------------------------------------

    def analyze(self, ops: Sequence[Operation]) -> None:
        for i, op in enumerate(ops):
            outs = set(op.outputs) if isinstance(op, GenericOp | FillOp) else set()
            if isinstance(op, tensor.InsertSliceOp):
                outs = {op.dest}
            for j, operand in enumerate(op.operands):
                role = "outs" if operand in outs and self._is_outs_index(op, j) else "read"
                self._use(operand, i, role)
            for region in op.regions:
                for nested in region.walk():
                    for operand in nested.operands:
                        self._use(operand, i, "read")

    @staticmethod
    def _is_outs_index(op: Operation, j: int) -> bool:
        if isinstance(op, tensor.InsertSliceOp):
            return j == 1
        assert isinstance(op, GenericOp | FillOp)
        return j >= len(op.inputs)

    def _use(self, value: SSAValue, i: int, role: str) -> None:
        self.last_use[value] = max(self.last_use.get(value, -1), i)
        self.roles.setdefault((value, i), []).append(role)

    # ---- buffers ---------------------------------------------------------------------------

    def bind(self, t: SSAValue, buf: SSAValue) -> None:
        """Record that tensor `t` lives in memref `buf`."""
        self.vmap[t] = buf
        self.residents.setdefault(self.base[buf], []).append(t)

    def live_residents(self, root: SSAValue, i: int) -> list[SSAValue]:
        """The tensors living in `root` that are still used at op `i` or later.

        Ops are converted in order, so a tensor dead before op `i` is dead for every later
        question too and is dropped from `residents` for good: a buffer reused in place along
        a chain of N ops would otherwise be rescanned with all its past tensors at every op."""
        residents = self.residents.get(root)
        if not residents:
            return []
        live = [t for t in residents if self.last_use.get(t, -1) >= i]
        if len(live) != len(residents):
            self.residents[root] = live
        return live

    def new_buffer(self, t: MemRefType[Attribute], sizes: Sequence[SSAValue] = ()) -> SSAValue:
        """A fresh intermediate buffer; its arena offset is filled in by the planner. One with
        `?` dims (of run-time `sizes`) is allocated where it is made."""
        if DYNAMIC_INDEX in t.get_shape():
            alloc = self.emit(memref.AllocOp(list(sizes), [], t, IntegerAttr(64, i64)))
            self.base[alloc.memref] = alloc.memref
            self.dynamic[alloc.memref] = alloc
            return alloc.memref
        offset = arith.ConstantOp(IntegerAttr(0, IndexType()))
        view = memref.ViewOp(self.arena_placeholder, offset, [], t)
        self.plan_views.append(view)
        self.planned[view.result] = view
        self.base[view.result] = view.result
        return view.result

    def sizes_of(self, buf: SSAValue) -> list[SSAValue]:
        """The run-time sizes of `buf`'s `?` dims (memref.dim, emitted here)."""
        sizes: list[SSAValue] = []
        for k, d in enumerate(_memref_type(buf).get_shape()):
            if d == DYNAMIC_INDEX:
                index = self.emit(arith.ConstantOp(IntegerAttr(k, IndexType())))
                sizes.append(self.emit(memref.DimOp(buf, index.result)).result)
        return sizes

    def is_intermediate(self, root: SSAValue) -> bool:
        """A buffer this pass made for an intermediate (planned, or allocated per call)."""
        return root in self.planned or root in self.dynamic

    def emit(self, op: _OpT) -> _OpT:
        self.body.append(op)
        return op

    def emit_view(self, op: Operation, src: SSAValue) -> SSAValue:
        self.emit(op)
        self.base[op.results[0]] = self.base[src]
        return op.results[0]

    def copy(self, src: SSAValue, dst: SSAValue, like: Operation | None = None) -> None:
        """Emit a copy generic; it inherits `like`'s discardable attributes (its fusion group)."""
        c = build_copy(src, dst)
        if like is not None:
            c.attributes.update(like.attributes)
        self.copies.append(self.emit(c))

    def writable_in_place(self, init: SSAValue, i: int) -> bool:
        """Whether op `i` may overwrite the buffer of `init`: it is an intermediate and no
        tensor sharing it is needed afterwards (nor read by op `i` itself)."""
        root = self.base[self.vmap[init]]
        if not self.is_intermediate(root):
            return False
        for t in self.live_residents(root, i):
            if t is init:
                if self.last_use.get(t, -1) > i or self.roles.get((t, i)) != ["outs"]:
                    return False
            elif self.last_use.get(t, -1) >= i:
                return False
        return True

    def dest_buffer(self, init: SSAValue, i: int, needs_content: bool) -> SSAValue:
        """The buffer op `i` writes its result for `init` into (destination passing)."""
        if self.writable_in_place(init, i):
            return self.vmap[init]
        fresh = self.new_buffer(
            tensor_to_memref(_tensor_type(init.type)), self.sizes_of(self.vmap[init])
        )
        if needs_content:
            self.copy(self.vmap[init], fresh)
        return fresh

    # ---- op conversions --------------------------------------------------------------------

    def convert(self, op: Operation, i: int) -> None:
        match op:
            case arith.ConstantOp() if isinstance(op.result.type, TensorType):
                self.bind(op.result, self.constant(op))
            case tensor.EmptyOp():
                if op.tensor.uses:
                    ty = tensor_to_memref(op.tensor.type)
                    sizes = [self.vmap.get(v, v) for v in op.dynamic_sizes]
                    self.bind(op.tensor, self.new_buffer(ty, sizes))
            case tensor.ExtractOp():  # a scalar read outside kernels (a run-time bound)
                indices = [self.vmap.get(v, v) for v in op.indices]
                load = self.emit(memref.LoadOp.get(self.vmap[op.tensor], indices))
                self.vmap[op.result] = load.res
            case tensor.DimOp():
                index = self.vmap.get(op.index, op.index)
                dim = self.emit(memref.DimOp(self.vmap[op.source], index))
                self.vmap[op.result] = dim.result
            case FillOp():
                out = self.dest_buffer(op.outputs[0], i, needs_content=False)
                fill = FillOp([self.vmap.get(v, v) for v in op.inputs], [out], res=())
                fill.attributes.update(op.attributes)
                self.emit(fill)
                self.bind(op.results[0], out)
            case GenericOp():
                self.generic(op, i)
            case tensor.ExpandShapeOp():
                src = self.vmap[op.src]
                shape = list(op.static_output_shape.get_values())
                reassoc = _reassociation(op)
                res_t = expand_type(_memref_type(src), reassoc, shape)
                sizes = [self.vmap.get(v, v) for v in op.dynamic_output_shape]
                expand = memref.ExpandShapeOp.build(
                    operands=[src, sizes],
                    result_types=[res_t],
                    properties={
                        "reassociation": op.reassociation,
                        "static_output_shape": op.static_output_shape,
                    },
                )
                self.bind(op.result, self.emit_view(expand, src))
            case tensor.CollapseShapeOp():
                src = self.vmap[op.src]
                reassoc = _reassociation(op)
                src_t = _memref_type(src)
                if not is_collapsible(src_t, reassoc):
                    fresh = self.new_buffer(
                        tensor_to_memref(_tensor_type(op.src.type)), self.sizes_of(src)
                    )
                    self.copy(src, fresh)
                    src, src_t = fresh, _memref_type(fresh)
                collapse = memref.CollapseShapeOp.build(
                    operands=[src],
                    result_types=[collapse_type(src_t, reassoc)],
                    properties={"reassociation": op.reassociation},
                )
                self.bind(op.result, self.emit_view(collapse, src))
            case tensor.ExtractSliceOp():
                src = self.vmap[op.source]
                res_shape = op.result.type.get_shape()
                self.bind(op.result, self.subview(src, op, res_shape))
            case tensor.InsertSliceOp():
                out = self.dest_buffer(op.dest, i, needs_content=True)
                src_shape = _tensor_type(op.source.type).get_shape()
                view = self.subview(out, op, src_shape)
                self.copy(self.vmap[op.source], view, like=op)
                self.bind(op.result, out)
            case func.ReturnOp():
                pass  # handled by `finish`
            case _:
                if any(isinstance(r.type, TensorType) for r in op.results) or any(
                    isinstance(o.type, TensorType) for o in op.operands
                ):
                    if op.dialect_name() == "graph":  # a graph-level module
                        raise op_error(
                            op,
                            "bufferize: expects tensor-level IR (linalg on tensors: run "
                            "convert-graph-to-linalg first), not graph-level ops",
                        )
                    raise op_error(op, f"bufferize: unsupported tensor op {op.name}")
                clone = self.emit(op.clone(value_mapper=self.vmap))
                for old_r, new_r in zip(op.results, clone.results, strict=True):
                    self.vmap[old_r] = new_r

    def subview(
        self,
        src: SSAValue,
        op: tensor.ExtractSliceOp | tensor.InsertSliceOp,
        target_shape: Sequence[int],
    ) -> SSAValue:
        if op.offsets or op.sizes or op.strides:
            raise op_error(op, "bufferize: dynamic slice offsets/sizes/strides are unsupported")
        offsets = list(op.static_offsets.get_values())
        sizes = list(op.static_sizes.get_values())
        steps = list(op.static_strides.get_values())
        res_t = subview_type(_memref_type(src), offsets, sizes, steps, target_shape)
        new = memref.SubviewOp.get(src, offsets, sizes, steps, res_t)
        return self.emit_view(new, src)

    def constant(self, op: arith.ConstantOp) -> SSAValue:
        ty = tensor_to_memref(_tensor_type(op.result.type))
        key = (ty, op.value)
        if key not in self.globals_:
            name = self.fresh_global_name()
            glob = memref.GlobalOp.get(
                StringAttr(name),
                ty,
                op.value,
                constant=UnitAttr(),
                alignment=64,
            )
            self.module.body.block.insert_op_before(glob, self.old)
            get = memref.GetGlobalOp(SymbolRefAttr(name), ty)
            self.prologue.append(get)
            self.base[get.memref] = get.memref
            self.globals_[key] = get
        return self.globals_[key].memref

    def fresh_global_name(self) -> str:
        """The first `__constant_<n>` no global or function of the module is named (the module's
        symbols are read once: a scan per constant made models with many weights quadratic)."""
        if self.symbols is None:
            self.symbols = {
                o.sym_name.data
                for o in self.module.body.block.ops
                if isinstance(o, memref.GlobalOp | func.FuncOp)
            }
        while f"__constant_{self.next_constant}" in self.symbols:
            self.next_constant += 1
        name = f"__constant_{self.next_constant}"
        self.symbols.add(name)
        return name

    def elementwise_in_place_input(
        self, op: GenericOp, k: int, i: int, taken: set[SSAValue]
    ) -> SSAValue | None:
        """The buffer of an input that elementwise op `i` may overwrite with its output `k`.

        Reusing an input buffer for the result of an elementwise kernel is safe when every
        output element is computed only from the input elements at the *same* position and the
        input is dead afterwards: each position is read before it is written, and no other
        position ever reads it again. Concretely:

        * the op has only parallel iterators, output `k` has the identity map, and its init is a
          fresh `tensor.empty` whose block argument is unused (nothing reads the init);
        * the input has the identity map and exactly the output's memref type (shape, element
          type, identity layout), so position p of the input is position p of the output;
        * the input's buffer is a planned intermediate (an arena view), never a function
          argument, a global constant or an out-param, and no output of this op already took it;
        * the output is not a result of the function: a fresh buffer then becomes the out-param
          (`elide_copies`), where an input's buffer would be copied there afterwards;
        * no tensor living in that buffer (the input, its views and aliases) is used after op
          `i`, and at op `i` they are only read as inputs;
        * every other input reading that buffer is the same memref with the identity map (so
          `x * x` is fine), and the body reads nothing of it through `tensor.extract`
          (gathers read across positions).

        Returns None when no input qualifies; the caller then allocates a fresh buffer.
        """
        init = op.outputs[k]
        n_in = len(op.inputs)
        maps = [m.data for m in op.indexing_maps]
        if not isinstance(init.owner, tensor.EmptyOp) or op.body.block.args[n_in + k].uses:
            return None
        if _returned(op.res[k]):
            return None
        if any(it.data.value != "parallel" for it in op.iterator_types):
            return None
        out_map = maps[n_in + k]
        if out_map != AffineMap.identity(out_map.num_dims):
            return None
        out_type = tensor_to_memref(_tensor_type(init.type))
        nested = {o for region in op.regions for n in region.walk() for o in n.operands}
        for j, value in enumerate(op.inputs):
            buf = self.vmap.get(value)
            if buf is None or buf.type != out_type or maps[j] != out_map:
                continue
            root = self.base[buf]
            if root in taken or not self.is_intermediate(root):
                continue
            residents = self.live_residents(root, i)
            if any(
                self.last_use.get(t, -1) > i
                or any(role != "read" for role in self.roles.get((t, i), []))
                for t in residents
            ):
                continue
            if any(
                self.base.get(self.vmap.get(other, other)) is root
                and (self.vmap.get(other) is not buf or maps[jj] != out_map)
                for jj, other in enumerate(op.inputs)
            ):
                continue
            if any(t in nested for t in residents):
                continue
            return buf
        return None

    def generic(self, op: GenericOp, i: int) -> None:
        outs: list[SSAValue] = []
        block = op.body.block
        n_in = len(op.inputs)
        taken: set[SSAValue] = set()
        for k, init in enumerate(op.outputs):
            reuse = self.elementwise_in_place_input(op, k, i, taken)
            if reuse is not None:
                taken.add(self.base[reuse])
                outs.append(reuse)
                continue
            reads_init = bool(block.args[n_in + k].uses)
            outs.append(self.dest_buffer(init, i, needs_content=reads_init))
        # only what the body reads from outside: a copy of all of vmap per op is quadratic
        mapper = {v: self.vmap[v] for o in op.body.walk() for v in o.operands if v in self.vmap}
        body = Region()
        op.body.clone_into(body, value_mapper=mapper)
        new = GenericOp(
            [self.vmap.get(v, v) for v in op.inputs],
            outs,
            body,
            op.indexing_maps,
            op.iterator_types,
            (),
            op.doc,
            op.library_call,
        )
        new.attributes.update(op.attributes)
        for size in [o for o in new.walk() if isinstance(o, tensor.DimOp)]:  # a read's bound
            replaced = memref.DimOp(size.source, size.index)
            size.result.replace_all_uses_with(replaced.result)
            parent = size.parent_block()
            assert parent is not None
            parent.insert_op_before(replaced, size)
            parent.erase_op(size)
        for extract in [o for o in new.walk() if isinstance(o, tensor.ExtractOp)]:
            load = memref.LoadOp.get(extract.tensor, list(extract.indices))
            extract.result.replace_all_uses_with(load.res)
            parent = extract.parent_block()
            assert parent is not None
            parent.insert_op_before(load, extract)
            parent.erase_op(extract)
        self.emit(new)
        for res, out in zip(op.results, outs, strict=True):
            self.bind(res, out)

    # ---- copy elision ----------------------------------------------------------------------

    def positions(self) -> dict[Operation, int]:
        return {op: k for k, op in enumerate(self.body)}

    def users_of_root(
        self,
        root: SSAValue,
        pos: dict[Operation, int],
        by_root: dict[SSAValue, list[SSAValue]] | None = None,
    ) -> list[int]:
        """Positions of the body ops that touch memory through `root` or one of its views
        (`by_root`: `values_by_root()`, when asking for many roots of an unchanging body)."""
        found: list[int] = []
        if by_root is None:
            values = [value for value, b in self.base.items() if b is root]
        else:
            values = by_root.get(root, [])
        for value in values:
            for use in value.uses:
                top = _top_level(use.operation, pos)
                if top is not None and not isinstance(top, _VIEW_OPS):
                    found.append(pos[top])
        return found

    def values_by_root(self) -> dict[SSAValue, list[SSAValue]]:
        """Every buffer value, grouped by the root it views (in `base`'s order)."""
        groups: dict[SSAValue, list[SSAValue]] = {}
        for value, b in self.base.items():
            groups.setdefault(b, []).append(value)
        return groups

    def hoist(self, value: SSAValue, before: int) -> None:
        """Move the ops defining `value` (views, index constants) so that `value` is defined
        before body[before], each after what it uses."""
        owner = value.owner
        if not isinstance(owner, Operation) or owner not in self.body:
            return
        if self.body.index(owner) < before:
            return
        anchor = self.body[before]
        for operand in owner.operands:
            self.hoist(operand, self.body.index(anchor))
        self.body.remove(owner)
        self.body.insert(self.body.index(anchor), owner)

    def group_span(self, at: int) -> tuple[int, int]:
        """Where the fusion group of body[at] begins and ends (`at` for an op of no group): what
        is moved in front of it or after it must not land inside the kernel it becomes."""
        group = self.body[at].attributes.get(GROUP_ATTR)
        if group is None:
            return at, at
        members = [k for k, o in enumerate(self.body) if o.attributes.get(GROUP_ATTR) == group]
        return members[0], members[-1]

    def group_start(self, at: int) -> int:
        return self.group_span(at)[0]

    def hoist_fills(self, fills: list[FillOp], before: int) -> None:
        """Move `fills` (in order, with what defines their operands) in front of body[before],
        into the fusion group that starts there (one kernel then writes a padded buffer's
        interior and its border), or a group of their own."""
        anchor = next(o for o in self.body[before:] if o not in fills)
        group = anchor.attributes.get(GROUP_ATTR)
        if group is None:
            groups = [
                g.value.data
                for o in self.body
                if isinstance(g := o.attributes.get(GROUP_ATTR), IntegerAttr)
            ]
            group = IntegerAttr(max(groups, default=-1) + 1, 64)
        for f in fills:
            self.body.remove(f)
            for operand in f.operands:
                self.hoist(operand, self.body.index(anchor))
            self.body.insert(self.body.index(anchor), f)
            f.attributes[GROUP_ATTR] = group

    def elide_copies(self) -> None:
        """Make the producer of a copied intermediate write into the copy's target instead."""
        for c in list(self.copies):
            src, dst = c.inputs[0], c.outputs[0]
            view: Operation | None = self.planned.get(src) or self.dynamic.get(src)
            if view is None:
                self.elide_reshaped_copy(c)
                continue
            if self.base[dst] is src:
                continue
            if _memref_type(src).get_shape() != _memref_type(dst).get_shape():
                continue
            if src.type != dst.type and any(isinstance(u.operation, _VIEW_OPS) for u in src.uses):
                continue
            pos = self.positions()
            span = self.read_last_by(src, c, pos)
            if span is None:
                continue
            first, at = span
            dst_users = self.users_of_root(self.base[dst], pos)
            if any(first <= p < at for p in dst_users):
                # A pad's border fills between the producer and the copy: moved in front of the
                # producer's kernel, they still run before the copy's region is written (now by
                # the producer itself), so the result is the same.
                first = self.group_start(first)
                between = sorted({p for p in dst_users if first <= p < at})
                if not all(isinstance(self.body[p], FillOp) for p in between):
                    continue
                producer = self.body[first]
                self.hoist_fills([cast(FillOp, self.body[p]) for p in between], first)
                first = self.body.index(producer) if producer in self.body else first
            self.hoist(dst, first)
            src.replace_all_uses_with(dst)
            for value, b in list(self.base.items()):
                if b is src:
                    self.base[value] = self.base[dst]
            self.body.remove(c)
            c.erase()
            self.copies.remove(c)
            if isinstance(view, memref.ViewOp):
                self.plan_views.remove(view)
                del self.planned[src]
            else:
                self.body.remove(view)
                del self.dynamic[src]
            del self.base[src]
            view.erase()

    def read_last_by(
        self, root: SSAValue, c: GenericOp, pos: dict[Operation, int]
    ) -> tuple[int, int] | None:
        """(first user of `root`, position of `c`) when copy `c` is `root`'s last user and
        touches it once: what makes its producer free to write the copy's target instead."""
        at = pos[c]
        users = self.users_of_root(root, pos)
        if max(users) != at or users.count(at) != 1:
            return None
        return min(users), at

    def elide_reshaped_copy(self, c: GenericOp) -> None:
        """A copy whose source is a planned intermediate seen through reshapes only (a fused
        group's transpose + reshape returned as a model output, or concatenated): its producer
        writes into the target seen through the inverse reshapes instead (the same elements in
        the same order), every other view of the intermediate retyped for the new layout, and
        the copy goes."""
        src, dst = c.inputs[0], c.outputs[0]
        root = self.base.get(src)
        if root is None or root is src or root not in self.planned or self.base[dst] is root:
            return
        chain: list[memref.CollapseShapeOp | memref.ExpandShapeOp] = []
        value = src
        while value is not root:
            owner = value.owner
            if not isinstance(owner, memref.CollapseShapeOp | memref.ExpandShapeOp):
                return
            if len(list(owner.results[0].uses)) != 1:  # the chain goes with the copy
                return
            chain.append(owner)
            value = owner.operands[0]
        if _memref_type(root).element_type != _memref_type(dst).element_type:
            return
        pos = self.positions()
        span = self.read_last_by(root, c, pos)
        if span is None:
            return
        first, at = self.group_start(span[0]), span[1]
        if any(first <= p < at for p in self.users_of_root(self.base[dst], pos)):
            return
        inverse = self.inverse_reshapes(dst, chain)
        if inverse is None:
            return
        new_root = inverse[-1].results[0]
        retyped = _retyped_views(root, _memref_type(new_root), set(chain))
        if retyped is None or any(old not in self.body for old, _ in retyped):
            for op in [*reversed(inverse), *(new for _, new in reversed(retyped or []))]:
                op.erase()  # built, not placed: drop their uses of dst and of the views
            return
        # the views go to the front, after dst's own (also moved there): every use of root,
        # views of it placed by earlier elisions included, then comes after them
        self.hoist(dst, 0)
        owner = dst.owner
        start = self.body.index(owner) + 1 if isinstance(owner, Operation) else 0
        for k, op in enumerate(inverse):
            self.body.insert(start + k, op)
            self.base[op.results[0]] = self.base[dst]
        root.replace_all_uses_with(new_root)
        for old, new in retyped:
            self.body[self.body.index(old)] = new
            old.results[0].replace_all_uses_with(new.results[0])
            self.base[new.results[0]] = self.base[dst]
            self.base.pop(old.results[0], None)
            old.erase()
        for value, b in list(self.base.items()):
            if b is root:
                self.base[value] = self.base[dst]
        for op in [c, *chain]:  # the copy (now of dst onto itself), then its views
            self.body.remove(op)
            if op is c:
                self.copies.remove(c)
            if op.results:
                self.base.pop(op.results[0], None)
            op.erase()
        view = self.planned.pop(root)
        self.plan_views.remove(view)
        del self.base[root]
        view.erase()

    @staticmethod
    def inverse_reshapes(
        dst: SSAValue, chain: Sequence[memref.CollapseShapeOp | memref.ExpandShapeOp]
    ) -> list[Operation] | None:
        """Views of `dst` undoing `chain` (the reshapes from a buffer to the copy's source,
        last one first): an expand for each collapse, a collapse for each expand (None where
        `dst`'s strides cannot be collapsed so)."""
        ops: list[Operation] = []
        value = dst
        for op in chain:
            value_t = _memref_type(value)
            groups = [[d.value.data for d in g.data] for g in op.reassociation.data]
            if isinstance(op, memref.CollapseShapeOp):
                shape = list(_memref_type(op.operands[0]).get_shape())
                new: Operation = memref.ExpandShapeOp.build(
                    operands=[value, []],
                    result_types=[expand_type(value_t, groups, shape)],
                    properties={
                        "reassociation": op.reassociation,
                        "static_output_shape": DenseArrayBase.from_list(i64, shape),
                    },
                )
            else:
                if not is_collapsible(value_t, groups):
                    return None
                new = memref.CollapseShapeOp.build(
                    operands=[value],
                    result_types=[collapse_type(value_t, groups)],
                    properties={"reassociation": op.reassociation},
                )
            ops.append(new)
            value = new.results[0]
        return ops

    # ---- planning and assembly -------------------------------------------------------------

    def plan(self) -> tuple[list[memref.ViewOp], MemoryPlan]:
        pos = self.positions()
        by_root = self.values_by_root()
        used: list[memref.ViewOp] = []
        requests: list[BufferRequest] = []
        for view in list(self.plan_views):
            where = self.users_of_root(view.result, pos, by_root)
            if not where:
                continue
            used.append(view)
            size = memref_bytes(view.result.type)
            requests.append(BufferRequest(size, min(where), max(where)))
        plan = PLANNERS[self.planner](requests)
        check_plan(requests, plan)
        return used, plan

    def place_dynamic(self) -> None:
        """Each buffer allocated per call (with what computes its sizes) in front of the fusion
        group of its first user, so that no group holds an alloc between its kernels; one that
        no kernel took (an op wrote in place instead) is dropped."""
        for root, alloc in list(self.dynamic.items()):
            pos = self.positions()
            users = self.users_of_root(root, pos)
            if users:
                self.hoist(root, self.group_start(min(users)))
            else:
                self.body.remove(alloc)
                del self.dynamic[root]
                del self.base[root]
                alloc.erase()

    def free_dynamic(self) -> None:
        """A dealloc for each buffer allocated per call, after the fusion group of its last
        user (inside a group it would split the kernel the group becomes)."""
        pos = self.positions()
        frees: list[tuple[int, memref.AllocOp]] = []
        for root, alloc in self.dynamic.items():
            frees.append((self.group_span(max(self.users_of_root(root, pos)))[1], alloc))
        for last, alloc in sorted(frees, key=lambda f: -f[0]):
            self.body.insert(last + 1, memref.DeallocOp.get(alloc.memref))

    def finish(self, ret: func.ReturnOp, out_args: Sequence[SSAValue], block: Block) -> MemoryPlan:
        for value, out in zip(ret.operands, out_args, strict=True):
            self.copy(self.vmap[value], out)
        self.elide_copies()
        views, plan = self.plan()
        for op in self.prologue:
            block.add_op(op)
        arena: memref.AllocOp | None = None
        if views:
            arena = memref.AllocOp.get(i8, 64, [plan.arena_bytes])
            block.add_op(arena)
            self.arena_placeholder.memref.replace_all_uses_with(arena.memref)
            offsets: dict[int, arith.ConstantOp] = {}
            for view, off in zip(views, plan.offsets, strict=True):
                if off not in offsets:
                    offsets[off] = arith.ConstantOp(IntegerAttr(off, IndexType()))
                    block.add_op(offsets[off])
                old_offset = view.byte_shift.owner
                view.operands[1] = offsets[off].result
                assert isinstance(old_offset, Operation)
                old_offset.erase()
                block.add_op(view)
        placed = set(views)
        for view in self.plan_views:
            if view not in placed:
                offset_op = view.byte_shift.owner
                view.erase()
                assert isinstance(offset_op, Operation)
                offset_op.erase()
        self.place_dynamic()
        self.free_dynamic()
        for op in self.body:
            block.add_op(op)
        if arena is not None:
            block.add_op(memref.DeallocOp.get(arena))
        block.add_op(func.ReturnOp())
        self.arena_placeholder.erase()
        return plan


def bufferize_function(module: ModuleOp, fn: func.FuncOp, planner: str = "greedy") -> MemoryPlan:
    """Rewrite `fn` (tensor level) into destination-passing style on memrefs, in place."""
    ftype = fn.function_type
    in_types = [tensor_to_memref(t) if isinstance(t, TensorType) else t for t in ftype.inputs.data]
    out_types = [tensor_to_memref(_tensor_type(t)) for t in ftype.outputs.data]
    block = Block(arg_types=[*in_types, *out_types])
    state = _Bufferizer(module, fn, planner)
    old_block = fn.body.block
    for old_arg, new_arg in zip(old_block.args, block.args, strict=False):
        new_arg.name_hint = old_arg.name_hint
        state.base[new_arg] = new_arg
        if isinstance(old_arg.type, TensorType):
            state.bind(old_arg, new_arg)
        else:
            state.vmap[old_arg] = new_arg
    out_args = list(block.args[len(in_types) :])
    for a in out_args:
        state.base[a] = a
    ops = list(old_block.ops)
    state.analyze(ops)
    for i, op in enumerate(ops):
        state.convert(op, i)
    ret = ops[-1]
    assert isinstance(ret, func.ReturnOp), "bufferize: @main must end with func.return"
    plan = state.finish(ret, out_args, block)

    arg_attrs = list(fn.arg_attrs.data) if fn.arg_attrs else [DictionaryAttr({})] * len(in_types)
    res_attrs = list(fn.res_attrs.data) if fn.res_attrs else [DictionaryAttr({})] * len(out_types)
    new_fn = func.FuncOp(
        fn.sym_name.data,
        FunctionType.from_lists([*in_types, *out_types], []),
        Region(block),
        fn.sym_visibility,
        arg_attrs=ArrayAttr([*arg_attrs, *res_attrs]),
    )
    new_fn.attributes.update(fn.attributes)
    module.body.block.insert_op_before(new_fn, fn)
    module.body.block.detach_op(fn)
    fn.erase(safe_erase=False)
    return plan


@dataclass(frozen=True)
class BufferizePass(ModulePass):
    """Bufferize `@main` and record the memory plan on the module (`ziggurat.memory_plan`)."""

    name: ClassVar[str] = "bufferize"

    planner: str = "greedy"
    """`greedy` (reuse memory of dead buffers) or `bump` (one slot per buffer)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.planner not in PLANNERS:
            raise DiagnosticException(
                f"bufferize: option 'planner': unknown planner '{self.planner}' "
                f"(available: {', '.join(sorted(PLANNERS))})"
            )
        fn = main_function(op)
        if fn is None or not fn.body.blocks:
            return
        if not any(isinstance(t, TensorType) for t in fn.function_type.inputs.data) and not any(
            isinstance(t, TensorType) for t in fn.function_type.outputs.data
        ):
            if not any(isinstance(r.type, TensorType) for o in fn.body.walk() for r in o.results):
                return  # already bufferized
        plan = bufferize_function(op, fn, self.planner)
        op.attributes[MEMORY_PLAN_ATTR] = DictionaryAttr(
            {
                "total_bytes": IntegerAttr(plan.total_bytes, i64),
                "arena_bytes": IntegerAttr(plan.arena_bytes, i64),
            }
        )


__all__ = ["BufferizePass", "build_copy", "bufferize_function", "is_copy"]
