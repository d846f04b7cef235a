"""Sparse (CSR) × dense block products on all cores, with the plain SciPy product as reference.

SciPy's ``csr @ dense`` runs on one thread; Cr5's inner solves and cross-covariance products are
made of such products on blocks of 100+ vectors, so a row-parallel numba kernel (each output row
is owned by one thread: no atomics, no reduction) uses both cores of the machine. Transposed
products are fastest with an explicit CSR copy of ``Xᵀ`` (see :func:`csr_transpose`); when that
copy does not fit the memory budget, :func:`csr_rmatmat` computes ``Xᵀ V`` from ``X`` itself by a
scatter in which each thread owns a range of output *columns* (no atomics, no copy).
"""
from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["csr_matmat", "csr_matmat_reference", "csr_rmatmat", "csr_rmatmat_reference", "csr_transpose",
           "rows_matmat", "rows_matmat_reference", "MIN_PARALLEL_WORK"]

# below this many multiply-adds (nnz * n_cols) the thread start-up costs more than it saves
MIN_PARALLEL_WORK = 200_000


@numba.njit(parallel=True, fastmath=False, cache=True, nogil=True)
def _csr_matmat(indptr, indices, data, V, out):  # pragma: no cover - compiled
    n_rows = out.shape[0]
    m = V.shape[1]
    for i in numba.prange(n_rows):
        for j in range(m):
            out[i, j] = 0.0
        for jj in range(indptr[i], indptr[i + 1]):
            a = data[jj]
            col = indices[jj]
            for j in range(m):
                out[i, j] += a * V[col, j]


def csr_matmat_reference(X: sp.csr_matrix, V: np.ndarray) -> np.ndarray:
    """The plain product ``X @ V`` (SciPy, one thread): the oracle of :func:`csr_matmat`."""
    return np.asarray(X @ V)


def csr_matmat(X: sp.csr_matrix, V: np.ndarray) -> np.ndarray:
    """``X @ V`` for CSR ``X`` (n, p) and dense ``V`` (p, m) on all numba threads.

    Falls back to SciPy for small work, 1-D ``V``, non-CSR input, mixed dtypes, or non-NumPy
    arrays. The result has ``V``'s dtype when it equals ``X``'s (float32 stays float32).
    """
    if (not isinstance(V, np.ndarray) or V.ndim != 2 or not sp.isspmatrix_csr(X)
            or X.dtype != V.dtype or V.dtype not in (np.float32, np.float64)
            or X.nnz * V.shape[1] < MIN_PARALLEL_WORK):
        return np.asarray(X @ V)
    Vc = np.ascontiguousarray(V)
    out = np.empty((X.shape[0], V.shape[1]), dtype=V.dtype)
    _csr_matmat(X.indptr, X.indices, X.data, Vc, out)
    return out


@numba.njit(parallel=True, fastmath=False, cache=True, nogil=True)
def _csr_rmatmat(indptr, indices, data, V, out, n_parts):  # pragma: no cover - compiled
    n_rows = V.shape[0]
    m = V.shape[1]
    for t in numba.prange(n_parts):
        c0 = t * m // n_parts
        c1 = (t + 1) * m // n_parts
        for r in range(out.shape[0]):
            for j in range(c0, c1):
                out[r, j] = 0.0
        for i in range(n_rows):
            for jj in range(indptr[i], indptr[i + 1]):
                a = data[jj]
                col = indices[jj]
                for j in range(c0, c1):
                    out[col, j] += a * V[i, j]


def csr_rmatmat_reference(X: sp.csr_matrix, V: np.ndarray) -> np.ndarray:
    """The plain product ``Xᵀ @ V`` (SciPy): the oracle of :func:`csr_rmatmat`."""
    return np.asarray(X.T @ V)


def csr_rmatmat(X: sp.csr_matrix, V: np.ndarray) -> np.ndarray:
    """``Xᵀ @ V`` for CSR ``X`` (n, p) and dense ``V`` (n, m), without a transposed copy of ``X``.

    Each numba thread owns a contiguous range of the ``m`` output columns and streams all of
    ``X`` (race-free scatter; the result does not depend on the thread count). Falls back to
    SciPy for small work and the cases :func:`csr_matmat` falls back for.
    """
    if (not isinstance(V, np.ndarray) or V.ndim != 2 or not sp.isspmatrix_csr(X)
            or X.dtype != V.dtype or V.dtype not in (np.float32, np.float64)
            or X.nnz * V.shape[1] < MIN_PARALLEL_WORK):
        return np.asarray(X.T @ V)
    Vc = np.ascontiguousarray(V)
    out = np.empty((X.shape[1], V.shape[1]), dtype=V.dtype)
    n_parts = max(1, min(numba.get_num_threads(), V.shape[1]))
    _csr_rmatmat(X.indptr, X.indices, X.data, Vc, out, n_parts)
    return out


@numba.njit(parallel=True, fastmath=False, cache=True, nogil=True)
def _rows_matmat(starts, ends, indices, data, colmap, has_map, V, out, accumulate):  # pragma: no cover
    m = V.shape[1]
    for i in numba.prange(out.shape[0]):
        if not accumulate:
            for j in range(m):
                out[i, j] = 0.0
        for jj in range(starts[i], ends[i]):
            a = data[jj]
            col = indices[jj]
            if has_map:
                col = colmap[col]
            for j in range(m):
                out[i, j] += a * V[col, j]


def rows_matmat_reference(starts, ends, indices, data, V, out, *, colmap=None, accumulate=False):
    """The plain loop over rows of :func:`rows_matmat` (NumPy per row): its oracle."""
    if not accumulate:
        out[...] = 0
    for i in range(out.shape[0]):
        sl = slice(int(starts[i]), int(ends[i]))
        cols = indices[sl] if colmap is None else colmap[indices[sl]]
        out[i] += data[sl] @ V[cols]
    return out


def rows_matmat(starts, ends, indices, data, V, out, *, colmap=None, accumulate=False):
    """``out[i] (+)= Σ_{jj in [starts[i], ends[i])} data[jj] · V[col(jj)]`` on all numba threads,
    with ``col(jj) = indices[jj]``, or ``colmap[indices[jj]]`` when ``colmap`` is given.

    A CSR product whose rows are given by separate ``starts`` / ``ends`` (the four-array form):
    the rows of a CSR matrix taken in any order, or spread over a longer output with empty rows,
    without copying its ``indices`` or ``data``; ``colmap`` renumbers the columns on the fly.
    Cr5 uses it when every concept has at most one document per language: ``YᵀX`` is then ``X``
    with its rows moved, and ``XᵀY`` is ``Xᵀ`` with its columns renumbered, so neither is stored.
    Each output row is owned by one thread (no atomics; the result does not depend on the thread
    count). ``out`` must be C-contiguous with ``V``'s dtype; with ``accumulate`` the products are
    added to it, else it is overwritten. Returns ``out``.
    """
    V = np.ascontiguousarray(V)
    if out.dtype != V.dtype or data.dtype != V.dtype or not out.flags.c_contiguous:
        raise ValueError("rows_matmat: out, data and V must share one dtype and out must be C-contiguous")
    has_map = colmap is not None
    cmap = colmap if has_map else np.zeros(1, dtype=np.int64)
    _rows_matmat(starts, ends, indices, data, cmap, has_map, V, out, bool(accumulate))
    return out


def csr_transpose(X):
    """An explicit CSR copy of ``Xᵀ`` (the engine's one transposed-CSR helper).

    ``X.T`` alone is a CSC view whose SpMM scatters into the output; a CSR copy of the transpose
    makes ``Xᵀ @ U`` a row-parallel gather (:func:`csr_matmat`) at the cost of one copy of ``X``.
    """
    return sp.csr_matrix(X).T.tocsr()
