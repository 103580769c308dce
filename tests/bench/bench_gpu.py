"""Not a unit test: ziggurat's GPU kernels against a reference measured in the same run.

Run:
    python tests/bench/bench_gpu.py pocl [--trials 32] [--db gpu.jsonl] [--json]
    python tests/bench/bench_gpu.py cuda [--trials 128] [--db gpu.jsonl] [--json]   # a CUDA GPU + torch

`pocl`: the same kernels (matmuls and AutoTVM's ResNet-18 convs, at sizes a 2-core CI box times
in minutes) compiled for OpenCL on PoCL (one PoCL thread: POCL_MAX_PTHREAD_COUNT=1) and for the
CPU back end (one thread), default schedules and, with --trials, PoCL-tuned ones (opencl-cpu
preset); prints each time and the ratio CPU time / PoCL time (> 1: PoCL faster). GPU models are
timed with their inputs resident on the device (no copies per call), as the CPU's are in place.

`cuda`: matmul 1024 and 4096 against torch.matmul (cuBLAS, TF32 off), default and tuned; the
twelve ResNet-18 convs of AutoTVM's Table 1, tuned, against torch's conv2d (cuDNN, benchmark
mode); ResNet-18 batch 1 end to end against torch eager and torch with a CUDA graph. Ratios are
torch time / ziggurat time (> 1: ziggurat faster). It needs a CUDA GPU, pycuda and torch; it
has not been run yet (no GPU was lent while it was written), so it prints no figure it did not
measure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable

import bench_env  # first: the references' environment, before numpy loads

bench_env.prepare()
os.environ.setdefault("POCL_MAX_PTHREAD_COUNT", "1")  # one thread, as the CPU side

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from bench_conv_tuned import WORKLOADS, conv_model  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from autotune.apply_pass import tuned_schedules  # noqa: E402
from autotune.task import extract_tasks  # noqa: E402
from autotune.tune_model import tune_tasks  # noqa: E402
from autotune.tuning_target import tuning_target  # noqa: E402
from compiler.benchmark import time_interleaved  # noqa: E402
from compiler.model import compile_model  # noqa: E402

POCL_MATMULS = (128, 256, 512)
POCL_CONVS = (6, 9, 12)  # AutoTVM's 28x28 3x3, 14x14 3x3 and 7x7 3x3 workloads (1-based)
CUDA_MATMULS = (1024, 4096)


def matmul_model(n: int, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    b = onnx.numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        "matmul",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def feeds_of(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    out = {}
    for v in model.graph.input:
        shape = [d.dim_value for d in v.type.tensor_type.shape.dim]
        out[v.name] = rng.standard_normal(shape).astype(np.float32)
    return out


def tuned(model: onnx.ModelProto, api: str, preset: str, trials: int, db: str) -> list:
    """Tune the model's kernels for `trials` on the device; the schedules that apply them."""
    if trials <= 0:
        return []
    target = tuning_target(api, preset)
    tune_tasks(extract_tasks(model), db, trials, target=target, progress=False)
    return tuned_schedules(db, target=api, preset=preset)


def resident(compiled, feeds: dict[str, np.ndarray]) -> Callable[[], object]:
    """A GPU model timed as a model runs: inputs copied to the device once, then each call is
    its launch sequence (waited for), no copies: what torch's figures are too."""
    program = compiled.program
    program.copy_in([feeds[s.name] for s in compiled.inputs])
    return lambda: program.launch_all(1)


def flops_of(model: onnx.ModelProto) -> float:
    return sum(t.flops * t.weight for t in extract_tasks(model))


def pocl(args: argparse.Namespace, db: str) -> list[dict]:
    cases = [(f"matmul {n}", matmul_model(n)) for n in POCL_MATMULS]
    for i in POCL_CONVS:
        h, w, ic, oc, k, s = WORKLOADS[i - 1]
        cases.append((f"conv{i} {h}x{w} {ic}->{oc} k{k} s{s}", conv_model(h, w, ic, oc, k, s)))
    rows = []
    for name, model in cases:
        feeds = feeds_of(model)
        t0 = time.perf_counter()
        schedules = tuned(model, "opencl", "opencl-cpu", args.trials, db)
        tune_s = time.perf_counter() - t0
        engines: dict[str, Callable[[], object]] = {
            "cpu": compile_model(model).runner(feeds),
            "pocl": resident(compile_model(model, target="opencl", preset="opencl-cpu"), feeds),
        }
        if schedules:
            engines["pocl tuned"] = resident(
                compile_model(model, target="opencl", preset="opencl-cpu", schedules=schedules),
                feeds,
            )
        times = time_interleaved(engines, args.seconds)
        gflop = flops_of(model) / 1e9
        row = {"case": name, "tune_s": round(tune_s, 1)}
        for k, t in times.items():
            row[f"{k} ms"] = round(t * 1e3, 3)
            row[f"{k} GFLOP/s"] = round(gflop / t, 1)
        row["cpu / pocl"] = round(times["cpu"] / times["pocl"], 2)
        if "pocl tuned" in times:
            row["cpu / pocl tuned"] = round(times["cpu"] / times["pocl tuned"], 2)
        rows.append(row)
        print(json.dumps(row) if args.json else _line(row), flush=True)
    return rows


def cuda(args: argparse.Namespace, db: str) -> list[dict]:
    import torch  # the GPU machine has it (../shared/GPU.md); never a dependency of ours

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")

    def torch_timer(fn: Callable[[], object]) -> Callable[[], object]:
        def call() -> object:
            out = fn()
            torch.cuda.synchronize()
            return out

        return call

    rows = []
    for n in CUDA_MATMULS:
        model = matmul_model(n)
        feeds = feeds_of(model)
        a = torch.from_numpy(feeds["a"]).to(dev)
        b = torch.from_numpy(onnx.numpy_helper.to_array(model.graph.initializer[0])).to(dev)
        engines = {
            "cuBLAS": torch_timer(lambda a=a, b=b: a @ b),
            "default": resident(compile_model(model, target="cuda"), feeds),
        }
        schedules = tuned(model, "cuda", "cuda", args.trials, db)
        if schedules:
            engines["tuned"] = resident(
                compile_model(model, target="cuda", schedules=schedules), feeds
            )
        rows.append(_ratios(f"matmul {n}", engines, "cuBLAS", args.seconds, flops_of(model)))
    conv = torch.nn.functional.conv2d
    for i, (h, w, ic, oc, k, s) in enumerate(WORKLOADS, 1):
        model = conv_model(h, w, ic, oc, k, s)
        feeds = feeds_of(model)
        x = torch.from_numpy(feeds["x"]).to(dev)
        weight = torch.from_numpy(onnx.numpy_helper.to_array(model.graph.initializer[0])).to(dev)
        engines = {
            "cuDNN": torch_timer(lambda x=x, wt=weight, s=s, k=k: conv(x, wt, None, s, k // 2)),
            "tuned": resident(
                compile_model(
                    model, target="cuda", schedules=tuned(model, "cuda", "cuda", args.trials, db)
                ),
                feeds,
            ),
        }
        rows.append(_ratios(f"conv{i}", engines, "cuDNN", args.seconds, flops_of(model)))
    rows.append(_resnet18(args, db, torch, dev))
    for row in rows:
        print(json.dumps(row) if args.json else _line(row), flush=True)
    convs = [r["cuDNN / tuned"] for r in rows if r["case"].startswith("conv")]
    print(f"convs: geomean cuDNN / tuned = {math.exp(np.mean(np.log(convs))):.2f}")
    return rows


def _resnet18(args: argparse.Namespace, db: str, torch, dev) -> dict:
    """ResNet-18 batch 1 from torchvision's weights-free definition, exported once to ONNX."""
    import tempfile

    import torchvision

    net = torchvision.models.resnet18().eval().to(dev)
    x = torch.randn(1, 3, 224, 224, device=dev)
    path = os.path.join(tempfile.mkdtemp(), "resnet18.onnx")
    torch.onnx.export(net, x, path, input_names=["x"], dynamo=False)
    model = onnx.load(path)
    feeds = {"x": x.cpu().numpy()}
    graph = torch.cuda.CUDAGraph()
    static_x = x.clone()
    with torch.no_grad():
        for _ in range(3):
            net(static_x)
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            net(static_x)

    def eager() -> object:
        with torch.no_grad():
            out = net(x)
        torch.cuda.synchronize()
        return out

    def replay() -> object:
        graph.replay()
        torch.cuda.synchronize()
        return None

    schedules = tuned(model, "cuda", "cuda", args.trials, db)
    engines = {
        "torch eager": eager,
        "torch + CUDA graph": replay,
        "tuned": resident(compile_model(model, target="cuda", schedules=schedules), feeds),
    }
    return _ratios("resnet18 batch 1", engines, "torch eager", args.seconds, flops_of(model))


def _ratios(
    case: str, engines: dict[str, Callable[[], object]], ref: str, seconds: float, flops: float
) -> dict:
    times = time_interleaved(engines, seconds)
    row: dict = {"case": case}
    for k, t in times.items():
        row[f"{k} us"] = round(t * 1e6, 1)
        row[f"{k} GFLOP/s"] = round(flops / t / 1e9, 1)
        if k != ref:
            row[f"{ref} / {k}"] = round(times[ref] / t, 2)
    return row


def _line(row: dict) -> str:
    return "  ".join(f"{k} {v}" if k != "case" else f"{v:<28}" for k, v in row.items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", choices=["pocl", "cuda"])
    ap.add_argument("--trials", type=int, default=0, help="tuning trials per case (0: defaults)")
    ap.add_argument("--db", help="tuning database to resume from and keep")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    db, _tmp = bench_env.scratch_db(args.db)
    print(f"# host CPU: {bench_env.cpu_description()}", file=sys.stderr)
    (pocl if args.suite == "pocl" else cuda)(args, db)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
