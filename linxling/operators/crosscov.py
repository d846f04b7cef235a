"""Centred cross-covariance ``Ĉ = X̂^T Ŷ`` with a one-hot ``Y`` given by integer labels."""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling.kernels.spmm import csr_matmat, csr_transpose
from linxling._backend import get_namespace
from linxling._validation import check_sparse_matrix
from linxling._linop import LinearOperator

__all__ = ["CrossCovariance"]


class CrossCovariance(LinearOperator):
    """``X̂^T Ŷ`` (p x K) applied matrix-free; ``Y`` is the n x K one-hot label matrix.

    Forward, for ``V`` (K, m)::

        X̂^T Ŷ V = X^T (V[labels]) - n mu (ȳ^T V)

    adjoint, for ``U`` (p, m)::

        Ŷ^T X̂ U = Y^T (X U) - n ȳ (mu^T U)

    where ``mu = X^T 1 / n`` and ``ȳ = counts / n``. Only one of ``X̂`` and ``Ŷ`` needs
    centring (``X̂^T Ŷ = X̂^T Y = X^T Ŷ``); the formulas above are that identity.

    With ``precompute=True`` (default) the sparse p x K matrix ``X^T Y`` (per-concept term
    sums; ``nnz(X^T Y) <= nnz(X)``) is built once with one sparse product, and both
    directions are a single SpMM with it, with no (n, m) intermediate. With
    ``precompute=False`` the forward direction gathers ``V[labels]`` (n, m) and multiplies
    by ``X^T``; the adjoint multiplies by ``X`` and sums rows by label with a K x n one-hot
    CSR matrix (two SpMMs).

    Parameters
    ----------
    X : sparse matrix (n_samples, n_features)
    labels : int array (n_samples,)
        Concept index of each row, in ``[0, n_classes)``.
    n_classes : int, optional
        ``K``; defaults to ``labels.max() + 1``. Classes without rows are allowed.
    mean : array (n_features,), optional
        ``mu``; defaults to the column means of ``X``.
    precompute : bool, default True
        Build ``X^T Y`` once (see above).

    Attributes
    ----------
    X : csr_matrix (n_samples, n_features)
    labels : ndarray (n_samples,) of int64
    n_samples, n_classes : int
    mean_ : ndarray (n_features,)
    class_counts_ : ndarray (n_classes,)
    class_mean_ : ndarray (n_classes,)
        ``ȳ = counts / n``.
    XtY_ : sparse (n_features, n_classes) or None
        ``X^T Y`` when ``precompute``.
    """

    def __init__(self, X: Any, labels: Any, n_classes: int | None = None, mean: Any = None, *,
                 precompute: bool = True) -> None:
        X = check_sparse_matrix(X, "X")
        xp = get_namespace(X).xp
        lab = xp.asarray(labels)
        if lab.ndim != 1:
            raise ValueError(f"labels must be 1-D (n_samples,), got shape {lab.shape}")
        if lab.shape[0] != X.shape[0]:
            raise ValueError(f"labels has {lab.shape[0]} entries but X has {X.shape[0]} rows")
        if lab.dtype.kind not in "iu":
            if lab.dtype.kind == "f" and bool(xp.all(lab == xp.round(lab))):
                lab = lab.astype(np.int64)
            else:
                raise TypeError(f"labels must be integers, got dtype {lab.dtype}")
        lab = lab.astype(np.int64, copy=False)
        lo = int(lab.min()) if lab.size else 0
        hi = int(lab.max()) if lab.size else -1
        if n_classes is None:
            n_classes = hi + 1
        n_classes = int(n_classes)
        if lo < 0 or hi >= n_classes:
            raise ValueError(f"labels must lie in [0, {n_classes}), found values in [{lo}, {hi}]")
        n, p = X.shape
        self.X = X
        self.labels = lab
        self.n_samples = n
        self.n_classes = n_classes
        if mean is None:
            mu = xp.asarray(X.sum(axis=0)).ravel() / n
        else:
            mu = xp.asarray(mean)
            if mu.shape != (p,):
                raise ValueError(f"mean must have shape ({p},), got {mu.shape}")
        self.mean_ = mu.astype(X.dtype, copy=False)
        self.class_counts_ = xp.bincount(lab, minlength=n_classes)
        self.class_mean_ = (self.class_counts_ / n).astype(X.dtype)
        ones = xp.ones(n, dtype=X.dtype)
        spmod = get_namespace(X).sparse
        # K x n one-hot transpose (CSR): Y^T Z sums the rows of Z by label in one SpMM
        self._YT = spmod.csr_matrix((ones, (lab, xp.arange(n))), shape=(n_classes, n))
        self.XtY_ = None
        self._YtX = None
        if precompute:
            self._YtX = (self._YT @ X).tocsr()              # K x p, nnz <= nnz(X)
            self._YtX.sum_duplicates()
            self.XtY_ = csr_transpose(self._YtX)                 # p x K, explicit CSR (fast SpMM)
        super().__init__((p, n_classes), X.dtype)

    def _matmat(self, V):
        if self.XtY_ is not None:
            Y = csr_matmat(self.XtY_, V)                    # (X^T Y) V: one SpMM
        else:
            Y = self.X.T @ V[self.labels]                   # X^T (Y V): gather + SpMM
        Y = get_namespace(Y).xp.asarray(Y)
        Y -= (self.n_samples * self.mean_)[:, None] * (self.class_mean_ @ V)[None, :]
        return Y

    def _rmatmat(self, U):
        if self._YtX is not None:
            Y = csr_matmat(self._YtX, U)                    # (Y^T X) U: one SpMM
        else:
            Z = self.X @ U                                  # (n, m) SpMM
            Y = self._YT @ Z                                # (K, m) one-hot aggregation SpMM
        Y = get_namespace(Y).xp.asarray(Y)
        Y -= (self.n_samples * self.class_mean_)[:, None] * (self.mean_ @ U)[None, :]
        return Y

    def one_hot(self) -> sp.csr_matrix:
        """The n x K one-hot matrix ``Y`` (CSR)."""
        return csr_transpose(self._YT)
