"""A GPU peer for WMF's ALS, written for the GPU suite (``python -m benchmarks.gpu``).

The peer the issue asks for is implicit's GPU ALS; implicit 0.7.3's wheel carries a CUDA 13
extension, and the suite uses it when it loads (it needs the ``rmm-cu13`` wheels carried along).
This module is the second peer, always available where numba-cuda is: the conjugate-gradient ALS
half-step of Takács et al. (2011) in the layout of implicit's CUDA kernel, written from the
algorithm (not from implicit's code): one thread block per row, one thread per factor, the
row's x, r and p in shared memory, block reductions for the dot products, ``cg_steps`` steps
warm-started from the previous iterate.

In implicit's parameterisation, with confidence ``c`` on every nonzero (preference 1) and 1 on
the zeros, the row's system is ``(YᵀY + reg I + Σ_nz (c − 1) y yᵀ) x = Σ_nz c y``. WMF's
(weight 1 on the nonzeros, ``w_m`` on the zeros, λ) is the same system divided by ``w_m``:
``c = 1 / w_m`` and ``reg = λ / w_m`` for binary data (the benchmark's matrix).

With ``NUMBA_ENABLE_CUDASIM=1`` (set before numba is imported) the kernel runs in numba's CUDA
simulator on the CPU: ``tests/test_gpu_suite.py`` checks it there against linxling's CPU ALS.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

if not hasattr(np, "row_stack"):
    # numba-cuda 0.x registers an overload for np.row_stack when it compiles its first kernel,
    # and NumPy 2.5 removed that alias of np.vstack: without it no kernel compiles (seen on the
    # H200 machine: numba 0.68.0 with its numba-cuda, NumPy 2.5.2). Only this benchmark's peer
    # uses numba-cuda; linxling's GPU path is CuPy.
    np.row_stack = np.vstack  # type: ignore[attr-defined]

from numba import cuda, float32, float64  # noqa: E402  (cuda a module global: the simulator patches it)


@functools.cache
def _kernel(dtype_name: str, threads: int):
    """The half-step kernel for one dtype and block size (a power of two >= n_components)."""
    nbt = float32 if dtype_name == "float32" else float64

    @cuda.jit(device=True)
    def block_sum(v, red, j):
        red[j] = v
        cuda.syncthreads()
        s = threads // 2
        while s > 0:
            if j < s:
                red[j] += red[j + s]
            cuda.syncthreads()
            s //= 2
        out = red[0]
        cuda.syncthreads()
        return out

    @cuda.jit
    def half_step(indptr, indices, X, Y, G, conf, cg_steps):
        """X[u] ← cg_steps CG steps on row u's system; G = YᵀY + reg I (k × k)."""
        k = X.shape[1]
        j = cuda.threadIdx.x
        xs = cuda.shared.array(threads, nbt)
        rs = cuda.shared.array(threads, nbt)
        ps = cuda.shared.array(threads, nbt)
        red = cuda.shared.array(threads, nbt)
        u = cuda.blockIdx.x
        while u < X.shape[0]:
            on = j < k
            xs[j] = X[u, j] if on else 0
            cuda.syncthreads()
            acc = nbt(0.0)
            if on:
                for m in range(k):
                    acc += G[j, m] * xs[m]
            r = -acc
            for q in range(indptr[u], indptr[u + 1]):      # r = b − A x
                i = indices[q]
                yx = block_sum(Y[i, j] * xs[j] if on else nbt(0.0), red, j)
                if on:
                    r += (conf - (conf - 1.0) * yx) * Y[i, j]
            rs[j] = r if on else 0
            ps[j] = rs[j]
            cuda.syncthreads()
            rsold = block_sum(rs[j] * rs[j], red, j)
            for _ in range(cg_steps):
                if rsold < 1e-20:
                    break
                ap = nbt(0.0)
                if on:
                    for m in range(k):
                        ap += G[j, m] * ps[m]
                for q in range(indptr[u], indptr[u + 1]):
                    i = indices[q]
                    yp = block_sum(Y[i, j] * ps[j] if on else nbt(0.0), red, j)
                    if on:
                        ap += (conf - 1.0) * yp * Y[i, j]
                pap = block_sum(ps[j] * ap if on else nbt(0.0), red, j)
                a = rsold / pap
                if on:
                    xs[j] += a * ps[j]
                    rs[j] -= a * ap
                cuda.syncthreads()
                rsnew = block_sum(rs[j] * rs[j], red, j)
                if on:
                    ps[j] = rs[j] + (rsnew / rsold) * ps[j]
                cuda.syncthreads()
                rsold = rsnew
            if on:
                X[u, j] = xs[j]
            cuda.syncthreads()
            u += cuda.gridDim.x

    return half_step


class PeerALS:
    """WMF by the peer kernel: ``fit(n_iter)`` runs user then item half-steps on device arrays.

    ``xp`` is CuPy on a GPU (NumPy in the simulator); ``X`` a SciPy CSR binary matrix.
    """

    def __init__(self, xp: Any, X, E0: np.ndarray, V0: np.ndarray, missing_weight: float,
                 regularization: float, cg_steps: int = 3, max_blocks: int = 65_535, min_threads: int = 32):
        import scipy.sparse as sp
        self.xp = xp
        dtype = np.dtype(E0.dtype)
        X = sp.csr_matrix(X)
        XT = X.T.tocsr()
        self.rows = (xp.asarray(X.indptr.astype(np.int64)), xp.asarray(X.indices.astype(np.int32)))
        self.cols = (xp.asarray(XT.indptr.astype(np.int64)), xp.asarray(XT.indices.astype(np.int32)))
        self.E = xp.array(E0, dtype=dtype, copy=True, order="C")     # updated in place
        self.V = xp.array(V0, dtype=dtype, copy=True, order="C")
        self.conf = float(1.0 / missing_weight)
        self.reg = float(regularization / missing_weight)
        self.cg_steps = int(cg_steps)
        k = E0.shape[1]
        self.threads = max(min_threads, 1 << math.ceil(math.log2(k)))   # a warp at least on a GPU
        self.kernel = _kernel(dtype.name, self.threads)
        self.max_blocks = int(max_blocks)

    def _half(self, ptr_idx, out, other) -> None:
        xp = self.xp
        G = other.T @ other
        G = G + self.reg * xp.eye(G.shape[0], dtype=G.dtype)
        blocks = min(out.shape[0], self.max_blocks)
        self.kernel[blocks, self.threads](ptr_idx[0], ptr_idx[1], out, other, G, out.dtype.type(self.conf),
                                          self.cg_steps)

    def fit(self, n_iter: int) -> None:
        for _ in range(int(n_iter)):
            self._half(self.rows, self.E, self.V)
            self._half(self.cols, self.V, self.E)

    def factors(self) -> tuple[np.ndarray, np.ndarray]:
        get = (lambda a: a.get()) if hasattr(self.E, "get") else (lambda a: a)
        return get(self.E), get(self.V)
