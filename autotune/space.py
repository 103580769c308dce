"""The search space of one kernel's anchor generic: knobs over `#sched.schedule` values.

A config is a small JSON-serializable dict (keys in sorted order):

    vector: the vector loop (-1 = scalar code)
    reg:    register tile per loop (parallel loops; the vector loop's counts elements and is a
            multiple of the width; 1 for reduction loops)
    tile:   cache tile per loop (0 = untiled); a parallel loop's is a multiple of its register tile
    unroll: unroll factor of the innermost reduction loop (1 without reductions); in vectors
            (the partials per output) when that loop is the vector loop
    order:  loop order of the tile loops (parallel loops in original order, the reduction loops
            inserted at one position)
    pack:   operands copied into contiguous panels per cache tile (`pack{operands=..}`); only
            when their panels fit with the config's tiles
    parallel: (only in a space for more than one thread) how many outermost loops of the order
            run across threads (`parallelize{loops=P}`); at most the order's leading parallel loops

Each knob's candidates come from passes/schedule/space.py, one function per knob (the knobs of
the vectorize, unroll-jam, tile, interchange, pack and parallelize passes); this class combines
them under the constraints between knobs. Every config is a valid schedule (Schedule.check) with at most
max_accumulators(cpu) register-tile accumulators, and replays as those passes' specs.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Iterator
from typing import Any

from autotune.knob_space import Knob, KnobSpace, schedule_passes, where_option
from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo
from passes.schedule.cpu_target import CpuTarget, cpu_target
from passes.schedule.default import default_schedule, parallel_schedule
from passes.schedule.rules import check_pack, leading_parallel_loops
from passes.schedule.space import (
    order_space,
    pack_space,
    parallel_space,
    register_tile_space,
    tile_space,
    vector_space,
)
from passes.schedule.target import host_vector_width

SPACE_VERSION = 2  # 2: the pack knob


def max_accumulators(cpu: CpuTarget) -> int:
    """The most register-tile accumulators a config may hold: three quarters of the register
    file (24 of AVX-512's 32, 12 of AVX2's 16; the rest hold a step's operands)."""
    return cpu.registers * 3 // 4


Config = dict[str, list[int] | int]


class SearchSpace(KnobSpace):
    """Knobs and their candidates on the CPU, built from the anchor's KernelInfo."""

    def __init__(
        self,
        info: KernelInfo,
        width: int | None = None,
        threads: int = 1,
        cpu: CpuTarget | None = None,
    ):
        super().__init__(info)
        self.width = width or host_vector_width()
        self.cpu = (cpu or cpu_target()).with_width(self.width)
        self.max_accumulators = max_accumulators(self.cpu)
        self.threads = max(1, threads)
        self.default = default_schedule(info, self.width, self.cpu)
        self.threaded_default = parallel_schedule(self.default, info, self.threads)
        # each knob's candidates, as passes/schedule/space.py enumerates them
        self.vectors = vector_space(info, reduction_width=self.width)
        regs = register_tile_space(info, self.width, self.default, self.max_accumulators)
        self.reg_scalar, self.reg_vector, self.unrolls = (
            regs.scalar,
            regs.vector,
            regs.reduction_unrolls,
        )
        self.tile_cands = tile_space(info, [self.default, self.threaded_default])
        self.orders = order_space(info)
        self.packs = pack_space(info)
        self.size = self._count()

    # -- candidates under constraints --------------------------------------------------------

    def reg_candidates(self, d: int, vector: int) -> list[int]:
        return self.reg_vector[d] if d == vector else self.reg_scalar[d]

    def tile_candidates(self, d: int, reg: int) -> list[int]:
        """Cache tiles of loop d allowed with register tile `reg` (0 always is)."""
        if self.info.iterators[d] == "reduction":
            return [0, *self.tile_cands[d]]
        # with threads, a tile of one register tile is a useful parallel chunk
        smallest = reg if self.threads > 1 else reg + 1
        return [0, *(t for t in self.tile_cands[d] if t >= smallest and t % reg == 0)]

    def acc_factor(self, d: int, reg: int, vector: int) -> int:
        return math.ceil(reg / self.width) if d == vector else reg

    def accumulators(self, config: Config) -> int:
        reg, v = config["reg"], config["vector"]
        assert isinstance(reg, list) and isinstance(v, int)
        return math.prod(self.acc_factor(d, reg[d], v) for d in self.parallel)

    def _count(self) -> int:
        total = 0
        for v in self.vectors:
            # DP over parallel loops: accumulator product -> number of (reg, tile) choices
            ways = {1: 1}
            for d in self.parallel:
                nxt: dict[int, int] = {}
                for acc, cnt in ways.items():
                    for r in self.reg_candidates(d, v):
                        a = acc * self.acc_factor(d, r, v)
                        if a <= self.max_accumulators:
                            nxt[a] = nxt.get(a, 0) + cnt * len(self.tile_candidates(d, r))
                ways = nxt
            total += sum(ways.values())
        for d in self.reductions:
            total *= len(self.tile_candidates(d, 1))
        orders = sum(len(self.parallel_choices(o)) for o in self.orders)
        # an upper bound: a pack config counts even where its panels do not fit the tiles
        return total * len(self.unrolls) * orders * len(self.packs)

    def leading_parallel(self, order: list[int]) -> int:
        """How many loops at the front of `order` are parallel iterators."""
        return leading_parallel_loops(self.info, order)

    def parallel_choices(self, order: list[int]) -> list[int]:
        """Values of the `parallel` knob with this order ([0] in a one-thread space)."""
        return parallel_space(self.info, order, self.threads)

    def pack_fits(self, pack: list[int], tile: list[int]) -> bool:
        """Whether the panels of `pack` fit (check_pack) with these cache tiles."""
        if not pack:
            return True
        try:
            check_pack(
                Schedule(tuple(tile), tuple(range(self.n)), (1,) * self.n, pack=tuple(pack)),
                self.info,
            )
        except ValueError:
            return False
        return True

    def pack_choices(self, tile: list[int]) -> list[list[int]]:
        return [p for p in self.packs if self.pack_fits(p, tile)]

    # -- configs ------------------------------------------------------------------------------

    def _make(
        self,
        vector: int,
        reg: list[int],
        tile: list[int],
        unroll: int,
        order: list[int],
        parallel: int = 0,
        pack: list[int] | None = None,
    ) -> Config:
        pack = list(pack or [])
        if not self.pack_fits(pack, tile):  # a tile change outgrew the panel: pack less
            pack = max((p for p in self.pack_choices(tile) if set(p) <= set(pack)), key=len)
        cfg: Config = {
            "order": list(order),
            "pack": pack,
            "reg": list(reg),
            "tile": list(tile),
            "unroll": unroll,
            "vector": vector,
        }
        # one-thread configs keep their PR-1 form (and their records stay valid)
        if self.threads > 1:
            cfg["parallel"] = min(parallel, self.leading_parallel(list(order)))
        return cfg

    def sample(self, rng: random.Random) -> Config:
        v = rng.choice(self.vectors)
        reg = [1] * self.n
        tile = [0] * self.n
        acc = 1
        loops = list(self.parallel)
        rng.shuffle(loops)  # no loop is favoured by the accumulator budget
        for d in loops:
            cands = [
                r
                for r in self.reg_candidates(d, v)
                if acc * self.acc_factor(d, r, v) <= self.max_accumulators
            ]
            reg[d] = rng.choice(cands)
            acc *= self.acc_factor(d, reg[d], v)
            tile[d] = rng.choice(self.tile_candidates(d, reg[d]))
        for d in self.reductions:
            tile[d] = rng.choice(self.tile_candidates(d, 1))
        unroll, order = rng.choice(self.unrolls), rng.choice(self.orders)
        parallel = rng.choice(self.parallel_choices(order)) if self.threads > 1 else 0
        return self._make(
            v, reg, tile, unroll, order, parallel, rng.choice(self.pack_choices(tile))
        )

    def _fix_loop(self, cfg: Config, d: int, rng: random.Random, prefer: int | None = None) -> None:
        """Give parallel loop d a register tile valid for cfg's vector loop and budget, and a
        compatible cache tile (keeping the current one when it still fits)."""
        reg, tile, v = cfg["reg"], cfg["tile"], cfg["vector"]
        assert isinstance(reg, list) and isinstance(tile, list) and isinstance(v, int)
        others = math.prod(self.acc_factor(e, reg[e], v) for e in self.parallel if e != d)
        cands = [
            r
            for r in self.reg_candidates(d, v)
            if others * self.acc_factor(d, r, v) <= self.max_accumulators
        ]
        if prefer is not None and prefer in cands:
            reg[d] = prefer
        elif reg[d] not in cands:
            reg[d] = rng.choice(cands)
        if tile[d] not in self.tile_candidates(d, reg[d]):
            tile[d] = 0

    def _mutation_knobs(self) -> list[Knob]:
        knobs: list[Knob] = []
        if len(self.vectors) > 1:
            knobs.append(("vector", -1))
        for d in self.parallel:
            knobs.append(("reg", d))
        for d in range(self.n):
            knobs.append(("tile", d))
        if len(self.unrolls) > 1:
            knobs.append(("unroll", -1))
        if len(self.orders) > 1:
            knobs.append(("order", -1))
        if self.threads > 1:
            knobs.append(("parallel", -1))
        if len(self.packs) > 1:
            knobs.append(("pack", -1))
        return knobs

    def _mutate_knob(self, config: Config, knob: Knob, rng: random.Random) -> Config | None:
        name, d = knob
        cfg = json.loads(json.dumps(config))
        reg, tile = cfg["reg"], cfg["tile"]
        if name == "vector":
            old = cfg["vector"]
            cfg["vector"] = rng.choice([x for x in self.vectors if x != old])
            new = cfg["vector"]
            # (a reduction vector loop has no register tile: its partials are the unroll)
            parallel = set(self.parallel)
            for e in (old, new):
                if e in parallel:
                    # keep the number of register-tile steps along the loop when possible
                    steps = reg[e] // self.width if e == old else reg[e]
                    self._fix_loop(cfg, e, rng, prefer=steps * self.width if e == new else steps)
            if old in parallel:  # the old loop may still exceed the budget with the new one
                self._fix_loop(cfg, old, rng)
            if new in parallel:
                self._fix_loop(cfg, new, rng)
            return self._canonical(cfg)
        if name == "reg":
            v = cfg["vector"]
            others = math.prod(self.acc_factor(e, reg[e], v) for e in self.parallel if e != d)
            cands = [
                r
                for r in self.reg_candidates(d, v)
                if r != reg[d] and others * self.acc_factor(d, r, v) <= self.max_accumulators
            ]
            if not cands:
                return None
            reg[d] = rng.choice(cands)
            if tile[d] not in self.tile_candidates(d, reg[d]):
                tile[d] = 0
            return self._canonical(cfg)
        if name == "tile":
            cands = [t for t in self.tile_candidates(d, reg[d]) if t != tile[d]]
            if not cands:
                return None
            tile[d] = rng.choice(cands)
            return self._canonical(cfg)
        if name == "unroll":
            cfg["unroll"] = rng.choice([u for u in self.unrolls if u != cfg["unroll"]])
            return self._canonical(cfg)
        if name == "order":
            cfg["order"] = rng.choice([o for o in self.orders if o != cfg["order"]])
            return self._canonical(cfg)
        if name == "pack":
            packs = [p for p in self.pack_choices(tile) if p != cfg["pack"]]
            if not packs:
                return None
            cfg["pack"] = rng.choice(packs)
            return self._canonical(cfg)
        # the parallel knob
        cands = [p for p in self.parallel_choices(cfg["order"]) if p != cfg["parallel"]]
        if not cands:
            return None
        cfg["parallel"] = rng.choice(cands)
        return self._canonical(cfg)

    def configs(self) -> Iterator[Config]:
        """Every config of the space (for small spaces: the search enumerates them at the end)."""
        for v in self.vectors:
            per_loop = []
            for d in range(self.n):
                if d in self.reductions:
                    per_loop.append([(1, t) for t in self.tile_candidates(d, 1)])
                else:
                    per_loop.append(
                        [
                            (r, t)
                            for r in self.reg_candidates(d, v)
                            for t in self.tile_candidates(d, r)
                        ]
                    )
            for choice in itertools.product(*per_loop):
                reg, tile = [c[0] for c in choice], [c[1] for c in choice]
                if (
                    math.prod(self.acc_factor(d, reg[d], v) for d in self.parallel)
                    > self.max_accumulators
                ):
                    continue
                for unroll in self.unrolls:
                    for order in self.orders:
                        for parallel in self.parallel_choices(order):
                            for pack in self.pack_choices(tile):
                                yield self._make(v, reg, tile, unroll, order, parallel, pack)

    def _canonical(self, cfg: Config) -> Config:
        """`cfg` rebuilt by _make (fresh lists; a pack its tiles outgrew, shrunk)."""
        v, reg, tile, unroll, order = (cfg[k] for k in ("vector", "reg", "tile", "unroll", "order"))
        parallel, pack = cfg.get("parallel", 0), cfg.get("pack")
        assert isinstance(v, int) and isinstance(reg, list) and isinstance(tile, list)
        assert isinstance(unroll, int) and isinstance(order, list) and isinstance(parallel, int)
        assert pack is None or isinstance(pack, list)
        return self._make(v, reg, tile, unroll, order, parallel, pack)

    def contains(self, config: Config) -> bool:
        """Whether `config` is one of the space's configs."""
        try:
            v, reg, tile, unroll, order = (
                config[k] for k in ("vector", "reg", "tile", "unroll", "order")
            )
        except KeyError:
            return False
        keys = {"vector", "reg", "tile", "unroll", "order", "pack"} | (
            {"parallel"} if self.threads > 1 else set()
        )
        if set(config) != keys:
            return False
        if config["pack"] not in self.pack_choices(tile):  # type: ignore[arg-type]
            return False
        if self.threads > 1 and config["parallel"] not in self.parallel_choices(config["order"]):  # type: ignore[arg-type]
            return False
        if v not in self.vectors or unroll not in self.unrolls or order not in self.orders:
            return False
        if not (
            isinstance(reg, list) and isinstance(tile, list) and len(reg) == len(tile) == self.n
        ):
            return False
        for d in range(self.n):
            if d in self.reductions:
                if reg[d] != 1 or tile[d] not in self.tile_candidates(d, 1):
                    return False
            elif reg[d] not in self.reg_candidates(d, v):
                return False
            elif tile[d] not in self.tile_candidates(d, reg[d]):
                return False
        return self.accumulators(config) <= self.max_accumulators

    def to_schedule(self, config: Config) -> Schedule:
        v, reg, tile, unroll, order = (
            config[k] for k in ("vector", "reg", "tile", "unroll", "order")
        )
        assert isinstance(v, int) and isinstance(reg, list) and isinstance(tile, list)
        assert isinstance(unroll, int) and isinstance(order, list)
        u = list(reg)
        if self.reductions:
            # along a reduction vector loop the unroll counts vectors (the partials per output)
            # (at most the loop's vectors: what legalize would cut it to)
            r = self.reductions[-1]
            vectors = -(-self.extents[r] // self.width)
            u[r] = min(unroll, vectors) * self.width if v == r else unroll
        p, pack = config.get("parallel", 0), config.get("pack", [])
        assert isinstance(p, int) and isinstance(pack, list)
        return Schedule(
            tuple(tile), tuple(order), tuple(u), v, self.width if v >= 0 else 1, p, tuple(pack)
        )

    def to_passes(self, config: Config, op_index: int, kernel: str = "") -> list[str]:
        """Pass specs that turn any schedule of the anchor into to_schedule(config)."""
        s = self.to_schedule(config)
        passes = schedule_passes(s, op_index, kernel)
        if self.threads > 1:
            passes.append(f"parallelize{{loops={s.parallel}{where_option(op_index, kernel)}}}")
        return passes

    def definition(self) -> dict[str, Any]:
        definition: dict[str, Any] = {
            "version": SPACE_VERSION,
            "width": self.width,
            "max_accumulators": self.max_accumulators,
            "extents": self.extents,
            "iterators": self.info.iterators,
            "vectors": self.vectors,
            "reg_scalar": [self.reg_scalar[d] for d in self.parallel],
            "reg_vector": [self.reg_vector[d] for d in self.parallel],
            "tiles": [self.tile_cands[d] for d in range(self.n)],
            "unrolls": self.unrolls,
            "orders": self.orders,
            "packs": self.packs,
        }
        if self.threads > 1:
            definition["threads"] = self.threads
        return definition

    def default_config(self) -> Config:
        """The analytic default schedule (parallelized in a threaded space), projected onto the space."""
        s = self.threaded_default
        v = s.vector if s.vector in self.vectors else -1
        order = list(s.order) if list(s.order) in self.orders else self.orders[-1]
        red_unroll = s.unroll[self.reductions[-1]] if self.reductions else 1
        if self.reductions and v == self.reductions[-1]:
            red_unroll //= self.width
        if red_unroll not in self.unrolls:
            red_unroll = max(u for u in self.unrolls if u <= red_unroll)
        cfg = self._make(v, [1] * self.n, [0] * self.n, red_unroll, order, s.parallel)
        reg, tile = cfg["reg"], cfg["tile"]
        assert isinstance(reg, list) and isinstance(tile, list)
        for d in self.reductions:
            tile[d] = s.tile[d] if s.tile[d] in self.tile_candidates(d, 1) else 0
        for d in self.parallel:  # the vector loop first: it owns most of the budget
            reg[d] = self.reg_candidates(d, v)[0]
        for d in sorted(self.parallel, key=lambda d: d != v):
            want = s.unroll[d]
            others = math.prod(self.acc_factor(e, reg[e], v) for e in self.parallel if e != d)
            cands = [
                r
                for r in self.reg_candidates(d, v)
                if others * self.acc_factor(d, r, v) <= self.max_accumulators
            ]
            reg[d] = min(cands, key=lambda r: (abs(r - want), r))
            tile[d] = s.tile[d] if s.tile[d] in self.tile_candidates(d, reg[d]) else 0
        return cfg


__all__ = ["SPACE_VERSION", "Config", "SearchSpace", "schedule_passes", "where_option"]
