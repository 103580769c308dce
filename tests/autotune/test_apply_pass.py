"""The `autotune` pass (autotune/apply_pass.py): every kernel gets the schedule of its task's
best usable record in the tuning database.

A record is usable when it is of this compiler version and search space and did not fail; the
fastest usable one is replayed as schedule passes on the kernel's anchor generic. A kernel
without one keeps no schedule (default-schedule gives it the analytic one) and is named in the
stats the pass leaves on the module. The tuned module computes what numpy does. Out-of-range
options and a missing database, or one that is no regular file, are one clear error.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import threading
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

from autotune.apply_pass import AutotunePass, autotune_stats
from autotune.database import Database, compiler_version
from autotune.record import TuningRecord
from autotune.registry import PASSES
from autotune.space import SearchSpace
from autotune.task import generics_of, task_from_function
from compiler.backends.llvm_cpu.compile import compile_module
from compiler.pass_runner import make_context, run_passes
from compiler.pipelines import LEVELS
from compiler.registry import load_pass
from compiler.runtime import aligned_copy, aligned_empty
from dialects.sched import SCHEDULE_ATTR_NAME
from passes.analysis.kernel_access import analyze_kernel
from passes.schedule.attached import schedule_of
from tests.support.schedule_options import HUGE, assert_one_option_error

# as outline-kernels leaves a model: y = relu(x @ w), one kernel function per operator
MODULE = """
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>

func.func private @kernel_0(%out: memref<32x64xf32>, %x: memref<32x48xf32>, %w: memref<48x64xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<32x64xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<32x48xf32>, memref<48x64xf32>) outs(%out : memref<32x64xf32>) {
  ^bb0(%in0: f32, %in1: f32, %acc: f32):
    %p = arith.mulf %in0, %in1 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  func.return
}

func.func private @kernel_1(%out: memref<32x64xf32>, %in: memref<32x64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%in : memref<32x64xf32>) outs(%out : memref<32x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %zero = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  }
  func.return
}

func.func @main(%x: memref<32x48xf32>, %w: memref<48x64xf32>, %y: memref<32x64xf32>, %tmp: memref<32x64xf32>) {
  func.call @kernel_0(%tmp, %x, %w) : (memref<32x64xf32>, memref<32x48xf32>, memref<48x64xf32>) -> ()
  func.call @kernel_1(%y, %tmp) : (memref<32x64xf32>, memref<32x64xf32>) -> ()
  func.return
}
"""


IGNORED = r"ignoring 1 record\(s\) from another compiler version .* and 1 from another search-space"
"""The warning about the records of _database that do not apply (the failed one is silent)."""


def _kernel(module, name: str) -> func.FuncOp:
    return next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name)


def _database(path: Path) -> dict:
    """A database for @kernel_0 (on this host's search space): the config to apply at 2e-5 s,
    a slower one, and faster ones that must not be applied (failed, another compiler version,
    another space). Returns the config to apply."""
    fn = _kernel(Parser(make_context(), MODULE).parse_module(), "kernel_0")
    task = task_from_function(fn)
    space = SearchSpace(analyze_kernel(generics_of(fn)[task.anchor]))
    rng = random.Random(1)
    configs: list[dict] = []
    while len(configs) < 5:
        c = space.sample(rng)
        if c not in configs:
            configs.append(c)
    db = Database(str(path))

    def record(config: dict, cost: float, **over: object) -> None:
        r = TuningRecord.new(
            task.workload,
            space.space_hash(),
            config,
            space.to_passes(config, task.anchor),
            [cost],
            target={"cpu": "test"},
            compiler_version=compiler_version(),
        )
        db.append(dataclasses.replace(r, **over))  # type: ignore[arg-type]

    best, slower, failed, old, other_space = configs
    record(best, 2e-5)
    record(slower, 5e-5)
    record(failed, 1e-7, error_kind="wrong_result", error="argument 0 differs")
    record(old, 1e-7, compiler_version="0.0.0-another-version")
    record(other_space, 1e-7, space_hash="0" * 64)
    return {"config": best, "space": space, "anchor": task.anchor}


def test_registered_under_its_name() -> None:
    assert load_pass(PASSES["autotune"]) is AutotunePass  # the tuner's own registry


def test_each_kernel_gets_its_best_usable_record(tmp_path: Path) -> None:
    expected = _database(tmp_path / "tune.jsonl")
    ctx = make_context()
    module = Parser(ctx, MODULE).parse_module()
    with pytest.warns(UserWarning, match=IGNORED):
        AutotunePass(db=str(tmp_path / "tune.jsonl")).apply(ctx, module)
    (anchor,) = [g for g in generics_of(_kernel(module, "kernel_0"))]
    assert schedule_of(anchor) == expected["space"].to_schedule(expected["config"])
    # kernel_1's task has no record: no schedule, named in the stats
    (relu,) = generics_of(_kernel(module, "kernel_1"))
    assert SCHEDULE_ATTR_NAME not in relu.attributes
    stats = autotune_stats(module.attributes)
    assert stats is not None
    assert (stats.kernels, stats.tuned, len(stats.fallback)) == (2, 1, 1)


@pytest.mark.parametrize("baseline, applied", [(1.0e-5, False), (2.0e-5, False), (3.0e-5, True)])
def test_a_record_slower_than_the_default_beside_it_is_not_applied(
    tmp_path: Path, baseline: float, applied: bool
) -> None:
    """The best record (2e-5 s) was timed beside the default schedule: applied only where it
    was faster than it; otherwise the kernel keeps the default schedule and the stats say so."""
    path = tmp_path / "tune.jsonl"
    expected = _database(path)
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])  # the best record
    first["baseline_costs"] = [baseline]
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    ctx = make_context()
    module = Parser(ctx, MODULE).parse_module()
    with pytest.warns(UserWarning, match=IGNORED):
        AutotunePass(db=str(path)).apply(ctx, module)
    (anchor,) = generics_of(_kernel(module, "kernel_0"))
    stats = autotune_stats(module.attributes)
    assert stats is not None and stats.kernels == 2 and len(stats.fallback) == 1
    if applied:
        assert schedule_of(anchor) == expected["space"].to_schedule(expected["config"])
        assert stats.tuned == 1 and stats.default_won == []
    else:
        assert SCHEDULE_ATTR_NAME not in anchor.attributes
        assert stats.tuned == 0 and stats.default_won == ["matmul 32x64 k48 (kernel_0)"]


def test_the_tuned_module_matches_numpy(tmp_path: Path) -> None:
    _database(tmp_path / "tune.jsonl")
    ctx = make_context()
    module = Parser(ctx, MODULE).parse_module()
    with pytest.warns(UserWarning, match=IGNORED):
        AutotunePass(db=str(tmp_path / "tune.jsonl")).apply(ctx, module)
    run_passes(
        ctx, module, ["default-schedule", "convert-linalg-to-loops", *LEVELS["llvm-dialect"]]
    )
    rng = np.random.default_rng(0)
    x = aligned_copy(rng.standard_normal((32, 48)).astype(np.float32))
    w = aligned_copy(rng.standard_normal((48, 64)).astype(np.float32))
    y, tmp = aligned_empty((32, 64)), aligned_empty((32, 64))
    compile_module(module).function("main")(x, w, y, tmp)
    np.testing.assert_allclose(y, np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)


def test_an_empty_database_leaves_every_kernel_to_the_default(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    ctx = make_context()
    module = Parser(ctx, MODULE).parse_module()
    AutotunePass(db=str(tmp_path / "empty.jsonl")).apply(ctx, module)
    assert not [g for g in module.walk() if SCHEDULE_ATTR_NAME in g.attributes]
    stats = autotune_stats(module.attributes)
    assert stats is not None and (stats.kernels, stats.tuned, len(stats.fallback)) == (2, 0, 2)


def test_a_missing_database_is_an_error(tmp_path: Path) -> None:
    ctx = make_context()
    module = Parser(ctx, MODULE).parse_module()
    with pytest.raises(DiagnosticException, match="autotune: database not found: .*nope.jsonl"):
        AutotunePass(db=str(tmp_path / "nope.jsonl")).apply(ctx, module)
    with pytest.raises(DiagnosticException, match="is a directory"):
        AutotunePass(db=str(tmp_path)).apply(ctx, module)


@pytest.mark.parametrize("trials", [0, 1])
def test_a_database_that_is_not_a_regular_file_is_an_error(tmp_path: Path, trials: int) -> None:
    """A FIFO is refused, not opened for reading (that waits for a writer forever), with one
    diagnostic (ziggurat-opt reports it as the pass's error, not as an internal one)."""
    ctx = make_context()
    module = Parser(ctx, MODULE).parse_module()
    fifo = tmp_path / "db.jsonl"
    os.mkfifo(fifo)
    got: list[BaseException] = []

    def apply() -> None:
        try:
            AutotunePass(db=str(fifo), trials=trials, tuner="random").apply(ctx, module)
        except BaseException as e:
            got.append(e)

    worker = threading.Thread(target=apply, daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # blocked in open(): give it a writer, so that it reads EOF and ends
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert not worker.is_alive() and len(got) == 1, "the pass waited on the FIFO"
    assert isinstance(got[0], DiagnosticException), repr(got[0])
    assert (
        str(got[0])
        == f"autotune: tuning database {fifo} is a FIFO (named pipe), not a regular file"
    )


BAD = [
    (
        'autotune{db="x.jsonl" trials=-1}',
        "autotune: option 'trials': -1 is out of range; allowed: 0..1000000",
    ),
    (
        f'autotune{{db="x.jsonl" trials={HUGE}}}',
        f"autotune: option 'trials': {HUGE} is out of range; allowed: 0..1000000",
    ),
    (
        'autotune{db="x.jsonl" threads=0}',
        "autotune: option 'threads': 0 is out of range; allowed: 1..1024",
    ),
    (
        'autotune{db="x.jsonl" seed=-1}',
        "autotune: option 'seed': -1 is out of range; allowed: 0 or more",
    ),
    (
        'autotune{db="x.jsonl" tuner="best"}',
        "autotune: option 'tuner': unknown tuner 'best' (available: xgb, random)",
    ),
]


@pytest.mark.parametrize(("pipeline", "message"), BAD, ids=[p for p, _ in BAD])
def test_out_of_range_option_is_one_error_naming_pass_option_and_range(
    capsys: pytest.CaptureFixture[str], scheduled_matmul: Path, pipeline: str, message: str
) -> None:
    assert_one_option_error(capsys, scheduled_matmul, pipeline, message)
