"""autotune/task.py: kernels of zoo models become weighted tasks with stable workload keys."""

from __future__ import annotations

import functools

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr, SymbolRefAttr

from autotune.task import Task, anchor_info, extract_tasks, kernel_module
from compiler import zoo
from compiler.model import import_model, lower, make_context, run_passes
from compiler.pipelines import lowering
from dialects.sched import SCHEDULE_ATTR_NAME
from passes.schedule.cpu_target import cpu_target


@functools.cache
def tasks_of(name: str) -> tuple[Task, ...]:
    models = {
        "small_cnn": zoo.small_cnn,
        "mlp": zoo.mlp,
        "resnet18": lambda: zoo.resnet18(size=64, classes=10),
    }
    return tuple(extract_tasks(models[name]()))


def buffer_module(model):
    module = import_model(model)
    ctx = make_context()
    lower(module, "tensor", ctx)
    run_passes(ctx, module, lowering("tensor", "buffers"))
    return module


def test_resnet18_identical_convs_collapse() -> None:
    tasks = tasks_of("resnet18")
    keys = [t.workload_key for t in tasks]
    assert len(set(keys)) == len(keys)
    # the 3x3 convs of a stage share kernels: the direct ones and the Winograd products
    assert any(t.weight > 1 and t.name.startswith("conv") for t in tasks)
    assert any(t.weight > 1 and t.name.startswith("matmul 36x16x64 k64") for t in tasks)
    # every call of @main to a kernel with a linalg.generic is accounted for (a kernel of
    # fills only, the border of a padded input, is no task)
    module = buffer_module(zoo.resnet18(size=64, classes=10))
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    calls = [
        o.callee.root_reference.data for o in funcs["main"].walk() if isinstance(o, func.CallOp)
    ]
    computing = [c for c in calls if any(o.name == "linalg.generic" for o in funcs[c].walk())]
    assert sum(t.weight for t in tasks) == len(computing) >= len(calls) - 1


def test_known_flops_and_names() -> None:
    # resnet18(size=64), in the blocked layout (channels in blocks of the CPU's vector width):
    # stage 2's first conv 64->128, 3x3 stride 2 on 16x16; stage 1's 3x3 convs 64->64 on
    # 16x16 are Winograd F(4x4): 16 tiles, one 16x64 @ 64x64 product per each of 36 points
    tasks = tasks_of("resnet18")
    b = cpu_target().width
    conv = next(t for t in tasks if t.name.startswith(f"conv 1x{128 // b}x8x8x{b} k3x3"))
    assert conv.flops == 2 * 128 * 8 * 8 * 64 * 3 * 3
    wino = next(t for t in tasks if t.name.startswith("matmul 36x16x64 k64"))
    assert wino.flops == 2 * 36 * 16 * 64 * 64
    stem = next(t for t in tasks if t.name.startswith(f"conv 1x{64 // b}x32x32x{b} k7x7"))
    assert stem.flops == 2 * 64 * 32 * 32 * 3 * 7 * 7
    mlp = tasks_of("mlp")
    mm = next(t for t in mlp if t.name.startswith("matmul 4x128 k64"))
    assert mm.flops == 2 * 4 * 128 * 64
    assert mm.weight == 1


@pytest.mark.parametrize("model", ["small_cnn", "mlp", "resnet18"])
def test_tasks_are_canonical(model: str) -> None:
    for t in tasks_of(model):
        assert len(t.workload_key) == 64
        assert "@kernel(" in t.kernel_ir and SCHEDULE_ATTR_NAME not in t.kernel_ir
        mod = kernel_module(t)
        mod.verify()
        # reprinting the parsed kernel gives the same text: the key is a fixed point
        fn = next(f for f in mod.ops if isinstance(f, func.FuncOp))
        assert str(fn) == t.kernel_ir
        info = anchor_info(t)
        if "conv" in t.name or "matmul" in t.name or "pool" in t.name:
            assert info.reduction_loops


def test_small_cnn_kinds() -> None:
    names = [t.name for t in tasks_of("small_cnn")]
    assert any(n.startswith("conv") for n in names)
    assert any(n.startswith("pool") for n in names)
    assert any(n.startswith("matmul") for n in names)


def test_duplicate_functions_merge_and_keys_ignore_schedules() -> None:
    module = buffer_module(zoo.mlp())
    main = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    first_call = next(o for o in main.walk() if isinstance(o, func.CallOp))
    callee = first_call.callee.root_reference.data
    original = next(
        f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == callee
    )
    twin = original.clone()
    twin.sym_name = StringAttr("twin_kernel")
    module.body.block.insert_op_before(twin, main)
    extra = first_call.clone()
    extra.callee = SymbolRefAttr("twin_kernel")
    main.body.block.insert_op_after(extra, first_call)
    before = {t.workload_key: t for t in extract_tasks(buffer_module(zoo.mlp()))}
    after = {t.workload_key: t for t in extract_tasks(module)}
    assert set(after) == set(before)
    assert sum(t.weight for t in after.values()) == sum(t.weight for t in before.values()) + 1
    merged = [k for k in after if after[k].weight == before[k].weight + 1]
    assert len(merged) == 1
    # a scheduled copy of the module gives the same keys
    run_passes(make_context(), module, ["default-schedule"])
    assert {t.workload_key for t in extract_tasks(module)} == set(before)
