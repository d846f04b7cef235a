"""In-place rank-one updates of dense blocks, on all cores and without a temporary.

The centring and Woodbury corrections of Cr5's operators are rank-one: ``Y += s · a bᵀ`` with
``Y`` of shape (p, m), p up to hundreds of thousands. NumPy's ``Y += (s * a)[:, None] * b[None, :]``
writes the (p, m) outer product first and adds it in a second pass on one thread;
:func:`add_outer` does it in one row-parallel pass. The NumPy expression is the reference
(:func:`add_outer_reference`).
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["add_outer", "add_outer_reference", "gram64"]

# below this many entries the NumPy expression is as fast (thread start-up)
_MIN_PARALLEL = 100_000


@numba.njit(parallel=True, cache=True, nogil=True)
def _add_outer(Y, a, b):  # pragma: no cover - compiled
    p, m = Y.shape
    for i in numba.prange(p):
        ai = a[i]
        for j in range(m):
            Y[i, j] += ai * b[j]


def add_outer_reference(Y, a, b, scale: float = 1.0):
    """``Y += scale * outer(a, b)`` with NumPy (the oracle of :func:`add_outer`)."""
    Y += (scale * a)[:, None] * b[None, :]
    return Y


def add_outer(Y, a, b, scale: float = 1.0):
    """``Y += scale * outer(a, b)`` in place for a C-contiguous NumPy ``Y`` (p, m); returns ``Y``.

    Anything else (CuPy, non-contiguous, small, integer) uses :func:`add_outer_reference`.
    """
    if (not isinstance(Y, np.ndarray) or Y.ndim != 2 or not Y.flags.c_contiguous
            or Y.dtype not in (np.float32, np.float64) or Y.size < _MIN_PARALLEL
            or not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray)):
        return add_outer_reference(Y, a, b, scale)
    _add_outer(Y, np.ascontiguousarray(scale * a, dtype=Y.dtype), np.ascontiguousarray(b, dtype=Y.dtype))
    return Y


def gram64(A: np.ndarray, B: np.ndarray, step: int = 1 << 16) -> np.ndarray:
    """``Aᵀ B`` in float64, summed over row blocks of ``step`` rows (no float64 copy of A or B:
    at p = 800,000 rows and 360 columns such a copy of a float32 block is 2.3 GB)."""
    out = np.zeros((A.shape[1], B.shape[1]))
    for i in range(0, A.shape[0], step):
        out += A[i:i + step].T.astype(np.float64) @ B[i:i + step].astype(np.float64)
    return out
