"""Cr5's fit on a device (:mod:`linxling.xp`): the paper's Secs. 3.2 and 5 written against ``xp``.

With X = diag(X_1, ..., X_L) (n x p), the concept indicators Y (n x K), the column means μ, ȳ and
λ = ``alpha``:

- ``A = X̂ᵀX̂ + λI = B − n μμᵀ`` with ``B = diag(X_lᵀX_l + λI)``: each block inverted by its dense
  Cholesky factor when ``p_l <= dense_max`` (two triangular solves per application), else by
  Jacobi-preconditioned CG on ``v -> X_lᵀ(X_l v) + λv`` (two SpMMs per iteration); the rank-one
  term by Woodbury, ``A⁻¹ = B⁻¹ + c g gᵀ``, ``g = B⁻¹μ``, ``c = n / (1 − n μᵀg)``;
- ``Ĉ = X̂ᵀŶ`` applied matrix-free: ``Ĉ v = Xᵀ(v[labels]) − n μ (ȳᵀv)``, ``Ĉᵀ z = S(X z) − n ȳ
  (μᵀz)`` with S the concept selector (a sparse K x n matrix);
- the top-r eigenvectors P of ``M = ĈᵀA⁻¹Ĉ`` by the block subspace solver of
  :mod:`linxling.xp.linalg`;
- ``Φ*ᵀ = A⁻¹ĈP`` from the solves the eigen-solver carried; ``Φ*Φ*ᵀ = QΛQᵀ``;
  ``Φ = Λ^{-1/2}QᵀΦ*`` (orthonormal rows), singular values ``Λ^{1/2}`` (eq. 15).

Tested against the CPU fit (:class:`linxling.Cr5`, numba path) in ``tests/test_xp.py``.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling.kernels.spmm import csr_column_sums
from linxling.xp import Device
from linxling.xp.linalg import cg_columns, eig_subspace, orthonormalize

__all__ = ["fit_cr5"]

#: blocks with at most this many features get a dense Cholesky factor (p_l^2 values on the device);
#: larger blocks are solved by block CG. 16,384 (every verse block dense) made the GPU verse fit
#: slower, 0.42-0.48 s against 0.35-0.40 s (NVIDIA H200, 2026-11-28, three readings; the factor
#: stage doubles), so the default stays 8,192
DENSE_MAX = 8192
#: Cr5's sparse products with dense blocks on CuPy: "kernel" (the default:
#: :func:`linxling.xp._cuda_spmm.csr_matmat`, long rows split) or "cusparse" (cupyx.scipy.sparse);
#: read at each fit. Measured by the GPU suite's ``spmm`` row (NVIDIA H200, 2026-11-27; Cr5's
#: products on a 485,000 x 200,000 block, 82.4M nonzeros, 64 float32 columns, benchmarks/README.md):
#: X V 3.0 ms against cuSPARSE's 28.6 ms, Xᵀ W 3.9 ms against 34.1 ms, equal to 7e-7. The suite's
#: ``cr5_wiki`` row fits with both settings.
PRODUCTS = "kernel"
#: On CuPy, draw the eigen-solver's random starting block (K x b normals) on the device from a
#: seed drawn from ``random_state``, instead of drawing it on the host and copying it. On since the
#: GPU suite measured it (NVIDIA H200, 2026-11-30, benchmarks/README.md, fourteenth session): the
#: verse fit's start stage 0.020 s against 0.053 s, the fit 0.258 s against 0.302 s (float32,
#: medians of 6 interleaved rounds, faster in every round), held-out P@1 0.860 against 0.861 (another
#: random start, an equally converged fit). The GPU suite's ``host_start`` variant times it off.
#: A fit on the GPU therefore starts from other normals than the same fit on the CPU; both converge
#: to the same subspace (tests/test_xp.py checks the singular values to 1e-8). Read at each fit.
START_ON_DEVICE = True


class _KernelCSR:
    """A device CSR whose products with dense 2-D blocks run :mod:`linxling.xp._cuda_spmm`;
    everything else (sparse operands, attributes such as ``multiply``) goes to the matrix."""

    def __init__(self, A: Any) -> None:
        from linxling.xp._cuda_spmm import fits_int32
        self.A = A
        self._plan = None                 # the kernel's long-row plan, made at the first product
        self.small = fits_int32(A)        # beyond 32-bit indices: cuSPARSE's product

    def __matmul__(self, V: Any) -> Any:
        if isinstance(V, _KernelCSR):
            return self.A @ V.A
        if getattr(V, "ndim", 0) == 2 and not hasattr(V, "tocsr") and V.dtype == self.A.dtype and self.small:
            from linxling.xp import _cuda_spmm
            if self._plan is None:
                self._plan = _cuda_spmm.make_plan(self.A)
            return _cuda_spmm.csr_matmat(self.A, V, plan=self._plan)
        return self.A @ V

    def multiply(self, other: Any) -> Any:
        return self.A.multiply(other.A if isinstance(other, _KernelCSR) else other)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.A, name)


def _kernel_products(dev: Device) -> bool:
    """Whether Cr5's products go to linxling's SpMM kernel (:data:`PRODUCTS`; CuPy only)."""
    if PRODUCTS not in ("cusparse", "kernel"):
        raise ValueError(f"linxling.xp.cr5.PRODUCTS must be 'cusparse' or 'kernel', got {PRODUCTS!r}")
    return dev.name == "cupy" and PRODUCTS == "kernel"


class _Block:
    def __init__(self, dev: Device, X: sp.csr_matrix, labels: np.ndarray, K: int, n: int, alpha: float,
                 dtype: Any, dense_max: int, cg_rtol: float, cg_maxiter: int, mean: Any = None) -> None:
        xp = dev.xp
        self.dev, self.xp = dev, xp
        X = sp.csr_matrix(X, dtype=dtype)
        self.X = dev.put(X)
        self.XT = self.X.T.tocsr()        # transposed where the data is (on a GPU by cuSPARSE, not the host)
        self.labels = dev.put(np.asarray(labels, dtype=np.int64))
        self.S = dev.put(sp.csr_matrix((np.ones(X.shape[0], dtype=dtype), (labels, np.arange(X.shape[0]))),
                                       shape=(K, X.shape[0])))
        self.p = X.shape[1]
        self.alpha = float(alpha)
        if mean is None:                  # summed in float64, as the CPU fit's means
            mean = csr_column_sums(X) / n
        self.mu = dev.put(np.asarray(mean), dtype=dtype)
        # diag(XᵀX): the CG's Jacobi preconditioner and the start's surrogate
        self.sumsq = xp.asarray(self.XT.multiply(self.XT).sum(axis=1)).ravel()
        self.cg_rtol, self.cg_maxiter = cg_rtol, cg_maxiter
        self.cg_iterations: list[int] = []
        self.nonconverged = 0
        wrap = _kernel_products(dev)
        if self.p <= dense_max:
            G = self.XT @ self.X
            G = G.toarray() if hasattr(G, "toarray") else G
            G = xp.asarray(G, dtype=dtype)
            idx = xp.arange(self.p)
            G[idx, idx] += dtype.type(alpha)
            # the Cholesky factor, applied by two triangular solves (2 p² flops a column): forming
            # the inverse (an LU inverse of L and LᵀL, about 15x the factor's flops) took the
            # NumPy verse fit (5 x 20,000, r = 100) from 6.6 s to 21.0 s
            self.L = xp.linalg.cholesky(G)
            self.method = "dense"
        else:
            self.L = None
            self.diag = self.sumsq + dtype.type(alpha)
            self.method = "cg"
        if wrap:
            self.X, self.XT = _KernelCSR(self.X), _KernelCSR(self.XT)

    def solve(self, V: Any) -> Any:
        """(X_lᵀX_l + λI)⁻¹ V."""
        if self.L is not None:
            if self.dev.name == "cupy":
                from cupyx.scipy.linalg import solve_triangular
            else:
                from scipy.linalg import solve_triangular
            Y = solve_triangular(self.L, V, lower=True, check_finite=False)
            return solve_triangular(self.L, Y, lower=True, trans="T", check_finite=False)
        X, XT, lam = self.X, self.XT, self.alpha

        def apply(P):
            return XT @ (X @ P) + lam * P
        Z, it, ok = cg_columns(self.dev, apply, V, self.diag, self.cg_rtol, self.cg_maxiter)
        self.cg_iterations.append(int(it))
        self.nonconverged += int(self.xp.sum(~ok))
        return Z


def fit_cr5(dev: Device, blocks: list, labels: list, K: int, r: int, alpha: float, dtype: Any, *,
            cg_rtol: float = 1e-2, cg_maxiter: int = 500, eig_tol: float = 1e-1, eig_maxiter: int = 250,
            random_state: Any = None, dense_max: int | None = None, start_steps: int = 3,
            means: list | None = None) -> dict:
    """Fit Cr5 on ``dev``; ``blocks`` are the languages' host CSR matrices, ``labels`` each
    row's concept (0..K-1). Returns host arrays: ``components`` (list of (r, p_l)),
    ``singular_values``, ``eigenvalues`` and an ``info`` dict (methods, CG iterations,
    eigen-solver iterations and convergence). ``start_steps`` power steps of the cheap surrogate
    ĈᵀD⁻¹Ĉ (D the diagonal of X̂ᵀX̂ + λI, no inner solves) build the eigen-solver's starting
    block, as the CPU fit does (:class:`linxling.Cr5`'s ``start_steps``). ``info["timings"]``
    gives the stages' seconds with the CPU fit's names (``time_factor``: the blocks' set-up and
    factors; ``time_start``; ``time_eig`` without the start; ``time_phi``: the components from
    the carried solves), the device synchronised at each boundary. ``means``: each block's
    column means over all n documents, when the caller has them (else summed here)."""
    xp = dev.xp
    dtype = np.dtype(dtype)
    dense_max = DENSE_MAX if dense_max is None else dense_max   # read at call time (tests lower it)
    timings: dict[str, float] = {"time_start": 0.0}
    t0 = time.perf_counter()
    n = sum(X.shape[0] for X in blocks)
    means = [None] * len(blocks) if means is None else means
    parts = [_Block(dev, X, lab, K, n, alpha, dtype, dense_max, cg_rtol, cg_maxiter, mean)
             for X, lab, mean in zip(blocks, labels, means, strict=True)]
    counts = np.bincount(np.concatenate([np.asarray(lab, dtype=np.int64) for lab in labels]), minlength=K)
    ybar = dev.put(counts / n, dtype=dtype)
    # Woodbury: A⁻¹ = B⁻¹ + c g gᵀ, g = B⁻¹ μ (per block), c = n / (1 − n μᵀ g)
    g = [b.solve(b.mu[:, None])[:, 0] for b in parts]
    mug = sum(float(xp.dot(b.mu, gi)) for b, gi in zip(parts, g, strict=True))
    c = n / (1.0 - n * mug)

    def a_inv(Zs):
        out = [b.solve(Z) for b, Z in zip(parts, Zs, strict=True)]
        gz = sum(gi @ Z for gi, Z in zip(g, Zs, strict=True))                   # gᵀ Z (1 x b)
        return [o + c * gi[:, None] * gz[None, :] for o, gi in zip(out, g, strict=True)]

    def c_apply(V):                  # Ĉ V: per block (p_l x b)
        yv = ybar @ V
        return [b.XT @ V[b.labels] - n * b.mu[:, None] * yv[None, :] for b in parts]

    def ct_apply(Zs):                # Ĉᵀ Z (K x b)
        out = sum(b.S @ (b.X @ Z) for b, Z in zip(parts, Zs, strict=True))
        muz = sum(b.mu @ Z for b, Z in zip(parts, Zs, strict=True))
        return out - n * ybar[:, None] * muz[None, :]

    def m_apply(V):                  # M V and the solves A⁻¹ĈV, carried for Φ
        Zs = a_inv(c_apply(V))
        return ct_apply(Zs), Zs

    # the diagonal of the centred X̂ᵀX̂ + λI per block: column sums of squares − n μ²
    d_inv = [1.0 / (b.sumsq - n * b.mu * b.mu + b.alpha) for b in parts]

    def start(bsize):
        dev.sync()
        ts = time.perf_counter()
        if START_ON_DEVICE and dev.name == "cupy":
            Y = xp.random.RandomState(int(rng.integers(2**63))).standard_normal((K, bsize), dtype=dtype)
        else:
            Y = dev.put(rng.standard_normal((K, bsize)), dtype=dtype)
        for _ in range(int(start_steps)):
            Y = orthonormalize(dev, ct_apply([d[:, None] * U for d, U in zip(d_inv, c_apply(Y), strict=True)]))
        dev.sync()
        timings["time_start"] += time.perf_counter() - ts
        return Y

    from linxling.models.cr5 import _block_size  # the CPU fit's block: r + max(10, 10 % of r)

    rng = np.random.default_rng(random_state)
    dev.sync()
    t1 = time.perf_counter()
    timings["time_factor"] = t1 - t0
    eig = eig_subspace(dev, m_apply, K, r, eig_tol, eig_maxiter, dtype, rng, start=start, carry=True,
                       block_size=_block_size(r, K))
    dev.sync()
    t2 = time.perf_counter()
    timings["time_eig"] = t2 - t1 - timings["time_start"]
    # Φ*ᵀ = A⁻¹ĈP per block (p_l x r) from the carried solves (P = Q S: the solves of Q's
    # columns combined by S), not solved again: one application of the operator less
    phi_star = eig["carried"]
    G = sum(Z.T @ Z for Z in phi_star)
    lam, Q = xp.linalg.eigh((G + G.T) / 2)
    order = xp.argsort(-lam)
    lam, Q = lam[order], Q[:, order]
    if float(lam[-1]) <= 0:
        raise np.linalg.LinAlgError("Φ*Φ*ᵀ is singular: the data support fewer than n_components "
                                    "directions; lower n_components")
    sv = xp.sqrt(lam)
    T = Q / sv[None, :]
    components = [dev.get(xp.ascontiguousarray((Z @ T).T)) for Z in phi_star]
    timings["time_phi"] = time.perf_counter() - t2
    return {"components": components, "singular_values": dev.get(sv), "eigenvalues": dev.get(eig["eigenvalues"]),
            "info": {"methods": [b.method for b in parts], "cg_iterations": [b.cg_iterations for b in parts],
                     "cg_nonconverged": [b.nonconverged for b in parts], "eig_n_iter": eig["n_iter"],
                     "eig_converged": eig["converged"], "eig_n_applied": eig["n_applied"], "timings": timings}}
