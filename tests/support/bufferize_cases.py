"""Hand-written TENSOR-level programs shared by the bufferize / outline-kernels tests."""

from __future__ import annotations

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, tensor
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import Linalg
from xdsl.parser import Parser

ID2 = "affine_map<(d0, d1) -> (d0, d1)>"
PAR2 = '["parallel", "parallel"]'


def context() -> Context:
    ctx = Context()
    for d in (
        builtin.Builtin,
        func.Func,
        arith.Arith,
        tensor.Tensor,
        memref.MemRef,
        math.Math,
        Linalg,
    ):
        ctx.load_dialect(d)
    return ctx


def parse(src: str) -> ModuleOp:
    return Parser(context(), src).parse_module()


def unary(name: str, x: str, init: str, t: str, op: str) -> str:
    """`%name = generic(op(x))` writing into `init` (both of type t, rank 2)."""
    return f"""
  {name} = linalg.generic {{indexing_maps = [{ID2}, {ID2}], iterator_types = {PAR2}}} ins({x} : {t}) outs({init} : {t}) {{
  ^bb0(%in: f32, %out: f32):
    %r = {op}
    linalg.yield %r : f32
  }} -> {t}"""


def binary(name: str, x: str, y: str, init: str, t: str, op: str) -> str:
    return f"""
  {name} = linalg.generic {{indexing_maps = [{ID2}, {ID2}, {ID2}], iterator_types = {PAR2}}} ins({x}, {y} : {t}, {t}) outs({init} : {t}) {{
  ^bb0(%p: f32, %q: f32, %out: f32):
    %r = {op}
    linalg.yield %r : f32
  }} -> {t}"""


T23 = "tensor<2x3xf32>"
X23 = np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5
C23 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
C23_TEXT = "dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]>"
HDR = f'func.func @main(%x: {T23} {{ziggurat.name = "x"}})'

ELEMENTWISE = f"""
{HDR} -> ({T23} {{ziggurat.name = "y"}}) {{
  %cst = arith.constant {C23_TEXT} : {T23}
  %e0 = tensor.empty() : {T23}
  {binary("%a", "%x", "%cst", "%e0", T23, "arith.addf %p, %q : f32")}
  %e1 = tensor.empty() : {T23}
  {unary("%b", "%a", "%e1", T23, "math.exp %in : f32")}
  %e2 = tensor.empty() : {T23}
  {binary("%c", "%b", "%a", "%e2", T23, "arith.mulf %p, %q : f32")}
  return %c : {T23}
}}"""


def elementwise_ref(x: np.ndarray) -> list[np.ndarray]:
    a = x + C23
    return [np.exp(a) * a]


W34 = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
MATMUL = f"""
{HDR} -> (tensor<2x4xf32> {{ziggurat.name = "y"}}) {{
  %w = arith.constant dense<{W34.tolist()}> : tensor<3x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.generic {{indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}} ins(%x, %w : {T23}, tensor<3x4xf32>) outs(%f : tensor<2x4xf32>) {{
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }} -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}}"""


def matmul_ref(x: np.ndarray) -> list[np.ndarray]:
    return [x @ W34]


# %a is the init of %b (which reads it) and is used again afterwards: a copy is required.
TWO_CONSUMERS = f"""
{HDR} -> ({T23} {{ziggurat.name = "y"}}) {{
  %e0 = tensor.empty() : {T23}
  {unary("%a", "%x", "%e0", T23, "math.exp %in : f32")}
  {unary("%b", "%x", "%a", T23, "arith.addf %in, %out : f32")}
  %e2 = tensor.empty() : {T23}
  {binary("%c", "%a", "%b", "%e2", T23, "arith.mulf %p, %q : f32")}
  return %c : {T23}
}}"""


def two_consumers_ref(x: np.ndarray) -> list[np.ndarray]:
    a = np.exp(x)
    return [a * (x + a)]


CONCAT = f"""
{HDR} -> (tensor<4x3xf32> {{ziggurat.name = "y"}}) {{
  %e0 = tensor.empty() : {T23}
  {unary("%a", "%x", "%e0", T23, "math.exp %in : f32")}
  %e1 = tensor.empty() : {T23}
  {unary("%b", "%x", "%e1", T23, "arith.mulf %in, %in : f32")}
  %e = tensor.empty() : tensor<4x3xf32>
  %c0 = tensor.insert_slice %a into %e[0, 0] [2, 3] [1, 1] : {T23} into tensor<4x3xf32>
  %c1 = tensor.insert_slice %b into %c0[2, 0] [2, 3] [1, 1] : {T23} into tensor<4x3xf32>
  return %c1 : tensor<4x3xf32>
}}"""


def concat_ref(x: np.ndarray) -> list[np.ndarray]:
    return [np.concatenate([np.exp(x), x * x])]


PAD = f"""
{HDR} -> (tensor<4x5xf32> {{ziggurat.name = "y"}}) {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %p = tensor.insert_slice %x into %f[1, 1] [2, 3] [1, 1] : {T23} into tensor<4x5xf32>
  return %p : tensor<4x5xf32>
}}"""


def pad_ref(x: np.ndarray) -> list[np.ndarray]:
    return [np.pad(x, 1)]


def _grouped(generic: str, group: int) -> str:
    """A generic's text with a fusion group attribute (as fuse-ops + lowering leave them)."""
    head, body = generic.split(") {\n", 1)
    return f"{head}) attrs = {{ziggurat.group = {group} : i64}} {{\n{body}"


PAD_OF_PRODUCED = f"""
{HDR} -> (tensor<4x5xf32> {{ziggurat.name = "y"}}) {{
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : {T23}{_grouped(unary("%a", "%x", "%e0", T23, "math.exp %in : f32"), 0)}
  %e = tensor.empty() : tensor<4x5xf32>
  %f = linalg.fill {{ziggurat.group = 1 : i64}} ins(%zero : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %p = tensor.insert_slice %a into %f[1, 1] [2, 3] [1, 1] {{ziggurat.group = 1 : i64}} : {T23} into tensor<4x5xf32>
  %e2 = tensor.empty() : tensor<4x5xf32>{_grouped(unary("%y", "%p", "%e2", "tensor<4x5xf32>", "arith.negf %in : f32"), 1)}
  return %y : tensor<4x5xf32>
}}"""
"""A pad of an intermediate (the border fill between its producer and the copy into it)."""


def pad_of_produced_ref(x: np.ndarray) -> list[np.ndarray]:
    return [-np.pad(np.exp(x), 1)]


RESHAPE = f"""
{HDR} -> (tensor<3x2xf32> {{ziggurat.name = "y"}}, tensor<6xf32> {{ziggurat.name = "flat"}}) {{
  %c = tensor.collapse_shape %x [[0, 1]] : {T23} into tensor<6xf32>
  %e = tensor.empty() : tensor<6xf32>
  %a = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}} ins(%c : tensor<6xf32>) outs(%e : tensor<6xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  }} -> tensor<6xf32>
  %r = tensor.expand_shape %a [[0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
  return %r, %a : tensor<3x2xf32>, tensor<6xf32>
}}"""


def reshape_ref(x: np.ndarray) -> list[np.ndarray]:
    return [np.exp(x).reshape(3, 2), np.exp(x).ravel()]


_EXP_TRANSPOSED_FLAT = f"""  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, {ID2}], iterator_types = {PAR2}}} ins(%x : {T23}) outs(%e : tensor<3x2xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  }} -> tensor<3x2xf32>
  %c = tensor.collapse_shape %t [[0, 1]] : tensor<3x2xf32> into tensor<6xf32>"""
"""%c = exp(x) transposed, then flattened: a kernel's result seen through a reshape."""

TRANSPOSE_RESHAPED = f"""
{HDR} -> (tensor<6xf32> {{ziggurat.name = "y"}}) {{
{_EXP_TRANSPOSED_FLAT}
  return %c : tensor<6xf32>
}}"""
"""A kernel's result returned through a reshape (a fused transpose + reshape as the output)."""


def transpose_reshaped_ref(x: np.ndarray) -> list[np.ndarray]:
    return [np.exp(x).T.ravel()]


CONCAT_OF_RESHAPED = f"""
{HDR} -> (tensor<7xf32> {{ziggurat.name = "y"}}) {{
{_EXP_TRANSPOSED_FLAT}
  %one = arith.constant dense<[2.5]> : tensor<1xf32>
  %dest = tensor.empty() : tensor<7xf32>
  %a = tensor.insert_slice %c into %dest[0] [6] [1] : tensor<6xf32> into tensor<7xf32>
  %b = tensor.insert_slice %one into %a[6] [1] [1] : tensor<1xf32> into tensor<7xf32>
  return %b : tensor<7xf32>
}}"""
"""A reshaped kernel result concatenated with a constant into the output (pack-weights' kept
columns: whole panels transposed back, then the part of the last)."""


def concat_of_reshaped_ref(x: np.ndarray) -> list[np.ndarray]:
    return [np.concatenate([np.exp(x).T.ravel(), [2.5]]).astype(np.float32)]


NESTED_CONCAT = f"""
{HDR} -> (tensor<2x8xf32> {{ziggurat.name = "y"}}) {{
  %e0 = tensor.empty() : tensor<2x3xf32>{unary("%p", "%x", "%e0", T23, "math.exp %in : f32")}
  %e1 = tensor.empty() : tensor<2x3xf32>{unary("%q", "%x", "%e1", T23, "arith.negf %in : f32")}
  %pe = tensor.expand_shape %p [[0], [1, 2]] output_shape [2, 3, 1] : {T23} into tensor<2x3x1xf32>
  %qe = tensor.expand_shape %q [[0], [1, 2]] output_shape [2, 3, 1] : {T23} into tensor<2x3x1xf32>
  %d0 = tensor.empty() : tensor<2x3x2xf32>
  %i0 = tensor.insert_slice %pe into %d0[0, 0, 0] [2, 3, 1] [1, 1, 1] : tensor<2x3x1xf32> into tensor<2x3x2xf32>
  %i1 = tensor.insert_slice %qe into %i0[0, 0, 1] [2, 3, 1] [1, 1, 1] : tensor<2x3x1xf32> into tensor<2x3x2xf32>
  %r = tensor.collapse_shape %i1 [[0], [1, 2]] : tensor<2x3x2xf32> into tensor<2x6xf32>
  %tail = arith.constant dense<[[7.0, 8.0], [9.0, 10.0]]> : tensor<2x2xf32>
  %d1 = tensor.empty() : tensor<2x8xf32>
  %o0 = tensor.insert_slice %r into %d1[0, 0] [2, 6] [1, 1] : tensor<2x6xf32> into tensor<2x8xf32>
  %o1 = tensor.insert_slice %tail into %o0[0, 6] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x8xf32>
  return %o1 : tensor<2x8xf32>
}}"""
"""Interleaved pairs (RotaryEmbedding's): two results concatenated on a new last axis, that
reshaped and concatenated again into the output: the views into the inner concatenation take the
output's row stride (8, not 6) with it."""


def nested_concat_ref(x: np.ndarray) -> list[np.ndarray]:
    pairs = np.stack([np.exp(x), -x], axis=-1).reshape(2, 6)
    return [np.concatenate([pairs, [[7.0, 8.0], [9.0, 10.0]]], axis=1).astype(np.float32)]


X46 = np.arange(24, dtype=np.float32).reshape(4, 6) / 8
SLICES = (
    """
func.func @main(%x: tensor<4x6xf32>) -> (tensor<2x3xf32>, tensor<6xf32>, tensor<2x2xf32>) {
  %s = tensor.extract_slice %x[1, 2] [2, 3] [1, 1] : tensor<4x6xf32> to tensor<2x3xf32>
  %e0 = tensor.empty() : tensor<2x3xf32>
  """
    + unary("%a", "%s", "%e0", T23, "math.exp %in : f32")
    + """
  %row = tensor.extract_slice %x[3, 0] [1, 6] [1, 1] : tensor<4x6xf32> to tensor<6xf32>
  %st = tensor.extract_slice %x[0, 1] [2, 2] [2, 3] : tensor<4x6xf32> to tensor<2x2xf32>
  %sc = tensor.collapse_shape %st [[0, 1]] : tensor<2x2xf32> into tensor<4xf32>
  %se = tensor.expand_shape %sc [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  return %a, %row, %se : tensor<2x3xf32>, tensor<6xf32>, tensor<2x2xf32>
}"""
)


def slices_ref(x: np.ndarray) -> list[np.ndarray]:
    return [np.exp(x[1:3, 2:5]), x[3], x[0:4:2, 1:6:3]]


RETURNS = f"""
{HDR} -> ({T23}, {T23}, tensor<3xf32>, {T23}) {{
  %cst = arith.constant {C23_TEXT} : {T23}
  %row = tensor.extract_slice %x[1, 0] [1, 3] [1, 1] : {T23} to tensor<3xf32>
  return %x, %cst, %row, %x : {T23}, {T23}, tensor<3xf32>, {T23}
}}"""


def returns_ref(x: np.ndarray) -> list[np.ndarray]:
    return [x, C23, x[1], x]


TABLE = np.arange(20, dtype=np.float32).reshape(5, 4) - 3
GATHER = f"""
func.func @main(%idx: tensor<3xi64>) -> tensor<3x4xf32> {{
  %table = arith.constant dense<{TABLE.tolist()}> : tensor<5x4xf32>
  %e = tensor.empty() : tensor<3x4xf32>
  %g = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0)>, {ID2}], iterator_types = {PAR2}}} ins(%idx : tensor<3xi64>) outs(%e : tensor<3x4xf32>) {{
  ^bb0(%i: i64, %out: f32):
    %row = arith.index_cast %i : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<5x4xf32>
    linalg.yield %v : f32
  }} -> tensor<3x4xf32>
  return %g : tensor<3x4xf32>
}}"""


IDX = np.array([4, 0, 2], dtype=np.int64)


def gather_ref(idx: np.ndarray) -> list[np.ndarray]:
    return [TABLE[idx]]


# name -> (program, inputs, reference)
CASES = {
    "elementwise": (ELEMENTWISE, [X23], elementwise_ref),
    "matmul": (MATMUL, [X23], matmul_ref),
    "two_consumers": (TWO_CONSUMERS, [X23], two_consumers_ref),
    "concat": (CONCAT, [X23], concat_ref),
    "pad": (PAD, [X23], pad_ref),
    "pad_of_produced": (PAD_OF_PRODUCED, [X23], pad_of_produced_ref),
    "reshape": (RESHAPE, [X23], reshape_ref),
    "transpose_reshaped": (TRANSPOSE_RESHAPED, [X23], transpose_reshaped_ref),
    "concat_of_reshaped": (CONCAT_OF_RESHAPED, [X23], concat_of_reshaped_ref),
    "nested_concat": (NESTED_CONCAT, [X23], nested_concat_ref),
    "slices": (SLICES, [X46], slices_ref),
    "returns": (RETURNS, [X23], returns_ref),
    "gather": (GATHER, [IDX], gather_ref),
}
