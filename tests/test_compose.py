"""scikit-learn's machinery around multilingual models: feature names and set_output, a
language-bound view in a Pipeline, and a grid search of alpha over (text, language) pairs."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import make_pipeline

from linxling import CLLSI, WMF, BiCVM, Cr5
from linxling.compose import LanguageView, MultilingualFit


def _parallel(n=120, vocab=50, seed=0):
    rng = np.random.default_rng(seed)
    en, es, topic = [], [], []
    for _ in range(n):
        t = int(rng.integers(0, 3))                                   # 3 topics of 16 words
        ids = t * 16 + rng.integers(0, 16, size=6)
        en.append(" ".join(f"w{i}" for i in ids))
        es.append(" ".join(f"p{i}" for i in ids))
        topic.append(t)
    return en, es, np.asarray(topic)


EN, ES, TOPIC = _parallel()


@pytest.fixture(scope="module")
def cr5():
    return Cr5(n_components=4, min_df=1, doc_filter=None, random_state=0, show_progress=False).fit(
        EN + ES, ["en"] * len(EN) + ["es"] * len(ES), list(range(len(EN))) * 2)


def test_feature_names_and_pandas_output(cr5):
    pd = pytest.importorskip("pandas")
    assert list(cr5.get_feature_names_out()) == ["cr50", "cr51", "cr52", "cr53"]
    view = cr5.for_language("es").set_output(transform="pandas")
    df = view.fit().transform(ES[:5])
    assert isinstance(df, pd.DataFrame) and list(df.columns) == ["cr50", "cr51", "cr52", "cr53"]
    np.testing.assert_array_equal(df.to_numpy(), cr5.transform(ES[:5], "es"))
    w = WMF(n_components=3, max_iter=2, min_df=1, random_state=0, show_progress=False)
    out = w.set_output(transform="pandas").fit_transform(EN)
    assert list(out.columns) == ["wmf0", "wmf1", "wmf2"] and len(out) == len(EN)


def test_a_language_view_in_a_pipeline_classifies_the_other_language(cr5):
    """Topic classifier trained on English embeddings, applied to Spanish through the same
    fitted Cr5: a Pipeline of LanguageView + LogisticRegression per language."""
    clf = LogisticRegression(max_iter=1000).fit(cr5.transform(EN[:80], "en"), TOPIC[:80])
    es_pipe = make_pipeline(cr5.for_language("es"), clf)
    assert np.mean(es_pipe.predict(ES[80:]) == TOPIC[80:]) > 0.8        # chance 1/3
    with pytest.raises(ValueError, match=r"unknown language 'fr': the model was trained on \['en', 'es'\]"):
        LanguageView(cr5, "fr").fit()
    with pytest.raises(TypeError, match="fit takes several languages and transform one"):
        Cr5().fit_transform(EN)


def test_a_pipeline_holding_a_language_view_cross_validates(cr5):
    """cross_val_score / GridSearchCV clone the Pipeline; the clone of a view held an unfitted
    clone of its model, and every fold failed with "this Cr5 instance is not fitted yet"."""
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score
    view = cr5.for_language("es").set_output(transform="pandas")
    twin = clone(view)
    assert twin is not view and twin.model is cr5 and twin.language == "es"
    assert list(twin.fit().transform(ES[:2]).columns) == ["cr50", "cr51", "cr52", "cr53"]
    pipe = make_pipeline(cr5.for_language("es"), LogisticRegression(max_iter=1000))
    scores = cross_val_score(pipe, ES, TOPIC, cv=3, error_score="raise")
    assert scores.min() > 0.8                                            # chance 1/3
    search = GridSearchCV(pipe, {"logisticregression__C": [0.1, 1.0]}, cv=3, error_score="raise").fit(ES, TOPIC)
    assert search.best_estimator_.steps[0][1].model is cr5


@pytest.mark.parametrize("cls", [Cr5, CLLSI])
def test_fit_transform_with_fits_arguments_explains_fit_then_transform(cls):
    """fit_transform(texts, languages, concepts), fit's three arguments, gets the same
    explanation as fit_transform(one argument), not Python's count of positional arguments."""
    texts, langs, concepts = EN + ES, ["en"] * len(EN) + ["es"] * len(ES), list(range(len(EN))) * 2
    model = cls(n_components=4)
    for args in [(texts, langs, concepts), (texts,)]:
        with pytest.raises(TypeError, match=rf"^{cls.__name__}\.fit takes several languages and transform "
                                            r"one: call fit\(\.\.\.\), then transform\(texts, language\)"):
            model.fit_transform(*args)
    assert not hasattr(model, "components_")


def test_fit_transform_of_a_one_language_model_refuses_extra_positional_arguments():
    from linxling import CompressTree
    with pytest.raises(TypeError, match=r"CompressTree\.fit_transform takes X and y \(ignored\), got 3 "
                                        "positional arguments"):
        CompressTree().fit_transform(EN, None, "extra")

def test_grid_search_of_alpha_over_text_language_pairs():
    pairs = [(t, "en") for t in EN] + [(t, "es") for t in ES]
    concepts = list(range(len(EN))) * 2
    search = GridSearchCV(MultilingualFit(Cr5(n_components=4, min_df=1, doc_filter=None, random_state=0,
                                              show_progress=False)),
                          {"estimator__alpha": [0.1, 10.0]}, cv=GroupKFold(3))
    search.fit(pairs, concepts, groups=concepts)        # a fold never splits a concept
    assert search.best_params_["estimator__alpha"] in (0.1, 10.0)
    assert search.best_score_ > 0.2                    # P@1 over ~40 held-out concepts: chance 0.025
    Z = search.best_estimator_.transform(pairs[:3] + pairs[-3:])
    assert Z.shape == (6, 4)


def test_multilingual_fit_of_an_aligned_sentence_model():
    pairs = [(t, "en") for t in EN] + [(t, "es") for t in ES]
    concepts = list(range(len(EN))) * 2
    m = MultilingualFit(BiCVM(n_components=8, n_epochs=2, random_state=0, n_threads=1,
                              show_progress=False)).fit(pairs, concepts)
    assert 0.0 <= m.score(pairs, concepts) <= 1.0
    with pytest.raises(TypeError, match=r"X\[0\] must be a \(text, language\) pair"):
        m.fit(EN, concepts[:len(EN)])


def test_multilingual_fit_of_aligned_sentences_says_which_documents_it_leaves_out():
    """One row per concept with a document in every language: a concept missing a language and a
    second document of a concept were left out of the fit without a word."""
    pairs = [(t, "en") for t in EN[:30]] + [(t, "es") for t in ES[:25]] + [(ES[29], "es")]
    concepts = list(range(30)) + list(range(25)) + [0]
    est = BiCVM(n_components=4, n_epochs=1, random_state=0, n_threads=1, show_progress=False)
    with pytest.warns(UserWarning, match=r"^MultilingualFit: 6 of 56 documents are left out .* \(25 concepts\): "
                                         r"5 of a concept without a document in every language, 1 repeating a concept"):
        MultilingualFit(est).fit(pairs, concepts)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # every document used: nothing said
        MultilingualFit(est).fit(pairs[:25] + pairs[30:55], list(range(25)) * 2)


def test_multilingual_fit_of_a_pivot_model():
    """x-WMF was refused as 'not fitted on multilingual documents': it fits {language: (pivot rows,
    rows)}, which MultilingualFit builds from the concepts as it does b-WMF's aligned rows."""
    from linxling import CrossWMF
    pairs = [(t, "en") for t in EN] + [(t, "es") for t in ES]
    concepts = list(range(len(EN))) * 2
    kw = dict(n_components=4, max_iter=5, min_df=1, random_state=0, show_progress=False)
    m = MultilingualFit(CrossWMF(**kw)).fit(pairs, concepts)
    direct = CrossWMF(**kw).fit({"es": (EN, ES)})
    assert m.estimator_.languages_ == ["en", "es"]
    np.testing.assert_array_equal(m.transform(pairs[-3:]), direct.transform(ES[-3:], "es"))
    assert m.score(pairs, concepts) > 0.2                   # chance 1/120
    with pytest.raises(ValueError, match="no document in the pivot language 'de'"):
        MultilingualFit(CrossWMF(pivot_language="de", **kw)).fit(pairs, concepts)


def test_multilingual_fit_refuses_a_bad_k_and_use_before_fit():
    """k=0 scored 0.0 and k=-1 about 1.0 (argpartition then kept all but one document), k=1.5
    was taken; transform or score before fit raised AttributeError 'estimator_'."""
    from sklearn.exceptions import NotFittedError
    pairs = [(t, "en") for t in EN[:30]] + [(t, "es") for t in ES[:30]]
    concepts = list(range(30)) * 2
    est = Cr5(n_components=4, min_df=1, doc_filter=None, random_state=0, show_progress=False)
    for call in (lambda m: m.transform(pairs), lambda m: m.score(pairs, concepts)):
        with pytest.raises(NotFittedError, match="MultilingualFit"):
            call(MultilingualFit(est))
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        MultilingualFit(est, k=0).fit(pairs, concepts)
    m = MultilingualFit(est).fit(pairs, concepts)
    for k, err, msg in [(0, ValueError, "k must be >= 1, got 0"), (-1, ValueError, "k must be >= 1, got -1"),
                        (1.5, TypeError, "k must be an integer")]:
        m.k = k
        with pytest.raises(err, match=msg):
            m.score(pairs, concepts)
