"""Dense and iterative linear algebra on a device (:mod:`linxling.xp`): orthonormalisation by
Cholesky-QR (SVQB when the block is rank-deficient), column-wise preconditioned CG for many
right-hand sides, and a block subspace eigen-solver with Rayleigh-Ritz, residual expansion and
thick restarts (the method of :func:`linxling.solvers.eigsh` with ``method="subspace"``; not
``cupyx.scipy.sparse.linalg.eigsh``, whose Lanczos loses orthogonality near k = 300).

Small k x k and m x m problems (Rayleigh-Ritz, Cholesky of a Gram) are solved on the device with
``xp.linalg``; nothing is copied to the host inside an iteration but convergence flags (scalars).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from linxling.xp import Device

__all__ = ["orthonormalize", "cg_columns", "cg_start", "eig_subspace", "FUSED_CG", "CG_CHECK_EVERY"]

#: On CuPy, run each iteration of :func:`cg_columns` as seven kernels (three column dot
#: products and four element-wise updates, :func:`_cg_kernels`) besides the operator instead of
#: about 30 array operations, each a kernel launch. Small problems are bound by those launches:
#: on the verse benchmark (5 languages x 20,000 verses, r = 100) 3,909 of the fit's 4,655 array
#: operations are its CG's, 113 iterations of about 34 with the operator's (1,560 and 2,306
#: fused; ``python -m benchmarks.launches [--fused]`` counts them on the NumPy path), and the
#: GPU fit's 0.33 s was taken to be launch-bound (benchmarks/README.md, "The GPU suite"). Off:
#: measured on an NVIDIA H200 (2026-11-28, the suite's ``cr5_verse`` row, three readings) the
#: fused fit took 0.35-0.37 s against the array path's 0.35-0.40 s at the same P@1, no gain beyond
#: the host's noise, so the launches are not the whole of that time; read at each call. NumPy
#: always runs the array operations, the reference the fused kernels are tested against (``gpu``
#: tests; the recurrences by NumPy stand-ins here).
FUSED_CG = False
#: :func:`cg_columns` tests whether every column has converged (a copy of one flag to the host,
#: which waits for the device to finish the iteration) only every this many iterations. A column
#: once converged takes steps of zero (its ``alpha`` and ``beta`` are 0), so the solution is the
#: same whatever the setting; only the iteration count (and the products) can run up to this
#: many minus one past the last column's convergence. 1 (every iteration) until measured on a
#: device: on the verse benchmark the GPU fit's 113 CG iterations each end in that wait, and the
#: host cannot queue the next iteration's launches behind the running one. The GPU suite's
#: ``cr5_verse`` row times 2 and 4 (variants ``cg_check_2``, ``cg_check_4``). Read at each call.
CG_CHECK_EVERY = 1


def _iterate(xp: Any, it: int, maxiter: int, done: Any, every: int) -> bool:
    """Whether :func:`cg_columns` runs another iteration: below ``maxiter``, and not every column
    converged, tested only at multiples of ``every``."""
    if it >= maxiter:
        return False
    return bool(it % every) or not bool(xp.all(done))


def _check_every() -> int:
    every = CG_CHECK_EVERY
    if isinstance(every, bool) or not isinstance(every, int | np.integer) or every < 1:
        raise ValueError(f"linxling.xp.linalg.CG_CHECK_EVERY must be a positive int, got {every!r}")
    return int(every)


def _svqb(dev: Device, Y: Any, drop: float) -> Any:
    """An orthonormal basis of range(Y) from the eigen-decomposition of its Gram (columns whose
    eigenvalue is below ``drop`` x the largest are dropped)."""
    xp = dev.xp
    G = Y.T @ Y
    lam, U = xp.linalg.eigh((G + G.T) / 2)
    top = float(lam[-1]) if lam.shape[0] else 0.0
    if top <= 0:
        return Y[:, :0]
    keep = lam > drop * top
    return Y @ (U[:, keep] / xp.sqrt(lam[keep])[None, :])


def orthonormalize(dev: Device, Y: Any, against: Any = None, drop: float | None = None) -> Any:
    """Orthonormal columns spanning ``Y`` (minus ``against``'s span, when given): two rounds of
    projection and SVQB (Cholesky-QR with rank-deficient columns dropped)."""
    eps = float(np.finfo(np.dtype(Y.dtype)).eps)
    drop = 1e4 * eps if drop is None else drop
    for _ in range(2):
        if against is not None and against.shape[1]:
            Y = Y - against @ (against.T @ Y)
        Y = _svqb(dev, Y, drop)
        if Y.shape[1] == 0:
            break
    return Y


def cg_columns(dev: Device, apply: Callable[[Any], Any], B: Any, diag: Any, rtol: float, maxiter: int,
               X0: Any = None, fused: bool | None = None) -> tuple[Any, int, Any]:
    """Solve ``A X = B`` column by column (each column its own CG scalars, all columns advanced
    together: one ``apply`` of the whole block per iteration), Jacobi-preconditioned by ``diag``.
    Returns ``(X, iterations, converged)`` with ``converged`` a boolean per column: relative
    residual ``||b - A x|| <= rtol ||b||``. ``fused`` (CuPy only; default :data:`FUSED_CG`): the
    same iterations in fused kernels (:func:`_cg_fused`). The flags are tested every
    :data:`CG_CHECK_EVERY` iterations: ``iterations`` counts those run."""
    xp = dev.xp
    every = _check_every()
    X, R, Z, P, rz, done, thresh, Minv = cg_start(dev, apply, B, diag, rtol, X0)
    if (FUSED_CG if fused is None else fused) and dev.name == "cupy":
        Z, P, rz, thresh, Minv = (a.astype(B.dtype, copy=False) for a in (Z, P, rz, thresh, Minv))
        return _cg_fused(dev, apply, X, R, Z, P, rz, done, thresh, Minv, maxiter, _cg_kernels(), every)
    it = 0
    while _iterate(xp, it, maxiter, done, every):
        AP = apply(P)
        pAp = xp.sum(P * AP, axis=0)
        alpha = xp.where(done | (pAp <= 0), 0, rz / xp.where(pAp > 0, pAp, 1))
        X += alpha[None, :] * P
        R -= alpha[None, :] * AP
        done = done | (xp.sqrt(xp.sum(R * R, axis=0)) <= thresh) | (pAp <= 0)
        Z = Minv * R
        rz_new = xp.sum(R * Z, axis=0)
        beta = xp.where(done, 0, rz_new / xp.where(rz > 0, rz, 1))
        P = Z + beta[None, :] * P
        rz = rz_new
        it += 1
    return X, it, done


def cg_start(dev: Device, apply: Callable[[Any], Any], B: Any, diag: Any, rtol: float, X0: Any = None) -> tuple:
    """The state :func:`cg_columns` iterates from: ``(X, R, Z, P, rz, done, thresh, Minv)``, the
    start ``X`` (zero or a copy of ``X0``), its residual ``R``, the preconditioned residual ``Z``
    (``Minv = 1 / diag`` as a column), the first direction ``P``, the column dots ``rz = RᵀZ``,
    the columns already solved (``done``) and each column's residual threshold."""
    xp = dev.xp
    X = xp.zeros_like(B) if X0 is None else X0.copy()
    R = B - apply(X) if X0 is not None else B.copy()
    bnorm = xp.sqrt(xp.sum(B * B, axis=0))
    thresh = rtol * xp.where(bnorm > 0, bnorm, 1)
    Minv = (1.0 / diag)[:, None]
    Z = Minv * R
    P = Z.copy()
    rz = xp.sum(R * Z, axis=0)
    done = xp.sqrt(xp.sum(R * R, axis=0)) <= thresh
    return X, R, Z, P, rz, done, thresh, Minv


@functools.cache
def _cg_kernels() -> tuple:
    """CuPy kernels of one CG iteration of :func:`cg_columns` (compiled on first use, cached by
    CuPy): the column dot product, and the scalar, solution/residual and direction updates, each
    the array path's formula with its ``where`` guards written as conditionals."""
    import cupy as cp
    # (a and b are the reduction's own operand names: the inputs are u and v)
    coldot = cp.ReductionKernel("T u, T v", "T y", "u * v", "a + b", "y = a", "0", "linxling_cg_coldot")
    step = cp.ElementwiseKernel(
        "bool done, T pap, T rz", "T alpha",
        "alpha = (done || pap <= (T)0) ? (T)0 : rz / pap", "linxling_cg_alpha")
    update = cp.ElementwiseKernel(
        "T p, T ap, T minv, T alpha", "T x, T r, T z",
        "x += alpha * p; r -= alpha * ap; z = minv * r", "linxling_cg_update")
    scalars = cp.ElementwiseKernel(
        "T rr, T thresh, T pap, T rz_new", "bool done, T rz, T beta",
        "done = done || sqrt(rr) <= thresh || pap <= (T)0; "
        "beta = done ? (T)0 : rz_new / (rz > (T)0 ? rz : (T)1); rz = rz_new", "linxling_cg_beta")
    direction = cp.ElementwiseKernel("T z, T beta", "T p", "p = z + beta * p", "linxling_cg_direction")
    return coldot, step, update, scalars, direction


def _numpy_cg_kernels() -> tuple:
    """NumPy stand-ins with the semantics of :func:`_cg_kernels` (outputs updated in place): the
    CPU tests run :func:`_cg_fused` on them against the array path of :func:`cg_columns`."""
    def coldot(a, b, axis):
        return np.sum(a * b, axis=axis)

    def step(done, pap, rz, alpha):
        alpha[...] = np.where(done | (pap <= 0), 0, rz / np.where(pap > 0, pap, 1))

    def update(p, ap, minv, alpha, x, r, z):
        x += alpha * p
        r -= alpha * ap
        z[...] = minv * r

    def scalars(rr, thresh, pap, rz_new, done, rz, beta):
        done |= (np.sqrt(rr) <= thresh) | (pap <= 0)
        beta[...] = np.where(done, 0, rz_new / np.where(rz > 0, rz, 1))
        rz[...] = rz_new

    def direction(z, beta, p):
        p[...] = z + beta * p
    return coldot, step, update, scalars, direction


def _cg_fused(dev: Device, apply: Callable[[Any], Any], X: Any, R: Any, Z: Any, P: Any, rz: Any, done: Any,
              thresh: Any, Minv: Any, maxiter: int, kernels: tuple, every: int = 1) -> tuple[Any, int, Any]:
    """The iterations of :func:`cg_columns` from its initial state (:func:`cg_start`), every array updated in
    place: per iteration ``apply``, seven kernels (:func:`_cg_kernels` on CuPy) and the test of
    the flags, instead of about 30 array operations besides ``apply``. The same recurrences; the
    sums may differ in rounding (fused multiply-adds, the kernels' reduction order)."""
    xp = dev.xp
    coldot, step, update, scalars, direction = kernels
    alpha = xp.empty_like(rz)
    beta = xp.empty_like(rz)
    it = 0
    while _iterate(xp, it, maxiter, done, every):
        AP = apply(P)
        if AP.dtype != P.dtype:                 # the kernels take one dtype
            AP = AP.astype(P.dtype)
        pap = coldot(P, AP, axis=0)
        step(done, pap, rz, alpha)
        update(P, AP, Minv, alpha[None, :], X, R, Z)
        scalars(coldot(R, R, axis=0), thresh, pap, coldot(R, Z, axis=0), done, rz, beta)
        direction(Z, beta[None, :], P)
        it += 1
    return X, it, done


def eig_subspace(dev: Device, apply: Callable[[Any], Any], n: int, k: int, tol: float, maxiter: int,
                 dtype: Any, rng: np.random.Generator, block_size: int | None = None,
                 max_basis: int | None = None, start: Callable[[int], Any] | None = None,
                 carry: bool = False) -> dict:
    """The ``k`` largest eigenpairs of a symmetric positive semi-definite operator of order ``n``
    given by ``apply`` (an ``n x b`` block in, ``n x b`` out): block Rayleigh-Ritz on a basis
    grown by the residuals of the unconverged Ritz vectors, thickly restarted from the best
    Ritz vectors; a pair has converged when ``||A v - θ v|| <= tol · |θ|`` (ARPACK's rule).

    ``start(b)``, when given, returns the starting block (n x b, on the device; default a random
    one): only the start changes, convergence is judged on ``apply`` itself.

    ``carry``: ``apply`` returns ``(A Y, [Z_1, ...])``, blocks with Y's columns that are linear
    in Y (Cr5's solves A⁻¹ĈY); they are combined as the basis is (restarts included) and
    returned for the Ritz vectors as ``"carried"``: ``[Z_i S]`` for ``eigenvectors = Q S``, the
    solves of the eigenvectors without applying anything again (as the CPU's ``reuse_solves``).

    Returns ``{"eigenvalues", "eigenvectors" (n x k, device), "converged", "n_iter",
    "n_applied"}`` (and ``"carried"``) with eigenvalues in decreasing order.
    """
    xp = dev.xp
    dt = np.dtype(dtype)
    eps = float(np.finfo(dt).eps)
    tol = tol if tol > 0 else math.sqrt(eps)
    b = int(min(max(block_size or k + max(10, math.ceil(0.2 * k)), k), n))
    mb = int(min(n, max_basis or 3 * b))
    keep_size = math.ceil(1.5 * b)
    Q0 = dev.put(rng.standard_normal((n, b)), dtype=dt) if start is None else start(b)
    Q = orthonormalize(dev, Q0)

    def applied(Y):
        return apply(Y) if carry else (apply(Y), [])

    W, E = applied(Q)
    n_applied = Q.shape[1]
    theta = V = None
    converged = False
    n_iter = 0
    for n_iter in range(1, int(maxiter) + 1):  # noqa: B007 (n_iter is reported after the loop)
        H = Q.T @ W
        lam, U = xp.linalg.eigh((H + H.T) / 2)
        order = xp.argsort(-lam)
        lam, U = lam[order], U[:, order]
        nr = min(b, Q.shape[1])
        theta, S = lam[:nr], U[:, :nr]
        V = Q @ S
        E_v = E                                      # the carried blocks of this basis (V = Q S)
        R = W @ S - V * theta[None, :]
        res = xp.sqrt(xp.sum(R * R, axis=0))
        scale = float(xp.max(xp.abs(theta))) if theta.shape[0] else 0.0
        ok = res <= tol * xp.maximum(xp.abs(theta), eps * scale)
        if bool(xp.all(ok[:k])) or Q.shape[1] >= n:
            converged = True
            break
        new = R[:, :k][:, ~ok[:k]]                  # residuals of the unconverged wanted pairs
        if Q.shape[1] + new.shape[1] > mb:          # thick restart from the best Ritz vectors
            keep = max(k, min(Q.shape[1], keep_size, mb - new.shape[1]))
            Q, W = Q @ U[:, :keep], W @ U[:, :keep]   # A (Q U) = (A Q) U: no new application
            E = [Z @ U[:, :keep] for Z in E]
        Y = orthonormalize(dev, new, against=Q)
        if Y.shape[1] == 0:
            break
        WY, EY = applied(Y)
        Q = xp.concatenate([Q, Y], axis=1)
        W = xp.concatenate([W, WY], axis=1)
        E = [xp.concatenate([Z, ZY], axis=1) for Z, ZY in zip(E, EY, strict=True)]
        n_applied += Y.shape[1]
    vals = theta[:k]
    vecs = V[:, :k]                                  # the Ritz vectors of the last Rayleigh-Ritz
    out = {"eigenvalues": vals, "eigenvectors": vecs, "converged": converged, "n_iter": n_iter,
           "n_applied": n_applied}
    if carry:
        out["carried"] = [Z @ S[:, :k] for Z in E_v]
    return out
