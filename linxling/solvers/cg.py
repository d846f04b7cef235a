"""Preconditioned conjugate gradients, single right-hand side and blocks (SpMM-based)."""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numba
import numpy as np

from linxling._backend import get_namespace
from linxling._linop import LinearOperator, as_operator
from linxling._validation import check_positive
from linxling._warnings import find_stack_level
from linxling.solvers._results import ConvergenceWarning, SolveResult

__all__ = ["cg", "block_cg", "jacobi_block_cg", "krylov_block_cg"]


def _as_operator_sq(A: Any, name: str = "A") -> LinearOperator:
    op = as_operator(A)
    if op.shape[0] != op.shape[1]:
        raise ValueError(f"{name} must be square, got shape {op.shape}")
    return op


def _preconditioner(M: Any, n: int, block: bool) -> Callable | None:
    """Function applying ``M`` to a vector (``block=False``) or an (n, m) block."""
    if M is None:
        return None
    if callable(M) and not hasattr(M, "shape"):
        return M
    op = as_operator(M)
    if op.shape != (n, n):
        raise ValueError(f"M must have shape ({n}, {n}), got {op.shape}")
    return op.matmat if block else op.matvec


def _work_dtype(op: LinearOperator, b) -> np.dtype:
    dt = np.result_type(op.dtype, b.dtype)
    return dt if dt.kind == "f" else np.dtype(np.float64)


def _check_stopping(rtol: Any, atol: Any, maxiter: Any, n: int) -> int:
    """``rtol``, ``atol`` finite and >= 0, ``maxiter`` None or an integer >= 0; returns the
    iteration limit (default ``10 n``)."""
    check_positive(rtol, "rtol", strict=False)
    check_positive(atol, "atol", strict=False)
    if maxiter is None:
        return 10 * n
    return int(check_positive(maxiter, "maxiter", strict=False, integer=True))


def _check_rhs(B: Any, name: str) -> None:
    """Real numbers only (a complex right-hand side would lose its imaginary part in silence)."""
    if B.dtype.kind not in "fiub":
        raise TypeError(f"{name} must hold real numbers, got dtype {B.dtype}")


def _check_finite_norms(norms: Any, B: Any, name: str, xp: Any) -> None:
    """Raise when ``B`` (whose column norms are ``norms``) holds NaN or inf: the iteration would
    return NaN or, for inf, stop at once as 'converged' (``||r|| <= rtol * inf``). The norms are
    computed anyway, so finite data costs nothing more."""
    if bool(xp.all(xp.isfinite(norms))):
        return
    if not bool(xp.all(xp.isfinite(B))):
        raise ValueError(f"{name} contains NaN or infinite values")
    # finite entries whose norm overflows: every residual test would pass at once (x = 0)
    raise ValueError(f"{name} is too large for {B.dtype}: its norm overflows; scale it down (the "
                     "solution scales with it) or solve in float64")


def _check_start(X0: Any, shape: tuple, name: str, dt: Any, xp: Any):
    """The starting guess as a fresh array of ``shape`` (a 1-D guess for a one-column block is
    accepted), or a ValueError naming ``name``."""
    X = xp.array(X0, dtype=dt, copy=True)
    if X.shape != shape and X.size == int(np.prod(shape)) and (X.ndim == 1 or len(shape) == 1):
        X = X.reshape(shape)
    if X.shape != shape:
        raise ValueError(f"{name} must have shape {shape} (that of the right-hand side), got {X.shape}")
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError(f"{name} contains NaN or infinite values")
    return X


def cg(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None, callback: Callable | None = None) -> SolveResult:
    """Preconditioned conjugate gradients for SPD ``A x = b``.

    Parameters
    ----------
    A : LinearOperator, scipy LinearOperator, sparse or dense matrix (n, n)
        Symmetric positive definite.
    b : array (n,)
        A 2-D ``b`` of shape (n, m) is handed to :func:`block_cg`.
    x0 : array (n,), optional
        Starting guess (default zeros).
    rtol, atol : float
        Stop when ``||r|| <= max(rtol * ||b||, atol)``.
    maxiter : int, optional
        Default ``10 * n``.
    M : operator, matrix or callable, optional
        SPD preconditioner approximating ``A^{-1}``; a callable receives a vector (n,).
    callback : callable, optional
        ``callback(xk)`` after every iteration.

    Returns
    -------
    SolveResult
        ``converged`` is a bool; ``residual_norms`` has shape (n_iter + 1,). On
        non-convergence a :class:`ConvergenceWarning` is emitted. ``info["breakdown"]`` is True
        when ``p^T A p <= 0`` was met (``A`` not SPD); the iteration then stops.
    """
    op = _as_operator_sq(A)
    xp = get_namespace(b).xp
    b = xp.asarray(b)
    if b.ndim == 2:
        return block_cg(op, b, x0, rtol=rtol, atol=atol, maxiter=maxiter, M=M, callback=callback)
    n = op.shape[0]
    if b.shape != (n,):
        raise ValueError(f"b must have shape ({n},) to match A {op.shape}, got {b.shape}")
    _check_rhs(b, "b")
    maxiter = _check_stopping(rtol, atol, maxiter, n)
    dt = _work_dtype(op, b)
    b = b.astype(dt, copy=False)
    prec = _preconditioner(M, n, block=False)
    if x0 is None:
        x = xp.zeros(n, dtype=dt)
        r = b.copy()
    else:
        x = _check_start(x0, (n,), "x0", dt, xp)
        r = b - op.matvec(x)
    with np.errstate(over="ignore"):             # an overflow is reported below, as an error
        bnorm = float(xp.linalg.norm(b))
    _check_finite_norms(xp.asarray(bnorm), b, "b", xp)
    thresh = max(rtol * bnorm, atol)
    res = [float(xp.linalg.norm(r))]
    converged = res[0] <= thresh
    breakdown = False
    it = 0
    if not converged:
        z = prec(r) if prec else r
        p = xp.array(z, dtype=dt, copy=True)
        rz = float(r @ z)
        for it in range(1, maxiter + 1):
            q = op.matvec(p)
            pq = float(p @ q)
            if not pq > 0:
                breakdown = True
                it -= 1
                break
            alpha = rz / pq
            x += alpha * p
            r -= alpha * q
            rn = float(xp.linalg.norm(r))
            res.append(rn)
            if callback is not None:
                callback(x)
            if rn <= thresh:
                converged = True
                break
            z = prec(r) if prec else r
            rz_new = float(r @ z)
            p *= rz_new / rz
            p += z
            rz = rz_new
    info = {"threshold": thresh, "breakdown": breakdown, "b_norm": bnorm}
    if not converged:
        why = "breakdown (p^T A p <= 0: A or M is not SPD)" if breakdown else f"maxiter={maxiter} reached"
        warnings.warn(f"cg did not converge: {why}; ||r|| = {res[-1]:.3e} > {thresh:.3e} after "
                      f"{it} iterations", ConvergenceWarning, stacklevel=find_stack_level())
    return SolveResult(x, bool(converged), it, np.asarray(res), info)


def _coldot(A, B, xp):
    return xp.einsum("ij,ij->j", A, B)


def _warn_unconverged(converged, breakdown, rn, bnorm, maxiter, rtol, xp, name: str = "block_cg") -> None:
    """The ConvergenceWarning of the block solvers, named ``name`` (stacklevel: the solver's caller)."""
    if bool(converged.all()):
        return
    k = int((~converged).sum())
    bad_cols = xp.flatnonzero(~converged)
    rel = rn[bad_cols] / xp.where(bnorm[bad_cols] > 0, bnorm[bad_cols], 1)
    why = ("breakdown (p^T A p <= 0) in some columns; " if bool(breakdown.any()) else "")
    warnings.warn(f"{name}: {k} of {converged.shape[0]} column(s) did not converge ({why}maxiter={maxiter}); "
                  f"largest relative residual {float(rel.max()):.3e} (rtol={rtol})",
                  ConvergenceWarning, stacklevel=find_stack_level())


def block_cg(A: Any, B: Any, X0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M: Any = None, callback: Callable | None = None) -> SolveResult:
    """Conjugate gradients on a block of right-hand sides with one SpMM per iteration.

    This is *column-wise* CG vectorised across columns, not O'Leary's block CG: every column
    has its own step sizes (``alpha_j``, ``beta_j``) and Krylov space, but all active columns
    are multiplied by ``A`` together (``A @ P[:, active]``). Columns freeze as soon as they
    converge (no further work is spent on them) and a column that breaks down
    (``p^T A p <= 0``) stops alone. This is robust (no rank deficiency of the block to
    deflate) and exactly matches :func:`cg` column by column; O'Leary's variant can need
    fewer iterations when columns share spectral content but needs rank-revealing
    deflation to stay stable.

    Parameters
    ----------
    A : LinearOperator, scipy LinearOperator, sparse or dense matrix (n, n)
        Symmetric positive definite.
    B : array (n, m) (or (n,), treated as one column)
    X0 : array (n, m), optional
    rtol, atol : float
        Column ``j`` stops when ``||r_j|| <= max(rtol * ||b_j||, atol)``.
    maxiter : int, optional
        Default ``10 * n``.
    M : operator, matrix or callable, optional
        SPD preconditioner; a callable receives an (n, m_active) block.
    callback : callable, optional
        ``callback(Xk)`` after every iteration, ``Xk`` of shape (n, m).

    Returns
    -------
    SolveResult
        ``x`` (n, m); ``converged`` bool array (m,); ``residual_norms`` (n_iter + 1, m).
        Emits a :class:`ConvergenceWarning` if some column did not converge.
    """
    op = _as_operator_sq(A)
    xp = get_namespace(B).xp
    B = xp.asarray(B)
    vec = B.ndim == 1
    if vec:
        B = B[:, None]
    n = op.shape[0]
    if B.ndim != 2 or B.shape[0] != n:
        raise ValueError(f"B must have shape ({n}, m) to match A {op.shape}, got {B.shape}")
    m = B.shape[1]
    _check_rhs(B, "B")
    maxiter = _check_stopping(rtol, atol, maxiter, n)
    dt = _work_dtype(op, B)
    B = B.astype(dt, copy=False)
    prec = _preconditioner(M, n, block=True)
    start_count = op.n_matvec_equiv
    if X0 is None:
        X = xp.zeros((n, m), dtype=dt)
        R = B.copy()
    else:
        X = _check_start(X0, (n, m), "X0", dt, xp)
        R = B - op.matmat(X)
    with np.errstate(over="ignore"):             # an overflow is reported below, as an error
        bnorm = xp.linalg.norm(B, axis=0)
    _check_finite_norms(bnorm, B, "B", xp)
    thresh = xp.maximum(rtol * bnorm, atol)
    rn = xp.linalg.norm(R, axis=0)
    hist = [rn.copy()]
    converged = rn <= thresh
    breakdown = xp.zeros(m, dtype=bool)
    active = ~converged
    P = xp.zeros_like(R)
    rz = xp.zeros(m, dtype=dt)
    if bool(active.any()):
        idx = xp.flatnonzero(active)
        Ra = R[:, idx]
        Z = prec(Ra) if prec else Ra
        P[:, idx] = Z
        rz[idx] = _coldot(Ra, Z, xp)
    it = 0
    for it in range(1, maxiter + 1):
        if not bool(active.any()):
            it -= 1
            break
        idx = xp.flatnonzero(active)
        full = idx.size == m
        Pa = P if full else P[:, idx]
        Q = op.matmat(Pa)                                    # one SpMM for all active columns
        pq = _coldot(Pa, Q, xp)
        bad = ~(pq > 0)
        safe_pq = xp.where(bad, 1, pq)
        alpha = xp.where(bad, 0, rz[idx] / safe_pq).astype(dt, copy=False)
        if full:
            X += P * alpha
            R -= Q * alpha
            rn = xp.linalg.norm(R, axis=0)
        else:
            X[:, idx] += Pa * alpha
            R[:, idx] -= Q * alpha
            rn[idx] = xp.linalg.norm(R[:, idx], axis=0)
        hist.append(rn.copy())
        if callback is not None:
            callback(X[:, 0] if vec else X)
        if bool(bad.any()):
            breakdown[idx[bad]] = True
            active[idx[bad]] = False
        done = rn[idx] <= thresh[idx]
        converged[idx[done]] = True
        active[idx[done]] = False
        idx = xp.flatnonzero(active)
        if idx.size == 0:
            break
        Ra = R[:, idx]
        Z = prec(Ra) if prec else Ra
        rz_new = _coldot(Ra, Z, xp)
        beta = (rz_new / rz[idx]).astype(dt, copy=False)
        P[:, idx] = Z + P[:, idx] * beta
        rz[idx] = rz_new
    else:
        it = maxiter
    hist_arr = np.asarray([np.asarray(h) for h in hist])
    info = {"threshold": thresh, "breakdown": breakdown, "b_norm": bnorm,
            "n_matvec": int(op.n_matvec_equiv - start_count)}
    _warn_unconverged(converged, breakdown, rn, bnorm, maxiter, rtol, xp)
    x = X[:, 0] if vec else X
    conv = bool(converged[0]) if vec else converged
    hist_out = hist_arr[:, 0] if vec else hist_arr
    return SolveResult(x, conv, it, hist_out, info)


def _head(buf: np.ndarray, n: int, w: int) -> np.ndarray:
    """The first ``n · w`` elements of a flat buffer as a C-contiguous (n, w) block."""
    return buf[:n * w].reshape(n, w)


def _fused_gram_product(X, XT, alpha, P: np.ndarray, T_buf: np.ndarray, q_buf: np.ndarray,
                        spare: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Q = Xᵀ(X P) + alpha P`` for the block solvers' fused Gram (``XT`` the CSR of ``Xᵀ``),
    through the intermediate ``T = X P`` in ``T_buf``. Returns ``(Q, q_buf, spare)``: ``Q`` a
    C-contiguous (n, w) view of the returned ``q_buf``; the caller keeps the two buffers as
    returned (they may have traded places). ``spare`` is free on entry and on return.

    The products run on blocks whose rows fill whole cache lines (:func:`linxling.kernels.spmm.
    padded_width`; the buffers start on a line, :func:`linxling.kernels.spmm.aligned_empty`):
    when ``w`` is not a whole number of lines, ``P`` is copied into the first ``w`` columns of
    ``spare`` with zeros after them, ``T`` and the product take the padded width in ``T_buf`` and
    ``q_buf``, and the product's first ``w`` columns are copied into ``spare``, which becomes
    ``q_buf``. Each column of a row kernel's product is summed alone, in the order of its row's
    nonzeros, so ``Q`` is bitwise the unpadded product. Measured on Cr5's inner solves at K =
    485,000 (165 columns, then fewer as they converge): see benchmarks/README.md, "Rows on whole
    cache lines"."""
    from linxling.kernels.blockcg import copy_columns
    from linxling.kernels.spmm import ROW_ALIGN, on_lines, padded_width, tiled_rows_matmat

    n, w = P.shape
    wp = padded_width(w, P.dtype)
    copy_in = not on_lines(P) and (wp * P.itemsize) % ROW_ALIGN == 0
    Pp = P
    if copy_in:
        Pp = _head(spare, n, wp)
        copy_columns(P, Pp)
    T = _head(T_buf, X.shape[0], wp)
    Qp = _head(q_buf, n, wp)
    tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, Pp, T)
    tiled_rows_matmat(XT.indptr[:-1], XT.indptr[1:], XT.indices, XT.data, T, Qp, alpha=alpha, P=Pp)
    if wp == w:
        return Qp, q_buf, spare
    Q = _head(spare, n, w)
    copy_columns(Qp, Q)
    return Q, spare, q_buf


def _writes_into(op: Any) -> bool:
    """Whether ``op`` writes its products into a given block (:func:`_apply`)."""
    return bool(getattr(op, "writes_into", False))


def _apply(op: Any, P: np.ndarray, buf: np.ndarray | None, dt: Any) -> np.ndarray:
    """``op P`` for the block solvers: into the head of ``buf`` when the operator writes its
    product into a given block (``matmat_into``, e.g. :class:`linxling.operators.gram.SourceGram`
    over a corpus streamed from disk: the same additions, no fresh (n, w) block per iteration),
    else a new array."""
    if buf is None or not _writes_into(op):
        return np.ascontiguousarray(op.matmat(P), dtype=dt)
    n, w = P.shape
    Q = op.matmat_into(P, _head(buf, n, w))
    op.n_matmat += 1
    op.n_matvec_equiv += w
    return Q


def jacobi_block_cg(A: Any, B: Any, d: Any, X0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
                    maxiter: int | None = None, gram: tuple | None = None) -> SolveResult:
    """:func:`block_cg` with the Jacobi preconditioner ``diag(d)⁻¹``, in fused numba kernels.

    The same column-wise CG as ``block_cg(A, B, X0, M=lambda R: R / d[:, None])`` (each column
    its own step sizes, columns frozen as they converge or break down), but every iteration is
    three row-parallel passes over the block instead of a dozen NumPy expressions with
    fancy-indexed copies (:mod:`linxling.kernels.blockcg`); column sums are accumulated in
    float64. Measured on Cr5's float32 inner solves of Bible verses (p_l = 5.6-11.9k, 100-120
    columns): see ``benchmarks/README.md``. NumPy arrays only; anything else (CuPy) goes to
    :func:`block_cg`.

    Parameters
    ----------
    A : LinearOperator (n, n)
        Symmetric positive definite.
    B : ndarray (n, m)
    d : ndarray (n,)
        The preconditioner's diagonal (``diag(A)`` for Jacobi), positive.
    X0 : ndarray (n, m), optional
    rtol, atol, maxiter
        As in :func:`block_cg`.
    gram : tuple (X, XT, alpha), optional
        When ``A = Xᵀ X + alpha I`` with ``X`` (k, n) in CSR and ``XT`` an explicit CSR copy of
        ``Xᵀ``: the product is fused with the column dots ``pᵀAp`` (``A`` is then only counted,
        not applied).

    Returns
    -------
    SolveResult
        As :func:`block_cg` (``x`` (n, m), per-column ``converged``, residual history).
    """
    from linxling.kernels import blockcg as kern
    from linxling.kernels.spmm import tiled_rows_matmat

    op = _as_operator_sq(A)
    B = np.asarray(B)
    d = np.asarray(d)
    n = op.shape[0]
    if B.ndim != 2 or B.shape[0] != n:
        raise ValueError(f"B must have shape ({n}, m) to match A {op.shape}, got {B.shape}")
    if d.shape != (n,):
        raise ValueError(f"d must have shape ({n},), got {d.shape}")
    if not bool(np.all(d > 0)):                    # as krylov_block_cg (a zero d divided by zero)
        raise ValueError("d must be positive (the diagonal of an SPD preconditioner)")
    m = B.shape[1]
    _check_rhs(B, "B")
    dt = _work_dtype(op, B)
    if dt not in (np.float32, np.float64):
        return block_cg(op, B, X0, rtol=rtol, atol=atol, maxiter=maxiter, M=lambda R: R / d[:, None])
    maxiter = _check_stopping(rtol, atol, maxiter, n)
    dinv = (1.0 / d.astype(np.float64)).astype(dt)
    B = np.ascontiguousarray(B, dtype=dt)
    start_count = op.n_matvec_equiv
    chunk = kern.row_chunk(n)
    n_chunks = -(-n // chunk) if n else 0
    part_a = np.empty((n_chunks, m))
    part_b = np.empty((n_chunks, m))
    if X0 is None:
        X = np.zeros((n, m), dtype=dt)
        R = B.copy()
    else:
        X = _check_start(X0, (n, m), "X0", dt, np)
        R = np.ascontiguousarray(B - op.matmat(X), dtype=dt)

    def dots(A, B):                                 # column dots in float64, no float64 copies
        kern.column_dots(A, B, part_a[:, :A.shape[1]], chunk)
        return part_a[:, :A.shape[1]].sum(axis=0)

    bnorm = np.sqrt(dots(B, B))
    _check_finite_norms(bnorm, B, "B", np)
    thresh = np.maximum(rtol * bnorm, atol)
    rn = np.sqrt(dots(R, R))
    hist = [rn.astype(dt)]
    converged = rn <= thresh
    breakdown = np.zeros(m, dtype=bool)
    cols = np.flatnonzero(~converged)              # original column of each packed column
    rz = np.zeros(m)
    if cols.size:
        R = R if cols.size == m else np.ascontiguousarray(R[:, cols])
        P = R * dinv[:, None]
        rz = dots(R, P)
    if gram is not None:
        Xg, XTg, alpha_g = gram
        T_buf = np.empty(Xg.shape[0] * max(cols.size, 1), dtype=dt)
        alpha_g = dt.type(alpha_g)
    # the product's block, reused: for the fused Gram, or an operator that writes into it (_apply)
    Q_buf = np.empty(n * max(cols.size, 1), dtype=dt) if gram is not None or _writes_into(op) else None
    it = 0
    for it in range(1, maxiter + 1):
        ma = cols.size
        if ma == 0:
            it -= 1
            break
        if gram is not None:
            T = _head(T_buf, Xg.shape[0], ma)
            Q = _head(Q_buf, n, ma)
            tiled_rows_matmat(Xg.indptr[:-1], Xg.indptr[1:], Xg.indices, Xg.data, P, T)
            tiled_rows_matmat(XTg.indptr[:-1], XTg.indptr[1:], XTg.indices, XTg.data, T, Q, alpha=alpha_g,
                              P=P, part=part_a[:, :ma], chunk=chunk)
            op.n_matmat += 1
            op.n_matvec_equiv += ma
        else:
            Q = _apply(op, P, Q_buf, dt)
            kern.column_dots(P, Q, part_a[:, :ma], chunk)
        pq = part_a[:, :ma].sum(axis=0)
        bad = ~(pq > 0)
        alpha = np.where(bad, 0.0, rz / np.where(bad, 1.0, pq))
        kern.cg_update(X, cols, R, P, Q, alpha.astype(dt), dinv, part_a[:, :ma], part_b[:, :ma], chunk)
        rr = part_a[:, :ma].sum(axis=0)
        rz_new = part_b[:, :ma].sum(axis=0)
        rn[cols] = np.sqrt(rr)
        hist.append(rn.astype(dt))
        if bool(bad.any()):
            breakdown[cols[bad]] = True
        done = rn[cols] <= thresh[cols]
        converged[cols[done]] = True
        keep = np.flatnonzero(~(done | bad))
        if keep.size == 0:
            cols = cols[keep]
            break
        beta = (rz_new / np.where(rz > 0, rz, 1.0)).astype(dt)
        if keep.size == ma:
            kern.cg_direction(R, P, dinv, beta)
        else:
            R_new = np.empty((n, keep.size), dtype=dt)
            P_new = np.empty((n, keep.size), dtype=dt)
            kern.cg_direction_pack(R, P, dinv, beta, keep, R_new, P_new)
            R, P = R_new, P_new
        cols = cols[keep]
        rz = rz_new[keep]
    else:
        it = maxiter
    info = {"threshold": thresh, "breakdown": breakdown, "b_norm": bnorm,
            "n_matvec": int(op.n_matvec_equiv - start_count), "fused": gram is not None}
    _warn_unconverged(converged, breakdown, rn, bnorm, maxiter, rtol, np, "jacobi_block_cg")
    return SolveResult(X, converged, it, np.asarray(hist), info)


def _pack_columns(A: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``A[:, keep]`` (``keep`` increasing) written over the start of ``A``'s own memory, as a
    C-contiguous (n, len(keep)) view of it. Row ``i``'s new place, from ``i · len(keep)``, ends
    before row ``i + 1``'s old one starts, so moving the rows in order (each through a small copy,
    as its new place may overlap its old one) never overwrites a row still to be read. ``A`` is
    C-contiguous and its old content is lost."""
    n, w = A.shape
    k = keep.size
    flat = A.reshape(-1)
    if k == w:
        return A
    _pack_rows(flat, n, w, np.ascontiguousarray(keep, dtype=np.int64))
    return flat[:n * k].reshape(n, k)


def _pack_rows_py(flat, n, w, keep):
    """The loop of :func:`_pack_columns` on a flat buffer (compiled below as ``_pack_rows``)."""
    k = keep.size
    row = np.empty(k, dtype=flat.dtype)
    for i in range(n):
        for j in range(k):
            row[j] = flat[i * w + keep[j]]
        for j in range(k):
            flat[i * k + j] = row[j]


_pack_rows = numba.njit(cache=True, nogil=True)(_pack_rows_py)


def krylov_block_cg(A: Any, B: Any, d: Any, X0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0,
                    maxiter: int | None = None, gram: tuple | None = None) -> SolveResult:
    """O'Leary's block CG: all columns of ``B`` share one Krylov space, Jacobi-preconditioned.

    :func:`jacobi_block_cg` runs one CG per column (its own step sizes and Krylov space); here
    the iterate of every column minimises its error in the ``A``-norm over the space spanned by
    *all* columns' search directions, so components that many right-hand sides share (the
    frequent words of a corpus) are resolved once for all of them. Measured on Cr5's first inner
    solve at K = 485,000 (485,000 documents x 200,000 features, 82.4M nonzeros, 128 float32
    right-hand sides, rtol 1e-2): 11 iterations and 953 column products against 16 and 1,328
    column by column, 73.3 against 79.2 s. The price is dense work on the active block each
    iteration (six (n, m) x (m, m) products, about ``12 n m²`` flops), which only pays when the
    sparse product costs more: see :class:`linxling.operators.GramBlockInverse` (``cg_krylov``).
    The blocks it makes each iteration live in buffers made once (the whole Cr5 fit at that size
    298.6 -> 273.4 s on a 2-core Intel Xeon VM, means of two interleaved runs, bitwise the same
    eigenvalues; benchmarks/README.md, "The block CG's blocks in buffers made once").

    Each iteration applies the truncated pseudo-inverse of ``G = PᵀAP`` (eigen-directions whose
    eigenvalue is below ``max(m, √n) · eps`` of the largest are dropped, as in Dubrulle's
    breakdown-free variant: a rank-deficient block shrinks instead of breaking down). Every
    column's error ``A``-norm then never increases. A column that meets
    ``max(rtol · ||b_j||, atol)`` leaves the block (its iterate is final; the next directions come
    from the other residuals only, still ``A``-conjugate to all earlier ones), so, as column by
    column, late iterations multiply only the slow columns. The plain references are a dense
    solve and :func:`jacobi_block_cg` (tested).

    Parameters
    ----------
    A : LinearOperator (n, n)
        Symmetric positive definite.
    B : ndarray (n, m)
    d : ndarray (n,)
        The preconditioner's diagonal (``diag(A)`` for Jacobi), positive.
    X0 : ndarray (n, m), optional
    rtol, atol, maxiter
        As in :func:`block_cg` (``maxiter`` default ``10 * n``).
    gram : tuple (X, XT, alpha), optional
        When ``A = Xᵀ X + alpha I`` with ``X`` (k, n) in CSR and ``XT`` an explicit CSR copy of
        ``Xᵀ``: the product runs on the tiled kernels directly (``A`` is then only counted).

    Returns
    -------
    SolveResult
        ``x`` (n, m), per-column ``converged``, residual norms per iteration (n_iter + 1, m);
        ``info["width"]`` the columns multiplied by ``A`` in each iteration (the active ones) and
        ``info["rank"]`` the search directions kept of them.
    """
    from linxling.kernels import blockcg as kern
    from linxling.kernels.dense import gemm_acc, gram_tn
    from linxling.kernels.spmm import aligned_empty, padded_width

    op = _as_operator_sq(A)
    B = np.asarray(B)
    d = np.asarray(d)
    n = op.shape[0]
    if B.ndim != 2 or B.shape[0] != n:
        raise ValueError(f"B must have shape ({n}, m) to match A {op.shape}, got {B.shape}")
    if d.shape != (n,):
        raise ValueError(f"d must have shape ({n},), got {d.shape}")
    if not bool(np.all(d > 0)):
        raise ValueError("d must be positive (the diagonal of an SPD preconditioner)")
    m = B.shape[1]
    _check_rhs(B, "B")
    dt = _work_dtype(op, B)
    if dt not in (np.float32, np.float64):
        raise TypeError(f"krylov_block_cg works in float32 or float64, got {dt}")
    maxiter = _check_stopping(rtol, atol, maxiter, n)
    dinv = (1.0 / d.astype(np.float64)).astype(dt)[:, None]
    B = np.ascontiguousarray(B, dtype=dt)
    start_count = op.n_matvec_equiv
    chunk = kern.row_chunk(n)
    part = np.empty((-(-n // chunk) if n else 0, m))

    def norms(R):                                   # column norms, summed in float64 in fixed chunks
        return kern.column_norms(R, part)

    if X0 is None:
        X = np.zeros((n, m), dtype=dt)
        R = B.copy()
    else:
        X = _check_start(X0, (n, m), "X0", dt, np)
        R = np.ascontiguousarray(B - op.matmat(X), dtype=dt)
    bnorm = norms(B)
    _check_finite_norms(bnorm, B, "B", np)
    thresh = np.maximum(rtol * bnorm, atol)
    rn = norms(R)
    hist = [rn.astype(dt)]
    converged = rn <= thresh
    breakdown = np.zeros(m, dtype=bool)
    ranks: list[int] = []
    widths: list[int] = []
    floor = max(m, np.sqrt(n)) * float(np.finfo(dt).eps)
    # the fused product's blocks take rows of whole cache lines (_fused_gram_product): the
    # buffers hold the widest padded block and start on a line
    mp = padded_width(m, dt) if gram is not None else m
    if gram is not None:
        Xg, XTg, alpha_g = gram
        T_buf = aligned_empty(Xg.shape[0] * max(mp, 1), dt)
        alpha_g = dt.type(alpha_g)
    # the active columns (not yet converged), packed: their iterates and residuals
    cols = np.flatnonzero(~converged)
    Xa = X if cols.size == m else np.ascontiguousarray(X[:, cols])
    Ra = R if cols.size == m else np.ascontiguousarray(R[:, cols])
    # the (n, m) blocks made each iteration (the directions, two in turn, and A times them) live
    # in buffers made once, used as C-contiguous (n, w) views as the block narrows: no fresh
    # block per iteration (a fresh block's first touch costs a page fault per page, and on a
    # virtual machine that returns freed memory to its host, as much again to get it back)
    bufs = [aligned_empty(n * mp, dt), aligned_empty(n * mp, dt)]
    q_buf = aligned_empty(n * mp, dt) if gram is not None or _writes_into(op) else None
    P = np.multiply(Ra, dinv, out=_head(bufs[0], n, Ra.shape[1]))
    in_p = 0                                        # the buffer P is in
    it = 0
    for it in range(1, maxiter + 1):
        if cols.size == 0:
            it -= 1
            break
        w = P.shape[1]
        widths.append(w)
        if gram is not None:
            # the other direction buffer is free here: it held the last iteration's directions
            Q, q_buf, bufs[1 - in_p] = _fused_gram_product(Xg, XTg, alpha_g, P, T_buf, q_buf, bufs[1 - in_p])
            op.n_matmat += 1
            op.n_matvec_equiv += w
        else:
            Q = _apply(op, P, q_buf, dt)
        G = gram_tn(P, Q)
        lam, U = np.linalg.eigh(0.5 * (G + G.T))
        top = float(lam[-1]) if lam.size else 0.0
        keep = lam > floor * top
        if top <= 0 or not bool(keep.any()):         # no direction left (not SPD)
            ranks.append(0)
            breakdown[cols] = True
            hist.append(rn.astype(dt))
            break
        # the truncated G⁺ = U_k Λ_k⁻¹ U_kᵀ: the A-orthonormal directions P U_k Λ_k^-1/2 are never
        # formed (six (n, m) x (m, m) products per iteration instead of eight). The Galerkin step
        # over this block is the step over every direction so far: Ra is already orthogonal to
        # the earlier blocks
        Gp = (U[:, keep] / lam[keep]) @ U[:, keep].T
        ranks.append(int(keep.sum()))
        a = (Gp @ gram_tn(P, Ra)).astype(dt)
        gemm_acc(Xa, P, a, 1.0)
        gemm_acc(Ra, Q, a, -1.0)
        rn[cols] = norms(Ra)
        hist.append(rn.astype(dt))
        done = rn[cols] <= thresh[cols]
        if bool(done.any()):                        # converged columns leave the block: the
            converged[cols[done]] = True            # next directions come from the others only
            if Xa is not X:
                X[:, cols[done]] = Xa[:, done]
            stay = np.flatnonzero(~done)
            if Xa is X:
                Xa = np.ascontiguousarray(X[:, cols[stay]])
            else:                                   # packed in place (Xa and Ra are the solver's own)
                Xa = _pack_columns(Xa, stay)
            Ra = _pack_columns(Ra, stay)
            cols = cols[stay]
            if cols.size == 0:
                break
        # next directions: A-conjugate to this block (and, in exact arithmetic, to all earlier ones)
        in_p = 1 - in_p
        Z = np.multiply(Ra, dinv, out=_head(bufs[in_p], n, Ra.shape[1]))
        gemm_acc(Z, P, (Gp @ gram_tn(Q, Z)).astype(dt), -1.0)
        P = Z
        del Q
    else:
        it = maxiter
    if Xa is not X and cols.size:
        X[:, cols] = Xa
    info = {"threshold": thresh, "breakdown": breakdown, "b_norm": bnorm, "rank": ranks, "width": widths,
            "n_matvec": int(op.n_matvec_equiv - start_count), "fused": gram is not None, "krylov": "block"}
    _warn_unconverged(converged, breakdown, rn, bnorm, maxiter, rtol, np, "krylov_block_cg")
    return SolveResult(X, converged, it, np.asarray(hist), info)
