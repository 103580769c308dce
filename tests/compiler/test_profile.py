"""The kernel profiler: cycle counts per kernel call of a running model, turned into seconds."""

from __future__ import annotations

import time

import numpy as np
import pytest
from xdsl.dialects import func

from autotune.measure.peak import CLOCK_HZ
from compiler import zoo
from compiler.backends.llvm_cpu import jit
from compiler.backends.llvm_cpu.cycle_counter import cycles_per_second, read_cycles
from compiler.backends.llvm_cpu.fma_peak import CHAINS, _kernel_ir, fma_peak_flops
from compiler.errors import CompileError
from compiler.model import compile_model, import_model, lower
from compiler.pass_runner import make_context
from compiler.profile import (
    KernelTime,
    ModelProfile,
    cycle_counters,
    profile_compiled,
    profile_model,
)
from passes.analysis.main_function import main_function
from passes.schedule.cpu_target import host_cpu


@pytest.fixture(scope="module")
def cnn():
    return zoo.small_cnn()


def kernel_calls(model) -> list[str]:
    module = import_model(model)
    lower(module, "buffers", make_context())
    main = main_function(module)
    assert main is not None
    return [c.callee.root_reference.data for c in main.walk() if isinstance(c, func.CallOp)]


def test_cycle_counter_runs_and_has_a_rate() -> None:
    a = read_cycles()
    time.sleep(0.01)
    assert read_cycles() > a
    assert 1e8 < cycles_per_second() < 1e11


def test_one_row_per_kernel_call_in_call_order(cnn) -> None:
    profile = profile_model(cnn, seconds=0.2)
    calls = kernel_calls(cnn)
    assert [r.kernel for r in profile.rows] == calls
    assert profile.runs >= 3
    assert all(r.seconds > 0 for r in profile.rows)
    # the kernels run inside @main, which counts them and the (few) ops between them
    assert profile.kernels_s <= profile.total_s
    assert profile.total_s - profile.kernels_s < 0.2 * profile.total_s
    convs = [r for r in profile.rows if r.kind == "conv"]
    assert len(convs) == 3 and all(r.flops > 0 and r.gflops > 0 for r in convs)
    assert profile.by_kind()["conv"][0] == 3


def test_counter_rate_agrees_with_the_clock_over_one_interval() -> None:
    """Both clocks read around the same interval: cycles / rate lies within the interval the
    clock reads bracket (a busy host widens the bracket; it cannot put the counter outside)."""
    rate = cycles_per_second()
    t0 = time.perf_counter()
    c0 = read_cycles()
    t0b = time.perf_counter()
    time.sleep(0.2)
    t1 = time.perf_counter()
    c1 = read_cycles()
    t1b = time.perf_counter()
    counted = (c1 - c0) / rate
    assert 0.98 * (t1 - t0b) <= counted <= 1.02 * (t1b - t0)


def test_seconds_agree_with_the_wall_clock(cnn) -> None:
    """The counter's rate turns cycles into seconds: each run's @main time, read from the
    counter, fits inside the host clock's time for that same call, and on the run where the
    host stole least, the two differ by no more than calling @main from Python costs. Each
    run is compared with itself, so load on the host widens the gap of some runs, never all."""
    compiled = compile_model(cnn, schedules=["profile-kernels"])
    counters = cycle_counters(compiled)
    run = compiled.runner(zoo.random_inputs(cnn))
    run()
    rate = cycles_per_second()
    pairs = []  # (@main seconds by the counter, wall seconds of the call)
    for _ in range(200):
        before = int(counters[-1])
        t = time.perf_counter()
        run()
        wall = time.perf_counter() - t
        pairs.append(((int(counters[-1]) - before) / rate, wall))
    assert all(main <= 1.02 * wall for main, wall in pairs)
    median_main = float(np.median([main for main, _ in pairs]))
    assert min(wall - main for main, wall in pairs) < 0.1 * median_main + 10e-6


def test_table_names_the_slowest_and_each_kind(cnn) -> None:
    profile = profile_model(cnn, seconds=0.1)
    text = profile.table(top=2)
    lines = text.splitlines()
    assert lines[0].startswith(f"profile: {len(profile.rows)} kernel calls")
    slowest = max(profile.rows, key=lambda r: r.seconds)
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("call"))
    assert slowest.what in lines[header + 1]
    assert f"({len(profile.rows) - 2} more)" in text
    assert "by kind:" in text and "  conv " in text and "(between)" in text


def test_a_model_compiled_without_the_pass_is_refused(cnn) -> None:
    compiled = compile_model(cnn)
    with pytest.raises(CompileError, match="not compiled with profile-kernels"):
        profile_compiled(compiled, zoo.random_inputs(cnn))


def test_the_fma_peak_is_measured_and_below_what_the_core_could_issue() -> None:
    """A loop LLVM deleted or a miscounted FLOP formula shows as a peak above the core's lanes x
    FMA pipes x 2 at a clock no core reaches; a busy machine only lowers it."""
    host = host_cpu()
    peak = fma_peak_flops()
    assert 0 < peak < host.width * host.fma_units * 2 * CLOCK_HZ
    asm = jit.target_machine().emit_assembly(jit.parse(_kernel_ir(host.width)))
    assert asm.count("vfmadd") >= CHAINS  # the chains survive as FMA instructions


def test_table_puts_each_kernel_beside_the_peak() -> None:
    rows = [
        KernelTime("kernel_0", "matmul 4x4x4 k8", 200_000_000, 0.002),  # 100 GFLOP/s
        KernelTime("kernel_1", "elementwise 64", 10_000_000, 0.001),  # 10 GFLOP/s
    ]
    profile = ModelProfile(rows, 0.004, runs=3, threads=2, peak_flops=100e9)
    lines = profile.table().splitlines()
    assert lines[1].startswith("FMA peak 200.0 GFLOP/s")  # two threads
    assert lines[2].split()[-1] == "peak"
    assert lines[3].split()[-2:] == ["100.0", "50%"]
    assert lines[4].split()[-2:] == ["10.0", "5%"]
    kinds = {line.split()[0]: line for line in lines[lines.index("by kind:") + 1 :]}
    assert kinds["matmul"].endswith("100.0 GFLOP/s   50% of peak")
    assert kinds["elementwise"].endswith("10.0 GFLOP/s    5% of peak")
    unknown = ModelProfile(rows, 0.004, runs=3, threads=1).table()
    assert "peak" not in unknown
