"""Top-k eigenpairs of a symmetric (PSD) operator: ARPACK, LOBPCG, or a block Krylov method.

``method="subspace"`` is a thick-restart block Krylov (block Lanczos/Davidson) method with
Rayleigh–Ritz, in the family of randomized block Krylov methods (Halko, Martinsson & Tropp
2011; Musco & Musco 2015): start from a random block of ``b = k + oversample`` columns,
grow an orthonormal basis ``Q`` one block per iteration with the residuals of the current
top Ritz vectors (which span the same new Krylov directions as ``A Q_last``), and keep
``W = A Q`` alongside so that the Rayleigh–Ritz step and the exact Ritz residuals
``||A v - theta v||`` cost no extra operator applications. Each iteration is exactly one
block application ``A @ block``. When the basis reaches ``max_basis`` columns it restarts
from the top ``1.5 b`` Ritz vectors (no application needed: ``A V = W S``). Converged Ritz pairs
stop contributing new directions (soft locking), so the block shrinks as pairs converge.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np
import scipy.sparse.linalg as spla

from linxling._linop import LinearOperator, as_operator
from linxling._progress import progress
from linxling._validation import check_positive, check_random_state
from linxling._warnings import find_stack_level
from linxling.kernels.dense import each_row_part, gram_tn, matmul_rows
from linxling.solvers._orth import orthonormalize
from linxling.solvers._results import ConvergenceWarning, EigResult

__all__ = ["eigsh", "resolve_method"]

_METHODS = ("auto", "arpack", "lobpcg", "subspace", "dense")
_WHICH = ("LA", "LM", "SA")


def resolve_method(method: str, n: int, k: int, which: str = "LA") -> str:
    """The method :func:`eigsh` runs for ``method`` (``"auto"`` resolved) on an ``n x n`` operator."""
    if method == "auto":
        if n <= 64 or k >= n - 1:
            method = "dense"
        elif k <= 20 or which == "SA":
            method = "arpack"
        else:
            method = "subspace"
    if method == "arpack" and k >= n:
        method = "dense"   # ARPACK needs k < n
    return method


def _order(theta: np.ndarray, which: str) -> np.ndarray:
    """Indices putting the wanted eigenvalues first."""
    if which == "LM":
        return np.argsort(-np.abs(theta), kind="stable")
    if which == "SA":
        return np.argsort(theta, kind="stable")
    return np.argsort(-theta, kind="stable")


def _finish(theta, V):
    """Return pairs sorted in descending eigenvalue order (as documented for EigResult)."""
    o = np.argsort(-np.asarray(theta, dtype=np.float64), kind="stable")
    return theta[o], V[:, o]


def _residuals(op: LinearOperator, theta, V):
    if V.shape[1] == 0:
        return np.zeros(0)
    AV = op.matmat(V)
    return np.linalg.norm(np.asarray(AV, dtype=np.float64) - np.asarray(V, dtype=np.float64) * theta, axis=0)


def eigsh(A: Any, k: int, *, tol: float = 0.0, maxiter: int | None = None, v0: Any = None,
          which: str = "LA", method: str = "auto", block_size: int | None = None,
          random_state: Any = None, callback: Callable | None = None,
          show_progress: bool | None = None, max_basis: int | None = None,
          basis_dtype: Any = None, expand: str = "wanted", track_applied: int = 0) -> EigResult:
    """``k`` extreme eigenpairs of a symmetric (PSD) operator.

    Parameters
    ----------
    A : LinearOperator, scipy LinearOperator, sparse or dense matrix (n, n)
        Symmetric; only applied through ``matmat``.
    k : int
        Number of eigenpairs, ``1 <= k <= n``.
    tol : float, default 0.0
        Meaning depends on ``method``:

        * ``"arpack"``: ARPACK's relative accuracy of the Ritz values (0 = machine precision).
        * ``"lobpcg"``: SciPy's absolute residual tolerance (0 = SciPy's default).
        * ``"subspace"``: stop when ``||A v_i - theta_i v_i|| <= tol * |theta_i|`` for each of
          the ``k`` wanted pairs, ARPACK's criterion (0 = ``sqrt(eps)`` of the operator's dtype).
    maxiter : int, optional
        ARPACK's Arnoldi update iterations (SciPy default ``10 n``); LOBPCG / subspace
        iterations (default 200). Each subspace iteration is one block application.
    v0 : array (n,), optional
        Starting vector (ARPACK), or first column of the starting block (LOBPCG, subspace).
        A 2-D ``v0`` (n, c) gives the first ``c`` columns of the starting block of the block
        methods (ARPACK then uses its first column).
    which : {"LA", "LM", "SA"}, default "LA"
        Largest algebraic, largest magnitude (same as "LA" for PSD operators), smallest
        algebraic ("arpack", "lobpcg" and "dense" only).
    method : {"auto", "arpack", "lobpcg", "subspace", "dense"}, default "auto"
        ``"auto"``: ``"dense"`` when ``n <= 64`` or ``k >= n - 1``; ``"arpack"`` when
        ``k <= 20`` or ``which == "SA"``; ``"subspace"`` otherwise. ``"dense"`` applies ``A``
        to the identity and calls ``numpy.linalg.eigh`` (small ``n`` only).
    block_size : int, optional
        ``"subspace"``: block size ``b`` (default ``k + max(10, ceil(0.2 k))``, at most n);
        ``"lobpcg"``: number of iterated vectors (default ``k``).
    random_state : None, int or numpy Generator
        Seeds the random starting block (and ARPACK's ``v0`` when not given), making runs
        reproducible.
    callback : callable, optional
        ``callback(n_iter, eigenvalues, residual_norms)`` with the current ``k`` Ritz values
        (descending) and residual norms: every iteration for ``"subspace"``, once at the end
        for the other methods.
    show_progress : bool, optional
        tqdm bar over the subspace iterations (``None`` follows the global setting).
    max_basis : int, optional
        ``"subspace"`` only: the largest basis before a thick restart (default
        ``min(n, 3 b)``). Memory is about ``2 * n * max_basis`` numbers once the basis outgrows
        its first block (a solve that converges on its first block holds ``2 * n * b``).
    basis_dtype : float32 or float64, optional
        ``"subspace"`` only: the dtype the basis ``Q`` and ``W = A Q`` are stored in (default the
        operator's). float32 halves the solver's memory; Rayleigh-Ritz still runs in float64,
        and Ritz residuals are then accurate to about 1e-6 relative, so use it only with
        ``tol`` >= 1e-4 (Cr5 does so under a ``memory_budget``).
    expand : {"wanted", "block"}, default "wanted"
        ``"subspace"`` only: which Ritz residuals become the next block. ``"wanted"``: those of
        the unconverged pairs among the ``k`` wanted (the ``b - k`` guard vectors stay in the
        basis but are not expanded); ``"block"``: those of every unconverged pair among the
        top ``b``. Measured, "wanted" needs fewer operator columns on every problem tried: Cr5
        on 5 x 20k Bible verses (r = 100) 217 -> 197 at the paper's tolerances and 2,124 -> 1,571
        at eig tol 1e-3; dense test spectra (n = 3000, k = 100; geometric, clustered at the k-th
        eigenvalue, flat) 3-26 % fewer, at the cost of more iterations when the spectrum is
        clustered at the k-th eigenvalue (41 instead of 28 at tol 1e-4).
    track_applied : int, default 0
        ``"subspace"`` only: while the operator has been applied to at most this many columns in
        all, keep the (small) matrix ``C`` with ``eigenvectors = [B_1 ... B_j] C``, where ``B_i``
        are the blocks given to ``A.matmat`` in order, and return it as
        ``info["applied_coefficients"]`` (else None). A caller that kept ``A_0 B_i`` for a factor
        ``A = A_1 A_0`` then has ``A_0 V = Σ_i (A_0 B_i) C_i`` without another application
        (Cr5's Φ, eq. 14).

    Returns
    -------
    EigResult
        Eigenvalues in descending order with matching orthonormal eigenvectors (n, k).
        On non-convergence a :class:`ConvergenceWarning` is emitted and the best available
        (for ARPACK possibly fewer than ``k``) pairs are returned with ``converged=False``.
    """
    op = as_operator(A)
    n = op.shape[0]
    if op.shape[0] != op.shape[1]:
        raise ValueError(f"A must be square, got shape {op.shape}")
    k = int(check_positive(k, "k", integer=True))
    if k > n:
        raise ValueError(f"k={k} exceeds the operator size n={n}")
    if which not in _WHICH:
        raise ValueError(f"which must be one of {_WHICH}, got {which!r}")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if expand not in ("wanted", "block"):
        raise ValueError(f"expand must be 'wanted' or 'block', got {expand!r}")
    check_positive(tol, "tol", strict=False)
    if maxiter is not None:
        maxiter = int(check_positive(maxiter, "maxiter", integer=True))
    rng = check_random_state(random_state)
    requested = method
    method = resolve_method(method, n, k, which)
    if method == "subspace" and which == "SA":
        raise ValueError("method='subspace' finds the largest eigenvalues only; use 'arpack' or "
                         "'lobpcg' for which='SA'")
    if v0 is not None:
        v0 = np.asarray(v0)
        if v0.ndim == 2 and v0.shape[0] == n:
            if method in ("arpack", "dense"):   # single-vector methods: the block's leading column
                v0 = v0[:, 0]
            # block methods: a whole starting block (its columns replace the random ones)
        elif v0.shape != (n,):
            raise ValueError(f"v0 must have shape ({n},) (or ({n}, b), a starting block, for the "
                             f"block methods), got {v0.shape}")
        if v0.dtype.kind not in "fiub" or not bool(np.all(np.isfinite(v0))):
            raise ValueError("v0 must hold finite real numbers")
    start = op.n_matvec_equiv
    if method == "dense":
        res = _eig_dense(op, k, which)
    elif method == "arpack":
        res = _eig_arpack(op, k, tol, maxiter, v0, which, rng)
    elif method == "lobpcg":
        res = _eig_lobpcg(op, k, tol, maxiter, v0, which, rng, block_size)
    else:
        res = _eig_subspace(op, k, tol, maxiter, v0, which, rng, block_size, callback,
                            show_progress, max_basis, start, basis_dtype, expand, int(track_applied))
    if method != "subspace":
        res.n_matvec = int(op.n_matvec_equiv - start)
        res.residual_norms = _residuals(op, res.eigenvalues, res.eigenvectors)
        if callback is not None:
            callback(res.n_iter, res.eigenvalues, res.residual_norms)
    res.info.setdefault("method", method)
    res.info["requested_method"] = requested
    return res


# ---------------------------------------------------------------------- backends
def _eig_dense(op: LinearOperator, k: int, which: str) -> EigResult:
    D = np.asarray(op.to_dense(), dtype=np.float64)
    if not bool(np.all(np.isfinite(D))):
        raise ValueError("A has NaN or infinite entries (applied to the identity)")
    D = (D + D.T) / 2
    w, V = np.linalg.eigh(D)
    o = _order(w, which)[:k]
    theta, vecs = _finish(w[o].astype(op.dtype), V[:, o].astype(op.dtype))
    return EigResult(theta, vecs, True, 1, 0, np.zeros(k), {"method": "dense"})


def _eig_arpack(op, k, tol, maxiter, v0, which, rng) -> EigResult:
    n = op.shape[0]
    if v0 is None:
        v0 = rng.standard_normal(n)
    v0 = v0.astype(op.dtype)
    converged = True
    info: dict = {"method": "arpack", "tol": tol}
    try:
        w, V = spla.eigsh(op.aslinearoperator(), k=k, which=which, tol=tol, maxiter=maxiter,
                          v0=v0, return_eigenvectors=True)
    except spla.ArpackNoConvergence as exc:
        converged = False
        w, V = exc.eigenvalues, exc.eigenvectors
        if V is None or len(w) == 0:
            w, V = np.zeros(0, dtype=op.dtype), np.zeros((n, 0), dtype=op.dtype)
        info["n_converged"] = len(w)
        warnings.warn(f"ARPACK did not converge: {len(w)} of {k} eigenpairs converged "
                      f"(maxiter={maxiter}, tol={tol}); returning the converged ones",
                      ConvergenceWarning, stacklevel=find_stack_level())
    except spla.ArpackError as exc:
        if not str(exc).startswith("ARPACK error -9:"):      # the error keeps its code in its text only
            raise
        # "Starting vector is zero": the Krylov space ran out before k eigenvectors (the operator
        # has fewer than k independent directions; a zero operator, or identical data)
        raise np.linalg.LinAlgError(f"the operator has fewer than k={k} independent directions (ARPACK "
                                    "error -9: the Krylov space is exhausted); ask for fewer "
                                    "eigenpairs") from exc
    o = _order(np.asarray(w), which)
    theta, vecs = _finish(np.asarray(w)[o], np.asarray(V)[:, o])
    return EigResult(theta, vecs, converged, -1, 0, np.zeros(len(theta)), info)


def _eig_lobpcg(op, k, tol, maxiter, v0, which, rng, block_size) -> EigResult:
    n = op.shape[0]
    bs = k if block_size is None else int(block_size)
    if bs < k:
        raise ValueError(f"block_size={bs} must be >= k={k}")
    bs = min(bs, n)
    X0 = rng.standard_normal((n, bs)).astype(op.dtype)
    if v0 is not None:
        v0 = v0.reshape(n, -1)[:, :bs]
        X0[:, :v0.shape[1]] = v0
    maxiter = 200 if maxiter is None else int(maxiter)
    converged = True
    info: dict = {"method": "lobpcg", "tol": tol, "block_size": bs}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = spla.lobpcg(op.aslinearoperator(), X0, tol=tol if tol > 0 else None,
                          maxiter=maxiter, largest=(which != "SA"),
                          retResidualNormsHistory=True)
    # SciPy returns (w, V) without the history when it solves a problem that is small next to
    # the block (n < 5 block_size) with a dense eigensolver instead
    w, V = out[0], out[1]
    hist = out[2] if len(out) > 2 else None
    for c in caught:
        msg = str(c.message)
        if "not reaching the requested tolerance" in msg or "did not converge" in msg.lower():
            converged = False
        elif "dense eigensolver" in msg or "too small relative to the block size" in msg:
            info["dense_fallback"] = True
        else:  # pass on anything unexpected
            warnings.warn_explicit(c.message, c.category, c.filename, c.lineno)
    if not converged:
        warnings.warn(f"LOBPCG did not reach tol={tol or 'default'} in maxiter={maxiter} iterations",
                      ConvergenceWarning, stacklevel=find_stack_level())
    w = np.asarray(w)
    o = _order(w, which)[:k]
    theta, vecs = _finish(w[o], np.asarray(V)[:, o])
    return EigResult(theta, vecs, converged, len(hist) if hist is not None else -1, 0,
                     np.zeros(len(theta)), info)


def _subtract_scaled(R: np.ndarray, V: np.ndarray, theta: np.ndarray, rows: int = 65536) -> None:
    """``R -= V * theta`` (column scaling) without an (n, b) temporary."""
    for a in range(0, R.shape[0], rows):
        R[a:a + rows] -= V[a:a + rows] * theta


def _rotate_in_place(B: np.ndarray, m: int, S: np.ndarray, rows: int = 65536) -> None:
    """``B[:, :k] = B[:, :m] @ S`` (k = S.shape[1]) one block of at most ``rows`` rows at a time
    in each row part (:func:`linxling.kernels.dense.each_row_part`), so the temporaries are
    (rows, k) per thread instead of (n, k)."""
    k = S.shape[1]

    def part(a0, a1):
        for a in range(a0, a1, rows):
            e = min(a1, a + rows)
            B[a:e, :k] = B[a:e, :m] @ S
    each_row_part(part, B.shape[0], float(B.shape[0]) * m * k)


def _column_norms(R: np.ndarray) -> np.ndarray:
    """Column norms of a (n, m) block, summed in float64: on all cores in fixed row chunks
    (:func:`linxling.kernels.blockcg.column_norms`) for a large contiguous float block (at
    K = 485,000 and 360 float32 columns 1.3 s in ``np.linalg.norm``, which also sums in float32),
    else ``np.linalg.norm`` in float64, the reference."""
    if (isinstance(R, np.ndarray) and R.ndim == 2 and R.flags.c_contiguous and R.size >= 1 << 20
            and R.dtype in (np.float32, np.float64)):
        from linxling.kernels.blockcg import column_norms
        return column_norms(R)
    return np.linalg.norm(np.asarray(R, dtype=np.float64), axis=0)


def _eig_subspace(op, k, tol, maxiter, v0, which, rng, block_size, callback, show_progress,
                  max_basis, start, basis_dtype=None, expand="wanted", track_applied=0) -> EigResult:
    n = op.shape[0]
    dt = op.dtype if basis_dtype is None else np.dtype(basis_dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"basis_dtype must be float32 or float64, got {dt}")
    eps = float(np.finfo(dt).eps)
    tol_eff = tol if tol > 0 else math.sqrt(eps)
    b = block_size if block_size is not None else k + max(10, math.ceil(0.2 * k))
    b = int(min(max(int(b), k), n))
    mb = int(min(n, 3 * b) if max_basis is None else min(int(max_basis), n))
    if mb <= b and mb < n:
        raise ValueError(f"max_basis={mb} must exceed the block size {b}")
    maxiter = 200 if maxiter is None else int(maxiter)
    restart_size = math.ceil(1.5 * b)   # thick restart keeps 1.5 b Ritz vectors (measured best of b/1.5b/2b)

    # random columns only where v0 does not fill the block (at K = 485,000 and b = 360 a
    # discarded draw cost 3.8 s)
    v0 = None if v0 is None else v0.reshape(n, -1)[:, :b]
    n0 = 0 if v0 is None else v0.shape[1]
    Y = np.empty((n, b), dtype=dt)
    if n0:
        Y[:, :n0] = v0
    if n0 < b:
        Y[:, n0:] = rng.standard_normal((n, b - n0), dtype=dt)
    Qnew = orthonormalize(Y, drop=1e4 * eps).astype(dt, copy=False)
    # the basis Q[:, :m] and its image W[:, :m] = A Q: the first block itself until the basis
    # grows past it, then (n, mb) buffers (a solve that converges on its first block, as Cr5's at
    # K = 485,000, never makes them: 2 x 1.9 GB there, and 6.8 s of copies into fresh pages)
    Qbuf: np.ndarray | None = None
    Wbuf: np.ndarray | None = None
    Qm = Wm = np.zeros((n, 0), dtype=dt)
    H = np.zeros((mb, mb), dtype=np.float64)
    m = 0
    theta = np.zeros(0)
    res_k = np.full(k, np.inf)
    converged = False
    n_restarts = 0
    history = []
    it = 0
    V = np.zeros((n, 0), dtype=dt)
    # T: the basis in terms of every column the operator was applied to, Q[:, :m] = [B_1 .. B_j] T
    # (B_i the applied blocks, in order): the identity until a thick restart rotates the basis
    T: np.ndarray | None = np.zeros((0, 0)) if track_applied > 0 else None
    T_of_V: np.ndarray | None = None
    applied = 0
    # true progress: the wanted Ritz pairs that meet the tolerance, out of k (not the maxiter cap)
    bar = progress(total=k, show=show_progress, desc="eigsh(subspace) converged pairs", unit="pair")
    try:
        for it in range(1, maxiter + 1):
            nb = Qnew.shape[1]
            Wnew = np.asarray(op.matmat(Qnew), dtype=dt)     # the one block application
            if m:
                C = gram_tn(Qm, Wnew)
                H[:m, m:m + nb] = C
                H[m:m + nb, :m] = C.T
            Hnn = gram_tn(Qnew, Wnew)
            H[m:m + nb, m:m + nb] = (Hnn + Hnn.T) / 2
            if m == 0:
                Qm, Wm = Qnew, Wnew                 # the first block is the basis
            else:
                assert Qbuf is not None and Wbuf is not None     # made before the basis grew
                Qbuf[:, m:m + nb] = Qnew
                Wbuf[:, m:m + nb] = Wnew
                Qm, Wm = Qbuf[:, :m + nb], Wbuf[:, :m + nb]
            if T is not None and applied + nb <= track_applied:
                T2 = np.zeros((applied + nb, m + nb))
                T2[:applied, :m] = T
                T2[applied:, m:] = np.eye(nb)
                T = T2
            else:
                T = None                        # beyond track_applied columns: stop tracking
            applied += nb
            m += nb
            # Rayleigh-Ritz on span(Q): no operator application needed since W = A Q
            w, Sfull = np.linalg.eigh(H[:m, :m])
            o = _order(w, which)
            nr = min(b, m)
            theta = w[o[:nr]]
            S = Sfull[:, o[:nr]].astype(dt)
            V = matmul_rows(Qm, S)
            T_of_V = None if T is None else T @ Sfull[:, o[:min(k, nr)]]    # V[:, :k] = [B_1..B_j] T_of_V
            Rr = matmul_rows(Wm, S)              # A V, turned into the residuals in place
            _subtract_scaled(Rr, V, theta.astype(dt))
            res = _column_norms(Rr)
            kk = min(k, nr)
            res_k = res[:kk]
            scale = float(np.max(np.abs(theta))) if theta.size else 0.0
            # ARPACK's criterion, per Ritz pair: ||A v_i - theta_i v_i|| <= tol * |theta_i|
            # (floored at eps * max|theta| so that zero eigenvalues can converge)
            thr = tol_eff * np.maximum(np.abs(theta), eps * scale)
            rel = res / np.where(thr > 0, thr / tol_eff, 1.0)
            history.append(float(np.max(rel[:kk])) if scale > 0 else 0.0)
            done = res <= thr
            if callback is not None:
                oc = np.argsort(-theta[:kk], kind="stable")
                callback(it, theta[:kk][oc].astype(dt), res_k[oc])
            bar.n = int(np.count_nonzero(done[:kk]))
            bar.set_postfix(it=it, rel_res=f"{history[-1]:.2e}", basis=m)
            if kk == k and bool(np.all(done[:k])):
                converged = True
                break
            if m >= n:     # the basis spans the whole space: Ritz pairs are exact
                converged = True
                break
            # new directions: residuals of the not-yet-converged wanted Ritz vectors (or of all
            # among the top b with expand="block")
            grow = np.flatnonzero(~done[:kk] if expand == "wanted" else ~done)
            Rexp = Rr[:, grow]
            if Qbuf is None or Wbuf is None:        # the basis outgrows its first block: copied
                Qbuf = np.empty((n, mb), dtype=dt)  # before the operator is applied again (it may
                Wbuf = np.empty((n, mb), dtype=dt)  # reuse the array it returned)
                Qbuf[:, :m] = Qm
                Wbuf[:, :m] = Wm
                Qm, Wm = Qbuf[:, :m], Wbuf[:, :m]
            if m + Rexp.shape[1] > mb:         # thick restart from the top Ritz vectors
                n_restarts += 1
                keep = max(kk, min(m, restart_size, mb - Rexp.shape[1]))
                Sk = Sfull[:, o[:keep]].astype(dt)
                _rotate_in_place(Qbuf, m, Sk)        # Q[:, :keep] = Q[:, :m] Sk, row block by row block
                _rotate_in_place(Wbuf, m, Sk)
                T = None if T is None else T @ Sfull[:, o[:keep]]
                H[:, :] = 0.0
                Qm, Wm = Qbuf[:, :keep], Wbuf[:, :keep]
                Hk = gram_tn(Qm, Wm)
                H[:keep, :keep] = (Hk + Hk.T) / 2
                m = keep
                Rexp = Rexp[:, :mb - m]
            Qnew = orthonormalize(Rexp, drop=1e4 * eps, against=Qm).astype(dt, copy=False)
            if Qnew.shape[1] == 0:   # no new direction survives: Ritz pairs are as good as they get
                break
    finally:
        bar.close()
    kk = min(k, len(theta))
    oc = np.argsort(-theta[:kk], kind="stable")
    vals = theta[:kk][oc].astype(dt)
    vecs = V[:, :kk][:, oc]
    ores = res_k[oc]
    if not converged:
        warnings.warn(f"eigsh(subspace) did not converge in maxiter={maxiter} iterations: largest "
                      f"relative Ritz residual {history[-1] if history else float('nan'):.3e} > "
                      f"tol={tol_eff:.3e}", ConvergenceWarning, stacklevel=find_stack_level())
    info = {"method": "subspace", "tol": tol_eff, "block_size": b, "max_basis": mb,
            "n_restarts": n_restarts, "rel_residual_history": np.asarray(history),
            # eigenvectors = [B_1 .. B_j] applied_coefficients, B_i the blocks given to the operator
            "applied_coefficients": None if T_of_V is None else T_of_V[:, :kk][:, oc]}
    return EigResult(vals, vecs, converged, it, int(op.n_matvec_equiv - start), ores, info)
