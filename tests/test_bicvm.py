"""BiCVM / BiCVM+ and Etter's RankingEmbedding: contract, learning, reproducibility, store, errors."""
import numpy as np
import pytest

import linxling
from linxling import BiCVM, RankingEmbedding
from linxling.models._estimator import NotFittedError


def _toy(n=60, seed=0):
    """Synthetic parallel corpus: word i of 'en' translates to word i of 'de'."""
    rng = np.random.default_rng(seed)
    en, de = [], []
    for _ in range(n):
        ws = rng.choice(30, size=rng.integers(3, 7), replace=False)
        en.append(" ".join(f"e{w}" for w in ws))
        de.append(" ".join(f"d{w}" for w in ws))
    return en, de


def _p_at_1(E, D):
    En = E / np.linalg.norm(E, axis=1, keepdims=True)
    Dn = D / np.linalg.norm(D, axis=1, keepdims=True)
    return float(np.mean(np.argmax(En @ Dn.T, axis=1) == np.arange(len(E))))


FAST = {"n_components": 16, "n_epochs": 15, "batch_size": 10, "noise": 3, "random_state": 0,
        "show_progress": False}


def test_bicvm_learns_alignment_and_loss_drops():
    en, de = _toy()
    seen = []
    m = BiCVM(**FAST, callback=lambda model, epoch, loss: seen.append((epoch, loss))).fit({"en": en, "de": de})
    assert len(m.loss_curve_) == 15 and [e for e, _ in seen] == list(range(15))
    assert m.loss_curve_[-1] < 0.5 * m.loss_curve_[0]
    E, D = m.transform(en, language="en"), m.transform(de, language="de")
    assert E.shape == (60, 16)
    # chance is 1/60
    assert _p_at_1(E, D) > 0.5
    words, vecs = m.word_vectors("de")
    assert len(words) == vecs.shape[0] == 30 and vecs.shape[1] == 16


def test_bicvm_reproducible_and_bi_composition():
    en, de = _toy(40)
    a = BiCVM(**FAST, composition="bi").fit({"en": en, "de": de})
    b = BiCVM(**FAST, composition="bi").fit({"en": en, "de": de})
    np.testing.assert_array_equal(a.vectors_["en"], b.vectors_["en"])
    np.testing.assert_array_equal(a.transform(de, "de"), b.transform(de, "de"))


def test_bicvm_plus_pivot_pairs():
    en, de = _toy(40, seed=1)
    en2, fr = _toy(40, seed=2)
    fr = [t.replace("d", "f") for t in fr]
    m = BiCVM(**FAST).fit([{"en": en, "de": de}, {"en": en2, "fr": fr}])
    assert m.languages_ == ["de", "en", "fr"]
    assert m.transform(fr[:3], language="fr").shape == (3, 16)


def test_ranking_embedding_three_languages_word_pairs():
    en, de = _toy(60)
    fr = [t.replace("d", "f") for t in de]
    m = RankingEmbedding(n_components=16, n_epochs=20, learning_rate=0.5, word_pairs=True,
                         random_state=0, show_progress=False).fit({"en": en, "de": de, "fr": fr})
    words, _ = m.word_vectors("en")
    assert all(" " not in w for w in words) and len(m.words_["en"]) > len(words)
    assert _p_at_1(m.transform(en, "en"), m.transform(fr, "fr")) > 0.5
    assert m._margin() == pytest.approx(16 / 32)          # margin None: d / 32


def test_save_load_round_trip(tmp_path):
    en, de = _toy(30)
    m = BiCVM(**FAST).fit({"en": en, "de": de})
    m.save(tmp_path / "b.h5")
    for loaded in (BiCVM.load(tmp_path / "b.h5"), linxling.load(tmp_path / "b.h5")):
        np.testing.assert_array_equal(loaded.transform(en, "en"), m.transform(en, "en"))
        assert loaded.word_vectors("de")[0] == m.word_vectors("de")[0]
        assert loaded.get_params()["n_components"] == 16
    r = RankingEmbedding(n_components=8, n_epochs=2, random_state=0, show_progress=False)
    r.fit({"en": en, "de": de}).save(tmp_path / "r.h5")
    np.testing.assert_array_equal(linxling.load(tmp_path / "r.h5").transform(de, "de"), r.transform(de, "de"))


def test_bad_input():
    en, de = _toy(10)
    m = BiCVM(**FAST)
    with pytest.raises(NotFittedError):
        m.transform(en, "en")
    with pytest.raises(ValueError, match="same length"):
        m.fit({"en": en, "de": de[:-1]})
    with pytest.raises(ValueError, match=r"X\['en'\]\[2\] is empty"):
        m.fit({"en": en[:2] + ["  "] + en[3:], "de": de})
    with pytest.raises(ValueError, match=r"exactly 2 languages, got \['en'\]$"):
        m.fit({"en": en})
    with pytest.raises(ValueError, match=r"exactly 2 languages, got \['de', 'en', 'fr'\]: more languages train "
                                         r"as BiCVM\+, a list of pairs that share a pivot"):
        m.fit({"en": en, "de": de, "fr": de})
    with pytest.raises(ValueError, match="pivot"):
        m.fit([{"en": en, "de": de}, {"fr": en, "es": de}])
    with pytest.raises(ValueError, match="composition"):
        BiCVM(composition="tree").fit({"en": en, "de": de})
    with pytest.raises(TypeError, match="str"):
        m.fit({"en": en[:9] + [3], "de": de})
    # texts without their languages: was "X[0] must be a dict {language: texts}, got str" (X[0] a sentence)
    with pytest.raises(TypeError, match=r"^X is a list of texts, not a dict \{language: texts\}: BiCVM fits "
                                        r"row-aligned texts of several languages, e.g. fit\(\{'en': en_texts"):
        m.fit(en)
    with pytest.raises(TypeError, match=r"^X is a tuple of lists, not a dict \{language: texts\}"):
        m.fit((en, de))
    with pytest.raises(TypeError, match=r"^X is a list of texts, .*: RankingEmbedding fits"):
        RankingEmbedding(n_components=4, random_state=0, show_progress=False).fit(en)
    m.fit({"en": en, "de": de})
    with pytest.raises(ValueError, match="language"):
        m.transform(en, language="fr")


def test_dtype_float32_default_float64_option_and_store(tmp_path):
    en, de = _toy(40)
    m32 = BiCVM(**FAST).fit({"en": en, "de": de})
    m64 = BiCVM(**FAST, dtype="float64").fit({"en": en, "de": de})
    assert m32.vectors_["en"].dtype == np.float32 and m64.vectors_["en"].dtype == np.float64
    # both precisions learn the toy alignment (the trajectories may part where a hinge flips,
    # so the vectors are not compared entry by entry)
    for m in (m32, m64):
        assert _p_at_1(m.transform(en, "en"), m.transform(de, "de")) > 0.9
    m64.save(tmp_path / "b64.h5")
    loaded = BiCVM.load(tmp_path / "b64.h5")
    assert loaded.vectors_["en"].dtype == np.float64 and loaded.get_params()["dtype"] == "float64"
    np.testing.assert_array_equal(loaded.transform(en, "en"), m64.transform(en, "en"))
    with pytest.raises(ValueError, match="dtype"):
        BiCVM(**FAST, dtype="int8").fit({"en": en, "de": de})


def test_ranking_dtype_float32_default_and_a_model_stored_before_the_parameter():
    """RankingEmbedding trains in float32 by default (float64 on request); a model stored
    without a dtype (before the parameter existed, trained in float64) loads as float64 and says so."""
    en, de = _toy(40)
    kw = dict(n_components=8, n_epochs=3, random_state=0, n_threads=1, show_progress=False)
    m32 = RankingEmbedding(**kw).fit({"en": en, "de": de})
    m64 = RankingEmbedding(**kw, dtype="float64").fit({"en": en, "de": de})
    assert m32.vectors_["en"].dtype == np.float32 and m64.vectors_["en"].dtype == np.float64
    params, arrays = m64._get_state()
    del params["dtype"]
    old = RankingEmbedding._from_state(params, arrays)
    assert old.get_params()["dtype"] == "float64" and old.vectors_["de"].dtype == np.float64
    np.testing.assert_array_equal(old.transform(de, "de"), m64.transform(de, "de"))


def test_ranking_center_subtracts_each_languages_training_mean(tmp_path):
    """center=True (the default): transform is the raw mean of word vectors minus the language's
    mean over its training sentences (so the training sentences average to zero), an empty
    text stays a zero row; center=False is the raw composition; both survive a save, and a file
    stored before the parameter loads uncentred. A callback's transform uses that epoch's means."""
    en, de = _toy(40)
    kw = dict(n_components=8, n_epochs=2, random_state=0, n_threads=1, show_progress=False)
    seen = []

    def cb(model, epoch, loss):
        seen.append(np.abs(model.transform(en, "en").mean(axis=0)).max())

    c = RankingEmbedding(**kw, callback=cb).fit({"en": en, "de": de})
    raw = RankingEmbedding(**kw, center=False).fit({"en": en, "de": de})
    assert raw.means_ is None and set(c.means_) == {"en", "de"}
    np.testing.assert_array_equal(raw.vectors_["en"], c.vectors_["en"])     # training is the same
    for lang, texts in (("en", en), ("de", de)):
        Z, R = c.transform(texts, lang), raw.transform(texts, lang)
        np.testing.assert_allclose(R.mean(axis=0), c.means_[lang], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(Z, R - c.means_[lang], rtol=1e-6, atol=1e-6)
        assert np.abs(Z.mean(axis=0)).max() < 1e-5
    assert len(seen) == 2 and max(seen) < 1e-5
    np.testing.assert_array_equal(c.transform(["zzz", en[0]], "en")[0], 0.0)
    for m in (c, raw):
        m.save(tmp_path / "m.h5")
        back = linxling.load(tmp_path / "m.h5")
        assert back.get_params()["center"] == m.center
        np.testing.assert_array_equal(back.transform(de, "de"), m.transform(de, "de"))
    params, arrays = c._get_state()
    del params["center"], arrays["means"]
    old = RankingEmbedding._from_state(params, arrays)
    assert old.get_params()["center"] is False and old.means_ is None
    np.testing.assert_array_equal(old.transform(en, "en"), raw.transform(en, "en"))
    params, arrays = c._get_state()
    del arrays["means"]
    with pytest.raises(ValueError, match="means"):
        RankingEmbedding._from_state(params, arrays)
    assert RankingEmbedding.from_paper().center is False
    # BiCVM shares the code and the default
    b = BiCVM(**FAST).fit({"en": en, "de": de})
    assert BiCVM.from_paper().center is False and set(b.means_) == {"en", "de"}
    assert np.abs(b.transform(de, "de").mean(axis=0)).max() < 1e-4 * max(1.0, float(np.abs(b.means_["de"]).max()))
    assert BiCVM(**FAST, center=False).fit({"en": en, "de": de}).means_ is None


def test_fewer_aligned_sentences_than_dimensions_warns():
    """5 sentence pairs for 128 (BiCVM) or 50 (RankingEmbedding) dimensions fitted in silence
    before (a new-user audit); the warning names the counts and the remedy."""
    en, de = _toy(5)
    for cls in (BiCVM, RankingEmbedding):
        with pytest.warns(UserWarning, match=r"only 5 aligned sentences for n_components=\d+.*lower n_components"):
            cls(n_epochs=1, random_state=0, n_threads=1, show_progress=False).fit({"en": en, "de": de})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BiCVM(n_components=4, n_epochs=1, random_state=0, n_threads=1, show_progress=False).fit({"en": en, "de": de})


def test_aligned_sentences_that_are_all_the_same_warn():
    """20 copies of one sentence pair fitted in silence: each sentence is its own noise sample,
    the contrastive loss has no gradient (RankingEmbedding's loss stayed 0.5) and every training
    sentence embedded as the zero vector. Now a warning that says so and what to give instead;
    two different pairs among the copies fit in silence."""
    import warnings
    same = {"en": ["w1 w2 w3"] * 20, "de": ["v1 v2 v3"] * 20}
    for cls in (BiCVM, RankingEmbedding):
        with pytest.warns(UserWarning, match=r"all 20 aligned sentences of X are one and the same text in each "
                                             r"language .*give different aligned sentences"):
            cls(n_components=4, n_epochs=1, random_state=0, n_threads=1, show_progress=False).fit(same)
    with pytest.warns(UserWarning, match=r"aligned sentences of X\[1\] are one and the same"):
        BiCVM(n_components=4, n_epochs=1, random_state=0, n_threads=1, show_progress=False).fit(
            [{"en": ["w1 w2", "w3"] * 10, "de": ["v1 v2", "v3"] * 10}, {"en": ["w1"] * 20, "fr": ["f1"] * 20}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BiCVM(n_components=4, n_epochs=1, random_state=0, n_threads=1, show_progress=False).fit(
            {"en": ["w1 w2 w3"] * 19 + ["w1 w2"], "de": ["v1 v2 v3"] * 19 + ["v1 v2"]})


def test_one_language_whose_aligned_sentences_are_all_the_same_warns():
    """One side of the pairs one text repeated (the other varied: a column filled with its first
    row) fitted in silence, held-out P@1 at chance (Bible, 2,000 en-de verses, en all one verse:
    BiCVM 0.004, RankingEmbedding 0.0, chance 0.002): every sentence of the other language is
    pulled to the one sentence, so that language's texts embed alike. Now a warning naming the
    language; one different sentence among the copies fits in silence."""
    import warnings
    en, de = _toy(40)
    for cls in (BiCVM, RankingEmbedding):
        with pytest.warns(UserWarning, match=r"^" + cls.__name__ + r": all 40 aligned sentences of X\['de'\] are one "
                                             r"and the same text \(the other language's differ\).*cannot tell 'de' "
                                             r"texts apart"):
            cls(n_components=4, n_epochs=1, random_state=0, n_threads=1, show_progress=False).fit(
                {"en": en, "de": [de[0]] * 40})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BiCVM(n_components=4, n_epochs=1, random_state=0, n_threads=1, show_progress=False).fit(
            {"en": en, "de": [de[0]] * 39 + [de[1]]})


def test_bicvm_noise_pool_and_attraction(tmp_path):
    en, de = _toy(60)
    kw = {**FAST, "noise_pool": 8, "attraction": 2.0}
    a = BiCVM(**kw).fit({"en": en, "de": de})
    b = BiCVM(**kw).fit({"en": en, "de": de})
    np.testing.assert_array_equal(a.vectors_["de"], b.vectors_["de"])
    assert _p_at_1(a.transform(en, "en"), a.transform(de, "de")) > 0.5
    # the options change the training (not silently ignored)
    plain = BiCVM(**FAST).fit({"en": en, "de": de})
    assert not np.array_equal(plain.vectors_["en"], a.vectors_["en"])
    a.save(tmp_path / "p.h5")
    loaded = BiCVM.load(tmp_path / "p.h5")
    assert loaded.get_params()["noise_pool"] == 8 and loaded.get_params()["attraction"] == 2.0
    for bad, match in (({"noise_pool": 0}, "noise_pool"), ({"noise_pool": 2.5}, "noise_pool"),
                       ({"attraction": -1.0}, "attraction"), ({"attraction": "x"}, "attraction")):
        with pytest.raises(ValueError, match=match):
            BiCVM(**{**FAST, **bad}).fit({"en": en, "de": de})


def test_bicvm_from_paper_and_margin_rule():
    """from_paper() gives the paper's settings (any of them overridable); margin=None is d / 2."""
    p = BiCVM.from_paper().get_params()
    assert (p["n_components"], p["noise"], p["margin"], p["learning_rate"], p["n_epochs"]) == (40, 50, 50.0, 0.1, 50)
    assert p["noise_pool"] is None and p["attraction"] == 0.0 and p["alpha"] == 2e-6
    q = BiCVM.from_paper(n_components=64, n_epochs=2).get_params()
    assert q["n_components"] == 64 and q["n_epochs"] == 2 and q["margin"] == 50.0
    assert BiCVM()._margin() == 64.0 and BiCVM(n_components=40)._margin() == 20.0
    assert BiCVM(margin=3.0)._margin() == 3.0
    en, de = _toy(40)
    m = BiCVM.from_paper(n_components=16, n_epochs=3, noise=3, random_state=0,
                         show_progress=False).fit({"en": en, "de": de})
    assert m.loss_curve_[-1] < m.loss_curve_[0]


@pytest.mark.parametrize("cls, params, pairs", [
    (BiCVM, {}, 1), (BiCVM, {}, 2),                         # BiCVM and BiCVM+ (two pairs)
    (RankingEmbedding, {"score": "dot"}, 1),
])
def test_a_diverging_fit_raises_not_nan_vectors(cls, params, pairs):
    """A learning rate far too large gave loss_curve_ [.., inf, nan, ...] and NaN vectors in
    silence; as BilBOWA, BilDRL and CompressTree, the fit now stops with a FloatingPointError
    naming the model and the epoch, and the model stays unfitted (fits are atomic). Vectors
    that overflow only the sentence scores (finite words of 1e28, their dot products inf) make
    the hinges NaN, and the loss with them (2026-11-29, numba 0.68.1 / llvmlite 0.50 on an AMD
    Zen 5 host with AVX-512: the dot-score model's words stayed finite, and NaN hinges had counted
    as met, loss 0)."""
    en, de = _toy()
    X = {"en": en, "de": de}
    if pairs == 2:
        X = [X, {"en": en, "fr": [t.replace("d", "f") for t in de]}]
    seen = []
    m = cls(n_components=8, n_epochs=5, learning_rate=1e30, random_state=0, n_threads=1, show_progress=False,
            callback=lambda model, epoch, loss: seen.append(loss), **params)
    with pytest.raises(FloatingPointError, match=rf"^{cls.__name__} diverged in epoch [1-5] of 5 \((loss nan|.*non-"
                                                 r"finite word vectors in .*)\): lower learning_rate \(now 1e\+30\)"):
        m.fit(X)
    assert all(np.isfinite(seen))                 # the callback never saw a non-finite epoch
    assert not hasattr(m, "vectors_") and not hasattr(m, "loss_curve_")
    # a sane rate on the same data trains as before
    ok = cls(n_components=8, n_epochs=2, random_state=0, n_threads=1, show_progress=False, **params).fit(X)
    assert np.all(np.isfinite(ok.loss_curve_)) and all(np.isfinite(W).all() for W in ok.vectors_.values())


def test_callback_reads_the_fitted_attributes_of_the_first_fit():
    """A callback that embeds every language (``model.languages_``) works from the first
    epoch of the first fit, and sees the languages of this fit on a refit, not the last one's."""
    en, de = _toy(30)
    seen = []

    def cb(model, epoch, loss):
        seen.append({lang: model.transform(en[:3] if lang == "en" else de[:3], lang)
                     for lang in model.languages_})

    m = BiCVM(**{**FAST, "n_epochs": 2}, callback=cb).fit({"en": en, "de": de})
    assert [sorted(s) for s in seen] == [["de", "en"]] * 2
    np.testing.assert_array_equal(seen[-1]["de"], m.transform(de[:3], "de"))
    seen.clear()
    m.fit([{"en": en, "de": de}, {"en": en, "fr": [t.replace("d", "f") for t in de]}])
    assert sorted(seen[0]) == ["de", "en", "fr"]


@pytest.mark.parametrize("cls", [BiCVM, RankingEmbedding])
def test_training_sentences_left_without_a_word_are_all_named(cls):
    """A pair whose sentence keeps no word after min_df is refused; with several, one error
    named only the first, so a user removing pairs needed one fit per pair: now it names them
    all (count, how many are empty, their indices)."""
    en, de = _toy(40, seed=3)
    kw = dict(n_components=4, n_epochs=1, show_progress=False)
    one = list(de)
    one[7] = "rare1"
    with pytest.raises(ValueError, match=r"X\['de'\]\[7\] has no word in the vocabulary: every training "
                                         r"sentence needs at least one word \(remove the pair or lower min_df\)"):
        cls(min_df=2, **kw).fit({"en": en, "de": one})
    one[7] = "  "
    with pytest.raises(ValueError, match=r"X\['de'\]\[7\] is empty \(no tokens\)"):
        cls(min_df=2, **kw).fit({"en": en, "de": one})
    many = list(de)
    for i, t in ((3, "rare1"), (11, ""), (30, "rare2 rare3")):
        many[i] = t
    with pytest.raises(ValueError, match=r"X\['de'\]: 3 training sentences have no word in the vocabulary \(1 of "
                                         r"them empty, no tokens\), at indices 3, 11, 30: every training sentence "
                                         r"needs at least one word \(remove those pairs or lower min_df\)"):
        cls(min_df=2, **kw).fit({"en": en, "de": many})
    keep = [i for i in range(40) if i not in (3, 11, 30)]
    cls(min_df=2, **kw).fit({"en": [en[i] for i in keep], "de": [many[i] for i in keep]})
