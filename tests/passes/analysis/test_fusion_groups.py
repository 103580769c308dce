"""fusion_groups on plain networkx graphs: TVM FuseOps rules without IR."""

from __future__ import annotations

import networkx as nx
import pytest

from dialects.graph import PatternKind
from passes.analysis.fusion_groups import SINK, fusion_groups, post_dominators

E, B, I, R, O, X = (
    PatternKind.ELEMENTWISE,
    PatternKind.BROADCAST,
    PatternKind.INJECTIVE,
    PatternKind.REDUCTION,
    PatternKind.OUT_FUSABLE,
    PatternKind.OPAQUE,
)


def dag(edges: str, kinds: dict[str, PatternKind]) -> nx.DiGraph:
    """'a>b b>c' style edges over nodes listed (in order) by `kinds`."""
    g = nx.DiGraph()
    g.add_nodes_from(kinds)
    g.add_edges_from(tuple(e.split(">")) for e in edges.split())
    return g


def groups(g: nx.DiGraph, kinds: dict[str, PatternKind], **kw) -> list[tuple[str, ...]]:
    return [grp.nodes for grp in fusion_groups(g, kinds, **kw)]


def test_post_dominators_diamond_and_outputs() -> None:
    k = dict.fromkeys("abcd", E)
    g = dag("a>b a>c b>d c>d", k)
    pd = post_dominators(g)
    assert pd == {"a": "d", "b": "d", "c": "d", "d": SINK}
    assert post_dominators(g, outputs=["b"])["a"] is SINK


def test_conv_epilogue_chain() -> None:
    k = {"conv": O, "bias": B, "relu": E, "next": O}
    g = dag("conv>bias bias>relu relu>next", k)
    assert groups(g, k) == [("conv", "bias", "relu"), ("next",)]
    grp = fusion_groups(g, k)[0]
    assert grp.pattern is O and grp.exit == "relu"


def test_conv_feeding_two_convs_takes_nothing() -> None:
    k = {"c0": O, "c1": O, "c2": O, "add": B}
    g = dag("c0>c1 c0>c2 c1>add c2>add", k)
    # c0 keeps no epilogue across the other convs; c1 (first in order) takes the join
    assert groups(g, k) == [("c0",), ("c2",), ("c1", "add")]


def test_residual_add_goes_to_one_conv() -> None:
    k = {"x": E, "c1": O, "bn1": B, "c2": O, "bn2": B, "add": B, "relu": E}
    g = dag("x>c1 x>c2 c1>bn1 c2>bn2 bn1>add bn2>add add>relu", k)
    out = groups(g, k)
    assert ("c1", "bn1", "add", "relu") in out and ("c2", "bn2") in out


def test_elementwise_with_outside_user_ends_the_group() -> None:
    k = {"conv": O, "relu": E, "neg": E}
    g = dag("conv>relu relu>neg", k)
    # relu is a function result as well: it may only be the group's exit
    out = groups(g, k, outputs=["relu"])
    assert out[0] == ("conv", "relu")
    assert all("neg" not in grp for grp in out)
    # conv itself escaping: no epilogue at all
    assert groups(g, k, outputs=["conv"])[0] == ("conv",)


def test_no_fusion_across_opaque() -> None:
    k = {"mm": O, "mul": B, "softmax": X, "exp": E, "neg": E}
    g = dag("mm>mul mul>softmax softmax>exp exp>neg", k)
    assert groups(g, k) == [("mm", "mul"), ("exp", "neg")]


def test_diamond_fuses_only_when_both_branches_end_inside() -> None:
    k = {"a": E, "b": E, "c": I, "d": B}
    g = dag("a>b a>c b>d c>d", k)
    assert groups(g, k) == [("a", "b", "c", "d")]
    # one branch leaves (b is also a function result): b cannot be inside
    out = groups(g, k, outputs=["b"])
    assert all(not ({"a", "b"} <= set(grp)) for grp in out)
    # a branch through an opaque op
    k2 = {"a": E, "b": X, "c": E, "d": B}
    out = groups(g, k2)
    assert all("b" not in grp and not {"a", "d"} <= set(grp) for grp in out)


def test_conv_diamond_epilogue() -> None:
    k = {"conv": O, "relu": E, "sig": E, "mul": B}
    g = dag("conv>relu conv>sig relu>mul sig>mul", k)
    assert groups(g, k) == [("conv", "relu", "sig", "mul")]


def test_reduction_with_prologue() -> None:
    k = {"x": E, "sq": E, "sum": R, "use": E}
    g = dag("x>sq sq>sum x>use", k)
    out = groups(g, k)
    assert ("sq", "sum") in out  # x has another user: not a prologue
    assert all("x" not in grp or "sum" not in grp for grp in out)


def test_heavy_ops_always_get_a_group_light_singletons_dropped() -> None:
    k = {"pool": R, "flat": I, "gemm": O, "sm": X, "relu": E}
    g = dag("pool>flat flat>gemm gemm>sm sm>relu", k)
    assert groups(g, k) == [("pool",), ("gemm",)]


def test_pad_prologue_only_for_conv() -> None:
    k = {"pad": I, "conv": O, "pad2": I, "mm": O}
    g = dag("pad>conv pad2>mm", k)
    names = {"pad": "pad", "conv": "conv", "pad2": "pad", "mm": "matmul"}
    assert groups(g, k, names=names) == [("pad", "conv"), ("mm",)]
    # a pad with a second user stays out
    k3 = {**k, "other": E}
    g3 = dag("pad>conv pad>other pad2>mm", k3)
    assert ("conv",) in groups(g3, k3, names=names)


def test_injective_chain_and_max_group_size() -> None:
    k = {f"n{i}": (I if i % 2 else E) for i in range(6)}
    g = dag(" ".join(f"n{i}>n{i + 1}" for i in range(5)), k)
    assert groups(g, k) == [tuple(k)]
    assert fusion_groups(g, k)[0].pattern is I
    out = groups(g, k, max_group_size=2)
    assert all(len(grp) <= 2 for grp in out)
    assert sum(len(grp) for grp in out) == 6


def test_cycle_rejected() -> None:
    k = {"a": E, "b": E}
    with pytest.raises(ValueError):
        fusion_groups(dag("a>b b>a", k), k)


class CountingDiGraph(nx.DiGraph):
    """A DiGraph that counts the adjacency lists it is asked for."""

    queries = 0

    def successors(self, n):  # type: ignore[no-untyped-def]
        CountingDiGraph.queries += 1
        return super().successors(n)

    def predecessors(self, n):  # type: ignore[no-untyped-def]
        CountingDiGraph.queries += 1
        return super().predecessors(n)

    neighbors = successors


def test_long_chain_takes_linear_work() -> None:
    """Issue 28: a chain of N elementwise ops was grouped with a descendants/ancestors search
    over the whole graph per op (quadratic: 4 million edge visits for 2,000 ops). The paths
    from an op to its post-dominator lie between the two in topological order, so the
    searches stay there: a bounded number of adjacency queries per op (about 22 here, most
    of them checking that candidate groups of up to 32 ops have one exit)."""
    n = 2000
    k = {i: E for i in range(n)}
    g = CountingDiGraph()
    g.add_nodes_from(k)
    g.add_edges_from((i, i + 1) for i in range(n - 1))
    CountingDiGraph.queries = 0
    out = groups(g, k, max_group_size=32)
    assert out == [tuple(range(s, min(s + 32, n))) for s in range(0, n, 32)]
    assert CountingDiGraph.queries < 50 * n  # the whole-graph searches made over 4 million
