"""scikit-learn's estimator checks, run as tests (the contract every linxling model follows)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from linxling.models import CLLSI, WMF, BilingualWMF, Cr5, CrossWMF


@parametrize_with_checks([WMF(n_components=2, max_iter=3, show_progress=False, random_state=0)])
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
    with pytest.raises(ValueError, match="for language 'en', not 'fr'"):
        m.transform(X, language="fr")
    assert m.score(X) == pytest.approx(-m.loss(X))
