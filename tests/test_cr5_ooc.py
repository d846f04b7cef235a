"""Cr5 out of core: every language a ChunkedCSR on disk, streamed; the row sources it uses."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _optional import CHOLMOD

from linxling import Cr5
from linxling.io import write_chunks
from linxling.operators._source import ChunkedSource, CSRSource, as_row_source
from tests.test_cr5 import TIGHT, dense_cr5_oracle, random_problem


def _matrix(rng, n=57, p=23, density=0.2):
    X = sp.random(n, p, density=density, random_state=rng, format="csr")
    X.data[:] = rng.random(X.nnz) + 0.1
    return X


@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_sources_match_dense_products(tmp_path, transpose, dtype):
    rng = np.random.default_rng(0)
    X = _matrix(rng)
    D = X.toarray()
    C = write_chunks(tmp_path / "x.h5", X, chunk_rows=10, transpose=transpose)
    for src in (CSRSource(X), ChunkedSource(C)):
        V = rng.standard_normal((23, 5)).astype(dtype)
        W = rng.standard_normal((57, 5)).astype(dtype)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        for got, ref in ((src.matmat(V), D @ V), (src.rmatmat(W), D.T @ W), (src.gram_matmat(V), D.T @ (D @ V))):
            assert got.dtype == dtype
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
        rows = rng.integers(0, 9, size=X.shape[0])                  # concepts with several rows
        K = rng.standard_normal((9, 5)).astype(dtype)
        got = src.rmatmat_rows(K, rows)
        np.testing.assert_allclose(got, D.T @ K[rows], rtol=tol, atol=tol * np.abs(got).max())
        if src.sums_by_chunk:
            out = np.ones((9, 5), dtype=dtype)
            src.add_rows_matmat(V, rows, out)
            want = np.ones((9, 5))
            np.add.at(want, rows, D @ V)
            np.testing.assert_allclose(out, want, rtol=tol, atol=tol * np.abs(want).max())
        np.testing.assert_allclose(src.column_sums(), D.sum(0), rtol=1e-12)
        np.testing.assert_allclose(src.column_sumsq(), (D ** 2).sum(0), rtol=1e-12)
        np.testing.assert_allclose(src.gram_sparse().toarray(), D.T @ D, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(src.row_nnz(), np.diff(X.indptr))
        assert (src.head(12) != X[:12]).nnz == 0
        assert src.column_stats().max_abs == pytest.approx(np.abs(D).max())


def test_chunked_source_streams_one_chunk_at_a_time(tmp_path):
    rng = np.random.default_rng(1)
    X = _matrix(rng, n=100)
    C = write_chunks(tmp_path / "x.h5", X, chunk_rows=9)
    src = as_row_source(C)
    assert isinstance(src, ChunkedSource) and src.kind == "hdf5"
    V = rng.standard_normal((23, 3))
    ref = src.gram_matmat(V)
    assert src.n_reads == 1              # small stored chunks are read together (READ_BYTES)
    np.testing.assert_allclose(ref, X.T @ (X @ V), rtol=1e-12)
    src.set_read_bytes(0)                # one stored chunk per read
    src.n_reads = 0
    np.testing.assert_allclose(src.gram_matmat(V), ref, rtol=1e-12)   # grouped by read: not bitwise
    # Xᵀ (X V) reads the 12 row chunks once (fused per read: no n × m block, no transpose read);
    # X V and Xᵀ W alone read the row chunks and the transpose's
    assert src.n_reads == C.n_chunks
    src.n_reads = 0
    np.testing.assert_allclose(src.rmatmat(src.matmat(V)), ref, rtol=1e-12)
    assert src.n_reads == C.n_chunks + C.T.n_chunks
    assert src.max_chunk_nbytes() == max(C.max_chunk_nbytes(), C.T.max_chunk_nbytes())
    assert src.max_chunk_nbytes(1 << 30) == 8 * 101 + 12 * X.nnz


@pytest.mark.parametrize("solver", ["jacobi", "krylov"])
def test_block_cg_on_a_streamed_gram_writes_into_its_buffer(tmp_path, solver, monkeypatch):
    """The block solvers let a streamed Gram product write into a buffer they reuse
    (``SourceGram.matmat_into``): the iterates are bitwise those of a fresh block per iteration,
    and the operator's counts the same."""
    from linxling.operators.gram import SourceGram
    from linxling.solvers.cg import jacobi_block_cg, krylov_block_cg
    rng = np.random.default_rng(5)
    X = _matrix(rng, n=300, p=40, density=0.15)
    src = ChunkedSource(write_chunks(tmp_path / "x.h5", X, chunk_rows=40), np.float32, read_bytes=0)
    B = rng.standard_normal((40, 6)).astype(np.float32)
    d = (src.column_sumsq() + 0.5).astype(np.float32)
    run = jacobi_block_cg if solver == "jacobi" else krylov_block_cg

    def solve():
        op = SourceGram(src, 0.5, dtype=np.float32)
        res = run(op, B, d, None, rtol=1e-6, maxiter=200)
        return res, op.n_matmat, op.n_matvec_equiv

    assert SourceGram(src, 0.5).writes_into
    outs = []
    real = ChunkedSource.gram_matmat
    monkeypatch.setattr(ChunkedSource, "gram_matmat",
                        lambda self, V, out=None: outs.append(out is not None) or real(self, V, out=out))
    got, n_into, cols_into = solve()
    assert outs and all(outs[1:])            # the first product (the residual) is a fresh block
    outs.clear()
    monkeypatch.setattr(ChunkedSource, "gram_into", False)     # as a DaskDiskSource: summed on the workers
    assert not SourceGram(src, 0.5).writes_into
    ref, n_ref, cols_ref = solve()
    assert not any(outs)
    np.testing.assert_array_equal(got.x, ref.x)
    assert got.n_iter == ref.n_iter > 1 and (n_into, cols_into) == (n_ref, cols_ref)
    D = X.toarray()
    np.testing.assert_allclose(D.T @ (D @ got.x) + 0.5 * got.x, B, rtol=1e-4, atol=1e-4 * np.abs(B).max())
    out = np.empty((40, 6), dtype=np.float32)
    assert src.gram_matmat(B, out=out) is out
    np.testing.assert_array_equal(out, src.gram_matmat(B))
    with pytest.raises(ValueError, match="out must be"):
        src.gram_matmat(B, out=np.empty((40, 6)))


def _chunked_problem(tmp_path, blocks, chunk_rows=13):
    return {lang: write_chunks(tmp_path / f"{lang}.h5", X, chunk_rows=chunk_rows) for lang, X in blocks.items()}


@pytest.mark.parametrize("block_method", ["dense", CHOLMOD, "cg"])
def test_chunked_fit_matches_dense_oracle_and_in_memory_fit(tmp_path, block_method, eig_space="concepts",
                                                             eig_method="subspace"):
    rng = np.random.default_rng(3)
    blocks, concepts = random_problem(rng, n_langs=3, n_concepts=50)
    r, alpha = 5, 0.5
    Phi, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    kw = dict(n_components=r, alpha=alpha, block_method=block_method, eig_method=eig_method,
              random_state=0, eig_space=eig_space, **TIGHT)
    streamed = Cr5(**kw).fit_matrices(_chunked_problem(tmp_path, blocks), concepts)
    in_memory = Cr5(**kw).fit_matrices(blocks, concepts)
    assert streamed.fit_info_["sources"] == {lang: "hdf5" for lang in blocks}
    assert set(streamed.fit_info_["block_methods"].values()) == {"none" if eig_method == "lobpcg" else block_method}
    assert not streamed.fit_info_["memory_plan"]["copies"]
    np.testing.assert_allclose(streamed.singular_values_, sv, rtol=1e-6)
    np.testing.assert_allclose(streamed.eigenvalues_, in_memory.eigenvalues_, rtol=1e-9)
    for lang in blocks:      # the row space (the projector) is what is unique
        P = streamed.components_[lang].T @ streamed.components_[lang]
        np.testing.assert_allclose(P, Phi[lang].T @ Phi[lang], atol=1e-7)
        np.testing.assert_allclose(P, in_memory.components_[lang].T @ in_memory.components_[lang], atol=1e-9)
    assert streamed.n_features_ == in_memory.n_features_


def test_chunked_fit_in_feature_space_matches_dense_oracle(tmp_path):
    """eig_space="features" on streamed languages (its products summed read by read)."""
    test_chunked_fit_matches_dense_oracle_and_in_memory_fit(tmp_path, "cg", eig_space="features")


def test_chunked_fit_by_lobpcg_on_the_pencil_matches_dense_oracle(tmp_path):
    """eig_space="features", eig_method="lobpcg" on streamed languages: X̂ᵀX̂ + λI applied from
    the chunks (never inverted)."""
    test_chunked_fit_matches_dense_oracle_and_in_memory_fit(tmp_path, "cg", eig_space="features",
                                                             eig_method="lobpcg")


def test_chunked_and_in_memory_languages_mix_and_file_dtype_is_cast(tmp_path):
    rng = np.random.default_rng(4)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=45)
    r, alpha = 4, 1.0
    Phi, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    mixed = {"a": write_chunks(tmp_path / "a.h5", blocks["a"], chunk_rows=7), "b": blocks["b"]}
    model = Cr5(n_components=r, alpha=alpha, eig_method="subspace", random_state=0, **TIGHT)
    model.fit_matrices(mixed, concepts)
    assert model.fit_info_["sources"] == {"a": "hdf5", "b": "memory"}
    np.testing.assert_allclose(model.singular_values_, sv, rtol=1e-6)
    # a float32 file read by a float64 fit: values cast per chunk, same result as the float32 data in memory
    f32 = {lang: X.astype(np.float32) for lang, X in blocks.items()}
    ref = Cr5(n_components=r, alpha=alpha, eig_method="subspace", random_state=0, **TIGHT).fit_matrices(f32, concepts)
    files = {lang: write_chunks(tmp_path / f"f32{lang}.h5", X, chunk_rows=11) for lang, X in f32.items()}
    got = Cr5(n_components=r, alpha=alpha, eig_method="subspace", random_state=0, **TIGHT).fit_matrices(
        files, concepts)
    assert got.components_["a"].dtype == np.float64
    np.testing.assert_allclose(got.singular_values_, ref.singular_values_, rtol=1e-9)


def test_chunked_fit_at_default_tolerances_uses_float32_cg_and_stays_close(tmp_path):
    rng = np.random.default_rng(5)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=80, p=(60, 50))
    kw = dict(n_components=6, block_method="cg", random_state=0)
    streamed = Cr5(**kw).fit_matrices(_chunked_problem(tmp_path, blocks), concepts)
    in_memory = Cr5(**kw).fit_matrices(blocks, concepts)
    assert all(b["mixed_precision"] for b in streamed.convergence_["blocks"].values())
    # loose solves (cg_rtol 1e-2, eig_tol 1e-1): the same leading spectrum to the solver tolerance
    np.testing.assert_allclose(streamed.eigenvalues_[:3], in_memory.eigenvalues_[:3], rtol=1e-2)


def test_chunked_fit_under_memory_budget(tmp_path, monkeypatch):
    """The planner counts no copy of a streamed block, only chunk buffers; the plan stays exact."""
    from linxling.models import cr5 as cr5_mod
    monkeypatch.setattr(cr5_mod, "current_rss", lambda: 0)       # budgets below are exact byte counts
    rng = np.random.default_rng(7)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=60)
    r, alpha = 6, 0.5
    Phi, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    chunked = _chunked_problem(tmp_path, blocks)
    probe = Cr5(n_components=r, alpha=alpha, **TIGHT)
    problem = probe._set_up_problem(chunked, concepts)
    lean = cr5_mod._MemoryPlan(copies=False, mixed_precision=False, basis_factor=2, apply_columns=8)
    budget = int(cr5_mod._MemoryPlan.sizes(problem, lean) / 0.9) + 2
    model = Cr5(n_components=r, alpha=alpha, eig_method="subspace", random_state=0, memory_budget=budget,
                **TIGHT).fit_matrices(chunked, concepts)
    plan = model.fit_info_["memory_plan"]
    assert plan["estimate"] <= budget and not plan["copies"]
    np.testing.assert_allclose(model.singular_values_, sv, rtol=1e-6)
    # the dry run on the files: the plan the fit chose, nothing fitted
    dry = Cr5(n_components=r, alpha=alpha, eig_method="subspace", random_state=0, memory_budget=budget, **TIGHT)
    got = dry.plan_memory(chunked, concepts)
    assert {k: got[k] for k in plan} == plan and got["nnz"] == sum(X.nnz for X in blocks.values())
    assert not hasattr(dry, "components_")
    # the streamed problem's estimate has no term in nnz for copies: below the in-memory one
    in_mem = probe._set_up_problem(blocks, concepts)
    full = cr5_mod._MemoryPlan(record_bytes=0)
    assert cr5_mod._MemoryPlan.sizes(problem, full) < cr5_mod._MemoryPlan.sizes(in_mem, full)


def test_chunked_bad_input_errors(tmp_path):
    rng = np.random.default_rng(8)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=30)
    chunked = _chunked_problem(tmp_path, blocks)
    short = dict(concepts, a=concepts["a"][:-1])
    with pytest.raises(ValueError, match=r"concepts\['a'\] has .* entries but blocks\['a'\] has"):
        Cr5(n_components=3).fit_matrices(chunked, short)
    import h5py
    chunked["a"] = write_chunks(tmp_path / "nan.h5", blocks["a"], chunk_rows=5)
    with h5py.File(tmp_path / "nan.h5", "a") as fh:    # a file damaged after it was written
        fh["X/data"][3] = np.nan
    with pytest.raises(ValueError, match=r"blocks\['a'\] contains 1 non-finite"):
        Cr5(n_components=3).fit_matrices(chunked, concepts)
    zero = sp.csr_matrix(blocks["a"].shape)
    chunked["a"] = write_chunks(tmp_path / "zero.h5", zero + 0.0, chunk_rows=5)
    with pytest.raises(ValueError, match="all zero"):
        Cr5(n_components=3).fit_matrices(chunked, concepts)


def test_concepts_that_are_not_a_sequence_are_named(tmp_path):
    """concepts[lang] of None, a number or a generator gave Python's bare "object of type
    'NoneType' has no len()" (chunked or in memory): now a TypeError naming concepts[lang]."""
    rng = np.random.default_rng(8)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=30)
    chunked = _chunked_problem(tmp_path, blocks)
    for given in (chunked, blocks):
        for bad in (None, 7, (c for c in concepts["a"])):
            with pytest.raises(TypeError, match=r"concepts\['a'\] must be a sequence or array of concept ids, "
                                                r"one per row of blocks\['a'\], got"):
                Cr5(n_components=3).fit_matrices(given, dict(concepts, a=bad))


@pytest.mark.slow
def test_paper_shaped_languages_out_of_core_equal_in_memory(tmp_path):
    """The 4-language job's twin (issue #30): en, it, vi, da of different sizes with partially
    overlapping concepts (benchmarks.wiki_synth.multilingual_corpus), streamed from HDF5 under a
    memory budget (64 MiB above what the process holds already), equals the in-memory fit at
    tight tolerances."""
    from benchmarks.wiki_synth import multilingual_corpus
    from linxling._memory import current_rss
    blocks, concepts = multilingual_corpus(1500, vocab_size=600, median_unique=40, min_unique=20,
                                           max_unique=80, min_df=2, seed=5)
    assert len({X.shape[0] for X in blocks.values()}) == 4          # four different sizes
    files = {lang: write_chunks(tmp_path / f"{lang}.h5", X, chunk_rows=64) for lang, X in blocks.items()}
    kw = dict(n_components=4, alpha=1.0, eig_method="subspace", random_state=0, **TIGHT)
    ref = Cr5(**kw).fit_matrices(blocks, concepts)
    got = Cr5(memory_budget=current_rss() + (64 << 20), **kw).fit_matrices(files, concepts)
    assert set(got.fit_info_["sources"].values()) == {"hdf5"}
    assert got.classes_ == ref.classes_
    np.testing.assert_allclose(got.singular_values_, ref.singular_values_, rtol=1e-6)
    for lang in blocks:
        np.testing.assert_allclose(got.components_[lang], ref.components_[lang], atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("read_bytes", [0, 300, 1 << 20])
def test_pencil_images_in_one_read_match_the_dense_products(tmp_path, dtype, read_bytes):
    """Ĉ Ĉᵀ Z and (X̂ᵀX̂ + αI) Z from one concept-ordered read of on-disk blocks equal the dense
    centred products, for several documents per concept, concepts missing from a block, and
    concept ranges from one concept (read_bytes=0) to all of them."""
    from linxling.operators import CrossCovariance
    rng = np.random.default_rng(3)
    K, alpha = 40, 0.7
    blocks, labels = [], []
    for i, (n, p) in enumerate(((61, 23), (35, 17), (8, 11))):
        blocks.append(_matrix(rng, n=n, p=p, density=0.3))
        labels.append(np.sort(rng.integers(0, K if i < 2 else K // 3, size=n)))  # sorted, with repeats
    sources = [ChunkedSource(write_chunks(tmp_path / f"x{i}.h5", X, chunk_rows=7), read_bytes=read_bytes)
               for i, X in enumerate(blocks)]
    C = CrossCovariance.from_blocks(sources, labels, K, dtype=dtype)
    assert not C.concept_ordered()
    C.order_concepts(labels)
    assert C.concept_ordered()
    X = sp.block_diag(blocks).toarray()
    Y = np.zeros((X.shape[0], K))
    Y[np.arange(X.shape[0]), np.concatenate(labels)] = 1
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    Cd = Xc.T @ Yc
    Z = rng.standard_normal((X.shape[1], 6)).astype(dtype)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for _ in range(2):                                      # g is made in the first call, then kept
        CZ, AZ = C.pencil_images(Z, alpha=alpha)
        for got, want in ((CZ, Cd @ (Cd.T @ Z)), (AZ, Xc.T @ (Xc @ Z) + alpha * Z)):
            assert got.dtype == dtype
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    CZ_only, none = C.pencil_images(Z)
    assert none is None
    np.testing.assert_allclose(CZ_only, CZ, rtol=tol, atol=tol * np.abs(CZ).max())
    unsorted = [labels[0][::-1].copy(), labels[1], labels[2]]
    with pytest.raises(ValueError, match="non-decreasing"):
        CrossCovariance.from_blocks(sources, unsorted, K, dtype=dtype).order_concepts(unsorted)
    with pytest.raises(ValueError, match="sorted by concept"):
        CrossCovariance.from_blocks(sources, unsorted, K, dtype=dtype).pencil_images(Z)
    with pytest.raises(ValueError, match="on disk"):
        CrossCovariance.from_blocks(blocks, labels, K, dtype=dtype).order_concepts(labels)


@pytest.mark.parametrize("eig_method", ["subspace", "lobpcg"])
def test_concept_ordered_corpus_fits_in_feature_space_from_one_read_per_product(tmp_path, eig_method):
    """Languages on disk with rows sorted by concept: eig_space="features" forms Ĉ Ĉᵀ Z (and the
    pencil's A Z) from one read with no K-row block, and matches the dense oracle and the
    in-memory fit at tight tolerances."""
    rng = np.random.default_rng(7)
    blocks, concepts = random_problem(rng, n_langs=3, n_concepts=50)
    concepts = {lang: [f"c{int(c[1:]):03d}" for c in cs] for lang, cs in concepts.items()}   # sorted names
    r, alpha = 5, 0.5
    Phi, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    kw = dict(n_components=r, alpha=alpha, block_method="cg", eig_method=eig_method, random_state=0,
              eig_space="features", **TIGHT)
    streamed = Cr5(**kw).fit_matrices(_chunked_problem(tmp_path, blocks), concepts)
    assert streamed.convergence_["eig"]["one_read_products"]
    in_memory = Cr5(**kw).fit_matrices(blocks, concepts)
    assert not in_memory.convergence_["eig"]["one_read_products"]
    np.testing.assert_allclose(streamed.singular_values_, sv, rtol=1e-6)
    np.testing.assert_allclose(streamed.eigenvalues_, in_memory.eigenvalues_, rtol=1e-9)
    for lang in blocks:
        P = streamed.components_[lang].T @ streamed.components_[lang]
        np.testing.assert_allclose(P, Phi[lang].T @ Phi[lang], atol=1e-7)


def test_pencil_lobpcg_takes_a_leaner_block_when_its_nine_blocks_do_not_fit(tmp_path, monkeypatch):
    """Under a budget that the pencil LOBPCG's usual block (r + 20 %) misses and r + 10 % meets,
    the plan takes the leaner block and the fit still gives the dense closed form."""
    from linxling.models import cr5 as cr5_mod
    monkeypatch.setattr(cr5_mod, "current_rss", lambda: 0)       # budgets below are exact byte counts
    rng = np.random.default_rng(11)
    blocks, concepts = random_problem(rng, n_langs=2, n_concepts=200, p=(90, 80))
    concepts = {lang: [f"c{int(c[1:]):03d}" for c in cs] for lang, cs in concepts.items()}
    r, alpha = 60, 0.5
    files = _chunked_problem(tmp_path, blocks)
    kw = dict(n_components=r, alpha=alpha, eig_space="features", eig_method="lobpcg", random_state=0, **TIGHT)
    problem = Cr5(**kw)._set_up_problem(files, concepts)
    assert problem.concept_keys is not None
    plan = cr5_mod._MemoryPlan(copies=False, read_bytes=0, eig_space="features", eig_solver="lobpcg",
                               eig_tol=TIGHT["eig_tol"], cg_rtol=TIGHT["cg_rtol"], apply_columns=128)
    usual = cr5_mod._MemoryPlan.sizes(problem, plan)
    plan.pencil_block = r + 10
    lean = cr5_mod._MemoryPlan.sizes(problem, plan)
    assert lean < usual
    budget = int(lean / 0.9) + 2                                  # the planner keeps 10 % of headroom
    model = Cr5(memory_budget=budget, **kw).fit_matrices(files, concepts)
    got = model.fit_info_["memory_plan"]
    assert got["pencil_block"] == r + 10 and got["estimate"] <= budget
    assert model.convergence_["eig"]["one_read_products"]
    _, sv, _ = dense_cr5_oracle(blocks, concepts, r, alpha)
    np.testing.assert_allclose(model.singular_values_, sv, rtol=1e-6)


@pytest.mark.parametrize("budget", ["lots", "0.5", "12 G B"])
def test_a_memory_budget_that_is_not_a_size_is_refused_before_any_read(tmp_path, monkeypatch, budget):
    """A typo in memory_budget was read only when the fit planned: after a pass over every
    streamed file (minutes on a large corpus), in fit_matrices and plan_memory alike."""
    from linxling.io._chunks import ChunkedCSR
    rng = np.random.default_rng(3)
    blocks = {lang: sp.random(40, 15, density=0.3, random_state=rng, format="csr") for lang in "ab"}
    concepts = {lang: np.arange(40) for lang in blocks}
    files = {lang: write_chunks(tmp_path / f"{lang}.h5", X, chunk_rows=10) for lang, X in blocks.items()}
    reads = []
    read = ChunkedCSR._read
    monkeypatch.setattr(ChunkedCSR, "_read", lambda self, *a, **k: reads.append(a) or read(self, *a, **k))
    for run in (lambda m: m.fit_matrices(files, concepts), lambda m: m.plan_memory(files, concepts)):
        with pytest.raises(ValueError, match="memory_budget must be"):
            run(Cr5(n_components=2, memory_budget=budget))
    assert reads == []
    Cr5(n_components=2, memory_budget="1G", show_progress=False).fit_matrices(files, concepts)
    assert reads                                   # the patch counts the fit's reads
