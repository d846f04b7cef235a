"""Property-based tests (hypothesis) on arbitrary Unicode text and arbitrary hashable concept ids."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linxling.text import TfidfVectorizer, tokenize

# any Unicode scalar value except lone surrogates (not text; rejected with a clear error instead)
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(_TEXT)
def test_tokenize_total_on_any_text(text):
    tokens = tokenize(text)
    assert isinstance(tokens, list)
    for tok in tokens:
        assert isinstance(tok, str) and tok
        assert not any(ch.isspace() for ch in tok)
    assert tokenize(text) == tokens                      # deterministic


@_SETTINGS
@given(_TEXT, _TEXT)
def test_tokenize_whitespace_separates(a, b):
    # a space never glues two texts' tokens together
    assert tokenize(a + " " + b) == tokenize(a) + tokenize(b)


@_SETTINGS
@given(st.lists(_TEXT, min_size=1, max_size=12))
def test_vectorizer_rows_and_round_trip(docs):
    if not any(tokenize(d) for d in docs):
        with pytest.raises(ValueError):
            TfidfVectorizer(min_df=1).fit(docs)
        return
    vec = TfidfVectorizer(min_df=1)
    X = vec.fit_transform(docs)
    assert X.shape == (len(docs), len(vec.vocabulary_))
    assert np.isfinite(X.data).all() and (X.data > 0).all()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    nonempty = np.asarray([bool(tokenize(d)) for d in docs])
    np.testing.assert_allclose(norms[nonempty], 1.0, rtol=1e-6)   # L2 rows (float rounding only)
    assert (norms[~nonempty] == 0).all()
    params, arrays = vec.get_state()
    again = TfidfVectorizer.from_state(params, arrays).transform(docs)
    assert (again != vec.transform(docs)).nnz == 0                # identical after a round trip
