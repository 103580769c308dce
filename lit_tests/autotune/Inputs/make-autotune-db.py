"""Regenerate autotune-db.jsonl for ../autotune.mlir from that file's @kernel_0, with the real code.

    python lit_tests/autotune/Inputs/make-autotune-db.py

Prints the #sched.schedule that the lit test must CHECK. Rerun it (and update the CHECK line) when
the compiler version, the search space or the canonical kernel text changes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from xdsl.dialects import func
from xdsl.parser import Parser

from autotune.database import compiler_version
from autotune.record import TuningRecord
from autotune.space import SearchSpace
from autotune.task import generics_of, task_from_function
from compiler.pass_runner import make_context
from dialects.sched import ScheduleAttr
from passes.analysis.kernel_access import analyze_kernel
from passes.schedule.cpu_target import PRESETS, cpu_target

HERE = Path(__file__).resolve().parent
WIDTHS = (
    16,
    8,
    4,
)  # AVX-512, AVX/AVX2, anything else: one record each, so that one applies anywhere
SEED = 4
TIMESTAMP = 1_750_000_000.0  # fixed, so that regenerating gives the same file


def main() -> None:
    module = Parser(make_context(), (HERE.parent / "autotune.mlir").read_text()).parse_module()
    fn = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "kernel_0")
    task = task_from_function(fn)
    info = analyze_kernel(generics_of(fn)[task.anchor])
    # a space depends on the vector width and on the CPU (its register file, its caches): one
    # per width on each CPU preset and on this host, each distinct space once, so that one
    # record set applies on a Zen 4 or Zen 5 (AVX-512), an AVX2 core (Zen 3) or anything else
    cpus = [cpu_target(name) for name in PRESETS] + [cpu_target()]
    by_hash: dict[str, tuple[str, SearchSpace]] = {}
    for cpu in cpus:
        for w in WIDTHS:
            space = SearchSpace(info, width=w, cpu=cpu)
            by_hash.setdefault(space.space_hash(), (f"{cpu.name}-vector-width-{w}", space))
    spaces = dict(by_hash.values())

    # distinct sampled configs that are scalar code (the same schedule on every host) and in
    # every width's space
    rng = random.Random(SEED)
    configs: list[dict] = []
    while len(configs) < 5:
        c = next(iter(spaces.values())).sample(rng)
        if c["vector"] == -1 and all(s.contains(c) for s in spaces.values()) and c not in configs:
            configs.append(c)
    applied, slower, other_version, failed, other_space = configs

    def record(label: str, config: dict, costs: list[float], **over) -> dict:
        space = spaces[label]
        r = TuningRecord.new(
            task.workload,
            space.space_hash(),
            config,
            space.to_passes(config, task.anchor),
            costs,
            target={"cpu": "lit-test", "features": label},
            compiler_version=compiler_version(),
        ).to_json()
        r["timestamp"] = TIMESTAMP
        r.update(over)
        return r

    records = []
    for label in spaces:
        records += [
            record(label, applied, [2.0e-5, 2.1e-5]),  # the one to apply
            record(label, slower, [5.0e-5, 5.2e-5]),
            record(label, other_version, [1.0e-6], compiler_version="0.0.0-another-version"),
            record(label, failed, [1.0e-7], error_kind="wrong_result", error="argument 0 differs"),
        ]
    records.append(record(next(iter(spaces)), other_space, [1.0e-6], space_hash="0" * 64))
    with open(HERE / "autotune-db.jsonl", "w") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    print(f"compiler version {compiler_version()}, workload key {task.workload_key}")
    s = next(iter(spaces.values())).to_schedule(applied)
    print(f"CHECK: {ScheduleAttr.from_schedule(s)}")


if __name__ == "__main__":
    main()
