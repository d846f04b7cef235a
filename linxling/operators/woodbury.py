"""Inverse of a block-diagonal matrix minus a rank-1 term (Cr5, Josifoski et al. 2019, Sec. 5).

For ``B = X^T X + alpha I`` (block-diagonal across languages) and the centred Gram
``X̂^T X̂ + alpha I = B - n mu mu^T`` the Sherman–Morrison–Woodbury identity gives::

    (B - n mu mu^T)^{-1} = B^{-1} + c g g^T,   g = B^{-1} mu,   c = n / (1 - n mu^T g).

The paper writes this as ``B^{-1} - zeta zeta^T`` with
``zeta = sqrt(n / (n mu^T B^{-1} mu - 1)) B^{-1} mu``. Because ``B - n mu mu^T`` is SPD,
``1 - n mu^T g > 0`` (matrix determinant lemma), so the paper's square root is of a negative
number and ``zeta`` is imaginary; ``-zeta zeta^T`` is the real matrix ``+c g g^T`` used here.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from linxling._backend import get_namespace
from linxling._linop import LinearOperator
from linxling._progress import progress
from linxling._validation import check_positive
from linxling.kernels.dense import add_outer
from linxling.operators.block import BlockDiagonal
from linxling.operators.gram import GramBlockInverse

__all__ = ["WoodburyInverse", "woodbury_from_blocks"]


class WoodburyInverse(LinearOperator):
    """``(B - n mu mu^T)^{-1} = B^{-1} + c g g^T`` from a block-diagonal ``B^{-1}``.

    Parameters
    ----------
    block_inverses : BlockDiagonal or sequence of operators
        ``B_l^{-1}`` for each language (e.g. :class:`GramBlockInverse`), in the order of the
        columns of ``mu``. A list is wrapped in :class:`BlockDiagonal`.
    mean : array (p,)
        The full ``mu = X^T 1 / n`` over all languages.
    n_samples : int
        ``n``, the total number of rows (documents) over all languages.
    n_jobs : int, default 1
        Threads used by the block-diagonal application when a list is given.

    Attributes
    ----------
    block_inverse : BlockDiagonal
    mean_ : ndarray (p,)
    n_samples : int
    g_ : ndarray (p,)
        ``B^{-1} mu`` (one block solve, done at construction).
    c_ : float
        ``n / (1 - n mu^T g)``.
    denominator_ : float
        ``1 - n mu^T g`` (in (0, 1] for an SPD ``B - n mu mu^T``).

    Raises
    ------
    ValueError
        If ``1 - n mu^T g <= 0``: then ``B - n mu mu^T`` is not positive definite. That cannot
        happen for ``alpha > 0`` with exact block inverses and a ``mu`` that is the mean of the
        data; it can when the block solves are inexact (loose CG tolerance) or ``mu``/``n`` do
        not belong to the data.

    Notes
    -----
    Each application costs one block-diagonal solve plus O(p m); the correction never
    couples languages except through the rank-1 term. The operator is symmetric.
    """

    def __init__(self, block_inverses: Any, mean: Any, n_samples: int, *, n_jobs: int = 1) -> None:
        if isinstance(block_inverses, BlockDiagonal):
            binv = block_inverses
        elif isinstance(block_inverses, LinearOperator) and not isinstance(block_inverses, Sequence):
            binv = BlockDiagonal([block_inverses])
        else:
            binv = BlockDiagonal(list(block_inverses), n_jobs=n_jobs)
        if binv.shape[0] != binv.shape[1]:
            raise ValueError(f"block_inverses must be square, got shape {binv.shape}")
        self.block_inverse = binv
        p = binv.shape[0]
        xp = get_namespace(mean).xp
        mu = xp.asarray(mean)
        if mu.shape != (p,):
            raise ValueError(f"mean must have shape ({p},) to match the block inverses, got {mu.shape}")
        if not bool(xp.all(xp.isfinite(mu))):
            raise ValueError("mean contains non-finite values")
        self.n_samples = int(check_positive(n_samples, "n_samples", integer=True))
        super().__init__((p, p), binv.dtype, symmetric=True)
        self.mean_ = mu.astype(self.dtype, copy=False)
        g = binv.matvec(self.mean_)
        self.g_ = g
        ntg = self.n_samples * float(xp.dot(mu.astype(np.float64), g.astype(np.float64)))
        self.denominator_ = 1.0 - ntg
        if not self.denominator_ > 0:
            raise ValueError(
                f"B - n mu mu^T is not positive definite: 1 - n mu^T B^-1 mu = {self.denominator_:.3e} "
                "<= 0. This cannot happen for alpha > 0 with exact block inverses and mu, n taken "
                "from the data; check that mean/n_samples match the blocks, or tighten the block "
                "solver tolerance (e.g. GramBlockInverse(cg_rtol=...)) if the solves are inexact.")
        self.c_ = self.n_samples / self.denominator_

    def _matmat(self, V):
        Y = self.block_inverse.matmat(V)
        g = self.g_
        add_outer(Y, g, g @ V, self.c_)
        return Y

    def __repr__(self) -> str:
        return (f"<WoodburyInverse shape={self.shape} dtype={self.dtype} "
                f"n_blocks={len(self.block_inverse.blocks)} c={self.c_:.3g}>")


def woodbury_from_blocks(blocks: Sequence[Any], alpha: float, *, methods: Sequence[str] | None = None,
                         n_jobs: int = 1, show_progress: bool | None = None,
                         **inverse_kwargs: Any) -> WoodburyInverse:
    """``(X̂^T X̂ + alpha I)^{-1}`` for ``X = diag(X_1, ..., X_L)`` (one block per language).

    Rows of language ``l`` only use that language's columns, so ``X^T X`` is block-diagonal
    and ``mu`` is the concatenation of per-language column sums divided by the *total*
    number of rows.

    Parameters
    ----------
    blocks : sequence of sparse matrices (n_l, p_l) or row sources
        A :class:`linxling.operators._source.RowSource` (a corpus on disk or on a dask cluster)
        is used through its chunked products only.
    alpha : float > 0
    methods : sequence of str, optional
        ``method`` of each block's :class:`GramBlockInverse` (default ``"auto"`` for all, or
        the ``method`` keyword).
    n_jobs : int, default 1
        Threads for the per-language solves.
    show_progress : bool or None
        A progress bar over the blocks while they are factorised (``None``: global setting).
    **inverse_kwargs
        Passed to every :class:`GramBlockInverse` (``method``, ``cg_rtol``, ...).

    Returns
    -------
    WoodburyInverse
        Of shape (sum p_l, sum p_l).
    """
    blocks = list(blocks)
    if not blocks:
        raise ValueError("blocks is empty: give one matrix per language")
    if methods is None:
        methods = [inverse_kwargs.pop("method", "auto")] * len(blocks)
    elif len(methods) != len(blocks):
        raise ValueError(f"methods has {len(methods)} entries for {len(blocks)} blocks")
    invs = [GramBlockInverse(Xl, alpha, method=m, **inverse_kwargs)
            for Xl, m in progress(list(zip(blocks, methods, strict=True)), show=show_progress,
                                  desc="factorising blocks")]
    n = sum(inv.X.shape[0] for inv in invs)
    # a row-partitioned block (on disk, on a cluster) gives its cached column sums
    sums = [inv.source.column_sums() if inv.source is not None else np.asarray(inv.X.sum(axis=0)).ravel()
            for inv in invs]
    mu = np.concatenate(sums) / n
    dtype = np.result_type(*[inv.dtype for inv in invs])
    return WoodburyInverse(BlockDiagonal(invs, n_jobs=n_jobs), mu.astype(dtype), n)
