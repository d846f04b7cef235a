"""WMF family: texts through one path (any iterable of str), bad inputs named in the user's terms."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from linxling.io import ModelFormatError
from linxling.models import CLLSI, WMF, BilingualWMF, Cr5

SENTS = ["the cat sat", "a dog ran far", "the cat ran", "a dog sat", "cats and dogs"] * 4


def _wmf(**kw):
    return WMF(n_components=2, max_iter=1, min_df=1, show_progress=False, random_state=0, **kw)


@pytest.mark.parametrize("X,exc,match", [
    ([b"the cat", b"a dog"], TypeError, r"X\[0\] is bytes, expected str \(decode bytes first"),
    (None, TypeError, r"X is None: give a sparse matrix"),
    ([], ValueError, r"X is empty: no sentences"),
    (["the cat", None], TypeError, r"X\[1\] is NoneType, expected str"),
    ("the cat sat", TypeError, r"X must be a sequence of texts .* got a single str"),
    (np.ones((3, 3), dtype=np.float16), TypeError, r"X has dtype float16.*float32 or float64"),
])
def test_bad_inputs_are_named(X, exc, match):
    with pytest.raises(exc, match=match):
        _wmf().fit(X)


def test_pandas_texts_mappings_and_str_sides_are_named():
    """A pandas Series of str ended in ``Cannot interpret StringDtype as a data type`` (object
    dtype: "could not convert string to float"); ``BilingualWMF.transform({lang: texts}, lang)``
    embedded the dict's key as one sentence; a str side of a CrossWMF pair was split into
    characters (one "sentence" each) before any check."""
    from linxling.models import CrossWMF
    pd = pytest.importorskip("pandas")
    m = _wmf().fit(SENTS)
    for s in (pd.Series(SENTS), pd.Series(SENTS, dtype=object)):
        np.testing.assert_array_equal(_wmf().fit(s).transform(s), m.transform(SENTS))
    b = BilingualWMF(n_components=2, max_iter=1, min_df=1, show_progress=False).fit({"en": SENTS, "de": SENTS})
    with pytest.raises(TypeError, match=r"X must be one language's texts .*got a dict \(a mapping"):
        b.transform({"en": SENTS}, "en")
    with pytest.raises(TypeError, match=r"parallel\['de'\]\[1\] must be a sequence of texts .*got a str"):
        CrossWMF(n_components=2, max_iter=1, min_df=1, show_progress=False).fit({"de": (SENTS, "das ist")})


def test_any_iterable_of_str_is_texts():
    a = _wmf().fit(SENTS)
    b = _wmf().fit(s for s in SENTS)                   # a generator
    c = _wmf().fit(tuple(SENTS))
    d = _wmf().fit(np.array(SENTS))                    # a 1-D str array
    for m in (b, c, d):
        np.testing.assert_array_equal(m.components_, a.components_)
    assert a.transform(iter(SENTS[:3])).shape == (3, 2)


def test_huge_values_are_named_not_nan():
    X = sp.random(30, 20, density=0.3, random_state=0, format="csr")
    X.data[0] = 1.0
    with pytest.raises(ValueError, match=r"X has values up to 1e\+200.*overflow float64"):
        _wmf().fit(X * 1e200)
    with pytest.raises(ValueError, match=r"X is all zero"):
        _wmf().fit(X * 0)


def test_fewer_sentences_than_components_warn():
    """The other trained models warn of more dimensions than training examples; the WMF family
    did so only for a vocabulary smaller than n_components, and fitted 5 sentences into 10
    dimensions in silence."""
    from linxling.models import CrossWMF
    X = sp.random(5, 40, density=0.5, random_state=0, format="csr")
    kw = dict(n_components=10, max_iter=1, show_progress=False, random_state=0)
    with pytest.warns(UserWarning, match=r"WMF: only 5 sentences for n_components=10"):
        WMF(**kw).fit(X)
    with pytest.warns(UserWarning, match=r"BilingualWMF: only 5 sentences for n_components=10"):
        BilingualWMF(**kw).fit({"en": X, "fr": X.copy()})
    with pytest.warns(UserWarning, match=r"^WMF: only 5 sentences for n_components=10"):   # its pivot WMF
        CrossWMF(pivot_language="en", **kw).fit({"fr": (X, X.copy())})
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r".*sentences for n_components", category=UserWarning)
        WMF(**{**kw, "n_components": 5}).fit(X)


def test_sentences_that_are_one_text_repeated_warn_naming_them():
    """A language whose sentences are one text repeated (the other varied) fitted in silence,
    held-out P@1 at chance (Bible en-de, 2,000 verses, one side one verse, n_components=10:
    b-WMF 0.002, x-WMF 0.0); all of them one text warned only that the vectors collapsed,
    blaming alpha. Now a warning naming the input; varied sentences fit in silence."""
    import warnings

    from linxling.models import CrossWMF
    X = sp.random(30, 40, density=0.2, random_state=0, format="csr")
    one = sp.csr_matrix(np.repeat(X[:1].toarray(), 30, axis=0))
    kw = dict(n_components=4, max_iter=2, show_progress=False, random_state=0)
    msg = r"the 30 sentences of {} are all one and the same text, fewer than n_components=4"
    with pytest.warns(UserWarning, match="^BilingualWMF: " + msg.format(r"X\['fr'\]")):
        BilingualWMF(**kw).fit({"en": X, "fr": one})
    with pytest.warns(UserWarning, match="^CrossWMF: " + msg.format(r"parallel\['fr'\]\[1\]")):
        CrossWMF(pivot_language="en", **kw).fit({"fr": (X, one)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        WMF(**kw).fit(one)
    said = [str(w.message) for w in caught]
    assert any(m.startswith("WMF: " + "the 30 sentences of X are all one and the same text") for m in said), said
    assert not any("collapsed" in m for m in said), said      # the cause, not alpha
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BilingualWMF(**kw).fit({"en": X, "fr": X.copy()})
        CrossWMF(pivot_language="en", **kw).fit({"fr": (X, X.copy())})


def test_bilingual_language_inputs_named():
    with pytest.raises(TypeError, match=r"X\['fr'\]\[2\] is bytes"):
        BilingualWMF(n_components=2, max_iter=1, min_df=1, show_progress=False).fit(
            {"en": SENTS[:5], "fr": ["le chat", "un chien", b"le chat", "un chien", "chats"]})


def test_the_multilingual_wmf_inputs_are_shown_when_given_in_another_shape():
    """b-WMF given a list said "X must be a mapping language -> matrix" (texts work too); x-WMF
    given b-WMF's input {"en": en, "es": es} said only "parallel must not contain the pivot
    language 'en'", and {"es": es} "must be a pair (X_pivot_side, X_es)": each says what goes."""
    from linxling.models import CrossWMF
    kw = dict(n_components=2, max_iter=1, min_df=1, show_progress=False)
    with pytest.raises(TypeError, match=r"^X must be a mapping language -> texts or matrix, got list$"):
        BilingualWMF(**kw).fit([SENTS, SENTS])
    with pytest.raises(ValueError, match=r"^parallel must not contain the pivot language 'en': it maps each other "
                                         r"language to a pair \(pivot side, that language's side\), e\.g\. "
                                         r"\{'es': \(en_texts, es_texts\)\} \(row-aligned texts of all languages in "
                                         r"one dict are BilingualWMF's input\)$"):
        CrossWMF(pivot_language="en", **kw).fit({"en": SENTS, "es": SENTS})
    with pytest.raises(TypeError, match=r"^parallel\['es'\] must be a pair \(X_pivot_side, X_es\), got a list: "
                                        r"e\.g\. \{'es': \(en_texts, es_texts\)\}$"):
        CrossWMF(pivot_language="en", **kw).fit({"es": SENTS})


def test_a_language_mapping_is_refused_naming_the_multilingual_models():
    """WMF().fit({"en": texts}) read the dict's key as the one document ('empty vocabulary ...
    (1 documents, 1 distinct terms)'); it is a TypeError that names BilingualWMF and CrossWMF."""
    from linxling.models import CrossWMF
    models = (r"For row-aligned texts of two or more languages use "
              r"BilingualWMF\(\)\.fit\(\{language: texts\}\).*CrossWMF\(pivot_language=\.\.\.\)\.fit")
    with pytest.raises(TypeError, match=r"^WMF\.fit takes one language's texts \(a sequence of str\) or a "
                                        r"sentence x word matrix, not a dict \{language: texts\}; for one language "
                                        r"pass its texts: WMF\(language='en'\)\.fit\(X\['en'\]\)\. " + models):
        _wmf().fit({"en": SENTS})
    with pytest.raises(TypeError, match=r"^WMF\.fit takes one language's texts .*not a dict \{language: texts\}\. "
                                        + models):
        _wmf().fit({"en": SENTS, "es": SENTS})
    m = _wmf().fit(SENTS)
    with pytest.raises(TypeError, match=r"^WMF\.transform takes one language's texts .*: transform\(X\['en'\]\)"):
        m.transform({"en": SENTS[:2]})
    # the models named take what the message says they take
    assert BilingualWMF(n_components=2, max_iter=1, min_df=1, show_progress=False).fit(
        {"en": SENTS, "es": SENTS}).transform(SENTS[:2], "es").shape == (2, 2)
    assert CrossWMF(pivot_language="en", n_components=2, max_iter=1, min_df=1, show_progress=False).fit(
        {"es": (SENTS, SENTS)}).transform(SENTS[:2], "es").shape == (2, 2)

def test_load_checks_the_model_class(tmp_path):
    X = sp.random(30, 20, density=0.3, random_state=0, format="csr")
    rng = np.random.default_rng(0)
    blocks = {"a": X, "b": sp.random(30, 15, density=0.3, random_state=1, format="csr")}
    CLLSI(n_components=2, random_state=0).fit_matrices(blocks, {"a": rng.permutation(30), "b": np.arange(30)}).save(
        tmp_path / "cllsi.h5")
    with pytest.raises(ModelFormatError, match="holds a CLLSI model, not a Cr5"):
        Cr5.load(tmp_path / "cllsi.h5")
    _wmf().fit(X).save(tmp_path / "wmf.h5")
    with pytest.raises(ModelFormatError, match="holds a WMF model, not a Cr5"):
        Cr5.load(tmp_path / "wmf.h5")


def _split(text):
    return text.split()


def test_a_model_fitted_with_a_custom_tokenizer_is_not_saved_into_a_file_that_cannot_load(tmp_path):
    """save() warned "the loaded model uses the default tokenizer" and wrote the file, which
    linxling.load then refused (ModelFormatError: the vectoriser needs its custom tokenizer):
    save now refuses, before writing, and the file already there stays as it was."""
    import warnings

    import linxling
    from linxling.models import CrossWMF
    en = [f"w{i} w{i + 1} w{(3 * i) % 7}" for i in range(30)]
    de = [f"v{i} v{i + 1} v{(3 * i) % 7}" for i in range(30)]
    kw = dict(n_components=2, max_iter=1, random_state=0, min_df=1, show_progress=False)
    path = tmp_path / "m.h5"
    WMF(**kw).fit(en).save(path)
    before = path.read_bytes()
    for model in (WMF(tokenizer=_split, **kw).fit(en),
                  BilingualWMF(tokenizer=_split, **kw).fit({"en": en, "de": de}),
                  CrossWMF(pivot_language="en", tokenizer=_split, **kw).fit({"de": (en, de)})):
        with pytest.raises(ValueError, match=f"this {type(model).__name__} was fitted from texts with a custom "
                                             "tokenizer, which cannot be stored"):
            model.save(path)
        assert path.read_bytes() == before
    # fitted from a matrix: the tokenizer was never used, the model saves (with the warning) and loads
    X = sp.random(30, 8, density=0.5, random_state=0, format="csr")
    with pytest.warns(UserWarning, match="callable tokenizer cannot be saved"):
        WMF(tokenizer=_split, **kw).fit(X).save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert linxling.load(path).tokenizer is None


def test_the_refused_saves_advice_keeps_a_model_pickle_can_store(tmp_path):
    """save's refusal said "keep the model with pickle or joblib", which fail for a model whose
    tokenizer is a lambda (pickle stores a function by its importable name): the message says
    which tokenizers they keep, and such a model comes back from pickle and joblib equal."""
    import pickle

    import joblib
    en = [f"w{i} w{i + 1} w{(3 * i) % 7}" for i in range(30)]
    kw = dict(n_components=2, max_iter=1, random_state=0, min_df=1, show_progress=False)
    by_lambda = WMF(tokenizer=lambda t: t.split(), **kw).fit(en)
    with pytest.raises(ValueError, match="pickle or joblib .* a function defined at a module's top level, "
                                         "not a lambda"):
        by_lambda.save(tmp_path / "m.h5")
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(by_lambda)
    model = WMF(tokenizer=_split, **kw).fit(en)
    joblib.dump(model, tmp_path / "m.joblib")
    for back in (pickle.loads(pickle.dumps(model)), joblib.load(tmp_path / "m.joblib")):
        np.testing.assert_array_equal(back.transform(en[:5]), model.transform(en[:5]))


@pytest.mark.parametrize("embedding, exc, match", [
    (np.zeros((3, 4)), ValueError, r"^embedding has shape \(3, 4\), expected \(5, 4\)"),
    (np.zeros((5, 3)), ValueError, r"^embedding has shape \(5, 3\), expected \(5, 4\)"),
    (np.full((5, 4), np.nan), ValueError, r"^embedding contains 20 non-finite"),
    (np.full((5, 4), 1e300), ValueError, r"^embedding contains 20 non-finite.*float32"),
    (sp.csr_matrix(np.ones((5, 4))), TypeError, r"^embedding must be a dense array"),
    (["a b"] * 5, TypeError, r"^embedding holds texts"),
    (np.array([{}] * 20).reshape(5, 4), TypeError, r"^embedding must hold real numbers"),
])
def test_loss_checks_the_embedding_it_is_given(embedding, exc, match):
    """WMF.loss(X, embedding) passed the embedding to the kernel as it was: three rows for five
    sentences returned a number (the kernel read past the array), NaN returned NaN, a wrong width
    or a sparse matrix failed inside NumPy naming no argument."""
    X = sp.random(20, 12, density=0.4, format="csr", random_state=0)
    m = WMF(n_components=4, max_iter=1, random_state=0, show_progress=False, dtype=np.float32).fit(X)
    with pytest.raises(exc, match=match):
        m.loss(X[:5], embedding=embedding)
    assert m.loss(X[:5], embedding=m.transform(X[:5])) == pytest.approx(m.loss(X[:5]))
