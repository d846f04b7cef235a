"""The WMF family's ALS half-step on a device (:mod:`linxling.xp`): every row of a block solved at
once, as the numba kernels of :mod:`linxling.kernels.als` solve them one row at a time.

Row u solves ``A_u x = b_u`` with ``A_u = G + Σ_{i∈nz(u)} dw_i y_i y_iᵀ`` (``G = w_m YᵀY + λI``,
``dw_i = 1 - w_m``) and ``b_u = Σ_{i∈nz(u)} X_ui y_i``:

- ``solver="cg"``: ``cg_steps`` conjugate-gradient steps from the current row (the kernels'
  algorithm, the same stopping rules), for all rows of a chunk together: ``A_u p_u`` for every
  row is one GEMM (``P @ G``) plus one SpMM (a CSR with X's pattern whose values are
  ``dw_i (y_i · p_u)``, times Y);
- ``solver="cholesky"``: every row's k x k system assembled (``G`` plus a SpMM of the nonzeros'
  outer products) and solved in one batched call.

Rows are taken in chunks so that the gathered ``Y[indices]`` stays within ``CHUNK_ELEMENTS``.
On CuPy, ``solver="cg"`` runs as one fused CUDA kernel instead (:mod:`linxling.xp._cuda_cg`, 17x
this path's speed on the WMF benchmark); this path is its reference and what NumPy runs.
Each returns the solved rows' objective as the kernels do (``x·(A x - 2 b) + Σ X²``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from linxling.xp import Device

__all__ = ["half_step", "gram", "DeviceALS"]

#: elements of the gathered factor rows (nnz x k, or nnz x k x k for Cholesky) held at a time
CHUNK_ELEMENTS = 2 ** 24


def gram(dev: Device, Y: Any, weight: float = 1.0, regularization: float = 0.0) -> Any:
    """``weight · YᵀY + regularization · I`` on the device (as :func:`linxling.kernels.als.gram`)."""
    xp = dev.xp
    G = Y.T @ Y
    if weight != 1.0:
        G *= Y.dtype.type(weight)
    if regularization:
        idx = xp.arange(G.shape[0])
        G[idx, idx] += Y.dtype.type(regularization)
    return xp.ascontiguousarray(G)


def _rowdot(a: Any, b: Any, xp: Any) -> Any:
    return xp.sum(a * b, axis=1)


def _chunks(indptr_host: np.ndarray, per_nz: int) -> list[tuple[int, int]]:
    """Row ranges whose nonzeros x ``per_nz`` stay within CHUNK_ELEMENTS (at least one row)."""
    from linxling._memory import row_ranges_by_nnz
    return row_ranges_by_nnz(indptr_host, CHUNK_ELEMENTS // max(per_nz, 1))


class DeviceCSR:
    """A CSR block on the device, with what the half-steps need per chunk of rows: the row of
    every nonzero, the chunks and the empty rows."""

    def __init__(self, dev: Device, X: Any, dtype: Any) -> None:
        import scipy.sparse as sp
        X = sp.csr_matrix(X)
        self.dev = dev
        self.shape = X.shape
        self.indptr_host = np.asarray(X.indptr, dtype=np.int64)
        xp = dev.xp
        self.indptr = dev.put(self.indptr_host)
        self.indices = dev.put(np.asarray(X.indices, dtype=np.int64))
        self.data = dev.put(np.asarray(X.data), dtype=dtype)
        lengths = np.diff(self.indptr_host)
        self.rows = dev.put(np.repeat(np.arange(X.shape[0], dtype=np.int64), lengths))
        self.empty = dev.put(lengths == 0)
        self.xp = xp
        self.nnz = int(self.indptr_host[-1])
        self._long: dict[int, Any] = {}
        self._sumsq: float | None = None

    def data_sumsq(self) -> float:
        """``Σ X²`` over the nonzeros (float64), once per matrix: the objective's constant term."""
        if self._sumsq is None:
            self._sumsq = float(self.xp.sum(self.data.astype(self.xp.float64) ** 2))
        return self._sumsq

    def long_rows(self, limit: int) -> Any:
        """The rows with more than ``limit`` nonzeros, on the device (None when there are none):
        the block teams' rows of the fused CG kernel (:mod:`linxling.xp._cuda_cg`)."""
        if limit not in self._long:
            rows = np.flatnonzero(np.diff(self.indptr_host) > limit).astype(np.int64)
            self._long[limit] = self.dev.put(rows) if rows.size else None
        return self._long[limit]

    def part(self, a: int, b: int):
        """Rows a:b: (local indptr, indices, data, local row of each nonzero)."""
        s, e = int(self.indptr_host[a]), int(self.indptr_host[b])
        return (self.indptr[a:b + 1] - s, self.indices[s:e], self.data[s:e], self.rows[s:e] - a)

    def matrix(self, values: Any, indptr: Any, indices: Any, n_rows: int, n_cols: int) -> Any:
        """A CSR with this part's pattern and ``values`` (for the SpMMs)."""
        return self.dev.sparse.csr_matrix((values, indices, indptr), shape=(n_rows, n_cols))


def half_step(dev: Device, X: DeviceCSR, Y: Any, out: Any, G: Any, dw: Any, solver: str,
              cg_steps: int, *, fused: bool | None = None) -> float:
    """Solve every row of ``X`` into ``out`` (in place; CG warm-started from it) with ``Y``
    fixed; return the rows' objective (float64), as :func:`linxling.kernels.als.als_half_step`
    with ``return_objective=True``.

    ``fused``: ``solver="cg"`` as one CUDA kernel (:mod:`linxling.xp._cuda_cg`); the default on
    CuPy. ``False`` takes the array path below (any ``xp``; what the CPU tests run)."""
    xp = dev.xp
    if fused is None:
        fused = dev.name == "cupy"
    if fused and solver == "cg":
        from linxling.xp import _cuda_cg
        if _cuda_cg.fits(Y.shape[1], Y.dtype.itemsize):      # else (k > 3,072 float64) the array path
            return _cuda_cg.fused_cg_half_step(X, Y, out, G, dw, cg_steps)
    k = Y.shape[1]
    total = 0.0
    per_nz = k * k if solver == "cholesky" else 2 * k
    for a, b in _chunks(X.indptr_host, per_nz):
        indptr, indices, data, rows = X.part(a, b)
        B = b - a
        Yg = Y[indices]                                       # (nnz_c, k): gathered once per chunk
        bvec = X.matrix(data, indptr, indices, B, Y.shape[0]) @ Y
        if solver == "cg":
            x, quad = _cg(X, xp, Yg, Y, G, dw, indptr, indices, rows, bvec, out[a:b].copy(), B, cg_steps)
        elif solver == "cholesky":
            x, quad = _cholesky(X, xp, Yg, Y, G, dw, indptr, indices, rows, bvec, B)
        else:
            raise ValueError(f"solver must be 'cg' or 'cholesky', got {solver!r}")
        empty = X.empty[a:b]
        x[empty] = 0
        out[a:b] = x
        full = ~empty
        total += float(xp.sum(quad[full].astype(xp.float64))) + float(xp.sum((data.astype(xp.float64)) ** 2))
    return total


def _apply_sparse(X: DeviceCSR, xp: Any, Yg: Any, Y: Any, dw: Any, indptr: Any, indices: Any, rows: Any,
                  P: Any, B: int) -> Any:
    """``Σ_{i∈nz(u)} dw_i (y_i · p_u) y_i`` for every row u of the chunk: one SpMM."""
    t = _rowdot(Yg, P[rows], xp) * dw[indices]
    return X.matrix(t, indptr, indices, B, Y.shape[0]) @ Y


def _cg(X, xp, Yg, Y, G, dw, indptr, indices, rows, bvec, x, B, cg_steps):
    dt = Y.dtype.type
    r = bvec - x @ G - _apply_sparse(X, xp, Yg, Y, dw, indptr, indices, rows, x, B)
    p = r.copy()
    rsold = _rowdot(r, r, xp)
    tiny = dt(1e-30) + dt(1e-24) * rsold
    active = rsold > 1e-30
    for _ in range(int(cg_steps)):
        if not bool(xp.any(active)):
            break
        Ap = p @ G + _apply_sparse(X, xp, Yg, Y, dw, indptr, indices, rows, p, B)
        pAp = _rowdot(p, Ap, xp)
        active = active & (pAp > 0)
        alpha = xp.where(active, rsold / xp.where(active, pAp, dt(1)), dt(0))
        x = x + alpha[:, None] * p
        r = r - alpha[:, None] * Ap
        rsnew = _rowdot(r, r, xp)
        go_on = active & ~(rsnew < tiny)
        beta = xp.where(go_on, rsnew / xp.where(go_on, rsold, dt(1)), dt(0))
        p = xp.where(go_on[:, None], r + beta[:, None] * p, p)
        rsold = xp.where(go_on, rsnew, rsold)
        active = go_on
    quad = -_rowdot(x, r + bvec, xp)
    return x, quad


def _cholesky(X, xp, Yg, Y, G, dw, indptr, indices, rows, bvec, B):
    k = Y.shape[1]
    outer = (Yg[:, :, None] * Yg[:, None, :]).reshape(Yg.shape[0], k * k)
    weights = dw[indices]
    nnz = Yg.shape[0]
    select = X.dev.sparse.csr_matrix((weights, (rows, xp.arange(nnz))), shape=(B, nnz))
    A = (select @ outer).reshape(B, k, k) + G[None, :, :]
    # rows without nonzeros solve G x = 0 (x = 0); the batched solve needs no special case
    x = xp.linalg.solve(A, bvec[:, :, None])[:, :, 0]
    r = bvec - xp.einsum("bij,bj->bi", A, x)
    quad = -_rowdot(x, r + bvec, xp)
    return x, quad


class DeviceALS:
    """The in-memory ALS executor on a device: the languages' stacked CSR and each language's
    transpose, put on the device once; factors stay there between half-steps (the interface of
    :class:`linxling.models._als.InMemoryALS`, with device arrays)."""

    def __init__(self, dev: Device, mats, dtype: Any) -> None:
        import scipy.sparse as sp
        self.dev = dev
        self.xp = dev.xp
        self.widths = [int(M.shape[1]) for M in mats]
        self.offsets = np.concatenate([[0], np.cumsum(self.widths)]).astype(np.int64)
        self.shape = (int(mats[0].shape[0]), int(self.offsets[-1]))
        stacked = mats[0] if len(mats) == 1 else sp.hstack(list(mats), format="csr")
        self.rows = [(0, self.shape[0], DeviceCSR(dev, stacked, dtype))]
        self.cols = [(int(o0), int(o0) + int(M.shape[1]), DeviceCSR(dev, sp.csr_matrix(M).T.tocsr(), dtype))
                     for M, o0 in zip(mats, self.offsets[:-1], strict=True)]
        self.dtype = np.dtype(dtype)

    def gram(self, Y: Any, weight: float, regularization: float = 0.0) -> Any:
        return gram(self.dev, Y, weight, regularization)

    def half_step(self, side: str, Y: Any, G: Any, out: Any, w: float, lam: float, solver: str,
                  steps: int) -> float:
        dw = self.xp.full(Y.shape[0], 1.0 - w, dtype=Y.dtype)
        total = 0.0
        for r0, r1, X in (self.rows if side == "rows" else self.cols):
            view = out[r0:r1]
            total += half_step(self.dev, X, Y, view, G, dw, solver, steps)
        return total

    def release(self) -> None:
        self.rows = self.cols = []
