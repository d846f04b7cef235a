"""The row-parallel dense products of the solvers (linxling.kernels.dense) against plain NumPy,
and their results independent of the thread count and of whether a fit holds BLAS."""
import numba
import numpy as np
import pytest

from linxling._threads import blas_held, blas_single_thread
from linxling.kernels import dense


def _tol(dtype, k):
    """Rounding bound of a k-term dot product of standard normal entries."""
    return 4 * k * np.finfo(dtype).eps * np.sqrt(k)


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 40_000, 100_003])
def test_row_parts_cover_the_rows_in_order(n):
    parts = dense.row_parts(n)
    assert 1 <= len(parts) <= dense.ROW_PARTS
    assert parts[0][0] == 0 and parts[-1][1] == n
    assert all(a1 == b0 for (_, a1), (b0, _) in zip(parts[:-1], parts[1:], strict=True))
    if len(parts) > 1:
        assert min(b - a for a, b in parts) >= dense._MIN_PART_ROWS


def _blocks(dtype, n=40_000, m=24, w=9, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, m)).astype(dtype), rng.standard_normal((n, w)).astype(dtype),
            rng.standard_normal((m, w)).astype(dtype))


def _all_products(A, B, S):
    out = {"gram_tn": dense.gram_tn(A, B), "gram64": dense.gram64(A, B, step=3000),
           "matmul_rows": dense.matmul_rows(A, S)}
    C = B.copy()
    dense.gemm_acc(C, A, S, -0.5)
    out["gemm_acc"] = C
    U = np.triu(S[:, :S.shape[1]][:S.shape[1]]) + 3 * np.eye(S.shape[1], dtype=S.dtype)
    Y = B.copy()
    assert dense.trmm_rows(Y, U)
    out["trmm_rows"] = Y
    out["U"] = U
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_products_match_numpy(dtype):
    A, B, S = _blocks(dtype)
    got = _all_products(A, B, S)
    A64, B64, S64 = (x.astype(np.float64) for x in (A, B, S))
    tol = _tol(dtype, A.shape[0])
    ref = A64.T @ B64
    scale = np.abs(A64).T @ np.abs(B64)
    assert got["gram_tn"].dtype == np.float64 and got["gram64"].dtype == np.float64
    assert np.all(np.abs(got["gram_tn"] - ref) <= tol * scale)
    assert np.all(np.abs(got["gram64"] - ref) <= _tol(np.float64, A.shape[0]) * scale)
    rows_tol = _tol(dtype, S.shape[0]) * (np.abs(A64) @ np.abs(S64))
    assert got["matmul_rows"].dtype == dtype
    assert np.all(np.abs(got["matmul_rows"] - A64 @ S64) <= rows_tol)
    assert np.all(np.abs(got["gemm_acc"] - (B64 - 0.5 * A64 @ S64)) <= rows_tol + np.finfo(dtype).eps * np.abs(B64))
    U64 = got["U"].astype(np.float64)
    assert np.all(np.abs(got["trmm_rows"] - B64 @ U64) <= _tol(dtype, U64.shape[0]) * (np.abs(B64) @ np.abs(U64)))


def test_split_products_do_not_depend_on_the_thread_count():
    """The parts depend on the number of rows only: with BLAS held to one thread (as in a fit)
    the same bits in order (1 numba thread) and on the pool (2 threads); and, BLAS not held (its
    own threads may round differently), the same to rounding."""
    A, B, S = _blocks(np.float32, n=60_000, m=40, w=40, seed=3)
    assert not blas_held()
    plain = _all_products(A, B, S)
    before = numba.get_num_threads()
    held = {}
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            with blas_single_thread():
                assert blas_held()
                held[threads] = _all_products(A, B, S)
    finally:
        numba.set_num_threads(before)
    assert not blas_held()
    for key, value in held[1].items():
        for threads, got in held.items():
            np.testing.assert_array_equal(got[key], value, err_msg=f"{key}, {threads} threads")
        scale = max(1.0, float(np.abs(value).max()))
        np.testing.assert_allclose(plain[key], value, rtol=0, atol=_tol(np.float32, A.shape[0]) * scale)


def test_split_products_take_strided_views_and_fall_back():
    """A column slice of a wider buffer (the eigen-solver's basis) works as a block, and what is
    not a float block goes to plain NumPy."""
    A, B, S = _blocks(np.float64, n=20_000, m=30, w=6, seed=5)
    wide = np.zeros((A.shape[0], 50))
    wide[:, :30] = A
    view = wide[:, :30]
    np.testing.assert_allclose(dense.gram_tn(view, B), A.T @ B, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(dense.matmul_rows(view, S), A @ S, rtol=1e-12, atol=1e-12)
    Ai = np.arange(12).reshape(6, 2)
    np.testing.assert_array_equal(dense.gram_tn(Ai, Ai), (Ai.T @ Ai).astype(np.float64))
    np.testing.assert_array_equal(dense.matmul_rows(Ai, np.eye(2, dtype=int)), Ai)
    assert not dense.trmm_rows(Ai.astype(np.float64)[:, ::2], np.eye(1))       # not contiguous


def _child_gram(q):
    A = np.random.default_rng(11).standard_normal((50_000, 30))
    with blas_single_thread():
        q.put(dense.gram_tn(A, A))


def test_split_products_work_in_a_forked_child():
    """A child forked after the parent used the pool gets a pool of its own (the parent's worker
    threads do not exist in it): the product completes and equals the parent's."""
    import multiprocessing as mp
    import sys
    if sys.platform != "linux":
        pytest.skip("fork start method: Linux only")
    A = np.random.default_rng(11).standard_normal((50_000, 30))
    with blas_single_thread():
        want = dense.gram_tn(A, A)                  # the parent's pool exists now
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_child_gram, args=(q,))
    proc.start()
    try:
        got = q.get(timeout=60)
    finally:
        proc.join(timeout=60)
        if proc.is_alive():
            proc.kill()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("held", [False, True])
def test_matmul_rows_inplace_matches_numpy(dtype, held):
    """A[...] = A @ S through small blocks, alone and with BLAS held to one thread (the row parts
    on the pool, as inside a fit); rows not a multiple of the block."""
    A, _, _ = _blocks(dtype, n=40_003)
    S = np.random.default_rng(5).standard_normal((A.shape[1], A.shape[1])).astype(dtype)
    A64, S64 = A.astype(np.float64), S.astype(np.float64)
    if held:
        with blas_single_thread():
            got = dense.matmul_rows_inplace(A, S, block=1000)
    else:
        got = dense.matmul_rows_inplace(A, S, block=1000)
    assert got is A and A.dtype == dtype
    assert np.all(np.abs(A - A64 @ S64) <= _tol(dtype, S.shape[0]) * (np.abs(A64) @ np.abs(S64)))
    with pytest.raises(ValueError, match="S must be square"):
        dense.matmul_rows_inplace(A, S[:, :3])
