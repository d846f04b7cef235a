"""Numba kernels for weighted matrix factorisation by alternating least squares.

One *half-step* of ALS for WMF (Guo & Diab 2012; Aldarmaki & Diab 2016, eqs. 2/3) solves,
for every row ``u`` of a CSR matrix ``X`` (n_rows, n_cols) with the other factor ``Y``
(n_cols, k) fixed,

    (w_m YᵀY + Σ_{i∈nz(u)} (1 − w_m) y_i y_iᵀ + λI) x_u = Σ_{i∈nz(u)} X_ui y_i,

the normal equations of Σ_i W_ui (x_uᵀy_i − X_ui)² + λ‖x_u‖² with W = 1 on nonzeros and
W = w_m on zeros: P W^j Pᵀ = w_m PPᵀ + (1 − w_m) Σ_nz p_i p_iᵀ and P W^j X_j = Σ_nz X_ij p_i.
The Gram ``w_m YᵀY + λI`` is formed once per half-step (BLAS); each row then costs
O(k²·nnz_row) plus its solve (Hu, Koren & Volinsky 2008, Sec. 4).

All kernels take a per-column weight ``dw`` (n_cols,) = W_nonzero − W_zero of the column
(``1 − w_m`` for WMF); a b-WMF row whose system sums over several languages is the same
kernel on the column-stacked matrix [X_1 | X_2 | ...] with the row-stacked factors
[Y_1; Y_2; ...], ``G = Σ_l w_l Y_lᵀY_l + λI`` and ``dw`` = 1 − w_l on language l's columns
(:func:`als_half_step_multi`).

Solvers
-------
``"cholesky"``
    Exact. In the Gram's whitened basis (``M = QΛ^(-1/2)``, ``MᵀGM = I``, when G is safely
    positive definite and the rows are many enough to pay for its eigendecomposition): a row
    of n < k nonzeros is ``(I + WᵀW) z = b̂`` with an n × k block W, solved by the Woodbury
    identity through an n × n Cholesky factor, and ``x = M z``. Otherwise (and for rows of at
    least k nonzeros) the lower triangle of the row's k × k system is accumulated (nonzeros in
    blocks of 16 so a row of the system stays in L1), factorised in place and solved.
``"cg"``
    Conjugate gradient warm-started from the current row (Takács, Pilászy & Tikk 2011, as in
    ``implicit``): ``cg_steps`` iterations, the row matrix applied implicitly in
    O(k·nnz_row + k²) per step, never formed. Given ``hot=`` (:func:`hot_plan`), the longest
    rows run the same CG with their products summed from the transposed matrix, which reads
    the fixed factor in order instead of gathering its rows in every step.

Rows run in parallel (``prange``) over ``numba.get_num_threads()`` strided chunks, each with
its own scratch buffers (no allocation per row). Rows without nonzeros get the zero vector
(the exact solution: the right-hand side is zero). A plain NumPy version of every kernel is
in :mod:`linxling.kernels.als_reference`.
"""
from __future__ import annotations

from typing import Sequence

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from linxling._sparse import renumbered, used_columns
from linxling.kernels._fastmath import SIMD_SUMS
from linxling.kernels._prefetch import PREFETCH_DISTANCE as PD
from linxling.kernels._prefetch import prefetch_row
from linxling.kernels.dense import gram_tn, matmul_rows, matmul_rows_inplace

__all__ = ["als_half_step", "als_half_step_multi", "gram", "wmf_loss", "nonzero_sums",
           "hot_plan", "hot_plans", "factor_sketch", "SOLVERS"]

SOLVERS = ("cholesky", "cg")
_FM = set(SIMD_SUMS)  # allow SIMD reductions; keep inf/nan semantics
_BLOCK = 16  # nonzeros accumulated together when forming a row's system
# rows whose CG iterations share one GEMM with the Gram matrix. Measured on the 200,000 x 50,000
# WMF benchmark (k = 100, cg_steps 3, 2-core AMD EPYC, BLAS limited to one thread as in a fit):
# the sentence half-step (200,000 rows, the Gram products 2/3 of its flops) took 0.39 s with 8
# rows, 0.31 s with 16, 0.27 s with 32 (float32; float64 0.50 / 0.44 / 0.40 s), the word half-step
# 0.28 / 0.27 / 0.26 s; with OPENBLAS_CORETYPE=Prescott 0.51 -> 0.40 s. 64 rows doubled both
# (0.56 s): the (64, k) x (k, k) product leaves OpenBLAS's small-matrix path, whose calls from
# the two numba threads then contend (not with OPENBLAS_NUM_THREADS=1 set before start-up)
_CG_BATCH = 32
# rows whose warm starts are rotated into the Gram's eigenbasis (and their solutions back) by one
# GEMM with Q when a half-step runs in that basis (eigen_basis_pays): the rotations take
# (S, k) x (k, k) products, which OpenBLAS runs faster the taller they are. Measured on a 2-core
# AMD EPYC (Zen 5, 2026-11-30; 200,000 x 100 rows by a 100 x 100 matrix on the two numba threads,
# BLAS one thread each): float32 0.0323 s in 32-row products, 0.0539 / 0.0320 / 0.0295 / 0.0240 s
# in 64 / 128 / 256 / 512 rows; float64 0.0498 s, 0.0455 / 0.0424 / 0.0419 / 0.0409 s; the
# sentence half-step of the WMF benchmark spent 0.067 s (float32) of its 0.20 s in the rotations.
_ROTATE_BATCH = 512


# --------------------------------------------------------------------------------------------
# per-row building blocks (inlined into the parallel kernels)
# --------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=_FM, inline="always")
def _cholesky_solve_inplace(A, b, k):
    """Factorise the lower triangle of A (k × k, C order) in place and overwrite b with A⁻¹b.

    Returns False when A is not numerically positive definite.
    """
    one = A.dtype.type(1)
    for j in range(k):
        s = A[j, j]
        for m in range(j):
            s -= A[j, m] * A[j, m]
        if not s > 0:
            return False
        d = np.sqrt(s)
        A[j, j] = d
        inv = one / d
        for i in range(j + 1, k):
            t = A[i, j]
            for m in range(j):
                t -= A[i, m] * A[j, m]
            A[i, j] = t * inv
    # forward: L z = b (row-oriented, contiguous)
    for i in range(k):
        t = b[i]
        for m in range(i):
            t -= A[i, m] * b[m]
        b[i] = t / A[i, i]
    # backward: Lᵀ x = z (column sweep using rows of L, contiguous)
    for i in range(k - 1, -1, -1):
        xi = b[i] / A[i, i]
        b[i] = xi
        for m in range(i):
            b[m] -= A[i, m] * xi
    return True


@njit(cache=True, fastmath=_FM, inline="always")
def _dense_row(u, indptr, indices, data, Y, G, dw, out, A, b, b0, Yb, Wb):
    """Row u solved exactly by its k × k system ``(G + Σ dw_i y_i y_iᵀ) x = Σ X_ui y_i``, formed
    in blocks of _BLOCK nonzeros (a row of A stays in L1) and factorised in place; ``out[u] = x``.
    Returns ``x·b``, or NaN (and ``out[u]`` NaN) when the system is not numerically positive
    definite."""
    k = out.shape[1]
    start = indptr[u]
    end = indptr[u + 1]
    for j in range(k):
        b[j] = 0
        for m in range(j + 1):
            A[j, m] = G[j, m]
    for s0 in range(start, end, _BLOCK):
        nb = min(_BLOCK, end - s0)
        for q in range(nb):
            i = indices[s0 + q]
            w = dw[i]
            x = data[s0 + q]
            for j in range(k):
                yij = Y[i, j]
                Yb[q, j] = yij
                Wb[q, j] = w * yij
                b[j] += x * yij
        # A[j, :j+1] += Σ_q Wb[q, j] Yb[q, :j+1]   (row j of A stays in L1)
        for j in range(k):
            for q in range(nb):
                t = Wb[q, j]
                for m in range(j + 1):
                    A[j, m] += t * Yb[q, m]
    for j in range(k):
        b0[j] = b[j]
    if not _cholesky_solve_inplace(A, b, k):
        for j in range(k):
            out[u, j] = np.nan
        return np.nan
    t = b[0] * 0
    for j in range(k):
        out[u, j] = b[j]
        t += b[j] * b0[j]
    return np.float64(t)


@njit(parallel=True, cache=True, fastmath=_FM)
def _half_step_cholesky(indptr, indices, data, Y, G, dw, out, nthreads):
    n, k = out.shape
    nchunks = max(min(nthreads, n), 1)
    bad = np.zeros(nchunks, dtype=np.int64)
    quad = np.zeros(nchunks)
    for c in prange(nchunks):
        A = np.empty((k, k), dtype=Y.dtype)
        b = np.empty(k, dtype=Y.dtype)
        b0 = np.empty(k, dtype=Y.dtype)
        qsum = 0.0
        Yb = np.empty((_BLOCK, k), dtype=Y.dtype)   # gathered factor rows of one block
        Wb = np.empty((_BLOCK, k), dtype=Y.dtype)   # the same rows scaled by dw
        for u in range(c, n, nchunks):
            if indptr[u] == indptr[u + 1]:
                for j in range(k):
                    out[u, j] = 0
                continue
            t = _dense_row(u, indptr, indices, data, Y, G, dw, out, A, b, b0, Yb, Wb)
            if np.isnan(t):
                bad[c] += 1
            else:
                qsum += t
        quad[c] = qsum
    return bad.sum(), quad.sum()


@njit(parallel=True, cache=True, fastmath=_FM)
def _half_step_whitened(indptr, indices, data, Yw, sdw, dw, out, nthreads, short_max):
    """Exact rows in the Gram's whitened basis (see :func:`_whitening`): with the rows ``ŷ_i`` of
    ``Yw`` (= Y M, MᵀGM = I), row u's system is ``(I + Σ dw_i ŷ_i ŷ_iᵀ) z = b̂ = Σ X_ui ŷ_i``
    (``x = M z``; ``out[u] = z``, the caller maps back). A row of n ≤ ``short_max`` nonzeros
    solves it by the Woodbury identity, ``z = b̂ − Wᵀ (I + W Wᵀ)⁻¹ W b̂`` with the n × k
    block ``W`` of rows ``√dw_i ŷ_i`` packed in L1: O(n²k + n³) instead of the k × k system's
    O(nk² + k³). Longer rows form ``I + Σ dw_i ŷ_i ŷ_iᵀ`` as :func:`_half_step_cholesky`.
    Returns (rows not numerically positive definite, Σ z·b̂ = Σ x·b)."""
    n, k = out.shape
    nchunks = max(min(nthreads, n), 1)
    bad = np.zeros(nchunks, dtype=np.int64)
    quad = np.zeros(nchunks)
    eye = np.eye(k, dtype=Yw.dtype)
    m_short = max(min(short_max, k), 1)
    for c in prange(nchunks):
        A = np.empty((k, k), dtype=Yw.dtype)
        b = np.empty(k, dtype=Yw.dtype)
        b0 = np.empty(k, dtype=Yw.dtype)
        Yb = np.empty((_BLOCK, k), dtype=Yw.dtype)
        Wb = np.empty((_BLOCK, k), dtype=Yw.dtype)
        W = np.empty((m_short, k), dtype=Yw.dtype)    # √dw_i ŷ_i of a short row, packed
        S = np.empty((m_short, m_short), dtype=Yw.dtype)
        t = np.empty(m_short, dtype=Yw.dtype)
        zero = Yw.dtype.type(0)
        one = Yw.dtype.type(1)
        qsum = 0.0
        for u in range(c, n, nchunks):
            s = indptr[u]
            e = indptr[u + 1]
            nz = e - s
            if nz == 0:
                for j in range(k):
                    out[u, j] = zero
                continue
            if nz > m_short:
                q = _dense_row(u, indptr, indices, data, Yw, eye, dw, out, A, b, b0, Yb, Wb)
                if np.isnan(q):
                    bad[c] += 1
                else:
                    qsum += q
                continue
            for j in range(k):
                b[j] = zero
            for a in range(nz):
                i = indices[s + a]
                w = sdw[i]
                x = data[s + a]
                for j in range(k):
                    yij = Yw[i, j]
                    W[a, j] = w * yij
                    b[j] += x * yij
            # S = I + W Wᵀ (lower triangle) and t = W b̂
            for a in range(nz):
                for a2 in range(a + 1):
                    acc = zero
                    for j in range(k):
                        acc += W[a, j] * W[a2, j]
                    S[a, a2] = acc
                S[a, a] += one
                acc = zero
                for j in range(k):
                    acc += W[a, j] * b[j]
                t[a] = acc
            if not _cholesky_solve_inplace(S, t, nz):
                bad[c] += 1
                for j in range(k):
                    out[u, j] = np.nan
                continue
            # z = b̂ − Wᵀ t;  z·b̂ = Σ_u x·b
            for j in range(k):
                out[u, j] = b[j]
            for a in range(nz):
                ta = t[a]
                for j in range(k):
                    out[u, j] -= ta * W[a, j]
            acc = zero
            for j in range(k):
                acc += out[u, j] * b[j]
            qsum += np.float64(acc)
        quad[c] = qsum
    return bad.sum(), quad.sum()


@njit(cache=True, inline="always")
def _prefetch_head(Y, indices, s, e):
    """Prefetch the factor rows of a CSR row's first PD nonzeros (the loop over the row then
    prefetches PD nonzeros ahead)."""
    for idx in range(s, min(e, s + PD)):
        prefetch_row(Y, indices[idx])


@njit(cache=True, fastmath=_FM, inline="always")
def _four_dots(Y, indices, idx, e, v, b, k):
    """Prefetch the rows of Y that nonzeros ``idx + PD .. idx + PD + 3`` gather, and return the
    four rows ``i0..i3`` of nonzeros ``idx..idx + 3`` with their dot products ``y_i·v[b]``
    (independent sums, in flight together); ``k``: the factor's width."""
    zero = Y.dtype.type(0)
    for q in range(4):
        if idx + q + PD < e:
            prefetch_row(Y, indices[idx + q + PD])
    i0, i1, i2, i3 = indices[idx], indices[idx + 1], indices[idx + 2], indices[idx + 3]
    t0 = zero
    t1 = zero
    t2 = zero
    t3 = zero
    for j in range(k):
        vj = v[b, j]
        t0 += Y[i0, j] * vj
        t1 += Y[i1, j] * vj
        t2 += Y[i2, j] * vj
        t3 += Y[i3, j] * vj
    return i0, i1, i2, i3, t0, t1, t2, t3


@njit(cache=True, fastmath=_FM, inline="always")
def _one_dot(Y, indices, idx, e, v, b, k):
    """The row ``i`` of Y that nonzero ``idx`` gathers and ``y_i·v[b]``; prefetches the row of
    nonzero ``idx + PD``."""
    if idx + PD < e:
        prefetch_row(Y, indices[idx + PD])
    i = indices[idx]
    t = Y.dtype.type(0)
    for j in range(k):
        t += Y[i, j] * v[b, j]
    return i, t


@njit(cache=True, fastmath=_FM, inline="always")
def _residual_row(Y, indices, data, dw, s, e, x, r, bv, b, k):
    """``r[b] += Σ (X_ui − dw_i y_i·x[b]) y_i`` and ``bv[b] += Σ X_ui y_i`` over the nonzeros
    ``s:e`` of a row, four nonzeros per pass (independent dot products in flight, one update of
    ``r[b]`` and ``bv[b]`` per four rows of Y), each row of Y prefetched PD nonzeros ahead."""
    _prefetch_head(Y, indices, s, e)
    idx = s
    while idx + 4 <= e:
        i0, i1, i2, i3, t0, t1, t2, t3 = _four_dots(Y, indices, idx, e, x, b, k)
        v0, v1, v2, v3 = data[idx], data[idx + 1], data[idx + 2], data[idx + 3]
        c0 = v0 - dw[i0] * t0
        c1 = v1 - dw[i1] * t1
        c2 = v2 - dw[i2] * t2
        c3 = v3 - dw[i3] * t3
        for j in range(k):
            y0, y1, y2, y3 = Y[i0, j], Y[i1, j], Y[i2, j], Y[i3, j]
            r[b, j] += (c0 * y0 + c1 * y1) + (c2 * y2 + c3 * y3)
            bv[b, j] += (v0 * y0 + v1 * y1) + (v2 * y2 + v3 * y3)
        idx += 4
    while idx < e:
        i, t = _one_dot(Y, indices, idx, e, x, b, k)
        xv = data[idx]
        coef = xv - dw[i] * t
        for j in range(k):
            r[b, j] += coef * Y[i, j]
            bv[b, j] += xv * Y[i, j]
        idx += 1


@njit(cache=True, fastmath=_FM, inline="always")
def _sparse_apply_row(Y, indices, dw, s, e, p, Ap, b, k):
    """``Ap[b] += Σ dw_i (y_i·p[b]) y_i`` over the nonzeros ``s:e`` of a row (the sparse part of
    a CG step), four nonzeros per pass as in :func:`_residual_row`."""
    _prefetch_head(Y, indices, s, e)
    idx = s
    while idx + 4 <= e:
        i0, i1, i2, i3, t0, t1, t2, t3 = _four_dots(Y, indices, idx, e, p, b, k)
        t0 *= dw[i0]
        t1 *= dw[i1]
        t2 *= dw[i2]
        t3 *= dw[i3]
        for j in range(k):
            Ap[b, j] += (t0 * Y[i0, j] + t1 * Y[i1, j]) + (t2 * Y[i2, j] + t3 * Y[i3, j])
        idx += 4
    while idx < e:
        i, t = _one_dot(Y, indices, idx, e, p, b, k)
        t *= dw[i]
        for j in range(k):
            Ap[b, j] += t * Y[i, j]
        idx += 1


@njit(cache=True, fastmath=_FM, inline="always")
def _gram_times(G, v, out, nb):
    """``out[:nb] = v[:nb] @ G``: one BLAS GEMM, or, for G of one row (the diagonal of the Gram in
    its eigenbasis, see :func:`_run`), a scaling of each column."""
    if G.shape[0] == 1:
        for b in range(nb):
            _diag_times_row(G, v, out, b, v.shape[1])
    else:
        np.dot(v[:nb], G, out[:nb])


@njit(cache=True, fastmath=_FM, inline="always")
def _diag_times_row(G, v, out, b, k):
    """``out[b] = G[0] * v[b]``: row b times a Gram of one row (its diagonal, in its eigenbasis)."""
    for j in range(k):
        out[b, j] = G[0, j] * v[b, j]


@njit(cache=True, fastmath=_FM, inline="always")
def _cg_start_row(r, p, rsold, tiny, active, b, k):
    """Start CG on row b from its residual ``r[b]``: ``p[b] = r[b]``, ``rsold[b] = ‖r[b]‖²``,
    the stopping threshold ``tiny[b]`` and whether the row is active."""
    rs = r.dtype.type(0)
    for j in range(k):
        p[b, j] = r[b, j]
        rs += r[b, j] * r[b, j]
    rsold[b] = rs
    tiny[b] = r.dtype.type(1e-30) + r.dtype.type(1e-24) * rs
    active[b] = rs > 1e-30


@njit(cache=True, fastmath=_FM, inline="always")
def _cg_update_row(x, r, p, Ap, rsold, tiny, active, b, k):
    """One CG step of row b once ``Ap[b]`` (the row matrix times ``p[b]``) is known: x, r and the
    direction p updated, the row deactivated on breakdown (pᵀAp ≤ 0) or convergence."""
    zero = x.dtype.type(0)
    pAp = zero
    for j in range(k):
        pAp += p[b, j] * Ap[b, j]
    if not pAp > zero:
        active[b] = False
        return
    alpha = rsold[b] / pAp
    rsnew = zero
    for j in range(k):
        x[b, j] += alpha * p[b, j]
        r[b, j] -= alpha * Ap[b, j]
        rsnew += r[b, j] * r[b, j]
    if rsnew < tiny[b]:
        active[b] = False
        return
    beta = rsnew / rsold[b]
    for j in range(k):
        p[b, j] = r[b, j] + beta * p[b, j]
    rsold[b] = rsnew


@njit(cache=True, fastmath=_FM, inline="always")
def _start_row(Y, indices, data, dw, s, e, x, r, p, bv, rsold, tiny, active, b, k):
    """Start CG on row b (nonzeros ``s:e``) once ``r[b]`` holds its Gram term ``G x[b]``:
    ``r[b] = b − A x[b]`` (:func:`_residual_row` adds the sparse terms), ``bv[b] = b``, then
    :func:`_cg_start_row`."""
    zero = Y.dtype.type(0)
    for j in range(k):
        r[b, j] = -r[b, j]
        bv[b, j] = zero
    _residual_row(Y, indices, data, dw, s, e, x, r, bv, b, k)
    _cg_start_row(r, p, rsold, tiny, active, b, k)


@njit(cache=True, fastmath=_FM, inline="always")
def _row_quad(x, r, bv, b, k):
    """Row b's term of the objective, ``x[b]·(r[b] + bv[b])``, summed in the factor dtype."""
    t = x.dtype.type(0)
    for j in range(k):
        t += x[b, j] * (r[b, j] + bv[b, j])
    return np.float64(t)


@njit(cache=True, fastmath=_FM, inline="always")
def _cg_chunk(c, nchunks, rowlist, indptr, indices, data, Y, G, Q, Qt, dw, out, cg_steps, k):
    """CG for rows c, c + nchunks, ... in batches of _CG_BATCH: the batch's products with the
    Gram G are one BLAS GEMM (``V[:nb] @ G``), the sparse part takes four nonzeros per pass and
    prefetches each gathered row of Y a few nonzeros ahead
    (:func:`linxling.kernels._prefetch.prefetch_row`). Measured on the WMF benchmark's half-steps
    (float32, k = 100, 2-core AMD EPYC): four nonzeros per pass, with the 32-row batches, took the
    sentence half-step from 0.40 to 0.25 s and the word half-step from 0.31 to 0.24 s. In the
    Gram's eigenbasis (``Q`` not empty) the rows are gathered _ROTATE_BATCH at a time, their warm
    starts rotated by one GEMM and their solutions rotated back by another, and solved in
    between one row at a time, all of a row's steps at once (G is diagonal there: no product to
    share between rows)."""
    B = _CG_BATCH
    rotated = Q.shape[0] > 0
    S = _ROTATE_BATCH if rotated else B
    zero = Y.dtype.type(0)
    xs = np.empty((S, k), dtype=Y.dtype)         # the warm starts, then the solutions
    zs = np.empty((S, k), dtype=Y.dtype) if rotated else xs   # the same rows in the eigenbasis
    srows = np.empty(S, dtype=np.int64)
    bv = np.empty((B, k), dtype=Y.dtype)
    r = np.empty((B, k), dtype=Y.dtype)
    quad = 0.0
    p = np.empty((B, k), dtype=Y.dtype)
    Ap = np.empty((B, k), dtype=Y.dtype)
    active = np.empty(B, dtype=np.bool_)
    rsold = np.empty(B, dtype=Y.dtype)
    tiny = np.empty(B, dtype=Y.dtype)
    u_next = np.int64(c)
    step = np.int64(nchunks)
    nl = rowlist.size
    while u_next < nl:
        # gather the next rows of this chunk that have nonzeros (the others solve to zero)
        ns = 0
        while ns < S and u_next < nl:
            u = rowlist[u_next]
            u_next += step
            if indptr[u] == indptr[u + 1]:
                for j in range(k):
                    out[u, j] = zero
                continue
            srows[ns] = u
            for j in range(k):
                xs[ns, j] = out[u, j]
            ns += 1
        if ns == 0:
            break
        if rotated:                            # the warm starts into the Gram's eigenbasis
            np.dot(xs[:ns], Q, zs[:ns])
        for s0 in range(0, ns, B):
            nb = min(B, ns - s0)
            x = zs[s0:s0 + nb]
            rows = srows[s0:s0 + nb]
            if G.shape[0] == 1:
                # G diagonal (the eigenbasis): no product to share between the rows, so each row
                # runs all its steps at once, its gathered rows of Y still in L1 from the last
                # (the same inline steps per row as the batched loop below: the same bits,
                # tests/test_wmf.py::test_cg_one_row_at_a_time_equals_the_batched_loop). The WMF
                # benchmark's sentence half-step (200,000 x 50,000, k = 100, cg_steps 3; 2-core
                # Intel Xeon, 2026-12-02, fresh processes interleaved, medians of 11): float32
                # 0.205 / 0.216 / 0.213 -> 0.195 / 0.196 / 0.204 s, float64 0.460 / 0.486 ->
                # 0.433 / 0.435 s; on a Zen 5 AMD EPYC (2026-12-02, six interleaved rounds, the
                # median of each process's fastest of 12) 0.324 -> 0.328 s float32 (no gain),
                # 0.603 -> 0.575 s float64
                for b in range(nb):
                    u = rows[b]
                    s, e = indptr[u], indptr[u + 1]
                    _diag_times_row(G, x, r, b, k)
                    _start_row(Y, indices, data, dw, s, e, x, r, p, bv, rsold, tiny, active, b, k)
                    for _ in range(cg_steps):
                        if not active[b]:
                            break
                        _diag_times_row(G, p, Ap, b, k)
                        _sparse_apply_row(Y, indices, dw, s, e, p, Ap, b, k)
                        _cg_update_row(x, r, p, Ap, rsold, tiny, active, b, k)
                    quad += _row_quad(x, r, bv, b, k)
                continue
            # r = b − A x, with A x = G x + Σ dw_i (y_i·x) y_i and b = Σ X_ui y_i
            _gram_times(G, x, r, nb)
            for b in range(nb):
                u = rows[b]
                _start_row(Y, indices, data, dw, indptr[u], indptr[u + 1], x, r, p, bv, rsold, tiny,
                           active, b, k)
            for _ in range(cg_steps):
                any_active = False
                for b in range(nb):
                    any_active = any_active or active[b]
                if not any_active:
                    break
                _gram_times(G, p, Ap, nb)           # G p for the batch (inactive rows: unused)
                for b in range(nb):
                    if not active[b]:
                        continue
                    u = rows[b]
                    _sparse_apply_row(Y, indices, dw, indptr[u], indptr[u + 1], p, Ap, b, k)
                    _cg_update_row(x, r, p, Ap, rsold, tiny, active, b, k)
            for b in range(nb):
                quad += _row_quad(x, r, bv, b, k)
        if rotated:                            # the solutions back from the eigenbasis
            np.dot(zs[:ns], Qt, xs[:ns])
        for b in range(ns):
            u = srows[b]
            for j in range(k):
                out[u, j] = xs[b, j]
    return quad


# The factor width k bounds every inner loop of the CG kernels. numba compiles a kernel once for
# all widths, so LLVM sees k only at run time: it vectorises each loop with 16 float32 lanes
# unrolled four times and finishes the rest in narrower and scalar loops (k = 100: 64 + 4 x 8 +
# 4). Compiled with k a constant, each loop is unrolled whole (k = 100: six 16-lane steps and one
# of 4). Measured on the WMF benchmark (200,000 x 50,000, k = 100, cg_steps 3; 2-core AMD EPYC
# Zen 5, 2026-11-30, load 0.5-1.3, old and new interleaved): a pass over the frequent words
# 0.0240 -> 0.0164-0.0172 s float32; the word half-step 0.192 -> 0.154-0.160 s and the sentence
# half-step 0.184 -> 0.157-0.161 s (medians of 9, fresh processes); whole fits (floor runs)
# 0.415 / 0.401 -> 0.354 / 0.347 s per iteration float32, 0.722 / 0.696 -> 0.692 / 0.634 s
# float64. Not at every width (k = 50: the word half-step 0.120 -> 0.165 s), and a width costs
# its own compile (11-15 s per dtype for these kernels), so only the WMF family's default width is
# compiled as a constant (`linxling warmup` compiles it); other widths run the kernels compiled
# for any width (benchmarks/README.md, "The CG kernels compiled with the width a constant").
CONST_WIDTHS = frozenset({100})
_CG_KERNELS: dict = {}


def _make_cg_kernels(width: int):
    """The CG half-step's two parallel kernels, ``(half_step_cg, hot_pass)``, for factors of
    ``width`` columns (a compile-time constant), or of any width (``width=0``: read from the
    arrays). numba caches each on disk per width (the width is a closure variable)."""
    W = int(width)

    # Each kernel's closure holds the width and nothing else: numba keys its disk cache on a
    # pickle of the closure's cells, and a dispatcher in a cell (an inner jitted function) pickles
    # differently in every process, so such a kernel was compiled again by every new process.
    @njit(parallel=True, cache=True, fastmath=_FM)
    def half_step_cg(rowlist, indptr, indices, data, Y, G, Q, Qt, dw, out, cg_steps, nthreads):
        """Warm-started CG per row (implicit's algorithm) for the rows ``rowlist`` (strided over
        the threads), rows batched per pass over G."""
        n = rowlist.size
        nchunks = max(min(nthreads, n), 1)
        quad = np.zeros(nchunks)
        for c in prange(nchunks):
            k = W if W > 0 else out.shape[1]
            quad[c] = _cg_chunk(c, nchunks, rowlist, indptr, indices, data, Y, G, Q, Qt, dw, out, cg_steps, k)
        total = 0.0
        for c in range(nchunks):
            total += quad[c]
        return total

    @njit(parallel=True, cache=True, fastmath=_FM)
    def hot_pass(indptr, slots, slot0, data, bounds, Y, dw, src, acc, acc2, residual):
        """One pass over the transposed matrix's rows, part ``t`` of ``bounds`` on thread t
        (:func:`_hot_part`, inlined: the width a constant inside the parallel loop's body)."""
        for t in prange(bounds.size - 1):
            k = W if W > 0 else Y.shape[1]
            _hot_part(t, indptr, slots, slot0, data, bounds, Y, dw, src, acc, acc2, residual, k)

    return half_step_cg, hot_pass


def _cg_kernels(k: int):
    """:func:`_make_cg_kernels` for width ``k`` if it is in :data:`CONST_WIDTHS`, else for any
    width; made once per process."""
    width = int(k) if int(k) in CONST_WIDTHS else 0
    got = _CG_KERNELS.get(width)
    if got is None:
        got = _CG_KERNELS[width] = _make_cg_kernels(width)
    return got


def _half_step_cg(rowlist, indptr, indices, data, Y, G, Q, Qt, dw, out, cg_steps, nthreads):
    """CG on the rows ``rowlist`` (:func:`_cg_chunk` on each thread); returns their Σ x·(r + b)."""
    return _cg_kernels(out.shape[1])[0](rowlist, indptr, indices, data, Y, G, Q, Qt, dw, out,
                                        cg_steps, nthreads)


# --------------------------------------------------------------------------------------------
# hot rows: CG on the longest rows pushed from the other side's CSR
# --------------------------------------------------------------------------------------------
# A half-step's row with many nonzeros gathers that many rows of the fixed factor in every CG
# step; when the factor is larger than the cache (the word half-step of WMF gathers the sentence
# factor, 80 MB at 200,000 x 100 float32) each step reads them from memory again. For the
# longest rows ("hot": the frequent words of a Zipf vocabulary) the products go the other way:
# the threads walk the rows of the *transposed* matrix (the other half-step's CSR, so the fixed
# factor is read in order, once per pass) and add each nonzero's term into the hot row it
# belongs to, whose vectors (x or p, and the sums) stay in the cache. Every hot row runs the
# same CG as in the batch kernel (the same start, steps and stopping rules); only the order of
# the sums differs. Each thread takes a part of the transposed rows and sums into its own copy
# of the hot rows' vectors (no copy of the matrix: a nonzero of a cold column is skipped). The
# plan holds each nonzero's hot row (its "slot", -1 for a cold one; int16 when there are fewer
# than 32,768 hot rows), looked up once when the plan is made, so that a pass reads it in order
# instead of the nonzero's column and a table of every column: in a vocabulary that is not in
# falling frequency (a vectoriser's alphabetical one) the hot columns lie all over that table
# and the lookups missed the cache. Measured on the WMF benchmark's matrix (2-core AMD EPYC,
# 2026-11-29, float32, table and slots interleaved in one process, medians of 7, the same
# results to the bit): the word half-step 0.615 -> 0.521 s with the columns shuffled, 0.536 ->
# 0.482 s in their own order (falling frequency); whole fits 1.004 -> 0.947 and 0.965 -> 0.936 s
# per iteration (medians of 4). Ordering the hot rows themselves by frequency gained nothing.
# Measured on the WMF benchmark (200,000 x 50,000, 4M nonzeros, k = 100, cg_steps 3, 2-core AMD
# EPYC, 2026-11-27, variants interleaved in one process, medians): the word half-step 0.68 ->
# 0.52 s float32 with the 1,747 longest words pushed (69 % of the nonzeros; _HOT_BYTES 0.5 /
# 1 / 2 / 4 / 8 MiB: 0.60 / 0.57 / 0.52-0.56 / 0.55 / 0.58 s, within the noise); whole fits
# 1.23 -> 1.00 s per iteration float32 and 2.17 -> 1.79 s float64, the same losses (1e-7 /
# 1e-15 relative). Pushing every word was no faster than gathering (0.73 s: the sums of 50,000
# rows no longer fit the cache); prefetching the hot rows a few nonzeros ahead gained nothing.
_HOT_MIN_NNZ = 128        # shorter rows gather few enough rows that a batch's CG steps hit the cache
_HOT_BYTES = 2 << 20      # the hot rows' x (or p) and one thread's two sums: 3·H·k·itemsize at most
_HOT_MIN_SHARE = 0.05     # push only if the hot rows hold this share of the nonzeros (a pass
#                           over the transposed matrix reads every nonzero's index)


def hot_rows(counts: np.ndarray, k: int, dtype) -> np.ndarray | None:
    """The rows of a half-step to push (sorted), given their nonzero counts: the longest rows with
    at least ``_HOT_MIN_NNZ`` nonzeros whose vectors fit ``_HOT_BYTES``; ``None`` when they hold
    less than ``_HOT_MIN_SHARE`` of the nonzeros."""
    counts = np.asarray(counts, dtype=np.int64)
    cap = max(_HOT_BYTES // (3 * k * np.dtype(dtype).itemsize), 1)
    order = np.argsort(-counts, kind="stable")[:cap]
    hot = order[counts[order] >= _HOT_MIN_NNZ]
    total = int(counts.sum())
    if hot.size == 0 or int(counts[hot].sum()) < _HOT_MIN_SHARE * total:
        return None
    return np.sort(hot).astype(np.int64)


def hot_plan(push_parts, col0: int, counts: np.ndarray, k: int, dtype):
    """What :func:`als_half_step` needs to push a half-step's hot rows (``hot=``), or ``None``.

    ``push_parts`` are the CSR parts of the transposed matrix (the other half-step's rows), in
    which this half-step's row ``u`` is column ``col0 + u`` (``col0``: the language's offset in a
    column-stacked matrix); ``counts`` the nonzeros of each of this half-step's rows. The plan:
    ``hot`` and ``cold`` (this half-step's row numbers) and ``parts``, the push matrix's CSR with
    each nonzero's slot (its position in ``hot``, −1 for a cold column) in place of its column;
    the slots cost 2 bytes a nonzero (4 with 32,768 hot rows or more). :func:`hot_plans` makes
    the plans of several column blocks at once."""
    return hot_plans(push_parts, [(col0, counts)], k, dtype)[0]


def hot_plans(push_parts, blocks: Sequence, k: int, dtype) -> list:
    """:func:`hot_plan` for each column block ``(col0, counts)`` of one push matrix (each language
    of b-WMF's column-stacked matrix), with one slot array between them: each nonzero is in one
    block, so block b's hot rows take the slots from ``slot0`` (the hot rows of the blocks before
    it) and the plans cost 2 bytes a nonzero however many blocks there are, also while they are
    made (one table of every column, one pass over the nonzeros). ``None`` for a block with no
    hot rows."""
    hots = [hot_rows(counts, k, dtype) for _, counts in blocks]
    total = sum(h.size for h in hots if h is not None)
    if total == 0:
        return [None] * len(hots)
    indptr, indices, data = push_parts
    indices = indices[:indptr[-1]]
    width = max([int(indices.max()) + 1 if indices.size else 0]
                + [int(col0) + len(counts) for col0, counts in blocks])
    slot_of = np.full(width, -1, dtype=_slot_dtype(total))
    slot0s, slot0 = [], 0
    for (col0, _), hot in zip(blocks, hots, strict=True):
        slot0s.append(slot0)
        if hot is not None:
            slot_of[col0 + hot] = np.arange(slot0, slot0 + hot.size)
            slot0 += hot.size
    slots = slot_of[indices]
    plans = []
    for (col0, counts), hot, s0 in zip(blocks, hots, slot0s, strict=True):
        if hot is None:
            plans.append(None)
            continue
        cold = np.flatnonzero(slot_of[col0:col0 + len(counts)] < 0).astype(np.int64)
        plans.append({"parts": (indptr, slots, data), "hot": hot, "cold": cold, "slot0": s0})
    return plans


def _slot_dtype(n_hot: int) -> type:
    """The integer type of a plan's slots (hot-row numbers and -1)."""
    return np.int16 if n_hot < 2 ** 15 else np.int32


def hot_plan_local(parts, n_other: int, k: int, dtype):
    """A :func:`hot_plan` from a half-step's own CSR ``parts`` (rows solved, ``n_other`` columns:
    the fixed factor's rows), for a block that holds no transposed copy to push from (a Dask
    worker's column block): the hot rows' nonzeros transposed into a compact (n_other, H) CSR
    whose column j is hot row ``hot[j]``. Costs a copy of those nonzeros; ``None`` as
    :func:`hot_plan`."""
    indptr, indices, data = parts
    counts = np.diff(indptr)
    hot = hot_rows(counts, k, dtype)
    if hot is None:
        return None
    n_rows = counts.size
    sub = sp.csr_matrix((data, indices, indptr), shape=(n_rows, int(n_other)))[hot]
    p_indptr, p_indices, p_data = _csr_parts(sub.T.tocsr(), dtype)
    slots = p_indices.astype(_slot_dtype(hot.size))       # column j of the push is hot row j
    keep = np.ones(n_rows, dtype=bool)
    keep[hot] = False
    return {"parts": (p_indptr, slots, p_data), "hot": hot,
            "cold": np.flatnonzero(keep).astype(np.int64)}


@njit(cache=True, fastmath=_FM, inline="always")
def _hot_part(t, indptr, slots, slot0, data, bounds, Y, dw, src, acc, acc2, residual, k):
    """Part ``t`` of a pass over the transposed matrix's rows ``i`` (``bounds[t]:bounds[t + 1]``,
    summing into ``acc[t]``): for every nonzero of a hot row h = slots[nonzero] − slot0 in
    ``0:H`` (H = ``acc.shape[1]``; other slots are other blocks' or −1),
    ``acc[t, h] += (X − dw_i y_i·src[h]) y_i`` and ``acc2[t, h] += X y_i`` with ``residual``,
    else ``acc[t, h] += dw_i (y_i·src[h]) y_i``; ``k``: the factor's width."""
    H = acc.shape[1]
    zero = Y.dtype.type(0)
    a = acc[t]
    a2 = acc2[t]
    a[:] = zero
    if residual:
        a2[:] = zero
    for i in range(bounds[t], bounds[t + 1]):
        d = dw[i]
        for idx in range(indptr[i], indptr[i + 1]):
            h = slots[idx] - slot0
            if h < 0 or h >= H:
                continue
            s = zero
            for j in range(k):
                s += Y[i, j] * src[h, j]
            if residual:
                v = data[idx]
                c = v - d * s
                for j in range(k):
                    yj = Y[i, j]
                    a[h, j] += c * yj
                    a2[h, j] += v * yj
            else:
                c = d * s
                for j in range(k):
                    a[h, j] += c * Y[i, j]


def _hot_pass(indptr, slots, slot0, data, bounds, Y, dw, src, acc, acc2, residual):
    """One pass over the transposed matrix's rows, :func:`_hot_part` on each thread."""
    _cg_kernels(Y.shape[1])[1](indptr, slots, slot0, data, bounds, Y, dw, src, acc, acc2, residual)


@njit(cache=True, fastmath=_FM)
def _hot_start(x, r, p, bv, acc, acc2, rsold, tiny, active):
    """After the residual pass: r += Σ_t acc[t], bv = Σ_t acc2[t], then start CG on every row."""
    for b in range(x.shape[0]):
        for j in range(x.shape[1]):
            sr = r[b, j]
            sb = x.dtype.type(0)
            for t in range(acc.shape[0]):
                sr += acc[t, b, j]
                sb += acc2[t, b, j]
            r[b, j] = sr
            bv[b, j] = sb
        _cg_start_row(r, p, rsold, tiny, active, b, x.shape[1])


@njit(cache=True, fastmath=_FM)
def _hot_step(x, r, p, Ap, acc, rsold, tiny, active):
    """After a pass: Ap += Σ_t acc[t], then one CG step of every active row."""
    for b in range(x.shape[0]):
        if not active[b]:
            continue
        for j in range(x.shape[1]):
            s = Ap[b, j]
            for t in range(acc.shape[0]):
                s += acc[t, b, j]
            Ap[b, j] = s
        _cg_update_row(x, r, p, Ap, rsold, tiny, active, b, x.shape[1])


def _half_step_hot(plan, Y, G, Q, Qt, dw, out, cg_steps, nthreads) -> float:
    """CG on the hot rows of ``plan`` (:func:`hot_plan`), pushed; returns their Σ x·(r + b)."""
    indptr, slots, data = plan["parts"]
    slot0 = plan.get("slot0", 0)
    hot = plan["hot"]
    n_in = indptr.size - 1
    T = max(min(nthreads, n_in), 1)
    bounds = np.searchsorted(indptr, np.linspace(0, indptr[-1], T + 1)).astype(np.int64)
    bounds[0], bounds[-1] = 0, n_in
    H, k = hot.size, out.shape[1]
    x = out[hot] @ Q if Q.shape[0] else np.ascontiguousarray(out[hot])
    acc = np.empty((T, H, k), dtype=Y.dtype)
    acc2 = np.empty((T, H, k), dtype=Y.dtype)
    r, p, bv, Ap = np.empty_like(x), np.empty_like(x), np.empty_like(x), np.empty_like(x)
    _gram_times(G, x, r, H)
    np.negative(r, out=r)
    rsold, tiny = np.empty(H, dtype=Y.dtype), np.empty(H, dtype=Y.dtype)
    active = np.empty(H, dtype=np.bool_)
    _hot_pass(indptr, slots, slot0, data, bounds, Y, dw, x, acc, acc2, True)
    _hot_start(x, r, p, bv, acc, acc2, rsold, tiny, active)
    for _ in range(cg_steps):
        if not active.any():
            break
        _gram_times(G, p, Ap, H)
        _hot_pass(indptr, slots, slot0, data, bounds, Y, dw, p, acc, acc2, False)
        _hot_step(x, r, p, Ap, acc, rsold, tiny, active)
    out[hot] = x @ Qt if Q.shape[0] else x
    return float(np.einsum("ij,ij->i", x, r + bv, dtype=np.float64).sum())


@njit(parallel=True, cache=True, fastmath=_FM)
def _nonzero_sums(indptr, indices, data, E, V, nthreads):
    """Return (Σ_nz (X_ui − e_u·v_i)², Σ_nz (e_u·v_i)²); dots in the factor dtype, sums in float64."""
    n, k = E.shape
    nchunks = max(min(nthreads, n), 1)
    res = np.zeros(nchunks)
    pred = np.zeros(nchunks)
    zero = E.dtype.type(0)
    for c in prange(nchunks):
        s_res = 0.0
        s_pred = 0.0
        for u in range(c, n, nchunks):
            for idx in range(indptr[u], indptr[u + 1]):
                i = indices[idx]
                t = zero
                for j in range(k):
                    t += E[u, j] * V[i, j]
                t64 = np.float64(t)
                d = np.float64(data[idx]) - t64
                s_res += d * d
                s_pred += t64 * t64
        res[c] = s_res
        pred[c] = s_pred
    return res.sum(), pred.sum()


@njit(cache=True, fastmath=_FM)
def _content_sketch(V):
    """``Σ_i r_i V[i, :]`` in float64 with fixed pseudo-random weights ``r_i`` in [−½, ½)
    (a multiplicative hash of i): any change of V that moves its Gram beyond rounding moves
    this sketch, and the same V always gives the same bits (one thread, one fixed order)."""
    n, k = V.shape
    s = np.zeros(k)
    for i in range(n):
        r = np.float64((i * 2654435761 + 12345) % 4294967296) / 4294967296.0 - 0.5
        for j in range(k):
            s[j] += r * V[i, j]
    return s


def factor_sketch(V: np.ndarray) -> bytes:
    """A fingerprint of a factor's content (:func:`_content_sketch`, with its shape and dtype):
    what a cached Gram of V is keyed on, so that an edit of V in place is never served a Gram
    of its old values. About 1 ms for 50,000 x 100."""
    V = np.ascontiguousarray(V)
    return repr((V.shape, V.dtype.str)).encode() + _content_sketch(V).tobytes()


# --------------------------------------------------------------------------------------------
# Python wrappers
# --------------------------------------------------------------------------------------------
def _csr_parts(X: sp.csr_matrix, dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """indptr as int64, indices as int32 and data in the factor dtype (copies only if needed)."""
    if not sp.issparse(X) or X.format != "csr":
        X = sp.csr_matrix(X)
    return (np.asarray(X.indptr, dtype=np.int64), np.asarray(X.indices, dtype=np.int32),
            np.ascontiguousarray(X.data, dtype=dtype))


def gram(Y: np.ndarray, weight: float = 1.0, regularization: float = 0.0) -> np.ndarray:
    """``weight · YᵀY + regularization · I`` (k × k, C order, dtype of Y): BLAS products of fixed
    row parts, on all cores inside a fit (:func:`linxling.kernels.dense.gram_tn`)."""
    G = gram_tn(Y, Y).astype(Y.dtype) if isinstance(Y, np.ndarray) and Y.dtype.kind == "f" else Y.T @ Y
    if weight != 1.0:
        G *= Y.dtype.type(weight)
    if regularization:
        G[np.diag_indices_from(G)] += Y.dtype.type(regularization)
    return np.ascontiguousarray(G)


_EIGEN_BASIS = True


def eigen_basis_pays(n_fixed: int, n_out: int, cg_steps: int) -> bool:
    """Whether a CG half-step runs in the eigenbasis of its Gram G = QΛQᵀ.

    CG is invariant under an orthogonal change of variables: on z = Qᵀx, with the fixed factor
    rotated (Y Q, once per half-step) and the warm starts rotated (x Q, _ROTATE_BATCH rows per
    product, rotated back with Qᵀ after the last step), every row's iterates are Qᵀ times the
    original ones, and G becomes the diagonal Λ, so its product costs k instead of 2k² flops per
    row and step. The rotations cost 2k²(n_fixed + 2·n_out); they pay when that is less than the
    Gram products saved, 2k²(1 + cg_steps)·n_out, i.e. in the sentence half-step (n_fixed =
    words < (cg_steps − 1) × sentences), not in the word half-step. Measured on the WMF
    benchmark (200,000 x 50,000, k = 100, cg_steps 3, 2-core AMD EPYC, 2026-11-27, interleaved
    in one process): the sentence half-step 0.59 -> 0.47 s float32 and 0.94 -> 0.87 s float64
    (its 32-row GEMMs with the Gram ran at 62 / 37 GFLOP/s on both cores); rotating the whole
    sentence factor there and back instead of each batch's rows: 0.58 -> 0.51 s and 1.01 -> 1.06
    s. The rotations in products of _ROTATE_BATCH rows instead of each 32-row batch's
    (2026-11-30, Zen 5): 0.20-0.22 -> 0.18-0.19 s float32, float64 unchanged."""
    return _EIGEN_BASIS and n_fixed + 2 * n_out < (1 + cg_steps) * n_out


# the exact solver in the Gram's whitened basis (:func:`_half_step_whitened`) when its fixed costs
# (the eigendecomposition of G, the used rows of Y and the solutions mapped through M) are paid
# back by the rows' cheaper solves; _WHITEN_MIN: the smallest eigenvalue of G, relative to its
# largest, below which G counts as singular and every row forms its own k x k system instead.
_WHITEN_MIN = 1e-8


def _whitening(G: np.ndarray) -> np.ndarray | None:
    """``M = QΛ^(-1/2)`` (float64) with ``MᵀGM = I`` for ``G = QΛQᵀ``, or None when G is not
    safely positive definite (its smallest eigenvalue at most ``_WHITEN_MIN`` of its largest)."""
    lam, Q = np.linalg.eigh(np.asarray(G, dtype=np.float64))
    if not (np.all(np.isfinite(lam)) and lam[0] > _WHITEN_MIN * lam[-1] > 0):
        return None
    return Q / np.sqrt(lam)


def _whitened_pays(counts: np.ndarray, k: int, n_used: int) -> bool:
    """Whether :func:`_half_step_whitened` (plus its fixed costs) does fewer multiply-adds than
    :func:`_half_step_cholesky` on rows with ``counts`` nonzeros (``n_used`` rows of Y used):
    per row n·k²/2 + k³/6 against n²k/2 + n³/6 + 3nk (a row of n ≥ k nonzeros costs the same
    either way), plus 8k³ for the eigendecomposition and k² per used row of Y and per solved
    row for the changes of basis."""
    c = counts[counts > 0].astype(np.float64)
    dense = c * k * k / 2 + k ** 3 / 6
    short = np.minimum(c * c * k / 2 + c ** 3 / 6 + 3 * c * k, dense)
    fixed = 8.0 * k ** 3 + (n_used + c.size) * k * k
    return bool(short.sum() + fixed < dense.sum())


def _exact_rows(indptr, indices, data, Y, G, dw, out) -> tuple[int, float]:
    """Every row solved exactly (``solver="cholesky"``); (rows not positive definite, Σ x·b).

    In the whitened basis of G when that pays (:func:`_whitened_pays`) and G is safely positive
    definite and every ``dw`` ≥ 0: only the rows of Y the nonzeros use are mapped (``Y M``),
    rows shorter than k solve by the Woodbury identity, and the solutions come back as ``M z``.
    Otherwise every row forms and factorises its k × k system (:func:`_half_step_cholesky`).
    Measured on the WMF benchmark's sentences (200,000 rows of 20 nonzeros, k = 100, 2-core AMD
    EPYC, 2026-11-29): see benchmarks/README.md, "Exact solves by the Woodbury identity"."""
    nthreads = numba.get_num_threads()
    n, k = out.shape
    m = Y.shape[0]
    cols = used_columns(indices[:indptr[-1]], m)
    n_used = cols.size
    M = None
    if n and (dw.size == 0 or float(dw.min()) >= 0) and _whitened_pays(np.diff(indptr), k, n_used):
        M = _whitening(G)
    if M is None:
        return _half_step_cholesky(indptr, indices, data, Y, G, dw, out, nthreads)
    if 2 * n_used < m:          # map only the rows of Y the nonzeros gather
        indices = renumbered(indices[:indptr[-1]], cols, m)
        Y, dw = Y[cols], dw[cols]
    Yw = matmul_rows(np.ascontiguousarray(Y), M.astype(Y.dtype))
    sdw = np.sqrt(dw)
    bad, quad = _half_step_whitened(indptr, indices, data, Yw, sdw, dw, out, nthreads, k)
    matmul_rows_inplace(out, M.T)           # x = M z
    return bad, quad


def _run(parts, Y, G, dw, out, solver, cg_steps, hot=None):
    """Run a kernel; return Σ_u x_u·(A_u x_u − 2 b_u) (float64) — see als_half_step."""
    indptr, indices, data = parts
    # the CG kernel hands G to BLAS (np.dot inside numba), which, unlike NumPy, does not copy an
    # unaligned operand first: a Gram deserialised on a Dask worker can sit at any byte offset,
    # and OpenBLAS's generic (Prescott) gemv then crashes on it. A fresh k x k copy is aligned.
    G = np.array(G, dtype=Y.dtype, order="C")
    if solver == "cholesky":
        bad, quad = _exact_rows(indptr, indices, data, Y, G, dw, out)
        if bad:
            raise np.linalg.LinAlgError(
                f"{bad} row system(s) were not numerically positive definite; increase the "
                "regularization (alpha) or use float64")
    elif solver == "cg":
        nthreads = numba.get_num_threads()
        Q = Qt = np.empty((0, 0), dtype=Y.dtype)
        if eigen_basis_pays(Y.shape[0], out.shape[0], cg_steps):
            # CG in the Gram's eigenbasis: the same iterates rotated (see eigen_basis_pays)
            lam, Q = np.linalg.eigh(G.astype(np.float64))
            Q = np.ascontiguousarray(Q, dtype=Y.dtype)
            Qt = np.ascontiguousarray(Q.T)
            Y = matmul_rows(Y, Q)
            G = np.ascontiguousarray(lam[None, :], dtype=Y.dtype)
        rowlist = np.arange(out.shape[0], dtype=np.int64) if hot is None else hot["cold"]
        quad = _half_step_cg(rowlist, indptr, indices, data, Y, G, Q, Qt, dw, out, int(cg_steps), nthreads)
        if hot is not None:
            quad += _half_step_hot(hot, Y, G, Q, Qt, dw, out, int(cg_steps), nthreads)
    else:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    # x·(Ax − 2b) = −x·(r + b) with r = b − Ax; the kernels return Σ x·(r + b)
    return -float(quad)


def als_half_step(X, Y: np.ndarray, out: np.ndarray, *, missing_weight: float,
                  regularization: float, solver: str = "cholesky", cg_steps: int = 3,
                  parts=None, return_objective: bool = False, gram_matrix=None, hot=None):
    """Solve every row of ``X`` for its factor with ``Y`` fixed (one ALS half-step), in place.

    Parameters
    ----------
    X : sparse (n_rows, n_cols)
        Targets; nonzeros have weight 1, zeros weight ``missing_weight``.
    Y : ndarray (n_cols, k), float32 or float64, C-contiguous
        The fixed factor.
    out : ndarray (n_rows, k), same dtype as Y, C-contiguous
        Overwritten with the solution. With ``solver="cg"`` its content is the warm start.
    missing_weight : float
        w_m, the weight of zero entries.
    regularization : float
        λ.
    solver : {"cholesky", "cg"}
    cg_steps : int
        CG iterations per row (``solver="cg"``).
    parts : tuple, optional
        ``_csr_parts(X, dtype)`` precomputed (saves a conversion per call inside a fit loop).
    return_objective : bool
        Also return the objective of the solved rows, obtained for free from the kernels:
        Σ_u f_u(x_u) with f_u(x) = Σ_i W_ui (x·y_i − X_ui)² + λ‖x‖² = xᵀA_u x − 2b_uᵀx + Σ_nz X_ui²,
        where xᵀAx − 2bᵀx = −x·(r + b) uses the residual r = b − Ax the solver already has (CG
        keeps it by recurrence). Adding λ‖Y‖² gives eq. (1) at (out, Y) with no extra pass
        over the nonzeros.
    gram_matrix : ndarray (k, k), optional
        ``gram(Y, missing_weight, regularization)`` precomputed (a half-step over row chunks
        forms it once for all chunks).
    hot : dict, optional
        ``hot_plan(parts of Xᵀ, 0, nonzeros per row of X, k, dtype)``: with ``solver="cg"``,
        CG on those long rows walks Xᵀ (Y read in order) instead of gathering Y's rows in every
        step (see the notes above :func:`hot_rows`); the same solution up to rounding.

    Returns
    -------
    out : ndarray (n_rows, k)
    objective : float, only with ``return_objective``
    """
    dtype = Y.dtype
    if parts is None:
        parts = _csr_parts(X, dtype)
    G = gram(Y, missing_weight, regularization) if gram_matrix is None else gram_matrix
    dw = np.full(Y.shape[0], 1.0 - missing_weight, dtype=dtype)
    quad = _run(parts, Y, G, dw, out, solver, cg_steps, hot)
    if return_objective:
        data = parts[2]
        return out, float(np.dot(data, data)) + quad
    return out


def als_half_step_multi(Xs: Sequence, Ys: Sequence[np.ndarray], out: np.ndarray, *,
                        missing_weights, regularization: float, solver: str = "cholesky",
                        cg_steps: int = 3, stacked=None, return_objective: bool = False,
                        gram_matrix=None):
    """b-WMF half-step: each row's system sums the contributions of several languages.

    Row ``u`` solves (Σ_l [w_l Y_lᵀY_l + (1 − w_l) Σ_{i∈nz(X_l,u)} y_li y_liᵀ] + λI) x_u
    = Σ_l Σ_{i∈nz(X_l,u)} X_l[u,i] y_li (eq. 5, first line, for any number of languages).

    Parameters
    ----------
    Xs : sequence of sparse (n_rows, n_cols_l)
        Row-aligned matrices, one per language.
    Ys : sequence of ndarray (n_cols_l, k)
        Each language's fixed factor.
    out : ndarray (n_rows, k)
        Overwritten (warm start for CG).
    missing_weights : float or sequence of float
        w_l per language (one number for all).
    regularization : float
    solver, cg_steps : as in :func:`als_half_step`
    stacked : tuple, optional
        ``_csr_parts(hstack(Xs), dtype)`` precomputed.
    return_objective : bool
        As in :func:`als_half_step` (summed over the languages).
    gram_matrix : ndarray (k, k), optional
        ``Σ_l w_l Y_lᵀY_l + λI`` precomputed (for half-steps over row chunks).
    """
    L = len(Ys)
    if Xs is not None and len(Xs) != L:
        raise ValueError(f"Xs has {len(Xs)} matrices but Ys has {L}")
    ws = np.broadcast_to(np.asarray(missing_weights, dtype=np.float64), (L,))
    dtype = Ys[0].dtype
    Ycat = np.ascontiguousarray(np.concatenate(Ys, axis=0), dtype=dtype)
    if gram_matrix is None:
        G = sum(gram(Yl, float(w)) for Yl, w in zip(Ys, ws))
        G[np.diag_indices_from(G)] += dtype.type(regularization)
    else:
        G = gram_matrix
    dw = np.concatenate([np.full(Yl.shape[0], 1.0 - w, dtype=dtype) for Yl, w in zip(Ys, ws)])
    if stacked is None:
        stacked = _csr_parts(sp.hstack([sp.csr_matrix(X) for X in Xs], format="csr"), dtype)
    quad = _run(stacked, Ycat, G, dw, out, solver, cg_steps)   # _run copies G (aligned, C)
    if return_objective:
        data = stacked[2]
        return out, float(np.dot(data, data)) + quad
    return out


def nonzero_sums(X, E: np.ndarray, V: np.ndarray, parts=None) -> tuple[float, float]:
    """(Σ_nz (X_ui − e_u·v_i)², Σ_nz (e_u·v_i)²) in float64, for X (n, m), E (n, k), V (m, k)."""
    if parts is None:
        parts = _csr_parts(X, E.dtype)
    return _nonzero_sums(parts[0], parts[1], parts[2], E, V, numba.get_num_threads())


def wmf_loss(X, E: np.ndarray, V: np.ndarray, *, missing_weight: float,
             regularization: float, parts=None) -> float:
    """The WMF objective (eq. 1) without forming any dense n × m matrix.

    C = Σ_nz (X_ui − e_u·v_i)² + w_m (tr((EᵀE)(VᵀV)) − Σ_nz (e_u·v_i)²) + λ(‖E‖² + ‖V‖²),
    where tr((EᵀE)(VᵀV)) = Σ_{u,i} (e_u·v_i)² over all entries and ‖E‖² = tr(EᵀE). The Grams
    are BLAS products in the factor dtype; the sums are accumulated in float64.

    Parameters
    ----------
    X : sparse (n_rows, n_cols)
    E : ndarray (n_rows, k)   row factors (sentence vectors, Q transposed)
    V : ndarray (n_cols, k)   column factors (word vectors, P transposed)
    """
    res, pred = nonzero_sums(X, E, V, parts)
    GE = gram_tn(E, E)                  # BLAS products of row parts in the factor dtype, summed
    GV = gram_tn(V, V)                  # in float64
    total = float(np.sum(GE * GV))      # tr((EᵀE)(VᵀV)) = Σ_{u,i} (e_u·v_i)²
    reg = float(np.trace(GE) + np.trace(GV))
    return float(res + missing_weight * (total - pred) + regularization * reg)


