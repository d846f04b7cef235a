"""Gram operators ``X^T X + alpha I`` (plain and implicitly centred) and their inverses.

Nothing here centres or densifies ``X``: the centred Gram is applied as
``X^T (X V) - n mu (mu^T V) + alpha V`` with two SpMMs and a rank-1 correction.
"""
from __future__ import annotations

from linxling._warnings import find_stack_level

import warnings

from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling.kernels.dense import add_outer, add_scaled
from linxling.kernels.spmm import csr_matmat, csr_rmatmat, csr_transpose
from linxling._backend import get_namespace
from linxling._validation import check_positive, check_sparse_matrix
from linxling._linop import LinearOperator
from linxling.solvers import SolveResult, block_cg
from linxling.solvers.cg import jacobi_block_cg, krylov_block_cg

__all__ = ["Gram", "CenteredGram", "SourceGram", "GramBlockInverse", "gram_nnz_estimate"]


def _column_sumsq(X) -> np.ndarray:
    """``diag(X^T X)`` for CSR ``X`` (n, p), in X's dtype."""
    xp = get_namespace(X).xp
    out = xp.zeros(X.shape[1], dtype=X.dtype)
    if X.nnz:
        if xp is np:
            from linxling.kernels.spmm import csr_column_sumsq
            out = csr_column_sumsq(X).astype(X.dtype)
        else:  # pragma: no cover - GPU
            out = xp.asarray(X.multiply(X).sum(axis=0)).ravel().astype(X.dtype)
    return out


class Gram(LinearOperator):
    """``X^T X + alpha I`` for a sparse ``X`` (uncentred), applied with two SpMMs.

    Parameters
    ----------
    X : sparse or dense matrix (n_samples, n_features)
        Converted to CSR; float32 stays float32.
    alpha : float > 0
        Ridge term.
    transpose_copy : bool, default True
        Keep an explicit CSR copy of ``Xᵀ`` (built on first use) so that both products are
        row-parallel gathers; ``False`` applies ``Xᵀ`` from ``X`` itself
        (:func:`linxling.kernels.spmm.csr_rmatmat`: no copy, somewhat slower).

    Attributes
    ----------
    X : csr_matrix (n_samples, n_features)
    alpha : float
    n_samples : int
    """

    def __init__(self, X: Any, alpha: float, *, transpose_copy: bool = True) -> None:
        X = check_sparse_matrix(X, "X")
        self.transpose_copy = bool(transpose_copy)
        self.alpha = float(check_positive(alpha, "alpha"))
        self.X = X
        self.n_samples = X.shape[0]
        # host data: an explicit CSR copy of X^T so both products run on the row-parallel numba
        # SpMM (measured 2.3x faster than SciPy's one-thread CSR/CSC products for 120 columns)
        # (built on first use: an operator that is never applied costs no copy)
        self._host = get_namespace(X).name == "numpy"
        self._XT = None
        super().__init__((X.shape[1], X.shape[1]), X.dtype, symmetric=True)

    def _apply_gram(self, V):
        """``X^T (X V) + alpha V`` for V (p, m)."""
        if self._host and isinstance(V, np.ndarray) and not self.transpose_copy:
            Y = csr_rmatmat(self.X, csr_matmat(self.X, V))       # (p, m), no copy of X
        elif self._host and isinstance(V, np.ndarray):
            Y = csr_matmat(self.transposed(), csr_matmat(self.X, V))      # (p, m), two parallel SpMMs
        else:
            XV = self.X @ V                    # (n, m)   SpMM
            Y = self.X.T @ XV                  # (p, m)   SpMM (CSC transpose view, no copy)
        Y = get_namespace(Y).xp.asarray(Y)
        Y += self.alpha * V
        return Y

    def _matmat(self, V):
        return self._apply_gram(V)

    def fused_parts(self):
        """``(X, Xᵀ as CSR, alpha)`` for the fused product of
        :func:`linxling.solvers.cg.jacobi_block_cg`, or None when this operator does not keep a
        transposed copy on the host."""
        if not (self._host and self.transpose_copy and type(self) is Gram):
            return None
        return self.X, self.transposed(), self.alpha

    def transposed(self):
        """The explicit CSR copy of ``Xᵀ`` this operator keeps (built on first use)."""
        if self._XT is None:
            self._XT = csr_transpose(self.X)
        return self._XT

    def diagonal(self):
        """``diag(X^T X) + alpha``, shape (n_features,)."""
        return _column_sumsq(self.X) + self.X.dtype.type(self.alpha)


class CenteredGram(Gram):
    """``X̂^T X̂ + alpha I`` with ``X̂ = X - 1 mu^T``, never forming ``X̂``.

    Applied to a block ``V`` of shape (p, m) as ``X^T (X V) - n mu (mu^T V) + alpha V``
    (two SpMMs plus a rank-1 correction; no loop over columns).

    Parameters
    ----------
    X : sparse or dense matrix (n_samples, n_features)
        Converted to CSR; must be finite. float32 stays float32.
    alpha : float > 0
        Ridge term.
    mean : array (n_features,), optional
        ``mu``; defaults to the column means ``X^T 1 / n``. When given, the operator is
        ``X^T X - n mu mu^T + alpha I`` with that ``mu`` (e.g. a mean computed elsewhere).

    Attributes
    ----------
    mean_ : ndarray (n_features,)
    n_samples : int
    alpha : float
    X : csr_matrix (n_samples, n_features)

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.random(20, 5, density=0.3, format="csr", random_state=0)
    >>> G = CenteredGram(X, alpha=0.1)
    >>> Xc = X.toarray() - X.toarray().mean(0)
    >>> np.allclose(G.to_dense(), Xc.T @ Xc + 0.1 * np.eye(5))
    True
    """

    def __init__(self, X: Any, alpha: float, mean: Any = None) -> None:
        super().__init__(X, alpha)
        xp = get_namespace(self.X).xp
        p = self.X.shape[1]
        if mean is None:
            mu = xp.asarray(self.X.sum(axis=0)).ravel() / self.n_samples
        else:
            mu = xp.asarray(mean)
            if mu.shape != (p,):
                raise ValueError(f"mean must have shape ({p},) to match X's {p} columns, got {mu.shape}")
            if not bool(xp.all(xp.isfinite(mu))):
                raise ValueError("mean contains non-finite values")
        self.mean_ = mu.astype(self.X.dtype, copy=False)

    def _matmat(self, V):
        Y = self._apply_gram(V)
        mu = self.mean_
        add_outer(Y, mu, mu @ V, -self.n_samples)
        return Y

    def diagonal(self):
        """``diag(X^T X) - n mu^2 + alpha``, shape (n_features,)."""
        return super().diagonal() - self.n_samples * self.mean_ ** 2


class SourceGram(LinearOperator):
    """``X^T X + alpha I`` for a row-partitioned ``X`` (:class:`linxling.operators._source.RowSource`).

    ``X^T (X V)`` is computed by the source chunk by chunk (on disk: streamed; on a dask cluster:
    on the workers); the values are read in ``dtype`` (float32 for a mixed-precision CG on float64
    data, without a float32 copy of ``X``).
    """

    def __init__(self, source: Any, alpha: float, dtype: Any = None) -> None:
        self.X = source
        self.alpha = float(check_positive(alpha, "alpha"))
        self.n_samples = source.shape[0]
        super().__init__((source.shape[1], source.shape[1]), dtype or source.dtype, symmetric=True)

    def _matmat(self, V):
        V = np.ascontiguousarray(V, dtype=self.dtype)
        return add_scaled(self.X.gram_matmat(V), V, self.alpha)     # as matmat_into: no alpha V block

    @property
    def writes_into(self) -> bool:
        """Whether :meth:`matmat_into` writes into the block it is given (the source sums its
        Gram product here: a corpus streamed from disk, not one summed on dask workers)."""
        return bool(getattr(self.X, "gram_into", False))

    def matmat_into(self, V, out):
        """``(XᵀX + alpha I) V`` written into ``out`` (C-contiguous, ``V``'s shape, this operator's
        dtype) when the source sums its Gram product into a given block (a corpus streamed from
        disk: :meth:`ChunkedSource.gram_matmat`), with the same additions as :meth:`matmat`;
        None (``out`` untouched) otherwise. The block solvers pass a buffer they reuse at every
        iteration: a fresh p × m block each time costs a page fault per page. Measured on one
        K = 60,000 Wikipedia-shaped language read from its file (194,980 features, 330
        right-hand sides, 23 Jacobi block-CG iterations, float32, a fresh process each, old and
        new interleaved on a 2-core AMD EPYC): medians 37.4 against 40.1 s (6 solves each; the
        ranges 30.3-44.2 and 32.2-42.0 s overlap on this shared machine)."""
        if not self.writes_into:
            return None
        V = np.ascontiguousarray(V, dtype=self.dtype)
        self.X.gram_matmat(V, out=out)
        return add_scaled(out, V, self.alpha)      # no temporary alpha V block either

    def diagonal(self):
        """``diag(X^T X) + alpha`` (from the source's cached column statistics)."""
        return (self.X.column_sumsq() + self.alpha).astype(self.dtype)


def _source_nnz_estimate(source: Any, exact_limit: float = 2e7) -> tuple[int, bool]:
    """:func:`gram_nnz_estimate` for a RowSource: the O(n) bound, exact (and the Gram kept for a
    factor) when the bound is small."""
    p = source.shape[1]
    row_nnz = source.row_nnz()
    bound = int(min(int((row_nnz ** 2).sum()), p * p))
    if bound <= exact_limit:
        return int(source.gram_sparse().nnz), True
    return bound, False


def gram_nnz_estimate(X: Any, *, exact_limit: float = 2e7) -> tuple[int, bool]:
    """Estimate ``nnz(X^T X)`` for CSR ``X`` cheaply.

    The bound ``sum_i nnz(row_i)^2`` (capped at ``p^2``) costs O(n). When it is at most
    ``exact_limit`` the product's sparsity structure is computed exactly instead (its cost is
    about that bound).

    Returns
    -------
    nnz : int
    exact : bool
        Whether ``nnz`` is exact (otherwise an upper bound).
    """
    X = sp.csr_matrix(X)
    p = X.shape[1]
    row_nnz = np.diff(X.indptr).astype(np.int64)
    bound = int(min(int((row_nnz ** 2).sum()), p * p))
    if bound <= exact_limit:
        S = sp.csr_matrix((np.ones_like(X.data, dtype=np.float32), X.indices, X.indptr), shape=X.shape)
        return int((S.T @ S).nnz), True
    return bound, False


def _gram_nnz_lower_bound(X: Any, n_sample: int = 2000) -> int:
    """A lower bound on ``nnz(X^T X)``: the exact count for a sample of ``n_sample`` rows.

    The sparsity pattern of the sample's Gram is a subset of the full one, so this never
    over-estimates; it costs ~``n_sample / n`` of the exact count.
    """
    X = sp.csr_matrix(X)
    n = X.shape[0]
    if n <= n_sample:
        return gram_nnz_estimate(X)[0]
    rows = np.random.default_rng(0).choice(n, size=n_sample, replace=False)
    return gram_nnz_estimate(X[np.sort(rows)])[0]


class GramBlockInverse(LinearOperator):
    """``(X^T X + alpha I)^{-1}`` for one language block ``X`` (n_l, p_l), as an operator.

    Parameters
    ----------
    X_l : sparse matrix (n_l, p_l)
    alpha : float > 0
    method : {"auto", "dense", "cholmod", "cg"}, default "auto"
        * ``"dense"``: Cholesky (``scipy.linalg.cho_factor``) of the dense p_l x p_l matrix
          ``(X^T X).toarray() + alpha I`` (built in row chunks to bound memory).
        * ``"cholmod"``: sparse Cholesky of ``X^T X + alpha I`` straight from ``X`` with
          ``sksparse.cholmod.cholesky_AAt(X.T.tocsc(), beta=alpha)`` (CHOLMOD works in float64;
          results are cast back to X's dtype).
        * ``"cg"``: block conjugate gradients on SpMM with the Jacobi preconditioner
          ``diag(X^T X) + alpha``, stopping at ``cg_rtol`` (relative, per column).
        * ``"auto"``: ``"cholmod"`` when ``p_l`` qualifies for "dense" and the estimated density
          of ``X^T X`` is at most ``cholmod_max_density`` (the factor is then bounded by the dense
          budget), or, above ``dense_max``, when the density is at most ``cholmod_max_density/10``
          and ``fill_factor * nnz(X^T X)`` factor entries fit the budget (fill-in of a text Gram is
          unpredictable: on Arabic Bible verses, p_l=15k, density 0.009, CHOLMOD took 99 s to
          factor vs 0.9 s per block-CG apply); else ``"dense"`` when
          ``p_l <= dense_max`` and two ``p_l^2`` float64 arrays fit ``memory_budget``; else
          ``"cg"``. CHOLMOD is tried first because on a sparse Gram it factors and solves much
          faster than dense LAPACK (measured: p_l=3000, density 0.009: 0.05 s vs 0.8 s to
          factor, 8 ms vs 43 ms for 60 right-hand sides).
    cg_rtol : float, default 1e-10
        Relative residual tolerance of ``"cg"``; raised to ``50 eps`` of the data dtype
        (about 6e-6 for float32) so that float32 solves can converge (``cg_rtol_effective_``).
    cg_maxiter : int, optional
        Default ``10 * p_l``.
    dense_max : int, default 4000
        Largest p_l factored densely by "auto". Measured crossover on Bible-verse TF-IDF blocks
        (20k rows, ~6 block applications of 120 columns as in a Cr5 fit): dense wins at
        p_l = 2951 (factor 0.6 s, 0.04 s per application vs 0.23 s for float32 CG); block CG wins
        at p_l = 5597 (dense factor 2.4 s vs 0.14 s per CG application).
    memory_budget : int, default 2 GiB
        Bytes allowed for a dense Gram or a sparse factor.
    cholmod_max_density : float, default 0.01
    fill_factor : float, default 10.0
        Assumed ratio nnz(L) / nnz(X^T X) used by ``"auto"``.
    expected_rhs : int, optional
        How many right-hand-side columns the operator will be applied to in its lifetime (a Cr5
        fit knows: a few blocks of r + 20). When given, "auto" weighs a dense factor against
        block CG for blocks with p_l <= dense_max with a cost model calibrated on this machine
        (a dense factor pays off only when enough columns amortise its O(p^3) set-up).
    mixed_precision : {"auto", True, False}, default "auto"
        Run ``"cg"`` iterations in float32 on float64 data (results returned in float64).
        "auto" does so when ``cg_rtol >= 1e-4``: float32 reaches such residuals with room to
        spare, and it halves the memory traffic of every iteration. ``mixed_precision_`` tells
        whether it is in use (it keeps a float32 copy of ``X_l``). The same rule makes a
        ``"dense"`` factor float32 (3x faster to factor, 2x to apply) when a test solve meets
        ``cg_rtol / 100`` against the float64 Gram; otherwise it stays float64
        (``factor_dtype_``).
    transpose_copy : bool, default True
        See :class:`Gram`: ``False`` keeps no transposed copy of ``X_l`` (for fits under a
        memory budget).
    fused_cg : bool, default True
        Run ``"cg"`` on NumPy data with :func:`linxling.solvers.cg.jacobi_block_cg` (fused numba
        passes; with the transposed copy the Gram product is fused with ``pᵀAp`` too) instead of
        the plain :func:`linxling.solvers.block_cg`. Same iteration, same tolerance; ``False``
        is the reference.
    cg_krylov : {"auto", "columns", "block"}, default "auto"
        How the columns of one ``"cg"`` solve share work (NumPy data, ``fused_cg``):
        ``"columns"`` runs one CG per column (:func:`linxling.solvers.cg.jacobi_block_cg`);
        ``"block"`` runs O'Leary's block CG, one Krylov space for all columns
        (:func:`linxling.solvers.cg.krylov_block_cg`): fewer iterations, at the price of about
        ``16 p_l m²`` flops of dense work per iteration. ``"auto"`` takes ``"block"`` when
        ``nnz(X_l) >= KRYLOV_BLOCK_RATIO · p_l · m`` (m columns), i.e. when the sparse product
        dominates an iteration. Measured on Cr5's inner solves of Wikipedia-shaped blocks (float32,
        128 columns, rtol 1e-2, one BLAS thread): at K = 485,000 (82.4M nonzeros, p_l = 200,000;
        ratio 3.2) 11 block iterations against 16, 73.3 against 79.2 s; at K = 240,000 (ratio
        1.6) 24.4 against 25.5 s; at K = 60,000 (ratio 0.41) block CG was 1.5x slower (see
        ``docs/engine.md``).

    Attributes
    ----------
    method_ : str
        The method in use.
    reason_ : str
        Why ``"auto"`` chose it (or "requested").
    nnz_gram_ : int or None
        Estimate of ``nnz(X^T X)`` when it was computed.
    nonconverged_ : list of dict
        One record per ``cg`` application in which some column missed ``cg_rtol``.
    cg_iterations_ : list of int
        For ``"cg"``: the iterations of each application (until its last column stopped), in
        order; empty for the direct methods.
    gram : Gram
        The forward operator ``X^T X + alpha I``.

    Notes
    -----
    The operator is symmetric. With ``"cg"`` it is only approximately the inverse (to
    ``cg_rtol``); a failed solve warns :class:`linxling.solvers.ConvergenceWarning` and is
    recorded in ``nonconverged_``; it never raises.
    """

    METHODS = ("auto", "dense", "cholmod", "cg")
    KRYLOV = ("auto", "columns", "block")
    # "auto" runs block CG when nnz(X_l) >= KRYLOV_BLOCK_RATIO * p_l * m. Measured on the first
    # inner solve of Cr5 fits on Wikipedia-shaped data (l0's 128 right-hand sides, float32, rtol
    # 1e-2, one BLAS thread), block against column CG: ratio 0.41 (K = 60,000) 10.2 vs 6.9 s;
    # 1.59 (K = 240,000) 24.4 vs 25.5 s; 3.22 (K = 485,000) 73.3 vs 79.2 s. Break-even near 1.4
    KRYLOV_BLOCK_RATIO = 2.0

    def __init__(self, X_l: Any, alpha: float, method: str = "auto", cg_rtol: float = 1e-10,
                 cg_maxiter: int | None = None, dense_max: int = 4000, *,
                 memory_budget: int = 2 * 1024 ** 3, cholmod_max_density: float = 0.01,
                 fill_factor: float = 10.0, mixed_precision: str | bool = "auto",
                 expected_rhs: int | None = None, transpose_copy: bool = True, fused_cg: bool = True,
                 cg_krylov: str = "auto") -> None:
        if method not in self.METHODS:
            raise ValueError(f"method must be one of {self.METHODS}, got {method!r}")
        from linxling.operators._source import RowSource
        self.source = X_l if isinstance(X_l, RowSource) else None
        self.gram: Gram | SourceGram
        if self.source is not None:
            self.gram = SourceGram(self.source, alpha)
        else:
            self.gram = Gram(X_l, alpha, transpose_copy=transpose_copy)
        X = self.gram.X
        self.X = X
        self.alpha = self.gram.alpha
        self.cg_rtol = float(check_positive(cg_rtol, "cg_rtol"))
        # a float32 solve cannot reach 1e-10; judge it at its own precision instead of
        # iterating to maxiter and warning on every application
        self.cg_rtol_effective_ = max(self.cg_rtol, 50 * float(np.finfo(X.dtype).eps))
        self.cg_maxiter = (None if cg_maxiter is None
                           else int(check_positive(cg_maxiter, "cg_maxiter", strict=False, integer=True)))
        self.dense_max = int(check_positive(dense_max, "dense_max", strict=False, integer=True))
        self.memory_budget = int(check_positive(memory_budget, "memory_budget", strict=False))
        self.cholmod_max_density = float(check_positive(cholmod_max_density, "cholmod_max_density", strict=False))
        self.fill_factor = float(check_positive(fill_factor, "fill_factor"))
        self.expected_rhs = None if expected_rhs is None else int(check_positive(expected_rhs, "expected_rhs",
                                                                                  integer=True))
        self.fused_cg = bool(fused_cg)
        if cg_krylov not in self.KRYLOV:
            raise ValueError(f"cg_krylov must be one of {self.KRYLOV}, got {cg_krylov!r}")
        self.cg_krylov = cg_krylov
        self.cg_krylov_used_: list[str] = []
        self.nnz_gram_: int | None = None
        self.nonconverged_: list[dict] = []
        self.cg_iterations_: list[int] = []
        super().__init__(self.gram.shape, X.dtype, symmetric=True)
        if mixed_precision not in ("auto", True, False):
            raise ValueError(f"mixed_precision must be 'auto', True or False, got {mixed_precision!r}")
        # Mixed precision for loose solves: float32 CG iterations halve the memory traffic
        # (measured 1.9-2.5x faster per application on Bible verse blocks at rtol 1e-2 for 1-2
        # extra iterations); float32 reaches relative residuals far below 1e-4, so the requested
        # tolerance is still met and checked. Results are returned in the data dtype.
        want_mixed = bool(X.dtype == np.float64 and get_namespace(X).name == "numpy"
                          and (mixed_precision is True or (mixed_precision == "auto" and self.cg_rtol >= 1e-4)))
        self.method_, self.reason_ = self._choose(method)
        self._precond_diag = None
        self._factor = None
        self.factor_dtype_ = None
        if self.method_ == "dense":
            self._factor_dense(float32=want_mixed)
        elif self.method_ == "cholmod":
            self._factor_cholmod()
        else:
            self._precond_diag = self.gram.diagonal()
        self.mixed_precision_ = want_mixed and (self.method_ == "cg" or self.factor_dtype_ == np.float32)
        self._gram_cg, self._diag_cg = self.gram, self._precond_diag
        if self.mixed_precision_ and self.method_ == "cg":
            if self.source is not None:     # values cast to float32 per chunk: no copy of X
                self._gram_cg = SourceGram(self.source, self.alpha, dtype=np.float32)
            else:
                self._gram_cg = Gram(X.astype(np.float32), self.alpha, transpose_copy=transpose_copy)
            self._diag_cg = self._precond_diag.astype(np.float32)
        if self.source is not None and self.method_ == "cg":
            self.source.release_gram()      # an XᵀX assembled only to count its nonzeros

    @property
    def cg_gram(self) -> LinearOperator:
        """``X_lᵀX_l + alpha I`` as the operator the CG runs on (float32 values on float64 data with
        ``mixed_precision_`` and ``method_ == "cg"``; else :attr:`gram`)."""
        return self._gram_cg

    def csr_pair(self, dtype: Any):
        """``(X_l, X_lᵀ or None)`` in ``dtype`` as this inverse already holds them (the Gram the CG
        runs on builds its CSR transpose here if it keeps one), or None when it holds no such
        in-memory copy: for other operators of the same block to share instead of copying."""
        dt = np.dtype(dtype)
        for g in (self._gram_cg, self.gram):
            if isinstance(g, Gram) and g._host and g.X.dtype == dt:
                if g is self._gram_cg and self.method_ == "cg" and g.transpose_copy:
                    return g.X, g.transposed()      # the CG builds it on its first product anyway
                return g.X, g._XT
        return None

    # ------------------------------------------------------------------ method choice
    def _choose(self, method: str) -> tuple[str, str]:
        p = self.shape[0]
        on_gpu = get_namespace(self.X).name == "cupy"
        if method != "auto":
            if on_gpu and method != "cg":  # pragma: no cover - GPU
                raise NotImplementedError(f"method={method!r} is CPU-only; use method='cg' for CuPy data")
            if method == "cholmod":
                _import_cholmod()
            return method, "requested"
        if on_gpu:  # pragma: no cover - GPU
            return "cg", "CuPy data: only the matrix-free block CG runs on the GPU"
        dense_bytes = 2 * p * p * 8
        dense_ok = p <= self.dense_max and dense_bytes <= self.memory_budget
        # the density threshold that could still select CHOLMOD for this block
        limit = self.cholmod_max_density if dense_ok else self.cholmod_max_density / 10
        if self.source is not None:    # row-partitioned: the first rows give the lower bound
            lower = gram_nnz_estimate(self.source.head(2000))[0]
        else:
            lower = _gram_nnz_lower_bound(self.X)
        if lower > limit * p * p:
            # even a sample of the rows gives a Gram too dense for CHOLMOD: skip the exact count
            nnz, kind = lower, " (lower bound, from a sample of the rows)"
        else:
            nnz, exact = (_source_nnz_estimate(self.source) if self.source is not None
                          else gram_nnz_estimate(self.X))
            kind = "" if exact else " (upper bound)"
        self.nnz_gram_ = nnz
        density = nnz / float(p * p)
        factor_bytes = self.fill_factor * nnz * 12
        # Beyond dense_max the fill-in of a text co-occurrence Gram is unpredictable and can be
        # catastrophic (measured: Arabic Bible verses, p_l=15163, density 0.009 -> CHOLMOD took
        # 99 s to factor and 8.7 s per 120 right-hand sides, block CG 0.9 s). So there CHOLMOD
        # is only chosen for a truly sparse Gram (density <= cholmod_max_density / 10).
        sparse_ok = (density <= self.cholmod_max_density and dense_ok) or (
            density <= self.cholmod_max_density / 10 and factor_bytes <= self.memory_budget)
        missing = ""
        if sparse_ok:
            try:
                _import_cholmod()
            except ImportError:
                sparse_ok = False
                missing = ("; CHOLMOD's sparse factor would be chosen here, but scikit-sparse is not "
                           "installed (pip install 'linxling[cholmod]')")
        if sparse_ok:
            # Preferred over "dense" even for small p: a sparse Gram factors ~15x faster and
            # solves ~5x faster with CHOLMOD (measured, p=3000, density 0.009); when p fits
            # dense_max the factor can never outgrow the dense budget, whatever the fill-in.
            return "cholmod", (f"X^T X is sparse: nnz={nnz}{kind}, density {density:.2g} <= "
                               f"cholmod_max_density={self.cholmod_max_density}; "
                               + ("p_l fits dense_max so the factor is bounded by the dense budget"
                                  if dense_ok else f"estimated factor {factor_bytes / 2**20:.0f} "
                                  "MiB fits memory_budget"))
        if missing:
            _note_no_cholmod()
        if dense_ok and self.expected_rhs is not None:
            t_dense, t_cg = self._cost_model(p)
            if t_cg < t_dense:
                return "cg", (f"p_l={p} <= dense_max but block CG is estimated cheaper for "
                              f"{self.expected_rhs} right-hand sides: {t_cg:.2g} s vs {t_dense:.2g} s "
                              "for the dense factor and solves (cost model, see expected_rhs)" + missing)
        if dense_ok:
            return "dense", (f"p_l={p} <= dense_max={self.dense_max} and the dense Gram + factor "
                             f"({dense_bytes / 2**20:.1f} MiB) fit memory_budget; X^T X density "
                             f"{density:.2g}{kind}" + missing)
        if density > self.cholmod_max_density:
            why = f"density {density:.2g} > cholmod_max_density={self.cholmod_max_density}"
        elif density > self.cholmod_max_density / 10:
            why = (f"density {density:.2g} > cholmod_max_density/10 = {self.cholmod_max_density / 10:.2g}, "
                   "the bound used above dense_max where fill-in is unpredictable")
        else:
            why = f"estimated factor {factor_bytes / 2**20:.0f} MiB exceeds memory_budget"

        if missing:
            why = "scikit-sparse (CHOLMOD) is not installed (pip install 'linxling[cholmod]')"
        return "cg", (f"p_l={p} > dense_max={self.dense_max} (or the dense Gram exceeds "
                      f"memory_budget) and X^T X (nnz={nnz}{kind}) is not sparse enough to factor: {why}")

    # Rates measured on the 2-core development machine (Bible-verse TF-IDF blocks, 1 BLAS thread):
    # Cholesky of p = 2951 in 0.19 s (~45 Gflop/s), triangular solves ~20 Gflop/s, and one
    # float32 block-CG iteration ~1.5e-10 s per (nonzero x right-hand side), ~20 iterations at
    # rtol 1e-2. Only the ratio matters for the choice; it reproduces the measured winners
    # (dense for p=2951/nnz=497k, CG for p=5597/nnz=391k and for all p<4000 blocks of 5k rows).
    _DENSE_FACTOR_RATE = 45e9
    _DENSE_SOLVE_RATE = 20e9
    _CG_SECONDS_PER_NNZ_RHS_ITER = 1.5e-10
    _CG_ITERATIONS = 20

    def _cost_model(self, p: int) -> tuple[float, float]:
        """Estimated seconds for (dense factor + solves, block CG) over ``expected_rhs`` columns."""
        m = float(self.expected_rhs)
        nnz = float(self.X.nnz)
        t_dense = (p ** 3 / 3.0) / self._DENSE_FACTOR_RATE + m * 2.0 * p * p / self._DENSE_SOLVE_RATE
        t_cg = m * self._CG_ITERATIONS * nnz * self._CG_SECONDS_PER_NNZ_RHS_ITER
        if self.cg_rtol < 1e-4:       # tight tolerance: float64 and many more iterations
            t_cg *= 2.0 * max(1.0, np.log10(1e-2 / self.cg_rtol))
        return t_dense, t_cg

    # ------------------------------------------------------------------ factorisations
    def _sparse_gram(self):
        """``X^T X`` as a sparse matrix: one SpGEMM (its result has at most p^2 entries, so its
        memory is bounded by the dense array it becomes; measured 0.07 s for p = 2951,
        nnz(X) = 497k, vs 0.44 s when accumulated over row chunks), or summed chunk by chunk
        (float64) for a row-partitioned block."""
        if self.source is not None:
            G = self.source.gram_sparse(keep=False)
            self.source.release_gram()
            return G
        return csr_transpose(self.X) @ self.X

    def _dense_gram(self, G=None, dtype=None) -> np.ndarray:
        """``X^T X + alpha I`` as a dense (p, p) array (in X's dtype unless ``dtype`` is given)."""
        G = self._sparse_gram() if G is None else G
        D = G.astype(self.dtype if dtype is None else dtype, copy=False).toarray()
        D[np.diag_indices(D.shape[0])] += D.dtype.type(self.alpha)
        return D

    def _factor_dense(self, float32: bool = False) -> None:
        """Cholesky of the dense Gram; with ``float32`` (loose tolerance) in single precision when
        a test solve meets ``cg_rtol / 100`` against the float64 Gram, else in float64."""
        from scipy.linalg import cho_factor, cho_solve
        if float32 and self.dtype == np.float64:
            # measured on Bible verses (p = 2951, one BLAS thread): factor 0.33 -> 0.10 s and
            # solves 2x faster, relative residual 2e-6 (the Gram's condition number is 1e3); the
            # float64 Gram is only ever held sparse here (the test product)
            G = self._sparse_gram()
            try:
                F = cho_factor(self._dense_gram(G, np.float32), lower=True, overwrite_a=True, check_finite=False)
                v = np.cos(np.arange(G.shape[0], dtype=np.float64))     # a fixed test right-hand side
                z = cho_solve(F, v.astype(np.float32), check_finite=False).astype(np.float64)
                rel = float(np.linalg.norm(G @ z + self.alpha * z - v) / np.linalg.norm(v))
            except np.linalg.LinAlgError:
                rel = np.inf
            if rel <= self.cg_rtol / 100:
                self._factor, self.factor_dtype_ = F, np.dtype(np.float32)
                return
            D = self._dense_gram(G)
        else:
            D = self._dense_gram()
        self._factor = cho_factor(D, lower=True, overwrite_a=True, check_finite=False)
        self.factor_dtype_ = self._factor[0].dtype

    def _factor_cholmod(self) -> None:
        cholmod = _import_cholmod()
        if self.source is not None:    # XᵀX summed chunk by chunk (float64), factored + alpha I
            G = self.source.gram_sparse(keep=False).tocsc()
            self.source.release_gram()
            G.sort_indices()
            self._factor = cholmod.cholesky(G, beta=self.alpha)
            return
        XT = self.X.T.tocsc().astype(np.float64)   # (p, n): CHOLMOD factors XT XT^T + beta I
        XT.sort_indices()
        self._factor = cholmod.cholesky_AAt(XT, beta=self.alpha)

    # ------------------------------------------------------------------ application
    def solve(self, R: Any, x0: Any = None, rtol: float | None = None):
        """Solve ``(X^T X + alpha I) Z = R``.

        Parameters
        ----------
        R : array (p_l,) or (p_l, m)
        x0 : array like ``R``, optional
            Warm start (``"cg"`` only; ignored by the direct methods).
        rtol : float, optional
            Relative tolerance for ``"cg"`` (default ``cg_rtol``).

        Returns
        -------
        SolveResult
            ``x`` has the shape of ``R``; for direct methods ``converged`` is True and
            ``n_iter`` is 0.
        """
        xp = get_namespace(R).xp
        R = xp.asarray(R)
        vec = R.ndim == 1
        R2 = R[:, None] if vec else R
        if R2.ndim != 2 or R2.shape[0] != self.shape[0]:
            raise ValueError(f"R must have shape ({self.shape[0]},) or ({self.shape[0]}, m), got {R.shape}")
        out_dtype = np.result_type(self.dtype, R2.dtype)
        if self.method_ == "dense":
            from scipy.linalg import cho_solve
            Z = cho_solve(self._factor, R2.astype(self.factor_dtype_, copy=False), check_finite=False)
            res = SolveResult(Z.astype(out_dtype, copy=False), True, 0, np.zeros((1, R2.shape[1])),
                              {"method": "dense"})
        elif self.method_ == "cholmod":
            Z = self._factor(np.asarray(R2, dtype=np.float64))
            res = SolveResult(np.asarray(Z).astype(out_dtype, copy=False), True, 0,
                              np.zeros((1, R2.shape[1])), {"method": "cholmod"})
        else:
            d = self._diag_cg
            X0 = None
            if x0 is not None:
                X0 = xp.asarray(x0)
                X0 = X0[:, None] if X0.ndim == 1 else X0
            # the CG runs in the dtype of the Gram it applies (float32 with mixed_precision_ or
            # float32 data), whatever R's: the fused products need one dtype throughout
            cg_dtype = self._gram_cg.dtype
            Rw = R2 if R2.dtype == cg_dtype else R2.astype(cg_dtype)
            if X0 is not None and X0.dtype != cg_dtype:
                X0 = X0.astype(cg_dtype)
            tol = self.cg_rtol_effective_ if rtol is None else rtol
            local = None
            if self.source is not None and isinstance(Rw, np.ndarray) and self.fused_cg:
                # on a dask cluster with every chunk on one worker the whole solve runs there
                local = self.source.solve_local(Rw, self.alpha, d, X0, rtol=tol, maxiter=self.cg_maxiter,
                                                krylov=self.krylov_for(Rw.shape[1]))
            if local is not None:
                res = local
                res.info["krylov"] = self.krylov_for(Rw.shape[1])
                res.info["where"] = "worker"
                self.cg_krylov_used_.append(res.info["krylov"])
            elif isinstance(Rw, np.ndarray) and self.fused_cg:
                fused = self._gram_cg.fused_parts() if isinstance(self._gram_cg, Gram) else None
                solver = jacobi_block_cg if self.krylov_for(Rw.shape[1]) == "columns" else krylov_block_cg
                res = solver(self._gram_cg, Rw, d, X0, rtol=tol, maxiter=self.cg_maxiter, gram=fused)
                res.info["krylov"] = "columns" if solver is jacobi_block_cg else "block"
                self.cg_krylov_used_.append(res.info["krylov"])
            else:
                res = block_cg(self._gram_cg, Rw, X0, rtol=tol, maxiter=self.cg_maxiter, M=lambda B: B / d[:, None])
            res.x = res.x.astype(out_dtype, copy=False)
            self.cg_iterations_.append(int(res.n_iter))
            res.info["method"] = "cg"
            res.info["mixed_precision"] = self.mixed_precision_
            if not bool(np.all(res.converged)):
                final = res.residual_norms[-1]
                bn = np.linalg.norm(np.asarray(R2, dtype=np.float64), axis=0)
                rel = np.where(bn > 0, final / np.where(bn > 0, bn, 1), final)
                self.nonconverged_.append({"application": self.n_matmat + 1,
                                           "n_failed": int(np.sum(~np.asarray(res.converged))),
                                           "n_columns": R2.shape[1], "n_iter": res.n_iter,
                                           "max_rel_residual": float(np.max(rel))})
        if vec:
            res.x = res.x[:, 0]
        return res

    def krylov_for(self, m: int) -> str:
        """``"columns"`` or ``"block"``: how a fused ``"cg"`` solve of ``m`` columns runs
        (``cg_krylov``; ``"auto"`` by the nonzeros per feature and column)."""
        if self.cg_krylov != "auto":
            return self.cg_krylov
        nnz = self.X.nnz if self.source is None else self.source.nnz
        return "block" if m >= 2 and nnz >= self.KRYLOV_BLOCK_RATIO * self.shape[0] * m else "columns"

    def _matmat(self, R):
        return self.solve(R).x

    def __repr__(self) -> str:
        return f"<GramBlockInverse shape={self.shape} dtype={self.dtype} method={self.method_!r}>"


_NOTED_NO_CHOLMOD: list[bool] = []


def _note_no_cholmod() -> None:
    """Say once per process that CHOLMOD would have been used: the fit goes on with the dense
    factor or block CG, which give the same result to the solver tolerance."""
    if not _NOTED_NO_CHOLMOD:
        _NOTED_NO_CHOLMOD.append(True)
        warnings.warn("scikit-sparse (CHOLMOD) is not installed: a sparse Gram block is factored densely "
                      "or solved by block CG instead (same result to the solver tolerance; "
                      "pip install 'linxling[cholmod]' for the sparse factor)", UserWarning,
                      stacklevel=find_stack_level())


def _import_cholmod():
    try:
        from sksparse import cholmod
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("method='cholmod' needs scikit-sparse: pip install 'linxling[cholmod]' (it builds "
                          "against SuiteSparse: apt install libsuitesparse-dev, or conda install "
                          "scikit-sparse)") from exc
    return cholmod
