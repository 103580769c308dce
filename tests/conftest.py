"""Shared pytest setup for tests/, and how test files reach their helpers.

Layout: tests/ mirrors the source tree (tests/passes/transforms/test_tile.py tests
passes/transforms/tile.py); cross-cutting tests (whole models, the ONNX backend suite, fuzzing,
MLIR compatibility, operators end to end, the architecture check, xDSL tooling) sit at the top of
tests/. Benchmarks live in tests/bench/ and are plain scripts, not tests.

Imports: tests/ and every folder under it that holds tests is a package (an `__init__.py` in
each), so pytest's default `prepend` import mode names a test module by its path from the
repository root (`tests.passes.transforms.test_tile`) and puts the repository root on `sys.path`.
That is why two test files may share a basename in different folders
(tests/autotune/test_space.py and tests/passes/schedule/test_space.py), and why a test file
imports its helpers from the one helper package, tests/support/, as

    from tests.support.scheduled_kernels import matmul_src, run_kernel

with no `sys.path` edit anywhere under tests/ (the bench scripts in tests/bench/, which run as
`python tests/bench/bench_x.py`, put the repository root on `sys.path` themselves). The source
packages (`compiler`, `passes`, ...) come from the editable install or the repository root;
the names of the test packages never shadow them, since they are all under `tests.`; and this
regular package `tests` wins over a namespace package of that name that another distribution may
install into site-packages (xDSL's wheel has one).

Fixtures used by several test files are defined here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # the tests already run in one process per core: a model's kernels compile in the test's own
    # process instead of forking more workers (about 20% faster on the node tests)
    os.environ.setdefault("ZIGGURAT_COMPILE_JOBS", "1")
# `ziggurat run` compiles afresh in every test, as the test expects (and leaves the user's compile
# cache alone); tests/compiler/test_compile_cache.py turns the cache on in a tmp_path of its own
os.environ["ZIGGURAT_NO_CACHE"] = "1"


@pytest.fixture(params=[1, 2, 3], ids=lambda n: f"{n}threads")
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    """The thread pool of parallel loops (compiler/parallel_runtime.py) set to 1, 2 and 3
    threads in turn, restored afterwards."""
    from compiler import parallel_runtime

    before = parallel_runtime.get_num_threads()
    parallel_runtime.set_num_threads(request.param)
    yield request.param
    parallel_runtime.set_num_threads(before)


@pytest.fixture
def scheduled_matmul(tmp_path: Path) -> Path:
    """A file holding tests.support.schedule_options.SCHEDULED_MATMUL: one 64x128x64 matmul
    kernel that already carries a schedule, the input of the schedule passes' option tests."""
    from tests.support.schedule_options import SCHEDULED_MATMUL

    path = tmp_path / "matmul.mlir"
    path.write_text(SCHEDULED_MATMUL)
    return path
