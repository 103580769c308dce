"""The base of every search space: knobs over one kernel's `#sched.schedule`, as the tuner,
the searchers and the database see them.

A space (autotune/space.py for a CPU, autotune/gpu_space.py for a GPU target) enumerates,
samples and mutates configs (small JSON objects of knobs, autotune/record.py's `Config`), says
whether one is its own, and turns one into a Schedule and into the pass specs that replay it.
What every space shares lives here: the kernel's loops, a config's key, the space hash (of the
definition each space gives), the shape of a mutation (one knob changed, the knobs tried in a
random order) and the passes that set a schedule's loop knobs.
"""

from __future__ import annotations

import hashlib
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from autotune.record import Config, config_key
from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo

Knob = tuple[str, int]
"""A knob: (config key, loop), the loop -1 for the knobs that are not per loop."""


def where_option(op_index: int, kernel: str = "") -> str:
    """The options that aim a schedule pass at one anchor: ` op=N [kernel="K"]`."""
    return f" op={op_index}" + (f' kernel="{kernel}"' if kernel else "")


def schedule_passes(s: Schedule, op_index: int, kernel: str = "") -> list[str]:
    """The loop-knob passes that set `s`'s vector loop, register tile, tiles, order and packed
    operands on the anchor, whatever schedule it had: what a record replays (every space's
    to_passes starts from these)."""
    where = where_option(op_index, kernel)

    def ints(xs: tuple[int, ...]) -> str:
        return ",".join(str(x) for x in xs)

    # vectorize first: it rounds the vector loop's register tile, which unroll-jam then sets
    vec = f"dim={s.vector} width={s.width}" if s.vector >= 0 else "dim=-1"
    pack = f"operands={ints(s.pack)}{where}" if s.pack else where.strip()
    return [
        f"vectorize{{{vec}{where}}}",
        f"unroll-jam{{factors={ints(s.unroll)}{where}}}",
        f"tile{{sizes={ints(s.tile)}{where}}}",
        f"interchange{{order={ints(s.order)}{where}}}",
        f"pack{{{pack}}}",
    ]


class KnobSpace(ABC):
    """Knobs and their candidates for one kernel's anchor (its KernelInfo)."""

    threads: int = 1
    """Host threads the configs run on (a space for more than one has a `parallel` knob)."""
    size: int
    """The number of configs (or an upper bound of it)."""

    def __init__(self, info: KernelInfo) -> None:
        self.info = info
        self.n = info.num_loops
        self.extents = list(info.extents)
        self.parallel = info.parallel_loops
        self.reductions = info.reduction_loops

    # -- what each space defines --------------------------------------------------------------

    @abstractmethod
    def sample(self, rng: random.Random) -> Config:
        """A random config of the space."""

    @abstractmethod
    def configs(self) -> Iterator[Config]:
        """Every config of the space, lazily (the search lists small spaces at the end)."""

    @abstractmethod
    def contains(self, config: Config) -> bool:
        """Whether `config` is one of the space's configs."""

    @abstractmethod
    def default_config(self) -> Config:
        """The target's default schedule, projected onto the space."""

    @abstractmethod
    def to_schedule(self, config: Config) -> Schedule:
        """The schedule `config` stands for."""

    @abstractmethod
    def to_passes(self, config: Config, op_index: int, kernel: str = "") -> list[str]:
        """Pass specs that turn any schedule of the anchor into to_schedule(config)."""

    @abstractmethod
    def definition(self) -> dict[str, Any]:
        """What defines the space (its version, the kernel, every knob's candidates): what
        `space_hash` hashes, so that records of another definition are never applied."""

    @abstractmethod
    def _mutation_knobs(self) -> list[Knob]:
        """The knobs a mutation may change, before they are shuffled."""

    @abstractmethod
    def _mutate_knob(self, config: Config, knob: Knob, rng: random.Random) -> Config | None:
        """`config` with `knob` changed to another of its candidates (the knobs that depend on
        it repaired), or None when it has no other."""

    @abstractmethod
    def _canonical(self, config: Config) -> Config:
        """`config` as the space writes it (a fresh copy)."""

    # -- what every space shares ----------------------------------------------------------------

    def key(self, config: Config) -> str:
        """The config's canonical string (record.config_key): its identity in the space."""
        return config_key(config)

    def space_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.definition(), sort_keys=True).encode()).hexdigest()

    def mutate(self, config: Config, rng: random.Random) -> Config:
        """A neighbour: one knob changed, the knobs tried in a random order (a dependent knob is
        repaired when it must be); `config` itself in a space of one config."""
        knobs = self._mutation_knobs()
        rng.shuffle(knobs)
        for knob in knobs:
            new = self._mutate_knob(config, knob, rng)
            if new is not None:
                return new
        return self._canonical(config)


__all__ = ["Config", "Knob", "KnobSpace", "schedule_passes", "where_option"]
