"""Block-tiled fp32 matrix products in shared memory, the building blocks of the reference kernels.

A thread block of ``threads_y x threads_x`` threads owns a tile of ``block_rows`` rows (``rows_per_thread``
consecutive rows per thread row ``ty``) against ``block_cols`` columns (thread ``tx`` owns columns
``tx + threads_x * c``, strided so that neighbouring threads hit neighbouring shared-memory banks).
Two operations, both on (B, S, H, D) tensors of fp32:

* ``score_tile``: acc[i, c] = sum_d X[b, r0 + row_i, hx, d] * Y[b, c0 + col_c, hy, d]
  (Q K^T, dO V^T, K Q^T, V dO^T), D walked in chunks of ``d_chunk`` through shared memory.
* ``accumulate``: acc[i, cc] += sum_j W[row_i, j] * Z[b, c0 + j, hz, tx + threads_x * cc]
  (P V, dS K, P^T dO, dS^T Q), W a (block_rows, block_cols) shared tile, Z rows staged through
  shared memory a few at a time.

Nothing larger than a tile ever exists, so the Sq x Sk matrix is never stored.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import SimpleNamespace

import numba.cuda as ncuda
import numpy as np

from ._backend import SIMULATOR

_F32_BYTES = 4
_BANK_PAD = 1  # one extra fp32 per shared row: column walks then touch 32 distinct banks


@dataclass(frozen=True)
class Tiles:
    """Tile geometry of the reference kernels (compile-time constants of one kernel build)."""

    threads_y: int
    threads_x: int
    rows_per_thread: int
    cols_per_thread: int
    d_chunk: int
    z_chunk_bytes: int  # shared bytes for staged Z rows in ``accumulate``

    @property
    def threads(self) -> int:
        return self.threads_y * self.threads_x

    @property
    def block_rows(self) -> int:
        return self.threads_y * self.rows_per_thread

    @property
    def block_cols(self) -> int:
        return self.threads_x * self.cols_per_thread

    def head_dim_pad(self, head_dim: int) -> int:
        """Head dim rounded up to a multiple of threads_x (each thread owns head_dim_pad/threads_x columns)."""
        return -(-head_dim // self.threads_x) * self.threads_x

    def z_rows(self, head_dim_pad: int) -> int:
        """Rows of Z staged at once: the largest divisor of block_cols that fits z_chunk_bytes."""
        fit = max(1, self.z_chunk_bytes // (head_dim_pad * _F32_BYTES))
        return max(r for r in range(1, self.block_cols + 1) if self.block_cols % r == 0 and r <= fit)


# 128 threads, 64 x 64 tiles, 8 x 4 scores and 8 x D/16 outputs per thread; about 42 KB of static
# shared memory, under the 48 KB a kernel gets without opting in.
GPU_TILES = Tiles(threads_y=8, threads_x=16, rows_per_thread=8, cols_per_thread=4, d_chunk=32, z_chunk_bytes=8192)
# The simulator runs every thread as a Python thread: tiny tiles keep it fast and still give tests
# several tiles (and partial tiles) per sequence.
SIM_TILES = Tiles(threads_y=2, threads_x=4, rows_per_thread=2, cols_per_thread=2, d_chunk=8, z_chunk_bytes=256)


def default_tiles() -> Tiles:
    return SIM_TILES if SIMULATOR else GPU_TILES


@functools.lru_cache(maxsize=None)
def tile_ops(tiles: Tiles, head_dim_pad: int) -> SimpleNamespace:
    """Device functions and shared-array shapes for one tile geometry and padded head dim."""
    TX = tiles.threads_x
    NT = tiles.threads
    RM = tiles.rows_per_thread
    CN = tiles.cols_per_thread
    BM = tiles.block_rows
    BN = tiles.block_cols
    DK = tiles.d_chunk
    DP = head_dim_pad
    DC = head_dim_pad // TX
    ZR = tiles.z_rows(head_dim_pad)

    @ncuda.jit(device=True)
    def score_tile(x, b, hx, r0, nr, y, hy, c0, nc, d, sx, sy, acc):
        """acc (RM, CN) = X[b, r0:r0+nr, hx, :d] @ Y[b, c0:c0+nc, hy, :d]^T for this thread's entries.

        sx (BM, DK+pad) and sy (BN, DK+pad) are shared scratch; rows past nr / nc read as zero.
        Starts with a barrier, so callers may reuse sx/sy right after a previous call.
        """
        t = ncuda.threadIdx.x
        ty = t // TX
        tx = t % TX
        yv = ncuda.local.array(CN, np.float32)
        for i in range(RM):
            for c in range(CN):
                acc[i, c] = np.float32(0.0)
        for d0 in range(0, d, DK):
            ncuda.syncthreads()
            for e in range(t, BM * DK, NT):
                row = e // DK
                col = e % DK
                val = np.float32(0.0)
                if row < nr and d0 + col < d:
                    val = x[b, r0 + row, hx, d0 + col]
                sx[row, col] = val
            for e in range(t, BN * DK, NT):
                row = e // DK
                col = e % DK
                val = np.float32(0.0)
                if row < nc and d0 + col < d:
                    val = y[b, c0 + row, hy, d0 + col]
                sy[row, col] = val
            ncuda.syncthreads()
            for kk in range(DK):
                for c in range(CN):
                    yv[c] = sy[tx + TX * c, kk]
                for i in range(RM):
                    xv = sx[ty * RM + i, kk]
                    for c in range(CN):
                        acc[i, c] += xv * yv[c]

    @ncuda.jit(device=True)
    def accumulate(sw, z, b, hz, c0, nc, d, sz, acc):
        """acc (RM, DC) += sw[rows, :nc] @ Z[b, c0:c0+nc, hz, :] for this thread's rows and columns.

        sw (BM, BN+pad) shared weights; sz (ZR, DP) shared scratch. Starts with a barrier, so
        callers may write sw right before calling.
        """
        t = ncuda.threadIdx.x
        ty = t // TX
        tx = t % TX
        zv = ncuda.local.array(DC, np.float32)
        for j0 in range(0, nc, ZR):
            ncuda.syncthreads()
            for e in range(t, ZR * DP, NT):
                row = e // DP
                col = e % DP
                val = np.float32(0.0)
                if j0 + row < nc and col < d:
                    val = z[b, c0 + j0 + row, hz, col]
                sz[row, col] = val
            ncuda.syncthreads()
            for jj in range(ZR):
                for cc in range(DC):
                    zv[cc] = sz[jj, tx + TX * cc]
                for i in range(RM):
                    w = sw[ty * RM + i, j0 + jj]
                    for cc in range(DC):
                        acc[i, cc] += w * zv[cc]

    return SimpleNamespace(
        score_tile=score_tile,
        accumulate=accumulate,
        x_shape=(BM, DK + _BANK_PAD),
        y_shape=(BN, DK + _BANK_PAD),
        w_shape=(BM, BN + _BANK_PAD),
        z_shape=(ZR, DP),
        acc_s_shape=(RM, CN),
        acc_o_shape=(RM, DC),
    )
