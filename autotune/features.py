"""Analytic features of (kernel, schedule) pairs for the cost model, computed with numpy in batch.

Everything is derived from the anchor's KernelInfo (extents, access coefficients) and the
`Schedule` values, never from generated IR, so thousands of configs score per second. The
loop nest modelled is the one convert-linalg-to-loops emits: cache-tile loops, point loops over
the parallel loops stepping by the register tile, the register tile (accumulators), and the
reduction loops inside it, the innermost unrolled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dialects.sched import Schedule
from passes.analysis.kernel_access import KernelInfo

MAX_LOOPS = 8
MAX_OPERANDS = 4
ELEMENT_BYTES = 4
L1_BYTES = 32 * 1024
L2_BYTES = 1024 * 1024

_LOOP_FEATURES = (
    "log2_extent",
    "log2_tile_trips",
    "log2_point_trips",
    "log2_register",
    "is_reduction",
    "is_vector",
    "is_tiled",
)
_OPERAND_FEATURES = (
    "present",
    "vec_contiguous",
    "vec_broadcast",
    "vec_gather",
    "log2_vec_stride",
    "invariant_to_inner_reduction",
    "log2_bytes_reg_step",
    "log2_bytes_reg_tile",
    "log2_bytes_cache_tile",
    "log2_bytes_total",
    "log2_reuse_cache_tile",
    "packed",
)
_GLOBAL_FEATURES = (
    "num_loops",
    "num_reduction_loops",
    "log2_iterations",
    "log2_tile_iterations",
    "log2_point_iterations",
    "accumulators",
    "log2_accumulators",
    "vector_width",
    "vectorized",
    "lane_utilization_extent",
    "lane_utilization_reg",
    "reduction_unroll",
    "log2_reduction_per_accumulator_load",
    "log2_body_copies",
    "num_tiled_loops",
    "num_remainder_splits",
    "first_reduction_position",
    "log2_loads_per_step",
    "loads_per_accumulator",
    "log2_working_set_cache_tile",
    "log2_working_set_over_l1",
    "working_set_fits_l1",
    "working_set_fits_l2",
    "log2_working_set_reg_tile",
    "reg_tile_fits_l1",
    "parallel_loops",
    "log2_parallel_chunks",
)

FEATURE_NAMES: list[str] = (
    [f"loop{d}_{f}" for d in range(MAX_LOOPS) for f in _LOOP_FEATURES]
    + [f"operand{i}_{f}" for i in range(MAX_OPERANDS) for f in _OPERAND_FEATURES]
    + list(_GLOBAL_FEATURES)
)
FEATURE_LENGTH = len(FEATURE_NAMES)


def _log2(x: np.ndarray) -> np.ndarray:
    return np.log2(np.maximum(x, 1.0))


def _operands(info: KernelInfo) -> list[int]:
    """Indices of the operands described (inputs first, the output last, at most MAX_OPERANDS)."""
    idx = list(range(len(info.accesses)))
    if len(idx) <= MAX_OPERANDS:
        return idx
    return idx[: MAX_OPERANDS - 1] + [idx[-1]]


def _footprint(coefs: np.ndarray, shape: np.ndarray, box: np.ndarray) -> np.ndarray:
    """Elements touched by an access over boxes (N, L): prod over map results of its span."""
    if coefs.size == 0:
        return np.ones(box.shape[0])
    span = (box - 1.0) @ np.abs(coefs).T + 1.0  # (N, R)
    return np.minimum(span, shape[None, :]).prod(axis=1)


def _parallel_chunks(O, P, T, E, tiled, tile_trips) -> np.ndarray:
    """Cache tiles shared out to threads: LoopNestGenerator.parallel_dims, vectorized."""
    rows = np.arange(len(P))
    chunks = np.ones(len(P))
    stopped = np.zeros(len(P), dtype=bool)
    for k in range(int(P.max(initial=0))):
        d = O[:, k]
        active = (k < P) & ~stopped & tiled[rows, d]
        remainder = np.mod(E[0, d], np.maximum(T[rows, d], 1.0)) != 0
        stopped |= active & remainder
        chunks = np.where(active & ~remainder, chunks * tile_trips[rows, d], chunks)
    return chunks


def features(info: KernelInfo, schedules: Sequence[Schedule]) -> np.ndarray:
    """(len(schedules), FEATURE_LENGTH) float32 features of the anchor under each schedule."""
    n_cfg = len(schedules)
    out = np.zeros((n_cfg, FEATURE_LENGTH), dtype=np.float32)
    if n_cfg == 0:
        return out
    n = info.num_loops
    E = np.asarray(info.extents, dtype=np.float64)[None, :]
    is_red = np.array([it == "reduction" for it in info.iterators])
    is_par = ~is_red
    T = np.array([s.tile for s in schedules], dtype=np.float64)
    U = np.array([s.unroll for s in schedules], dtype=np.float64)
    O = np.array([s.order for s in schedules], dtype=np.int64)
    V = np.array([s.vector for s in schedules], dtype=np.int64)
    W = np.array([s.width for s in schedules], dtype=np.float64)
    P = np.array([s.parallel for s in schedules], dtype=np.int64)
    rows = np.arange(n_cfg)
    vec_onehot = np.zeros((n_cfg, n), dtype=bool)
    has_vec = V >= 0
    vec_onehot[rows[has_vec], V[has_vec]] = True

    tiled = (T > 0) & (T < E)
    C = np.where(tiled, T, E)  # cache-tile box
    tile_trips = np.where(tiled, np.ceil(E / np.maximum(T, 1.0)), 1.0)
    R = np.where(is_par[None, :], np.minimum(U, C), 1.0)  # register tile
    # innermost reduction loop in the order: the one unrolled
    if is_red.any():
        pos = np.argsort(O, axis=1)  # pos[k, d]: position of loop d
        red_idx = np.flatnonzero(is_red)
        inner_red = red_idx[np.argmax(pos[:, red_idx], axis=1)]
        first_red_pos = pos[:, red_idx].min(axis=1) / max(n - 1, 1)
    else:
        inner_red = np.full(n_cfg, -1)
        first_red_pos = np.ones(n_cfg)
    red_unroll = np.where(inner_red >= 0, U[rows, np.maximum(inner_red, 0)], 1.0)
    red_unroll = np.minimum(
        red_unroll, np.where(inner_red >= 0, C[rows, np.maximum(inner_red, 0)], 1.0)
    )
    point_trips = np.where(is_par[None, :], np.ceil(C / R), np.ceil(C / np.maximum(U, 1.0)))
    reg_feature = np.where(is_par[None, :], R, U)
    Wv = W[:, None]
    acc_factor = np.where(vec_onehot, np.ceil(R / Wv), R)
    acc_factor = np.where(is_par[None, :], acc_factor, 1.0)
    accumulators = acc_factor.prod(axis=1)

    # per-loop block
    m = min(n, MAX_LOOPS)
    per_loop = np.stack(
        [
            np.broadcast_to(_log2(E), (n_cfg, n)),
            _log2(tile_trips),
            _log2(point_trips),
            _log2(reg_feature),
            np.broadcast_to(is_red.astype(np.float64), (n_cfg, n)),
            vec_onehot.astype(np.float64),
            tiled.astype(np.float64),
        ],
        axis=2,
    )  # (N, n, F)
    nl = len(_LOOP_FEATURES)
    out[:, : m * nl] = per_loop[:, :m, :].reshape(n_cfg, m * nl)
    col = MAX_LOOPS * nl

    # boxes for footprints
    box_step = np.where(is_par[None, :], R, 1.0)
    box_reg = np.where(is_par[None, :], R, C)
    box_cache = C
    box_all = np.broadcast_to(E, (n_cfg, n))
    ws_cache = np.zeros(n_cfg)
    ws_reg = np.zeros(n_cfg)
    loads = np.zeros(n_cfg)
    no = len(_OPERAND_FEATURES)
    cache_iters = C.prod(axis=1)
    for slot, i in enumerate(_operands(info)):
        acc = info.accesses[i]
        coefs = np.asarray(acc.coefs, dtype=np.float64).reshape(len(acc.coefs), n)
        shape = np.asarray(acc.shape, dtype=np.float64)
        invariant = np.array([acc.invariant_to(d) for d in range(n)])
        contiguous = np.array([acc.contiguous_along(d) for d in range(n)])
        strides = np.abs(np.asarray(acc.loop_strides, dtype=np.float64)) if n else np.zeros(0)
        vd = np.maximum(V, 0)
        v_contig = has_vec & contiguous[vd]
        v_bcast = has_vec & invariant[vd]
        v_gather = has_vec & ~v_contig & ~v_bcast
        fp_step = _footprint(coefs, shape, box_step)
        fp_reg = _footprint(coefs, shape, box_reg)
        fp_cache = _footprint(coefs, shape, box_cache)
        fp_all = _footprint(coefs, shape, box_all)
        inv_inner = np.where(inner_red >= 0, invariant[np.maximum(inner_red, 0)], True)
        base = col + slot * no
        out[:, base + 0] = 1.0
        out[:, base + 1] = v_contig
        out[:, base + 2] = v_bcast
        out[:, base + 3] = v_gather
        out[:, base + 4] = np.where(has_vec, _log2(strides[vd] + 1.0), 0.0)
        out[:, base + 5] = inv_inner
        out[:, base + 6] = _log2(fp_step * ELEMENT_BYTES)
        out[:, base + 7] = _log2(fp_reg * ELEMENT_BYTES)
        out[:, base + 8] = _log2(fp_cache * ELEMENT_BYTES)
        out[:, base + 9] = _log2(fp_all * ELEMENT_BYTES)
        out[:, base + 10] = _log2(cache_iters / fp_cache)
        out[:, base + 11] = [i in s.pack for s in schedules]
        ws_cache += fp_cache * ELEMENT_BYTES
        ws_reg += fp_reg * ELEMENT_BYTES
        if not acc.is_output:
            # distinct loads of one reduction step: one per register-tile position it varies with
            per_dim = np.where(
                invariant[None, :],
                1.0,
                np.where(vec_onehot & contiguous[None, :], np.ceil(R / Wv), R),
            )
            per_dim = np.where(is_par[None, :], per_dim, 1.0)
            loads += per_dim.prod(axis=1)
    for i in range(len(info.accesses)):  # operands beyond the described ones still cost
        if i in _operands(info):
            continue
        acc = info.accesses[i]
        coefs = np.asarray(acc.coefs, dtype=np.float64).reshape(len(acc.coefs), n)
        shape = np.asarray(acc.shape, dtype=np.float64)
        ws_cache += _footprint(coefs, shape, box_cache) * ELEMENT_BYTES
        ws_reg += _footprint(coefs, shape, box_reg) * ELEMENT_BYTES
    col += MAX_OPERANDS * no

    n_ext = np.where(has_vec, E[0, np.maximum(V, 0)], 1.0)
    r_v = np.where(has_vec, R[rows, np.maximum(V, 0)], 1.0)
    util_ext = np.where(has_vec, n_ext / (np.ceil(n_ext / W) * W), 1.0)
    util_reg = np.where(has_vec, r_v / (np.ceil(r_v / W) * W), 1.0)
    red_per_acc = np.where(is_red[None, :], C, 1.0).prod(axis=1)
    remainders = (tiled & (np.mod(E, np.maximum(T, 1.0)) != 0)).sum(axis=1) + (
        is_par[None, :] & (np.mod(C, R) != 0)
    ).sum(axis=1)
    glob = [
        np.full(n_cfg, n),
        np.full(n_cfg, int(is_red.sum())),
        np.full(n_cfg, float(_log2(E.prod()))),
        _log2(tile_trips.prod(axis=1)),
        _log2(np.where(is_par[None, :], point_trips, 1.0).prod(axis=1)),
        accumulators,
        _log2(accumulators),
        np.where(has_vec, W, 1.0),
        has_vec.astype(np.float64),
        util_ext,
        util_reg,
        red_unroll,
        _log2(red_per_acc),
        _log2(accumulators * red_unroll),
        tiled.sum(axis=1),
        remainders,
        first_red_pos,
        _log2(loads),
        loads / accumulators,
        _log2(ws_cache),
        np.log2(np.maximum(ws_cache, 1.0) / L1_BYTES),
        ws_cache <= L1_BYTES,
        ws_cache <= L2_BYTES,
        _log2(ws_reg),
        ws_reg <= L1_BYTES,
        P.astype(np.float64),
        _log2(_parallel_chunks(O, P, T, E, tiled, tile_trips)),
    ]
    out[:, col : col + len(glob)] = np.stack(glob, axis=1)
    return out


__all__ = ["FEATURE_LENGTH", "FEATURE_NAMES", "features"]
