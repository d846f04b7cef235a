"""O'Leary's block CG (one Krylov space for all columns) against a dense solve and the column-wise
CG, and the rule by which GramBlockInverse chooses between them."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from linxling import Cr5
from linxling._linop import MatrixOperator
from linxling.operators.gram import Gram, GramBlockInverse
from linxling.solvers import ConvergenceWarning
from linxling.solvers.cg import jacobi_block_cg, krylov_block_cg


def _problem(dtype, n_rows=600, p=150, m=12, seed=0, density=0.05):
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, p, density=density, format="csr", random_state=seed, dtype=dtype)
    G = Gram(X, 0.5)
    B = (rng.standard_normal((p, m)) * np.exp(rng.standard_normal(m))).astype(dtype)
    A = (X.T @ X).toarray().astype(np.float64) + 0.5 * np.eye(p)
    return X, G, G.diagonal(), B, A


def _rel_residuals(A, x, B):
    B64 = B.astype(np.float64)
    return np.linalg.norm(A @ x.astype(np.float64) - B64, axis=0) / np.linalg.norm(B64, axis=0)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-10), (np.float32, 1e-3)])
def test_meets_tolerance_against_dense_solve(dtype, rtol, fused):
    X, G, d, B, A = _problem(dtype)
    G.reset_counters()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        got = krylov_block_cg(G, B, d, rtol=rtol, gram=G.fused_parts() if fused else None)
    assert got.x.dtype == dtype and got.converged.all() and got.info["fused"] is fused
    # the stopping test is on the recursively updated residual; the true residual is within
    # rounding of it: (n_iter + 1) eps cond(A) (the CG bound for the gap), far below rtol here
    cond = np.linalg.cond(A)
    slack = (got.n_iter + 1) * np.finfo(dtype).eps * cond
    assert np.all(_rel_residuals(A, got.x, B) <= rtol + slack)
    x_true = np.linalg.solve(A, B.astype(np.float64))
    err = np.linalg.norm(got.x - x_true, axis=0) / np.linalg.norm(x_true, axis=0)
    assert np.all(err <= cond * (rtol + slack))
    # one product of the whole block per iteration, counted on the operator
    w = got.info["width"]
    assert G.n_matmat == got.n_iter and got.info["n_matvec"] == sum(w) and w[0] == B.shape[1]
    assert len(got.info["rank"]) == got.n_iter and all(r <= k for r, k in zip(got.info["rank"], w, strict=True))
    assert got.residual_norms.shape == (got.n_iter + 1, B.shape[1])


def test_fewer_iterations_than_column_cg_and_same_solution():
    """Shared directions: on a problem whose columns share spectral content, block CG needs fewer
    iterations than one CG per column; both meet rtol, so they agree within 2 cond(A) rtol."""
    X, G, d, B, A = _problem(np.float64, n_rows=2000, p=200, m=40, density=0.1)
    block = krylov_block_cg(G, B, d, rtol=1e-8, gram=G.fused_parts())
    cols = jacobi_block_cg(G, B, d, rtol=1e-8, gram=G.fused_parts())
    assert block.converged.all() and cols.converged.all()
    assert block.n_iter < cols.n_iter
    bound = 2 * np.linalg.cond(A) * 1e-8 * np.linalg.norm(cols.x, axis=0) * 1.01
    assert np.all(np.linalg.norm(block.x - cols.x, axis=0) <= bound)


def test_rank_deficient_block_shrinks_instead_of_breaking_down():
    """Repeated and zero columns make PᵀAP singular: those directions are dropped, the others
    converge, and the repeated columns get the same solution."""
    X, G, d, B, A = _problem(np.float64)
    B[:, 1] = B[:, 0]
    B[:, 2] = 2.0 * B[:, 0]
    B[:, 3] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        got = krylov_block_cg(G, B, d, rtol=1e-10)
    assert got.converged.all() and max(got.info["rank"]) <= B.shape[1] - 3
    np.testing.assert_array_equal(got.x[:, 3], 0.0)
    np.testing.assert_allclose(got.x[:, 1], got.x[:, 0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(got.x[:, 2], 2 * got.x[:, 0], rtol=1e-8, atol=1e-12)
    assert np.all(_rel_residuals(A, got.x[:, [0, 1, 2, 4]], B[:, [0, 1, 2, 4]]) <= 1e-8)


def test_warm_start_maxiter_breakdown_and_bad_input():
    X, G, d, B, A = _problem(np.float64)
    exact = np.linalg.solve(A, B)
    warm = krylov_block_cg(G, B, d, X0=exact, rtol=1e-8)
    assert warm.n_iter == 0 and warm.converged.all()
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        short = krylov_block_cg(G, B, d, rtol=1e-14, maxiter=2)
    assert short.n_iter == 2 and not short.converged.all()
    # an indefinite matrix with PᵀAP = 0: no direction is left, the solve stops (breakdown)
    Aind = np.diag(np.r_[np.ones(5), -np.ones(5)])
    with pytest.warns(ConvergenceWarning, match="breakdown"):
        bad = krylov_block_cg(MatrixOperator(Aind, symmetric=True), np.ones((10, 2)), np.ones(10), rtol=1e-10)
    assert bad.info["breakdown"].all() and np.isfinite(bad.x).all()
    with pytest.raises(ValueError, match="B must have shape"):
        krylov_block_cg(G, B[:-1], d)
    with pytest.raises(ValueError, match="d must have shape"):
        krylov_block_cg(G, B, d[:-1])
    with pytest.raises(ValueError, match="d must be positive"):
        krylov_block_cg(G, B, -d)


def test_gram_block_inverse_chooses_by_nonzeros_per_feature_and_column():
    X, _, _, B, A = _problem(np.float64, n_rows=800, p=100, m=10, density=0.2)    # nnz 16,000
    inv = GramBlockInverse(X, 0.5, method="cg", cg_rtol=1e-9)
    ratio = GramBlockInverse.KRYLOV_BLOCK_RATIO
    m_edge = int(X.nnz / (ratio * X.shape[1]))          # the widest block that still runs block CG
    assert inv.krylov_for(m_edge) == "block" and inv.krylov_for(m_edge + 1) == "columns"
    assert inv.krylov_for(1) == "columns"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = inv.solve(B)
    assert res.info["krylov"] == "block" and inv.cg_krylov_used_ == ["block"]
    assert np.all(_rel_residuals(A, res.x, B) <= 1e-9 * 1.01)
    forced = GramBlockInverse(X, 0.5, method="cg", cg_rtol=1e-9, cg_krylov="columns")
    assert forced.krylov_for(2) == "columns" and forced.solve(B).info["krylov"] == "columns"
    with pytest.raises(ValueError, match="cg_krylov must be one of"):
        GramBlockInverse(X, 0.5, method="cg", cg_krylov="shared")


@pytest.mark.parametrize("krylov", ["columns", "block"])
def test_cr5_with_either_krylov_matches_the_dense_oracle(krylov):
    from tests.test_cr5 import TIGHT, dense_cr5_oracle, embedded_cosines, random_problem

    rng = np.random.default_rng(3)
    blocks, concepts = random_problem(rng, n_langs=2)
    test = {lang: sp.random(15, X.shape[1], density=0.3, random_state=rng, format="csr")
            for lang, X in blocks.items()}
    r, alpha = 6, 0.5
    Phi, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    model = Cr5(n_components=r, alpha=alpha, block_method="cg", cg_krylov=krylov, eig_method="arpack",
                random_state=0, **TIGHT).fit_matrices(blocks, concepts)
    used = {k for b in model.convergence_["blocks"].values() for k in b["cg_krylov"]}
    assert used == {krylov}
    ours = embedded_cosines(model.transform_matrix, test)
    ref = embedded_cosines(lambda X, lang: X @ Phi[lang].T, test)
    np.testing.assert_allclose(ours, ref, atol=1e-6)
    np.testing.assert_allclose(model.singular_values_, sv, rtol=1e-6)
    with pytest.raises(ValueError, match=r"'cg_krylov' parameter of Cr5 must be a str among \{[a-z', ]+\}\. "
                                         r"Got 'shared'"):
        Cr5(cg_krylov="shared").fit_matrices(blocks, concepts)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_columns_packed_in_place_as_the_plain_copy(dtype):
    from linxling.solvers.cg import _pack_columns, _pack_rows_py
    rng = np.random.default_rng(3)
    for n, w, keep in [(7, 5, [0, 2, 4]), (300, 40, list(range(1, 40, 3))), (50, 6, [5]), (9, 4, [0, 1, 2, 3])]:
        A = rng.standard_normal((n, w)).astype(dtype)
        want = A[:, keep].copy()
        base = A.reshape(-1)
        got = _pack_columns(A, np.array(keep))
        assert got.flags.c_contiguous and np.shares_memory(got, base)    # in A's own memory
        np.testing.assert_array_equal(got, want)
        flat = rng.standard_normal(n * w).astype(dtype)                 # the plain loop, uncompiled
        want = flat.reshape(n, w)[:, keep].copy()
        _pack_rows_py(flat, n, w, np.array(keep, dtype=np.int64))
        np.testing.assert_array_equal(flat[:n * len(keep)].reshape(n, len(keep)), want)


def test_buffers_reused_while_columns_leave_give_the_plain_iterates():
    # right-hand sides of very different scales converge at different iterations, so the block
    # narrows several times (packed in place, directions in the two buffers in turn); each
    # column meets its tolerance against the dense operator, on the fused and the operator path
    X, G, d, B, A = _problem(np.float64, m=16)
    B = B * np.logspace(-3, 3, 16)
    res = krylov_block_cg(G, B, d, rtol=1e-9, gram=G.fused_parts())
    plain = krylov_block_cg(G, B, d, rtol=1e-9)
    assert len(set(res.info["width"])) > 2 and res.converged.all()
    assert len(set(plain.info["width"])) > 2 and plain.converged.all()
    # the solver's own residuals, recomputed densely: rtol plus the recurrence's rounding drift
    assert _rel_residuals(A, res.x, B).max() <= 1e-8
    assert _rel_residuals(A, plain.x, B).max() <= 1e-8


def test_padded_width_whole_lines_when_they_cost_at_most_an_eighth():
    from linxling.kernels.spmm import ROW_ALIGN, aligned_empty, on_lines, padded_width
    assert ROW_ALIGN == 64
    f32 = [padded_width(m, np.float32) for m in range(1, 400)]
    f64 = [padded_width(m, np.float64) for m in range(1, 400)]
    assert all(w >= m for m, w in zip(range(1, 400), f32, strict=True))
    assert all(np.diff(f32) >= 0) and all(np.diff(f64) >= 0)
    for m, want in [(110, 112), (165, 176), (128, 128), (330, 336), (97, 97), (70, 70), (150, 160), (8, 8)]:
        assert padded_width(m, np.float32) == want
    for m, want in [(47, 48), (20, 20), (64, 64), (165, 168)]:
        assert padded_width(m, np.float64) == want
    for dt in (np.float32, np.float64):
        buf = aligned_empty(1000, dt)
        assert buf.dtype == dt and buf.size == 1000 and buf.ctypes.data % ROW_ALIGN == 0
        assert on_lines(buf[:10 * (ROW_ALIGN // buf.itemsize)].reshape(10, -1))
        assert not on_lines(buf[:10 * 5].reshape(10, 5))
    assert aligned_empty(0, np.float32).size == 0


@pytest.mark.parametrize("dtype,w", [(np.float32, 110), (np.float32, 32), (np.float64, 47), (np.float64, 13)])
def test_fused_product_on_whole_lines_is_bitwise_the_plain_kernels(dtype, w):
    """Q = Xᵀ(X P) + alpha P with the rows padded to whole cache lines (or not: 32 and 13
    columns) equals the same kernels on the unpadded block bit for bit, and the dense product to
    rounding; the returned buffers are the two given (Q in the one returned first)."""
    from linxling.kernels.spmm import aligned_empty, padded_width, tiled_rows_matmat
    from linxling.solvers.cg import _fused_gram_product
    rng = np.random.default_rng(5)
    X = sp.random(700, 90, density=0.08, format="csr", random_state=5, dtype=dtype)
    XT = X.T.tocsr()
    P = rng.standard_normal((90, w)).astype(dtype)
    alpha = dtype(0.5)
    T0, Q0 = np.empty((700, w), dtype=dtype), np.empty((90, w), dtype=dtype)
    tiled_rows_matmat(X.indptr[:-1], X.indptr[1:], X.indices, X.data, P, T0)
    tiled_rows_matmat(XT.indptr[:-1], XT.indptr[1:], XT.indices, XT.data, T0, Q0, alpha=alpha, P=P)
    wp = padded_width(w, dtype)
    T_buf, q_buf, spare = (aligned_empty(700 * wp, dtype), aligned_empty(90 * wp, dtype),
                           aligned_empty(90 * wp, dtype))
    q_buf[:] = np.nan                                   # nothing of a buffer's old content leaks
    spare[:] = np.nan
    Q, q_out, spare_out = _fused_gram_product(X, XT, alpha, P, T_buf, q_buf, spare)
    np.testing.assert_array_equal(Q, Q0)
    assert Q.shape == (90, w) and Q.flags.c_contiguous and np.shares_memory(Q, q_out)
    assert {id(q_out), id(spare_out)} == {id(q_buf), id(spare)}
    assert (q_out is spare) == (wp != w)
    dense = X.T.toarray().astype(np.float64) @ (X.toarray().astype(np.float64) @ P) + 0.5 * P
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(Q, dense, rtol=tol, atol=tol * np.abs(dense).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_copy_columns_is_the_plain_slice_copy(dtype):
    """The row-parallel copy into rows padded with zeros and back out of them equals NumPy's
    slice assignments (its plain reference), over any old content of the target."""
    from linxling.kernels.blockcg import copy_columns
    rng = np.random.default_rng(9)
    A = rng.standard_normal((37, 11)).astype(dtype)
    wide = np.full((37, 16), np.nan, dtype=dtype)
    copy_columns(A, wide)
    want = np.zeros((37, 16), dtype=dtype)
    want[:, :11] = A
    np.testing.assert_array_equal(wide, want)
    narrow = np.full((37, 11), np.nan, dtype=dtype)
    copy_columns(wide, narrow)
    np.testing.assert_array_equal(narrow, A)


def test_warmup_takes_the_padded_product_in_both_dtypes(monkeypatch):
    """`linxling warmup` fitted nothing wide enough for the inner block CG to pad its fused
    product, so a machine's first Wikipedia-sized fit compiled the copies into and out of the
    padded rows (0.5-0.9 s). The warmup now runs that product in both dtypes, both copies each."""
    import linxling.kernels.blockcg as blockcg
    from linxling._warmup import _padded_block_cg
    seen = []
    real = blockcg.copy_columns

    def spy(A, B):
        seen.append((A.dtype.name, A.shape[1], B.shape[1]))
        return real(A, B)
    monkeypatch.setattr(blockcg, "copy_columns", spy)
    _padded_block_cg()
    assert {("float32", 110, 112), ("float32", 112, 110), ("float64", 55, 56), ("float64", 56, 55)} <= set(seen)
