"""compiler/package/c_library.py: a package as a shared library that a C program runs.

A C program written here is compiled with gcc against ziggurat_model.h and the exported
library; it reads the inputs from raw files, runs the model and writes the outputs raw, and
the results are compared with onnxruntime: zoo:mlp, the small CNN at one and two threads (its
code calls the thread pool, linked into the library); ResNet-18 runs from C in test_loader.py's
ResNet-18 test, which compiles it once for both runtimes. The C API's errors (a wrong
input size, a run before the inputs are set, an index out of range) come back as messages.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler import zoo
from compiler.model import CompiledModel
from compiler.package import PackageError
from compiler.package.c_library import HEADER_NAME, export_shared_library
from tests.compiler.package.test_loader import assert_matches, reference
from tests.support.packages import rewrite

GCC = shutil.which("gcc")
pytestmark = pytest.mark.skipif(
    GCC is None, reason="the C API test compiles a C program with gcc, which is not installed"
)

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "ziggurat_model.h"

static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *data = malloc(*size ? *size : 1);
    if (fread(data, 1, *size, f) != *size) { free(data); data = NULL; }
    fclose(f);
    return data;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    zg_model *m = zg_create(threads);
    if (!m) { fprintf(stderr, "create: %s\n", zg_last_error(NULL)); return 2; }
    printf("threads %d\n", zg_num_threads(m));
    char dummy[3];
    if (zg_set_input(m, 0, dummy, sizeof dummy) == 0) return 3;
    printf("error %s\n", zg_last_error(m));
    if (zg_run(m) == 0) return 4;
    printf("error %s\n", zg_last_error(m));
    if (zg_set_input(m, zg_num_inputs(), dummy, 0) == 0) return 5;
    printf("error %s\n", zg_last_error(m));
    for (int i = 0; i < zg_num_inputs(); i++) {
        char path[64];
        size_t size;
        snprintf(path, sizeof path, "input-%d.bin", i);
        void *data = read_file(path, &size);
        if (!data) { fprintf(stderr, "cannot read %s\n", path); return 6; }
        printf("input %s %s", zg_input_name(i), zg_input_dtype(i));
        for (int d = 0; d < zg_input_rank(i); d++) printf(" %lld", (long long)zg_input_shape(i)[d]);
        printf("\n");
        if (zg_set_input(m, i, data, size)) { fprintf(stderr, "%s\n", zg_last_error(m)); return 7; }
        free(data);
    }
    for (int round = 0; round < 2; round++) /* a second run on the same buffers: the same */
        if (zg_run(m)) { fprintf(stderr, "%s\n", zg_last_error(m)); return 8; }
    for (int i = 0; i < zg_num_outputs(); i++) {
        char path[64];
        size_t size;
        const void *data = zg_output(m, i, &size);
        if (!data || size != (size_t)zg_output_bytes(i) || (size_t)data % 64) return 9;
        printf("output %s %s", zg_output_name(i), zg_output_dtype(i));
        for (int d = 0; d < zg_output_rank(i); d++) printf(" %lld", (long long)zg_output_shape(i)[d]);
        printf("\n");
        snprintf(path, sizeof path, "output-%d.bin", i);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(data, 1, size, f) != size) return 10;
        fclose(f);
    }
    zg_free(m);
    return 0;
}
"""


def build_program(library: Path, work: Path) -> Path:
    (work / "program.c").write_text(PROGRAM)
    exe = work / "program"
    subprocess.run(
        [GCC or "gcc", "-std=c11", "-Wall", "-Werror", f"-I{library.parent}", "program.c"]
        + [f"-L{library.parent}", "-lmodel", f"-Wl,-rpath,{library.parent}", "-o", str(exe)],
        cwd=work,
        check=True,
        capture_output=True,
        text=True,
    )
    return exe


def run_c(
    package: Path | CompiledModel,
    model: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    work: Path,
    threads: int = 0,
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Export, build the C program, run it on `feeds`: (outputs by name, its stdout lines)."""
    library = export_shared_library(package, work / "lib")
    assert (library.parent / HEADER_NAME).is_file()
    exe = build_program(library, work)
    names = [i.name for i in model.graph.input if i.name in feeds]
    for i, name in enumerate(names):
        np.ascontiguousarray(feeds[name]).tofile(work / f"input-{i}.bin")
    proc = subprocess.run(
        [str(exe), str(threads)], cwd=work, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    outputs = {}
    for i, line in enumerate(x for x in lines if x.startswith("output ")):
        _, name, dtype, *shape = line.split()
        data = np.fromfile(work / f"output-{i}.bin", dtype=dtype)
        outputs[name] = data.reshape([int(d) for d in shape])
    return outputs, lines


def test_mlp_runs_from_c(mlp: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path) -> None:
    model, _, path = mlp
    feeds = zoo.random_inputs(model, seed=1)
    got, lines = run_c(path, model, feeds, tmp_path)
    assert_matches(got, reference(model, feeds))
    assert "input input float32 4 64" in lines and "threads 1" in lines
    errors = [x[len("error ") :] for x in lines if x.startswith("error ")]
    assert errors == [
        "zg_set_input: input 0 'input' (float32[4,64]) takes 1024 bytes; got 3",
        "zg_run: input 0 'input' (float32[4,64]) was not set (zg_set_input)",
        "zg_set_input: no input 1; the model has 1",
    ]


@pytest.mark.parametrize("threads", [1, 2])
def test_thread_pool_model_runs_from_c(
    cnn2: tuple[onnx.ModelProto, CompiledModel, Path], tmp_path: Path, threads: int
) -> None:
    model, _, path = cnn2
    feeds = zoo.random_inputs(model, seed=2)
    got, lines = run_c(path, model, feeds, tmp_path, threads=threads)
    assert_matches(got, reference(model, feeds))
    assert f"threads {threads}" in lines


def test_a_package_for_another_machine_is_refused(mlp_package: Path, tmp_path: Path) -> None:
    def other_triple(manifest: dict) -> None:
        manifest["target"]["triple"] = "riscv64-unknown-linux-gnu"

    bad = rewrite(mlp_package, tmp_path / "other.zpkg", edit_manifest=other_triple)
    with pytest.raises(PackageError, match="was compiled for riscv64-unknown-linux-gnu"):
        export_shared_library(bad, tmp_path / "lib")


def test_a_data_dependent_output_is_refused(mlp_package: Path, tmp_path: Path) -> None:
    def data_dependent(manifest: dict) -> None:
        manifest["outputs"][0]["run_time_axis"] = 0

    bad = rewrite(mlp_package, tmp_path / "nonzero.zpkg", edit_manifest=data_dependent)
    with pytest.raises(PackageError, match="output 'output' is data-dependent: the C API"):
        export_shared_library(bad, tmp_path / "lib")
