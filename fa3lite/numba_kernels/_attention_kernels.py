"""numba-cuda kernels of the reference attention (fp32 in, fp32 accumulate, fp32 out).

All tensors are fp32 in the (B, S, H, D) layout; lse and dpsum are (B, Hq, Sq); sink is (Hq,). Masking
rule: key j is visible to query i iff j < Sk and (not causal or j <= i + causal_offset) and (not local
or j >= i + local_offset). Scores are z = s, or z = softcap * tanh(s / softcap) when softcap > 0, with
s = scale * q.k. Each head's sink logit joins every row's softmax denominator with no value; -inf is
no sink. A row with no visible key gets out = 0 and lse = the sink (-inf without one) in the forward,
and P = 0 (so no gradient) in the backward.

Grids:
  forward, dq: (ceil(Sq / block_rows), Hq, B), one block per query-row tile of one head.
  dkv:         (ceil(Sk / block_rows), Hk, B), one block per key-row tile of one kv head; it loops over
               the Hq/Hk query heads of its group and all query tiles, so dK/dV need no atomics and
               come out deterministic.
"""

from __future__ import annotations

import functools
import math

import numba.cuda as ncuda
import numpy as np

from ._tiles import Tiles, tile_ops


@ncuda.jit(device=True)
def _visible(qi, kj, sq, sk, causal, offset, local, local_offset):
    """Whether key kj is visible to query qi (see the module doc)."""
    in_range = qi < sq and kj < sk
    return in_range and not (causal and kj > qi + offset) and not (local and kj < qi + local_offset)


@ncuda.jit(device=True)
def _softcap(s, softcap):
    """(z, dz/ds) for the scaled score s: softcap * tanh(s / softcap) when softcap > 0, else s."""
    if softcap > np.float32(0.0):
        th = math.tanh(s / softcap)
        return softcap * th, np.float32(1.0) - th * th
    return s, np.float32(1.0)


@ncuda.jit(device=True)
def _key_range(m0, rows, sk, step, causal, offset, local, local_offset):
    """[start, end) of the keys worth visiting for query rows m0 .. m0 + rows - 1.

    Keys after the bottom row's causal edge and before the top row's local edge are invisible to the
    whole tile. start is rounded down to a multiple of ``step`` so key tiles keep their boundaries.
    """
    end = sk
    if causal:
        end = max(0, min(sk, m0 + rows + offset))
    start = 0
    if local:
        start = max(0, m0 + local_offset) // step * step
    return start, end


@ncuda.jit(device=True)
def _query_range(n0, rows, sq, causal, offset, local, local_offset):
    """[start, end) of the queries worth visiting for key rows n0 .. n0 + rows - 1: query i sees key
    j only if i >= j - offset (causal) and i <= j - local_offset (local)."""
    start = 0
    if causal:
        start = max(0, n0 - offset)
    end = sq
    if local:
        end = max(0, min(sq, n0 + rows - local_offset))
    return start, end


def _check_geometry(tiles: Tiles) -> None:
    # The forward's per-row softmax step gives one thread to each row of the tile.
    if tiles.threads < tiles.block_rows:
        raise ValueError(f"tiles: need threads >= block_rows, got {tiles}")


@functools.lru_cache(maxsize=None)
def forward_kernel(tiles: Tiles, head_dim_pad: int):
    """Kernel (q, k, v, sink, out, lse, sq, sk, d, group, causal, offset, local, local_offset, softcap,
    scale); see the module doc for the grid."""
    _check_geometry(tiles)
    ops = tile_ops(tiles, head_dim_pad)
    score_tile, accumulate = ops.score_tile, ops.accumulate
    TX, RM, CN, DC = tiles.threads_x, tiles.rows_per_thread, tiles.cols_per_thread, ops.acc_o_shape[1]
    BM, BN = tiles.block_rows, tiles.block_cols
    X_SHAPE, Y_SHAPE, W_SHAPE, Z_SHAPE = ops.x_shape, ops.y_shape, ops.w_shape, ops.z_shape
    S_SHAPE, O_SHAPE = ops.acc_s_shape, ops.acc_o_shape

    @ncuda.jit
    def kernel(
        q, k, v, sink, out, lse, sq, sk, d, group, causal, offset, local, local_offset, softcap, scale
    ):
        t = ncuda.threadIdx.x
        ty = t // TX
        tx = t % TX
        m0 = ncuda.blockIdx.x * BM
        h = ncuda.blockIdx.y
        b = ncuda.blockIdx.z
        hk = h // group
        neg_inf = np.float32(-math.inf)
        nr = min(BM, sq - m0)

        sx = ncuda.shared.array(X_SHAPE, np.float32)
        sy = ncuda.shared.array(Y_SHAPE, np.float32)
        sw = ncuda.shared.array(W_SHAPE, np.float32)
        sz = ncuda.shared.array(Z_SHAPE, np.float32)
        row_max = ncuda.shared.array(BM, np.float32)
        row_sum = ncuda.shared.array(BM, np.float32)
        row_alpha = ncuda.shared.array(BM, np.float32)  # rescale factor of acc_o, per row
        acc_s = ncuda.local.array(S_SHAPE, np.float32)
        acc_o = ncuda.local.array(O_SHAPE, np.float32)

        if t < BM:
            row_max[t] = neg_inf
            row_sum[t] = np.float32(0.0)
        for i in range(RM):
            for cc in range(DC):
                acc_o[i, cc] = np.float32(0.0)

        n_start, n_end = _key_range(m0, nr, sk, BN, causal, offset, local, local_offset)
        for n0 in range(n_start, n_end, BN):
            nc = min(BN, sk - n0)
            score_tile(q, b, h, m0, nr, k, hk, n0, nc, d, sx, sy, acc_s)
            for i in range(RM):
                qi = m0 + ty * RM + i
                for c in range(CN):
                    kj = n0 + tx + TX * c
                    z = neg_inf
                    if _visible(qi, kj, sq, sk, causal, offset, local, local_offset):
                        z, _ = _softcap(acc_s[i, c] * scale, softcap)
                    sw[ty * RM + i, tx + TX * c] = z
            ncuda.syncthreads()
            # Online softmax, one thread per row: new running max, rescale factor, P in place of S.
            if t < BM:
                m_old = row_max[t]
                m_new = m_old
                for j in range(BN):
                    m_new = max(m_new, sw[t, j])
                alpha = np.float32(1.0)
                if m_new != neg_inf:
                    alpha = math.exp(m_old - m_new)
                p_sum = np.float32(0.0)
                for j in range(BN):
                    s = sw[t, j]
                    p = np.float32(0.0)
                    if s != neg_inf:
                        p = math.exp(s - m_new)
                    sw[t, j] = p
                    p_sum += p
                row_max[t] = m_new
                row_sum[t] = row_sum[t] * alpha + p_sum
                row_alpha[t] = alpha
            ncuda.syncthreads()
            for i in range(RM):
                a = row_alpha[ty * RM + i]
                for cc in range(DC):
                    acc_o[i, cc] *= a
            accumulate(sw, v, b, hk, n0, nc, d, sz, acc_o)
        ncuda.syncthreads()

        # The sink joins each row's denominator only now, as one more logit with no value: with the
        # running max m and sum l, total = l exp(m - top) + exp(sink - top) for top = max(m, sink).
        # Without a sink (-inf) this is exactly out = acc / l and lse = m + log(l).
        if t < nr:
            sink_h = sink[h]
            m = row_max[t]
            top = max(m, sink_h)
            factor = np.float32(0.0)
            val = neg_inf
            if top != neg_inf:
                keep = math.exp(m - top)
                total = row_sum[t] * keep + math.exp(sink_h - top)
                factor = keep / total
                val = top + math.log(total)
            row_alpha[t] = factor
            lse[b, h, m0 + t] = val
        ncuda.syncthreads()

        for i in range(RM):
            r = ty * RM + i
            if m0 + r < sq:
                factor = row_alpha[r]
                for cc in range(DC):
                    col = tx + TX * cc
                    if col < d:
                        out[b, m0 + r, h, col] = acc_o[i, cc] * factor

    return kernel


@functools.lru_cache(maxsize=None)
def dq_kernel(tiles: Tiles, head_dim_pad: int):
    """Kernel (q, k, v, dout, lse, dpsum, dq, sq, sk, d, group, causal, offset, local, local_offset,
    softcap, scale).

    dq = scale * dS K with dS = P * (dO V^T - dpsum) * dz/ds, P = exp(z - lse) on visible entries (lse
    already holds the sink, which needs nothing more here).
    """
    ops = tile_ops(tiles, head_dim_pad)
    score_tile, accumulate = ops.score_tile, ops.accumulate
    TX, RM, CN, DC = tiles.threads_x, tiles.rows_per_thread, tiles.cols_per_thread, ops.acc_o_shape[1]
    BM, BN = tiles.block_rows, tiles.block_cols
    X_SHAPE, Y_SHAPE, W_SHAPE, Z_SHAPE = ops.x_shape, ops.y_shape, ops.w_shape, ops.z_shape
    S_SHAPE, O_SHAPE = ops.acc_s_shape, ops.acc_o_shape

    @ncuda.jit
    def kernel(
        q, k, v, dout, lse, dpsum, dq, sq, sk, d, group, causal, offset, local, local_offset, softcap, scale
    ):
        t = ncuda.threadIdx.x
        ty = t // TX
        tx = t % TX
        m0 = ncuda.blockIdx.x * BM
        h = ncuda.blockIdx.y
        b = ncuda.blockIdx.z
        hk = h // group
        neg_inf = np.float32(-math.inf)
        nr = min(BM, sq - m0)

        sx = ncuda.shared.array(X_SHAPE, np.float32)
        sy = ncuda.shared.array(Y_SHAPE, np.float32)
        sw = ncuda.shared.array(W_SHAPE, np.float32)
        sz = ncuda.shared.array(Z_SHAPE, np.float32)
        acc_s = ncuda.local.array(S_SHAPE, np.float32)
        acc_dp = ncuda.local.array(S_SHAPE, np.float32)
        acc_dq = ncuda.local.array(O_SHAPE, np.float32)
        row_lse = ncuda.local.array(RM, np.float32)
        row_dps = ncuda.local.array(RM, np.float32)

        for i in range(RM):
            qi = m0 + ty * RM + i
            row_lse[i] = neg_inf
            row_dps[i] = np.float32(0.0)
            if qi < sq:
                row_lse[i] = lse[b, h, qi]
                row_dps[i] = dpsum[b, h, qi]
            for cc in range(DC):
                acc_dq[i, cc] = np.float32(0.0)

        n_start, n_end = _key_range(m0, nr, sk, BN, causal, offset, local, local_offset)
        for n0 in range(n_start, n_end, BN):
            nc = min(BN, sk - n0)
            score_tile(q, b, h, m0, nr, k, hk, n0, nc, d, sx, sy, acc_s)
            score_tile(dout, b, h, m0, nr, v, hk, n0, nc, d, sx, sy, acc_dp)
            for i in range(RM):
                qi = m0 + ty * RM + i
                for c in range(CN):
                    kj = n0 + tx + TX * c
                    ds = np.float32(0.0)
                    visible = _visible(qi, kj, sq, sk, causal, offset, local, local_offset)
                    if visible and row_lse[i] != neg_inf:
                        z, dz = _softcap(acc_s[i, c] * scale, softcap)
                        p = math.exp(z - row_lse[i])
                        ds = p * (acc_dp[i, c] - row_dps[i]) * dz
                    sw[ty * RM + i, tx + TX * c] = ds
            accumulate(sw, k, b, hk, n0, nc, d, sz, acc_dq)

        for i in range(RM):
            qi = m0 + ty * RM + i
            if qi < sq:
                for cc in range(DC):
                    col = tx + TX * cc
                    if col < d:
                        dq[b, qi, h, col] = acc_dq[i, cc] * scale

    return kernel


@functools.lru_cache(maxsize=None)
def dkv_kernel(tiles: Tiles, head_dim_pad: int):
    """Kernel (q, k, v, dout, lse, dpsum, dk, dv, sq, sk, d, group, causal, offset, local, local_offset,
    softcap, scale).

    Tile rows are keys, tile columns queries: dV = P^T dO and dK = scale * dS^T Q, summed over the
    query heads of the kv head's group (P and dS as in ``dq_kernel``).
    """
    ops = tile_ops(tiles, head_dim_pad)
    score_tile, accumulate = ops.score_tile, ops.accumulate
    TX, RM, CN, DC = tiles.threads_x, tiles.rows_per_thread, tiles.cols_per_thread, ops.acc_o_shape[1]
    BM, BN = tiles.block_rows, tiles.block_cols
    X_SHAPE, Y_SHAPE, W_SHAPE, Z_SHAPE = ops.x_shape, ops.y_shape, ops.w_shape, ops.z_shape
    S_SHAPE, O_SHAPE = ops.acc_s_shape, ops.acc_o_shape

    @ncuda.jit
    def kernel(
        q, k, v, dout, lse, dpsum, dk, dv, sq, sk, d, group, causal, offset, local, local_offset, softcap, scale
    ):
        t = ncuda.threadIdx.x
        ty = t // TX
        tx = t % TX
        n0 = ncuda.blockIdx.x * BM
        hk = ncuda.blockIdx.y
        b = ncuda.blockIdx.z
        neg_inf = np.float32(-math.inf)
        nr = min(BM, sk - n0)

        sx = ncuda.shared.array(X_SHAPE, np.float32)
        sy = ncuda.shared.array(Y_SHAPE, np.float32)
        sw = ncuda.shared.array(W_SHAPE, np.float32)
        sz = ncuda.shared.array(Z_SHAPE, np.float32)
        acc_p = ncuda.local.array(S_SHAPE, np.float32)
        acc_dp = ncuda.local.array(S_SHAPE, np.float32)
        acc_dk = ncuda.local.array(O_SHAPE, np.float32)
        acc_dv = ncuda.local.array(O_SHAPE, np.float32)
        col_lse = ncuda.local.array(CN, np.float32)
        col_dps = ncuda.local.array(CN, np.float32)

        for i in range(RM):
            for cc in range(DC):
                acc_dk[i, cc] = np.float32(0.0)
                acc_dv[i, cc] = np.float32(0.0)

        m_start, m_end = _query_range(n0, nr, sq, causal, offset, local, local_offset)
        for g in range(group):
            h = hk * group + g
            for m0 in range(m_start, m_end, BN):
                mc = min(BN, sq - m0)
                for c in range(CN):
                    qi = m0 + tx + TX * c
                    col_lse[c] = neg_inf
                    col_dps[c] = np.float32(0.0)
                    if qi < sq:
                        col_lse[c] = lse[b, h, qi]
                        col_dps[c] = dpsum[b, h, qi]
                score_tile(k, b, hk, n0, nr, q, h, m0, mc, d, sx, sy, acc_p)
                score_tile(v, b, hk, n0, nr, dout, h, m0, mc, d, sx, sy, acc_dp)
                for i in range(RM):
                    kj = n0 + ty * RM + i
                    for c in range(CN):
                        qi = m0 + tx + TX * c
                        p = np.float32(0.0)
                        dz = np.float32(0.0)
                        visible = _visible(qi, kj, sq, sk, causal, offset, local, local_offset)
                        if visible and col_lse[c] != neg_inf:
                            z, dz = _softcap(acc_p[i, c] * scale, softcap)
                            p = math.exp(z - col_lse[c])
                        acc_p[i, c] = p
                        # From here acc_dp holds dS / P.
                        acc_dp[i, c] = (acc_dp[i, c] - col_dps[c]) * dz
                        sw[ty * RM + i, tx + TX * c] = p
                accumulate(sw, dout, b, h, m0, mc, d, sz, acc_dv)
                # Every thread must be done reading P before dS overwrites it.
                ncuda.syncthreads()
                for i in range(RM):
                    for c in range(CN):
                        sw[ty * RM + i, tx + TX * c] = acc_p[i, c] * acc_dp[i, c]
                accumulate(sw, q, b, h, m0, mc, d, sz, acc_dk)

        for i in range(RM):
            kj = n0 + ty * RM + i
            if kj < sk:
                for cc in range(DC):
                    col = tx + TX * cc
                    if col < d:
                        dk[b, kj, hk, col] = acc_dk[i, cc] * scale
                        dv[b, kj, hk, col] = acc_dv[i, cc]

    return kernel
