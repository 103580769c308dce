"""The `convert-linalg-to-gpu` pass: outlined kernel functions -> gpu.module kernels + launches.

Each kernel function (outline-kernels made them) holds one or more linalg nests run in order;
on a GPU each nest (a reduction with the generics fused into it, see loop_codegen/fusion.py)
becomes one `gpu.func` kernel of `gpu.module @kernels`, and each `func.call` of the function in
@main becomes the `gpu.launch_func`s of its nests, in order (a launch boundary is the only
barrier between all the threads of a grid). The kernel bodies come from nest.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from dialects.attributes import GPU_TARGET_ATTR
from dialects.sched import SCHEDULE_ATTR_NAME
from passes.analysis.kernel_access import KernelAnalysisError, analyze_kernel
from passes.analysis.main_function import main_function
from passes.conversions.linalg_to_gpu.nest import GpuLoopNestGenerator
from passes.conversions.loop_codegen.fills import fills_to_generics
from passes.conversions.loop_codegen.fusion import Fusion, fused_schedule, plan_fusion
from passes.schedule.attached import schedule_of, set_schedule
from passes.schedule.gpu_default import gpu_default_schedule
from passes.schedule.gpu_rules import check_gpu_schedule
from passes.schedule.gpu_target import GpuTarget, gpu_target

KERNEL_MODULE = "kernels"
"""The symbol of the gpu.module holding every kernel."""
WORKGROUP = IntegerAttr(3, i64)
"""The memory space of workgroup (shared / __local) buffers, as MLIR's NVVM and SPIR-V use it."""

_PURE = (memref.SubviewOp, memref.ExpandShapeOp, memref.CollapseShapeOp, arith.ConstantOp)


@dataclass
class Launch:
    """One kernel of a function: its name and launch geometry."""

    name: str
    grid: int
    block: int


def _nests(fn: func.FuncOp) -> list[tuple[int, Fusion | None]]:
    """Each nest of the function: the index of its main generic (in walk order), its fusion."""
    generics = [o for o in fn.walk() if isinstance(o, linalg.GenericOp)]
    plans = plan_fusion(generics)
    fused = {g for f in plans.values() for g in f.generics()}
    return [(i, plans.get(g)) for i, g in enumerate(generics) if g not in fused]


def _clone_fusion(fusion: Fusion | None, mapping: dict[Operation, Operation]) -> Fusion | None:
    if fusion is None:
        return None

    def m(op: linalg.GenericOp) -> linalg.GenericOp:
        return mapping[op]  # type: ignore[return-value]

    return Fusion(
        None if fusion.prologue is None else m(fusion.prologue),
        [m(e) for e in fusion.epilogues],
        {m(e): i for e, i in fusion.chain_input.items()},
    )


def _erase_dead_pure_ops(block: Block) -> None:
    """Views and constants that only the generics left out of this kernel used."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if isinstance(op, _PURE) and all(not r.uses for r in op.results):
                op.detach()
                op.erase()
                changed = True


class _KernelBuilder:
    """Builds the gpu.funcs of one module's kernel functions into one gpu.module."""

    def __init__(self, module: ModuleOp, target: GpuTarget):
        self.target = target
        self.gpu_module = gpu.ModuleOp(StringAttr(KERNEL_MODULE), Region(Block()))  # type: ignore[arg-type]
        self.globals: list[Operation] = []
        module.body.block.add_op(self.gpu_module)

    def function(self, fn: func.FuncOp) -> list[Launch]:
        """The kernels of `fn`, added to the gpu.module; their launches, in order."""
        for op in fn.walk():
            if isinstance(op, memref.GetGlobalOp):
                raise DiagnosticException(
                    f"convert-linalg-to-gpu: @{fn.sym_name.data} reads the global "
                    f"@{op.name_.root_reference.data} inside a kernel; pass it as an argument"
                )
        fills_to_generics(fn, "convert-linalg-to-gpu")
        for g in fn.walk():  # fusion is planned on the schedules the nests will have
            if isinstance(g, linalg.GenericOp) and SCHEDULE_ATTR_NAME not in g.attributes:
                try:
                    info = analyze_kernel(g)
                except KernelAnalysisError as e:
                    raise DiagnosticException(
                        f"convert-linalg-to-gpu: @{fn.sym_name.data}: {e}"
                    ) from e
                set_schedule(g, gpu_default_schedule(info, self.target))
        nests = _nests(fn)
        launches = []
        for k, (index, fusion) in enumerate(nests):
            name = fn.sym_name.data if len(nests) == 1 else f"{fn.sym_name.data}_{k}"
            launch = self._kernel(fn, name, index, fusion)
            if launch is not None:
                launches.append(launch)
        return launches

    def _kernel(
        self, fn: func.FuncOp, name: str, index: int, fusion: Fusion | None
    ) -> Launch | None:
        clone = fn.clone()
        originals = [o for o in fn.walk() if isinstance(o, linalg.GenericOp)]
        copies = [o for o in clone.walk() if isinstance(o, linalg.GenericOp)]
        mapping: dict[Operation, Operation] = dict(zip(originals, copies, strict=True))
        kernel: linalg.GenericOp = copies[index]
        fused = _clone_fusion(fusion, mapping)
        keep = {kernel} | (set() if fused is None else set(fused.generics()))
        for op in copies:
            if op not in keep:
                op.detach()
                op.erase()
        body = clone.body.detach_block(0)
        _erase_dead_pure_ops(body)
        try:
            info = analyze_kernel(kernel)
        except KernelAnalysisError as e:
            raise DiagnosticException(f"convert-linalg-to-gpu: @{name}: {e}") from e
        if 0 in info.extents:
            return None
        sched = schedule_of(kernel, info)  # attached above
        if fused is not None:  # as on the CPU: fused stages see one reduction loop's tiles
            sched = fused_schedule(sched, info)
        try:
            mapping_ = check_gpu_schedule(sched, info, self.target)
        except ValueError as e:
            raise DiagnosticException(
                f"convert-linalg-to-gpu: bad schedule for a kernel of @{fn.sym_name.data} "
                f"on {self.target.name}: {e}"
            ) from e
        kernel_fn = gpu.FuncOp(name, (list(fn.function_type.inputs), []), Region(body))
        kernel_fn.attributes["gpu.kernel"] = UnitAttr()
        self.gpu_module.body.block.add_op(kernel_fn)
        ret = body.last_op
        assert isinstance(ret, func.ReturnOp)
        Builder(InsertPoint.before(ret)).insert(gpu.ReturnOp([]))
        ret.detach()
        ret.erase()
        GpuLoopNestGenerator(info, sched, mapping_, self._buffer_maker(kernel_fn), fused).generate()
        for stage in keep - {kernel}:  # the fused generics now run inside the nest
            stage.detach()
            stage.erase()
        _erase_dead_pure_ops(body)
        return Launch(name, mapping_.grid, mapping_.block)

    def _buffer_maker(self, kernel_fn: gpu.FuncOp):
        """Workgroup buffers of one kernel: a memref.global in address space 3 per staged
        operand, read with memref.get_global at the top of the kernel (MLIR's form for static
        shared memory; see ../shared/GPU.md: never memref.alloca in address space 3)."""
        made: dict[int, SSAValue] = {}

        def buffer(operand: int, elem: Attribute, box: list[int]) -> SSAValue:
            """operand -1: a split reduction's partial results (split.py)."""
            # the first box is a full step's (remainder steps come after and are smaller)
            if operand not in made:
                typ = MemRefType(elem, [math.prod(box)], NoneAttr(), WORKGROUP)
                what = f"stage{operand}" if operand >= 0 else "partials"
                sym = f"{kernel_fn.sym_name.data}_{what}"
                glob = memref.GlobalOp.get(StringAttr(sym), typ, UnitAttr())
                Builder(InsertPoint.before(kernel_fn)).insert(glob)
                get = memref.GetGlobalOp(sym, typ)
                Builder(InsertPoint.at_start(kernel_fn.body.block)).insert(get)
                made[operand] = get.memref
            assert math.prod(box) <= made[operand].type.get_shape()[0]  # type: ignore[attr-defined]
            return made[operand]

        return buffer


def _launch(call: func.CallOp, launches: list[Launch]) -> None:
    """Replace the call by its kernels' launches (1-D grid and block; ids are decomposed)."""
    b = Builder(InsertPoint.before(call))

    def index(v: int) -> SSAValue:
        return b.insert(arith.ConstantOp(IntegerAttr(v, IndexType()))).result

    for launch in launches:
        one = index(1)
        ref = SymbolRefAttr(KERNEL_MODULE, [launch.name])
        b.insert(
            gpu.LaunchFuncOp(
                ref,
                [index(launch.grid), one, one],
                [index(launch.block), one, one],
                None,
                list(call.arguments),
            )
        )
    call.detach()
    call.erase()


@dataclass(frozen=True)
class ConvertLinalgToGpuPass(ModulePass):
    """Lower every kernel function to gpu.module kernels and @main's calls to launches."""

    name = "convert-linalg-to-gpu"

    target: str = "opencl-cpu"
    """The device kind the schedules are for (passes/schedule/gpu_target.py's PRESETS)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            target = gpu_target(self.target)
        except ValueError as e:
            raise DiagnosticException(f"{self.name}: option 'target': {e}") from e
        main = main_function(op)
        if main is None:
            raise DiagnosticException(f"{self.name}: the module has no @main")
        calls = [c for c in main.walk() if isinstance(c, func.CallOp)]
        callees = {c.callee.root_reference.data for c in calls}
        functions = {
            f.sym_name.data: f
            for f in op.body.block.ops
            if isinstance(f, func.FuncOp) and f.sym_name.data in callees
        }
        builder = _KernelBuilder(op, target)
        launches = {name: builder.function(fn) for name, fn in functions.items()}
        for call in calls:
            _launch(call, launches[call.callee.root_reference.data])
        for fn in functions.values():
            fn.detach()
            fn.erase()
        op.attributes["gpu.container_module"] = UnitAttr()
        op.attributes[GPU_TARGET_ATTR] = StringAttr(target.name)
