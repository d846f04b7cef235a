"""Matmat-first linear operators (PyLops/SciPy-like) and the adjoint test.

A :class:`LinearOperator` represents a real matrix ``A`` of shape ``(n_rows, n_cols)`` that is
only ever *applied*. Subclasses implement :meth:`LinearOperator._matmat` (``A @ X`` for a block
``X`` of shape ``(n_cols, m)``) and :meth:`LinearOperator._rmatmat` (``A.T @ Y`` for ``Y`` of
shape ``(n_rows, m)``); single vectors go through the same code as a one-column block, so block
solvers and block eigensolvers run on SpMM and never on a Python loop over columns.

Operators combine lazily: ``A + B``, ``c * A``, ``A @ B`` and ``A.T`` build new operators that
apply their parts on demand. Every operator counts how often it was applied (``n_matmat``) and
how many columns it was applied to (``n_matvec_equiv``), in both directions.

Only real operators are supported (``.H`` is the same as ``.T``).
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Number
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from linxling._backend import get_namespace

__all__ = ["LinearOperator", "MatrixOperator", "IdentityOperator", "CallableOperator",
           "as_operator", "dottest", "DotTestResult"]


class LinearOperator:
    """Base class of all linxling operators.

    Parameters
    ----------
    shape : tuple of int
        ``(n_rows, n_cols)``.
    dtype : numpy dtype
        dtype of the results for inputs of the same dtype (float32 or float64).
    symmetric : bool, default False
        Set when ``A == A.T``; then ``.T`` returns the operator itself and the adjoint
        application reuses :meth:`_matmat`.

    Attributes
    ----------
    shape : tuple of int
    dtype : numpy.dtype
    symmetric : bool
    n_matmat : int
        Number of applications (forward or adjoint, one per ``matmat``/``matvec`` call).
    n_matvec_equiv : int
        Number of columns applied in total (a ``matmat`` on ``m`` columns counts ``m``).

    Notes
    -----
    Subclasses implement ``_matmat(X)`` for ``X`` of shape ``(n_cols, m)`` returning
    ``(n_rows, m)``, and ``_rmatmat(Y)`` for ``Y`` of shape ``(n_rows, m)`` returning
    ``(n_cols, m)``. Inputs reaching ``_matmat`` are always 2-D arrays of the right height.
    """

    # make ``ndarray @ op`` defer to ``op.__rmatmul__`` instead of building object arrays
    __array_ufunc__ = None

    def __init__(self, shape: tuple[int, int], dtype: Any, *, symmetric: bool = False) -> None:
        if len(shape) != 2:
            raise ValueError(f"shape must be (n_rows, n_cols), got {shape!r}")
        self.shape = (int(shape[0]), int(shape[1]))
        if min(self.shape) < 0:
            raise ValueError(f"shape must be non-negative, got {tuple(shape)!r}")
        self.dtype = np.dtype(dtype)
        self.symmetric = bool(symmetric)
        if self.symmetric and self.shape[0] != self.shape[1]:
            raise ValueError(f"a symmetric operator must be square, got shape {self.shape}")
        self.n_matmat = 0
        self.n_matvec_equiv = 0

    # ------------------------------------------------------------------ to implement
    def _matmat(self, X):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not implement _matmat")

    def _rmatmat(self, Y):
        if self.symmetric:
            return self._matmat(Y)
        raise NotImplementedError(f"{type(self).__name__} does not implement _rmatmat (its adjoint)")

    # ------------------------------------------------------------------ public application
    def _check_block(self, X, n: int, what: str):
        if sp.issparse(X):
            X = X.toarray()
        xp = get_namespace(X).xp
        X = xp.asarray(X)
        if X.dtype.kind not in "fiub":
            raise TypeError(f"{what} takes real numbers (operators are real), got dtype {X.dtype}")
        if X.ndim != 2:
            raise ValueError(f"{what} expects a 2-D block (n, m), got {X.ndim}-D with shape {X.shape}")
        if X.shape[0] != n:
            raise ValueError(f"{what}: operator of shape {self.shape} cannot take a block with "
                             f"{X.shape[0]} rows (expected {n})")
        return X

    def matmat(self, X):
        """Apply to a block: ``A @ X``.

        Parameters
        ----------
        X : array (n_cols, m)

        Returns
        -------
        Y : array (n_rows, m)
        """
        X = self._check_block(X, self.shape[1], f"{type(self).__name__}.matmat")
        Y = self._matmat(X)
        self.n_matmat += 1
        self.n_matvec_equiv += X.shape[1]
        return Y

    def rmatmat(self, Y):
        """Apply the adjoint to a block: ``A.T @ Y``.

        Parameters
        ----------
        Y : array (n_rows, m)

        Returns
        -------
        X : array (n_cols, m)
        """
        Y = self._check_block(Y, self.shape[0], f"{type(self).__name__}.rmatmat")
        X = self._rmatmat(Y)
        self.n_matmat += 1
        self.n_matvec_equiv += Y.shape[1]
        return X

    def _vec(self, x, n: int, fn: Callable, what: str):
        if sp.issparse(x):
            x = x.toarray()
        xp = get_namespace(x).xp
        x = xp.asarray(x)
        if x.ndim == 1:
            if x.shape[0] != n:
                raise ValueError(f"{what}: operator of shape {self.shape} cannot take a vector of "
                                 f"length {x.shape[0]} (expected {n})")
            return fn(x[:, None])[:, 0]
        if x.ndim == 2 and x.shape[1] == 1:
            return fn(x)
        raise ValueError(f"{what} expects a vector of shape ({n},) or ({n}, 1), got {x.shape}")

    def matvec(self, x):
        """``A @ x`` for ``x`` of shape ``(n_cols,)`` (or ``(n_cols, 1)``)."""
        return self._vec(x, self.shape[1], self.matmat, f"{type(self).__name__}.matvec")

    def rmatvec(self, y):
        """``A.T @ y`` for ``y`` of shape ``(n_rows,)`` (or ``(n_rows, 1)``)."""
        return self._vec(y, self.shape[0], self.rmatmat, f"{type(self).__name__}.rmatvec")

    def reset_counters(self) -> None:
        """Set ``n_matmat`` and ``n_matvec_equiv`` back to zero."""
        self.n_matmat = 0
        self.n_matvec_equiv = 0

    # ------------------------------------------------------------------ algebra
    @property
    def T(self) -> "LinearOperator":
        """The adjoint (transpose) operator, built lazily; the operator itself when symmetric."""
        if self.symmetric:
            return self
        return _AdjointOperator(self)

    @property
    def H(self) -> "LinearOperator":
        """Same as :attr:`T` (operators are real)."""
        return self.T

    def __matmul__(self, other):
        if isinstance(other, (LinearOperator, spla.LinearOperator)) or sp.issparse(other):
            return _ProductOperator(self, as_operator(other))
        xp = get_namespace(other).xp
        arr = xp.asarray(other)
        if arr.ndim == 1:
            return self.matvec(arr)
        if arr.ndim == 2:
            return self.matmat(arr)
        raise ValueError(f"{type(self).__name__} @ x takes a vector or a 2-D block, got {arr.ndim}-D "
                         f"with shape {arr.shape}")

    def __rmatmul__(self, other):
        if isinstance(other, spla.LinearOperator) or sp.issparse(other):
            return _ProductOperator(as_operator(other), self)
        xp = get_namespace(other).xp
        arr = xp.asarray(other)
        if arr.ndim == 1:
            return self.rmatvec(arr)
        if arr.ndim == 2:
            return self.rmatmat(arr.T).T
        raise ValueError(f"x @ {type(self).__name__} takes a vector or a 2-D block, got {arr.ndim}-D "
                         f"with shape {arr.shape}")

    def dot(self, other):
        """Same as ``self @ other``."""
        return self.__matmul__(other)

    def __add__(self, other):
        if isinstance(other, (LinearOperator, spla.LinearOperator)) or sp.issparse(other) \
                or (isinstance(other, np.ndarray) and other.ndim == 2):
            return _SumOperator(self, as_operator(other))
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, (spla.LinearOperator, np.ndarray)) or sp.issparse(other):
            return _SumOperator(as_operator(other), self)
        return NotImplemented

    def __sub__(self, other):
        if isinstance(other, (LinearOperator, spla.LinearOperator)) or sp.issparse(other) \
                or (isinstance(other, np.ndarray) and other.ndim == 2):
            return _SumOperator(self, _ScaledOperator(as_operator(other), -1.0))
        return NotImplemented

    def __rsub__(self, other):
        if isinstance(other, (spla.LinearOperator, np.ndarray)) or sp.issparse(other):
            return _SumOperator(as_operator(other), _ScaledOperator(self, -1.0))
        return NotImplemented

    def __mul__(self, other):
        if isinstance(other, Number) and not isinstance(other, bool) and np.isrealobj(other):
            return _ScaledOperator(self, other)
        return NotImplemented

    __rmul__ = __mul__

    def __neg__(self):
        return _ScaledOperator(self, -1.0)

    def __truediv__(self, other):
        if isinstance(other, Number) and not isinstance(other, bool):
            return _ScaledOperator(self, 1.0 / other)
        return NotImplemented

    # ------------------------------------------------------------------ conversions
    def to_dense(self):
        """The dense matrix, by applying the operator to the identity (small sizes only).

        Returns
        -------
        A : ndarray (n_rows, n_cols)
        """
        return self.matmat(np.eye(self.shape[1], dtype=self.dtype))

    def todense(self):
        """Alias of :meth:`to_dense`."""
        return self.to_dense()

    def aslinearoperator(self) -> spla.LinearOperator:
        """A :class:`scipy.sparse.linalg.LinearOperator` view with matvec/matmat/rmatvec/rmatmat
        wired to this operator (applications are counted here)."""
        return spla.LinearOperator(self.shape, matvec=self.matvec, rmatvec=self.rmatvec,
                                   matmat=self.matmat, rmatmat=self.rmatmat, dtype=self.dtype)

    def diagonal(self):
        """Diagonal of a square operator (default: from :meth:`to_dense`, O(n) applications;
        subclasses with structure override it)."""
        if self.shape[0] != self.shape[1]:
            raise ValueError(f"diagonal needs a square operator, got shape {self.shape}")
        return np.diag(self.to_dense()).copy()

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} shape={self.shape} dtype={self.dtype}"
                f"{' symmetric' if self.symmetric else ''}>")


# ---------------------------------------------------------------------- lazy combinations
class _AdjointOperator(LinearOperator):
    def __init__(self, op: LinearOperator) -> None:
        super().__init__((op.shape[1], op.shape[0]), op.dtype)
        self.op = op

    def _matmat(self, X):
        return self.op.rmatmat(X)

    def _rmatmat(self, Y):
        return self.op.matmat(Y)

    @property
    def T(self):
        return self.op


class _SumOperator(LinearOperator):
    def __init__(self, a: LinearOperator, b: LinearOperator) -> None:
        if a.shape != b.shape:
            raise ValueError(f"cannot add operators of shapes {a.shape} and {b.shape}")
        super().__init__(a.shape, np.result_type(a.dtype, b.dtype),
                         symmetric=a.symmetric and b.symmetric)
        self.a, self.b = a, b

    def _matmat(self, X):
        return self.a.matmat(X) + self.b.matmat(X)

    def _rmatmat(self, Y):
        return self.a.rmatmat(Y) + self.b.rmatmat(Y)


class _ScaledOperator(LinearOperator):
    def __init__(self, op: LinearOperator, scale) -> None:
        if not np.isfinite(scale):
            raise ValueError(f"scale must be finite, got {scale!r}")
        super().__init__(op.shape, op.dtype, symmetric=op.symmetric)
        self.op, self.scale = op, scale

    def _matmat(self, X):
        Y = self.op.matmat(X)
        return Y * Y.dtype.type(self.scale)

    def _rmatmat(self, Y):
        X = self.op.rmatmat(Y)
        return X * X.dtype.type(self.scale)


class _ProductOperator(LinearOperator):
    def __init__(self, a: LinearOperator, b: LinearOperator) -> None:
        if a.shape[1] != b.shape[0]:
            raise ValueError(f"cannot compose operators of shapes {a.shape} @ {b.shape}")
        super().__init__((a.shape[0], b.shape[1]), np.result_type(a.dtype, b.dtype))
        self.a, self.b = a, b

    def _matmat(self, X):
        return self.a.matmat(self.b.matmat(X))

    def _rmatmat(self, Y):
        return self.b.rmatmat(self.a.rmatmat(Y))


# ---------------------------------------------------------------------- simple operators
class MatrixOperator(LinearOperator):
    """Operator view of an explicit dense or sparse matrix.

    Parameters
    ----------
    A : ndarray or sparse matrix (n_rows, n_cols)
    symmetric : bool, default False
        Declare ``A`` symmetric (not checked).
    """

    def __init__(self, A, *, symmetric: bool = False) -> None:
        if not sp.issparse(A):
            A = get_namespace(A).xp.asarray(A)
            if A.ndim != 2:
                raise ValueError(f"A must be 2-D, got shape {A.shape}")
        if A.dtype.kind not in "fiub":
            raise TypeError(f"A must hold real numbers (operators are real), got dtype {A.dtype}")
        dtype = A.dtype if A.dtype.kind == "f" else np.float64
        super().__init__(A.shape, dtype, symmetric=symmetric)
        self.A = A
        self._AT = None

    def _matmat(self, X):
        return self.A @ X

    def _rmatmat(self, Y):
        if self.symmetric:
            return self.A @ Y
        if self._AT is None:
            self._AT = self.A.T
        return self._AT @ Y

    def to_dense(self):
        return self.A.toarray() if sp.issparse(self.A) else np.array(self.A, dtype=self.dtype)

    def diagonal(self):
        return np.asarray(self.A.diagonal()).copy()


class IdentityOperator(LinearOperator):
    """The ``n x n`` identity."""

    def __init__(self, n: int, dtype: Any = np.float64) -> None:
        super().__init__((n, n), dtype, symmetric=True)

    def _matmat(self, X):
        return X.copy()

    def diagonal(self):
        return np.ones(self.shape[0], dtype=self.dtype)


class CallableOperator(LinearOperator):
    """Operator from functions applying ``A`` (and optionally ``A.T``) to a 2-D block.

    Parameters
    ----------
    matmat : callable ``X (n_cols, m) -> (n_rows, m)``
    shape : tuple of int
    dtype : dtype, default float64
    rmatmat : callable, optional
        ``Y (n_rows, m) -> (n_cols, m)``; defaults to ``matmat`` when ``symmetric``.
    symmetric : bool, default False
    """

    def __init__(self, matmat: Callable, shape: tuple[int, int], dtype: Any = np.float64, *,
                 rmatmat: Callable | None = None, symmetric: bool = False) -> None:
        super().__init__(shape, dtype, symmetric=symmetric)
        self._f, self._rf = matmat, rmatmat

    def _matmat(self, X):
        return self._checked(self._f(X), (self.shape[0], X.shape[1]), "matmat")

    def _rmatmat(self, Y):
        if self._rf is not None:
            return self._checked(self._rf(Y), (self.shape[1], Y.shape[1]), "rmatmat")
        return super()._rmatmat(Y)

    @staticmethod
    def _checked(out, shape: tuple, name: str):
        """The user's function's result, of the shape the operator promises (a wrong one would
        be broadcast or fail far from its cause)."""
        if tuple(getattr(out, "shape", ())) != shape:
            raise ValueError(f"CallableOperator: the {name} function returned shape "
                             f"{tuple(getattr(out, 'shape', ()))}, expected {shape}")
        return out


class _ScipyOperator(LinearOperator):
    def __init__(self, A: spla.LinearOperator) -> None:
        dtype = A.dtype if A.dtype is not None and np.dtype(A.dtype).kind == "f" else np.float64
        super().__init__(A.shape, dtype)
        self.A = A

    def _matmat(self, X):
        return self.A.matmat(X)

    def _rmatmat(self, Y):
        return self.A.rmatmat(Y)


def as_operator(A: Any, *, symmetric: bool = False) -> LinearOperator:
    """Turn ``A`` into a linxling :class:`LinearOperator` (returned unchanged if it is one).

    Parameters
    ----------
    A : LinearOperator, scipy.sparse.linalg.LinearOperator, sparse matrix or 2-D array
    symmetric : bool, default False
        Declare an explicit matrix symmetric.
    """
    if isinstance(A, LinearOperator):
        return A
    if isinstance(A, spla.LinearOperator):
        return _ScipyOperator(A)
    if sp.issparse(A) or hasattr(A, "ndim"):
        return MatrixOperator(A, symmetric=symmetric)
    if isinstance(A, (list, tuple)):
        return MatrixOperator(np.asarray(A, dtype=float), symmetric=symmetric)
    raise TypeError(f"cannot use an object of type {type(A).__name__} as a linear operator")


# ---------------------------------------------------------------------- adjoint test
@dataclass(frozen=True)
class DotTestResult:
    """Outcome of :func:`dottest`; truthy when the test passed, unpacks as
    ``passed, lhs, rhs``."""

    passed: bool
    lhs: float
    rhs: float
    rel_error: float
    tol: float

    def __bool__(self) -> bool:
        return self.passed

    def __iter__(self):
        return iter((self.passed, self.lhs, self.rhs))


def dottest(op: Any, rng: Any = None, rtol: float = 1e-10, *, atol: float = 0.0,
            n_vectors: int = 3) -> DotTestResult:
    """Adjoint ("dot") test: ``<A x, y>`` against ``<x, A.T y>`` for random blocks.

    Never raises on failure; returns a :class:`DotTestResult` that is truthy when
    ``|lhs - rhs| <= tol * (||A x|| ||y|| + ||x|| ||A.T y||) + atol`` with
    ``tol = max(rtol, 100 * eps(op.dtype))`` (so a float32 operator is judged at float32
    precision). ``atol`` is for operators that are zero up to cancellation (e.g. a centred
    cross-covariance with one class), whose roundoff cannot be judged relatively.

    Parameters
    ----------
    op : LinearOperator or anything :func:`as_operator` accepts, shape (n_rows, n_cols)
    rng : None, int or numpy Generator
    rtol : float, default 1e-10
    atol : float, default 0.0
    n_vectors : int, default 3
        Number of random columns (the test runs on blocks, exercising ``matmat``).

    Returns
    -------
    DotTestResult
        ``passed, lhs, rhs = dottest(op)`` also works.
    """
    from linxling._validation import check_random_state

    op = as_operator(op)
    gen = check_random_state(rng)
    n_rows, n_cols = op.shape
    dt = op.dtype
    x = gen.standard_normal((n_cols, n_vectors)).astype(dt)
    y = gen.standard_normal((n_rows, n_vectors)).astype(dt)
    Ax = np.asarray(op.matmat(x), dtype=np.float64)
    ATy = np.asarray(op.rmatmat(y), dtype=np.float64)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    lhs = float(np.sum(Ax * y64))
    rhs = float(np.sum(x64 * ATy))
    scale = np.linalg.norm(Ax) * np.linalg.norm(y64) + np.linalg.norm(x64) * np.linalg.norm(ATy)
    tol = max(rtol, 100 * float(np.finfo(dt).eps))
    err = abs(lhs - rhs)
    rel = err / scale if scale > 0 else err
    return DotTestResult(bool(err <= tol * scale + atol), lhs, rhs, float(rel), tol)
