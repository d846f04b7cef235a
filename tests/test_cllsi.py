"""CL-LSI against a dense NumPy SVD, input validation and the model store."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _bars import RecordedBars
from _pickles import unpickled_without
from sklearn.exceptions import NotFittedError

from linxling.models.cllsi import CLLSI


def _problem(rng, K=40, p=(30, 25), density=0.3):
    blocks, concepts = {}, {}
    for lang, pl in zip(("en", "fr"), p):
        n = K + 10  # some concepts have two documents
        X = sp.random(n, pl, density=density, random_state=rng.integers(1 << 30), format="csr")
        ids = np.concatenate([np.arange(K), rng.integers(0, K, 10)])
        blocks[lang], concepts[lang] = X, rng.permutation(ids)
    return blocks, concepts


def _dense_M(blocks, concepts, classes):
    idx = {c: i for i, c in enumerate(classes)}
    parts = []
    for lang in blocks:
        X = blocks[lang].toarray()
        M = np.zeros((len(classes), X.shape[1]))
        for row, c in zip(X, concepts[lang]):
            M[idx[c]] += row
        parts.append(M)
    return np.hstack(parts)


@pytest.mark.parametrize("solver", ["auto", "propack", "arpack", "randomized"])
def test_matches_dense_svd(rng, solver):
    blocks, concepts = _problem(rng)
    r = 6
    model = CLLSI(n_components=r, random_state=0, solver=solver, n_iter=20,
                  scale="fold_in").fit_matrices(blocks, concepts)
    M = _dense_M(blocks, concepts, model.classes_)
    U, s, Vt = np.linalg.svd(M, full_matrices=False)
    np.testing.assert_allclose(model.singular_values_, s[:r], rtol=1e-3 if solver == "randomized" else 1e-6)
    V = np.hstack([model.components_["en"], model.components_["fr"]])  # (r, P)
    # each singular vector equal up to sign
    cos = np.abs(np.sum(V * Vt[:r], axis=1))
    np.testing.assert_allclose(cos, 1.0, atol=1e-3 if solver == "randomized" else 1e-6)
    # fold-in of the concept rows gives the left singular vectors
    Z = model.transform_matrix(M[:, :30], "en") + model.transform_matrix(M[:, 30:], "fr")
    np.testing.assert_allclose(np.abs(np.sum(Z * U[:, :r], axis=0)), 1.0, atol=1e-3 if solver == "randomized" else 1e-5)
    assert Z.shape == (len(model.classes_), r)


def test_auto_solver_falls_back_to_arpack_where_propack_is_opt_in(rng, monkeypatch):
    """Older SciPy releases refuse solver="propack" unless SCIPY_USE_PROPACK is set: "auto" then
    runs ARPACK (the same result to the solvers' precision), "propack" named says why."""
    import linxling.models.cllsi as mod
    real = mod.spla.svds
    used = []

    def svds(M, k=6, solver="arpack", **kw):
        used.append(solver)
        if solver == "propack":
            raise ValueError("`solver='propack'` is opt-in due to potential issues on Windows, it "
                             "can be enabled by setting the `SCIPY_USE_PROPACK` environment variable")
        return real(M, k=k, solver=solver, **kw)

    blocks, concepts = _problem(rng)
    ref = CLLSI(n_components=5, random_state=0, solver="propack").fit_matrices(blocks, concepts)
    monkeypatch.setattr(mod.spla, "svds", svds)
    got = CLLSI(n_components=5, random_state=0).fit_matrices(blocks, concepts)
    assert used == ["propack", "arpack"]
    np.testing.assert_allclose(got.singular_values_, ref.singular_values_, rtol=1e-10)
    with pytest.raises(ValueError, match="SCIPY_USE_PROPACK"):
        CLLSI(n_components=5, random_state=0, solver="propack").fit_matrices(blocks, concepts)


@pytest.mark.parametrize("scale", ["none", "fold_in"])
def test_rank_deficient_components_are_zero_on_transform(rng, scale):
    """A matrix of rank 3 asked for 6 components: the warning names the 3 zero singular values,
    and their coordinates are 0 on transform with either scale and solver (the solvers' vectors
    there are arbitrary, and differ between ARPACK and PROPACK)."""
    K, A = 40, rng.random((40, 3))
    blocks = {lang: sp.csr_matrix(A @ rng.random((3, p))) for lang, p in (("en", 30), ("fr", 25))}
    concepts = {lang: np.arange(K) for lang in blocks}
    Z = {}
    for solver in ("propack", "arpack"):
        with pytest.warns(RuntimeWarning, match="3 of 6 singular values are"):
            m = CLLSI(n_components=6, random_state=0, solver=solver, scale=scale).fit_matrices(blocks, concepts)
        assert not m.components_["en"][3:].any() and not m.components_["fr"][3:].any()
        Z[solver] = m.transform_matrix(blocks["en"], "en")
        assert not Z[solver][:, 3:].any()
    np.testing.assert_allclose(np.abs(Z["propack"]), np.abs(Z["arpack"]), atol=1e-9 * np.abs(Z["arpack"]).max())


def test_a_matrix_of_rank_below_n_components_warns_with_the_default_solver():
    """PROPACK stops with LinAlgError "An invariant subspace of dimension 4 was found" on a matrix
    of exact rank < n_components (here two languages with the same features: rank 4, r = 6):
    the default solver fell over with that internal error instead of the rank warning ARPACK
    gives; solver="propack" says what happened and what to do."""
    X = sp.random(12, 4, density=0.5, random_state=1, format="csr")
    blocks, concepts = {"en": X, "fr": X.copy()}, {"en": np.arange(12), "fr": np.arange(12)}
    vocab = pytest.warns(UserWarning, match=r"n_components=6 exceeds the vocabulary of 'en' \(4 features")
    with pytest.warns(RuntimeWarning, match="2 of 6 singular values are"), vocab:
        m = CLLSI(n_components=6, random_state=0).fit_matrices(blocks, concepts)
    assert not m.components_["en"][4:].any() and m.components_["en"][:4].any()
    with pytest.raises(ValueError, match=r"solver='propack' cannot compute n_components=6 .* rank < 6"), \
            pytest.warns(UserWarning, match="exceeds the vocabulary"):
        CLLSI(n_components=6, random_state=0, solver="propack").fit_matrices(blocks, concepts)


def test_a_rank_one_matrix_does_not_get_a_made_up_second_component():
    """Every document the same (a rank-1 concept matrix), n_components=2: PROPACK returned a
    second singular value of 3.36 whose singular vector repeated the first, without an error, so
    the default solver gave two identical coordinates and no warning. Now the rank warning (ARPACK's
    zero singular value) with the default solver, and an error naming the rank with solver="propack"."""
    texts = ["w1 w2 w3 w4 w5"] * 20 + ["v1 v2 v3 v4 v5"] * 20
    langs, concepts = ["en"] * 20 + ["de"] * 20, list(range(20)) * 2
    same = pytest.warns(UserWarning, match="the 20 documents of '(en|de)' are all one and the same text")
    with pytest.warns(RuntimeWarning, match="1 of 2 singular values are"), same:
        m = CLLSI(n_components=2, min_df=1, random_state=0).fit(texts, langs, concepts)
    assert m.singular_values_[1] < 1e-12 and not m.components_["en"][1].any()
    with pytest.raises(ValueError, match=r"solver='propack' returned singular vectors that are not "
                                         r"orthonormal .* rank < n_components=2"), \
            pytest.warns(UserWarning, match="all one and the same text"):
        CLLSI(n_components=2, min_df=1, random_state=0, solver="propack").fit(texts, langs, concepts)


def test_the_default_solver_falls_back_to_arpack_where_propack_does_not_converge():
    """PROPACK's Lanczos gives up after 10 k steps ("k=5 singular triplets did not converge within
    kmax=50 iterations") on matrices whose leading singular values lie close together: 10 of 10
    random 400 x (150 + 150) sparse matrices at density 0.05, and a corpus of 400 random sentences
    over 150 words. The default solver failed with that error; it now falls back to ARPACK (the
    same result), and solver="propack" named says what to use instead."""
    blocks = {lang: sp.random(400, 150, density=0.05, random_state=seed, format="csr")
              for lang, seed in (("en", 0), ("fr", 100))}
    concepts = {lang: np.arange(400) for lang in blocks}
    m = CLLSI(n_components=5, random_state=0).fit_matrices(blocks, concepts)
    ref = CLLSI(n_components=5, random_state=0, solver="arpack").fit_matrices(blocks, concepts)
    np.testing.assert_allclose(m.singular_values_, ref.singular_values_, rtol=1e-10)
    with pytest.raises(ValueError, match=r"solver='propack' did not converge to n_components=5 .*"
                                         r"use solver='auto' or 'arpack'"):
        CLLSI(n_components=5, random_state=0, solver="propack").fit_matrices(blocks, concepts)


def test_scale_none_and_projection(rng):
    blocks, concepts = _problem(rng)
    a = CLLSI(n_components=4, random_state=1, scale="fold_in").fit_matrices(blocks, concepts)
    b = CLLSI(n_components=4, random_state=1).fit_matrices(blocks, concepts)
    assert b.scale == "none"                # the default
    X = blocks["fr"][:5]
    np.testing.assert_allclose(a.transform_matrix(X, "fr") * a.singular_values_, b.transform_matrix(X, "fr"),
                               atol=1e-10)
    np.testing.assert_allclose(X @ a.projection("fr"), a.transform_matrix(X, "fr"), atol=1e-12)
    assert a.projection("en").shape == (30, 4)


def test_tuple_concepts_and_determinism(rng):
    blocks, concepts = _problem(rng)
    tup = {lang: [(int(c), "x") for c in ids] for lang, ids in concepts.items()}
    m1 = CLLSI(n_components=3, random_state=0).fit_matrices(blocks, tup)
    m2 = CLLSI(n_components=3, random_state=0).fit_matrices(blocks, concepts)
    np.testing.assert_allclose(m1.singular_values_, m2.singular_values_)
    np.testing.assert_array_equal(m1.components_["en"], CLLSI(n_components=3, random_state=0)
                                  .fit_matrices(blocks, tup).components_["en"])


def test_errors(rng):
    blocks, concepts = _problem(rng, K=10, p=(6, 5))
    with pytest.raises(ValueError, match="must be < min"):
        CLLSI(n_components=10).fit_matrices(blocks, concepts)  # K=10
    with pytest.raises(ValueError, match="must be < min"):
        CLLSI(n_components=11).fit_matrices(blocks, concepts)  # sum p = 11
    bad = dict(concepts, fr=concepts["fr"][:-1])
    with pytest.raises(ValueError, match="entries"):
        CLLSI(n_components=2).fit_matrices(blocks, bad)
    with pytest.raises(ValueError, match="same languages"):
        CLLSI(n_components=2).fit_matrices(blocks, {"en": concepts["en"]})
    with pytest.raises(ValueError, match="scale"):
        CLLSI(n_components=2, scale="sqrt").fit_matrices(blocks, concepts)   # checked in fit
    m = CLLSI(n_components=2, random_state=0)
    with pytest.raises(NotFittedError, match="not fitted"):
        m.transform_matrix(blocks["en"], "en")
    m.fit_matrices(blocks, concepts)
    with pytest.raises(ValueError, match="unknown language 'de'"):
        m.transform_matrix(blocks["en"], "de")
    with pytest.raises(ValueError, match="columns"):
        m.transform_matrix(blocks["fr"], "en")
    with pytest.raises(RuntimeError, match="fit_matrices"):
        m.transform(["a b"], "en")
    with pytest.raises(ValueError, match="texts has 2 entries but languages has 1"):
        CLLSI(n_components=2).fit(["a", "b"], ["en"], [0, 1])


def test_an_all_zero_block_is_an_error_as_in_cr5(rng):
    """An all-zero language block was fitted without a word (every document of that language
    then embeds as zero); Cr5.fit_matrices refuses it, and now CL-LSI does too."""
    blocks, concepts = _problem(rng)
    blocks["fr"] = sp.csr_matrix(blocks["fr"].shape)
    for fr in (blocks["fr"], blocks["fr"].toarray()):
        with pytest.raises(ValueError, match=r"blocks\['fr'\] is all zero: there is nothing to fit"):
            CLLSI(n_components=3, random_state=0).fit_matrices({**blocks, "fr": fr}, concepts)


def test_languages_sharing_no_concept_are_an_error_as_in_cr5(rng):
    """Two languages whose concept ids never meet: nothing ties them together, so the embeddings
    would not be crosslingual. CLLSI said nothing; it raises Cr5's error (the same check)."""
    from linxling import Cr5
    texts, langs, _ = _toy_texts()
    disjoint = list(range(len(texts)))                       # every document a concept of its own
    msg = r"^no concept has documents in two languages, so nothing ties the languages together"
    for model in (CLLSI(n_components=2), Cr5(n_components=2, min_df=1, doc_filter=None)):
        with pytest.raises(ValueError, match=msg):
            model.fit(texts, langs, disjoint)
    blocks, concepts = _problem(rng, K=12, p=(6, 5))
    with pytest.raises(ValueError, match=msg):
        CLLSI(n_components=2).fit_matrices(blocks, {"en": concepts["en"], "fr": concepts["fr"] + 100})
    # one language alone is a legitimate (monolingual) fit
    m = CLLSI(n_components=2, random_state=0).fit_matrices({"en": blocks["en"]}, {"en": concepts["en"]})
    assert m.components_["en"].shape == (2, 6)

def _toy_texts():
    en = ["the cat sat on the mat", "the dog ran in the park", "a cat and a dog play", "the sun is hot",
          "rain falls on the park", "the mat is red", "the dog likes the sun", "cats like rain"]
    fr = ["le chat est sur le tapis", "le chien court dans le parc", "un chat et un chien jouent",
          "le soleil est chaud", "la pluie tombe sur le parc", "le tapis est rouge",
          "le chien aime le soleil", "les chats aiment la pluie"]
    texts = en + fr
    return texts, ["en"] * 8 + ["fr"] * 8, list(range(8)) * 2


def test_fit_texts_and_save_load(tmp_path):
    texts, langs, concepts = _toy_texts()
    m = CLLSI(n_components=3, random_state=0, min_df=1).fit(texts, langs, concepts)
    Z = m.transform(["the cat and the dog"], "en")
    assert Z.shape == (1, 3) and np.all(np.isfinite(Z))
    from linxling import io
    path = tmp_path / "cllsi.h5"
    m.save(path)
    m2 = io.load(path)
    assert isinstance(m2, CLLSI) and m2.languages_ == ["en", "fr"] and m2.scale == "none"
    np.testing.assert_allclose(m2.transform(["le chat et le chien"], "fr"), m.transform(["le chat et le chien"], "fr"))
    assert m2.classes_ == m.classes_


def test_models_package_lazy():
    import linxling.models as models
    assert models.CLLSI is CLLSI
    imported = models._import_all()
    assert "linxling.models.cllsi" in imported
    with pytest.raises(AttributeError):
        models.NoSuchModel  # noqa: B018


def test_a_matrix_given_to_transform_points_to_transform_matrix():
    """A text-fitted model given a feature matrix in transform said 'docs[0] is csr_matrix,
    expected str'; it names transform_matrix, which embeds the same rows."""
    from linxling import Cr5
    texts, langs, concepts = _toy_texts()
    for model in (CLLSI(n_components=2, random_state=0),
                  Cr5(n_components=2, min_df=1, doc_filter=None, random_state=0, show_progress=False)):
        model.fit(texts, langs, concepts)
        X = model.vectorizers_["en"].transform(texts[:3])
        name = type(model).__name__
        for matrix in (X, X.toarray()):
            with pytest.raises(TypeError, match=rf"^{name}\.transform takes texts \(a sequence of str\), got a "
                                                rf"{type(matrix).__name__} of shape \(3, \d+\): embed the rows of a "
                                                r"feature matrix with transform_matrix\(X, language\)$"):
                model.transform(matrix, "en")
        np.testing.assert_array_equal(model.transform_matrix(X, "en"), model.transform(texts[:3], "en"))
        np.testing.assert_array_equal(model.transform(np.array(texts[:3]), "en"),     # a 1-D str array is texts
                                      model.transform(texts[:3], "en"))


def test_vectorizer_settings_are_parameters_and_the_old_way_warns():
    """min_df, max_features and norm are CLLSI parameters (get_params, clone, save) passed to
    every language's vectoriser; in vectorizer_params (the way before) they still win, with a
    FutureWarning; its other options pass through."""
    import warnings

    from sklearn.base import clone
    texts, langs, concepts = _toy_texts()
    m = CLLSI(n_components=3, random_state=0, min_df=1, max_features=12, norm=None)
    assert clone(m).get_params()["max_features"] == 12
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.fit(texts, langs, concepts, vectorizer_params={"smooth_idf": False})
    vec = m.vectorizers_["en"]
    assert (vec.min_df, vec.max_features, vec.norm, vec.smooth_idf) == (1, 12, None, False)
    with pytest.warns(FutureWarning, match=r"give min_df to CLLSI\(\.\.\.\) instead"):
        old = CLLSI(n_components=3, random_state=0).fit(texts, langs, concepts, vectorizer_params={"min_df": 1})
    assert old.vectorizers_["fr"].min_df == 1
    with pytest.raises(ValueError, match="min_df"):
        CLLSI(min_df=0).fit(texts, langs, concepts)


def test_sublinear_tf_is_a_parameter_and_older_models_keep_raw_counts(tmp_path):
    """sublinear_tf (default True since 2026-12-01, chosen on validation verses) reaches every
    vectoriser (its matrices those of a sublinear vectoriser built by hand); it saves and loads; a file or a
    pickle from before the parameter gives the raw counts that model was fitted with."""
    import linxling
    from linxling.text import TfidfVectorizer
    texts, langs, concepts = _toy_texts()
    assert CLLSI().get_params()["sublinear_tf"] is True
    with pytest.raises(ValueError, match="sublinear_tf"):
        CLLSI(sublinear_tf="yes").fit(texts, langs, concepts)
    m = CLLSI(n_components=3, random_state=0, solver="arpack").fit(texts, langs, concepts)
    assert all(v.sublinear_tf for v in m.vectorizers_.values())
    by_lang: dict = {}
    for t, lang, c in zip(texts, langs, concepts, strict=True):
        by_lang.setdefault(lang, ([], []))
        by_lang[lang][0].append(t)
        by_lang[lang][1].append(c)
    vecs = {lang: TfidfVectorizer(min_df=1, norm="l2", sublinear_tf=True).fit(t) for lang, (t, _) in by_lang.items()}
    raw = CLLSI(n_components=3, random_state=0, solver="arpack", sublinear_tf=False).fit(texts, langs, concepts)
    assert not any(v.sublinear_tf for v in raw.vectorizers_.values())
    en = by_lang["en"][0][:4]
    assert np.abs(m.vectorizers_["en"].transform(en) - vecs["en"].transform(en)).sum() == 0
    m.save(tmp_path / "l.h5")
    back = linxling.load(tmp_path / "l.h5")
    assert back.sublinear_tf is True
    np.testing.assert_array_equal(back.transform(en, "en"), m.transform(en, "en"))
    params, arrays = raw._get_state()
    del params["sublinear_tf"]                             # a file from before the parameter
    assert CLLSI._from_state(params, arrays).sublinear_tf is False
    old = unpickled_without(raw, "sublinear_tf")           # a pickle from before the parameter
    assert old.get_params()["sublinear_tf"] is False and repr(old).startswith("CLLSI")
    with pytest.warns(FutureWarning, match=r"give sublinear_tf to CLLSI\(\.\.\.\) instead"):
        CLLSI(n_components=3, random_state=0).fit(texts, langs, concepts, vectorizer_params={"sublinear_tf": False})


_Bars = RecordedBars   # every bar made while installed (tests/_bars.py)


@pytest.mark.parametrize("solver", ["auto", "arpack", "randomized"])
def test_show_progress_counts_the_products_with_the_matrix(rng, monkeypatch, solver):
    """CL-LSI's bar counts products of M or Mᵀ with a vector: to its known total for the
    randomized solver, with no made-up total for PROPACK/ARPACK; the counting changes no bit of
    the fit, and show_progress=False makes no visible bar (the vectorisers' neither)."""
    import linxling.models.cllsi as cl
    blocks, concepts = _problem(rng)
    plain = CLLSI(n_components=4, random_state=0, solver=solver, show_progress=False).fit_matrices(blocks, concepts)
    bars = _Bars(monkeypatch)
    m = CLLSI(n_components=4, random_state=0, solver=solver, show_progress=True).fit_matrices(blocks, concepts)
    (bar,) = [b for b in bars.made if b.shown]
    assert bar.closed
    if solver == "randomized":
        ell = 4 + 10
        assert bar.total == bar.n == (2 * m.n_iter + 2) * ell == cl._randomized_products(np.empty((40, 55)), 4)
    else:
        assert bar.total is None and bar.n > 0
    np.testing.assert_array_equal(m.singular_values_, plain.singular_values_)
    for lang in m.languages_:
        np.testing.assert_array_equal(m.components_[lang], plain.components_[lang])
    bars.made.clear()
    texts, langs, ids = _toy_texts()
    CLLSI(n_components=3, random_state=0, min_df=1, solver=solver, show_progress=False).fit(texts, langs, ids)
    assert bars.made and not any(b.shown for b in bars.made)
    assert all(v.show_progress is False for v in
               CLLSI(n_components=3, random_state=0, min_df=1, show_progress=False).fit(texts, langs, ids)
               .vectorizers_.values())


def test_the_bar_closes_when_the_svd_is_interrupted(rng, monkeypatch):
    import linxling.models.cllsi as cl
    blocks, concepts = _problem(rng)
    m = CLLSI(n_components=4, random_state=0).fit_matrices(blocks, concepts)
    Z = m.transform_matrix(blocks["en"], "en")
    bars = _Bars(monkeypatch)

    def stop(A, *a, **k):                  # a few products, then Ctrl-C
        A.matvec(np.ones(A.shape[1]))
        A.rmatvec(np.ones(A.shape[0]))
        raise KeyboardInterrupt
    monkeypatch.setattr(cl.spla, "svds", stop)
    other = {lang: X[:, :20] for lang, X in blocks.items()}
    with pytest.raises(KeyboardInterrupt) as info:
        m.set_params(show_progress=True).fit_matrices(other, concepts)
    (bar,) = [b for b in bars.made if b.shown]
    assert bar.closed and bar.n == 2 and info.value is not None      # closed while the traceback lives
    np.testing.assert_array_equal(m.transform_matrix(blocks["en"], "en"), Z)   # the previous fit, intact
