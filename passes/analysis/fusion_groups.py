"""Operator fusion groups over a dataflow graph (TVM's FuseOps, on networkx).

Pure analysis: nodes are ops (constants left out), edges are uses, `kinds` gives each node's
`PatternKind`. `fuse-ops` turns each group into one `graph.fused` op; keeping the grouping apart
from the IR makes it testable on plain graphs.

The rules, in priority order:

1. every OUT_FUSABLE node starts a group and takes its epilogue: from the group's exit `e`,
   the immediate post-dominator `p` of `e` joins, with every node on a path from `e` to `p`,
   when all of those are ELEMENTWISE/BROADCAST and not grouped yet; repeated from `p`.
   A `pad` whose only user is a `conv` joins that conv's group as a prologue.
2. every REDUCTION node starts a group and takes its ELEMENTWISE/BROADCAST prologue: producers
   whose every user is already in the group.
3. the remaining ELEMENTWISE/BROADCAST/INJECTIVE nodes merge with their immediate
   post-dominator (and the nodes on the paths to it) when all of those are of the same kinds.

Every merge keeps the invariant that makes a group one kernel: exactly one member (the exit,
the last in topological order) has users outside the group or leaves the function; every other
value is produced and consumed inside. OPAQUE nodes never join a group. Groups of one light
node are dropped; OUT_FUSABLE and REDUCTION nodes always get their own group.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import networkx as nx

from dialects.graph import PatternKind

_EPILOGUE = frozenset({PatternKind.ELEMENTWISE, PatternKind.BROADCAST})
_LIGHT = _EPILOGUE | {PatternKind.INJECTIVE}
_HEAVY = frozenset({PatternKind.OUT_FUSABLE, PatternKind.REDUCTION})


class _Sink:
    """The virtual exit every function result and every unused value flows to."""

    def __repr__(self) -> str:
        return "<sink>"


SINK = _Sink()

N = TypeVar("N", bound=Hashable)
"""The type of a graph's nodes (any hashable: ops' positions in fuse-ops, names in tests)."""


@dataclass(frozen=True)
class FusionGroup(Generic[N]):
    """Nodes in topological order (the last one is the exit) and the dominant pattern kind."""

    nodes: tuple[N, ...]
    pattern: PatternKind

    @property
    def exit(self) -> N:
        return self.nodes[-1]


def post_dominators(graph: nx.DiGraph, outputs: Iterable[N] = ()) -> dict[N, N | _Sink]:
    """Immediate post-dominator of every node; `SINK` where there is none inside the graph.

    The sink is fed by every node in `outputs` and every node without users.
    """
    rev = graph.reverse(copy=True)
    rev.add_node(SINK)
    outs = set(outputs)
    for n in graph.nodes:
        if n in outs or graph.out_degree(n) == 0:
            rev.add_edge(SINK, n)
    idom = nx.immediate_dominators(rev, SINK)
    return {n: idom[n] for n in graph.nodes}


def fusion_groups(
    graph: nx.DiGraph,
    kinds: Mapping[N, PatternKind],
    *,
    outputs: Iterable[N] = (),
    names: Mapping[N, str] | None = None,
    max_group_size: int = 32,
) -> list[FusionGroup[N]]:
    """The fusion groups of an acyclic dataflow graph, ordered by their exits.

    `outputs`: nodes whose value is also used outside the graph (function results, ops the
    graph does not model). `names`: short op names; only "pad" and "conv" matter (pad prologue).
    """
    return _Grouper(graph, kinds, set(outputs), dict(names or {}), max_group_size).run()


class _Grouper(Generic[N]):
    def __init__(
        self,
        graph: nx.DiGraph,
        kinds: Mapping[N, PatternKind],
        outputs: set[N],
        names: dict[N, str],
        max_size: int,
    ):
        if not nx.is_directed_acyclic_graph(graph):
            raise ValueError("fusion needs an acyclic dataflow graph")
        self.g = graph
        self.kinds = kinds
        self.outputs = outputs
        self.names = names
        self.max_size = max(1, max_size)
        index = {n: i for i, n in enumerate(graph.nodes)}
        self.order: list[N] = list(
            nx.lexicographical_topological_sort(graph, key=index.__getitem__)
        )
        self.pos: dict[N, int] = {n: i for i, n in enumerate(self.order)}
        self.ipdom: dict[N, N | _Sink] = post_dominators(graph, outputs)
        self.group_of: dict[N, int] = {}
        self.members: dict[int, set[N]] = {}
        self.heavy: dict[int, PatternKind | None] = {}

    # ------------------------------------------------------------------ bookkeeping

    def _new_group(self, nodes: set[N], heavy: PatternKind | None) -> int:
        gid = len(self.heavy)
        self.heavy[gid] = heavy
        self.members[gid] = set()
        self._assign(gid, nodes)
        return gid

    def _assign(self, gid: int, nodes: Iterable[N]) -> None:
        for n in nodes:
            old = self.group_of.get(n)
            if old is not None and old != gid:
                self.members[old].discard(n)
            self.group_of[n] = gid
            self.members[gid].add(n)

    def _closure(self, nodes: Iterable[N]) -> set[N]:
        """`nodes` plus every member of a group one of them is in."""
        out: set[N] = set()
        for n in nodes:
            gid = self.group_of.get(n)
            out |= self.members[gid] if gid is not None else {n}
        return out

    def _exits(self, nodes: set[N]) -> list[N]:
        """Members whose value leaves `nodes` (other users, function results, or no users)."""
        return [
            n
            for n in nodes
            if n in self.outputs
            or self.g.out_degree(n) == 0
            or any(s not in nodes for s in self.g.successors(n))
        ]

    def _valid(self, nodes: set[N]) -> bool:
        return len(nodes) <= self.max_size and len(self._exits(nodes)) == 1

    def _between(self, a: N, b: N) -> set[N]:
        """Nodes on some path from a to b, b included, a excluded.

        Such a node lies between a and b in topological order, so both searches stay inside
        that window: the cost is that of the window's reachable part, not of every descendant
        of `a` and ancestor of `b` (which made a long chain quadratic)."""
        lo, hi = self.pos[a], self.pos[b]
        down = self._reach(a, lambda n: self.pos[n] <= hi, self.g.successors)
        up = self._reach(b, lambda n: self.pos[n] >= lo, self.g.predecessors)
        return ((down & up) - {a}) | {b}

    @staticmethod
    def _reach(start: N, inside: Callable[[N], bool], step: Callable[[N], Iterable[N]]) -> set[N]:
        """`start` and the nodes reachable from it by `step` through nodes `inside`."""
        seen = {start}
        stack = [start]
        while stack:
            for m in step(stack.pop()):
                if m not in seen and inside(m):
                    seen.add(m)
                    stack.append(m)
        return seen

    # ------------------------------------------------------------------ phases

    def run(self) -> list[FusionGroup[N]]:
        for n in self.order:
            if self.kinds[n] is PatternKind.OUT_FUSABLE:
                self._out_fusable(n)
        for n in self.order:
            if self.kinds[n] is PatternKind.REDUCTION:
                self._reduction(n)
        for n in self.order:
            if self.kinds[n] in _LIGHT and self.heavy.get(self.group_of.get(n, -1)) is None:
                self._light(n)
        groups: list[FusionGroup[N]] = []
        for gid, nodes in self.members.items():
            heavy = self.heavy[gid]
            if not nodes or (heavy is None and len(nodes) < 2):
                continue
            ordered = tuple(sorted(nodes, key=self.pos.__getitem__))
            pattern = heavy or max((self.kinds[n] for n in nodes), key=lambda k: k.value)
            groups.append(FusionGroup(ordered, pattern))
        groups.sort(key=lambda grp: self.pos[grp.exit])
        return groups

    def _out_fusable(self, n: N) -> None:
        nodes = {n}
        if self.names.get(n) == "conv":
            for q in self.g.predecessors(n):
                if (
                    self.names.get(q) == "pad"
                    and q not in self.group_of
                    and q not in self.outputs
                    and set(self.g.successors(q)) == {n}
                    and len(nodes) < self.max_size
                ):
                    nodes.add(q)
        gid = self._new_group(nodes, PatternKind.OUT_FUSABLE)
        exit_ = n
        while True:
            p = self.ipdom[exit_]
            if isinstance(p, _Sink):
                return
            extra = self._between(exit_, p)
            if any(x in self.group_of or self.kinds[x] not in _EPILOGUE for x in extra):
                return
            cand = self.members[gid] | extra
            if not self._valid(cand):
                return
            self._assign(gid, extra)
            exit_ = p

    def _reduction(self, n: N) -> None:
        gid = self._new_group({n}, PatternKind.REDUCTION)
        members = self.members[gid]
        grown = True
        while grown:
            grown = False
            preds = {q for m in members for q in self.g.predecessors(m)} - members
            for q in sorted(preds, key=self.pos.__getitem__):
                if (
                    q in self.group_of
                    or q in self.outputs
                    or self.kinds[q] not in _EPILOGUE
                    or not set(self.g.successors(q)) <= members
                    or len(members) >= self.max_size
                ):
                    continue
                self._assign(gid, [q])
                grown = True

    def _light(self, n: N) -> None:
        p = self.ipdom[n]
        if isinstance(p, _Sink):
            return
        extra = self._between(n, p)
        if any(
            self.kinds[x] not in _LIGHT or self.heavy.get(self.group_of.get(x, -1)) is not None
            for x in extra
        ):
            return
        cand = self._closure({n} | extra)
        if any(self.kinds[x] not in _LIGHT for x in cand) or not self._valid(cand):
            return
        gid = self.group_of.get(n)
        if gid is None:
            gid = self._new_group(set(), None)
        self._assign(gid, cand)
