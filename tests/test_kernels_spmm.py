"""The parallel CSR x dense kernel against SciPy's product (its plain reference)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from linxling.kernels import spmm
from linxling.kernels.spmm import csr_matmat, csr_matmat_reference, csr_transpose


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_reference_above_threshold(dtype, monkeypatch):
    monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)      # force the numba path
    rng = np.random.default_rng(0)
    X = sp.random(300, 200, density=0.05, format="csr", random_state=1, dtype=dtype)
    V = rng.standard_normal((200, 7)).astype(dtype)
    got = csr_matmat(X, V)
    assert got.dtype == dtype
    _assert_within_sum_bound(got, csr_matmat_reference(X, V), X, V)
    U = rng.standard_normal((300, 3)).astype(dtype)
    _assert_within_sum_bound(csr_matmat(csr_transpose(X), U), X.T @ U, X.T, U)


def _assert_within_sum_bound(got, want, X, V):
    """Two summation orders of ``X @ V`` differ by at most about 2 n eps Σ|X_ij V_jk| per entry
    (n: the row's nonzeros; the classical bound of a floating-point sum, for each order)."""
    X = sp.csr_matrix(X)
    eps = np.finfo(V.dtype).eps
    n = np.diff(X.indptr)[:, None] + 1
    bound = 2 * n * eps * (abs(X) @ np.abs(V.astype(np.float64)))
    err = np.abs(got.astype(np.float64) - want)
    assert np.all(err <= bound), float((err / np.maximum(bound, 1e-300)).max())


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 40), p=st.integers(1, 30), m=st.integers(1, 5), density=st.floats(0, 1),
       seed=st.integers(0, 1000))
def test_property_shapes_and_empty_rows(n, p, m, density, seed):
    spmm.MIN_PARALLEL_WORK, old = 0, spmm.MIN_PARALLEL_WORK
    try:
        X = sp.random(n, p, density=density, format="csr", random_state=seed)
        V = np.random.default_rng(seed).standard_normal((p, m))
        np.testing.assert_allclose(csr_matmat(X, V), X @ V, atol=1e-12)
    finally:
        spmm.MIN_PARALLEL_WORK = old


@pytest.mark.parametrize("fast", [True, False])
def test_matmat_into_a_given_buffer(fast, monkeypatch):
    """``out=``: every element overwritten (a reused buffer's old values never leak), the buffer
    returned, bitwise the new-array result; a buffer of the wrong shape, dtype or layout is refused."""
    if fast:
        monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)
    X = sp.random(60, 40, density=0.1, format="csr", random_state=2, dtype=np.float32)
    keep = np.ones(60, dtype=np.float32)
    keep[5] = 0                                                # an empty row must be zeroed too
    X = sp.csr_matrix(sp.diags(keep) @ X)
    X.eliminate_zeros()
    assert X.indptr[6] == X.indptr[5]
    V = np.random.default_rng(2).standard_normal((40, 6)).astype(np.float32)
    buf = np.full((60, 6), np.nan, dtype=np.float32)
    got = csr_matmat(X, V, buf)
    assert got is buf
    np.testing.assert_array_equal(got, csr_matmat(X, V))
    if fast:
        for bad in (np.empty((60, 5), np.float32), np.empty((60, 6), np.float64),
                    np.empty((6, 60), np.float32).T):
            with pytest.raises(ValueError, match="out must be a C-contiguous"):
                csr_matmat(X, V, bad)


def test_fallbacks_keep_semantics():
    X = sp.random(20, 10, density=0.3, format="csr", random_state=0)
    v = np.arange(10.0)
    np.testing.assert_allclose(csr_matmat(X, v), X @ v)                      # 1-D
    np.testing.assert_allclose(csr_matmat(X.tocsc(), v[:, None]), X @ v[:, None])  # not CSR
    V32 = np.ones((10, 2), dtype=np.float32)
    assert csr_matmat(X, V32).dtype == np.result_type(X.dtype, V32.dtype)    # mixed dtypes -> SciPy


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [1, 2, 7])
def test_transposed_scatter_matches_reference_for_any_thread_count(dtype, m, monkeypatch):
    import numba

    from linxling.kernels.spmm import csr_rmatmat, csr_rmatmat_reference
    monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)
    rng = np.random.default_rng(2)
    X = sp.random(250, 120, density=0.05, format="csr", random_state=3, dtype=dtype)
    X.data[X.indptr[7]:X.indptr[8]] = 0                   # an empty row
    X.eliminate_zeros()
    V = rng.standard_normal((250, m)).astype(dtype)
    ref = csr_rmatmat_reference(X, V)
    results = []
    old = numba.get_num_threads()
    try:
        for threads in sorted({1, old}):
            numba.set_num_threads(threads)
            got = csr_rmatmat(X, V)
            assert got.dtype == dtype and got.shape == (120, m)
            np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-13, atol=1e-6)
            results.append(got)
    finally:
        numba.set_num_threads(old)
    # each output column is summed in the same order whatever the thread count
    np.testing.assert_array_equal(results[0], results[-1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mapped", [False, True])
def test_rows_matmat_matches_reference(dtype, mapped):
    """The four-array product (rows in any order, empty rows, renumbered columns, accumulation)
    against its plain per-row reference and against the SciPy product it stands for."""
    from linxling.kernels.spmm import rows_matmat, rows_matmat_reference
    rng = np.random.default_rng(4)
    X = sp.random(40, 30, density=0.2, format="csr", random_state=5, dtype=dtype)
    # output rows = a permutation of X's rows spread over 50 rows (10 empty)
    where = rng.permutation(50)[:40]
    starts = np.zeros(50, dtype=X.indptr.dtype)
    ends = np.zeros(50, dtype=X.indptr.dtype)
    starts[where], ends[where] = X.indptr[:-1], X.indptr[1:]
    colmap = rng.permutation(45)[:30] if mapped else None
    V = rng.standard_normal((45 if mapped else 30, 6)).astype(dtype)
    got = rows_matmat(starts, ends, X.indices, X.data, V, np.empty((50, 6), dtype=dtype), colmap=colmap)
    ref = rows_matmat_reference(starts, ends, X.indices, X.data, V, np.empty((50, 6), dtype=dtype), colmap=colmap)
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)
    # the same as moving X's rows with a permutation matrix and its columns with colmap
    Xm = X if colmap is None else sp.csr_matrix((X.data, colmap[X.indices], X.indptr), shape=(40, 45))
    P = sp.csr_matrix((np.ones(40, dtype=dtype), (where, np.arange(40))), shape=(50, 40))
    np.testing.assert_allclose(got, P @ (Xm @ V), rtol=rtol, atol=rtol)
    acc = rows_matmat(starts, ends, X.indices, X.data, V, got.copy(), colmap=colmap, accumulate=True)
    np.testing.assert_allclose(acc, 2 * got, rtol=rtol, atol=rtol)
    with pytest.raises(ValueError, match="share one dtype"):
        rows_matmat(starts, ends, X.indices, X.data, V.astype(np.float16), np.empty((50, 6), dtype=dtype))


# ---------------------------------------------------------------------- cache-tiled product
def _tiled_case(dtype, seed=4, n=90, p=70, m=5, density=0.12):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="csr", random_state=seed, dtype=dtype)
    X.data[X.indptr[3]:X.indptr[4]] = 0                 # an empty row
    X.eliminate_zeros()
    X.sort_indices()
    return X, rng.standard_normal((p, m)).astype(dtype), rng


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 3, 16, 69, 70, 10 ** 6])
def test_tiled_rows_matmat_is_bitwise_the_one_tile_product(dtype, width):
    """Tiles of V's rows change only the memory order, never the additions (sorted indices)."""
    from linxling.kernels.spmm import rows_matmat_reference, tiled_rows_matmat
    X, V, _ = _tiled_case(dtype)
    starts, ends = X.indptr[:-1], X.indptr[1:]
    one = tiled_rows_matmat(starts, ends, X.indices, X.data, V, np.empty((90, 5), dtype), width=10 ** 9)
    got = tiled_rows_matmat(starts, ends, X.indices, X.data, V, np.empty((90, 5), dtype), width=width)
    np.testing.assert_array_equal(got, one)
    ref = rows_matmat_reference(starts, ends, X.indices, X.data, V, np.empty((90, 5), dtype))
    np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-13, atol=1e-6)
    acc = tiled_rows_matmat(starts, ends, X.indices, X.data, V, got.copy(), accumulate=True, width=width)
    np.testing.assert_allclose(acc, 2 * ref, rtol=1e-5 if dtype == np.float32 else 1e-13, atol=1e-6)


@pytest.mark.parametrize("width", [2, 9, 10 ** 6])
def test_tiled_rows_matmat_gram_term_and_column_dots(width):
    """``out = alpha P + A V`` and the chunked column dots ``Σ P out`` of block CG, the same for
    one thread and all of them."""
    import numba

    from linxling.kernels.spmm import tiled_rows_matmat
    X, V, rng = _tiled_case(np.float64, seed=7)
    P = rng.standard_normal((90, 5))
    chunk = 7
    n_chunks = -(-90 // chunk)
    runs = []
    old = numba.get_num_threads()
    try:
        for threads in sorted({1, old}):
            numba.set_num_threads(threads)
            part = np.full((n_chunks, 5), np.nan)
            out = tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, V, np.empty((90, 5)),
                                    alpha=0.25, P=P, part=part, chunk=chunk, width=width)
            runs.append((out, part))
    finally:
        numba.set_num_threads(old)
    out, part = runs[0]
    np.testing.assert_allclose(out, 0.25 * P + X @ V, rtol=1e-13, atol=1e-13)
    ref = np.add.reduceat(P * out, np.arange(0, 90, chunk), axis=0)
    np.testing.assert_allclose(part, ref, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(runs[-1][0], out)
    np.testing.assert_array_equal(runs[-1][1], part)


def test_tiled_rows_matmat_unsorted_indices_and_errors():
    from linxling.kernels.spmm import tiled_rows_matmat
    X, V, _ = _tiled_case(np.float64, seed=9)
    ind = X.indices.copy()
    dat = X.data.copy()
    for i in range(X.shape[0]):                      # reverse every row: the last tile takes what is left
        a, b = X.indptr[i], X.indptr[i + 1]
        ind[a:b], dat[a:b] = ind[a:b][::-1], dat[a:b][::-1]
    got = tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], ind, dat, V, np.empty((90, 5)), width=4)
    np.testing.assert_allclose(got, X @ V, rtol=1e-13, atol=1e-13)
    out = np.empty((90, 5))
    with pytest.raises(ValueError, match="share one dtype"):
        tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, V.astype(np.float32), out)
    with pytest.raises(ValueError, match="alpha needs P"):
        tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, V, out, alpha=1.0)
    with pytest.raises(ValueError, match="part needs chunk"):
        tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, V, out, part=np.zeros((3, 5)))
    with pytest.raises(ValueError, match="need P"):
        tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, V, out, part=np.zeros((3, 5)), chunk=30)


def test_tile_sizes(monkeypatch):
    from linxling.kernels.spmm import tile_bytes, tile_rows
    monkeypatch.setenv("LINXLING_TILE_BYTES", str(16 << 20))
    assert tile_bytes() == 16 << 20
    assert tile_rows(485_000, 360, 4) == (16 << 20) // (360 * 4)        # 11,650 rows of 1,440 bytes
    assert tile_rows(20_000, 200, 4) == 20_000                          # fits: one tile
    assert tile_rows(485_000, 128, 4) == (8 << 20) // 512               # narrow rows: half the bytes
    assert tile_rows(485_000, 129, 4) == (16 << 20) // (129 * 4)        # wider: all of them
    assert tile_rows(485_000, 16, 4) == 131_072
    assert tile_rows(10 ** 7, 10 ** 6, 8) == 1024                       # never below 1,024 rows
    monkeypatch.delenv("LINXLING_TILE_BYTES")
    assert 4 << 20 <= tile_bytes() <= 64 << 20


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [1, 7, 16, 69, 70, 10 ** 6])
def test_tiled_mapped_product_is_bitwise_the_untiled_one(dtype, width):
    """Renumbered columns in tiles of the source index space (each tile's rows of V gathered
    into a buffer first): bitwise the untiled renumbered product for sorted indices, accumulation
    included; unsorted rows are still all summed (their leftovers read V directly)."""
    from linxling.kernels.spmm import _rows_matmat, _thread_groups, _tiled_rows_mapped, rows_matmat_reference
    X, _, rng = _tiled_case(dtype)
    colmap = rng.permutation(100)[:70]                  # 70 source columns -> rows of a 100-row V
    V = rng.standard_normal((100, 5)).astype(dtype)
    starts, ends = X.indptr[:-1], X.indptr[1:]
    one = np.empty((90, 5), dtype=dtype)
    _rows_matmat(starts, ends, X.indices, X.data, colmap, V, one, False, _thread_groups(starts, ends, 1))
    w = min(width, 70)
    got = np.full((90, 5), np.nan, dtype=dtype)
    _tiled_rows_mapped(starts, ends, X.indices, X.data, colmap, V, got, False, 8, w, np.empty((w, 5), dtype),
                       _thread_groups(starts, ends, 8))
    np.testing.assert_array_equal(got, one)
    acc, acc1 = got.copy(), got.copy()
    _tiled_rows_mapped(starts, ends, X.indices, X.data, colmap, V, acc, True, 8, w, np.empty((w, 5), dtype),
                       _thread_groups(starts, ends, 8))
    _rows_matmat(starts, ends, X.indices, X.data, colmap, V, acc1, True, _thread_groups(starts, ends, 1))
    np.testing.assert_array_equal(acc, acc1)
    # unsorted indices: every entry is still summed
    ind, dat = X.indices.copy(), X.data.copy()
    for i in range(90):
        sl = slice(X.indptr[i], X.indptr[i + 1])
        ind[sl], dat[sl] = ind[sl][::-1], dat[sl][::-1]
    uns = np.empty((90, 5), dtype=dtype)
    _tiled_rows_mapped(starts, ends, ind, dat, colmap, V, uns, False, 8, w, np.empty((w, 5), dtype),
                       _thread_groups(starts, ends, 8))
    ref = rows_matmat_reference(starts, ends, ind, dat, V, np.empty((90, 5), dtype=dtype), colmap=colmap)
    rtol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(uns, ref, rtol=rtol, atol=rtol)


def test_rows_matmat_tiles_renumbered_columns_beyond_a_tile(monkeypatch):
    """rows_matmat takes the tiled renumbered path once the source rows outgrow a tile (1,024
    rows at the smallest tile) and gives the reference product."""
    from linxling.kernels import spmm
    rng = np.random.default_rng(11)
    X = sp.random(300, 3000, density=0.01, format="csr", random_state=12)
    colmap = rng.permutation(4000)[:3000]
    V = rng.standard_normal((4000, 8))
    calls = []
    real = spmm._tiled_rows_mapped

    def spy(*a):
        calls.append(a[-3])                   # the tile's rows (before the buffer and the thread runs)
        return real(*a)

    monkeypatch.setenv("LINXLING_TILE_BYTES", "1")           # the smallest tiles: 1,024 rows
    monkeypatch.setattr(spmm, "_tiled_rows_mapped", spy)
    got = spmm.rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, V, np.empty((300, 8)), colmap=colmap)
    assert calls == [1024]
    ref = spmm.rows_matmat_reference(X.indptr[:-1], X.indptr[1:], X.indices, X.data, V, np.empty((300, 8)),
                                     colmap=colmap)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [300, 3000])      # 3,000 chunk rows: X V taken in tiles of 1,024 rows
def test_gram_accumulate_matches_reference(dtype, n, monkeypatch):
    """``out += Xᵀ (X V)`` per chunk against SciPy in float64, within the bound of the two sums:
    |err| <= 2 (k_row + k_col + 2) eps (|X|ᵀ |X| |V|) + eps |out| (k: a row's / column's nonzeros)."""
    from linxling.kernels.spmm import csr_gram_accumulate, csr_gram_accumulate_reference
    monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)      # the numba path
    monkeypatch.setenv("LINXLING_TILE_BYTES", str(1 << 10))    # tiles of the minimum 1,024 rows
    rng = np.random.default_rng(5)
    X = sp.random(n, 150, density=0.04, format="csr", random_state=2, dtype=dtype)
    keep = np.ones(n, dtype=dtype)
    keep[7] = 0
    X = sp.csr_matrix(sp.diags(keep) @ X)                   # an empty row
    X.eliminate_zeros()
    V = rng.standard_normal((150, 6)).astype(dtype)
    out0 = rng.standard_normal((150, 6)).astype(dtype)
    got = csr_gram_accumulate(X, V, out0.copy())
    assert got.dtype == dtype
    X64 = X.astype(np.float64)
    want = csr_gram_accumulate_reference(X64, V.astype(np.float64), out0.astype(np.float64))
    eps = np.finfo(dtype).eps
    k = np.diff(X.indptr).max() + np.diff(X.tocsc().indptr).max() + 2
    bound = 2 * k * eps * (abs(X64).T @ (abs(X64) @ np.abs(V.astype(np.float64)))) + eps * np.abs(want)
    assert np.all(np.abs(got - want) <= bound)
    empty = sp.csr_matrix((4, 150), dtype=dtype)            # a chunk without nonzeros adds nothing
    np.testing.assert_array_equal(csr_gram_accumulate(empty, V, out0.copy()), out0)


def test_add_rows_sums_repeated_rows_in_order_and_checks_its_arguments():
    from linxling.kernels.spmm import add_rows
    rng = np.random.default_rng(6)
    rows = np.array([3, 0, 3, 3, 1])
    T = rng.standard_normal((5, 4))
    out = np.ones((5, 4))
    want = np.ones((5, 4))
    np.add.at(want, rows, T)                  # unbuffered, in index order: the same additions
    np.testing.assert_array_equal(add_rows(out, rows, T), want)
    with pytest.raises(ValueError, match="do not match"):
        add_rows(out, rows[:4], T)
    with pytest.raises(ValueError, match=r"must lie in \[0, 5\)"):
        add_rows(out, np.array([0, 1, 2, 3, 5]), T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_sumsq_matches_bincount(dtype):
    from linxling.kernels.spmm import csr_column_sumsq, csr_column_sumsq_reference
    X = sp.random(3_000, 4_000, density=0.1, format="csr", dtype=dtype, random_state=0)     # 1.2M nonzeros
    X.data -= dtype(0.5)
    assert X.nnz >= 1_000_000                       # the parallel kernel, not the small-input fallback
    want = csr_column_sumsq_reference(X)
    got = csr_column_sumsq(X)
    assert got.dtype == np.float64
    # float64 sums of the same squares in another order: rounding of about nnz_j * eps only
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    np.testing.assert_allclose(want, np.asarray(X.multiply(X).sum(axis=0), dtype=np.float64).ravel(),
                               rtol=1e-4 if dtype == np.float32 else 1e-12)
    small = X[:10]
    np.testing.assert_array_equal(csr_column_sumsq(small), csr_column_sumsq_reference(small))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_sums_in_float64_match_bincount(dtype):
    """Cr5's column means: float64 sums whatever the dtype (the parallel kernel against
    np.bincount, to float64 rounding); SciPy's float32 sums are further off."""
    from linxling.kernels.spmm import csr_column_sums, csr_column_sums_reference
    X = sp.random(3_000, 4_000, density=0.1, format="csr", dtype=dtype, random_state=1)
    X.data -= dtype(0.25)
    assert X.nnz >= 1_000_000
    want = csr_column_sums_reference(X)
    got = csr_column_sums(X)
    assert got.dtype == np.float64
    abs_sum = np.bincount(X.indices, np.abs(X.data.astype(np.float64)), minlength=X.shape[1])
    assert np.all(np.abs(got - want) <= 4 * np.finfo(np.float64).eps * np.sqrt(X.nnz) * abs_sum)
    exact = X.astype(np.float64).sum(axis=0).A1
    assert np.all(np.abs(want - exact) <= 4 * np.finfo(np.float64).eps * np.sqrt(X.nnz) * abs_sum)
    small = X[:10]                                  # one part: the reference's order
    np.testing.assert_allclose(csr_column_sums(small), csr_column_sums_reference(small), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_csr_column_stats_matches_bincount_reference(dtype):
    """The one-pass statistics of a streamed chunk against NumPy's bincount: the sums to float64
    rounding, the largest value and the non-finite count exactly; the same bits on 1 and 2
    threads (fixed parts); small chunks go to the reference."""
    import numba
    rng = np.random.default_rng(4)
    X = sp.random(20_000, 3_000, density=0.03, format="csr", dtype=dtype, random_state=rng)
    X.data -= dtype(0.5)
    assert X.nnz >= 1_000_000
    s_ref, q_ref, mx_ref, bad_ref = spmm.csr_column_stats_reference(X)
    before = numba.get_num_threads()
    runs = []
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            runs.append(spmm.csr_column_stats(X))
    finally:
        numba.set_num_threads(before)
    for s, q, mx, bad in runs:
        np.testing.assert_array_equal(s, runs[0][0])
        np.testing.assert_array_equal(q, runs[0][1])
        abs_sum = np.bincount(X.indices, np.abs(X.data.astype(np.float64)), minlength=X.shape[1])
        bound = 4 * np.finfo(np.float64).eps * np.sqrt(X.nnz) * abs_sum
        assert np.all(np.abs(s - s_ref) <= bound)
        np.testing.assert_allclose(q, q_ref, rtol=1e-12)
        assert (mx, bad) == (mx_ref, bad_ref) == (float(np.abs(X.data).max()), 0)
    Y = X.copy()
    Y.data[[5, 77, 12_345]] = [np.nan, np.inf, -np.inf]
    got, want = spmm.csr_column_stats(Y), spmm.csr_column_stats_reference(Y)
    assert got[3] == want[3] == 3 and got[2] == want[2]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    small = X[:100]
    for a, b in zip(spmm.csr_column_stats(small), spmm.csr_column_stats_reference(small), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 7, 300_000])
def test_value_stats_match_numpy(dtype, n):
    """The input checks' one pass over the values (largest |value| over the finite ones, non-finite
    and negative counts) against NumPy, on 1 and 2 threads, in one part and in several."""
    import numba
    rng = np.random.default_rng(n)
    d = (rng.standard_normal(n) * 3).astype(dtype)
    if n:
        d[rng.integers(0, n, 3)] = [np.nan, np.inf, -np.inf]
        d[rng.integers(0, n)] = dtype(-1e30 if dtype == np.float32 else -1e300)    # the largest
    before = numba.get_num_threads()
    try:
        runs = []
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            runs.append(spmm.value_stats(d))
    finally:
        numba.set_num_threads(before)
    want = spmm.value_stats_reference(d)
    finite = d[np.isfinite(d)]
    assert want == ((float(np.abs(finite).max()) if finite.size else 0.0), d.size - finite.size,
                    int(np.sum(finite < 0)))
    assert all(r == want for r in runs)
    ints = np.array([3, -7, 2])
    assert spmm.value_stats(ints) == spmm.value_stats_reference(ints) == (7.0, 0, 1)


def test_value_stats_of_a_few_values_launch_no_parallel_kernel(monkeypatch):
    """The values of a few documents (a transform's input check) are scanned by NumPy, not by the
    parallel kernel, whose launch waits for every numba thread (32 ms on a loaded 2-core machine
    for 20 values); larger arrays still take the kernel. The results are the same."""
    d = np.array([0.5, -2.0, np.inf, 1.0], dtype=np.float32)
    big = np.tile(d, spmm._SCAN_MIN)                    # 4 x _SCAN_MIN values: several parts
    want_big = spmm.value_stats(big)
    calls = []
    kernel = spmm._value_stats_parts
    monkeypatch.setattr(spmm, "_value_stats_parts", lambda *a: (calls.append(1), kernel(*a)))
    assert spmm.value_stats(d) == (2.0, 1, 1) and not calls
    one_part = big[: 2 * spmm._SCAN_MIN - 1]
    assert spmm.value_stats(one_part) == spmm.value_stats_reference(one_part) and not calls
    assert spmm.value_stats(big) == want_big == spmm.value_stats_reference(big) and calls


@pytest.mark.parametrize("n_rows", [1, 50, 200_000])
def test_canonical_format_check_agrees_with_scipy(n_rows):
    """csr_has_canonical_format against SciPy's own test: sorted rows, an unsorted row, a
    duplicate, in the first, a middle and the last row; the flag is set on a canonical matrix."""
    rng = np.random.default_rng(n_rows)
    X = sp.random(n_rows, 400, density=0.02, format="csr", random_state=rng)
    X.sum_duplicates()
    fresh = sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape)
    assert spmm.csr_has_canonical_format(fresh) and fresh.has_canonical_format
    long_rows = np.flatnonzero(np.diff(X.indptr) >= 2)
    for row in {int(long_rows[0]), int(long_rows[len(long_rows) // 2]), int(long_rows[-1])}:
        for how in ("swap", "duplicate"):
            idx = X.indices.copy()
            s = X.indptr[row]
            if how == "swap":
                idx[s], idx[s + 1] = idx[s + 1], idx[s]
            else:
                idx[s + 1] = idx[s]
            Y = sp.csr_matrix((X.data.copy(), idx, X.indptr.copy()), shape=X.shape)
            want = sp.csr_matrix((X.data.copy(), idx.copy(), X.indptr.copy()), shape=X.shape).has_canonical_format
            assert spmm.csr_has_canonical_format(Y) is False is want


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_transpose_equals_scipys_array_by_array(dtype, threads, monkeypatch):
    import numba

    from linxling.kernels.spmm import csr_transpose_reference
    monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)      # force the threaded path
    rng = np.random.default_rng(5)
    X = sp.random(400, 60, density=0.2, format="lil", random_state=2, dtype=dtype)
    X[17] = 0                                               # an empty row
    X[:, 9] = 0                                             # an empty column
    X = sp.csr_matrix(X)
    assert X[17].nnz == 0 and X[:, 9].nnz == 0
    # rows with unsorted indices and a duplicate entry: kept as they are, in row order per column
    Y = sp.csr_matrix((np.r_[X.data, dtype(1.5), dtype(2.5)], np.r_[X.indices, 3, 3],
                       np.r_[X.indptr, X.indptr[-1] + 2]), shape=(401, 60))
    perm = rng.permutation(Y.indptr[5 + 1] - Y.indptr[5]) + Y.indptr[5]
    Y.indices[Y.indptr[5]:Y.indptr[6]] = Y.indices[perm].copy()
    Y.data[Y.indptr[5]:Y.indptr[6]] = Y.data[perm].copy()
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        wide = sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)), shape=X.shape)
        for M in (X, Y, wide, sp.csr_matrix((0, 5), dtype=dtype), sp.csr_matrix((3, 4), dtype=dtype)):
            got, want = csr_transpose(M), csr_transpose_reference(M)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert got.indices.dtype == want.indices.dtype and got.indptr.dtype == want.indptr.dtype
            for name in ("indptr", "indices", "data"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    finally:
        numba.set_num_threads(before)


def _frequency_ordered(dtype, n=400, p=300, seed=21):
    """Rows in frequency order (the transpose of a corpus whose vocabulary is sorted by
    frequency): row i holds about n / (i + 1) nonzeros, the first rows most of them."""
    rng = np.random.default_rng(seed)
    rows = [np.sort(rng.choice(p, size=min(p, max(1, int(3 * p / (i + 1)))), replace=False)) for i in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    X = sp.csr_matrix((rng.standard_normal(indptr[-1]).astype(dtype), np.concatenate(rows), indptr), shape=(n, p))
    return X, rng


def test_thread_runs_balance_nonzeros_and_leave_the_sums_unchanged():
    """The products give each thread a run of row chunks with about equal nonzeros
    (:func:`_thread_groups`); which thread computes a row never changes its sums, so the
    products are bitwise the same for any split, the column dots included."""
    from linxling.kernels.spmm import _rows_matmat, _thread_groups, _tiled_rows, _tiled_rows_mapped
    for dtype in (np.float32, np.float64):
        X, rng = _frequency_ordered(dtype)
        starts, ends = X.indptr[:-1], X.indptr[1:]
        lens = np.diff(X.indptr)
        assert lens[: len(lens) // 2].sum() > 4 * lens[len(lens) // 2:].sum()     # equal rows: unequal work
        for chunk in (1, 8, 64):
            n_chunks = -(-X.shape[0] // chunk)
            per_chunk = np.add.reduceat(lens, np.arange(0, X.shape[0], chunk))
            for g in (1, 2, 3, 7):
                b = _thread_groups(starts, ends, chunk, g)
                assert b[0] == 0 and b[-1] == n_chunks and np.all(np.diff(b) >= 0)
                assert len(b) == min(g, n_chunks) + 1
                work = np.add.reduceat(per_chunk, b[:-1]) * (np.diff(b) > 0)
                # each run within one chunk's nonzeros of its share (the runs end at chunk ends)
                assert np.all(np.abs(np.cumsum(work)[:-1] - lens.sum() * np.arange(1, len(b) - 1) / (len(b) - 1))
                              <= per_chunk.max()), (chunk, g, b)
        V = rng.standard_normal((X.shape[1], 6)).astype(dtype)
        P = rng.standard_normal((X.shape[0], 6)).astype(dtype)
        colmap = rng.permutation(X.shape[1] + 5)[:X.shape[1]]
        W = rng.standard_normal((X.shape[1] + 5, 6)).astype(dtype)
        outs = []
        for g in (1, 2, 5):
            out = np.empty((X.shape[0], 6), dtype=dtype)
            part = np.empty((-(-X.shape[0] // 8), 6))
            _tiled_rows(starts, ends, X.indices, X.data, V, out, 2, dtype(0.5), P, part, 8, 40,
                        _thread_groups(starts, ends, 8, g))
            mapped = np.empty_like(out)
            _tiled_rows_mapped(starts, ends, X.indices, X.data, colmap, W, mapped, False, 8, 40,
                               np.empty((40, 6), dtype), _thread_groups(starts, ends, 8, g))
            rows = np.empty_like(out)
            _rows_matmat(starts, ends, X.indices, X.data, colmap, W, rows, False, _thread_groups(starts, ends, 1, g))
            outs.append((out, part, mapped, rows))
        for got in outs[1:]:
            for a, b in zip(got, outs[0], strict=True):
                np.testing.assert_array_equal(a, b)
        ref = 0.5 * P + X @ V
        tol = 1e-4 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(outs[0][0], ref, rtol=tol, atol=tol)
        np.testing.assert_allclose(outs[0][1].sum(axis=0), (P.astype(np.float64) * outs[0][0]).sum(axis=0),
                                   rtol=tol)
        np.testing.assert_allclose(outs[0][2], X @ W[colmap], rtol=tol, atol=tol)
        np.testing.assert_array_equal(outs[0][3], outs[0][2])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 29), max_size=60), st.sampled_from([np.int32, np.int64]))
def test_used_columns_and_renumbering(idx, dtype):
    """The shared column compaction (Cr5's transform, WMF's exact solves): the sorted distinct
    columns, and indices renumbered into them keeping order, duplicates and dtype."""
    from linxling._sparse import renumbered, used_columns
    indices = np.array(idx, dtype=dtype)
    cols = used_columns(indices, 30)
    np.testing.assert_array_equal(cols, sorted(set(idx)))
    new = renumbered(indices, cols, 30)
    assert new.dtype == indices.dtype
    np.testing.assert_array_equal(cols[new], indices)
