"""Chunk-parallel centred Gram for a dask array whose chunks are scipy.sparse matrices.

The driver runs on the client (dask-glm style): for a block ``V`` (p, m) every row chunk
``X_i`` computes ``X_i^T (X_i V)`` (p, m) in parallel, the partial products are summed by a
tree reduction, and the rank-1 mean correction and the ridge term are applied on the client.
``X`` is never centred (that would destroy sparsity) nor gathered.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling._linop import LinearOperator
from linxling._validation import check_positive

__all__ = ["DaskCenteredGram"]


def _gram_part(Xi, V):
    Xi = sp.csr_matrix(Xi)
    return np.asarray(Xi.T @ (Xi @ V))


def _colsum_part(Xi):
    return np.asarray(sp.csr_matrix(Xi).sum(axis=0), dtype=np.float64).ravel()


def _colsumsq_part(Xi):
    Xi = sp.csr_matrix(Xi)
    return np.bincount(Xi.indices, weights=Xi.data.astype(np.float64) ** 2, minlength=Xi.shape[1])


def _nrows_part(Xi):
    return int(Xi.shape[0])


def _sum(*parts):
    out = parts[0].copy() if hasattr(parts[0], "copy") else parts[0]
    for p_ in parts[1:]:
        out += p_
    return out


def _tree_sum(parts: list, split_every: int):
    import dask

    add = dask.delayed(_sum, pure=True)
    while len(parts) > 1:
        parts = [add(*parts[i:i + split_every]) if len(parts[i:i + split_every]) > 1 else parts[i]
                 for i in range(0, len(parts), split_every)]
    return parts[0]


class DaskCenteredGram(LinearOperator):
    """``X̂^T X̂ + alpha I`` for a dask array ``X`` (n, p) with scipy.sparse chunks.

    Parameters
    ----------
    X : dask.array.Array (n_samples, n_features)
        Chunked along rows only (one chunk along columns); ``X._meta`` must be a scipy.sparse
        matrix, e.g. ``da.from_array(csr, chunks=(10_000, -1), asarray=False)``.
    alpha : float > 0
    mean : array (n_features,), optional
        Defaults to the column means, computed once with a tree reduction.
    scheduler : str or None
        dask scheduler for every application (``"threads"``, ``"processes"``, ``"sync"``,
        a distributed client's scheduler, ...); ``None`` uses dask's configured default.
    split_every : int, default 8
        Fan-in of the tree reduction of the per-chunk ``X_i^T (X_i V)`` partials.

    Attributes
    ----------
    mean_ : ndarray (n_features,)
    n_samples : int
    alpha : float
    n_chunks : int

    Notes
    -----
    Each application builds a small graph (one task per chunk plus the reduction) and
    computes it; ``V`` is put in the graph once and shared by all chunk tasks.
    """

    def __init__(self, X: Any, alpha: float, mean: Any = None, *, scheduler: Any = None,
                 split_every: int = 8) -> None:
        import dask
        import dask.array as da

        if not isinstance(X, da.Array):
            raise TypeError(f"X must be a dask array, got {type(X).__name__}; use CenteredGram for "
                            "in-memory matrices")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim}-D")
        if not sp.issparse(X._meta):
            raise TypeError(f"X's chunks must be scipy.sparse matrices (X._meta is "
                            f"{type(X._meta).__name__}); build it with "
                            "da.from_array(csr, chunks=(rows, -1), asarray=False) or "
                            "X.map_blocks(scipy.sparse.csr_matrix)")
        if len(X.chunks[1]) != 1:
            raise ValueError(f"X must have a single chunk along columns, got {len(X.chunks[1])} "
                             "column chunks; rechunk with chunks=(rows, -1)")
        dtype = X.dtype if np.dtype(X.dtype).kind == "f" else np.float64
        self.X = X
        self.alpha = float(check_positive(alpha, "alpha"))
        self.scheduler = scheduler
        self.split_every = max(2, int(split_every))
        self._blocks = list(X.to_delayed().ravel())
        self.n_chunks = len(self._blocks)
        p = X.shape[1]
        if np.isnan(X.shape[0]):
            counts = [dask.delayed(_nrows_part, pure=True)(b) for b in self._blocks]
            n = int(sum(dask.compute(*counts, scheduler=scheduler)))
        else:
            n = int(X.shape[0])
        self.n_samples = n
        if mean is None:
            sums = _tree_sum([dask.delayed(_colsum_part, pure=True)(b) for b in self._blocks],
                             self.split_every)
            mu = sums.compute(scheduler=scheduler) / n
        else:
            mu = np.asarray(mean)
            if mu.shape != (p,):
                raise ValueError(f"mean must have shape ({p},), got {mu.shape}")
        self.mean_ = np.asarray(mu, dtype=dtype)
        super().__init__((p, p), dtype, symmetric=True)

    def _matmat(self, V):
        import dask

        Vd = dask.delayed(np.asarray(V), pure=True)
        parts = [dask.delayed(_gram_part, pure=True)(b, Vd) for b in self._blocks]
        Y = _tree_sum(parts, self.split_every).compute(scheduler=self.scheduler)
        Y = np.asarray(Y)
        Y += self.alpha * V
        mu = self.mean_
        Y -= (self.n_samples * mu)[:, None] * (mu @ V)[None, :]
        return Y

    def diagonal(self):
        """``diag(X^T X) - n mu^2 + alpha`` (one chunk-parallel pass)."""
        import dask

        s = _tree_sum([dask.delayed(_colsumsq_part, pure=True)(b) for b in self._blocks],
                      self.split_every).compute(scheduler=self.scheduler)
        return (s - self.n_samples * self.mean_.astype(np.float64) ** 2 + self.alpha).astype(self.dtype)
