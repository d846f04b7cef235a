"""Dense block products of the solvers: in-place rank-one updates, and tall-skinny BLAS
products split into fixed row parts that run on all cores while a fit holds BLAS to one thread.

The centring and Woodbury corrections of Cr5's operators are rank-one: ``Y += s · a bᵀ`` with
``Y`` of shape (p, m), p up to hundreds of thousands. NumPy's ``Y += (s * a)[:, None] * b[None, :]``
writes the (p, m) outer product first and adds it in a second pass on one thread;
:func:`add_outer` does it in one row-parallel pass. The NumPy expression is the reference
(:func:`add_outer_reference`).

While a fit runs, BLAS is held to one thread (:mod:`linxling._threads`: a multi-threaded BLAS
between the numba kernels oversubscribes the cores; the whole Cr5 fit with BLAS on two threads
measured no faster). The solvers' dense products are tall and skinny (Cr5 at K = 485,000: ``PᵀQ``
and ``P a`` on 200,000 x 120 blocks in every block-CG iteration, ``QᵀW`` and ``Q S`` on
485,000 x 330 blocks in the eigen-solver), so :func:`gram_tn`, :func:`matmul_rows`,
:func:`gemm_acc`, :func:`trmm_rows` and :func:`gram64` cut them into at most ``ROW_PARTS`` fixed
parts of rows, one single-threaded BLAS call each, run by a pool of ``numba.get_num_threads()``
Python threads (BLAS releases the GIL) when BLAS is held to one thread, in order otherwise. The
parts depend on the number of rows only, and partial ``Aᵀ B`` products are added in float64 in
part order, so with BLAS on one thread the result never depends on the thread count (BLAS's own
threads, outside a fit, may round differently). Measured on a 2-core AMD EPYC, float32:
``PᵀQ`` at 200,000 x 120 0.057 s in one call on one BLAS thread, 0.029 s in parts, at
485,000 x 330 0.94 -> 0.47 s (one call on BLAS's own two threads: 0.041 and 0.48 s); the whole
K = 485,000 Cr5 fit 8 % faster (benchmarks/README.md, "The machine's floor").
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

__all__ = ["add_outer", "add_outer_reference", "add_scaled", "add_scaled_reference", "gram64", "gram_tn",
           "matmul_rows", "matmul_rows_inplace", "gemm_acc", "trmm_rows", "ROW_PARTS"]

# the row parts of the split products: at most this many, of at least _MIN_PART_ROWS rows (the
# parts depend on the number of rows only, never on the thread count)
ROW_PARTS = 8
_MIN_PART_ROWS = 4096
# below this many multiply-adds the products run in order (a thread hand-off costs ~50 us)
_MIN_SPLIT_WORK = 1 << 22

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


@numba.njit(parallel=True, cache=True, nogil=True)
def _add_scaled(Y, X, s):  # pragma: no cover - compiled
    p, m = Y.shape
    for i in numba.prange(p):
        for j in range(m):
            Y[i, j] += s * X[i, j]


def add_scaled_reference(Y, X, scale: float):
    """``Y += scale * X`` with NumPy (a temporary block for ``scale * X``; the oracle of
    :func:`add_scaled`)."""
    Y += Y.dtype.type(scale) * X
    return Y


def add_scaled(Y, X, scale: float):
    """``Y += scale * X`` in place, row-parallel and without the temporary ``scale * X`` block of
    the NumPy expression (each element rounded as NumPy's: the product, then the sum), for
    C-contiguous NumPy ``Y`` and ``X`` of one float dtype and shape; anything else uses
    :func:`add_scaled_reference`. Returns ``Y``."""
    if (not isinstance(Y, np.ndarray) or not isinstance(X, np.ndarray) or Y.ndim != 2
            or X.shape != Y.shape or X.dtype != Y.dtype or Y.dtype not in (np.float32, np.float64)
            or not (Y.flags.c_contiguous and X.flags.c_contiguous) or Y.size < _MIN_PARALLEL):
        return add_scaled_reference(Y, X, scale)
    _add_scaled(Y, X, Y.dtype.type(scale))
    return Y


def row_parts(n: int) -> list[tuple[int, int]]:
    """The fixed row parts ``[(start, stop), ...]`` of an n-row block: at most ``ROW_PARTS``, of
    at least ``_MIN_PART_ROWS`` rows each (one part for small blocks)."""
    parts = max(1, min(ROW_PARTS, n // _MIN_PART_ROWS))
    return [(i * n // parts, (i + 1) * n // parts) for i in range(parts)]


@functools.lru_cache(maxsize=4)
def _pool(threads: int, pid: int) -> ThreadPoolExecutor:
    """The pool of ``threads`` workers of process ``pid`` (a forked child gets its own: the
    parent's worker threads do not exist in it)."""
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="linxling-dense")


def each_row_part(fn: Callable[[int, int], Any], n: int, work: float) -> list:
    """``[fn(start, stop) for each row part]``, the parts on the thread pool when BLAS is held to
    one thread (inside a fit), there is more than one thread and the work pays for the hand-off."""
    from linxling._threads import blas_held
    parts = row_parts(n)
    threads = numba.get_num_threads()
    if len(parts) > 1 and threads > 1 and work >= _MIN_SPLIT_WORK and blas_held():
        return list(_pool(threads, os.getpid()).map(lambda se: fn(*se), parts))
    return [fn(a, b) for a, b in parts]


def _plain(*arrays) -> bool:
    return all(isinstance(x, np.ndarray) and x.ndim == 2 and x.dtype in (np.float32, np.float64) for x in arrays)


def _sum64(parts: list, shape: tuple) -> np.ndarray:
    out = np.zeros(shape)
    for x in parts:
        out += x
    return out


def gram_tn(A: Any, B: Any) -> np.ndarray:
    """``Aᵀ B`` (float64) of two (n, ·) blocks: each row part's product in the blocks' dtype,
    the parts added in float64 in order. The reference is ``A.T @ B`` (one part)."""
    if not _plain(A, B) or A.dtype != B.dtype:
        return np.asarray(A.T @ B, dtype=np.float64)
    n = A.shape[0]
    parts = each_row_part(lambda a, b: A[a:b].T @ B[a:b], n, float(n) * A.shape[1] * B.shape[1])
    return _sum64(parts, (A.shape[1], B.shape[1]))


def gram64(A: np.ndarray, B: np.ndarray, step: int = 1 << 16) -> np.ndarray:
    """``Aᵀ B`` in float64, summed over row blocks of at most ``step`` rows cast to float64 (no
    float64 copy of A or B: at p = 800,000 rows and 360 columns such a copy of a float32 block is
    2.3 GB); the row parts (:func:`row_parts`) on all cores inside a fit, added in order."""
    def part(a, b):
        out = np.zeros((A.shape[1], B.shape[1]))
        for i in range(a, b, step):
            j = min(b, i + step)
            out += A[i:j].T.astype(np.float64) @ B[i:j].astype(np.float64)
        return out
    n = A.shape[0]
    return _sum64(each_row_part(part, n, float(n) * A.shape[1] * B.shape[1]), (A.shape[1], B.shape[1]))


def matmul_rows(A: Any, S: Any) -> np.ndarray:
    """``A @ S`` (A tall, S small; A's dtype), row part by row part; every output row comes from
    one BLAS call, as in the plain ``A @ S``."""
    if not _plain(A, S):
        return A @ S
    S = np.asarray(S, dtype=A.dtype)
    out = np.empty((A.shape[0], S.shape[1]), dtype=A.dtype)

    def part(a, b):
        np.matmul(A[a:b], S, out=out[a:b])
    each_row_part(part, A.shape[0], float(A.shape[0]) * A.shape[1] * S.shape[1])
    return out


def matmul_rows_inplace(A: np.ndarray, S: np.ndarray, block: int = 4096) -> np.ndarray:
    """``A[...] = A @ S`` for a square S, row part by row part (:func:`each_row_part`), each
    part in blocks of ``block`` rows through one small buffer: no second n x k array, whose first
    touch can cost more than the product (a fresh 80 MB result took 0.28 s against the 45 ms GEMM
    on the 2-core AMD EPYC of 2026-11-29). Every output row comes from one BLAS call, as in
    ``A @ S``."""
    S = np.ascontiguousarray(S, dtype=A.dtype)
    if S.shape != (A.shape[1], A.shape[1]):
        raise ValueError(f"S must be square of side {A.shape[1]}, got shape {S.shape}")

    def part(a, b):
        buf = np.empty((min(block, b - a), S.shape[1]), dtype=A.dtype)
        for i in range(a, b, block):
            j = min(b, i + block)
            np.matmul(A[i:j], S, out=buf[:j - i])
            A[i:j] = buf[:j - i]
    each_row_part(part, A.shape[0], float(A.shape[0]) * A.shape[1] * S.shape[1])
    return A


def _blas(dtype, name: str):
    from scipy.linalg import blas
    return getattr(blas, ("s" if dtype == np.float32 else "d") + name)


def gemm_acc(C: np.ndarray, A: np.ndarray, B: np.ndarray, alpha: float) -> None:
    """``C += alpha A B`` in place (BLAS gemm with beta = 1 on the transposes, which are
    Fortran-ordered for C-contiguous arrays: no temporary block), row part by row part; plain
    NumPy for other arrays."""
    if not (_plain(C, A, B) and C.flags.c_contiguous and C.flags.writeable
            and A.dtype == C.dtype and B.dtype == C.dtype):
        C += alpha * (A @ B)
        return
    gemm = _blas(C.dtype, "gemm")
    Bt = np.ascontiguousarray(B).T

    def part(a, b):
        Cp = C[a:b]
        # Cᵀ += alpha Bᵀ Aᵀ
        res = gemm(alpha, Bt, np.ascontiguousarray(A[a:b]).T, beta=1.0, c=Cp.T, overwrite_c=1)
        if not np.shares_memory(res, Cp):     # the wrapper made a copy after all
            Cp[...] = res.T
    each_row_part(part, C.shape[0], float(C.shape[0]) * A.shape[1] * B.shape[1])


def trmm_rows(Y: np.ndarray, U: np.ndarray) -> bool:
    """``Y <- Y U`` in place for a C-contiguous float32/float64 ``Y`` and upper-triangular ``U``
    (BLAS trmm on ``Yᵀ``, which is Fortran-ordered), row part by row part; False (nothing done)
    for other arrays. Half the flops of the GEMM and no new block: measured, one BLAS thread and
    one part, (485000, 360) float32 1.55-2.92 s -> 0.83 s, (20000, 120) float32 6.6 -> 4.0 ms."""
    if not _plain(Y) or not Y.flags.c_contiguous or not Y.flags.writeable:
        return False
    trmm = _blas(Y.dtype, "trmm")
    U = np.asarray(U, dtype=Y.dtype)

    def part(a, b):
        Yp = Y[a:b]
        res = trmm(1.0, U, Yp.T, side=0, lower=0, trans_a=1, overwrite_b=1)
        if not np.shares_memory(res, Yp):
            Yp[...] = res.T
    each_row_part(part, Y.shape[0], float(Y.shape[0]) * Y.shape[1] * Y.shape[1] / 2)
    return True
