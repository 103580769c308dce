"""RNN, GRU and LSTM (opsets 14-22), unrolled over their static sequence length.

Every shape is static, so a recurrent layer is a fixed chain of steps: the input projections of
all time steps are one matmul (X @ W^T + biases) done up front, and each step adds the
recurrent product H @ R^T, applies the gate activations and updates the state. Directions are
independent chains (the reverse one walks the time steps backwards); sequence_lens, constant or
not, becomes a per-step mask (t < length) that freezes the state and zeroes the output past each
batch entry's end, which handles both directions alike. Activation functions, their
alpha/beta, clip, input_forget, peepholes and linear_before_reset follow the ONNX
specification and onnxruntime's reading of it (alpha/beta are consumed only by the
activations that take them, defaults those of the corresponding ONNX operators).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from xdsl.dialects.builtin import f32, i64
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    text,
)
from dialects import graph as g

# activation name (lower case) -> (default alpha, default beta, takes alpha, takes beta)
ACTIVATIONS: dict[str, tuple[float, float, bool, bool]] = {
    "relu": (0.0, 0.0, False, False),
    "tanh": (0.0, 0.0, False, False),
    "sigmoid": (0.0, 0.0, False, False),
    "affine": (1.0, 0.0, True, True),
    "leakyrelu": (0.01, 0.0, True, False),
    "thresholdedrelu": (1.0, 0.0, True, False),
    "scaledtanh": (1.0, 1.0, True, True),
    "hardsigmoid": (0.2, 0.5, True, True),
    "elu": (1.0, 0.0, True, False),
    "softsign": (0.0, 0.0, False, False),
    "softplus": (0.0, 0.0, False, False),
}

# op type -> (gate count, default activations of one direction)
KINDS: dict[str, tuple[int, tuple[str, ...]]] = {
    "RNN": (1, ("Tanh",)),
    "GRU": (3, ("Sigmoid", "Tanh")),
    "LSTM": (4, ("Sigmoid", "Tanh", "Tanh")),
}


@dataclass(frozen=True)
class Activation:
    name: str  # lower case, a key of ACTIVATIONS
    alpha: float
    beta: float


def activations(imp: Importer, node: onnx.NodeProto, directions: int) -> list[list[Activation]]:
    """The activation functions of each direction, with their alpha/beta resolved."""
    a = attrs(node)
    per_dir = len(KINDS[node.op_type][1])
    names = [text(n) for n in a.get("activations", [])] or list(KINDS[node.op_type][1])
    if len(names) == per_dir and directions == 2:
        names = names * 2  # one list given for both directions, as onnxruntime accepts
    if len(names) != per_dir * directions:
        raise imp.error(
            f"activations must list {per_dir * directions} functions ({per_dir} per direction), "
            f"got {len(names)}: {names}"
        )
    alphas = [float(v) for v in a.get("activation_alpha", [])]
    betas = [float(v) for v in a.get("activation_beta", [])]
    out: list[Activation] = []
    for n in names:
        key = n.lower()
        if key not in ACTIVATIONS:
            known = "Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
            raise imp.error(
                f"unsupported activation function '{n}' (supported: {known}HardSigmoid, Elu, "
                "Softsign, Softplus)"
            )
        da, db, ta, tb = ACTIVATIONS[key]
        alpha = alphas.pop(0) if ta and alphas else da
        beta = betas.pop(0) if tb and betas else db
        out.append(Activation(key, alpha, beta))
    return [out[d * per_dir : (d + 1) * per_dir] for d in range(directions)]


def apply(imp: Importer, act: Activation, x: SSAValue) -> SSAValue:
    """act(x) composed of graph ops."""
    n, alpha, beta = act.name, act.alpha, act.beta
    if n == "relu":
        return imp.op(g.ReluOp(x))
    if n == "tanh":
        return imp.op(g.TanhOp(x))
    if n == "sigmoid":
        return imp.op(g.SigmoidOp(x))
    if n == "affine":
        return imp.op(g.AddOp(imp.op(g.MulOp(x, imp.scalar(alpha))), imp.scalar(beta)))
    if n == "leakyrelu":
        return imp.op(g.LeakyReluOp(x, alpha=alpha))
    if n == "thresholdedrelu":
        above = imp.op(g.GreaterOp(x, imp.scalar(alpha)))
        return imp.op(g.WhereOp(above, x, imp.scalar(0.0)))
    if n == "scaledtanh":
        t = imp.op(g.TanhOp(imp.op(g.MulOp(x, imp.scalar(beta)))))
        return imp.op(g.MulOp(t, imp.scalar(alpha)))
    if n == "hardsigmoid":
        return imp.op(g.HardSigmoidOp(x, alpha=alpha, beta=beta))
    if n == "elu":  # max(x, 0) + alpha * (exp(min(x, 0)) - 1)
        e = imp.op(g.ExpOp(imp.op(g.MinOp(x, imp.scalar(0.0)))))
        neg = imp.op(g.MulOp(imp.op(g.SubOp(e, imp.scalar(1.0))), imp.scalar(alpha)))
        return imp.op(g.AddOp(imp.op(g.ReluOp(x)), neg))
    if n == "softsign":
        return imp.op(g.DivOp(x, imp.op(g.AddOp(imp.op(g.AbsOp(x)), imp.scalar(1.0)))))
    assert n == "softplus"  # max(x, 0) + log(1 + exp(-|x|)): no overflow
    t = imp.op(g.ExpOp(imp.op(g.NegOp(imp.op(g.AbsOp(x))))))
    return imp.op(
        g.AddOp(imp.op(g.ReluOp(x)), imp.op(g.LogOp(imp.op(g.AddOp(t, imp.scalar(1.0))))))
    )


def split(imp: Importer, x: SSAValue, axis: int, parts: int) -> list[SSAValue]:
    """x cut into `parts` equal pieces along `axis`."""
    size = imp.shape_of(x)[axis] // parts
    if parts == 1:
        return [x]
    return list(imp.emit(g.SplitOp(x, axis=axis, sizes=[size] * parts)).results)


def _take(imp: Importer, x: SSAValue, d: int) -> SSAValue:
    """x[d] of a per-direction tensor (direction axis first), without that axis."""
    s = imp.shape_of(x)
    if s[0] == 1:
        return imp.op(g.ReshapeOp(x, list(s[1:])))
    piece = split(imp, x, 0, s[0])[d]
    return imp.op(g.ReshapeOp(piece, list(s[1:])))


def _clip(imp: Importer, x: SSAValue, clip: float | None) -> SSAValue:
    return x if clip is None else imp.op(g.ClipOp(x, min=-clip, max=clip))


def _mask(imp: Importer, lens: np.ndarray | SSAValue | None, t: int, batch: int) -> SSAValue | None:
    """(B, 1) bool: whether step t is inside each batch entry's sequence (None: all are)."""
    if lens is None:
        return None
    if isinstance(lens, np.ndarray):
        m = (t < lens).reshape(batch, 1)
        return None if m.all() else imp.op(g.ConstantOp(m))
    return imp.op(g.LessOp(imp.op(g.ConstantOp(np.asarray(t, dtype=np.int64))), lens))


@converter("RNN", "GRU", "LSTM")
def convert_recurrent(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    kind = node.op_type
    gates = KINDS[kind][0]
    a = attrs(node)
    layout = int(a.get("layout", 0))
    if layout not in (0, 1):
        raise imp.error(f"layout must be 0 or 1, got {layout}")
    direction = text(a.get("direction", "forward"))
    if direction not in ("forward", "reverse", "bidirectional"):
        raise imp.error(f"direction must be forward, reverse or bidirectional, got '{direction}'")
    dirs = 2 if direction == "bidirectional" else 1
    clip = float(a["clip"]) if "clip" in a else None
    if clip is not None and clip <= 0:
        raise imp.error(f"clip must be positive, got {clip}")
    lbr = int(a.get("linear_before_reset", 0))
    input_forget = int(a.get("input_forget", 0))
    acts = activations(imp, node, dirs)

    x = imp.value(node.input[0])
    if element_type_of(x) != f32:
        raise imp.error(f"X must be float32, got {element_type_of(x)}")
    xs = imp.shape_of(x)
    if len(xs) != 3:
        raise imp.error(f"X must have rank 3, got shape {list(xs)}")
    if layout == 1:
        x = imp.op(g.TransposeOp(x, perm=[1, 0, 2]))
    seq, batch, _ = imp.shape_of(x)
    w, r = imp.value(node.input[1]), imp.value(node.input[2])
    ws, rs = imp.shape_of(w), imp.shape_of(r)
    hidden = int(a["hidden_size"]) if "hidden_size" in a else rs[-1]
    gh = gates * hidden
    if ws != (dirs, gh, xs[2]):
        raise imp.error(f"W must have shape {[dirs, gh, xs[2]]}, got {list(ws)}")
    if rs != (dirs, gh, hidden):
        raise imp.error(f"R must have shape {[dirs, gh, hidden]}, got {list(rs)}")
    if seq == 0 or batch == 0:
        raise imp.error("X must have a non-empty sequence and batch")

    def opt(i: int, shape: list[int], what: str) -> SSAValue | None:
        if not imp.has(node, i):
            return None
        v = imp.value(node.input[i])
        if imp.shape_of(v) != tuple(shape):
            raise imp.error(f"{what} must have shape {shape}, got {list(imp.shape_of(v))}")
        return v

    bias = opt(3, [dirs, 2 * gh], "B")
    lens: np.ndarray | SSAValue | None = None
    if imp.has(node, 4):
        lens_c = imp.const(node.input[4])
        if lens_c is not None:
            if lens_c.shape != (batch,) or not np.issubdtype(lens_c.dtype, np.integer):
                raise imp.error(
                    f"sequence_lens must be {batch} integers, got {lens_c.dtype} of shape "
                    f"{list(lens_c.shape)}"
                )
            if ((lens_c < 0) | (lens_c > seq)).any():
                raise imp.error(f"sequence_lens must lie in [0, {seq}], got {lens_c.tolist()}")
            lens = lens_c.astype(np.int64)
        else:
            lv = opt(4, [batch], "sequence_lens")
            assert lv is not None
            if element_type_of(lv) != i64:
                lv = imp.op(g.CastOp(lv, to="i64"))
            lens = imp.op(g.ReshapeOp(lv, [batch, 1]))
    state_shape = [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]

    def state(i: int, what: str) -> SSAValue | None:
        v = opt(i, state_shape, what)
        if v is not None and layout == 1:
            v = imp.op(g.TransposeOp(v, perm=[1, 0, 2]))
        return v

    h0 = state(5, "initial_h")
    c0 = state(6, "initial_c") if kind == "LSTM" else None
    peep = opt(7, [dirs, 3 * hidden], "P") if kind == "LSTM" else None

    zeros = imp.op(g.ConstantOp(np.zeros((batch, hidden), dtype=np.float32)))
    ys: list[list[SSAValue]] = []
    hs: list[SSAValue] = []
    cs: list[SSAValue] = []
    for d in range(dirs):
        wt = imp.op(g.TransposeOp(_take(imp, w, d), perm=[1, 0]))  # (I, G*H)
        rt = imp.op(g.TransposeOp(_take(imp, r, d), perm=[1, 0]))  # (H, G*H)
        xw = imp.op(g.MatmulOp(x, wt))  # (T, B, G*H)
        rb_h: SSAValue | None = None  # GRU's recurrent bias of h, when it cannot fold
        if bias is not None:
            wb, rb = split(imp, _take(imp, bias, d), 0, 2)
            if kind == "GRU":
                # the recurrent bias of the h gate sits inside r * (...) for GRU
                rbz, rbr, rbh = split(imp, rb, 0, 3)
                zr = imp.op(g.ConcatOp([rbz, rbr, imp.op(g.MulOp(rbh, imp.scalar(0.0)))], 0))
                xw = imp.op(g.AddOp(xw, imp.op(g.AddOp(wb, zr))))
                rb_h = rbh
            else:
                xw = imp.op(g.AddOp(xw, imp.op(g.AddOp(wb, rb))))
        steps = [imp.op(g.ReshapeOp(p, [batch, gh])) for p in split(imp, xw, 0, seq)]
        pi = po = pf = None
        if peep is not None:
            pi, po, pf = split(imp, _take(imp, peep, d), 0, 3)
        h = _take(imp, h0, d) if h0 is not None else zeros
        c = _take(imp, c0, d) if c0 is not None else zeros
        f_act = acts[d]
        backwards = direction == "reverse" or d == 1
        order = range(seq - 1, -1, -1) if backwards else range(seq)
        y_dir: list[SSAValue | None] = [None] * seq
        for t in order:
            xt = steps[t]
            if kind == "RNN":
                pre = imp.op(g.AddOp(xt, imp.op(g.MatmulOp(h, rt))))
                h_new = apply(imp, f_act[0], _clip(imp, pre, clip))
                c_new = c
            elif kind == "GRU":
                xz, xr, xh = split(imp, xt, 1, 3)
                rtz, rtr, rth = split(imp, rt, 1, 3)
                hzr = split(imp, imp.op(g.MatmulOp(h, imp.op(g.ConcatOp([rtz, rtr], 1)))), 1, 2)
                z = apply(imp, f_act[0], _clip(imp, imp.op(g.AddOp(xz, hzr[0])), clip))
                rg = apply(imp, f_act[0], _clip(imp, imp.op(g.AddOp(xr, hzr[1])), clip))
                if lbr:
                    hr = imp.op(g.MatmulOp(h, rth))
                    if rb_h is not None:
                        hr = imp.op(g.AddOp(hr, rb_h))
                    pre_h = imp.op(g.AddOp(xh, imp.op(g.MulOp(rg, hr))))
                else:
                    pre_h = imp.op(g.AddOp(xh, imp.op(g.MatmulOp(imp.op(g.MulOp(rg, h)), rth))))
                    if rb_h is not None:
                        pre_h = imp.op(g.AddOp(pre_h, rb_h))
                hh = apply(imp, f_act[1], _clip(imp, pre_h, clip))
                # (1 - z) * hh + z * h = hh + z * (h - hh)
                h_new = imp.op(g.AddOp(hh, imp.op(g.MulOp(z, imp.op(g.SubOp(h, hh))))))
                c_new = c
            else:
                pre = imp.op(g.AddOp(xt, imp.op(g.MatmulOp(h, rt))))
                gi, go, gf, gc = split(imp, pre, 1, 4)
                if pi is not None:
                    gi = imp.op(g.AddOp(gi, imp.op(g.MulOp(pi, c))))
                i_g = apply(imp, f_act[0], _clip(imp, gi, clip))
                if input_forget:
                    f_g = imp.op(g.SubOp(imp.scalar(1.0), i_g))
                else:
                    if pf is not None:
                        gf = imp.op(g.AddOp(gf, imp.op(g.MulOp(pf, c))))
                    f_g = apply(imp, f_act[0], _clip(imp, gf, clip))
                c_g = apply(imp, f_act[1], _clip(imp, gc, clip))
                c_new = imp.op(g.AddOp(imp.op(g.MulOp(f_g, c)), imp.op(g.MulOp(i_g, c_g))))
                if po is not None:
                    go = imp.op(g.AddOp(go, imp.op(g.MulOp(po, c_new))))
                o_g = apply(imp, f_act[0], _clip(imp, go, clip))
                h_new = imp.op(g.MulOp(o_g, apply(imp, f_act[2], c_new)))
            m = _mask(imp, lens, t, batch)
            if m is None:
                y_dir[t] = h_new
                h, c = h_new, c_new
            else:
                y_dir[t] = imp.op(g.WhereOp(m, h_new, zeros))
                h = imp.op(g.WhereOp(m, h_new, h))
                if kind == "LSTM":
                    c = imp.op(g.WhereOp(m, c_new, c))
        ys.append([v for v in y_dir if v is not None])
        hs.append(h)
        cs.append(c)

    def stack(vs: list[SSAValue], shape: list[int], axis: int) -> SSAValue:
        parts = [imp.op(g.ReshapeOp(v, shape)) for v in vs]
        return parts[0] if len(parts) == 1 else imp.op(g.ConcatOp(parts, axis))

    # Y: (T, D, B, H); Y_h, Y_c: (D, B, H); layout 1 puts the batch first
    y = stack([_time_stack(imp, yd) for yd in ys], [seq, 1, batch, hidden], 1)
    y_h = stack(hs, [1, batch, hidden], 0)
    y_c = stack(cs, [1, batch, hidden], 0)
    if layout == 1:
        y = imp.op(g.TransposeOp(y, perm=[2, 0, 1, 3]))
        y_h = imp.op(g.TransposeOp(y_h, perm=[1, 0, 2]))
        y_c = imp.op(g.TransposeOp(y_c, perm=[1, 0, 2]))
    return [y, y_h, y_c] if kind == "LSTM" else [y, y_h]


def _time_stack(imp: Importer, vs: list[SSAValue]) -> SSAValue:
    """The per-step (B, H) outputs of one direction as (T, 1, B, H)."""
    b, h = imp.shape_of(vs[0])
    parts = [imp.op(g.ReshapeOp(v, [1, 1, b, h])) for v in vs]
    return parts[0] if len(parts) == 1 else imp.op(g.ConcatOp(parts, 0))
