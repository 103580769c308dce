"""Not a unit test: how long a model takes to become runnable, four ways, each in a fresh
process: ziggurat's cold compile (compile_model, no cache), a warm-cache compile
(compiler.compile_cache.cached_compile finding the model's package in its cache), loading the
saved package (compiler.package.load_package), and creating an onnxruntime InferenceSession
(one thread, no spinning). Prints a markdown table with the CPU named (issue 29's targets: cold
ResNet-50 <= 7 s, BERT-base <= 6 s, every real model <= 15 s on a 2-core machine).

Run: python tests/bench/bench_compile_time.py [MODEL ...] [--repeat 1] [--json]

MODEL: a path to an .onnx file, or one of the built-in names: resnet50 (onnx's light ResNet-50,
224x224, random weights, as tests/bench/real_model_set.py writes it), bert-base (a BERT-like
encoder built here: 12 layers, 768 wide, 12 heads, sequence 128, FFN 3072), densenet121 (onnx's
light DenseNet-121). Default: all three.

Each figure is timed inside its process, after the imports (which the table's last column
gives for the cold compile's process); it is the minimum over --repeat processes. The cold
compile also reports its CPU seconds (that process and its kernel workers): on a shared machine
wall time counts other people's work, CPU time does not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

BUILTIN = ("resnet50", "bert-base", "densenet121")


def bert_base(
    layers: int = 12, seq: int = 128, dim: int = 768, heads: int = 12, ffn: int = 3072
) -> onnx.ModelProto:
    """A BERT-base-like encoder (post-norm blocks: attention, GELU MLP, residuals, layer norms)
    on a [seq, dim] input, seeded random weights; opset 20."""
    rng = np.random.default_rng(0)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    counter = [0]
    hd = dim // heads

    def name(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def const(array: np.ndarray, prefix: str = "w") -> str:
        n = name(prefix)
        inits.append(numpy_helper.from_array(array, n))
        return n

    def weight(*shape: int) -> str:
        return const((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    def op(op_type: str, inputs: list[str], **attrs: object) -> str:
        out = name(op_type.lower())
        nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def ln(x: str) -> str:
        gamma = const(np.ones(dim, np.float32) + 0.05 * rng.standard_normal(dim).astype("f4"))
        return op(
            "LayerNormalization",
            [x, gamma, const(np.zeros(dim, np.float32))],
            axis=-1,
            epsilon=1e-12,
        )

    def linear(x: str, n_in: int, n_out: int) -> str:
        bias = const(0.02 * rng.standard_normal(n_out).astype(np.float32), "b")
        return op("Add", [op("MatMul", [x, weight(n_in, n_out)]), bias])

    def heads_of(x: str) -> str:
        r = op("Reshape", [x, const(np.array([seq, heads, hd], np.int64), "shape")])
        return op("Transpose", [r], perm=[1, 0, 2])

    x = "input"
    scale = const(np.array(1.0 / np.sqrt(hd), np.float32), "scale")
    for _ in range(layers):
        q = heads_of(linear(x, dim, dim))
        k = heads_of(linear(x, dim, dim))
        v = heads_of(linear(x, dim, dim))
        s = op("Mul", [op("MatMul", [q, op("Transpose", [k], perm=[0, 2, 1])]), scale])
        p = op("Softmax", [s], axis=-1)
        o = op("Transpose", [op("MatMul", [p, v])], perm=[1, 0, 2])
        o = op("Reshape", [o, const(np.array([seq, dim], np.int64), "shape")])
        x = ln(op("Add", [x, linear(o, dim, dim)]))
        m = op("Gelu", [linear(x, dim, ffn)])
        x = ln(op("Add", [x, linear(m, ffn, dim)]))
    graph = helper.make_graph(
        nodes,
        "bert_base",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [seq, dim])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [seq, dim])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def model_file(name: str, directory: Path) -> Path:
    """The .onnx file of a built-in model name (written into `directory`), or `name` as a path."""
    if name not in BUILTIN:
        return Path(name)
    path = directory / f"{name}.onnx"
    if name == "bert-base":
        onnx.save(bert_base(), path)
        return path
    from tests.support import light_models

    light = {"resnet50": "resnet50", "densenet121": "densenet121"}[name]
    onnx.save(light_models.with_random_weights(onnx.load(light_models.path(light))), path)
    return path


_COLD = """
import json, os, resource, shutil, sys, time
from pathlib import Path
t0 = time.perf_counter()
from compiler.model import compile_model
from compiler import compile_cache
t1 = time.perf_counter()
def cpu():
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
c0, t2 = cpu(), time.perf_counter()
compiled = compile_model(sys.argv[1])
t3, c1 = time.perf_counter(), cpu()
compiled.save(sys.argv[2])
t4 = time.perf_counter()
# the cache entry the warm compile will find: the same package, under the model's key
entry = compile_cache.packages_dir() / (
    compile_cache.cache_key(sys.argv[1], None, True, (), 1, "auto") + compile_cache.SUFFIX
)
shutil.copyfile(sys.argv[2], entry)
print(json.dumps({"import_s": t1 - t0, "cold_s": t3 - t2, "cold_cpu_s": c1 - c0,
                  "save_s": t4 - t3, "levels": compiled.timings}))
"""

_WARM = """
import json, sys, time
from compiler.compile_cache import cached_compile
from compiler.package import LoadedModel
t0 = time.perf_counter()
model = cached_compile(sys.argv[1])
t1 = time.perf_counter()
assert isinstance(model, LoadedModel), "the warm compile missed the cache"
print(json.dumps({"warm_s": t1 - t0}))
"""

_LOAD = """
import json, sys, time
from compiler.package import load_package
t0 = time.perf_counter()
load_package(sys.argv[1])
print(json.dumps({"load_s": time.perf_counter() - t0}))
"""

_SESSION = """
import json, sys, time
import onnxruntime as ort
t0 = time.perf_counter()
opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
opts.inter_op_num_threads = 1
opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
ort.InferenceSession(sys.argv[1], opts, providers=["CPUExecutionProvider"])
print(json.dumps({"session_s": time.perf_counter() - t0}))
"""


def _child(code: str, env: dict[str, str], *args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=1800,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
    )
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench(path: Path, repeat: int) -> dict:
    best: dict = {}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="ziggurat-bench-") as tmp:
            env = {"ZIGGURAT_CACHE_DIR": str(Path(tmp) / "cache")}
            package = str(Path(tmp) / "model.zpkg")
            cold = _child(_COLD, {**env, "ZIGGURAT_NO_CACHE": "1"}, str(path), package)
            row = {
                **cold,
                **_child(_WARM, env, str(path)),
                **_child(_LOAD, env, package),
                **_child(_SESSION, env, str(path)),
            }
        for k, v in row.items():
            if isinstance(v, float):
                best[k] = min(best.get(k, v), v)
            else:
                best.setdefault(k, v)
    return best


def table(rows: dict[str, dict]) -> str:
    lines = [
        f"CPU: {bench_env.cpu_description()}",
        "",
        "| model | ziggurat cold compile | (CPU s) | warm-cache compile | package load "
        "| onnxruntime session | import compiler |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['cold_s']:.2f} s | {r['cold_cpu_s']:.1f} | {r['warm_s']:.3f} s "
            f"| {r['load_s']:.3f} s | {r['session_s']:.3f} s | {r['import_s']:.2f} s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(BUILTIN))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args(argv)
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="ziggurat-models-") as tmp:
        for name in args.models:
            path = model_file(name, Path(tmp))
            rows[Path(name).stem if name not in BUILTIN else name] = bench(path, args.repeat)
            print(f"{name}: {json.dumps(rows[list(rows)[-1]])}", file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
