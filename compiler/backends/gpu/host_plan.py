"""The gpu-level @main, read once into plain data: buffers, weights, arena size and launches.

The plan's classes live in plan.py (no xDSL: packages load them); they are re-exported here.
The GPU runtimes (opencl_runtime.py, cuda_runtime.py) run @main without walking IR per call:
@main only fetches weights, carves the arena into views and launches kernels, so it reduces to
a list of launches whose arguments are (root buffer, byte shift) pairs. A view op keeps its
source's pointer (the kernel applies its type's static offset and strides); only memref.view
moves it, by a constant byte shift. Anything else in @main is refused with HostPlanError.

Which of @main's arguments are outputs (the CPU convention: inputs, then output buffers) is
given by the caller (`num_inputs`, from the model's signature).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

import numpy as np
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Operation, SSAValue

from compiler.backends.gpu.plan import BufferKind, BufferRef, BufferSpec, HostPlan, Launch
from compiler.errors import CompileError
from dialects.attributes import NAME_ATTR
from dialects.dense import dense_to_numpy, numpy_dtype
from passes.analysis.main_function import main_function


class HostPlanError(CompileError):
    """@main holds something the GPU runtimes cannot run (an unknown op, a dynamic size...)."""


_VIEW_OPS = (
    memref.SubviewOp,
    memref.ExpandShapeOp,
    memref.CollapseShapeOp,
    memref.ReinterpretCastOp,
    memref.CastOp,
)


def _where(op: Operation) -> str:
    text = str(op).strip().splitlines()[0]
    return text if len(text) <= 160 else text[:157] + "..."


def _static_memref(value: SSAValue, what: str) -> MemRefType:
    t = value.type
    if not isinstance(t, MemRefType) or not t.has_static_shape():
        raise HostPlanError(f"@main: {what} has type {t}; the GPU runtimes need a static memref")
    strides = t.get_strides()
    if t.get_offset() is None or strides is None or any(s is None for s in strides):
        raise HostPlanError(f"@main: {what} has type {t} with a dynamic offset or stride")
    return t


def _spec(value: SSAValue, name: str, what: str) -> BufferSpec:
    t = _static_memref(value, what)
    try:
        dtype = numpy_dtype(t.element_type)
    except ValueError as e:
        raise HostPlanError(f"@main: {what}: {e}") from None
    return BufferSpec(name, tuple(t.get_shape()), dtype)


def _arg_names(main: func.FuncOp) -> list[str]:
    names = []
    for i in range(len(main.body.block.args)):
        attr = main.arg_attrs.data[i].data.get(NAME_ATTR) if main.arg_attrs else None
        names.append(attr.data if isinstance(attr, StringAttr) else f"arg{i}")
    return names


def _kernels(module: ModuleOp) -> dict[tuple[str, str], gpu.FuncOp]:
    out = {}
    for op in module.body.block.ops:
        if isinstance(op, gpu.ModuleOp):
            for f in op.body.block.ops:
                if isinstance(f, gpu.FuncOp):
                    out[(op.sym_name.data, f.sym_name.data)] = f
    return out


def _weight(module: ModuleOp, name: str, where: str) -> np.ndarray:
    glob = next(
        (
            o
            for o in module.body.block.ops
            if isinstance(o, memref.GlobalOp) and o.sym_name.data == name
        ),
        None,
    )
    if glob is None:
        raise HostPlanError(f"@main: {where} reads @{name}, which is no top-level memref.global")
    t = glob.type
    if not isinstance(t, MemRefType) or not t.has_static_shape():
        raise HostPlanError(f"memref.global @{name} has type {t}; a static memref is needed")
    try:
        dtype = numpy_dtype(t.element_type)
    except ValueError as e:
        raise HostPlanError(f"memref.global @{name}: {e}") from None
    shape = tuple(t.get_shape())
    value = glob.initial_value
    if isinstance(value, DenseIntOrFPElementsAttr):
        data = dense_to_numpy(value)
        if data.dtype != dtype or data.size != prod(shape):
            raise HostPlanError(
                f"memref.global @{name}: initial value {data.dtype}{list(data.shape)} does not "
                f"fit its type {t}"
            )
        return np.ascontiguousarray(data.reshape(shape))
    return np.zeros(shape, dtype)  # uninitialized: any contents are right


class _Reader:
    """One pass over @main's block."""

    def __init__(self, module: ModuleOp, main: func.FuncOp, num_inputs: int):
        self.module = module
        self.main = main
        self.kernels = _kernels(module)
        self.ints: dict[SSAValue, int] = {}
        self.refs: dict[SSAValue, BufferRef] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.arena: SSAValue | None = None
        self.arena_bytes = 0
        self.launches: list[Launch] = []
        self.num_inputs = num_inputs

    def int_of(self, value: SSAValue, what: str, op: Operation) -> int:
        if value not in self.ints:
            raise HostPlanError(
                f"@main: {what} of `{_where(op)}` is not an arith.constant (dynamic values are "
                "not supported by the GPU runtimes)"
            )
        return self.ints[value]

    def xyz(self, values: Sequence[SSAValue], what: str, op: Operation) -> tuple[int, int, int]:
        x, y, z = (self.int_of(v, what, op) for v in values)
        return (x, y, z)

    def ref_of(self, value: SSAValue, op: Operation) -> BufferRef:
        if value not in self.refs:
            raise HostPlanError(
                f"@main: `{_where(op)}` uses a memref that is no argument, weight or arena view"
            )
        return self.refs[value]

    def read(self) -> HostPlan:
        block = self.main.body.block
        names = _arg_names(self.main)
        for i, arg in enumerate(block.args):
            _static_memref(arg, f"argument {i} ({names[i]})")
            self.refs[arg] = BufferRef("input", i, 0)  # kind fixed up once the split is known
        for op in block.ops:
            self.visit(op)
        split = self.split(len(block.args))
        specs = [_spec(a, names[i], f"argument {i} ({names[i]})") for i, a in enumerate(block.args)]

        def fix(ref: BufferRef) -> BufferRef:
            if ref.kind != "input":
                return ref
            assert isinstance(ref.key, int)
            if ref.key < split:
                return ref
            return BufferRef("output", ref.key - split, ref.byte_offset)

        launches = tuple(
            Launch(x.kernel, x.grid, x.block, tuple(fix(r) for r in x.args)) for x in self.launches
        )
        return HostPlan(
            inputs=tuple(specs[:split]),
            outputs=tuple(specs[split:]),
            weights=self.weights,
            arena_bytes=self.arena_bytes,
            launches=launches,
        )

    def split(self, nargs: int) -> int:
        """How many of @main's arguments are inputs."""
        if not 0 <= self.num_inputs <= nargs:
            raise HostPlanError(
                f"@main has {nargs} arguments; cannot have {self.num_inputs} inputs"
            )
        return self.num_inputs

    def visit(self, op: Operation) -> None:
        if isinstance(op, arith.ConstantOp):
            value = op.value
            if not isinstance(value, IntegerAttr):
                raise HostPlanError(f"@main: `{_where(op)}`: only integer constants are supported")
            self.ints[op.result] = value.value.data
        elif isinstance(op, memref.GetGlobalOp):
            name = op.name_.string_value()
            if name not in self.weights:
                self.weights[name] = _weight(self.module, name, f"`{_where(op)}`")
            self.refs[op.memref] = BufferRef("weight", name, 0)
        elif isinstance(op, memref.AllocOp):
            if self.arena is not None:
                raise HostPlanError(
                    f"@main: a second memref.alloc `{_where(op)}` (the GPU runtimes support one arena)"
                )
            t = _static_memref(op.memref, f"`{_where(op)}`")
            if op.dynamic_sizes or op.symbol_operands:
                raise HostPlanError(f"@main: `{_where(op)}` has dynamic sizes")
            self.arena = op.memref
            self.arena_bytes = (
                prod(t.get_shape()) * _spec(op.memref, "", "the arena").dtype.itemsize
            )
            self.refs[op.memref] = BufferRef("arena", 0, 0)
        elif isinstance(op, memref.ViewOp):
            if op.sizes:
                raise HostPlanError(f"@main: `{_where(op)}` has dynamic sizes")
            src = self.ref_of(op.source, op)
            shift = self.int_of(op.byte_shift, "the byte shift", op)
            self.refs[op.result] = BufferRef(src.kind, src.key, src.byte_offset + shift)
        elif isinstance(op, _VIEW_OPS):
            if len(op.operands) != 1:
                raise HostPlanError(f"@main: `{_where(op)}` has dynamic offsets, sizes or strides")
            self.refs[op.results[0]] = self.ref_of(op.operands[0], op)
        elif isinstance(op, gpu.LaunchFuncOp):
            self.launch(op)
        elif isinstance(op, memref.DeallocOp):
            if op.memref is not self.arena:
                raise HostPlanError(f"@main: `{_where(op)}` frees something other than the arena")
        elif isinstance(op, func.ReturnOp):
            if op.arguments:
                raise HostPlanError("@main: the GPU runtimes need @main to return nothing")
        else:
            raise HostPlanError(
                f"@main: unsupported op {op.name} (`{_where(op)}`) for the GPU runtimes"
            )

    def launch(self, op: gpu.LaunchFuncOp) -> None:
        ref = op.kernel
        path = (ref.root_reference.data, *(s.data for s in ref.nested_references.data))
        if len(path) != 2 or path not in self.kernels:
            raise HostPlanError(
                f"@main: `{_where(op)}` launches {ref}, which is no gpu.func of a gpu.module here"
            )
        kernel = self.kernels[path]
        optional = (op.clusterSizeX, op.dynamicSharedMemorySize, op.asyncObject, op.asyncToken)
        if op.asyncDependencies or any(x is not None for x in optional):
            raise HostPlanError(
                f"@main: `{_where(op)}`: async tokens, clusters and dynamic shared memory are "
                "not supported"
            )
        grid = self.xyz((op.gridSizeX, op.gridSizeY, op.gridSizeZ), "the grid size", op)
        block = self.xyz((op.blockSizeX, op.blockSizeY, op.blockSizeZ), "the block size", op)
        if any(g < 0 for g in grid) or any(b < 1 for b in block):
            raise HostPlanError(f"@main: `{_where(op)}`: grid {grid} / block {block} out of range")
        operands = list(op.kernelOperands)
        params = kernel.body.block.args
        if len(operands) != len(params):
            raise HostPlanError(
                f"@main: `{_where(op)}` passes {len(operands)} arguments to kernel {path[1]}, "
                f"which takes {len(params)}"
            )
        args = []
        for k, (v, param) in enumerate(zip(operands, params)):
            what = f"argument {k} of the launch of kernel {path[1]}"
            _static_memref(v, what)
            if v.type != param.type:  # the kernel applies its parameter type's offset and strides
                raise HostPlanError(
                    f"@main: {what} has type {v.type}, but the kernel's parameter is {param.type}"
                )
            args.append(self.ref_of(v, op))
        self.launches.append(Launch(path[1], grid, block, tuple(args)))


def build_plan(module: ModuleOp, num_inputs: int) -> HostPlan:
    """Read the gpu-level @main of `module` into a HostPlan (HostPlanError for what the GPU
    runtimes cannot run). `num_inputs`: how many of @main's arguments are inputs (the rest are
    output buffers; the model's signature says, bufferize joins the two lists)."""
    main = main_function(module)
    if main is None or not main.body.blocks:
        raise HostPlanError("the module has no func.func @main with a body")
    if len(main.body.blocks) != 1:
        raise HostPlanError(
            "@main has more than one block; the GPU runtimes need straight-line code"
        )
    return _Reader(module, main, num_inputs).read()


__all__ = [
    "BufferKind",
    "BufferRef",
    "BufferSpec",
    "HostPlan",
    "HostPlanError",
    "Launch",
    "build_plan",
]
