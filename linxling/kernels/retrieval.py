"""Numba kernels for blocked CSLS retrieval (:mod:`linxling.evaluate._retrieval`).

CSLS needs, for every query, the mean of its ``knn`` largest cosines to the candidates (r_q),
and for every candidate the mean of its ``knn`` largest cosines to the queries (r_c). Both
come from one blocked GEMM pass: for each score block S = Qn[b] @ Cnᵀ (rows = queries),

* :func:`topk_rows` keeps each row's ``knn`` largest scores (a threshold test per entry, an
  insertion only when a score beats the row's current k-th largest: O(n) compares per row);
* :func:`topk_cols_update` merges the block into a running (n_c, knn) buffer of each column's
  ``knn`` largest scores, reading S row by row (contiguous) with the same threshold test.

The ranks pass uses :func:`csls_count_greater`, which counts ``2 s − r_q − r_c > best`` per
row without writing the CSLS scores (same IEEE operations, in the same order, as
``(2 * S − r_q[:, None]) − r_c[None, :]``, so the ranks equal the NumPy formula's bit for bit).

The plain NumPy references are :func:`topk_rows_reference`, :func:`topk_cols_reference` and
:func:`csls_count_reference`; ``tests/test_retrieval_kernels.py`` checks each kernel against them.
Only the *multiset* of the ``knn`` largest values is used (its mean), so ties need no rule.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["topk_rows", "topk_cols_update", "csls_count_greater", "topk_rows_reference",
           "topk_cols_reference", "csls_count_reference"]


@njit(parallel=True, cache=True)
def topk_rows(S, knn, out):
    """out[i, :] = the ``knn`` largest entries of S[i] (in no particular order)."""
    b, n = S.shape
    for i in prange(b):
        top = out[i]
        for q in range(knn):
            top[q] = S[i, q]
        # position and value of the smallest kept entry
        amin = 0
        for q in range(1, knn):
            if top[q] < top[amin]:
                amin = q
        thr = top[amin]
        for j in range(knn, n):
            v = S[i, j]
            if v > thr:
                top[amin] = v
                amin = 0
                for q in range(1, knn):
                    if top[q] < top[amin]:
                        amin = q
                thr = top[amin]


@njit(parallel=True, cache=True)
def topk_cols_update(S, top, thr, amin, nthreads):
    """Merge the columns of S (b, n) into ``top`` (n, knn), each column's largest entries so far.

    ``thr[j]`` is the smallest value kept for column j and ``amin[j]`` its slot; start with
    ``top = thr = -inf`` and ``amin = 0``. Columns are split into ``nthreads`` contiguous
    ranges; each thread reads its range of every row of S (contiguous).
    """
    b, n = S.shape
    knn = top.shape[1]
    nchunks = max(min(nthreads, n), 1)
    size = (n + nchunks - 1) // nchunks
    for c in prange(nchunks):
        j0 = c * size
        j1 = min(n, j0 + size)
        for i in range(b):
            for j in range(j0, j1):
                v = S[i, j]
                if v > thr[j]:
                    top[j, amin[j]] = v
                    a = 0
                    for q in range(1, knn):
                        if top[j, q] < top[j, a]:
                            a = q
                    amin[j] = a
                    thr[j] = top[j, a]


@njit(parallel=True, cache=True)
def csls_count_greater(S, r_q, r_c, best, out):
    """out[i] = #{j : (2 S[i, j] − r_q[i]) − r_c[j] > best[i]} (no score matrix written)."""
    b, n = S.shape
    two = S.dtype.type(2)
    for i in prange(b):
        ri = r_q[i]
        bi = best[i]
        cnt = 0
        for j in range(n):
            if (two * S[i, j] - ri) - r_c[j] > bi:
                cnt += 1
        out[i] = cnt


# ------------------------------------------------------------------------------ references
def topk_rows_reference(S: np.ndarray, knn: int) -> np.ndarray:
    """The ``knn`` largest entries of every row, sorted ascending."""
    return np.sort(S, axis=1)[:, S.shape[1] - knn:]


def topk_cols_reference(S: np.ndarray, knn: int) -> np.ndarray:
    """(n, knn): the ``knn`` largest entries of every column, sorted ascending."""
    return np.sort(S, axis=0)[S.shape[0] - knn:].T


def csls_count_reference(S, r_q, r_c, best) -> np.ndarray:
    return np.count_nonzero((2 * S - r_q[:, None]) - r_c[None, :] > best[:, None], axis=1)
