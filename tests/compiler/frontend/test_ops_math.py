"""The composed math operators of the ONNX frontend (Mod, ArgMax/ArgMin, Hardmax, TopK, CumSum,
the group/RMS/Lp/mean-variance normalizations, Einsum, Swish, IsInf, Softsign, Shrink and the
inverse trigonometric and hyperbolic functions): compiled to machine code and checked against
onnx's reference evaluator, onnxruntime or float64 numpy; each refused attribute value is a
FrontendError naming the node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import import_onnx
from compiler.model import compile_model
from tests.support.references import graph_model
from tests.support.references import onnxruntime_run as onnxruntime

F, I64, I32, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL

rng = np.random.default_rng(0)


def make(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    return graph_model(nodes, inputs, outputs, inits, opset)


def ours(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return list(compile_model(model).run(feeds).values())


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return list(ReferenceEvaluator(model).run(None, feeds))


def same(got: list[np.ndarray], want: list[np.ndarray], rtol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for o, r in zip(got, want, strict=True):
        r = np.asarray(r)
        assert o.dtype == r.dtype and o.shape == r.shape, (o.dtype, r.dtype, o.shape, r.shape)
        if np.issubdtype(r.dtype, np.floating):
            np.testing.assert_allclose(o, r, rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(o, r)


def refused(model: onnx.ModelProto, *fragments: str) -> None:
    with pytest.raises(FrontendError) as e:
        import_onnx(model)
    for f in fragments:
        assert f in str(e.value), str(e.value)


# ----------------------------------------------------------------------------- Mod


def test_mod_integers_both_signs_and_traps():
    """fmod=0 takes the divisor's sign, fmod=1 the dividend's; a divisor of 0 or -1 (which
    traps in hardware: by zero, INT64_MIN / -1) gives 0 as numpy does."""
    a = rng.integers(-(2**62), 2**62, 64, dtype=np.int64)
    b = rng.integers(-50, 50, 64, dtype=np.int64)
    a[:6] = [-(2**63), -(2**63), 7, -7, 7, -7]
    b[:6] = [-1, 0, -3, 3, 3, -3]
    nodes = [
        helper.make_node("Mod", ["a", "b"], ["y0"]),
        helper.make_node("Mod", ["a", "b"], ["y1"], fmod=1),
    ]
    m = make(nodes, [("a", I64, [64]), ("b", I64, [64])], [("y0", I64), ("y1", I64)])
    with np.errstate(all="ignore"):
        want = [np.mod(a, b), np.fmod(a, b)]
    same(ours(m, {"a": a, "b": b}), want)


def test_mod_int32_broadcast():
    a = rng.integers(-1000, 1000, (3, 4), dtype=np.int32)
    b = np.array([7, -5, 3, -2], np.int32)
    m = make(
        [helper.make_node("Mod", ["a", "b"], ["y"])],
        [("a", I32, [3, 4])],
        [("y", I32)],
        inits=[("b", b)],
    )
    same(ours(m, {"a": a}), [np.mod(a, b)])


def test_mod_floats_exact_remainders():
    """Remainders are exact (as C's fmod and numpy's mod) for quotients below 2**24, however
    close to an integer the quotient rounds; infinities and zeros follow numpy."""
    n = 4096
    a = (rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))).astype(np.float32)
    b = (rng.standard_normal(n) * np.exp(rng.uniform(-8, 8, n))).astype(np.float32)
    keep = np.abs(a / b) < 2**24
    a, b = a[keep], b[keep]
    edge_a = np.array([0.0, -0.0, 0.0, -3.0, 3.0, -1.0, 1.0, np.inf, 1.0, np.nan, 0.3], np.float32)
    edge_b = np.array(
        [-2.0, 2.0, 2.0, np.inf, np.inf, -np.inf, -np.inf, 2.0, 0.0, 2.0, 0.1], np.float32
    )
    a, b = np.concatenate([a, edge_a]), np.concatenate([b, edge_b])
    nodes = [
        helper.make_node("Mod", ["a", "b"], ["y0"]),
        helper.make_node("Mod", ["a", "b"], ["y1"], fmod=1),
    ]
    m = make(nodes, [("a", F, a.shape), ("b", F, b.shape)], [("y0", F), ("y1", F)])
    got = ours(m, {"a": a, "b": b})
    with np.errstate(all="ignore"):
        want = [np.mod(a, b), np.fmod(a, b)]
    for o, r in zip(got, want, strict=True):
        np.testing.assert_array_equal(o, r)  # nan where nan, and bit-exact values
        zeros = r == 0
        np.testing.assert_array_equal(np.signbit(o[zeros]), np.signbit(r[zeros]))


def test_mod_refuses_mixed_types_and_bad_fmod():
    m = make(
        [helper.make_node("Mod", ["a", "b"], ["y"], fmod=2, name="m")],
        [("a", F, [2]), ("b", F, [2])],
        [("y", F)],
    )
    refused(m, "Mod node 'm'", "fmod must be 0 or 1")
    m = make(
        [helper.make_node("Mod", ["a", "b"], ["y"], name="m")],
        [("a", F, [2]), ("b", I64, [2])],
        [("y", F)],
    )
    refused(m, "Mod node 'm'", "one element type")


# ----------------------------------------------------------------------------- ordering


def _ties(shape, dtype=np.float32):
    return rng.integers(-3, 4, shape).astype(dtype)  # few values: many ties


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_arg_max_min_all_attributes(dtype):
    """Every (axis, keepdims, select_last_index) of ArgMax and ArgMin on tied values, in one
    model."""
    x = _ties((3, 4, 5), dtype)
    nodes, outs = [], []
    for op in ("ArgMax", "ArgMin"):
        for axis, keepdims, last in [
            (0, 0, 0),
            (0, 1, 1),
            (1, 0, 1),
            (1, 1, 0),
            (-1, 0, 0),
            (-1, 1, 1),
        ]:
            name = f"{op}_{axis + 1}_{keepdims}_{last}"
            nodes.append(
                helper.make_node(
                    op, ["x"], [name], axis=axis, keepdims=keepdims, select_last_index=last
                )
            )
            outs.append((name, I64))
    t = F if dtype == np.float32 else I64
    m = make(nodes, [("x", t, list(x.shape))], outs)
    same(ours(m, {"x": x}), onnxruntime(m, {"x": x}))


def test_arg_max_nan_is_the_largest():
    """A nan is the extreme value (numpy's argmax and onnx's reference; onnxruntime skips
    nans)."""
    x = np.array([[1, np.nan, 3, np.nan], [2, 5, 5, 0]], np.float32)
    nodes = [
        helper.make_node("ArgMax", ["x"], ["a"], axis=1),
        helper.make_node("ArgMin", ["x"], ["b"], axis=1, select_last_index=1),
    ]
    m = make(nodes, [("x", F, [2, 4])], [("a", I64), ("b", I64)])
    same(ours(m, {"x": x}), reference(m, {"x": x}))


@pytest.mark.parametrize("opset", [11, 13])
def test_hardmax(opset):
    x = _ties((2, 3, 4))
    nodes = [
        helper.make_node("Hardmax", ["x"], ["y0"]),
        helper.make_node("Hardmax", ["x"], ["y1"], axis=0),
        helper.make_node("Hardmax", ["x"], ["y2"], axis=-2),
    ]
    m = make(nodes, [("x", F, [2, 3, 4])], [("y0", F), ("y1", F), ("y2", F)], opset=opset)
    same(ours(m, {"x": x}), onnxruntime(m, {"x": x}))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_top_k_orders_and_ties(dtype):
    """Largest and smallest along every axis, ties by lower index; int64 indices."""
    x = _ties((4, 5, 6), dtype)
    nodes, outs = [], []
    for axis, largest in [(0, 1), (1, 0), (-1, 1)]:
        v, i = f"v{axis + 1}{largest}", f"i{axis + 1}{largest}"
        nodes.append(helper.make_node("TopK", ["x", "k"], [v, i], axis=axis, largest=largest))
        outs += [(v, F if dtype == np.float32 else I64), (i, I64)]
    t = F if dtype == np.float32 else I64
    m = make(nodes, [("x", t, [4, 5, 6])], outs, inits=[("k", np.array([3], np.int64))])
    same(ours(m, {"x": x}), onnxruntime(m, {"x": x}))


def test_top_k_nan_and_infinities():
    """A nan ranks above every number (as onnxruntime), whole rows sorted."""
    x = np.array([[1, np.nan, 3, np.nan, 3, -np.inf], [2, 2, 2, np.inf, np.inf, 0]], np.float32)
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["v", "i"]),
        helper.make_node("TopK", ["x", "k"], ["w", "j"], largest=0),
    ]
    m = make(
        nodes,
        [("x", F, [2, 6])],
        [("v", F), ("i", I64), ("w", F), ("j", I64)],
        inits=[("k", np.array([6], np.int64))],
    )
    got, want = ours(m, {"x": x}), onnxruntime(m, {"x": x})
    for o, r in zip(got, want, strict=True):
        np.testing.assert_array_equal(o, r)


def test_top_k_refuses_bad_k():
    def topk(k: int) -> onnx.ModelProto:
        return make(
            [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="t")],
            [("x", F, [2, 5])],
            [("v", F), ("i", I64)],
            inits=[("k", np.array([k], np.int64))],
        )

    refused(topk(6), "TopK node 't'", "K = 6 is out of range")
    m = make(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="t")],
        [("x", F, [2, 5]), ("k", I64, [1])],
        [("v", F), ("i", I64)],
    )
    refused(m, "TopK node 't'", "must be a constant")


@pytest.mark.parametrize("t, dtype", [(F, np.float32), (I32, np.int32)])
def test_cumsum_every_mode(t, dtype):
    x = rng.integers(-9, 10, (3, 4, 5)).astype(dtype)
    nodes, outs = [], []
    for axis in (0, 1, -1):
        for exclusive in (0, 1):
            for reverse in (0, 1):
                name = f"y{axis + 1}{exclusive}{reverse}"
                nodes.append(
                    helper.make_node(
                        "CumSum",
                        ["x", f"a{axis + 1}"],
                        [name],
                        exclusive=exclusive,
                        reverse=reverse,
                    )
                )
                outs.append((name, t))
    inits = [(f"a{a + 1}", np.int64(a)) for a in (0, 1, -1)]
    m = make(nodes, [("x", t, [3, 4, 5])], outs, inits=inits, opset=14)
    same(ours(m, {"x": x}), onnxruntime(m, {"x": x}))


def test_cumsum_refuses_a_computed_axis():
    m = make(
        [helper.make_node("CumSum", ["x", "a"], ["y"], name="c")],
        [("x", F, [3]), ("a", I64, [])],
        [("y", F)],
        opset=14,
    )
    refused(m, "CumSum node 'c'", "must be a constant")


# ----------------------------------------------------------------------------- normalization


@pytest.mark.parametrize("opset, per", [(18, "group"), (21, "channel")])
def test_group_normalization(opset, per):
    """Scale and bias per group before opset 21, per channel from it."""
    n, c, groups = 2, 6, 3
    x = rng.standard_normal((n, c, 3, 2)).astype(np.float32)
    k = groups if per == "group" else c
    scale, bias = (
        rng.standard_normal(k).astype(np.float32),
        rng.standard_normal(k).astype(np.float32),
    )
    node = helper.make_node(
        "GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, epsilon=1e-3
    )
    m = make(
        [node], [("x", F, list(x.shape))], [("y", F)], [("s", scale), ("b", bias)], opset=opset
    )
    same(ours(m, {"x": x}), reference(m, {"x": x}), rtol=1e-4)


def test_group_normalization_refusals():
    def gn(scale_len: int, **kw) -> onnx.ModelProto:
        node = helper.make_node(
            "GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=2, **kw
        )
        p = np.ones(scale_len, np.float32)
        return make([node], [("x", F, [1, 4, 3])], [("y", F)], [("s", p), ("b", p)], opset=21)

    refused(gn(2), "GroupNormalization node 'gn'", "scale must have shape [4]")
    refused(gn(4, stash_type=11), "GroupNormalization node 'gn'", "stash_type 11")


def test_rms_normalization():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    nodes = [
        helper.make_node("RMSNormalization", ["x", "s1"], ["y1"]),
        helper.make_node("RMSNormalization", ["x", "s2"], ["y2"], axis=1, epsilon=1e-2),
        helper.make_node("RMSNormalization", ["x", "s0"], ["y0"], axis=-3),
    ]
    inits = [
        ("s1", rng.standard_normal(4).astype(np.float32)),
        ("s2", rng.standard_normal((3, 4)).astype(np.float32)),
        ("s0", np.float32(1.5)),
    ]
    m = make(nodes, [("x", F, [2, 3, 4])], [("y1", F), ("y2", F), ("y0", F)], inits, opset=23)
    same(ours(m, {"x": x}), reference(m, {"x": x}), rtol=1e-5)


def test_lp_and_mean_variance_normalization():
    """L1 divides by the sum of magnitudes (onnx 1.23's reference forgets the abs), a zero
    norm gives 0; mean-variance is (x - mean) / (std + 1e-9)."""
    x = rng.standard_normal((2, 3, 4, 2)).astype(np.float32)
    x[0, 0, :, 0] = 0.0
    nodes = [
        helper.make_node("LpNormalization", ["x"], ["l2"]),
        helper.make_node("LpNormalization", ["x"], ["l1"], p=1, axis=2),
        helper.make_node("MeanVarianceNormalization", ["x"], ["mvn"]),
        helper.make_node("MeanVarianceNormalization", ["x"], ["mvn1"], axes=[1]),
    ]
    m = make(nodes, [("x", F, list(x.shape))], [(n, F) for n in ("l2", "l1", "mvn", "mvn1")])
    l2 = np.sqrt((x * x).sum(axis=-1, keepdims=True))
    l1 = np.abs(x).sum(axis=2, keepdims=True)
    with np.errstate(all="ignore"):
        want = [np.where(l2 == 0, 0, x / l2), np.where(l1 == 0, 0, x / l1)]

    def mvn(axes):
        d = x - x.mean(axis=axes, keepdims=True)
        return d / (np.sqrt((d * d).mean(axis=axes, keepdims=True)) + 1e-9)

    want += [mvn((0, 2, 3)), mvn((1,))]
    same(ours(m, {"x": x}), [w.astype(np.float32) for w in want], rtol=1e-5)
    m = make(
        [helper.make_node("LpNormalization", ["x"], ["y"], p=3, name="lp")],
        [("x", F, [2, 3])],
        [("y", F)],
    )
    refused(m, "LpNormalization node 'lp'", "p must be 1 or 2")


# ----------------------------------------------------------------------------- Einsum

EINSUMS = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),  # batched matmul
    ("ij,kj->ik", [(3, 4), (5, 4)]),  # transposed operand
    ("abc,cbd->ad", [(2, 3, 4), (4, 3, 5)]),  # two contracted labels
    ("i,j->ij", [(3,), (4,)]),  # outer product
    ("ij->", [(3, 4)]),  # total reduction
    ("ijk->kj", [(2, 3, 4)]),  # reduction and transpose
    ("ii->i", [(4, 4)]),  # diagonal
    ("ii", [(4, 4)]),  # trace (implicit output)
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),  # broadcast batch dims, implicit output
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),  # a chain
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),  # attention scores
    ("i,i", [(5,), (5,)]),  # inner product
]


@pytest.mark.parametrize("t, dtype", [(F, np.float32), (I64, np.int64)])
def test_einsum_forms(t, dtype):
    nodes, inputs, outs, feeds, want = [], [], [], {}, []
    for k, (eq, shapes) in enumerate(EINSUMS):
        names = [f"x{k}_{j}" for j in range(len(shapes))]
        for name, s in zip(names, shapes, strict=True):
            feeds[name] = (rng.standard_normal(s) * 3).astype(dtype)
            inputs.append((name, t, list(s)))
        nodes.append(helper.make_node("Einsum", names, [f"y{k}"], equation=eq))
        outs.append((f"y{k}", t))
        want.append(np.einsum(eq, *(feeds[n] for n in names)))
    m = make(nodes, inputs, outs, opset=12)
    same(ours(m, feeds), want, rtol=1e-5)


@pytest.mark.parametrize(
    "eq, shapes, message",
    [
        ("ij,jk->ik", [(2, 3)], "2 operand terms, but the node has 1 inputs"),
        ("ij->i", [(2, 3, 4)], "does not match the rank 3"),
        ("i1->i", [(2, 3)], "characters ['1']"),
        ("ij->k", [(2, 3)], "output labels ['k'] are in no input"),
        ("ij,jk->ik", [(2, 3), (4, 5)], "'j' has size 4 in input 1 but 3"),
    ],
)
def test_einsum_refusals(eq, shapes, message):
    names = [f"x{j}" for j in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=eq, name="e")
    m = make(
        [node], [(n, F, list(s)) for n, s in zip(names, shapes, strict=True)], [("y", F)], opset=12
    )
    refused(m, "Einsum node 'e'", message)


# ----------------------------------------------------------------------------- elementwise


def test_activations_and_predicates():
    x = (rng.standard_normal(64) * 3).astype(np.float32)
    x[:4] = [np.inf, -np.inf, 0.0, np.nan]
    nodes = [
        helper.make_node("Swish", ["x"], ["swish"]),
        helper.make_node("Swish", ["x"], ["swish2"], alpha=0.5),
        helper.make_node("Softsign", ["x"], ["softsign"]),
        helper.make_node("IsInf", ["x"], ["inf"]),
        helper.make_node("IsInf", ["x"], ["pos"], detect_negative=0),
        helper.make_node("IsInf", ["x"], ["neg"], detect_positive=0),
        helper.make_node("IsInf", ["x"], ["none"], detect_positive=0, detect_negative=0),
        helper.make_node("Shrink", ["x"], ["hard"]),
        helper.make_node("Shrink", ["x"], ["soft"], lambd=1.5, bias=1.5),
        helper.make_node("Tan", ["x"], ["tan"]),
    ]
    outs = [
        ("swish", F),
        ("swish2", F),
        ("softsign", F),
        ("inf", B),
        ("pos", B),
        ("neg", B),
        ("none", B),
        ("hard", F),
        ("soft", F),
        ("tan", F),
    ]
    m = make(nodes, [("x", F, [64])], outs, opset=24)
    got, want = ours(m, {"x": x}), reference(m, {"x": x})
    for (name, _), o, r in zip(outs, got, want, strict=True):
        assert o.dtype == r.dtype, name
        np.testing.assert_allclose(o, r, rtol=1e-6, atol=1e-7, err_msg=name)


def test_shrink_integers():
    x = np.arange(-6, 7, dtype=np.int64)
    nodes = [
        helper.make_node("Shrink", ["x"], ["a"], lambd=2.0, bias=1.0),
        helper.make_node("Shrink", ["x"], ["b"], lambd=1.5, bias=0.5),
    ]
    m = make(nodes, [("x", I64, [13])], [("a", I64), ("b", I64)])
    same(ours(m, {"x": x}), reference(m, {"x": x}))


def _wide(lo: float, hi: float, n: int = 2048) -> np.ndarray:
    """Magnitudes spread log-uniformly over [lo, hi], both signs."""
    v = np.exp(rng.uniform(np.log(lo), np.log(hi), n)) * rng.choice([-1.0, 1.0], n)
    return v.astype(np.float32)


def test_inverse_functions_accurate_to_1e_6():
    """The compositions are within 1e-6 relative error of float64 numpy over their domains,
    including arguments near 0 (log1p) and near the ends (|x| -> 1, huge x), with nan outside
    the domain."""
    x = {
        "Atan": _wide(1e-8, 1e30),
        "Asin": _wide(1e-8, 1.0),
        "Acos": np.concatenate([_wide(1e-8, 1.0), 1 - np.abs(_wide(1e-7, 1e-1))]),
        "Asinh": _wide(1e-8, 1e30),
        "Acosh": (1 + np.abs(_wide(1e-7, 1e30))).astype(np.float32),
        "Atanh": np.concatenate([_wide(1e-8, 0.5), np.clip(_wide(0.5, 1.0), -0.999999, 0.999999)]),
    }
    x = {
        op: np.concatenate([v.astype(np.float32), np.float32([2.0, -2.0, np.nan])])
        for op, v in x.items()
    }
    for op in ("Atan", "Asinh"):  # defined everywhere
        x[op][-3:-1] = [np.inf, -np.inf]
    nodes = [helper.make_node(op, [f"x{op}"], [f"y{op}"]) for op in x]
    m = make(nodes, [(f"x{op}", F, [len(v)]) for op, v in x.items()], [(f"y{op}", F) for op in x])
    got = ours(m, {f"x{op}": v for op, v in x.items()})
    funcs = {
        "Atan": np.arctan,
        "Asin": np.arcsin,
        "Acos": np.arccos,
        "Asinh": np.arcsinh,
        "Acosh": np.arccosh,
        "Atanh": np.arctanh,
    }
    for (op, v), o in zip(x.items(), got, strict=True):
        with np.errstate(invalid="ignore"):
            r = funcs[op](v.astype(np.float64))
        np.testing.assert_allclose(o, r, rtol=1e-6, atol=0, err_msg=op)


def test_float_only_operators_refuse_integers():
    m = make([helper.make_node("Atanh", ["x"], ["y"], name="a")], [("x", I64, [2])], [("y", I64)])
    refused(m, "Atanh node 'a'", "needs a float input")
