"""Tuning tasks: the distinct kernels of a model, each with a workload key and a weight.

A task is one outlined kernel function at the buffer level (after `bufferize` and
`outline-kernels`, before any schedule). Its canonical text (schedule attributes stripped, SSA
names canonical, symbol renamed `@kernel`) plus the search-space version is hashed into the
workload key, so identical kernels of a model, or of two models, are one task.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.linalg import ops as linalg
from xdsl.parser import Parser

from autotune.record import Workload
from autotune.space import SPACE_VERSION
from compiler.model import import_model, lower
from compiler.pass_runner import make_context
from dialects.sched import SCHEDULE_ATTR_NAME
from passes.analysis.kernel_access import KernelInfo, analyze_kernel
from passes.analysis.kernel_summary import anchor_index, describe_kernel, kernel_flops
from passes.analysis.kernel_summary import kernel_generics as generics_of


@dataclass(frozen=True)
class Task:
    workload_key: str  # sha256 hex of (canonical kernel IR text + space.SPACE_VERSION)
    kernel_ir: (
        str  # the kernel func.func as text (buffer level, sched attrs stripped), renamed @kernel
    )
    weight: int  # how many times the model's @main calls it
    flops: float  # per call: 2 * multiply-adds of the anchor (its iteration count if no reduction)
    name: str  # readable, e.g. "conv 1x64x56x56 k3x3 (kernel_2)"
    anchor: int  # index of the anchor among the kernel's generics (the `op=N` of the passes)

    @property
    def workload(self) -> Workload:
        """What its tuning records say they measured."""
        return Workload(self.workload_key, self.name, self.flops)


KERNEL_SYMBOL = "kernel"


def canonical_kernel(fn: func.FuncOp) -> func.FuncOp:
    """A copy of `fn` named @kernel, without schedule attributes and SSA name hints."""
    clone = fn.clone(clone_name_hints=False)
    for op in clone.walk():
        op.attributes.pop(SCHEDULE_ATTR_NAME, None)
        for r in op.results:
            r.name_hint = None
    for region in clone.regions:
        for block in region.blocks:
            for a in block.args:
                a.name_hint = None
    clone.sym_name = StringAttr(KERNEL_SYMBOL)
    return clone


def _workload_key(kernel_ir: str) -> str:
    return hashlib.sha256(f"{kernel_ir}\nspace-version {SPACE_VERSION}".encode()).hexdigest()


def task_from_function(fn: func.FuncOp, weight: int = 1) -> Task:
    canon = canonical_kernel(fn)
    text = str(canon)
    generics = generics_of(canon)
    if not generics:
        raise ValueError(f"kernel @{fn.sym_name.data} holds no linalg.generic")
    anchor = anchor_index(generics)
    info = analyze_kernel(generics[anchor])
    name = f"{describe_kernel(info)} ({fn.sym_name.data})"
    return Task(_workload_key(text), text, weight, kernel_flops(info), name, anchor)


def _buffer_module(model: Any, layout: str = "auto") -> ModuleOp:
    if isinstance(model, ModuleOp):
        return model
    if isinstance(model, str | Path) or hasattr(model, "graph"):
        module = import_model(model)
        ctx = make_context()
        lower(module, "buffers", ctx, layout=layout)  # outlined kernels, no schedules yet
        return module
    raise TypeError(
        f"extract_tasks expects an ONNX model or a buffer-level module, got {type(model)}"
    )


def extract_tasks(model_or_module: Any, layout: str = "auto") -> list[Task]:
    """The distinct kernels of a model (an ONNX path or ModelProto) or of a buffer-level module;
    a model's convolutions get the data layout `layout` (compiler/pipelines.py LAYOUTS; a GPU
    target's kernels: NCHW).

    Kernels are the private functions that @main calls (weight = number of calls); a module
    with no @main contributes each function holding linalg.generic ops once. Kernels with the
    same workload key are one task whose weight is the sum.
    """
    module = _buffer_module(model_or_module, layout)
    funcs = {f.sym_name.data: f for f in module.body.block.ops if isinstance(f, func.FuncOp)}
    main = funcs.get("main")
    if main is not None and any(isinstance(o, linalg.GenericOp) for o in main.walk()):
        raise ValueError("@main still holds linalg ops: run outline-kernels first")
    calls: dict[str, int] = {}
    if main is not None:
        for op in main.walk():
            if isinstance(op, func.CallOp):
                callee = op.callee.root_reference.data
                calls[callee] = calls.get(callee, 0) + 1
    else:
        calls = {name: 1 for name in funcs}
    tasks: dict[str, Task] = {}
    for name, count in calls.items():
        fn = funcs.get(name)
        if fn is None or fn is main or not generics_of(fn):
            continue
        t = task_from_function(fn, count)
        if t.workload_key in tasks:
            old = tasks[t.workload_key]
            tasks[t.workload_key] = Task(
                old.workload_key, old.kernel_ir, old.weight + count, old.flops, old.name, old.anchor
            )
        else:
            tasks[t.workload_key] = t
    return list(tasks.values())


def kernel_module(task: Task) -> ModuleOp:
    """A fresh module holding the task's kernel function (named @kernel)."""
    module = Parser(make_context(), task.kernel_ir).parse_module()
    if not isinstance(module, ModuleOp):  # pragma: no cover - parse_module always wraps
        module = ModuleOp([module])
    return module


def kernel_function(module: ModuleOp) -> func.FuncOp:
    return next(
        f for f in module.walk() if isinstance(f, func.FuncOp) and f.sym_name.data == KERNEL_SYMBOL
    )


def anchor_info(task: Task) -> KernelInfo:
    """KernelInfo of the task's anchor generic (in a freshly parsed module)."""
    return analyze_kernel(generics_of(kernel_function(kernel_module(task)))[task.anchor])


__all__ = ["Task", "anchor_info", "extract_tasks", "kernel_module"]
