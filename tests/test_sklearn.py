"""scikit-learn's estimator checks, run as tests (the contract every linxling model follows)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from linxling.models import CLLSI, WMF, BilingualWMF, Cr5, CrossWMF, SingleBlock


@parametrize_with_checks([WMF(n_components=2, alpha=20.0, max_iter=3, show_progress=False, random_state=0)])
def test_wmf_passes_check_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(estimator)


@pytest.mark.parametrize("model", [Cr5(n_components=7, alpha=0.5), CLLSI(n_components=7, solver="randomized"),
                                   WMF(n_components=7), BilingualWMF(n_components=7),
                                   CrossWMF(pivot_language="de", n_components=7)])
def test_clone_repr_and_params(model):
    twin = clone(model)
    assert twin is not model and twin.get_params() == model.get_params()
    assert "n_components=7" in repr(model)
    twin.set_params(n_components=3)
    assert twin.n_components == 3 and model.n_components == 7
    with pytest.raises(ValueError, match="Invalid parameter"):
        twin.set_params(nope=1)


def test_wmf_word_vectors_and_language_check():
    X = sp.random(40, 25, density=0.2, random_state=0, format="csr")
    m = WMF(n_components=3, max_iter=2, random_state=0, show_progress=False, language="en").fit(X)
    words, vectors = m.word_vectors()
    assert words is None and vectors.shape == (25, 3) and vectors.flags.c_contiguous
    np.testing.assert_array_equal(m.transform(X, language="en"), m.transform(X))
    with pytest.raises(ValueError, match=r"unknown language 'fr': the model was trained on \['en'\]"):
        m.transform(X, language="fr")
    assert m.score(X) == pytest.approx(-m.loss(X))


# ---------------------------------------------------------------- the single-block form of Cr5 / CL-LSI
# y takes as few as 2 distinct values in scikit-learn's checks, and both models need
# n_components < n_concepts: rank 1 is the only rank every check's data supports. Every check
# applies and passes: no expected failures (docs/api.md).
@parametrize_with_checks([SingleBlock(Cr5(n_components=1, random_state=0, show_progress=False)),
                          SingleBlock(CLLSI(n_components=1, random_state=0))])
def test_single_block_passes_check_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(estimator)


def test_single_block_cr5_is_reduced_rank_ridge_regression(tmp_path):
    """SingleBlock(Cr5) on one matrix equals the dense closed form of eq. (8) with one language."""
    from linxling.models import load
    from tests.test_cr5 import TIGHT, dense_cr5_oracle
    rng = np.random.default_rng(3)
    X = sp.random(80, 30, density=0.3, random_state=rng, format="csr")
    y = rng.integers(0, 20, size=80)
    Phi, sv, _ = dense_cr5_oracle({"x": X}, {"x": y.tolist()}, 5, 0.7)
    model = SingleBlock(Cr5(n_components=5, alpha=0.7, random_state=0, eig_method="arpack", **TIGHT)).fit(X, y)
    assert model.n_features_in_ == 30 and model.classes_ == sorted(set(y.tolist()), key=y.tolist().index)
    np.testing.assert_allclose(model.estimator_.singular_values_, sv, rtol=1e-6)
    # the same subspace: Φ Φᵀ projectors agree
    P_ours, P_ref = model.components_.T @ model.components_, Phi["x"].T @ Phi["x"]
    np.testing.assert_allclose(P_ours, P_ref, atol=1e-8)
    Z = model.transform(X)
    np.testing.assert_allclose(Z, X @ model.components_.T)
    assert model.transform(X, language="x").shape == (80, 5)
    with pytest.raises(ValueError, match=r"unknown language 'en': the model was trained on \['x'\]"):
        model.transform(X, language="en")
    with pytest.raises(ValueError, match="X has 29 features, but SingleBlock is expecting 30"):
        model.transform(X[:, :29])
    path = tmp_path / "rrr.h5"
    model.save(path)
    for loaded in (SingleBlock.load(path), load(path)):
        assert isinstance(loaded, SingleBlock) and isinstance(loaded.estimator_, Cr5)
        np.testing.assert_array_equal(loaded.transform(X), Z)
    words, vectors = model.word_vectors()
    assert words is None and vectors.shape == (30, 5)


def test_single_block_cllsi_and_bad_estimator():
    X = sp.random(50, 20, density=0.4, random_state=1, format="csr")
    y = np.arange(50) % 10
    lsi = SingleBlock(CLLSI(n_components=3, random_state=0)).fit(X, y)
    direct = CLLSI(n_components=3, random_state=0).fit_matrices({"x": X}, {"x": y.tolist()})
    np.testing.assert_allclose(np.abs(lsi.transform(X)), np.abs(direct.transform_matrix(X, "x")))
    with pytest.raises(TypeError, match="'estimator' parameter of SingleBlock must be an object implementing "
                                        "'fit_matrices' and 'transform_matrix'. Got WMF"):
        SingleBlock(WMF()).fit(X, y)
    with pytest.raises(ValueError, match="n_components=30 exceeds the number of features"):
        SingleBlock(Cr5(n_components=30)).fit(sp.random(200, 20, density=0.5, random_state=0), np.arange(200))


@pytest.mark.parametrize("y", [[1, "1", 2, "2", 3] * 10, np.array([1, "1", 2, "2", 3] * 10, dtype=object)])
def test_single_block_refuses_labels_that_mix_text_and_numbers(y):
    """y = [1, "1", 2, "2", 3, ...] became the text array ['1', '1', '2', '2', '3', ...] in
    scikit-learn's conversion: 1 and "1" were one concept, in silence."""
    X = sp.random(50, 20, density=0.4, random_state=1, format="csr")
    with pytest.raises(TypeError, match=r"^y mixes text and non-text labels: y\[0\] = 1 and y\[1\] = '1'"):
        SingleBlock(Cr5(n_components=2, random_state=0)).fit(X, y)
    labels = [str(v) for v in y]                  # one type: fitted as before
    assert SingleBlock(Cr5(n_components=2, random_state=0)).fit(X, labels).classes_ == ["1", "2", "3"]


def test_transform_dtype_gives_c_contiguous_float32():
    X = sp.random(60, 25, density=0.3, random_state=2, format="csr")
    y = np.arange(60) % 15
    for est in (Cr5(n_components=3, random_state=0), CLLSI(n_components=3, random_state=0)):
        model = est.fit_matrices({"x": X}, {"x": y.tolist()})
        ref = model.transform_matrix(X, "x")
        Z = model.transform_matrix(X, "x", dtype=np.float32)
        assert Z.dtype == np.float32 and Z.flags.c_contiguous
        np.testing.assert_allclose(Z, ref, rtol=1e-6, atol=1e-7)
        with pytest.raises(ValueError, match="dtype must be float32 or float64"):
            model.transform_matrix(X, "x", dtype=np.int32)
    Z = SingleBlock(Cr5(n_components=3, random_state=0)).fit(X, y).transform(X, dtype="float32")
    assert Z.dtype == np.float32 and Z.flags.c_contiguous
