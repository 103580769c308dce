"""The Winograd minimal-filtering transforms F(m x m, 3 x 3) (Lavin & Gray 2016) that define
`graph.winograd_input` / `graph.winograd_output`.

A 3x3 correlation of an (m+2) x (m+2) input tile d giving an m x m output tile y is
y = AT [(G g GT) * (BT d B)] A: the input and filter are moved into an (m+2)^2-point
transform space, where the convolution is an elementwise product (summed over channels: one
matmul per point); AT brings the products back. F(2x2) needs 16 multiplications per output
tile where the direct form needs 36; F(4x4) 36 where it needs 144.

The matrices use the interpolation points 0, +-1 (F(2x2)) and 0, +-1, +-2 (F(4x4)), plus the
point at infinity: the choice with the smallest float32 error for these sizes.
"""

from __future__ import annotations

from functools import cache

import numpy as np

KERNEL = 3
"""The filter size the transforms are for."""

TILES = (2, 4)
"""The output tile sizes m with transforms here."""

_F2 = (
    [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
    [[1, 0, 0], [1 / 2, 1 / 2, 1 / 2], [1 / 2, -1 / 2, 1 / 2], [0, 0, 1]],
    [[1, 1, 1, 0], [0, 1, -1, -1]],
)
_F4 = (
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ],
    [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
)


def alpha(m: int) -> int:
    """Points per dim of the transform space: the input tile size m + 2."""
    return m + KERNEL - 1


def tile_grid(height: int, width: int, m: int) -> tuple[int, int]:
    """m x m tiles along an output's height and width, the last ones cut where it is not a whole
    number of them."""
    return -(-height // m), -(-width // m)


@cache
def matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(BT, G, AT) of F(m x m, 3 x 3) as float64: BT (a x a), G (a x 3), AT (m x a)."""
    if m not in TILES:
        raise ValueError(f"no Winograd transform for output tiles of {m}; have {list(TILES)}")
    bt, g, at = _F2 if m == 2 else _F4
    out = tuple(np.array(x, dtype=np.float64) for x in (bt, g, at))
    for a in out:
        a.setflags(write=False)
    return out  # type: ignore[return-value]


def transform_weights(w: np.ndarray, m: int) -> np.ndarray:
    """(K, C, 3, 3) filters -> U (a*a, C, K) with U[a*a_, c, k] = (G w[k, c] GT)[a, a_]: the
    matmul operand `graph.winograd_input`'s result multiplies, computed once at compile time."""
    _, g, _ = matrices(m)
    u = np.einsum("ai,kcij,bj->abck", g, w.astype(np.float64), g)
    a = alpha(m)
    return np.ascontiguousarray(u.reshape(a * a, w.shape[1], w.shape[0]), dtype=np.float32)
