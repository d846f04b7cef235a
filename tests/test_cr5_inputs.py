"""Cr5 from texts: no silent loss of a corpus of sentences, errors in the user's terms."""
from __future__ import annotations

import numpy as np
import pytest

from linxling.models import Cr5


def _sentences(n=60, seed=0):
    """Short aligned 'sentences' (5-8 words) in two languages: concept c shares its topic words."""
    rng = np.random.default_rng(seed)
    texts, langs, concepts = [], [], []
    for lang in ("en", "xx"):
        for c in range(n):
            topic = [f"{lang}t{c % 12}", f"{lang}u{c % 7}"]
            words = topic + [f"{lang}w{w}" for w in rng.integers(0, 40, rng.integers(3, 7))]
            texts.append(" ".join(words))
            langs.append(lang)
            concepts.append(c)
    return texts, langs, concepts


def test_default_keeps_every_sentence():
    texts, langs, concepts = _sentences()
    m = Cr5(n_components=4, random_state=0).fit(texts, langs, concepts)
    assert m.fit_info_["n_dropped"] == {"en": 0, "xx": 0}
    assert len(m.classes_) == 60


def test_wikipedia_filter_on_sentences_is_an_error_naming_the_filter():
    texts, langs, concepts = _sentences()
    # every verse-length document is dropped, so the vectoriser has nothing left to fit on
    with pytest.raises(ValueError, match=r"language 'en': .*dropped by the unique-word filter.*"
                                         r"doc_filter='wikipedia' keeps documents with 50..1000 unique words"):
        Cr5(n_components=4, doc_filter="wikipedia").fit(texts, langs, concepts)


def test_filter_dropping_more_than_half_is_an_error_and_less_is_a_warning():
    texts, langs, concepts = _sentences()
    n_unique = [len(set(t.split())) for t in texts[:60]]
    cut = int(np.percentile(n_unique, 30))
    with pytest.warns(UserWarning, match=rf"dropped by doc_filter=\({cut}, None\)"):
        m = Cr5(n_components=4, doc_filter=(cut, None), random_state=0).fit(texts, langs, concepts)
    assert 0 < m.fit_info_["n_dropped"]["en"] <= 30
    with pytest.raises(ValueError, match=r"drops \d+ of the 60 documents of language 'en'"):
        Cr5(n_components=4, doc_filter=(max(n_unique), None)).fit(texts, langs, concepts)
    with pytest.raises(ValueError, match=r"'doc_filter' parameter of Cr5 must be a str among \{'wikipedia'\}, "
                                         r"an instance of 'tuple', an instance of 'list' or None\. Got 'short'"):
        Cr5(n_components=4, doc_filter="short").fit(texts, langs, concepts)


def test_bytes_are_reported_at_their_index_in_the_users_sequence():
    texts, langs, concepts = _sentences()
    texts[70] = texts[70].encode()          # 11th document of language 'xx', 71st of the input
    with pytest.raises(TypeError, match=r"texts\[70\] is bytes, expected str"):
        Cr5(n_components=4).fit(texts, langs, concepts)


def test_swapped_texts_and_languages_are_named():
    """``fit(languages, texts, concepts)`` fitted in silence (one "language" per sentence, its
    only feature the word 'en'), with a warning about n_components for CL-LSI a min_df error; a
    dict of texts gave a length mismatch. A dict of texts is now a form of fit of its own (its keys
    are the languages), so languages given with it are refused as such."""
    from linxling.models import CLLSI
    texts, langs, concepts = _sentences()
    for cls in (Cr5, CLLSI):
        with pytest.raises(ValueError, match=r"languages\[0\] is .*a language code has no spaces.*swapped"):
            cls(n_components=2).fit(langs, texts, concepts)
    with pytest.raises(TypeError, match=r"languages is given, but texts is a mapping \{language: texts\} whose "
                                        r"keys are the languages: leave languages out"):
        Cr5(n_components=2).fit({"en": texts[:60], "xx": texts[60:]}, langs, concepts)


def test_transform_matrix_with_swapped_arguments_is_named():
    import scipy.sparse as sp
    texts, langs, concepts = _sentences()
    m = Cr5(n_components=2, random_state=0).fit(texts, langs, concepts)
    X = sp.csr_matrix((2, m.n_features_["en"]))
    with pytest.raises(TypeError, match=r"language must be a str \(a language code\), got csr_matrix: .*swapped"):
        m.transform_matrix("en", X)


def test_language_with_one_document_is_named():
    texts, langs, concepts = _sentences()
    texts, langs, concepts = texts + ["un seul document"], langs + ["fr"], concepts + [0]
    with pytest.raises(ValueError, match=r"language 'fr' \(1 documents\): .*min_df=3"):
        Cr5(n_components=4, min_df=3).fit(texts, langs, concepts)


def test_doc_filter_survives_save_load(tmp_path):
    texts, langs, concepts = _sentences()
    m = Cr5(n_components=4, random_state=0, doc_filter=(0, 100)).fit(texts, langs, concepts)
    m.save(tmp_path / "m.h5")
    back = Cr5.load(tmp_path / "m.h5")
    assert tuple(back.doc_filter) == (0, 100)
    np.testing.assert_allclose(back.transform(texts[:5], "en"), m.transform(texts[:5], "en"))


# ------------------------------------------------------------------ extreme values, in the input's terms
def _blocks(scale_a=1.0, scale_b=1.0):
    import scipy.sparse as sp
    X = sp.random(30, 20, density=0.3, random_state=0, format="csr")
    X.data[0] = 1.0                         # the largest value is exactly 1
    return {"a": X * scale_a, "b": X * scale_b}, {"a": np.arange(30), "b": np.arange(30)}


@pytest.mark.parametrize("kw,args,match", [
    ({}, (1e200, 1.0), r"blocks\['a'\] has values up to 1e\+200.*overflow float64.*rescale"),
    ({}, (1e-300, 1e-300), r"blocks\['a'\] has values no larger than 1e-300.*underflow to zero"),
    ({}, (0.0, 1.0), r"blocks\['a'\] is all zero"),
    ({"dtype": np.float32}, (1e100, 1.0), r"blocks\['a'\] has values up to 1e\+100, which do not fit in float32"),
])
def test_extreme_values_are_named(kw, args, match):
    blocks, concepts = _blocks(*args)
    with pytest.raises(ValueError, match=match):
        Cr5(n_components=2, **kw).fit_matrices(blocks, concepts)


def test_float16_is_refused_with_the_supported_dtypes():
    blocks, concepts = _blocks()
    blocks["a"] = blocks["a"].toarray().astype(np.float16)
    with pytest.raises(TypeError, match=r"blocks\['a'\] has dtype float16.*float32 or float64"):
        Cr5(n_components=2).fit_matrices(blocks, concepts)


def test_small_or_unlinked_data_is_said_not_silent():
    """Issue #27: languages sharing no concept (an error), fewer shared concepts than components,
    more components than a language's vocabulary (warnings that name the remedy)."""
    import warnings

    import scipy.sparse as sp

    from linxling import Cr5
    rng = np.random.default_rng(0)
    X = {"en": sp.random(40, 30, density=0.3, random_state=rng, format="csr"),
         "es": sp.random(40, 25, density=0.3, random_state=rng, format="csr")}
    disjoint = {"en": np.arange(40), "es": np.arange(40, 80)}
    with pytest.raises(ValueError, match="no concept has documents in two languages"):
        Cr5(n_components=3, random_state=0).fit_matrices(X, disjoint)
    few = {"en": np.arange(40), "es": np.r_[np.arange(2), np.arange(100, 138)]}
    with pytest.warns(UserWarning, match="only 2 concepts have documents in more than one language"):
        Cr5(n_components=3, random_state=0).fit_matrices(X, few)
    same = {"en": np.arange(40), "es": np.arange(40)}
    with pytest.warns(UserWarning, match=r"n_components=28 exceeds the vocabulary of 'es' \(25 features"):
        Cr5(n_components=28, random_state=0, eig_maxiter=50).fit_matrices(X, same)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        Cr5(n_components=3, random_state=0).fit_matrices(X, same)        # nothing to say


def test_an_empty_language_code_is_an_error_naming_its_index():
    """"" (or blanks) as a language code was accepted by Cr5 and CL-LSI (a new-user audit;
    the sentence-pair models already refused it)."""
    from linxling.models import CLLSI
    texts, langs, concepts = _sentences()
    langs[61] = ""
    for cls in (Cr5, CLLSI):
        with pytest.raises(ValueError, match=r"languages\[61\] is '': a language code must be a non-empty str"):
            cls(n_components=4).fit(texts, langs, concepts)


def test_blocks_with_duplicate_or_unsorted_entries_are_summed_and_the_input_kept():
    """A block in non-canonical CSR (a duplicate entry, a row's columns out of order) is fitted as
    the matrix it represents (duplicates added, as SciPy does); a canonical float64 block fitted
    in float32 shares its indices with the fit and keeps its own values and flags."""
    import scipy.sparse as sp

    from linxling._validation import check_sparse_matrix_max
    rng = np.random.default_rng(0)
    ids = np.arange(40)
    blocks = {lang: sp.random(40, 30, density=0.2, format="csr", random_state=rng) for lang in ("en", "fr")}
    for X in blocks.values():
        X.data += 0.5
    concepts = {"en": ids, "fr": ids}
    ref = Cr5(n_components=3, random_state=0).fit_matrices(blocks, concepts)
    # en's row 2 with a duplicate of its first entry (half the value twice) and the columns reversed
    en = blocks["en"]
    s, e = en.indptr[2], en.indptr[3]
    assert e - s >= 2
    data = np.concatenate([en.data[:s], [en.data[s] / 2, en.data[s] / 2], en.data[s + 1:e][::-1], en.data[e:]])
    idx = np.concatenate([en.indices[:s], [en.indices[s]] * 2, en.indices[s + 1:e][::-1], en.indices[e:]])
    indptr = en.indptr.copy()
    indptr[3:] += 1
    messy = sp.csr_matrix((data, idx, indptr), shape=en.shape)
    assert not messy.has_canonical_format
    np.testing.assert_allclose(messy.toarray(), en.toarray(), rtol=1e-15)
    got = Cr5(n_components=3, random_state=0).fit_matrices({"en": messy, "fr": blocks["fr"]}, concepts)
    for lang in ("en", "fr"):
        np.testing.assert_allclose(np.abs(got.components_[lang]), np.abs(ref.components_[lang]), atol=1e-10)
    # the largest value is the summed matrix's, whatever the layout
    X, big = check_sparse_matrix_max(messy.copy(), "X", dtype=np.float32, canonical=True)
    assert X.has_canonical_format and big == float(np.float32(np.abs(en.data).max()))
    # a canonical float64 input cast to float32: only the values copied, the input untouched
    fr = blocks["fr"]
    before = (fr.data.copy(), fr.indices.copy(), fr.indptr.copy())
    X, big = check_sparse_matrix_max(fr, "X", dtype=np.float32, canonical=True)
    assert X.dtype == np.float32 and np.shares_memory(X.indices, fr.indices)
    assert big == float(np.float32(np.abs(fr.data).max()))
    for a, b in zip(before, (fr.data, fr.indices, fr.indptr), strict=True):
        np.testing.assert_array_equal(a, b)
    assert fr.dtype == np.float64


def _corrupt(kind):
    import scipy.sparse as sp
    X = sp.random(20, 10, density=0.4, random_state=0, format="csc" if kind == "csc" else "coo"
                  if kind == "coo" else "csr")
    if kind == "column":
        X.indices[0] = 100
    elif kind == "negative":
        X.indices[0] = -3
    elif kind == "indptr":
        X.indptr[5] = 1000
    elif kind == "short indptr":
        X.indptr = X.indptr[:-3]
    elif kind == "csc":
        X.indices[0] = 50
    elif kind == "coo":
        X.coords[1][0] = 50
    return X


CORRUPT = {"column": r"column index 100 outside \[0, 10\)", "negative": r"column index -3 outside \[0, 10\)",
           "indptr": "indptr decreases", "short indptr": "indptr has 18 entries, expected 21",
           "csc": r"CSC matrix .*row index 50 outside \[0, 20\)", "coo": r"column index 50 outside \[0, 10\)"}


def _matrix_entry_points():
    import scipy.sparse as sp

    from linxling.models import CLLSI, WMF, BilingualWMF
    Y = sp.random(20, 10, density=0.4, random_state=1, format="csr")
    ids = {"en": np.arange(20), "de": np.arange(20)}
    return {
        "WMF.fit": lambda X: WMF(n_components=2, max_iter=1, show_progress=False).fit(X),
        "BilingualWMF.fit": lambda X: BilingualWMF(n_components=2, max_iter=1, show_progress=False).fit(
            {"en": X, "de": Y}),
        "Cr5.fit_matrices": lambda X: Cr5(n_components=2).fit_matrices({"en": X, "de": Y}, ids),
        "CLLSI.fit_matrices": lambda X: CLLSI(n_components=2).fit_matrices({"en": X, "de": Y}, ids),
        "Cr5.transform_matrix": lambda X: Cr5(n_components=2).fit_matrices(
            {"en": Y, "de": Y.copy()}, ids).transform_matrix(X, "en"),
    }


@pytest.mark.parametrize("kind", list(CORRUPT))
@pytest.mark.parametrize("entry", list(_matrix_entry_points()))
def test_a_sparse_matrix_whose_index_arrays_were_edited_is_refused_not_followed(entry, kind):
    """SciPy checks a sparse matrix's index arrays when it is built from them, not when they are
    edited afterwards: a column index of 100 in a 10-column CSR made WMF's fit segfault (in
    SciPy's CSR -> CSC conversion), a negative one or a decreasing row pointer corrupted the heap
    ("corrupted size vs. prev_size") in Cr5's and the WMF kernels. Every matrix input is now
    checked first (linxling._validation.check_sparse_structure), naming the argument."""
    X = _corrupt(kind)
    with pytest.raises(ValueError, match=r"(X|blocks\['en'\]|X\['en'\]) is not a valid .*" + CORRUPT[kind]):
        _matrix_entry_points()[entry](X)


@pytest.mark.parametrize("entry, X, match", [
    (entry, np.array([["a", "b"], ["c", "d"]]), r"must hold real numbers, got dtype <U1 \(texts\?")
    for entry in ("WMF.fit", "Cr5.fit_matrices", "Cr5.transform_matrix")] + [
    ("Cr5.fit_matrices", np.array(["w1 w2", "w3"]), r"must hold real numbers, got dtype <U5 \(texts\?"),
    ("WMF.fit", np.zeros((2, 2), "datetime64[s]"), r"must hold real numbers, got dtype datetime64\[s\]"),
], ids=["2-D str, WMF.fit", "2-D str, Cr5.fit_matrices", "2-D str, Cr5.transform_matrix", "1-D str, Cr5.fit_matrices",
        "datetime, WMF.fit"])
def test_a_dense_matrix_of_non_numbers_is_named(entry, X, match):
    """A dense array of str (or dates) where a matrix goes: SciPy's "scipy.sparse does not support
    dtype <U1" named no argument; now a TypeError naming it (and a hint for texts)."""
    with pytest.raises(TypeError, match=r"(X|blocks\['en'\]) " + match):
        _matrix_entry_points()[entry](X)


def test_documents_that_are_one_text_repeated_are_said_not_silent():
    """A language whose documents are fewer distinct texts than n_components (a column of one
    repeated text, the others varied) fitted in silence, its documents all embedding alike
    (held-out retrieval at chance); Cr5 and CL-LSI now warn naming the language. Every language
    one text: Cr5's eigen-solve said only "ARPACK error -9: Starting vector is zero"."""
    import warnings

    from linxling.models import CLLSI
    texts, langs, concepts = _sentences()
    n = langs.count("en")
    assert texts[:n] == [t for t, lang in zip(texts, langs, strict=True) if lang == "en"]
    repeated = [texts[0]] * n + texts[n:]
    for cls in (Cr5, CLLSI):
        with pytest.warns(UserWarning, match=rf"^{cls.__name__}: the {n} documents of 'en' are all one and the same "
                                             r"text, fewer than n_components=4: its documents embed in at most 1 "
                                             r"direction and cannot be told apart"):
            cls(n_components=4, random_state=0).fit(repeated, langs, concepts)
        few = [texts[i % 3] for i in range(n)] + texts[n:]
        with pytest.warns(UserWarning, match=r"'en' are only 3 distinct texts, fewer than n_components=4"):
            cls(n_components=4, random_state=0).fit(few, langs, concepts)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            cls(n_components=4, random_state=0).fit(texts, langs, concepts)      # varied: nothing to say
    # every language one text: warned. What follows rides on rounding noise: on this CPU's BLAS
    # kernels ARPACK runs out of directions; under Prescott the eigen-solve ends, and the
    # orthonormal map finds Φ*Φ*ᵀ singular or (in some runs) noise just above zero. So an error
    # is checked when it comes (either stage's says why), and Cr5's wording of ARPACK's is checked
    # below on an eigen-solve that always runs out
    one = [texts[0]] * n + [texts[n]] * (len(texts) - n)
    with pytest.warns(UserWarning, match="all one and the same text"):
        try:
            Cr5(n_components=4, random_state=0, eig_method="arpack").fit(one, langs, concepts)
        except np.linalg.LinAlgError as exc:
            assert "the data support fewer than n_components=4 directions" in str(exc), exc


def test_an_eigen_solve_out_of_directions_is_said_in_cr5s_words(monkeypatch):
    """ARPACK's "error -9: Starting vector is zero" (a Krylov space exhausted before k
    eigenvectors: identical documents) reached the user as such; Cr5 names the cause."""
    import linxling.models.cr5 as cr5_module
    from linxling.solvers import eigsh

    def zero_operator_eigsh(M, k, **kw):      # the same solver on an operator with no direction
        import scipy.sparse.linalg as spla
        zero = spla.LinearOperator(M.shape, matvec=lambda v: np.zeros_like(v), dtype=M.dtype)
        return eigsh(zero, k, method="arpack", random_state=0)
    monkeypatch.setattr(cr5_module, "eigsh", zero_operator_eigsh)
    texts, langs, concepts = _sentences()
    with pytest.raises(np.linalg.LinAlgError, match=r"^Cr5: the data support fewer than n_components=4 "
                                                    r"directions .*identical documents"):
        Cr5(n_components=4, random_state=0).fit(texts, langs, concepts)


def test_cllsi_says_what_cr5_says_of_small_or_unlinked_data():
    """CL-LSI fitted in silence where Cr5 warned: fewer shared concepts than components, more
    components than a language's vocabulary (held-out retrieval near chance)."""
    import scipy.sparse as sp

    from linxling.models import CLLSI
    rng = np.random.default_rng(0)
    X = {"en": sp.random(40, 30, density=0.3, random_state=rng, format="csr"),
         "es": sp.random(40, 25, density=0.3, random_state=rng, format="csr")}
    few = {"en": np.arange(40), "es": np.r_[np.arange(2), np.arange(100, 138)]}
    with pytest.warns(UserWarning, match="^CLLSI: only 2 concepts have documents in more than one language, "
                                         "fewer than n_components=3"):
        CLLSI(n_components=3, random_state=0).fit_matrices(X, few)
    same = {"en": np.arange(40), "es": np.arange(40)}
    with pytest.warns(UserWarning, match=r"^CLLSI: n_components=28 exceeds the vocabulary of 'es' \(25 features"):
        CLLSI(n_components=28, random_state=0).fit_matrices(X, same)


def test_concept_ids_given_as_a_dask_array_are_named():
    """Concept ids as a dask array (natural beside dask blocks): list() made a dask scalar per id
    and the error said "concepts['a'][0] = dask.array<...> is not hashable"."""
    da = pytest.importorskip("dask.array")
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    blocks = {lang: sp.random(30, 12, density=0.3, random_state=rng, format="csr") for lang in "ab"}
    concepts = {"a": da.arange(30, chunks=10), "b": np.arange(30)}
    with pytest.raises(TypeError, match=r"concepts\['a'\] is a dask collection \(dask.array.*Array\); .*"
                                        r"concepts\['a'\].compute\(\)"):
        Cr5(n_components=2).fit_matrices(blocks, concepts)
    concepts["a"] = concepts["a"].compute()
    assert Cr5(n_components=2, show_progress=False).fit_matrices(blocks, concepts).fit_info_["n_concepts"] == 30
