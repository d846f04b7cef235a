"""Operators against dense NumPy references at small size, adjoint tests, dtypes, properties."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from hypothesis import given, settings
from hypothesis import strategies as st

from linxling.operators import (BlockDiagonal, CallableOperator, CenteredGram, CrossCovariance,
                                Gram, GramBlockInverse, IdentityOperator, LinearOperator,
                                MatrixOperator, WoodburyInverse, as_operator, dottest,
                                gram_nnz_estimate, woodbury_from_blocks)
from linxling.solvers import ConvergenceWarning
from _optional import CHOLMOD, HAS_CHOLMOD


def _sprand(n, p, density=0.2, seed=0, dtype=np.float64):
    X = sp.random(n, p, density=density, format="csr", random_state=seed, dtype=np.float64)
    return X.astype(dtype)


def _centred(X):
    D = X.toarray().astype(np.float64)
    return D - D.mean(axis=0)


# ---------------------------------------------------------------------- base class
class _WrongAdjoint(LinearOperator):
    def __init__(self, A):
        super().__init__(A.shape, A.dtype)
        self.A = A

    def _matmat(self, X):
        return self.A @ X

    def _rmatmat(self, Y):
        return self.A.T @ Y * 1.01


def test_base_algebra_matches_dense(rng):
    A = rng.standard_normal((6, 4))
    B = rng.standard_normal((6, 4))
    C = rng.standard_normal((4, 3))
    opA, opB, opC = MatrixOperator(A), as_operator(B), as_operator(C)
    np.testing.assert_allclose((opA + opB).to_dense(), A + B)
    np.testing.assert_allclose((opA - opB).to_dense(), A - B)
    np.testing.assert_allclose((2.5 * opA).to_dense(), 2.5 * A)
    np.testing.assert_allclose((opA * -1).to_dense(), -A)
    np.testing.assert_allclose((-opA).to_dense(), -A)
    np.testing.assert_allclose((opA / 2).to_dense(), A / 2)
    np.testing.assert_allclose((opA @ opC).to_dense(), A @ C)
    np.testing.assert_allclose(opA.T.to_dense(), A.T)
    np.testing.assert_allclose(opA.H.to_dense(), A.T)
    assert opA.T.T is opA
    for op in (opA + opB, 3 * opA, opA @ opC, opA.T, (opA @ opC).T):
        assert dottest(op, rng=1)


def test_matmul_dispatch_and_counters(rng):
    A = rng.standard_normal((5, 3))
    op = MatrixOperator(A)
    x = rng.standard_normal(3)
    X = rng.standard_normal((3, 4))
    np.testing.assert_allclose(op @ x, A @ x)
    np.testing.assert_allclose(op @ X, A @ X)
    np.testing.assert_allclose(op.matvec(x[:, None]), (A @ x)[:, None])
    np.testing.assert_allclose(op.rmatvec(np.ones(5)), A.T @ np.ones(5))
    np.testing.assert_allclose(np.ones(5) @ op, np.ones(5) @ A)      # __rmatmul__
    np.testing.assert_allclose(np.ones((2, 5)) @ op, np.ones((2, 5)) @ A)
    assert op.n_matmat == 6 and op.n_matvec_equiv == 1 + 4 + 1 + 1 + 1 + 2
    op.reset_counters()
    assert op.n_matmat == 0 and op.n_matvec_equiv == 0
    with pytest.raises(ValueError, match="expected 3"):
        op.matmat(np.ones((4, 2)))
    with pytest.raises(ValueError, match="length 4"):
        op.matvec(np.ones(4))
    assert isinstance(op @ sp.eye(3), LinearOperator)


def test_aslinearoperator_wires_matmat(rng):
    A = rng.standard_normal((5, 5))
    op = MatrixOperator(A)
    L = op.aslinearoperator()
    assert isinstance(L, spla.LinearOperator)
    X = rng.standard_normal((5, 3))
    np.testing.assert_allclose(L.matmat(X), A @ X)
    np.testing.assert_allclose(L.rmatvec(X[:, 0]), A.T @ X[:, 0])
    assert op.n_matmat == 2 and op.n_matvec_equiv == 4
    # and back
    back = as_operator(L)
    np.testing.assert_allclose(back.to_dense(), A)



def test_operator_input_checks_and_reflected_subtraction(rng):
    A = rng.standard_normal((4, 3))
    op = MatrixOperator(A)
    # was: complex input applied in silence (complex output from a "float64" operator)
    with pytest.raises(TypeError, match="real numbers"):
        op.matvec(np.ones(3) + 1j)
    with pytest.raises(TypeError, match="real numbers"):
        Gram(_sprand(10, 3), 0.5) @ (np.ones((3, 2)) + 1j)
    with pytest.raises(TypeError, match="A must hold real numbers"):
        MatrixOperator(np.eye(3) * 1j)
    # was: IdentityOperator(-1) had shape (-1, -1)
    with pytest.raises(ValueError, match="non-negative"):
        IdentityOperator(-1)
    # was: numpy's "operand 'MatrixOperator' does not support ufuncs"
    with pytest.raises(ValueError, match="3-D"):
        op @ np.ones((3, 1, 1))
    # was: TypeError for ndarray - op (ndarray + op worked)
    B = rng.standard_normal((4, 3))
    for left in (B, sp.csr_matrix(B)):
        diff = left - op
        assert isinstance(diff, LinearOperator)
        np.testing.assert_allclose(diff.to_dense(), B - A)
        np.testing.assert_allclose(diff.T.to_dense(), (B - A).T)


def test_dottest_detects_wrong_adjoint(rng):
    A = rng.standard_normal((7, 5))
    res = dottest(_WrongAdjoint(A), rng=0)
    assert not res
    passed, lhs, rhs = res
    assert passed is False and lhs != rhs
    assert dottest(MatrixOperator(A), rng=0).passed


def test_simple_operators(rng):
    I3 = IdentityOperator(3)
    np.testing.assert_array_equal(I3.to_dense(), np.eye(3))
    f = CallableOperator(lambda X: 2 * X, (3, 3), symmetric=True)
    np.testing.assert_allclose(f.to_dense(), 2 * np.eye(3))
    assert f.T is f
    np.testing.assert_allclose((f + I3).diagonal(), [3, 3, 3])


# ---------------------------------------------------------------------- Gram operators
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_centered_gram_dense_reference(dtype):
    X = _sprand(40, 12, seed=1, dtype=dtype)
    G = CenteredGram(X, alpha=0.7)
    Xc = _centred(X)
    ref = Xc.T @ Xc + 0.7 * np.eye(12)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert G.dtype == dtype and G.mean_.dtype == dtype
    D = G.to_dense()
    assert D.dtype == dtype
    np.testing.assert_allclose(D, ref, rtol=rtol, atol=rtol * np.abs(ref).max())
    np.testing.assert_allclose(G.diagonal(), np.diag(ref), rtol=rtol * 10)
    np.testing.assert_allclose(G.mean_, X.toarray().mean(0), rtol=rtol)
    assert G.n_samples == 40 and G.alpha == 0.7
    assert G.symmetric and G.T is G
    assert dottest(G, rng=2)
    V = np.ones((12, 3), dtype=dtype)
    assert G.matmat(V).dtype == dtype


def test_centered_gram_given_mean_and_uncentred_gram(rng):
    X = _sprand(30, 8, seed=3)
    mu = rng.random(8)
    G = CenteredGram(X, 0.5, mean=mu)
    D = X.toarray()
    np.testing.assert_allclose(G.to_dense(), D.T @ D - 30 * np.outer(mu, mu) + 0.5 * np.eye(8))
    np.testing.assert_allclose(Gram(X, 0.5).to_dense(), D.T @ D + 0.5 * np.eye(8))


def test_centered_gram_validates():
    X = _sprand(10, 4)
    with pytest.raises(ValueError, match="alpha"):
        CenteredGram(X, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        CenteredGram(X, -1.0)
    bad = X.toarray()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        CenteredGram(bad, 1.0)
    with pytest.raises(ValueError, match="mean must have shape"):
        CenteredGram(X, 1.0, mean=np.zeros(3))


def test_centered_gram_uses_spmm_not_column_loop():
    X = _sprand(30, 9, seed=4)
    G = CenteredGram(X, 1.0)
    calls = []

    class Spy(sp.csr_matrix):
        def __matmul__(self, other):
            calls.append(np.shape(other))
            return super().__matmul__(other)

    G.X = Spy(G.X)
    G.matmat(np.ones((9, 5)))
    assert calls == [(9, 5)]   # one SpMM with the whole block (the X^T one goes via .T)


# ---------------------------------------------------------------------- block diagonal
def test_block_diagonal_dense_reference(rng):
    mats = [rng.standard_normal((3, 2)), sp.random(4, 4, density=0.5, random_state=0),
            rng.standard_normal((1, 3))]
    ref = sp.block_diag([sp.csr_matrix(m) for m in mats]).toarray()
    for n_jobs in (1, 3):
        op = BlockDiagonal(mats, n_jobs=n_jobs)
        assert op.shape == ref.shape
        np.testing.assert_array_equal(op.offsets, [0, 2, 6, 9])
        np.testing.assert_array_equal(op.row_offsets, [0, 3, 7, 8])
        np.testing.assert_allclose(op.to_dense(), ref)
        np.testing.assert_allclose(op.T.to_dense(), ref.T)
        assert dottest(op, rng=3)
    with pytest.raises(ValueError, match="empty"):
        BlockDiagonal([])


# ---------------------------------------------------------------------- block inverses
@pytest.mark.parametrize("method", ["dense", CHOLMOD, "cg"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gram_block_inverse_methods(method, dtype):
    X = _sprand(60, 15, density=0.2, seed=5, dtype=dtype)
    inv = GramBlockInverse(X, 0.3, method=method, cg_rtol=1e-10 if dtype == np.float64 else 1e-5)
    D = X.toarray().astype(np.float64)
    ref = np.linalg.inv(D.T @ D + 0.3 * np.eye(15))
    assert inv.method_ == method and inv.reason_ == "requested"
    assert inv.dtype == dtype and inv.symmetric
    out = inv.to_dense()
    assert out.dtype == dtype
    tol = 1e-8 if dtype == np.float64 else 2e-3
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * np.abs(ref).max())
    assert dottest(inv, rng=4, rtol=1e-8)


def test_gram_block_inverse_auto_choices():
    X = _sprand(50, 20, seed=6)
    inv = GramBlockInverse(X, 1.0)          # small p, dense-ish Gram -> dense
    assert inv.method_ == "dense" and "dense_max" in inv.reason_
    # small p but a very sparse Gram -> CHOLMOD (bounded by the dense budget)
    Xv = sp.random(400, 300, density=0.003, format="csr", random_state=1)
    inv = GramBlockInverse(Xv, 1.0)
    if HAS_CHOLMOD:
        assert inv.method_ == "cholmod" and "dense budget" in inv.reason_
    else:
        assert inv.method_ in ("dense", "cg") and "linxling[cholmod]" in inv.reason_
    # very sparse Gram (density <= cholmod_max_density / 10), p above dense_max -> cholmod
    Xs = sp.random(400, 2000, density=0.001, format="csr", random_state=1)
    inv = GramBlockInverse(Xs, 1.0, dense_max=100)
    assert inv.method_ == ("cholmod" if HAS_CHOLMOD else "cg"), inv.reason_
    assert inv.nnz_gram_ is not None and inv.nnz_gram_ <= 2000 * 2000
    # p above dense_max and a Gram only moderately sparse (like text co-occurrence): fill-in is
    # unpredictable there, so block CG rather than CHOLMOD
    Xm = sp.random(400, 300, density=0.003, format="csr", random_state=1)
    inv = GramBlockInverse(Xm, 1.0, dense_max=100)
    assert inv.method_ == "cg", inv.reason_
    # dense rows -> X^T X dense -> cg
    Xd = sp.random(30, 300, density=0.5, format="csr", random_state=2)
    inv = GramBlockInverse(Xd, 1.0, dense_max=100)
    assert inv.method_ == "cg" and "not sparse enough" in inv.reason_
    # more rows than the 2,000-row sample, already too dense in the sample: the reason reports
    # the sample's count as the lower bound it is (it never exceeds the true count)
    Xl = sp.random(5000, 300, density=0.05, format="csr", random_state=3)
    inv = GramBlockInverse(Xl, 1.0, dense_max=100)
    assert inv.method_ == "cg" and "lower bound, from a sample of the rows" in inv.reason_
    assert "upper bound" not in inv.reason_
    assert inv.nnz_gram_ <= (Xl.T @ Xl).nnz
    # memory budget rules out dense even when p is small
    inv = GramBlockInverse(X, 1.0, memory_budget=10)
    assert inv.method_ != "dense"
    with pytest.raises(ValueError, match="method"):
        GramBlockInverse(X, 1.0, method="lu")


def test_gram_nnz_estimate_exact_and_bound():
    X = _sprand(40, 25, density=0.1, seed=7)
    nnz, exact = gram_nnz_estimate(X)
    assert exact and nnz == (X.T @ X).nnz
    nnz_b, exact_b = gram_nnz_estimate(X, exact_limit=0)
    assert not exact_b and nnz_b >= nnz


def test_callable_operator_checks_what_its_functions_return():
    """A function returning the wrong shape was broadcast or failed far from its cause."""
    from linxling._linop import CallableOperator
    op = CallableOperator(lambda X: np.ones((3, 1)), (3, 4), rmatmat=lambda Y: np.ones((4, Y.shape[1])))
    with pytest.raises(ValueError, match=r"matmat function returned shape \(3, 1\), expected \(3, 2\)"):
        op.matmat(np.ones((4, 2)))
    np.testing.assert_array_equal(op.rmatmat(np.ones((3, 2))), np.ones((4, 2)))
    np.testing.assert_array_equal(op.matvec(np.ones(4)), np.ones(3))      # one column: (3, 1) is right


def test_gram_block_inverse_size_arguments_are_checked():
    """A negative dense_max, memory_budget or cholmod_max_density only steered the choice of
    method; now each is named (0 stays allowed: never dense, no memory, no CHOLMOD)."""
    X = _sprand(40, 12, density=0.2, seed=3)
    for kw in ({"dense_max": -1}, {"memory_budget": -5}, {"cholmod_max_density": -0.1}, {"fill_factor": 0}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            GramBlockInverse(X, 0.1, **kw)
    assert GramBlockInverse(X, 0.1, dense_max=0, cholmod_max_density=0).method_ == "cg"
    from linxling.operators.woodbury import woodbury_from_blocks
    with pytest.raises(ValueError, match="blocks is empty"):      # was numpy's 'need at least one array'
        woodbury_from_blocks([], 0.1)


def test_gram_block_inverse_cg_solve_warm_start_and_failures():
    X = _sprand(80, 30, density=0.15, seed=8)
    inv = GramBlockInverse(X, 0.1, method="cg", cg_rtol=1e-12)
    R = np.random.default_rng(0).standard_normal((30, 3))
    res = inv.solve(R)
    assert np.all(res.converged) and res.n_iter > 0
    warm = inv.solve(R, x0=res.x)
    assert warm.n_iter <= 1
    vec = inv.solve(R[:, 0])
    assert vec.x.shape == (30,)
    assert inv.cg_iterations_ == [res.n_iter, warm.n_iter, vec.n_iter]
    assert GramBlockInverse(X, 0.1, method="dense").cg_iterations_ == []
    tight = GramBlockInverse(X, 1e-3, method="cg", cg_rtol=1e-14, cg_maxiter=2)
    with pytest.warns(ConvergenceWarning):
        tight.matmat(R)
    assert len(tight.nonconverged_) == 1
    rec = tight.nonconverged_[0]
    assert rec["n_failed"] >= 1 and rec["n_columns"] == 3 and rec["max_rel_residual"] > 1e-14


# ---------------------------------------------------------------------- Woodbury
def _lang_blocks(seed=0, dtype=np.float64):
    sizes = [(50, 12), (30, 9), (40, 7)]
    return [_sprand(n, p, density=0.25, seed=seed + i, dtype=dtype) for i, (n, p) in enumerate(sizes)]


@pytest.mark.parametrize("method", ["dense", CHOLMOD, "cg"])
def test_woodbury_matches_dense_inverse_of_centred_gram(method):
    blocks = _lang_blocks()
    alpha = 0.4
    X = sp.block_diag(blocks, format="csr")
    Xc = _centred(X)
    ref = np.linalg.inv(Xc.T @ Xc + alpha * np.eye(X.shape[1]))
    W = woodbury_from_blocks(blocks, alpha, method=method, cg_rtol=1e-12)
    np.testing.assert_allclose(W.to_dense(), ref, rtol=1e-7, atol=1e-9 * np.abs(ref).max())
    # explicit construction with a list and with a BlockDiagonal
    invs = [GramBlockInverse(B, alpha, method=method, cg_rtol=1e-12) for B in blocks]
    mu = np.asarray(X.mean(axis=0)).ravel()
    for arg in (invs, BlockDiagonal(invs)):
        W2 = WoodburyInverse(arg, mu, X.shape[0])
        np.testing.assert_allclose(W2.to_dense(), ref, rtol=1e-7, atol=1e-9 * np.abs(ref).max())
        assert W2.c_ > 0 and 0 < W2.denominator_ <= 1
        np.testing.assert_allclose(W2.g_, np.linalg.solve(
            sp.block_diag([(B.T @ B).toarray() + alpha * np.eye(B.shape[1]) for B in blocks]).toarray(), mu))
    # inverse of the CenteredGram operator
    G = CenteredGram(X, alpha)
    E = W.matmat(G.matmat(np.eye(X.shape[1])))
    np.testing.assert_allclose(E, np.eye(X.shape[1]), atol=1e-7)
    assert dottest(W, rng=5, rtol=1e-8)


def test_woodbury_float32():
    blocks = _lang_blocks(dtype=np.float32)
    W = woodbury_from_blocks(blocks, 0.5, method="dense")
    assert W.dtype == np.float32
    out = W.matmat(np.ones((W.shape[0], 2), dtype=np.float32))
    assert out.dtype == np.float32
    X = sp.block_diag(blocks, format="csr")
    Xc = _centred(X)
    ref = np.linalg.inv(Xc.T @ Xc + 0.5 * np.eye(X.shape[1])) @ np.ones((X.shape[1], 2))
    np.testing.assert_allclose(out, ref, rtol=2e-3, atol=2e-3 * np.abs(ref).max())


def test_woodbury_rejects_non_spd():
    blocks = _lang_blocks()
    invs = [GramBlockInverse(B, 0.4) for B in blocks]
    p = sum(B.shape[1] for B in blocks)
    mu = np.full(p, 5.0)   # not the data mean: B - n mu mu^T is indefinite
    with pytest.raises(ValueError, match="not positive definite"):
        WoodburyInverse(invs, mu, 120)
    with pytest.raises(ValueError, match="mean must have shape"):
        WoodburyInverse(invs, np.zeros(3), 120)


# ---------------------------------------------------------------------- cross-covariance
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cross_covariance_dense_reference(dtype, rng):
    X = _sprand(45, 10, seed=9, dtype=dtype)
    labels = rng.integers(0, 6, size=45)
    labels[labels == 4] = 5          # class 4 empty
    K = 7                            # class 6 empty too
    C = CrossCovariance(X, labels, n_classes=K)
    Y = np.eye(K)[labels]
    ref = _centred(X).T @ (Y - Y.mean(0))
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert C.shape == (10, K) and C.dtype == dtype
    D = C.to_dense()
    assert D.dtype == dtype
    np.testing.assert_allclose(D, ref, atol=tol * 10)
    np.testing.assert_allclose(C.T.to_dense(), ref.T, atol=tol * 10)
    np.testing.assert_array_equal(C.class_counts_, np.bincount(labels, minlength=K))
    assert dottest(C, rng=6)
    np.testing.assert_array_equal(C.one_hot().toarray(), Y)


def test_cross_covariance_validates():
    X = _sprand(10, 4)
    with pytest.raises(ValueError, match="10 rows"):
        CrossCovariance(X, np.zeros(9, dtype=int))
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        CrossCovariance(X, np.arange(10) % 5, n_classes=3)
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        CrossCovariance(X, np.r_[-1, np.arange(9) % 5], n_classes=5)
    with pytest.raises(TypeError, match="integers"):
        CrossCovariance(X, np.linspace(0, 1, 10))


# ---------------------------------------------------------------------- properties
@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 12), p=st.integers(1, 8), m=st.integers(1, 4), K=st.integers(1, 5),
       density=st.floats(0.0, 1.0), f32=st.booleans(), seed=st.integers(0, 2**16))
def test_operator_shapes_and_dtypes(n, p, m, K, density, f32, seed):
    dtype = np.float32 if f32 else np.float64
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="csr", random_state=seed).astype(dtype)
    V = rng.standard_normal((p, m)).astype(dtype)
    G = CenteredGram(X, 0.5)
    out = G.matmat(V)
    assert out.shape == (p, m) and out.dtype == dtype
    assert G.matvec(V[:, 0]).shape == (p,)
    Xc = _centred(X)
    np.testing.assert_allclose(out, (Xc.T @ Xc + 0.5 * np.eye(p)) @ V.astype(np.float64),
                               rtol=1e-4, atol=1e-4 * (1 + np.abs(V).max() * (1 + n)))
    labels = rng.integers(0, K, size=n)
    C = CrossCovariance(X, labels, n_classes=K)
    U = rng.standard_normal((K, m)).astype(dtype)
    assert C.matmat(U).shape == (p, m) and C.rmatmat(V).shape == (K, m)
    assert C.matmat(U).dtype == dtype
    at = 1e-5 if f32 else 1e-12
    assert dottest(C, rng=seed, atol=at) and dottest(G, rng=seed, atol=at)
    inv = GramBlockInverse(X, 0.5)
    Z = inv.matmat(V)
    assert Z.shape == (p, m) and Z.dtype == dtype


def test_cross_covariance_gather_path_matches_precomputed(rng):
    X = _sprand(50, 11, seed=10)
    labels = rng.integers(0, 8, size=50)
    A = CrossCovariance(X, labels, precompute=True)
    B = CrossCovariance(X, labels, precompute=False)
    assert A.XtY_ is not None and B.XtY_ is None
    assert A.XtY_.nnz <= X.nnz
    np.testing.assert_allclose(A.to_dense(), B.to_dense(), atol=1e-12)
    np.testing.assert_allclose(A.T.to_dense(), B.T.to_dense(), atol=1e-12)
    assert dottest(B, rng=1)


def test_gram_block_inverse_float32_cg_tolerance_is_clamped():
    X = _sprand(60, 15, density=0.2, seed=5, dtype=np.float32)
    inv = GramBlockInverse(X, 0.3, method="cg")          # default cg_rtol=1e-10
    assert inv.cg_rtol_effective_ > 1e-7
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        out = inv.matmat(np.ones((15, 2), dtype=np.float32))
    assert out.dtype == np.float32 and not inv.nonconverged_



@pytest.mark.parametrize("krylov", ["columns", "block"])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("data, rhs", [(np.float32, np.float64), (np.float64, np.float32),
                                       (np.float64, np.int64)])
def test_gram_block_inverse_cg_takes_a_right_hand_side_of_another_dtype(data, rhs, fused, krylov):
    # was: float32 data with a float64 R (e.g. a WoodburyInverse of float32 blocks applied to a
    # float64 vector) -> 'tiled_rows_matmat: out, data and V must share one dtype'
    X = _sprand(60, 15, density=0.2, seed=5, dtype=data)
    inv = GramBlockInverse(X, 0.3, method="cg", cg_rtol=1e-8, fused_cg=fused, cg_krylov=krylov)
    D = X.toarray().astype(np.float64)
    G = D.T @ D + 0.3 * np.eye(15)
    R = np.arange(30).reshape(15, 2).astype(rhs)
    for b in (R, R[:, 0]):
        out = inv @ b
        assert out.dtype == np.result_type(data, rhs if rhs != np.int64 else np.float64)
        ref = np.linalg.solve(G, b.astype(np.float64))
        tol = 1e-4 if data == np.float32 else 1e-6
        np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * np.abs(ref).max())
    assert not inv.nonconverged_
    with pytest.raises(ValueError, match="cg_maxiter"):
        GramBlockInverse(X, 0.3, method="cg", cg_maxiter=-1)


# ---------------------------------------------------------------------- dask
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dask_centered_gram_matches_in_memory(dtype, monkeypatch):
    da = pytest.importorskip("dask.array")
    from linxling.kernels import spmm
    from linxling.operators import DaskCenteredGram
    monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)     # the numba kernels, from the threaded scheduler

    X = _sprand(230, 17, density=0.15, seed=11, dtype=dtype)
    DX = da.from_array(X, chunks=(20, -1), asarray=False)     # 12 chunks -> 2-level tree
    G = CenteredGram(X, 0.3)
    DG = DaskCenteredGram(DX, 0.3, scheduler="threads", split_every=3)
    assert DG.n_chunks == 12 and DG.n_samples == 230 and DG.dtype == dtype
    tol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(DG.mean_, G.mean_, rtol=tol)
    V = np.random.default_rng(0).standard_normal((17, 4)).astype(dtype)
    out = DG.matmat(V)
    assert out.dtype == dtype
    ref = G.matmat(V)
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * np.abs(ref).max())
    np.testing.assert_allclose(DG.diagonal(), G.diagonal(), rtol=tol * 10)
    assert dottest(DG, rng=0)


def test_dask_centered_gram_validates():
    da = pytest.importorskip("dask.array")
    from linxling.operators import DaskCenteredGram

    X = _sprand(40, 6)
    with pytest.raises(TypeError, match="dask array"):
        DaskCenteredGram(X, 1.0)
    with pytest.raises(TypeError, match="scipy.sparse"):
        DaskCenteredGram(da.from_array(X.toarray(), chunks=(10, -1)), 1.0)
    with pytest.raises(ValueError, match="one chunk along the columns"):
        DaskCenteredGram(da.from_array(X, chunks=(10, 3), asarray=False), 1.0)
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        DaskCenteredGram(da.from_array(bad, chunks=(10, -1), asarray=False), 1.0, scheduler="sync")


def test_gram_block_inverse_mixed_precision_meets_tolerance():
    """float32 CG iterations on float64 data still meet the requested rtol, in float64 output."""
    rng = np.random.default_rng(3)
    X = sp.random(400, 150, density=0.05, format="csr", random_state=3)
    R = rng.standard_normal((150, 6))
    mixed = GramBlockInverse(X, 0.5, method="cg", cg_rtol=1e-3)
    plain = GramBlockInverse(X, 0.5, method="cg", cg_rtol=1e-3, mixed_precision=False)
    assert mixed.mixed_precision_ and not plain.mixed_precision_
    assert not GramBlockInverse(X, 0.5, method="cg", cg_rtol=1e-8).mixed_precision_   # tight: float64
    Z = mixed.matmat(R)
    assert Z.dtype == np.float64
    G = (X.T @ X).toarray() + 0.5 * np.eye(150)
    rel = np.linalg.norm(G @ Z - R, axis=0) / np.linalg.norm(R, axis=0)
    assert np.all(rel <= 1e-3 * 1.01)
    exact = np.linalg.solve(G, R)
    np.testing.assert_allclose(plain.matmat(R), exact, rtol=0, atol=1e-2 * np.abs(exact).max() * 10)
    with pytest.raises(ValueError, match="mixed_precision"):
        GramBlockInverse(X, 0.5, method="cg", mixed_precision="sometimes")


def test_gram_block_inverse_cost_model_prefers_cg_for_few_nonzeros():
    """With expected_rhs, "auto" picks CG when the dense O(p^3) set-up cannot be amortised."""
    sparse_rows = sp.random(5000, 3000, density=0.002, format="csr", random_state=0)    # nnz 30k
    inv = GramBlockInverse(sparse_rows, 1.0, cg_rtol=1e-2, expected_rhs=300, cholmod_max_density=0)
    assert inv.method_ == "cg" and "cost model" in inv.reason_
    dense_rows = sp.random(3000, 400, density=0.3, format="csr", random_state=0)        # nnz 360k, p small
    inv = GramBlockInverse(dense_rows, 1.0, cg_rtol=1e-2, expected_rhs=300, cholmod_max_density=0)
    assert inv.method_ == "dense"
    # without the hint the size rule applies unchanged
    assert GramBlockInverse(sparse_rows, 1.0, cg_rtol=1e-2, cholmod_max_density=0).method_ == "dense"


@pytest.mark.parametrize("precompute", [True, False])
def test_cross_covariance_from_blocks_matches_dense(precompute, monkeypatch):
    """X̂ᵀŶ for X = diag(blocks) without stacking X, with and without the precomputed YᵀX."""
    from linxling.kernels import spmm
    from linxling.operators import CrossCovariance
    monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)           # the numba kernels, not SciPy's
    rng = np.random.default_rng(5)
    blocks = [sp.random(30, 12, density=0.3, random_state=1, format="csr"),
              sp.random(25, 9, density=0.3, random_state=2, format="csr")]
    labels = [rng.integers(0, 20, 30), rng.integers(0, 20, 25)]
    K = 20
    C = CrossCovariance.from_blocks(blocks, labels, K, precompute=precompute)
    X = sp.block_diag(blocks).toarray()
    Y = np.zeros((55, K))
    Y[np.arange(55), np.concatenate(labels)] = 1
    dense = (X - X.mean(0)).T @ (Y - Y.mean(0))
    V, U = rng.standard_normal((K, 4)), rng.standard_normal((21, 3))
    np.testing.assert_allclose(C.matmat(V), dense @ V, atol=1e-12)
    np.testing.assert_allclose(C.rmatmat(U), dense.T @ U, atol=1e-12)
    ref = CrossCovariance(sp.block_diag(blocks, format="csr"), np.concatenate(labels), K)
    np.testing.assert_allclose(C.mean_, ref.mean_)


def test_gram_without_transposed_copy_matches(monkeypatch):
    from linxling.kernels import spmm
    from linxling.operators import Gram, GramBlockInverse
    monkeypatch.setattr(spmm, "MIN_PARALLEL_WORK", 0)
    X = sp.random(60, 25, density=0.3, random_state=4, format="csr")
    V = np.random.default_rng(0).standard_normal((25, 5))
    lean = Gram(X, 0.5, transpose_copy=False)
    np.testing.assert_allclose(lean.matmat(V), Gram(X, 0.5).matmat(V), rtol=1e-12)
    assert lean._XT is None                                   # no copy was made
    inv = GramBlockInverse(X, 0.5, method="cg", cg_rtol=1e-12, transpose_copy=False, mixed_precision=False)
    np.testing.assert_allclose(inv.matmat(V), np.linalg.solve((X.T @ X).toarray() + 0.5 * np.eye(25), V),
                               rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("precompute", [True, False])
def test_cross_covariance_astype_float32(precompute):
    from linxling.operators import CrossCovariance
    rng = np.random.default_rng(6)
    blocks = [sp.random(20, 8, density=0.4, random_state=3, format="csr")]
    C = CrossCovariance.from_blocks(blocks, [rng.integers(0, 6, 20)], 6, precompute=precompute)
    C32 = C.astype(np.float32)
    V = rng.standard_normal((6, 3)).astype(np.float32)
    assert C32.dtype == np.float32 and C.dtype == np.float64
    np.testing.assert_allclose(C32.matmat(V), C.matmat(V.astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("precompute", [True, False])
@pytest.mark.parametrize("identity", [True, False])
def test_cross_covariance_one_document_per_concept(precompute, identity):
    """With at most one document per concept and block, Ĉ keeps no YᵀX: it reads the blocks (and a
    CSR transpose, made on first use or shared) and equals the dense X̂ᵀŶ."""
    from linxling.operators import CrossCovariance, GramBlockInverse
    rng = np.random.default_rng(7)
    K = 30
    blocks = [sp.random(K if identity else 24, 12, density=0.3, random_state=8, format="csr"),
              sp.random(K if identity else 27, 9, density=0.3, random_state=9, format="csr")]
    labels = [np.arange(K) if identity else rng.permutation(K)[:X.shape[0]] for X in blocks]
    C = CrossCovariance.from_blocks(blocks, labels, K, precompute=precompute)
    assert C._one_doc is not None and C._YtX is None and C.XtY_ is None
    n = sum(X.shape[0] for X in blocks)
    Xd = sp.block_diag(blocks).toarray()
    Y = np.zeros((n, K))
    Y[np.arange(n), np.concatenate(labels)] = 1
    dense = (Xd - Xd.mean(0)).T @ (Y - Y.mean(0))
    V, U = rng.standard_normal((K, 4)), rng.standard_normal((21, 3))
    np.testing.assert_allclose(C.matmat(V), dense @ V, atol=1e-12)
    np.testing.assert_allclose(C.rmatmat(U), dense.T @ U, atol=1e-12)
    assert all((blk.XT is not None) == precompute for blk in C._one_doc)   # made on first use only
    # the float32 twin sharing the float32 matrices of the blocks' mixed-precision CG: no copies
    invs = [GramBlockInverse(X, 1.0, method="cg", cg_rtol=1e-2) for X in blocks]
    pairs = [inv.csr_pair(np.float32) for inv in invs]
    C32 = C.astype(np.float32, shared=pairs)
    for blk, inv in zip(C32._one_doc, invs, strict=True):
        assert blk.X is inv._gram_cg.X and blk.XT is inv._gram_cg._XT
    np.testing.assert_allclose(C32.matmat(V.astype(np.float32)), dense @ V, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(C32.rmatmat(U.astype(np.float32)), dense.T @ U, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="does not match the block"):
        C.astype(np.float32, shared=[pairs[1], pairs[0]])


def test_cross_covariance_repeated_concept_keeps_yty():
    """Two documents of one concept in a block: the summed YᵀX is built (the general path)."""
    from linxling.operators import CrossCovariance
    X = sp.random(6, 5, density=0.5, random_state=1, format="csr")
    C = CrossCovariance.from_blocks([X], [np.array([0, 1, 2, 3, 4, 4])], 5)
    assert C._one_doc is None and C._YtX is not None



def test_without_cholmod_auto_falls_back_with_one_note_and_the_same_result(monkeypatch):
    """Without scikit-sparse the choice that would be CHOLMOD becomes the dense factor or block
    CG, says so once, and the inverse is the same to the solver tolerance (issue #26)."""
    import sys
    import warnings

    import linxling.operators.gram as gram
    Xv = sp.random(400, 300, density=0.003, format="csr", random_state=1)
    ref = np.linalg.inv((Xv.T @ Xv).toarray() + np.eye(300))
    monkeypatch.setitem(sys.modules, "sksparse", None)           # import sksparse -> ImportError
    monkeypatch.setattr(gram, "_NOTED_NO_CHOLMOD", [])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        inv = GramBlockInverse(Xv, 1.0)
        GramBlockInverse(Xv, 1.0)
    notes = [x for x in w if "CHOLMOD" in str(x.message)]
    assert len(notes) == 1 and "linxling[cholmod]" in str(notes[0].message)
    assert inv.method_ in ("dense", "cg") and "linxling[cholmod]" in inv.reason_
    np.testing.assert_allclose(inv.to_dense(), ref, rtol=1e-8, atol=1e-10)
    with pytest.raises(ImportError, match="linxling\\[cholmod\\]"):
        GramBlockInverse(Xv, 1.0, method="cholmod")
