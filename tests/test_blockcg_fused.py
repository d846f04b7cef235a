"""The fused Jacobi block CG and the in-place rank-one update against their plain references."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from linxling._linop import MatrixOperator
from linxling.kernels import dense
from linxling.kernels.dense import add_outer, add_outer_reference
from linxling.operators.gram import Gram, GramBlockInverse
from linxling.solvers import ConvergenceWarning, block_cg
from linxling.solvers.cg import jacobi_block_cg


def _problem(dtype, n_rows=600, p=150, m=12, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, p, density=0.05, format="csr", random_state=seed, dtype=dtype)
    G = Gram(X, 0.5)
    B = (rng.standard_normal((p, m)) * np.exp(rng.standard_normal(m))).astype(dtype)
    B[:, 3] = 0.0                              # converged before the first iteration
    return X, G, G.diagonal(), B


@pytest.mark.parametrize("fused", [False, True])
def test_same_iteration_as_block_cg_in_float64(fused):
    """Column by column the same CG as block_cg with M = R / d: iterates agree to rounding and
    every column stops at the same iteration (the columns converge at different times, so the
    packing of the active block is exercised)."""
    X, G, d, B = _problem(np.float64)
    ref = block_cg(G, B, rtol=1e-8, M=lambda R: R / d[:, None])
    got = jacobi_block_cg(G, B, d, rtol=1e-8, gram=G.fused_parts() if fused else None)
    assert got.n_iter == ref.n_iter and got.converged.all() and ref.converged.all()
    assert got.info["fused"] is fused
    np.testing.assert_allclose(got.x, ref.x, rtol=1e-9, atol=1e-12 * np.abs(ref.x).max())
    # residual histories: equal in the first iterations; later, rounding (a different summation
    # order) is amplified by CG's loss of orthogonality (measured: 6e-6 ||b|| apart at iteration
    # 17 of 26 on this problem) while both still stop at the same iteration with the same x
    bnorm = np.linalg.norm(B, axis=0)
    assert np.all(np.abs(got.residual_norms[:5] - ref.residual_norms[:5]) <= 1e-10 * bnorm)
    # the iterations at which each column stopped (its residual history stops changing)
    stops_ref = (np.diff(ref.residual_norms, axis=0) != 0).sum(axis=0)
    stops_got = (np.diff(got.residual_norms, axis=0) != 0).sum(axis=0)
    np.testing.assert_array_equal(stops_got, stops_ref)
    assert len(set(stops_ref.tolist())) > 2
    x_true = np.linalg.solve(X.T @ X + 0.5 * np.eye(X.shape[1]), B)
    rel = np.linalg.norm(x_true - got.x) / np.linalg.norm(x_true)
    assert rel < 1e-5


def test_float32_meets_tolerance_and_counts_applications():
    X, G, d, B = _problem(np.float32)
    G.reset_counters()
    got = jacobi_block_cg(G, B, d, rtol=1e-3, gram=G.fused_parts())
    assert got.x.dtype == np.float32 and got.converged.all()
    A = (X.T @ X).toarray().astype(np.float64) + 0.5 * np.eye(X.shape[1])
    res = np.linalg.norm(A @ got.x.astype(np.float64) - B, axis=0)
    assert np.all(res <= 1e-3 * np.linalg.norm(B.astype(np.float64), axis=0) * 1.01 + 1e-6)
    assert G.n_matmat == got.n_iter and got.info["n_matvec"] == G.n_matvec_equiv


def test_warm_start_breakdown_and_maxiter():
    X, G, d, B = _problem(np.float64)
    exact = np.linalg.solve((X.T @ X).toarray() + 0.5 * np.eye(X.shape[1]), B)
    warm = jacobi_block_cg(G, B, d, X0=exact, rtol=1e-8)
    assert warm.n_iter == 0 and warm.converged.all()
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        short = jacobi_block_cg(G, B, d, rtol=1e-14, maxiter=2)
    assert short.n_iter == 2 and not short.converged.all() and short.converged[3]
    # an indefinite matrix: p^T A p <= 0 stops the column (breakdown) instead of dividing by it
    A = np.diag(np.r_[np.ones(5), -np.ones(5)])
    b = np.ones((10, 2))
    with pytest.warns(ConvergenceWarning, match="breakdown"):
        bad = jacobi_block_cg(MatrixOperator(A, symmetric=True), b, np.ones(10), rtol=1e-10)
    assert bad.info["breakdown"].all() and np.isfinite(bad.x).all()


def test_bad_shapes_are_named():
    X, G, d, B = _problem(np.float64)
    with pytest.raises(ValueError, match="B must have shape"):
        jacobi_block_cg(G, B[:-1], d)
    with pytest.raises(ValueError, match="d must have shape"):
        jacobi_block_cg(G, B, d[:-1])


def test_gram_block_inverse_fused_matches_plain():
    X, _, _, B = _problem(np.float64, n_rows=800, p=200)
    fused = GramBlockInverse(X, 0.5, method="cg", cg_rtol=1e-9, fused_cg=True)
    plain = GramBlockInverse(X, 0.5, method="cg", cg_rtol=1e-9, fused_cg=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        a, b = fused.solve(B), plain.solve(B)
    assert a.info["fused"] and "fused" not in b.info
    # both meet rtol = 1e-9, so they differ by at most 2 cond(A) rtol ||x|| (+ rounding)
    A = (X.T @ X).toarray() + 0.5 * np.eye(X.shape[1])
    bound = 2 * np.linalg.cond(A) * 1e-9 * np.linalg.norm(b.x, axis=0) * 1.01
    assert np.all(np.linalg.norm(a.x - b.x, axis=0) <= bound)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_outer_matches_reference(dtype, monkeypatch):
    rng = np.random.default_rng(1)
    for size, threshold in ((50, 0), (50, dense._MIN_PARALLEL)):
        monkeypatch.setattr(dense, "_MIN_PARALLEL", threshold)
        Y = rng.standard_normal((size, 7)).astype(dtype)
        a, b = rng.standard_normal(size).astype(dtype), rng.standard_normal(7).astype(dtype)
        want = add_outer_reference(Y.copy(), a, b, -2.5)
        got = add_outer(Y, a, b, -2.5)
        assert got is Y and got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14, atol=1e-6)
    view = np.zeros((8, 6), dtype=dtype)[:, ::2]          # not contiguous: the NumPy path, same result
    np.testing.assert_allclose(add_outer(view, np.ones(8, dtype), np.arange(3, dtype=dtype)),
                               np.tile(np.arange(3), (8, 1)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_scaled_is_bitwise_the_numpy_expression(dtype, monkeypatch):
    rng = np.random.default_rng(3)
    for threshold in (0, dense._MIN_PARALLEL):
        monkeypatch.setattr(dense, "_MIN_PARALLEL", threshold)
        Y, X = rng.standard_normal((300, 7)).astype(dtype), rng.standard_normal((300, 7)).astype(dtype)
        want = dense.add_scaled_reference(Y.copy(), X, 0.37)
        got = dense.add_scaled(Y, X, 0.37)
        assert got is Y and got.dtype == dtype
        np.testing.assert_array_equal(got, want)
    view = np.zeros((8, 6), dtype=dtype)[:, ::2]          # not contiguous: the NumPy path
    np.testing.assert_array_equal(dense.add_scaled(view, np.ones((8, 3), dtype), 2.0), np.full((8, 3), 2.0))


def test_dense_block_float32_factor_only_at_loose_tolerance():
    rng = np.random.default_rng(2)
    X = sp.random(400, 120, density=0.1, format="csr", random_state=3)
    R = rng.standard_normal((120, 5))
    A = (X.T @ X).toarray() + 0.5 * np.eye(120)
    loose = GramBlockInverse(X, 0.5, method="dense", cg_rtol=1e-2)
    tight = GramBlockInverse(X, 0.5, method="dense", cg_rtol=1e-8)
    off = GramBlockInverse(X, 0.5, method="dense", cg_rtol=1e-2, mixed_precision=False)
    assert loose.factor_dtype_ == np.float32 and loose.mixed_precision_
    assert tight.factor_dtype_ == np.float64 and not tight.mixed_precision_
    assert off.factor_dtype_ == np.float64
    for inv, tol in ((loose, 1e-4), (tight, 1e-12), (off, 1e-12)):
        Z = inv.matmat(R)
        assert Z.dtype == np.float64
        rel = np.linalg.norm(A @ Z - R, axis=0) / np.linalg.norm(R, axis=0)
        assert rel.max() <= tol
