"""The Cr5 authors' algorithm, re-implemented as a plain reference and benchmark baseline.

This is how the original code worked (paper Sec. 3.2 and 5): ARPACK (``scipy.sparse.linalg.eigsh``)
on the K × K operator ŶᵀX̂ (X̂ᵀX̂ + λI)⁻¹ X̂ᵀŶ where *every* matvec runs one single-vector
``scipy.sparse.linalg.cg`` solve on the full centred Gram operator (no Woodbury, no blocks), then
Φ* by r single-vector CG solves (eq. 14) and orthonormal rows by eq. (15).

It is deliberately simple and slow; :class:`linxling.Cr5` is the fast path and is tested against
both this reference and a dense closed form.
"""
from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from linxling._progress import progress

__all__ = ["fit_paper_cr5"]


def fit_paper_cr5(blocks: Mapping[str, Any], concepts: Mapping[str, Any], n_components: int,
                  alpha: float = 1.0, *, cg_rtol: float = 1e-2, cg_maxiter: int = 500,
                  eig_tol: float = 1e-1, eig_maxiter: int = 250, random_state: int | None = 0,
                  show_progress: bool | None = None) -> dict:
    """Fit Cr5 the way the paper's code did.

    Parameters
    ----------
    blocks : mapping language -> sparse (n_l, p_l)
    concepts : mapping language -> array (n_l,) of hashable concept ids
    n_components : int
        r, the rank.
    alpha : float
        Ridge λ.
    cg_rtol, cg_maxiter, eig_tol, eig_maxiter : solver settings (paper: 1e-2, 500, 1e-1, 250)

    Returns
    -------
    dict with ``components`` (language -> (r, p_l) Φ_l with orthonormal rows),
    ``singular_values`` (r,), ``n_cg_solves``, ``n_cg_iterations``, ``time``.
    """
    from linxling.models.cr5 import encode_concepts

    t0 = time.perf_counter()
    languages = list(blocks)
    labels, classes = encode_concepts(concepts, languages)
    K = len(classes)
    X = sp.block_diag([sp.csr_matrix(blocks[lang], dtype=np.float64) for lang in languages], format="csr")
    Xt = X.T.tocsr()
    y = np.concatenate([labels[lang] for lang in languages])
    n, p = X.shape
    mean = np.asarray(X.sum(axis=0)).ravel() / n
    ybar = np.bincount(y, minlength=K) / n

    gram = spla.LinearOperator((p, p), dtype=np.float64,
                               matvec=lambda v: Xt @ (X @ v) - n * mean * (mean @ v) + alpha * v)

    def cross(u):          # X̂ᵀŶ u   (p,)
        return Xt @ u[y] - n * mean * (ybar @ u)

    def cross_t(x):        # ŶᵀX̂ x   (K,)
        return np.bincount(y, weights=X @ x, minlength=K) - n * ybar * (mean @ x)

    counters = {"solves": 0, "iters": 0}

    def solve(b):
        def count(_):
            counters["iters"] += 1
        x, _info = spla.cg(gram, b, rtol=cg_rtol, maxiter=cg_maxiter, callback=count)
        counters["solves"] += 1
        return x

    bar = progress(show=show_progress, desc="paper Cr5: ARPACK matvecs (1 CG each)")

    def mv(u):
        bar.update(1)
        return cross_t(solve(cross(np.ravel(u))))

    M = spla.LinearOperator((K, K), dtype=np.float64, matvec=mv)
    rng = np.random.default_rng(random_state)
    v0 = rng.standard_normal(K)
    with bar:                               # closed however the solve ends
        w, P = spla.eigsh(M, k=n_components, which="LA", tol=eig_tol, maxiter=eig_maxiter * K, v0=v0)
    order = np.argsort(w)[::-1]
    P = P[:, order]
    # eq. (14): r single-vector CG solves
    with progress(range(n_components), show=show_progress, desc="paper Cr5: Φ solves") as solves:
        Phi_star_T = np.column_stack([solve(cross(P[:, j])) for j in solves])
    # eq. (15)
    lam, Q = np.linalg.eigh(Phi_star_T.T @ Phi_star_T)
    order = np.argsort(lam)[::-1]
    lam, Q = lam[order], Q[:, order]
    sv = np.sqrt(np.maximum(lam, 0))
    Phi_T = Phi_star_T @ (Q / sv)
    offsets = np.cumsum([0] + [blocks[lang].shape[1] for lang in languages])
    components = {lang: np.ascontiguousarray(Phi_T[offsets[i]:offsets[i + 1]].T)
                  for i, lang in enumerate(languages)}
    return {"components": components, "singular_values": sv, "eigenvalues": w[order],
            "n_cg_solves": counters["solves"], "n_cg_iterations": counters["iters"],
            "time": time.perf_counter() - t0}
