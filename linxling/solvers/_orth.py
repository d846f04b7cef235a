"""Orthonormalisation of blocks of vectors: the one helper every linxling solver and model uses.

Two contracts:

- ``orthonormalize(Y)``: an orthonormal basis with as many columns as ``Y`` (``Y`` of full
  column rank), by two passes of Cholesky-QR (BLAS-3 products only; one pass measured 10x faster
  than Householder QR for 20000 x 120), falling back to Householder QR when the Gram matrix is not numerically
  positive definite. Used for starting blocks and randomized range finders.
- ``orthonormalize(Y, drop=..., against=Q)``: rank-revealing; directions of ``Y`` inside
  ``span(Q)`` or numerically dependent are dropped, so the result may have fewer columns (SVQB,
  Stathopoulos & Wu 2002, after block Gram-Schmidt against ``Q``). Used by the block
  eigensolver, whose expansion blocks are often nearly dependent.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla

from linxling.kernels.dense import gram64, gram_tn, matmul_rows, trmm_rows

__all__ = ["orthonormalize"]


def orthonormalize(Y: Any, *, drop: float | None = None, against: Any = None) -> np.ndarray:
    """Orthonormal basis of ``span(Y)`` (minus ``span(against)``).

    Parameters
    ----------
    Y : ndarray (n, m)
    drop : float or None
        ``None``: keep all ``m`` columns (``Y`` must have full column rank; Cholesky-QR with a
        Householder-QR fallback). A float: rank-revealing, drop directions whose scaled Gram
        eigenvalue is below ``drop`` times the largest (SVQB, twice).
    against : ndarray (n, q) with orthonormal columns, optional
        Only with ``drop``: remove ``span(against)`` first (two rounds of block classical
        Gram-Schmidt; columns that were numerically inside it are dropped).
    """
    Y = np.asarray(Y)
    if drop is None:
        if against is not None:
            raise ValueError("against= needs drop= (projecting out a span may lower the rank)")
        return _cholesky_qr(Y)
    if Y.shape[1] == 0:
        return Y
    has_q = against is not None and against.shape[1] > 0
    if has_q:
        n0 = np.linalg.norm(Y, axis=0)
        for _ in range(2):
            Y = Y - matmul_rows(against, gram_tn(against, Y).astype(against.dtype))
        n1 = np.linalg.norm(Y, axis=0)
        Y = Y[:, n1 > 0.1 * drop * n0]
    U = _svqb(Y, drop)
    if has_q and U.shape[1]:
        U = U - matmul_rows(against, gram_tn(against, U).astype(against.dtype))
    return _svqb(U, drop)


def _cholesky_qr(Y: np.ndarray, passes: int = 2, overwrite: bool = False) -> np.ndarray:
    """CholQR2: two Cholesky-QR passes (orthogonal to working precision for cond(Y) up to about
    eps^-1/2; one pass, ``passes=1``, loses ``eps * cond(Y)^2``), Householder QR when a Gram is
    not PD. ``overwrite``: ``Y`` may be overwritten with the result (it is then returned)."""
    for i in range(passes):
        try:
            R = sla.cholesky(_gram(Y), lower=False, check_finite=False)
        except np.linalg.LinAlgError:
            return np.linalg.qr(Y)[0]
        # Y R⁻¹ with the (m, m) inverse instead of a triangular solve with the block (measured:
        # the 6 CholQR2 calls of Cr5's start on (20000, 120) float32 blocks, one BLAS thread,
        # 0.28 -> 0.17 s); the second pass has R ≈ I, where both are exact to rounding
        R_inv = sla.solve_triangular(R, np.eye(R.shape[0], dtype=R.dtype), lower=False, check_finite=False)
        if (overwrite or i > 0) and trmm_rows(Y, R_inv):
            continue
        Y = matmul_rows(Y, R_inv)
    return Y


def _svqb(Y: np.ndarray, drop: float) -> np.ndarray:
    """One SVQB pass: eigen-decompose the column-scaled Gram ``D^-1 YᵀY D^-1 = Z diag(w) Zᵀ`` and
    return ``Y D^-1 Z w^-1/2`` without the directions ``w < drop * max(w)``. One pass leaves an
    orthogonality error of about ``eps / min(w)``; :func:`orthonormalize` makes two."""
    if Y.shape[1] == 0:
        return Y
    G = _gram64(Y)
    d = np.sqrt(np.clip(np.diag(G), 0, None))
    ok = d > 0
    if not ok.all():
        Y, G, d = Y[:, ok], G[np.ix_(ok, ok)], d[ok]
        if Y.shape[1] == 0:
            return Y
    w, Z = np.linalg.eigh(G / np.outer(d, d))
    keep = w > drop * max(float(w[-1]), np.finfo(np.float64).tiny)
    T = (Z[:, keep] / np.sqrt(w[keep])) / d[:, None]
    return matmul_rows(Y, T.astype(Y.dtype))


def _gram64(Y: np.ndarray, rows: int = 16_384) -> np.ndarray:
    """``YᵀY`` accumulated in float64. A float32 ``Y`` is cast a block of rows at a time, so no
    float64 copy of the whole block is made (at 485,000 x 360 two such copies took 1.4 GB each,
    and 12 s of page faults and casts in Cr5's eigen-solve); the row parts run on all cores in a
    fit (:func:`linxling.kernels.dense.gram64`)."""
    if Y.dtype == np.float64:
        return gram_tn(Y, Y)
    return gram64(Y, Y, rows)


def _gram(Y: np.ndarray) -> np.ndarray:
    """``YᵀY`` in ``Y``'s dtype for Cholesky-QR: the row parts' products added in float64
    (:func:`linxling.kernels.dense.gram_tn`), then cast back (R and R⁻¹ stay in ``Y``'s dtype)."""
    return gram_tn(Y, Y).astype(Y.dtype, copy=False) if Y.dtype.kind == "f" else Y.T @ Y
