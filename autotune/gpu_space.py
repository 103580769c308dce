"""The search space of one kernel's anchor generic on a GPU target: `#sched.schedule` values
read with GPU meanings (passes/schedule/gpu_rules.py), a KnobSpace (knob_space.py) as the CPU's
SearchSpace is, so that tune_task and the searchers take either.

A config is a small JSON-serializable dict (keys in sorted order):

    block:  per loop. A parallel loop: its block tile, a divisor of the extent and a multiple of
            its register tile (the extent: untiled). A reduction loop: the staging depth,
            iterations per step of the block's reduction loop (0: the whole loop at once)
    reg:    per loop: the register tile of a parallel loop (a divisor of the extent; threads
            along the loop = block / reg); 1 for reduction loops
    unroll: unroll of the innermost reduction loop (1 without reductions)
    vector, width: vector accesses along one parallel loop (-1, 1: scalar)
    pack:   inputs staged in workgroup memory at each reduction step (SIMT targets only)
    split:  threads sharing each output's reduction (reduction_split.py; 1: none)

The loop order is the default one (parallel loops, then the reduction loops).

The knobs depend on each other (the accumulator, thread and workgroup-memory budgets, divisors
of divisors, a split that excludes vectors, staging and reduction tiles), so a config is built
one knob at a time in a fixed order, each choosing among its candidates that still leave the
knobs after it a legal value: those are counted at their least demanding value (one thread
along a loop, a register tile of 1, nothing staged), and every rule only gets easier as such a
value shrinks. So every walk ends in a legal config, and a legal config passes every step:
sample, mutate, configs and contains are that one walk with different choosers, and nothing the
space yields needs measuring to find out it is illegal (check_gpu_schedule passes).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from autotune.knob_space import Knob, KnobSpace, schedule_passes, where_option
from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.gpu_default import gpu_default_schedule
from passes.schedule.gpu_rules import check_gpu_schedule, gpu_mapping, staged_bytes
from passes.schedule.gpu_target import GpuTarget
from passes.schedule.reduction_split import combiner
from passes.schedule.rules import check_pack, packable, vectorizable_along
from passes.schedule.space import REDUCTION_UNROLLS, divisors

GPU_SPACE_VERSION = 1
STAGE_DEPTHS = (4, 8, 16, 32, 64)
"""Staging depths tried for the innermost reduction loop (proper divisors of its extent)."""
OUTER_STAGE_DEPTHS = (1, 2, *STAGE_DEPTHS)
"""Depths of an outer reduction loop: they multiply the inner loops' (a convolution stages a few
input channels of a whole window)."""

Config = dict[str, Any]
KEYS = ("block", "pack", "reg", "split", "unroll", "vector", "width")


def _element_bytes(info: KernelInfo, i: int) -> int:
    elem = getattr(info.accesses[i].value.type, "element_type", None)
    return max(getattr(elem, "bitwidth", 32) // 8, 1)


class GpuSearchSpace(KnobSpace):
    """Knobs and their candidates for one kernel on one GPU target (host threads: 1, a GPU
    schedule has none of its own)."""

    def __init__(self, info: KernelInfo, target: GpuTarget):
        super().__init__(info)
        self.target = target
        self.order = tuple(self.parallel + self.reductions)
        self.default = gpu_default_schedule(info, target)
        self.out_bytes = _element_bytes(info, len(info.accesses) - 1)
        e, t = self.extents, target
        # static candidates per knob; the walk filters them by the budgets left
        self.regs = {
            d: [r for r in divisors(e[d]) if r <= t.max_accumulators] for d in self.parallel
        }
        self.blocks: dict[int, list[int]] = {
            d: [b for b in divisors(e[d]) if self._fits_threads(b)] for d in self.parallel
        }
        for d in self.reductions:
            depths = STAGE_DEPTHS if d == self.reductions[-1] else OUTER_STAGE_DEPTHS
            cands = {k for k in depths if k < e[d] and e[d] % k == 0}
            if 0 < self.default.tile[d] < e[d]:
                cands.add(self.default.tile[d])
            self.blocks[d] = [0, *sorted(cands)]
        self.vectors = [(-1, 1)] + [
            (d, w)
            for d in self.parallel
            if vectorizable_along(info, d)
            for w in t.vector_widths
            if w > 1 and e[d] % w == 0
        ]
        last = e[self.reductions[-1]] if self.reductions else 1
        if self.reductions:
            top = min(last, max(REDUCTION_UNROLLS))  # a short loop: unrolled whole
            self.unrolls = sorted({u for u in REDUCTION_UNROLLS if u <= last} | {top})
        else:
            self.unrolls = [1]
        self.splits = [1]
        if (
            self.reductions
            and len(info.op.outputs) == 1
            and combiner(info.op.body.block) is not None
        ):
            self.splits += [
                k
                for k in divisors(last)[1:]
                if k <= t.max_threads and k * self.out_bytes <= t.shared_bytes
            ]
        self.packs: list[list[int]] = [[]]
        if self.reductions and not t.cpu_like:
            inputs = [i for i in range(len(info.op.inputs)) if packable(info, i)]
            subsets = (c for k in range(len(inputs) + 1) for c in itertools.combinations(inputs, k))
            self.packs = [list(c) for c in subsets]
        self.size = self._count()

    def _fits_threads(self, block: int) -> bool:
        """Whether some register tile of `block` leaves at most max_threads threads."""
        return any(
            block % r == 0 and block // r <= self.target.max_threads
            for r in range(1, min(block, self.target.max_accumulators) + 1)
        )

    def _count(self) -> int:
        """An upper bound of the number of configs: the product of the knobs' candidates."""
        total = len(self.vectors) * len(self.unrolls) * len(self.packs) * len(self.splits)
        for d in self.parallel:
            total *= len(self.regs[d]) * len(self.blocks[d])
        for d in self.reductions:
            total *= len(self.blocks[d])
        return total

    # -- the walk ---------------------------------------------------------------------------

    def _steps(self, reg_loops: Sequence[int], block_loops: Sequence[int]) -> list[Knob]:
        """The knobs in the order they are chosen: each depends only on those before it."""
        return [
            ("split", -1),
            ("vector", -1),
            *(("reg", d) for d in reg_loops),
            *(("block", d) for d in block_loops),
            *(("block", d) for d in self.reductions),
            ("unroll", -1),
            ("pack", -1),
        ]

    def _blank(self) -> Config:
        return {
            "block": [0] * self.n,
            "pack": [],
            "reg": [1] * self.n,
            "split": 1,
            "unroll": 1,
            "vector": -1,
            "width": 1,
        }

    @staticmethod
    def _get(cfg: Config, knob: Knob) -> Any:
        name, d = knob
        if name == "vector":
            return (cfg["vector"], cfg["width"])
        return cfg[name][d] if d >= 0 else cfg[name]

    @staticmethod
    def _put(cfg: Config, knob: Knob, value: Any) -> None:
        name, d = knob
        if name == "vector":
            cfg["vector"], cfg["width"] = value
        elif d >= 0:
            cfg[name][d] = value
        else:
            cfg[name] = list(value) if name == "pack" else value

    def _choices(self, knob: Knob, cfg: Config, done: set[Knob]) -> list[Any]:
        """The candidates of `knob` that leave every knob not yet in `done` a legal value."""
        name, d = knob
        t, split = self.target, cfg["split"]
        if name == "split":
            return self.splits
        if name == "vector":
            return [(-1, 1)] if split > 1 else self.vectors
        if name == "unroll":
            return self.unrolls
        if name == "pack":
            return [[]] if split > 1 else [p for p in self.packs if self._pack_fits(cfg, p)]
        if name == "block" and d in self.reductions:
            return [0] if split > 1 else self.blocks[d]
        v, w = cfg["vector"], cfg["width"]
        reg, block = cfg["reg"], cfg["block"]
        if name == "reg":
            # a register tile not chosen yet counts at its least (a vector's width); a block tile
            # at its register tile (one thread), so a split's partials take split * prod(reg)
            others = math.prod(
                reg[e] if ("reg", e) in done else (w if e == v else 1)
                for e in self.parallel
                if e != d
            )
            limit = t.max_accumulators // others
            if split > 1:
                limit = min(limit, t.shared_bytes // (split * others * self.out_bytes))
            return [r for r in self.regs[d] if r <= limit and (d != v or r % w == 0)]
        # a parallel loop's block tile: threads within max_threads, partials within workgroup bytes
        chosen = [e for e in self.parallel if e != d and ("block", e) in done]
        threads = split * math.prod(block[e] // reg[e] for e in chosen)
        blocks = math.prod(block[e] if e in chosen else reg[e] for e in self.parallel if e != d)
        byte_limit = t.shared_bytes // (split * blocks * self.out_bytes) if split > 1 else None
        return [
            b
            for b in self.blocks[d]
            if b % reg[d] == 0
            and threads * (b // reg[d]) <= t.max_threads
            and (byte_limit is None or b <= byte_limit)
        ]

    def _pack_fits(self, cfg: Config, pack: list[int]) -> bool:
        """Whether staging `pack` fits the workgroup memory (and the pack pass's panel limit)."""
        if not pack:
            return True
        s = self.to_schedule({**cfg, "pack": pack})
        try:
            check_pack(s, self.info)
        except ValueError:
            return False
        return staged_bytes(s, self.info) <= self.target.shared_bytes

    @staticmethod
    def _nearest(knob: Knob, cands: list[Any], want: Any) -> Any:
        """`want` if it is a candidate, else the closest one (`cands` is never empty)."""
        if want in cands:
            return want
        if knob[0] == "vector":
            return (-1, 1)
        if knob[0] == "pack":
            return max((p for p in cands if set(p) <= set(want)), key=len)
        return min(cands, key=lambda c: (abs(c - want), c))

    @staticmethod
    def _draw(knob: Knob, cands: list[Any], rng: random.Random) -> Any:
        if knob[0] == "split" and len(cands) > 1:  # half the samples unsplit: it reshapes it all
            return 1 if rng.random() < 0.5 else rng.choice(cands[1:])
        return rng.choice(cands)

    def _walk(self, choose: Callable[[Knob, list[Any]], Any], steps: list[Knob]) -> Config | None:
        """One config, each knob's value picked by `choose` among its candidates (None when
        `choose` returns None: no value to pick)."""
        cfg, done = self._blank(), set[Knob]()
        for knob in steps:
            value = choose(knob, self._choices(knob, cfg, done))
            if value is None:
                return None
            self._put(cfg, knob, value)
            done.add(knob)
        return cfg

    def _project(
        self, want: Config, change: Knob | None = None, rng: random.Random | None = None
    ) -> Config | None:
        """The config closest to `want`, knob by knob; with `change`, that knob takes another of
        its candidates (None when it has none)."""

        def choose(knob: Knob, cands: list[Any]) -> Any:
            old = self._get(want, knob)
            if knob == change:
                assert rng is not None
                others = [c for c in cands if c != old]
                return rng.choice(others) if others else None
            return self._nearest(knob, cands, old)

        return self._walk(choose, self._steps(self.parallel, self.parallel))

    # -- KnobSpace's interface ----------------------------------------------------------------

    def sample(self, rng: random.Random) -> Config:
        reg_loops, block_loops = list(self.parallel), list(self.parallel)
        rng.shuffle(reg_loops)  # no loop is favoured by the accumulator budget
        rng.shuffle(block_loops)  # nor by the thread budget
        cfg = self._walk(lambda k, c: self._draw(k, c, rng), self._steps(reg_loops, block_loops))
        assert cfg is not None
        return cfg

    def _mutation_knobs(self) -> list[Knob]:
        return self._steps(self.parallel, self.parallel)

    def _mutate_knob(self, config: Config, knob: Knob, rng: random.Random) -> Config | None:
        """The knobs after `knob` in the walk are repaired when they must be."""
        return self._project(config, knob, rng)

    def _canonical(self, config: Config) -> Config:
        cfg = self._project(config)
        assert cfg is not None
        return cfg

    def configs(self) -> Iterator[Config]:
        """Every config of the space, lazily (for small spaces: the search lists them at the end)."""
        steps = self._steps(self.parallel, self.parallel)

        def walk(i: int, cfg: Config, done: set[Knob]) -> Iterator[Config]:
            if i == len(steps):
                yield json.loads(json.dumps(cfg))
                return
            knob = steps[i]
            for value in self._choices(knob, cfg, done):
                self._put(cfg, knob, value)
                yield from walk(i + 1, cfg, done | {knob})

        yield from walk(0, self._blank(), set())

    def contains(self, config: Config) -> bool:
        """Whether `config` is one of the space's configs (so legal on the target)."""
        if not isinstance(config, dict) or sorted(config) != list(KEYS):
            return False
        lists = [config[k] for k in ("block", "reg", "pack")]
        scalars = [config[k] for k in ("split", "unroll", "vector", "width")]
        if not all(isinstance(x, list) and all(type(y) is int for y in x) for x in lists):
            return False
        if not all(type(x) is int for x in scalars) or not len(lists[0]) == len(lists[1]) == self.n:
            return False
        if self._project(config) != config:
            return False
        try:
            check_gpu_schedule(self.to_schedule(config), self.info, self.target)
        except ValueError:
            return False
        return True

    def to_schedule(self, config: Config) -> Schedule:
        e = self.extents
        tile = tuple(
            0 if d in self.parallel and b == e[d] else b for d, b in enumerate(config["block"])
        )
        unroll = list(config["reg"])
        if self.reductions:
            unroll[self.reductions[-1]] = config["unroll"]
        return Schedule(
            tile,
            self.order,
            tuple(unroll),
            config["vector"],
            config["width"],
            pack=tuple(config["pack"]),
            split=config["split"],
        )

    def to_passes(self, config: Config, op_index: int, kernel: str = "") -> list[str]:
        """Pass specs that turn any schedule of the anchor into to_schedule(config): the split
        is reset first (a split schedule refuses vectors and staging) and set last (setting it
        resets vectors, staging and reduction tiles)."""
        s = self.to_schedule(config)
        where = where_option(op_index, kernel)
        passes = [f"split-reduction{{threads=1{where}}}", *schedule_passes(s, op_index, kernel)]
        if s.split > 1:
            passes.append(f"split-reduction{{threads={s.split}{where}}}")
        return passes

    def definition(self) -> dict[str, Any]:
        return {
            "version": GPU_SPACE_VERSION,
            "target": dataclasses.asdict(self.target),
            "extents": self.extents,
            "iterators": self.info.iterators,
            "regs": [self.regs[d] for d in self.parallel],
            "blocks": [self.blocks[d] for d in range(self.n)],
            "vectors": self.vectors,
            "unrolls": self.unrolls,
            "splits": self.splits,
            "packs": self.packs,
        }

    def default_config(self) -> Config:
        """gpu_default_schedule projected onto the space (the same mapping onto blocks and
        threads; only a reduction unroll outside the candidates moves)."""
        s, e = self.default, self.extents
        m = gpu_mapping(s, self.info)
        want = {
            "block": [
                m.block_tile[d] if d in self.parallel else (s.tile[d] if s.tile[d] < e[d] else 0)
                for d in range(self.n)
            ],
            "pack": sorted(s.pack),
            "reg": [s.unroll[d] if d in self.parallel else 1 for d in range(self.n)],
            "split": s.split,
            "unroll": s.unroll[self.reductions[-1]] if self.reductions else 1,
            "vector": s.vector,
            "width": s.width,
        }
        cfg = self._project(want)
        assert cfg is not None
        return cfg


__all__ = ["GPU_SPACE_VERSION", "Config", "GpuSearchSpace"]
