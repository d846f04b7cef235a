"""The array-namespace path (linxling.xp) that a GPU runs, run here with NumPy/SciPy and compared
with the numba path (issue #28): WMF loss and factors to 1e-6, CSLS ranks exactly, Cr5 to 1e-8 at
tight tolerances; nothing crosses between host and device inside an iteration. Tests marked
``gpu`` run the same comparisons with CuPy and skip without a CUDA device."""
from __future__ import annotations

import shutil
import subprocess
import types

import numpy as np
import pytest
import scipy.sparse as sp
from _corpora import sentence_matrix

from linxling import WMF, BilingualWMF
from linxling._backend import cupy_status
from linxling.xp import CountingDevice, Device

GPU, GPU_REASON = cupy_status()
_skip = pytest.mark.skipif(not GPU, reason=f"no usable CuPy/CUDA device: {GPU_REASON}")


def gpu(f):
    """Marked ``gpu`` (``pytest -m gpu`` on the device machine) and skipped here without one."""
    return pytest.mark.gpu(_skip(f))


def _close(a, b, tol):
    assert np.linalg.norm(a - b) <= tol * max(np.linalg.norm(b), 1e-300), np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("solver", ["cg", "cholesky"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_wmf_half_steps_on_the_array_path_equal_the_numba_kernels(solver, dtype):
    X = sentence_matrix(150, 60, seed=0, dtype=dtype, density=0.1, empty_row=7, empty_col=3)
    kw = dict(n_components=6, alpha=0.5, max_iter=4, solver=solver, random_state=0, dtype=dtype,
              show_progress=False)
    ref = WMF(**kw).fit(X)
    dev = CountingDevice()
    got = WMF(**kw, device=dev).fit(X)
    tol = 1e-10 if dtype == np.float64 else 2e-4
    _close(got.embedding_, ref.embedding_, tol)
    _close(got.components_, ref.components_, tol)
    np.testing.assert_allclose(got.loss_curve_, ref.loss_curve_, rtol=tol)
    assert not got.embedding_[7].any()                       # the empty row solves to zero


def test_bilingual_wmf_on_the_array_path_and_no_transfer_inside_an_iteration():
    Xs = {"en": sentence_matrix(90, 40, seed=1, density=0.12), "es": sentence_matrix(90, 33, seed=2, density=0.12)}
    kw = dict(n_components=4, alpha=0.5, max_iter=3, random_state=0, show_progress=False)
    ref = BilingualWMF(**kw).fit(Xs)
    counts = []
    for n_iter in (1, 3):
        dev = CountingDevice()
        got = BilingualWMF(**dict(kw, max_iter=n_iter), device=dev).fit(Xs)
        counts.append((dev.puts, dev.gets))
    _close(got.embedding_, ref.embedding_, 1e-10)
    for lang in Xs:
        _close(got.components_[lang], ref.components_[lang], 1e-10)
    assert counts[0] == counts[1]            # the same transfers for 1 and 3 iterations: none per iteration


def test_device_is_validated_and_saved_by_name(tmp_path):
    import linxling
    X = sentence_matrix(40, 20, seed=3, density=0.2)
    with pytest.raises(ValueError, match=r"'device' parameter of WMF must be a str among \{[a-z', ]+\}, an instance "
                                         r"of 'linxling.xp.Device' or None\. Got 'tpu'"):
        WMF(device="tpu").fit(X)
    m = WMF(n_components=2, max_iter=1, random_state=0, device=Device("numpy"), show_progress=False).fit(X)
    m.save(tmp_path / "m.h5")
    assert linxling.load(tmp_path / "m.h5").transform(X[:2]).shape == (2, 2)


@gpu
def test_wmf_on_the_gpu_equals_the_cpu():
    X = sentence_matrix(300, 80, seed=0, density=0.08)
    kw = dict(n_components=8, alpha=0.5, max_iter=3, random_state=0, show_progress=False)
    _close(WMF(**kw, device="cuda").fit(X).embedding_, WMF(**kw).fit(X).embedding_, 1e-8)


@gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [8, 40])
def test_fused_cg_kernel_equals_the_array_path_and_the_cpu_kernel(dtype, k):
    """The fused CUDA half-step (linxling.xp._cuda_cg) against the array path on the GPU and the
    numba kernel on the CPU: rows empty, short and longer than LONG_ROW (the block teams), every
    row sent to one kind of team (long_row 0 / huge) or split by the default."""
    import cupy

    from linxling.kernels import als
    from linxling.xp import als as xals
    from linxling.xp._cuda_cg import LONG_ROW, fused_cg_half_step
    rng = np.random.default_rng(0)
    n_cols = 3 * LONG_ROW
    X = sp.random(60, n_cols, density=0.03, random_state=1, format="lil", dtype=dtype)
    X[3] = 0
    for u in (1, 20, 41):                                    # rows longer than LONG_ROW
        X[u, rng.choice(n_cols, 2 * LONG_ROW, replace=False)] = rng.random(2 * LONG_ROW) + 0.5
    X = X.tocsr()
    Y = (rng.standard_normal((n_cols, k)) * 0.3).astype(dtype)
    E0 = (rng.standard_normal((60, k)) * 0.1).astype(dtype)
    w, lam = 0.1, 0.5
    ref, ref_obj = als.als_half_step(X, Y, E0.copy(), missing_weight=w, regularization=lam, solver="cg",
                                     cg_steps=3, return_objective=True)
    dev = Device("cupy")
    DX = xals.DeviceCSR(dev, X, dtype)
    Yd = cupy.asarray(Y)
    G = xals.gram(dev, Yd, w, lam)
    dw = cupy.full(n_cols, 1 - w, dtype=dtype)
    tol = 1e-10 if dtype == np.float64 else 2e-4
    arr = cupy.asarray(E0)
    arr_obj = xals.half_step(dev, DX, Yd, arr, G, dw, "cg", 3, fused=False)
    got = {}
    for long_row in (None, 0, 10 ** 9):
        out = cupy.asarray(E0)
        obj = fused_cg_half_step(DX, Yd, out, G, dw, 3, long_row=long_row)
        got[long_row] = out.get(), obj
        _close(out.get(), ref, tol)
        _close(out.get(), arr.get(), tol)
        assert not out.get()[3].any()                        # the empty row solves to zero
        np.testing.assert_allclose([obj, arr_obj], [ref_obj, ref_obj], rtol=tol)
    out = cupy.asarray(E0)                                   # the default on CuPy: fused, the same bits
    assert xals.half_step(dev, DX, Yd, out, G, dw, "cg", 3) == got[None][1]
    np.testing.assert_array_equal(out.get(), got[None][0])


def test_fused_cg_kernel_sizes_its_teams_to_the_shared_memory(monkeypatch):
    """Team sizes follow the 48 KiB of shared memory; a k beyond it takes the array path (here:
    the limit patched down, so a NumPy device asked for the fused kernel runs the array path)."""
    from linxling.xp import _cuda_cg as cc
    from linxling.xp import als as xals
    assert (cc.team_warps(100, 4), cc.short_teams(100, 4), cc.fits(100, 4)) == (32, 4, True)
    assert cc.team_warps(128, 8) == 32 and cc.team_warps(129, 4) == 16
    assert (cc.team_warps(300, 8), cc.short_teams(3000, 8)) == (16, 1)
    assert cc.team_warps(3000, 8) == 1 and cc.fits(3072, 8) and not cc.fits(3073, 8)
    X = sentence_matrix(40, 30, seed=0, density=0.2)
    dev = CountingDevice()
    DX = xals.DeviceCSR(dev, X, np.float64)
    Y = np.random.default_rng(0).standard_normal((30, 8)) * 0.3
    G = xals.gram(dev, Y, 0.1, 0.5)
    dw = np.full(30, 0.9)
    ref = np.zeros((40, 8))
    ref_obj = xals.half_step(dev, DX, Y, ref, G, dw, "cg", 3, fused=False)
    monkeypatch.setattr(cc, "SHARED_BYTES", 64)
    got = np.zeros((40, 8))
    assert xals.half_step(dev, DX, Y, got, G, dw, "cg", 3, fused=True) == ref_obj
    np.testing.assert_array_equal(got, ref)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no CUDA toolkit (nvcc) to compile the fused kernel")
@pytest.mark.parametrize("dtype,k", [("float32", 100), ("float64", 40), ("float32", 8)])
def test_fused_cg_kernel_compiles_for_both_kinds_of_team(tmp_path, dtype, k):
    """The fused kernel's CUDA source compiles (nvcc, no device needed) for one-warp teams and
    block teams, within the launch bounds (a GPU run would fail on the first half-step)."""
    from linxling.xp._cuda_cg import SHORT_TEAMS, kernel_source, team_warps
    warps = team_warps(k, np.dtype(dtype).itemsize)
    assert warps >= 2
    for nw, block in ((1, 32 * SHORT_TEAMS), (warps, 32 * warps)):
        src = tmp_path / f"k{nw}.cu"
        src.write_text(kernel_source(dtype, k, nw, block))
        res = subprocess.run(["nvcc", "-arch=sm_80", "-cubin", "-o", str(tmp_path / "k.cubin"), str(src)],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no CUDA toolkit (nvcc) to compile the SpMM kernel")
@pytest.mark.parametrize("dtype,m", [("float32", 64), ("float64", 300), ("float32", 5)])
def test_spmm_kernel_compiles(tmp_path, dtype, m):
    """The CSR x dense kernel's CUDA source compiles (nvcc, no device needed)."""
    from linxling.xp._cuda_spmm import columns_per_lane, kernel_source
    src = tmp_path / "s.cu"
    src.write_text(kernel_source(dtype, columns_per_lane(m)))
    res = subprocess.run(["nvcc", "-arch=sm_80", "-cubin", "-o", str(tmp_path / "s.cubin"), str(src)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("max_row", [1, 3, 7, 50, 299, 10_000])
def test_spmm_split_plan_sums_back_to_the_product(max_row):
    """The long-row plan of the SpMM kernel: segments of at most ``max_row`` nonzeros that tile
    every row in order (empty rows: one empty segment), whose partial products, added per row by
    the CSR of ones, are the product (SciPy here: the same arithmetic the kernel runs twice)."""
    from linxling.xp._cuda_spmm import split_plan
    rng = np.random.default_rng(5)
    X = sp.random(40, 400, density=0.05, random_state=6, format="lil")
    X[3] = 0
    X[39] = 0
    X[11, rng.choice(400, 300, replace=False)] = rng.standard_normal(300)
    X = X.tocsr()
    plan = split_plan(X.indptr, max_row)
    if max_row >= np.diff(X.indptr).max():
        assert plan is None and split_plan(X.indptr, None) is None
        return
    seg_indptr, row_segs = plan
    lengths = np.diff(seg_indptr)
    assert lengths.max() <= max_row and seg_indptr[0] == 0 and seg_indptr[-1] == X.nnz
    assert np.all(lengths >= 0) and row_segs[-1] == seg_indptr.size - 1
    np.testing.assert_array_equal(seg_indptr[row_segs], X.indptr)        # rows start where segments do
    segs = sp.csr_matrix((X.data, X.indices, seg_indptr), shape=(seg_indptr.size - 1, 400))
    ones = sp.csr_matrix((np.ones(segs.shape[0]), np.arange(segs.shape[0]), row_segs), shape=(40, segs.shape[0]))
    V = rng.standard_normal((400, 3))
    np.testing.assert_allclose(ones @ (segs @ V), X @ V, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="max_row"):
        split_plan(X.indptr, 0)


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [1, 5, 64, 300])
@pytest.mark.parametrize("max_row", [None, 64])
def test_spmm_kernel_equals_cusparse(dtype, m, max_row):
    """The CSR x dense kernel (linxling.xp._cuda_spmm) against cuSPARSE (cupyx) and SciPy: rows
    empty and long (more than 32 nonzeros: several passes of a warp), one and two column panels;
    rows kept whole and split into segments of 64 nonzeros (row 11 holds 300)."""
    import cupy
    import cupyx.scipy.sparse as csp

    from linxling.xp._cuda_spmm import csr_matmat, make_plan
    rng = np.random.default_rng(1)
    X = sp.random(500, 700, density=0.02, random_state=2, format="lil", dtype=dtype)
    X[7] = 0
    X[11, rng.choice(700, 300, replace=False)] = rng.standard_normal(300)
    X = X.tocsr()
    V = rng.standard_normal((700, m)).astype(dtype)
    Xd = csp.csr_matrix(X)
    plan = make_plan(Xd, max_row)
    assert plan.split == (max_row is not None)
    got = csr_matmat(Xd, cupy.asarray(V), plan=plan).get()
    tol = 1e-12 if dtype == np.float64 else 1e-5
    _close(got, (Xd @ cupy.asarray(V)).get(), tol)
    _close(got, X @ V, tol)
    assert not got[7].any()
    np.testing.assert_array_equal(csr_matmat(Xd, cupy.asarray(V), max_row=max_row).get(), got)   # the same bits again


def _numpy_as_another_namespace():
    """NumPy behind a module-like object that is not ``numpy`` itself: the retrieval code then
    takes its array-namespace (CuPy) branch instead of the numba kernels."""
    import types

    import scipy.linalg

    from linxling._backend import Namespace
    proxy = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    return Namespace("numpy-as-xp", proxy, sp, scipy.linalg)


@pytest.mark.parametrize("similarity", ["cosine", "csls"])
def test_retrieval_on_the_array_path_gives_the_numba_ranks_exactly(similarity, monkeypatch):
    import linxling.evaluate._retrieval as R
    from linxling.evaluate import retrieval
    rng = np.random.default_rng(0)
    Q, C = rng.standard_normal((300, 24)), rng.standard_normal((500, 24))
    gold = rng.permutation(500)[:300]
    ref = retrieval(Q, C, gold=gold, similarity=similarity, knn=10, block_size=64, return_ranks=True,
                    show_progress=False)
    ns = _numpy_as_another_namespace()
    monkeypatch.setattr(R, "get_namespace", lambda *a: ns)
    got = retrieval(Q, C, gold=gold, similarity=similarity, knn=10, block_size=64, return_ranks=True,
                    show_progress=False)
    np.testing.assert_array_equal(got["ranks"], ref["ranks"])


def test_top_k_desc_equals_a_sort_with_ties():
    from linxling.evaluate._retrieval import _top_k_desc
    rng = np.random.default_rng(3)
    S = rng.integers(0, 6, size=(40, 30)).astype(np.float32)      # many ties
    vals, where = _top_k_desc(S.copy(), 7, np)
    np.testing.assert_array_equal(vals, -np.sort(-S, axis=1)[:, :7])
    np.testing.assert_array_equal(np.take_along_axis(S, where, axis=1), vals)
    assert all(len(set(w)) == 7 for w in where)                     # each entry taken once


@pytest.mark.parametrize("block_size", [3, 64])
def test_csls_radii_on_the_array_path_equal_a_sort(block_size, monkeypatch):
    """Blocks smaller than knn (the running column buffer fills over several blocks) too."""
    from linxling.evaluate._retrieval import _csls_radii, _normalize_rows
    rng = np.random.default_rng(4)
    A = _normalize_rows(rng.standard_normal((50, 8)), np)
    B = _normalize_rows(rng.standard_normal((70, 8)), np)
    ns = _numpy_as_another_namespace()
    r_a, r_b = _csls_radii(A, B, 10, block_size, ns.xp)
    S = A @ B.T
    np.testing.assert_allclose(r_a, np.mean(-np.sort(-S, axis=1)[:, :10], axis=1), rtol=1e-14)
    np.testing.assert_allclose(r_b, np.mean(-np.sort(-S, axis=0)[:10], axis=0), rtol=1e-14)


@gpu
@pytest.mark.parametrize("similarity", ["cosine", "csls"])
def test_retrieval_on_the_gpu_gives_the_cpu_ranks_exactly(similarity):
    import cupy

    from linxling.evaluate import retrieval
    rng = np.random.default_rng(0)
    Q, C = rng.standard_normal((3000, 48)), rng.standard_normal((5000, 48))
    gold = rng.permutation(5000)[:3000]
    kw = dict(gold=gold, similarity=similarity, knn=10, block_size=512, return_ranks=True, show_progress=False)
    ref = retrieval(Q, C, **kw)
    got = retrieval(cupy.asarray(Q), cupy.asarray(C), **kw)
    np.testing.assert_array_equal(got["ranks"], ref["ranks"])


@gpu
@pytest.mark.parametrize("solver", ["cg", "cholesky"])
def test_bilingual_wmf_on_the_gpu_equals_the_cpu(solver):
    X = sentence_matrix(300, 80, seed=0, density=0.08)
    Y = sentence_matrix(300, 60, seed=1, density=0.1)
    kw = dict(n_components=8, alpha=0.5, max_iter=3, random_state=0, show_progress=False, solver=solver)
    got = BilingualWMF(**kw, device="cuda").fit({"a": X, "b": Y})
    ref = BilingualWMF(**kw).fit({"a": X, "b": Y})
    _close(got.embedding_, ref.embedding_, 1e-8)
    for lang in "ab":
        _close(got.components_[lang], ref.components_[lang], 1e-8)
    np.testing.assert_allclose(got.loss_curve_, ref.loss_curve_, rtol=1e-10)
    f32 = WMF(n_components=8, alpha=0.5, max_iter=3, random_state=0, show_progress=False, dtype=np.float32)
    _close(f32.set_params(device="cuda").fit(X).embedding_, f32.set_params(device="cpu").fit(X).embedding_, 2e-4)


@pytest.mark.parametrize("dense_max", [8192, 0])           # dense inverses, or CG on every block
def test_cr5_on_the_array_path_equals_the_numba_fit_and_the_oracle(dense_max, monkeypatch):
    import linxling.xp.cr5 as xc
    from linxling import Cr5
    from tests.test_cr5 import TIGHT, dense_cr5_oracle, embedded_cosines, random_problem
    monkeypatch.setattr(xc, "DENSE_MAX", dense_max)
    rng = np.random.default_rng(3)
    blocks, concepts = random_problem(rng, n_langs=3, n_concepts=60)
    test = {lang: sp.random(15, X.shape[1], density=0.3, random_state=rng, format="csr") for lang, X in blocks.items()}
    r, alpha = 6, 0.5
    Phi, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    ref = Cr5(n_components=r, alpha=alpha, random_state=0, **TIGHT).fit_matrices(blocks, concepts)
    got = Cr5(n_components=r, alpha=alpha, random_state=0, device=Device("numpy"), **TIGHT).fit_matrices(
        blocks, concepts)
    np.testing.assert_allclose(got.singular_values_, ref.singular_values_, rtol=1e-8)
    np.testing.assert_allclose(got.singular_values_, sv, rtol=1e-8)
    np.testing.assert_allclose(embedded_cosines(got.transform_matrix, test),
                               embedded_cosines(ref.transform_matrix, test), atol=1e-8)
    assert got.convergence_["eig"]["converged"] and got.fit_info_["block_methods"]["a"] == (
        "dense" if dense_max else "cg")
    # the CPU fit's stage names, and the host's set-up before them
    stages = [got.fit_info_[f"time_{k}"] for k in ("setup", "factor", "start", "eig", "phi")]
    assert min(stages) >= 0 and sum(stages) <= got.fit_info_["time_total"]


@pytest.mark.parametrize("maxiter,max_basis", [(200, None), (200, 12), (2, 12)])
def test_eig_subspace_carries_linear_blocks_through_restarts(maxiter, max_basis):
    """``carry=True``: blocks linear in the applied columns come back as those of the Ritz vectors
    (B V for carried B Y), through thick restarts (a small basis) and a stop before convergence."""
    from linxling.xp.linalg import eig_subspace
    rng = np.random.default_rng(5)
    n, k = 60, 4
    Qr, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = (Qr * np.geomspace(1, 1e-3, n)) @ Qr.T
    B1, B2 = rng.standard_normal((7, n)), rng.standard_normal((3, n))
    dev = Device("numpy")
    res = eig_subspace(dev, lambda Y: (A @ Y, [B1 @ Y, B2 @ Y]), n, k, 1e-10, maxiter, np.float64,
                       np.random.default_rng(0), block_size=6, max_basis=max_basis, carry=True)
    V = res["eigenvectors"]
    assert res["converged"] == (maxiter > 2)
    np.testing.assert_allclose(res["carried"][0], B1 @ V, atol=1e-12)
    np.testing.assert_allclose(res["carried"][1], B2 @ V, atol=1e-12)


@pytest.mark.filterwarnings("ignore:Cr5. the eigen-solve did not converge")   # maxiter=1 on purpose
def test_cr5_on_the_array_path_moves_data_only_at_set_up_and_end():
    from linxling import Cr5
    from tests.test_cr5 import random_problem
    blocks, concepts = random_problem(np.random.default_rng(4), n_langs=2, n_concepts=50)
    counts = []
    for maxiter in (1, 30):
        dev = CountingDevice()
        Cr5(n_components=5, random_state=0, eig_tol=1e-12, eig_maxiter=maxiter, device=dev).fit_matrices(
            blocks, concepts)
        counts.append((dev.puts, dev.gets))
    assert counts[0] == counts[1]


def test_cr5_kernel_products_dispatch_dense_blocks_to_the_kernel(monkeypatch):
    """``linxling.xp.cr5.PRODUCTS = "kernel"``: the wrapper sends products with dense 2-D blocks to
    the SpMM kernel (a recording stand-in here) and the rest to the matrix; a bad value is named."""
    import linxling.xp._cuda_spmm as ks
    import linxling.xp.cr5 as xc
    from tests.test_cr5 import random_problem
    calls = []
    monkeypatch.setattr(ks, "csr_matmat", lambda A, V, plan=None: calls.append(V.shape) or np.asarray(A @ V))
    monkeypatch.setattr(ks, "make_plan", lambda A: None)
    X = sp.random(20, 9, density=0.3, random_state=0, format="csr")
    K = xc._KernelCSR(X)
    V = np.arange(18.0).reshape(9, 2)
    np.testing.assert_array_equal(K @ V, X @ V)
    np.testing.assert_array_equal(K @ V[:, 0], X @ V[:, 0])               # 1-D: the matrix's own product
    np.testing.assert_array_equal(K @ V.astype(np.float32), X @ V.astype(np.float32))   # another dtype: too
    np.testing.assert_array_equal((xc._KernelCSR(X.T.tocsr()) @ K).toarray(), (X.T @ X).toarray())
    assert calls == [(9, 2)] and K.shape == X.shape and K.multiply(X).nnz == X.nnz
    np.testing.assert_array_equal(K.multiply(K).toarray(), X.multiply(X).toarray())
    big = xc._KernelCSR(X)
    big.small = False                                    # as for a block of more than 2**31 - 1 nonzeros
    calls.clear()
    np.testing.assert_array_equal(big @ V, X @ V)
    assert calls == []
    assert ks.fits_int32(X) and not ks.fits_int32(types.SimpleNamespace(nnz=2**31, shape=(5, 5)))
    assert not ks.fits_int32(types.SimpleNamespace(nnz=5, shape=(5, 2**31)))
    # the whole fit through the wrapper (forced on the NumPy device, the stand-in kernel is SciPy's
    # product): every block kind (dense Cholesky, block CG) against the fit without it
    blocks, concepts = random_problem(np.random.default_rng(4), n_langs=2, n_concepts=40)
    labels = [np.unique(concepts[lang], return_inverse=True)[1] for lang in blocks]
    for dense_max in (xc.DENSE_MAX, 0):
        ref = xc.fit_cr5(Device("numpy"), list(blocks.values()), labels, 40, 3, 1.0, np.float64, dense_max=dense_max,
                         random_state=0)
        with monkeypatch.context() as mp:
            mp.setattr(xc, "_kernel_products", lambda dev: True)
            calls.clear()
            got = xc.fit_cr5(Device("numpy"), list(blocks.values()), labels, 40, 3, 1.0, np.float64,
                             dense_max=dense_max, random_state=0)
        stages = got["info"].pop("timings"), ref["info"].pop("timings")
        assert calls and got["info"] == ref["info"]
        assert all(set(t) == {"time_factor", "time_start", "time_eig", "time_phi"} and min(t.values()) >= 0
                   for t in stages)
        np.testing.assert_array_equal(got["singular_values"], ref["singular_values"])
    monkeypatch.setattr(xc, "PRODUCTS", "nope")
    with pytest.raises(ValueError, match="PRODUCTS must be"):
        xc.fit_cr5(Device("numpy"), list(blocks.values()), labels, 40, 3, 1.0, np.float64)


@gpu
@pytest.mark.parametrize("dense_max", [8192, 0])
def test_cr5_on_the_gpu_with_the_spmm_kernel_equals_cusparse(dense_max, monkeypatch):
    import linxling.xp.cr5 as xc
    from linxling import Cr5
    from tests.test_cr5 import TIGHT, random_problem
    monkeypatch.setattr(xc, "DENSE_MAX", dense_max)
    blocks, concepts = random_problem(np.random.default_rng(3), n_langs=3, n_concepts=60)
    kw = dict(n_components=6, alpha=0.5, random_state=0, device="cuda", **TIGHT)
    monkeypatch.setattr(xc, "PRODUCTS", "cusparse")
    ref = Cr5(**kw).fit_matrices(blocks, concepts)
    monkeypatch.setattr(xc, "PRODUCTS", "kernel")
    got = Cr5(**kw).fit_matrices(blocks, concepts)
    np.testing.assert_allclose(got.singular_values_, ref.singular_values_, rtol=1e-8)


@gpu
def test_cr5_on_the_gpu_equals_the_cpu():
    from linxling import Cr5
    from tests.test_cr5 import TIGHT, random_problem
    blocks, concepts = random_problem(np.random.default_rng(3), n_langs=3, n_concepts=60)
    kw = dict(n_components=6, alpha=0.5, random_state=0, **TIGHT)
    np.testing.assert_allclose(Cr5(**kw, device="cuda").fit_matrices(blocks, concepts).singular_values_,
                               Cr5(**kw).fit_matrices(blocks, concepts).singular_values_, rtol=1e-8)


def _spd_problem(rng, p=300, b=7, dtype=np.float64):
    """A sparse Gram plus ridge (Cr5's inner systems' shape) and b right-hand sides, one zero."""
    X = sp.random(600, p, density=0.02, random_state=rng, dtype=np.float64, format="csr")
    A = (X.T @ X + 0.5 * sp.eye(p)).tocsr().astype(dtype)
    B = rng.standard_normal((p, b)).astype(dtype)
    B[:, 3] = 0                                          # a zero column: done from the start
    return A, B, np.asarray(A.diagonal())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_cg_iterations_equal_the_array_path(dtype):
    """cg_columns' fused iterations (_cg_fused, every array updated in place by seven kernels), run
    with NumPy stand-ins of the CuPy kernels, against its array path: the same iterations, flags
    and solutions to rounding (the GPU test below runs the CuPy kernels themselves)."""
    from linxling.xp import linalg as xl
    A, B, d = _spd_problem(np.random.default_rng(0), dtype=dtype)
    dev = Device("numpy")
    apply = lambda P: A @ P                                    # noqa: E731
    X, it, ok = xl.cg_columns(dev, apply, B, d, 1e-6, 200)
    for X0 in (None, 0.5 * X):                                  # cold and warm starts
        Xf, itf, okf = xl._cg_fused(dev, apply, *xl.cg_start(dev, apply, B, d, 1e-6, X0), 200,
                                    xl._numpy_cg_kernels())
        Xw, itw, okw = xl.cg_columns(dev, apply, B, d, 1e-6, 200, X0=X0)
        assert itf == itw and 0 < itw < 200 and okw.all() and np.array_equal(okf, okw)
        _close(Xf, Xw, 1e-12 if dtype == np.float64 else 1e-5)
        _close(A @ Xf, B, 1e-5 if dtype == np.float64 else 1e-4)
    assert ok.all()


@pytest.mark.parametrize("every", [2, 3, 4, 50])
def test_cg_tests_its_flags_every_few_iterations_with_the_same_solution(every, monkeypatch):
    """CG_CHECK_EVERY: the flags read on the host every few iterations; a converged column takes
    steps of zero, so the solutions and flags are those of testing every iteration, bit for bit
    (array path and fused recurrences), only up to every - 1 more iterations run; maxiter holds."""
    from linxling.xp import linalg as xl
    A, B, d = _spd_problem(np.random.default_rng(0))
    dev = Device("numpy")
    apply = lambda P: A @ P                                    # noqa: E731
    X, it, ok = xl.cg_columns(dev, apply, B, d, 1e-6, 200)
    Xf, itf, okf = xl._cg_fused(dev, apply, *xl.cg_start(dev, apply, B, d, 1e-6), 200, xl._numpy_cg_kernels())
    monkeypatch.setattr(xl, "CG_CHECK_EVERY", every)
    Xe, ite, oke = xl.cg_columns(dev, apply, B, d, 1e-6, 200)
    Xg, itg, okg = xl._cg_fused(dev, apply, *xl.cg_start(dev, apply, B, d, 1e-6), 200, xl._numpy_cg_kernels(),
                                every)
    assert ok.all() and 0 < it < 200
    for got, ref, (n, n_ref) in ((Xe, X, (ite, it)), (Xg, Xf, (itg, itf))):
        np.testing.assert_array_equal(got, ref)
        assert n_ref <= n < n_ref + every and (n % every == 0 or n == 200)
    np.testing.assert_array_equal(oke, ok)
    np.testing.assert_array_equal(okg, okf)
    # the iteration limit is kept: 7 iterations, not the next multiple of every
    _, n7, ok7 = xl.cg_columns(dev, apply, B, d, 1e-12, 7)
    assert n7 == 7 and not ok7.all()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_cg_check_every_must_be_a_positive_int(bad, monkeypatch):
    from linxling.xp import linalg as xl
    A, B, d = _spd_problem(np.random.default_rng(0))
    monkeypatch.setattr(xl, "CG_CHECK_EVERY", bad)
    with pytest.raises(ValueError, match="CG_CHECK_EVERY must be a positive int"):
        xl.cg_columns(Device("numpy"), lambda P: A @ P, B, d, 1e-6, 20)


def test_fused_cg_is_for_cupy_only(monkeypatch):
    """FUSED_CG (or fused=True) leaves NumPy on the array path, the kernels' reference."""
    from linxling.xp import linalg as xl
    A, B, d = _spd_problem(np.random.default_rng(1))
    monkeypatch.setattr(xl, "_cg_fused", None)             # would fail if the NumPy path took it
    monkeypatch.setattr(xl, "FUSED_CG", True)
    X, it, ok = xl.cg_columns(Device("numpy"), lambda P: A @ P, B, d, 1e-8, 300, fused=True)
    assert ok.all()
    _close(A @ X, B, 1e-7)


@gpu
@pytest.mark.parametrize("fused", [False, True])
def test_cg_flags_every_few_iterations_on_the_gpu(fused, monkeypatch):
    """CG_CHECK_EVERY on CuPy: the same solution and flags bit for bit, up to every - 1 more
    iterations (the converged columns' steps are zero in both the array path and the kernels)."""
    import cupy as cp
    import cupyx.scipy.sparse as csp

    from linxling.xp import linalg as xl
    A, B, d = _spd_problem(np.random.default_rng(2), p=2000, b=40)
    dev = Device("cupy")
    Ad, Bd, dd = csp.csr_matrix(A), cp.asarray(B), cp.asarray(d)
    X, it, ok = xl.cg_columns(dev, lambda P: Ad @ P, Bd, dd, 1e-6, 300, fused=fused)
    monkeypatch.setattr(xl, "CG_CHECK_EVERY", 4)
    Xe, ite, oke = xl.cg_columns(dev, lambda P: Ad @ P, Bd, dd, 1e-6, 300, fused=fused)
    assert bool(ok.all()) and it <= ite < it + 4 and ite % 4 == 0
    np.testing.assert_array_equal(cp.asnumpy(Xe), cp.asnumpy(X))
    np.testing.assert_array_equal(cp.asnumpy(oke), cp.asnumpy(ok))


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_cg_kernels_equal_the_array_path_on_the_gpu(dtype):
    import cupy as cp
    import cupyx.scipy.sparse as csp

    from linxling.xp import linalg as xl
    A, B, d = _spd_problem(np.random.default_rng(2), p=2000, b=40, dtype=dtype)
    dev = Device("cupy")
    Ad, Bd, dd = csp.csr_matrix(A), cp.asarray(B), cp.asarray(d)
    X, it, ok = xl.cg_columns(dev, lambda P: Ad @ P, Bd, dd, 1e-5, 300, fused=False)
    Xf, itf, okf = xl.cg_columns(dev, lambda P: Ad @ P, Bd, dd, 1e-5, 300, fused=True)
    # the same recurrences, rounded differently (fused multiply-adds, reduction order): the
    # iteration counts may differ where a column's residual crosses rtol; both solve the system
    assert abs(itf - it) <= 2 and bool(okf.all()) and bool(ok.all())
    Xf, X = cp.asnumpy(Xf).astype(np.float64), cp.asnumpy(X).astype(np.float64)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    res = [np.linalg.norm(B64 - A64 @ Y) for Y in (Xf, X)]
    for r in res:
        assert r <= (1e-4 if dtype == np.float32 else 2e-5) * np.linalg.norm(B64)
    # Xf - X = A^-1 ((B - A X) - (B - A Xf)), and A's smallest eigenvalue is at least the ridge
    # 0.5 (less float32's rounding of A's entries, far inside 0.49): the two solutions can differ
    # by no more than the sum of their residuals over 0.49. (Rounding differences between the two
    # paths grow over the CG iterations, so a fixed closeness such as 1e-9 is not a bound; the H200
    # gave 1.2e-9 relative in float64.)
    assert np.linalg.norm(Xf - X) <= sum(res) / 0.49


@gpu
def test_cr5_on_the_gpu_with_fused_cg_equals_the_array_path(monkeypatch):
    import linxling.xp.cr5 as xc
    import linxling.xp.linalg as xl
    from linxling import Cr5
    from tests.test_cr5 import TIGHT, random_problem
    monkeypatch.setattr(xc, "DENSE_MAX", 0)                 # every block solved by CG
    blocks, concepts = random_problem(np.random.default_rng(3), n_langs=3, n_concepts=60)
    kw = dict(n_components=6, alpha=0.5, random_state=0, device="cuda", **TIGHT)
    monkeypatch.setattr(xl, "FUSED_CG", False)
    ref = Cr5(**kw).fit_matrices(blocks, concepts)
    monkeypatch.setattr(xl, "FUSED_CG", True)
    got = Cr5(**kw).fit_matrices(blocks, concepts)
    np.testing.assert_allclose(got.singular_values_, ref.singular_values_, rtol=1e-8)


class _FakeCupyCSR:
    """Looks like a ``cupyx.scipy.sparse`` matrix to the dispatch (its module), ``get()`` gives
    the SciPy matrix back."""
    __module__ = "cupyx.scipy.sparse._csr"

    def __init__(self, X):
        self._X, self.shape = X, X.shape

    def get(self):
        return self._X


def test_cupy_inputs_imply_the_gpu_and_an_explicit_cpu_fits_them_on_the_cpu():
    from linxling import Cr5
    from linxling.xp import choose_device, is_device_array
    from tests.test_cr5 import random_problem
    X = sentence_matrix(60, 30, seed=1, density=0.15)
    fake = _FakeCupyCSR(X)
    assert is_device_array(fake) and not is_device_array(X)
    assert choose_device(None, [X, fake]) == "cuda" and choose_device(None, [X]) == "cpu"
    assert choose_device("cpu", [fake]) == "cpu"
    kw = dict(n_components=3, max_iter=2, random_state=0, show_progress=False)
    if not GPU:       # device=None with CuPy data asks for the GPU: here that is CuPy's error
        with pytest.raises(RuntimeError, match="device='cuda' needs CuPy"):
            WMF(**kw).fit(fake)
    m = WMF(**kw, device="cpu").fit(fake)
    assert m.device_ == "cpu"
    np.testing.assert_array_equal(m.embedding_, WMF(**kw).fit(X).embedding_)
    assert BilingualWMF(**kw, device="cpu").fit({"a": fake, "b": X}).device_ == "cpu"
    blocks, concepts = random_problem(np.random.default_rng(5), n_langs=2, n_concepts=20)
    got = Cr5(n_components=3, random_state=0, device="cpu").fit_matrices(
        {lang: _FakeCupyCSR(B) for lang, B in blocks.items()}, concepts)
    ref = Cr5(n_components=3, random_state=0).fit_matrices(blocks, concepts)
    assert got.device_ == "cpu" and ref.device_ == "cpu"
    np.testing.assert_array_equal(got.singular_values_, ref.singular_values_)


@gpu
def test_cupy_inputs_fit_on_the_gpu_by_default():
    import cupyx.scipy.sparse as csp

    from linxling import Cr5
    from tests.test_cr5 import TIGHT, random_problem
    X = sentence_matrix(300, 80, seed=0, density=0.08)
    kw = dict(n_components=8, alpha=0.5, max_iter=3, random_state=0, show_progress=False)
    m = WMF(**kw).fit(csp.csr_matrix(X))
    assert m.device_ == "cuda" and isinstance(m.embedding_, np.ndarray)
    _close(m.embedding_, WMF(**kw).fit(X).embedding_, 1e-8)
    blocks, concepts = random_problem(np.random.default_rng(3), n_langs=3, n_concepts=60)
    c = Cr5(n_components=6, alpha=0.5, random_state=0, **TIGHT).fit_matrices(
        {lang: csp.csr_matrix(B) for lang, B in blocks.items()}, concepts)
    assert c.device_ == "cuda"
    np.testing.assert_allclose(c.singular_values_, Cr5(n_components=6, alpha=0.5, random_state=0, **TIGHT)
                               .fit_matrices(blocks, concepts).singular_values_, rtol=1e-8)


@gpu
def test_cr5_on_the_gpu_with_the_start_drawn_on_the_device_equals_the_cpu(monkeypatch):
    """START_ON_DEVICE: another random start, the same converged fit; the device's generator is
    seeded from random_state (the same seed in two fits)."""
    import cupy as cp

    import linxling.xp.cr5 as xc
    from linxling import Cr5
    from tests.test_cr5 import TIGHT, random_problem
    seeds = []
    real = cp.random.RandomState

    def recording(seed=None, *a, **k):
        seeds.append(seed)
        return real(seed, *a, **k)
    monkeypatch.setattr(cp.random, "RandomState", recording)
    blocks, concepts = random_problem(np.random.default_rng(3), n_langs=3, n_concepts=60)
    kw = dict(n_components=6, alpha=0.5, random_state=0, **TIGHT)
    ref = Cr5(**kw).fit_matrices(blocks, concepts)
    monkeypatch.setattr(xc, "START_ON_DEVICE", True)
    got = [Cr5(**kw, device="cuda").fit_matrices(blocks, concepts) for _ in range(2)]
    assert len(seeds) == 2 and seeds[0] == seeds[1] and isinstance(seeds[0], int)
    np.testing.assert_allclose(got[0].singular_values_, ref.singular_values_, rtol=1e-8)
    np.testing.assert_allclose(got[1].singular_values_, ref.singular_values_, rtol=1e-8)


def test_the_start_on_the_device_is_for_cupy_only(monkeypatch):
    """START_ON_DEVICE leaves the NumPy path's start (the host's draws) as it is."""
    import linxling.xp.cr5 as xc
    from linxling import Cr5
    from tests.test_cr5 import TIGHT, random_problem
    blocks, concepts = random_problem(np.random.default_rng(3), n_langs=2, n_concepts=40)
    kw = dict(n_components=4, alpha=0.5, random_state=0, device=Device("numpy"), **TIGHT)
    monkeypatch.setattr(xc, "START_ON_DEVICE", False)
    ref = Cr5(**kw).fit_matrices(blocks, concepts)
    monkeypatch.setattr(xc, "START_ON_DEVICE", True)
    got = Cr5(**kw).fit_matrices(blocks, concepts)
    for a, b in zip(got.components_.values(), ref.components_.values(), strict=True):
        np.testing.assert_array_equal(a, b)
