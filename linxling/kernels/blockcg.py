"""Fused kernels of Jacobi-preconditioned block CG (one pass over the block per step).

:func:`linxling.solvers.block_cg` is written with whole-array NumPy expressions: every iteration
gathers the active columns (``P[:, idx]``), scales and subtracts in temporaries, and makes separate
passes for ``pᵀq``, the residual norms, the preconditioner and ``rᵀz``. On Cr5's inner solves
(p_l = 5-12k rows, 100-120 columns, float32) those passes cost as much as the SpMMs themselves.
These kernels do the same arithmetic in three row-parallel passes per iteration:

1. :func:`linxling.kernels.spmm.tiled_rows_matmat` with ``alpha``, ``P`` and ``part``:
   ``Q = Xᵀ(T) + alpha P`` with ``T = X P`` already computed (both products with ``T``'s and
   ``P``'s rows in cache-sized tiles), and the column dots ``pᵀq`` summed while each row of ``Q``
   is still in cache;
2. :func:`cg_update`: ``X[:, cols] += P alpha``, ``R -= Q alpha``, and the column sums of ``r²``
   and ``r² / d`` (the Jacobi-preconditioned ``rᵀz``) in the same pass;
3. :func:`cg_direction`: ``P = R / d + P beta`` in place, or :func:`cg_direction_pack` when some
   column has converged: the active columns packed to the front (the next SpMM sees a contiguous
   block).

Column sums are accumulated in float64 per fixed chunk of rows and then added in chunk order, so
the results do not depend on the number of threads. The plain reference is
:func:`linxling.solvers.block_cg` with ``M = lambda R: R / d[:, None]`` (tested column by column).
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["row_chunk", "column_dots", "column_norms", "cg_update", "cg_direction", "cg_direction_pack", "copy_columns"]


def row_chunk(n_rows: int) -> int:
    """Rows per partial sum: a function of the size only (never of the thread count)."""
    return max(256, -(-n_rows // 1024))


@numba.njit(parallel=True, cache=True, nogil=True)
def column_dots(P, Q, part, chunk):  # pragma: no cover - compiled
    """``part[c, j] = Σ P[i, j] Q[i, j]`` over the rows of chunk ``c`` (when ``Q`` comes from a
    general operator rather than :func:`gram_apply_dot`)."""
    p, m = P.shape
    for c in numba.prange(part.shape[0]):
        for j in range(m):
            part[c, j] = 0.0
        for i in range(c * chunk, min(p, (c + 1) * chunk)):
            for j in range(m):
                part[c, j] += np.float64(P[i, j]) * np.float64(Q[i, j])


def column_norms(R: np.ndarray, part: np.ndarray | None = None) -> np.ndarray:
    """Column norms of a C-contiguous float block ``R`` (n, m): :func:`column_dots` of ``R`` with
    itself in chunks of :func:`row_chunk` rows, the float64 chunk sums added in chunk order (the
    same result for any thread count). ``part``: a float64 buffer of at least (n_chunks, m)."""
    chunk = row_chunk(R.shape[0])
    k = R.shape[1]
    if part is None:
        part = np.empty((-(-R.shape[0] // chunk), k))
    column_dots(R, R, part[:, :k], chunk)
    return np.sqrt(part[:, :k].sum(axis=0))


@numba.njit(parallel=True, cache=True, nogil=True)
def cg_update(X, cols, R, P, Q, alpha, dinv, part_rr, part_rz, chunk):  # pragma: no cover - compiled
    """``X[:, cols[j]] += alpha[j] P[:, j]``, ``R[:, j] -= alpha[j] Q[:, j]``; per chunk the column
    sums of ``R²`` and ``R² dinv``."""
    p, m = R.shape
    for c in numba.prange(part_rr.shape[0]):
        for j in range(m):
            part_rr[c, j] = 0.0
            part_rz[c, j] = 0.0
        for i in range(c * chunk, min(p, (c + 1) * chunk)):
            di = np.float64(dinv[i])
            for j in range(m):
                X[i, cols[j]] += alpha[j] * P[i, j]
                r = R[i, j] - alpha[j] * Q[i, j]
                R[i, j] = r
                r2 = np.float64(r) * np.float64(r)
                part_rr[c, j] += r2
                part_rz[c, j] += r2 * di


@numba.njit(parallel=True, cache=True, nogil=True)
def cg_direction(R, P, dinv, beta):  # pragma: no cover - compiled
    """``P = R dinv + P beta`` in place (every column still active)."""
    p, m = R.shape
    for i in numba.prange(p):
        di = dinv[i]
        for j in range(m):
            P[i, j] = R[i, j] * di + beta[j] * P[i, j]


@numba.njit(parallel=True, cache=True, nogil=True)
def cg_direction_pack(R, P, dinv, beta, keep, R_out, P_out):  # pragma: no cover - compiled
    """``P_out[:, k] = R[:, keep[k]] dinv + beta[keep[k]] P[:, keep[k]]`` and ``R_out[:, k] =
    R[:, keep[k]]``: the directions of the columns still active, packed to the front."""
    p = R.shape[0]
    mk = keep.shape[0]
    for i in numba.prange(p):
        di = dinv[i]
        for k in range(mk):
            j = keep[k]
            r = R[i, j]
            P_out[i, k] = r * di + beta[j] * P[i, j]
            R_out[i, k] = r


@numba.njit(parallel=True, cache=True, nogil=True)
def copy_columns(A, B):  # pragma: no cover - compiled
    """``B[:, :w] = A`` and ``B[:, w:] = 0`` for ``A`` (n, w) and ``B`` (n, wp ≥ w), separate
    arrays, row-parallel: a block into or out of rows padded to whole cache lines
    (:func:`linxling.kernels.spmm.padded_width`) and back (``A`` the wider one: ``B = A[:, :w]``)."""
    n, w = A.shape
    wb = B.shape[1]
    zero = B.dtype.type(0)
    for i in numba.prange(n):
        for j in range(min(w, wb)):
            B[i, j] = A[i, j]
        for j in range(w, wb):
            B[i, j] = zero
