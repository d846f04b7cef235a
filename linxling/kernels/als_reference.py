"""Plain NumPy references of the ALS kernels in :mod:`linxling.kernels.als` (test oracles).

Every function forms each row's k × k system densely and calls ``np.linalg.solve``; nothing
here is fast, everything here is easy to check against eqs. (1)–(5) of Aldarmaki & Diab (2016).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["half_step_reference", "half_step_cg_reference", "half_step_multi_reference",
           "dense_weights", "dense_als_half_step", "wmf_loss_reference"]


def _row_system(X: sp.csr_matrix, u: int, Y: np.ndarray, dw: np.ndarray, G: np.ndarray):
    lo, hi = X.indptr[u], X.indptr[u + 1]
    idx, vals = X.indices[lo:hi], X.data[lo:hi]
    Yu = Y[idx]
    A = G + (Yu * dw[idx, None]).T @ Yu
    b = Yu.T @ vals
    return A, b


def _gram(Ys, ws, lam, k):
    G = sum(w * (Yl.T @ Yl) for Yl, w in zip(Ys, ws))
    return G + lam * np.eye(k)


def half_step_reference(X, Y: np.ndarray, *, missing_weight: float, regularization: float):
    """Rows of ``(w_m YᵀY + (1 − w_m) Σ_nz y_i y_iᵀ + λI)⁻¹ Σ_nz X_ui y_i``; shape (n_rows, k)."""
    X = sp.csr_matrix(X)
    k = Y.shape[1]
    G = _gram([Y], [missing_weight], regularization, k)
    dw = np.full(Y.shape[0], 1.0 - missing_weight)
    out = np.zeros((X.shape[0], k), dtype=Y.dtype)
    for u in range(X.shape[0]):
        if X.indptr[u] == X.indptr[u + 1]:
            continue
        A, b = _row_system(X, u, Y, dw, G)
        out[u] = np.linalg.solve(A, b)
    return out


def half_step_cg_reference(X, Y: np.ndarray, X0: np.ndarray, *, missing_weight: float,
                           regularization: float, cg_steps: int = 3):
    """``cg_steps`` of textbook CG per row on the dense row system, started at ``X0``."""
    X = sp.csr_matrix(X)
    k = Y.shape[1]
    G = _gram([Y], [missing_weight], regularization, k)
    dw = np.full(Y.shape[0], 1.0 - missing_weight)
    out = np.array(X0, dtype=Y.dtype, copy=True)
    for u in range(X.shape[0]):
        if X.indptr[u] == X.indptr[u + 1]:
            out[u] = 0
            continue
        A, b = _row_system(X, u, Y, dw, G)
        x = out[u].astype(np.float64)
        r = b - A @ x
        p = r.copy()
        rs = r @ r
        tiny = 1e-30 + 1e-24 * rs
        if rs > 1e-30:
            for _ in range(cg_steps):
                Ap = A @ p
                pAp = p @ Ap
                if not pAp > 0:
                    break
                a = rs / pAp
                x = x + a * p
                r = r - a * Ap
                rsn = r @ r
                if rsn < tiny:
                    break
                p = r + (rsn / rs) * p
                rs = rsn
        out[u] = x
    return out


def half_step_multi_reference(Xs: Sequence, Ys: Sequence[np.ndarray], *, missing_weights,
                              regularization: float):
    """b-WMF row solve summing the systems of several languages (eq. 5, first line)."""
    L = len(Xs)
    ws = np.broadcast_to(np.asarray(missing_weights, dtype=np.float64), (L,))
    Xs = [sp.csr_matrix(X) for X in Xs]
    k = Ys[0].shape[1]
    G = _gram(Ys, ws, regularization, k)
    n = Xs[0].shape[0]
    out = np.zeros((n, k), dtype=Ys[0].dtype)
    for u in range(n):
        A = G.copy()
        b = np.zeros(k)
        for X, Y, w in zip(Xs, Ys, ws):
            Al, bl = _row_system(X, u, Y, np.full(Y.shape[0], 1.0 - w), np.zeros((k, k)))
            A += Al
            b += bl
        out[u] = np.linalg.solve(A, b)
    return out


def dense_weights(X, missing_weight: float) -> np.ndarray:
    """The explicit weight matrix W of eq. (1): 1 where X ≠ 0, w_m elsewhere."""
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    return np.where(Xd != 0, 1.0, missing_weight)


def dense_als_half_step(Xd: np.ndarray, W: np.ndarray, F: np.ndarray, regularization: float):
    """Eq. (2)/(3) literally: column j of the solution is (F W^j Fᵀ + λI)⁻¹ F W^j X_j.

    Here the paper's column-major convention is used: ``Xd`` (m, n), ``W`` (m, n) and the fixed
    factor ``F`` (k, m); the result has shape (k, n). For eq. (2) pass X, W, P; for eq. (3)
    pass Xᵀ, Wᵀ, Q.
    """
    k, m = F.shape
    n = Xd.shape[1]
    out = np.empty((k, n))
    for j in range(n):
        Wj = np.diag(W[:, j])
        out[:, j] = np.linalg.solve(F @ Wj @ F.T + regularization * np.eye(k), F @ Wj @ Xd[:, j])
    return out


def wmf_loss_reference(Xd: np.ndarray, W: np.ndarray, P: np.ndarray, Q: np.ndarray,
                       regularization: float) -> float:
    """Eq. (1) literally: Σ W_ij (P_iᵀQ_j − X_ij)² + λ(‖P‖² + ‖Q‖²), X (m, n), P (k, m), Q (k, n)."""
    R = P.T @ Q - Xd
    return float(np.sum(W * R * R) + regularization * (np.sum(P * P) + np.sum(Q * Q)))
