"""Solvers against dense NumPy references at small size; warnings, callbacks, dtypes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from hypothesis import given, settings
from hypothesis import strategies as st

from linxling.operators import CenteredGram, MatrixOperator
from linxling.solvers import ConvergenceWarning, EigResult, SolveResult, block_cg, cg, eigsh


def _spd(n, seed=0, cond=100.0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    d = np.geomspace(1.0, cond, n)
    return ((Q * d) @ Q.T).astype(dtype), d


def _psd_decaying(n, seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    d = 10.0 * 0.9 ** np.arange(n)
    return (Q * d) @ Q.T, d


# ---------------------------------------------------------------------- cg
@pytest.mark.parametrize("kind", ["dense", "sparse", "operator", "scipy"])
def test_cg_matches_solve(kind, rng):
    A, _ = _spd(40)
    b = rng.standard_normal(40)
    Aarg = {"dense": A, "sparse": sp.csr_matrix(A), "operator": MatrixOperator(A, symmetric=True),
            "scipy": spla.aslinearoperator(A)}[kind]
    res = cg(Aarg, b, rtol=1e-10)
    assert isinstance(res, SolveResult) and res.converged is True
    np.testing.assert_allclose(res.x, np.linalg.solve(A, b), rtol=1e-7)
    assert res.residual_norms.shape == (res.n_iter + 1,)
    assert res.residual_norms[-1] <= 1e-10 * np.linalg.norm(b)


def test_cg_preconditioner_x0_callback_atol(rng):
    d = np.geomspace(1, 1e4, 60)
    A = np.diag(d) + 0.01 * np.ones((60, 60))
    b = rng.standard_normal(60)
    plain = cg(A, b, rtol=1e-10)
    seen = []
    jac = cg(A, b, rtol=1e-10, M=lambda r: r / np.diag(A), callback=lambda xk: seen.append(xk.copy()))
    assert jac.converged and jac.n_iter < plain.n_iter
    assert len(seen) == jac.n_iter
    opM = cg(A, b, rtol=1e-10, M=sp.diags(1 / np.diag(A)))
    assert opM.n_iter == jac.n_iter
    x = np.linalg.solve(A, b)
    warm = cg(A, b, x0=x, rtol=1e-8)
    assert warm.n_iter == 0 and warm.converged
    loose = cg(A, b, atol=1e3)
    assert loose.n_iter == 0 and loose.converged
    zero = cg(A, np.zeros(60))
    assert zero.converged and np.all(zero.x == 0)


def test_cg_warns_on_non_convergence(rng):
    A, _ = _spd(30, cond=1e4)
    b = rng.standard_normal(30)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = cg(A, b, rtol=1e-12, maxiter=1)
    assert res.converged is False and res.n_iter == 1


def test_cg_breakdown_on_indefinite():
    A = np.diag([1.0, -1.0])
    with pytest.warns(ConvergenceWarning, match="breakdown"):
        res = cg(A, np.array([1.0, 1.0]))
    assert res.info["breakdown"] and not res.converged


def test_cg_float32(rng):
    A, _ = _spd(30, dtype=np.float32)
    b = rng.standard_normal(30).astype(np.float32)
    res = cg(A, b, rtol=1e-5)
    assert res.x.dtype == np.float32 and res.converged
    np.testing.assert_allclose(res.x, np.linalg.solve(A.astype(np.float64), b), rtol=1e-3, atol=1e-4)



def _solvers_on(A):
    """Every CG entry point as ``f(B, **kw)`` on a 2-D block (``cg`` on its first column)."""
    from linxling.solvers.cg import jacobi_block_cg, krylov_block_cg
    op, d = MatrixOperator(A, symmetric=True), np.diag(A).copy()
    return {"cg": lambda B, **kw: cg(A, B[:, 0], **kw),
            "block_cg": lambda B, **kw: block_cg(A, B, **kw),
            "jacobi_block_cg": lambda B, **kw: jacobi_block_cg(op, B, d, **kw),
            "krylov_block_cg": lambda B, **kw: krylov_block_cg(op, B, d, **kw)}


@pytest.mark.parametrize("solver", ["cg", "block_cg", "jacobi_block_cg", "krylov_block_cg"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_cg_non_finite_right_hand_side_is_an_error(solver, bad, rng):
    # was: NaN -> a 'breakdown (A is not SPD)' warning and NaN/zero x; inf -> converged=True at
    # once with x = 0 (||r|| = inf <= rtol * inf)
    A, _ = _spd(20)
    B = rng.standard_normal((20, 2))
    B[3, 0] = bad
    with pytest.raises(ValueError, match=r"\b[bB]\b contains NaN or infinite"):
        _solvers_on(A)[solver](B)


@pytest.mark.parametrize("solver", ["cg", "block_cg"])
def test_cg_right_hand_side_whose_norm_overflows_is_an_error(solver, rng):
    # was: float32 entries of 1e20 (finite) gave a norm of inf, so converged=True at once with x = 0
    # (the Jacobi solvers take their norms in float64: no overflow there)
    A, _ = _spd(20, dtype=np.float32)
    B = (rng.standard_normal((20, 2)) * 1e20).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # the error alone, no RuntimeWarning before it
        with pytest.raises(ValueError, match=r"\b[bB]\b is too large for float32: its norm overflows"):
            _solvers_on(A)[solver](B)


@pytest.mark.parametrize("solver", ["cg", "block_cg", "jacobi_block_cg", "krylov_block_cg"])
def test_cg_stopping_arguments_are_checked(solver, rng):
    # was: rtol=-1 / maxiter=-3 accepted in silence (block_cg then reported n_iter=-3), rtol=nan
    # a ZeroDivisionError
    A, _ = _spd(20)
    B = rng.standard_normal((20, 2))
    f = _solvers_on(A)[solver]
    for kw, name in [({"rtol": -1.0}, "rtol"), ({"rtol": np.nan}, "rtol"), ({"atol": -1e-3}, "atol"),
                     ({"maxiter": -3}, "maxiter")]:
        with pytest.raises(ValueError, match=name):
            f(B, **kw)
    with pytest.raises(TypeError, match="maxiter"):
        f(B, maxiter=2.5)
    with pytest.warns(ConvergenceWarning):          # maxiter=0 is allowed: no iteration
        res = f(B, maxiter=0)
    assert res.n_iter == 0 and not np.any(res.converged)


@pytest.mark.parametrize("solver", ["jacobi_block_cg", "krylov_block_cg"])
def test_jacobi_solvers_check_d_and_name_themselves_when_unconverged(solver, rng):
    """jacobi_block_cg took d <= 0 (krylov_block_cg refused it) and both warned as 'block_cg:'."""
    from linxling.solvers.cg import jacobi_block_cg, krylov_block_cg
    fn = {"jacobi_block_cg": jacobi_block_cg, "krylov_block_cg": krylov_block_cg}[solver]
    A, _ = _spd(20)
    op, d = MatrixOperator(A, symmetric=True), np.diag(A).copy()
    B = rng.standard_normal((20, 2))
    bad = d.copy()
    bad[4] = 0.0
    with pytest.raises(ValueError, match="d must be positive"):
        fn(op, B, bad)
    with pytest.warns(ConvergenceWarning, match=rf"^{solver}: 2 of 2 column"):
        fn(op, B, d, maxiter=1, rtol=1e-12)


@pytest.mark.parametrize("solver", ["cg", "block_cg", "jacobi_block_cg", "krylov_block_cg"])
def test_cg_start_of_the_wrong_shape_is_named(solver, rng):
    # was: numpy's 'cannot reshape array of size 21 into shape (20,)' (and an (m, n) start was
    # reshaped into (n, m) in silence)
    A, _ = _spd(20)
    B = rng.standard_normal((20, 2))
    name = "x0" if solver == "cg" else "X0"
    kw = "x0" if solver == "cg" else "X0"
    with pytest.raises(ValueError, match=f"{name} must have shape"):
        _solvers_on(A)[solver](B, **{kw: np.ones(21)})
    if solver != "cg":
        with pytest.raises(ValueError, match="X0 must have shape"):
            _solvers_on(A)[solver](B, X0=np.ones((2, 20)))
        with pytest.raises(ValueError, match="X0 contains NaN"):
            _solvers_on(A)[solver](B, X0=np.full((20, 2), np.nan))


def test_cg_complex_right_hand_side_is_refused(rng):
    # was: NumPy's ComplexWarning and a solution for the real part only, reported as converged
    A, _ = _spd(10)
    b = rng.standard_normal(10) + 1j
    with pytest.raises(TypeError, match="b must hold real numbers"):
        cg(A, b)
    with pytest.raises(TypeError, match="B must hold real numbers"):
        block_cg(A, b[:, None])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cg_meets_its_relative_residual_and_edge_right_hand_sides(dtype, rng):
    """The documented stop, ||b - A x|| <= rtol ||b||, on the true residual; zero and already
    solved right-hand sides; a 1-D and a one-column 2-D b agree."""
    A, _ = _spd(60, cond=1e3, dtype=dtype)
    A64 = A.astype(np.float64)
    B = rng.standard_normal((60, 3)).astype(dtype)
    B[:, 1] = 0.0
    rtol = 1e-4 if dtype == np.float32 else 1e-8
    for name, f in _solvers_on(A).items():
        res = f(B, rtol=rtol)
        X = np.asarray(res.x, dtype=np.float64).reshape(60, -1)
        Bs = B[:, :X.shape[1]].astype(np.float64)
        assert np.all(res.converged), name
        assert res.x.dtype == dtype, name
        bn = np.linalg.norm(Bs, axis=0)
        rel = np.linalg.norm(Bs - A64 @ X, axis=0)
        assert np.all(rel <= 1.5 * rtol * np.where(bn > 0, bn, 1.0)), (name, rel / bn)
        if X.shape[1] > 1:
            assert np.all(X[:, 1] == 0.0), name          # zero b: exactly zero, not NaN
    x_exact = np.linalg.solve(A64, B[:, 0].astype(np.float64)).astype(dtype)
    res = cg(A, B[:, 0], x0=x_exact, rtol=rtol)
    assert res.converged and res.n_iter <= 1
    r1, r2 = cg(A, B[:, 0], rtol=rtol), cg(A, B[:, :1], rtol=rtol)
    assert r1.x.shape == (60,) and r2.x.shape == (60, 1)
    np.testing.assert_allclose(r2.x[:, 0], r1.x, rtol=1e-2 if dtype == np.float32 else 1e-10, atol=1e-6)


# ---------------------------------------------------------------------- block_cg
def test_block_cg_matches_solve_and_uses_one_matmat_per_iteration(rng):
    A, _ = _spd(50, cond=1e3)
    op = MatrixOperator(A, symmetric=True)
    B = rng.standard_normal((50, 5))
    B[:, 2] = 0.0                          # a zero column converges immediately
    res = block_cg(op, B, rtol=1e-10)
    assert res.converged.shape == (5,) and res.converged.all()
    np.testing.assert_allclose(res.x, np.linalg.solve(A, B), rtol=1e-6, atol=1e-9)
    assert res.residual_norms.shape == (res.n_iter + 1, 5)
    assert op.n_matmat == res.n_iter       # one block application per iteration, no x0 residual
    assert op.n_matvec_equiv < res.n_iter * 5   # converged columns are frozen
    # column-wise the same iteration as cg; the two differ only in summation order (GEMM vs GEMV),
    # which CG amplifies, so compare them within what both solves guarantee: each has a relative
    # residual <= rtol, hence ||x_block - x_cg|| <= cond(A) * 2 * rtol * ||x|| (+ rounding).
    single = cg(A, B[:, 0], rtol=1e-10)
    x_true = np.linalg.solve(A, B[:, 0])
    cond = np.linalg.cond(A)
    assert np.linalg.norm(res.x[:, 0] - single.x) <= 4 * cond * 1e-10 * np.linalg.norm(x_true)


def test_block_cg_x0_preconditioner_callback_and_1d(rng):
    A, _ = _spd(40, cond=1e3)
    B = rng.standard_normal((40, 3))
    X = np.linalg.solve(A, B)
    warm = block_cg(A, B, X0=X, rtol=1e-8)
    assert warm.n_iter == 0 and warm.converged.all()
    calls = []
    res = block_cg(A, B, rtol=1e-10, M=lambda R: R / np.diag(A)[:, None], callback=calls.append)
    assert res.converged.all() and len(calls) == res.n_iter and calls[-1].shape == (40, 3)
    one = block_cg(A, B[:, 0], rtol=1e-10)
    assert one.x.shape == (40,) and one.converged is True
    two = cg(A, B, rtol=1e-10)            # 2-D b goes to block_cg
    np.testing.assert_allclose(two.x, X, rtol=1e-6)


def test_block_cg_warns_and_reports_per_column(rng):
    A, _ = _spd(40, cond=1e5)
    B = rng.standard_normal((40, 3))
    B[:, 1] = 0
    with pytest.warns(ConvergenceWarning, match="2 of 3"):
        res = block_cg(A, B, rtol=1e-12, maxiter=2)
    np.testing.assert_array_equal(res.converged, [False, True, False])
    assert res.n_iter == 2


def test_block_cg_float32_on_centered_gram():
    X = sp.random(80, 20, density=0.2, format="csr", random_state=0, dtype=np.float32)
    G = CenteredGram(X, 0.5)
    B = np.random.default_rng(0).standard_normal((20, 4)).astype(np.float32)
    res = block_cg(G, B, rtol=1e-5)
    assert res.x.dtype == np.float32 and res.converged.all()
    np.testing.assert_allclose(res.x, np.linalg.solve(G.to_dense().astype(np.float64), B),
                               rtol=1e-3, atol=1e-4)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 15), m=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_block_cg_property(n, m, seed):
    A, _ = _spd(n, seed=seed, cond=10.0)
    B = np.random.default_rng(seed).standard_normal((n, m))
    res = block_cg(A, B, rtol=1e-10, maxiter=5 * n + 5)
    assert res.x.shape == (n, m) and res.converged.shape == (m,)
    np.testing.assert_allclose(A @ res.x, B, atol=1e-7 * (1 + np.abs(B).max()))


# ---------------------------------------------------------------------- eigsh
@pytest.mark.parametrize("method", ["arpack", "lobpcg", "subspace", "dense"])
def test_eigsh_matches_eigh(method):
    A, d = _psd_decaying(150, seed=1)
    k = 6
    res = eigsh(A, k, method=method, random_state=0, tol=1e-10 if method != "arpack" else 0.0)
    assert isinstance(res, EigResult) and res.converged
    np.testing.assert_allclose(res.eigenvalues, d[:k], rtol=1e-8)
    assert np.all(np.diff(res.eigenvalues) <= 0)
    assert res.eigenvectors.shape == (150, k)
    np.testing.assert_allclose(res.eigenvectors.T @ res.eigenvectors, np.eye(k), atol=1e-8)
    np.testing.assert_allclose(A @ res.eigenvectors, res.eigenvectors * res.eigenvalues, atol=1e-6)
    assert res.residual_norms.shape == (k,) and res.residual_norms.max() < 1e-6
    assert res.info["method"] == method
    if method != "dense":
        assert res.n_matvec > 0


def test_eigsh_subspace_on_operator_counts_block_applications():
    X = sp.random(300, 120, density=0.05, format="csr", random_state=3)
    G = CenteredGram(X, 0.1)
    k = 25
    ref = np.linalg.eigvalsh(G.to_dense())[::-1][:k]
    G.reset_counters()
    iters = []
    res = eigsh(G, k, method="subspace", tol=1e-9, random_state=1,
                callback=lambda it, vals, r: iters.append((it, vals.shape, r.shape)))
    assert res.converged
    np.testing.assert_allclose(res.eigenvalues, ref, rtol=1e-8)
    assert G.n_matmat == res.n_iter and G.n_matvec_equiv == res.n_matvec
    assert len(iters) == res.n_iter and iters[0] == (1, (k,), (k,))
    assert res.info["block_size"] == k + 10


def test_eigsh_auto_choices():
    A, _ = _psd_decaying(40)
    assert eigsh(A, 3).info["method"] == "dense"
    B, _ = _psd_decaying(120)
    assert eigsh(B, 3, random_state=0).info["method"] == "arpack"
    res = eigsh(B, 25, random_state=0)
    assert res.info["method"] == "subspace" and res.info["requested_method"] == "auto"


@pytest.mark.parametrize("method", ["arpack", "lobpcg", "subspace"])
def test_eigsh_warns_on_non_convergence(method):
    rng = np.random.default_rng(0)
    d = np.sort(rng.random(300))[::-1]     # tiny gaps: one iteration cannot converge
    A = sp.diags(d).tocsr()
    with pytest.warns(ConvergenceWarning):
        res = eigsh(A, 5, method=method, maxiter=1, tol=1e-12, random_state=0)
    assert res.converged is False


def test_eigsh_smallest_and_validation():
    A, d = _spd(100, cond=10.0)
    for method in ("arpack", "lobpcg"):
        res = eigsh(A, 3, which="SA", method=method, random_state=0, tol=1e-6 if method == "lobpcg" else 0.0)
        np.testing.assert_allclose(np.sort(res.eigenvalues), np.sort(d)[:3], rtol=1e-6)
    assert np.all(np.diff(res.eigenvalues) <= 0)
    with pytest.raises(ValueError, match="largest"):
        eigsh(A, 3, which="SA", method="subspace")
    with pytest.raises(ValueError, match="exceeds"):
        eigsh(A, 101)
    with pytest.raises(ValueError, match="method"):
        eigsh(A, 3, method="qr")
    with pytest.raises(ValueError, match="v0"):
        eigsh(A, 3, v0=np.ones(5), method="arpack")



@pytest.mark.parametrize("method", ["arpack", "lobpcg", "subspace", "dense"])
@pytest.mark.parametrize("k", [3, 19, 20])
def test_eigsh_small_problem_and_k_up_to_n(method, k):
    """n = 20, k up to n: eigenvalues against numpy.linalg.eigh and the subspace by principal
    angles. LOBPCG used to fail here with 'not enough values to unpack (expected 3, got 2)':
    SciPy solves a problem with n < 5 block_size densely and then returns no history."""
    import scipy.linalg as sla
    A, d = _psd_decaying(20, seed=4)
    w, V = np.linalg.eigh(A)
    w, V = w[::-1], V[:, ::-1]
    kw = {"tol": 1e-10} if method in ("lobpcg", "subspace") else {}
    res = eigsh(A, k, method=method, random_state=0, show_progress=False, **kw)
    assert res.converged and res.eigenvectors.shape == (20, k)
    np.testing.assert_allclose(res.eigenvalues, w[:k], rtol=1e-8, atol=1e-10)
    if k < 20:   # the top-k subspace is well defined: a gap after the k-th eigenvalue
        assert sla.subspace_angles(res.eigenvectors, V[:, :k]).max() < 1e-6
    np.testing.assert_allclose(res.eigenvectors.T @ res.eigenvectors, np.eye(k), atol=1e-8)
    if method == "lobpcg" and 5 * k > 20:
        assert res.info.get("dense_fallback")


def test_eigsh_bad_operator_v0_and_maxiter_are_errors():
    A, _ = _psd_decaying(30, seed=4)
    # was: NaN eigenpairs with converged=True (dense)
    with pytest.raises(ValueError, match="A has NaN or infinite"):
        eigsh(np.full((30, 30), np.nan), 2)
    # was: ignored in silence (subspace), or SciPy's 'array must not contain infs or NaNs'
    for method in ("arpack", "lobpcg", "subspace"):
        with pytest.raises(ValueError, match="v0 must hold finite"):
            eigsh(A, 2, method=method, v0=np.full(30, np.nan))
    # was: maxiter=0 or -1 -> zero eigenpairs of the k asked for (subspace), ARPACK's own message
    for method in ("arpack", "lobpcg", "subspace"):
        for bad in (0, -1):
            with pytest.raises(ValueError, match="maxiter must be > 0"):
                eigsh(A, 2, method=method, maxiter=bad)


def test_eigsh_float32_and_reproducible():
    A, d = _psd_decaying(120, seed=2)
    A32 = A.astype(np.float32)
    r1 = eigsh(A32, 22, method="subspace", random_state=5)
    r2 = eigsh(A32, 22, method="subspace", random_state=5)
    assert r1.eigenvectors.dtype == np.float32 and r1.eigenvalues.dtype == np.float32
    np.testing.assert_array_equal(r1.eigenvalues, r2.eigenvalues)
    np.testing.assert_allclose(r1.eigenvalues, d[:22], rtol=1e-4)
    ra = eigsh(A32, 4, method="arpack", random_state=0)
    np.testing.assert_allclose(ra.eigenvalues, d[:4], rtol=1e-4)


def test_eigsh_v0_and_invariant_subspace():
    # rank-3 operator: the Krylov space becomes invariant quickly
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((80, 3)))
    A = (U * [3.0, 2.0, 1.0]) @ U.T
    res = eigsh(A, 3, method="subspace", block_size=3, random_state=0, v0=U[:, 0])
    assert res.converged
    np.testing.assert_allclose(res.eigenvalues, [3, 2, 1], rtol=1e-10)


def test_subspace_float32_basis_reaches_loose_tolerance():
    from linxling.solvers import eigsh
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((400, 400)))
    lam = np.r_[np.linspace(50, 20, 10), np.linspace(5, 0.1, 390)]
    A = (Q * lam) @ Q.T
    res = eigsh(A, 10, tol=1e-4, method="subspace", random_state=0, basis_dtype=np.float32)
    assert res.converged if np.ndim(res.converged) == 0 else np.all(res.converged)
    assert res.eigenvectors.dtype == np.float32
    np.testing.assert_allclose(res.eigenvalues, lam[:10], rtol=1e-4)
    with pytest.raises(ValueError, match="basis_dtype must be float32 or float64"):
        eigsh(A, 10, method="subspace", basis_dtype=np.int32)


@pytest.mark.parametrize("expand", ["wanted", "block"])
def test_subspace_expansion_rules_reach_the_dense_answer(expand):
    """expand="wanted" grows the basis with the residuals of the unconverged wanted pairs only;
    "block" with those of the whole block. Both are exact at convergence (a spectrum with a
    cluster at the k-th eigenvalue, the hard case for leaving the guard vectors unexpanded)."""
    from linxling.solvers import eigsh
    rng = np.random.default_rng(3)
    n, k = 500, 20
    lam = np.r_[np.linspace(10, 5, k - 3), 5 - 1e-3 * np.arange(1, 8), np.linspace(4.9, 0, n - k - 4)]
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = (Q * lam) @ Q.T
    res = eigsh(A, k, tol=1e-8, method="subspace", random_state=0, expand=expand)
    assert res.converged
    np.testing.assert_allclose(res.eigenvalues, np.sort(lam)[::-1][:k], rtol=1e-9)
    resid = np.linalg.norm(A @ res.eigenvectors - res.eigenvectors * res.eigenvalues, axis=0)
    assert np.all(resid <= 1e-8 * res.eigenvalues * 1.01)
    with pytest.raises(ValueError, match="expand must be"):
        eigsh(A, k, method="subspace", expand="all")


@pytest.mark.parametrize("basis_dtype,max_basis", [(None, None), (None, 45), (np.float32, None)])
def test_subspace_returns_coefficients_in_the_applied_blocks(basis_dtype, max_basis):
    """eigenvectors = [B_1 .. B_j] C for the blocks B_i given to the operator, also across thick
    restarts (a small max_basis) and with a float32 basis."""
    from linxling.operators import CallableOperator
    rng = np.random.default_rng(3)
    n, k = 300, 12
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = (Q * np.geomspace(100, 0.01, n)) @ Q.T
    seen = []

    def apply(B):
        seen.append(np.array(B, dtype=np.float64))
        return A @ B

    op = CallableOperator(apply, (n, n), np.float64, symmetric=True)
    res = eigsh(op, k, tol=1e-6, method="subspace", random_state=0, basis_dtype=basis_dtype,
                max_basis=max_basis, track_applied=10 ** 6)
    C = res.info["applied_coefficients"]
    B = np.hstack(seen)
    assert C.shape == (B.shape[1], k)
    if max_basis is not None:
        assert res.info["n_restarts"] > 0
    scale = 1e-5 if basis_dtype is not None else 1e-10
    np.testing.assert_allclose(B @ C, res.eigenvectors, atol=scale)
    # beyond track_applied columns the coefficients are not kept
    short = eigsh(op, k, tol=1e-6, method="subspace", random_state=0, basis_dtype=basis_dtype,
                  max_basis=max_basis, track_applied=B.shape[1] - 1)
    assert short.info["applied_coefficients"] is None
    assert eigsh(op, k, tol=1e-6, method="subspace", random_state=0).info["applied_coefficients"] is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_qr_in_place_matches_gemm(dtype):
    """The in-place trmm path of CholQR equals the GEMM path to rounding, and overwrites only when
    asked."""
    from linxling.solvers._orth import _cholesky_qr
    Y = np.random.default_rng(0).standard_normal((500, 12)).astype(dtype)
    Y[:, 1] += 3 * Y[:, 0]                       # not orthogonal to begin with
    keep = Y.copy()
    Q = _cholesky_qr(Y, passes=1)
    np.testing.assert_array_equal(Y, keep)       # not overwritten by default
    Q2 = _cholesky_qr(Y, passes=1, overwrite=True)
    assert Q2 is Y
    tol = 50 * np.finfo(dtype).eps
    np.testing.assert_allclose(Q2, Q, rtol=0, atol=tol)
    Q3 = _cholesky_qr(keep.copy(), passes=2)
    np.testing.assert_allclose(Q3.T @ Q3, np.eye(12), atol=tol)
    # same span as the input
    proj = Q3 @ (Q3.T @ keep)
    np.testing.assert_allclose(proj, keep, atol=tol * np.abs(keep).max() * 10)


def test_gram64_blocked_matches_float64_product():
    """SVQB's float64 Gram of a float32 block, accumulated a block of rows at a time."""
    from linxling.solvers._orth import _gram64
    Y = np.random.default_rng(1).standard_normal((1000, 7)).astype(np.float32)
    ref = Y.astype(np.float64).T @ Y.astype(np.float64)
    G = _gram64(Y, rows=128)                     # 8 blocks, the last one partial
    assert G.dtype == np.float64
    np.testing.assert_allclose(G, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_allclose(_gram64(Y.astype(np.float64)), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_subspace_progress_counts_converged_pairs_not_the_iteration_cap(monkeypatch):
    """Issue #27: the bar counted to maxiter (1/250 for a 3-iteration solve); it now counts the
    wanted Ritz pairs that converged, out of k."""
    import linxling.solvers.eigen as eig
    bars = []

    class Bar:
        def __init__(self, total=None, **kw):
            self.total, self.n = total, 0
            bars.append(self)

        def set_postfix(self, **kw):
            pass

        def close(self):
            pass
    monkeypatch.setattr(eig, "progress", lambda **kw: Bar(**kw))
    rng = np.random.default_rng(0)
    A = rng.standard_normal((200, 200))
    A = A @ A.T
    res = eig.eigsh(A, 6, tol=1e-8, method="subspace", maxiter=250, random_state=0)
    assert np.all(res.converged) and res.n_iter < 250
    assert bars[0].total == 6 and bars[0].n == 6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_subspace_column_norms_match_float64_reference(dtype):
    from linxling.solvers.eigen import _column_norms
    R = np.random.default_rng(0).standard_normal((20_000, 60)).astype(dtype)     # 1.2M entries: the kernel
    want = np.linalg.norm(R.astype(np.float64), axis=0)
    got = _column_norms(R)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12)          # float64 sums of the same products
    np.testing.assert_allclose(_column_norms(R[:50]), np.linalg.norm(R[:50].astype(np.float64), axis=0),
                               rtol=1e-14)                    # small: the reference itself


@pytest.mark.parametrize("max_basis", [None, 24])
def test_subspace_with_an_operator_that_reuses_its_output(max_basis):
    """The basis's first block is the operator's output itself until the basis grows; it is
    copied before the operator runs again, so an operator that returns the same array every call
    (overwritten in place) still gives the dense answer, also with a restart on the first
    expansion (max_basis just above the block)."""
    from linxling.operators import CallableOperator
    rng = np.random.default_rng(8)
    n, k = 400, 8
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    lam = np.geomspace(50, 0.1, n)
    A = (Q * lam) @ Q.T
    out = {}

    def apply(B):
        buf = out.setdefault(B.shape[1], np.empty((n, B.shape[1])))
        np.matmul(A, B, out=buf)
        return buf

    op = CallableOperator(apply, (n, n), np.float64, symmetric=True)
    res = eigsh(op, k, tol=1e-8, method="subspace", random_state=0, block_size=k + 10, max_basis=max_basis)
    assert res.converged and res.n_iter > 1
    np.testing.assert_allclose(res.eigenvalues, lam[:k], rtol=1e-7)


def test_subspace_converged_on_its_first_block_makes_no_basis_buffers():
    """A solve that converges on its first block (a start that spans the range of an operator
    of rank below the block) never makes the (n, max_basis) basis buffers: its peak memory stays
    well below their size."""
    import tracemalloc
    rng = np.random.default_rng(9)
    n, k, rank = 30_000, 10, 12
    U, _ = np.linalg.qr(rng.standard_normal((n, rank)))
    s = np.geomspace(10, 1, rank)
    from linxling.operators import CallableOperator
    op = CallableOperator(lambda B: U @ (s[:, None] * (U.T @ B)), (n, n), np.float64, symmetric=True)
    start = np.hstack([U, rng.standard_normal((n, 8))])
    tracemalloc.start()
    try:
        res = eigsh(op, k, tol=1e-8, method="subspace", random_state=0, block_size=20, max_basis=200, v0=start)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.converged and res.n_iter == 1
    np.testing.assert_allclose(res.eigenvalues, s[:k], rtol=1e-8)
    buffers = 2 * n * 200 * 8                      # 96 MB; the rest of the solve about 30 MB
    assert peak < buffers / 2, (peak, buffers)
