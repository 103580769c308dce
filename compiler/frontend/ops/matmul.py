"""Converters of the matrix products: Gemm, MatMul, Einsum."""

from __future__ import annotations

import math
import string

import numpy as np
import onnx
from xdsl.dialects.builtin import f32, i32, i64
from xdsl.ir import SSAValue

from compiler.frontend.importer import (
    Importer,
    Value,
    attrs,
    converter,
    element_type_of,
    results,
    text,
)
from dialects import graph as g


@converter("Gemm")
def convert_gemm(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    a = attrs(node)
    c = imp.value(node.input[2]) if imp.has(node, 2) else None
    return results(
        imp.emit(
            g.GemmOp(
                imp.value(node.input[0]),
                imp.value(node.input[1]),
                c,
                alpha=a.get("alpha", 1.0),
                beta=a.get("beta", 1.0),
                trans_a=a.get("transA", 0),
                trans_b=a.get("transB", 0),
            )
        )
    )


@converter("MatMul")
def convert_matmul(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    return results(imp.emit(g.MatmulOp(imp.value(node.input[0]), imp.value(node.input[1]))))


_LETTERS = frozenset(string.ascii_letters)


def _einsum_terms(
    imp: Importer, equation: str, ranks: list[int]
) -> tuple[list[list[str]], list[str]]:
    """The labels of each operand's dims and of the output's, with each `...` spelled out as
    right-aligned labels `...0`, `...1`, ... shared by all operands (numpy's rules)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise imp.error(
            f"equation '{equation}' has {len(terms)} operand terms, but the node has "
            f"{len(ranks)} inputs"
        )

    def letters(term: str, what: str) -> tuple[list[str], list[str], bool]:
        head, dots, tail = term.partition("...")
        bad = sorted({ch for ch in head + tail if ch not in _LETTERS})
        if "..." in tail or bad:
            why = "more than one '...'" if "..." in tail else f"characters {bad}"
            raise imp.error(f"equation '{equation}': {what} has {why}")
        return list(head), list(tail), bool(dots)

    n_ell = 0
    parsed = []
    for k, (term, rank) in enumerate(zip(terms, ranks, strict=True)):
        head, tail, dots = letters(term, f"term {k} ('{term}')")
        extra = rank - len(head) - len(tail)
        if extra < 0 or (extra > 0 and not dots):
            raise imp.error(
                f"equation '{equation}': term {k} ('{term}') does not match the rank "
                f"{rank} of input {k}"
            )
        parsed.append((head, tail, extra))
        n_ell = max(n_ell, extra)
    ell = [f"...{i}" for i in range(n_ell)]
    labels = [head + ell[n_ell - extra :] + tail for head, tail, extra in parsed]
    if arrow:
        head, tail, dots = letters(rhs, f"the output ('{rhs}')")
        out = head + (ell if dots else []) + tail
        if len(set(out)) != len(out):
            raise imp.error(f"equation '{equation}': the output repeats a label")
        known = {lab for ls in labels for lab in ls}
        missing = [lab for lab in out if lab not in known]
        if missing:
            raise imp.error(f"equation '{equation}': output labels {missing} are in no input")
    else:  # implicit: the broadcast dims, then the labels used once, alphabetically
        counts: dict[str, int] = {}
        for ls in labels:
            for lab in ls:
                counts[lab] = counts.get(lab, 0) + 1
        out = ell + sorted(lab for lab, c in counts.items() if c == 1 and lab not in ell)
    return labels, out


def _einsum_reduce(
    imp: Importer, x: SSAValue, labels: list[str], keep: set[str]
) -> tuple[SSAValue, list[str]]:
    """Take the diagonal of repeated labels, then sum over the labels not in `keep`."""
    while len(set(labels)) != len(labels):
        q = next(i for i, lab in enumerate(labels) if lab in labels[:i])
        p = labels.index(labels[q])
        shape = imp.shape_of(x)
        eye = np.eye(shape[p], dtype=np.bool_)
        eye = eye.reshape([shape[p] if i in (p, q) else 1 for i in range(len(shape))])
        zero = imp.scalar(0, like=x)
        masked = imp.op(g.WhereOp(imp.op(g.ConstantOp(eye)), x, zero))
        x = imp.op(g.ReduceSumOp(masked, axes=[q], keepdims=0))
        labels = labels[:q] + labels[q + 1 :]
    gone = [i for i, lab in enumerate(labels) if lab not in keep]
    if gone:
        x = imp.op(g.ReduceSumOp(x, axes=gone, keepdims=0))
        labels = [lab for lab in labels if lab in keep]
    return x, labels


def _einsum_permute(imp: Importer, x: SSAValue, labels: list[str], order: list[str]) -> SSAValue:
    perm = [labels.index(lab) for lab in order]
    return x if perm == list(range(len(perm))) else imp.op(g.TransposeOp(x, perm=perm))


def _einsum_pair(
    imp: Importer,
    a: SSAValue,
    la: list[str],
    b: SSAValue,
    lb: list[str],
    needed: set[str],
    sizes: dict[str, int],
) -> tuple[SSAValue, list[str]]:
    """The product of two operands summed over their shared labels that are not `needed`:
    a batched MatmulOp on float32 (transposed and reshaped to [batch, m, k] x [batch, k, n]),
    a broadcast multiply and ReduceSum otherwise."""
    batch = [lab for lab in la if lab in lb and lab in needed]
    inner = [lab for lab in la if lab in lb and lab not in needed]
    left = [lab for lab in la if lab not in lb]
    right = [lab for lab in lb if lab not in la]
    dims = [sizes[lab] for lab in batch + left + right]

    def size(labels: list[str]) -> int:
        return math.prod(sizes[lab] for lab in labels)

    if inner and element_type_of(a) == f32:
        at = _einsum_permute(imp, a, la, batch + left + inner)
        bt = _einsum_permute(imp, b, lb, batch + inner + right)
        a3 = imp.op(g.ReshapeOp(at, [size(batch), size(left), size(inner)]))
        b3 = imp.op(g.ReshapeOp(bt, [size(batch), size(inner), size(right)]))
        y = imp.op(g.MatmulOp(a3, b3))
        return imp.op(g.ReshapeOp(y, dims)), batch + left + right
    full = batch + left + right + inner

    def spread(x: SSAValue, labels: list[str]) -> SSAValue:
        xt = _einsum_permute(imp, x, labels, [lab for lab in full if lab in labels])
        return imp.op(g.ReshapeOp(xt, [sizes[lab] if lab in labels else 1 for lab in full]))

    y = imp.op(g.MulOp(spread(a, la), spread(b, lb)))
    if inner:
        y = imp.op(g.ReduceSumOp(y, axes=list(range(len(dims), len(full))), keepdims=0))
    return y, batch + left + right


@converter("Einsum")
def convert_einsum(imp: Importer, node: onnx.NodeProto) -> list[Value]:
    """Einstein summation with numpy's rules (implicit output, `...` broadcasting, repeated
    labels for diagonals), as a chain of pairwise contractions: each operand's diagonals and
    private labels are summed first, then operands are multiplied left to right."""
    equation = text(attrs(node)["equation"])
    xs = [imp.value(n) for n in node.input]
    els = {str(element_type_of(x)) for x in xs}
    if len(els) != 1 or element_type_of(xs[0]) not in (f32, i64, i32):
        raise imp.error(f"needs numeric inputs of one element type, got {sorted(els)}")
    labels, out = _einsum_terms(imp, equation, [len(imp.shape_of(x)) for x in xs])
    sizes: dict[str, int] = {}
    for k, (x, ls) in enumerate(zip(xs, labels, strict=True)):
        for lab, d in zip(ls, imp.shape_of(x), strict=True):
            if sizes.get(lab, 1) not in (1, d) and d != 1:
                name = f"'{lab}'" if not lab.startswith("...") else "a '...' dim"
                raise imp.error(
                    f"equation '{equation}': {name} has size {d} in input {k} but "
                    f"{sizes[lab]} elsewhere"
                )
            sizes[lab] = max(sizes.get(lab, 1), d)
    # broadcast the unit dims up front (a label has one size in every operand)
    for k, (x, ls) in enumerate(zip(xs, labels, strict=True)):
        want = [sizes[lab] for lab in ls]
        if list(imp.shape_of(x)) != want:
            xs[k] = imp.op(g.ExpandOp(x, shape=want))

    def needed_after(k: int) -> set[str]:
        return set(out).union(*(set(ls) for ls in labels[k + 1 :]))

    cur, cur_labels = _einsum_reduce(imp, xs[0], labels[0], needed_after(0))
    for k in range(1, len(xs)):
        keep = needed_after(k)
        cur, cur_labels = _einsum_reduce(imp, cur, cur_labels, keep | set(labels[k]))
        b, lb = _einsum_reduce(imp, xs[k], labels[k], keep | set(cur_labels))
        cur, cur_labels = _einsum_pair(imp, cur, cur_labels, b, lb, keep, sizes)
    cur, cur_labels = _einsum_reduce(imp, cur, cur_labels, set(out))
    y = _einsum_permute(imp, cur, cur_labels, out)
    return [y if y is not imp.lookup(node.input[0]) else imp.op(g.IdentityOp(y))]
