"""BilDRL: ridge encoder vs dense oracle, training lowers the loss, multitask / per-direction
units, transform / predict, bad input, save/load, and the reverse-dictionary metric."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import linxling
from linxling.evaluate import reverse_dictionary
from linxling.models._estimator import NotFittedError
from linxling.models.bildrl import BilDRL, ridge_fit


class FakeSpace:
    """A fitted 'model' with word_vectors: random vectors for two small vocabularies."""

    def __init__(self, d=8, seed=0):
        rng = np.random.default_rng(seed)
        self.words = {"en": [f"e{i}" for i in range(40)], "fr": [f"f{i}" for i in range(40)]}
        base = rng.standard_normal((40, d))
        # translations share a direction: e_i ~ f_i
        self.vecs = {"en": base + 0.05 * rng.standard_normal((40, d)),
                     "fr": base + 0.05 * rng.standard_normal((40, d))}

    def word_vectors(self, language):
        return list(self.words[language]), self.vecs[language].copy()


def _dictionary(seed=0, n=160):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        i = int(rng.integers(40))
        if rng.random() < 0.5:   # French definition of an English word: mentions f_i
            words = [f"f{i}"] + [f"f{int(j)}" for j in rng.integers(40, size=2)]
            rows.append((f"e{i}", "en", " ".join(words), "fr"))
        else:
            words = [f"e{i}"] + [f"e{int(j)}" for j in rng.integers(40, size=2)]
            rows.append((f"f{i}", "fr", " ".join(words), "en"))
    return rows


def test_ridge_fit_matches_dense_oracle():
    rng = np.random.default_rng(0)
    X = sp.random(60, 25, density=0.2, format="csr", random_state=1)
    Y = rng.standard_normal((60, 4))
    alpha = 0.3
    W, b, res = ridge_fit(X, Y, alpha, rtol=1e-12)
    Xd = X.toarray()
    Xc = Xd - Xd.mean(0)
    Yc = Y - Y.mean(0)
    W0 = np.linalg.solve(Xc.T @ Xc + alpha * np.eye(25), Xc.T @ Yc)
    b0 = Y.mean(0) - Xd.mean(0) @ W0
    # CG stops at ||r|| <= 1e-12 ||rhs||; cond(A) <= (||X_c||^2 + alpha) / alpha bounds the error
    cond = (np.linalg.norm(Xc, 2) ** 2 + alpha) / alpha
    tol = 1e-12 * cond * 10
    np.testing.assert_allclose(W, W0, rtol=0, atol=tol * np.abs(W0).max())
    np.testing.assert_allclose(b, b0, rtol=0, atol=tol * (np.abs(b0).max() + np.abs(W0).max()))
    assert np.all(res.converged)


@pytest.mark.parametrize("encoder", ["bow", "cnn", "gru", "att", "ridge"])
def test_fit_learns_the_dictionary(encoder):
    space = FakeSpace()
    rows = _dictionary()
    m = BilDRL(encoder=encoder, hidden_size=16, n_layers=1, n_epochs=40, batch_size=32,
               learning_rate=0.01, alpha=0.1, min_df=1, random_state=0, show_progress=False)
    m.fit(rows, space)
    if encoder != "ridge":
        assert m.loss_curve_[-1] < 0.75 * m.loss_curve_[0]
    test_defs = [f"f{i}" for i in range(40)]
    res = reverse_dictionary(m.transform(test_defs, language="fr"), [f"e{i}" for i in range(40)],
                             *m.word_vectors("en"))
    # a one-word definition naming the translation: P@10 must beat chance (10/40) clearly
    assert res["p@10"] > 0.4, res


@pytest.mark.parametrize("encoder", ["bow", "ridge"])
def test_fewer_dictionary_rows_than_dimensions_warn(encoder):
    """20 dictionary rows for a 100-dimensional word space (Wikt3l en-fr in a Cr5 Bible space)
    fitted in silence, held-out reverse-dictionary MRR at chance (ridge 0.0005, bow 0.0008;
    chance about 0.001; 6,538 rows: P@10 0.01). The other models warn of fewer examples than
    dimensions; BilDRL now does too, and not with enough rows."""
    import warnings
    space = FakeSpace(d=8)
    kw = dict(encoder=encoder, hidden_size=16, n_epochs=1, min_df=1, random_state=0, show_progress=False)
    with pytest.warns(UserWarning, match=r"^BilDRL.fit: only 5 dictionary rows trained the encoder for a word "
                                         r"space of n_components=8: too few examples"):
        BilDRL(**kw).fit(_dictionary(n=5), space)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BilDRL(**kw).fit(_dictionary(n=40), space)


def test_multitask_false_has_one_encoder_per_direction():
    m = BilDRL(encoder="bow", multitask=False, n_epochs=2, random_state=0, show_progress=False)
    m.fit(_dictionary(), FakeSpace())
    assert sorted(m.units_) == ["en-fr", "fr-en"]
    assert m.transform(["f1 f2"], language="fr").shape == (1, 8)
    m2 = BilDRL(encoder="bow", multitask=True, n_epochs=2, random_state=0, show_progress=False)
    m2.fit(_dictionary(), FakeSpace())
    assert list(m2.units_) == ["shared"]
    # definitions in a language no encoder reads: said so, not "pass target_language (one of [])"
    one_way = BilDRL(encoder="bow", multitask=False, n_epochs=1, random_state=0, show_progress=False)
    one_way.fit([r for r in _dictionary() if r[3] == "fr"], FakeSpace())
    with pytest.raises(ValueError, match=r"no encoder was trained for definitions in 'en' \(trained: \['fr-en'\]"):
        one_way.transform(["e1 e2"], language="en")


def test_random_state_reproducible():
    kw = dict(encoder="gru", hidden_size=8, n_epochs=2, random_state=3, show_progress=False)
    a = BilDRL(**kw).fit(_dictionary(), FakeSpace())
    b = BilDRL(**kw).fit(_dictionary(), FakeSpace())
    np.testing.assert_array_equal(a.transform(["e1 e2"], language="en"), b.transform(["e1 e2"], language="en"))


def test_bad_input():
    space = FakeSpace()
    with pytest.raises(NotFittedError):
        BilDRL().transform(["x"], language="en")
    with pytest.raises(ValueError, match="encoder"):
        BilDRL(encoder="lstm").fit(_dictionary(), space)
    with pytest.raises(ValueError, match="definition is empty"):
        BilDRL(encoder="bow").fit([("e1", "en", "  ", "fr")], space)
    with pytest.raises(ValueError, match="4-tuple"):
        BilDRL(encoder="bow").fit([("e1", "en", "f1")], space)
    with pytest.raises(TypeError, match="word_vectors"):
        BilDRL(encoder="bow").fit(_dictionary(), object())
    with pytest.raises(ValueError, match="max_length"):
        BilDRL(encoder="cnn", n_layers=8).fit(_dictionary(), space)
    rows = _dictionary() + [("notaword", "en", "f1 f2", "fr"), ("e3", "en", "zzz qqq", "fr")]
    with pytest.warns(UserWarning, match="left out 1 .* and 1 "):
        m = BilDRL(encoder="bow", n_epochs=1, random_state=0, show_progress=False).fit(rows, space)
    assert m.n_excluded_ == {"target_oov": 1, "no_known_word": 1}
    Z = m.transform(["zzz qqq", "f1"], language="fr")      # unknown words only -> zero vector
    assert np.all(Z[0] == 0) and np.any(Z[1] != 0)
    with pytest.raises(ValueError, match=r"X\[0\] is empty"):
        m.transform([""], language="fr")
    with pytest.raises(ValueError, match="language"):
        m.transform(["f1"], language="de")
    with pytest.raises(ValueError, match="candidates have no"):
        m.predict(["f1"], "fr", "en", candidates=["e1", "nope"])


def test_predict_and_candidates():
    m = BilDRL(encoder="ridge", alpha=0.1, min_df=1, random_state=0).fit(_dictionary(), FakeSpace())
    top = m.predict(["f5", "f7"], "fr", "en", k=3)
    assert len(top) == 2 and all(len(t) == 3 for t in top)
    restricted = m.predict(["f5"], "fr", "en", k=10, candidates=["e1", "e2", "e5"])
    assert sorted(restricted[0]) == ["e1", "e2", "e5"]


@pytest.mark.parametrize("candidates, exc, match", [
    ("e1", TypeError, r"^candidates must be a sequence of words, not a single string"),
    (["e1", "e2", "e1"], ValueError, r"^candidates\[2\] = 'e1' repeats candidates\[0\]"),
    (["e1", 5], TypeError, r"^candidates\[1\] is a int, not a str"),
    (["e1", ["e2"]], TypeError, r"^candidates\[1\] is a list, not a str"),
])
def test_bad_candidates_are_named(candidates, exc, match):
    """A single string was read as its characters ("2 candidates have no 'en' vector, e.g. ['e',
    '1']"), a repeated word was ranked and returned twice, an unhashable one failed in a dict."""
    m = BilDRL(encoder="ridge", alpha=0.1, min_df=1, random_state=0).fit(_dictionary(), FakeSpace())
    with pytest.raises(exc, match=match):
        m.predict(["f5"], "fr", "en", k=3, candidates=candidates)
    with pytest.raises(exc, match=match):
        m.candidate_space("en", candidates)


def test_predict_refuses_a_bool_for_k():
    """predict(..., k=True) returned the top 1 (a bool is an int): a flag given for the count."""
    m = BilDRL(encoder="ridge", alpha=0.1, min_df=1, random_state=0).fit(_dictionary(), FakeSpace())
    with pytest.raises(ValueError, match=r"^k must be a positive int, got True"):
        m.predict(["f5"], "fr", "en", k=True)


@pytest.mark.parametrize("encoder", ["att", "ridge"])
def test_save_load_round_trip(tmp_path, encoder):
    m = BilDRL(encoder=encoder, hidden_size=8, n_epochs=2, min_df=1, random_state=0,
               show_progress=False).fit(_dictionary(), FakeSpace())
    path = tmp_path / "m.h5"
    m.save(path)
    for loaded in (BilDRL.load(path), linxling.load(path)):
        assert isinstance(loaded, BilDRL)
        defs = ["f1 f3 f9", "e2"]
        np.testing.assert_array_equal(loaded.transform(defs[:1], language="fr"),
                                      m.transform(defs[:1], language="fr"))
        np.testing.assert_array_equal(loaded.transform(defs[1:], language="en"),
                                      m.transform(defs[1:], language="en"))
        assert loaded.get_params() == m.get_params()


def test_reverse_dictionary_metrics():
    C = np.eye(4)
    Q = np.array([[1.0, 0.1, 0, 0], [0.2, 1.0, 0.9, 0], [0, 0, 0, 0]])
    r = reverse_dictionary(Q, ["a", "c", "b"], ["a", "b", "c", "d"], C, ks=(1, 2))
    # ranks: a first; c second (b scores higher); zero query ties everything -> worst rank 4
    np.testing.assert_array_equal(r["ranks"], [1, 2, 4])
    assert r["p@1"] == pytest.approx(1 / 3) and r["p@2"] == pytest.approx(2 / 3)
    assert r["mrr"] == pytest.approx((1 + 0.5 + 0.25) / 3)
    r2 = reverse_dictionary(Q[:1], ["zzz"], ["a", "b", "c", "d"], C)
    assert r2["n_gold_missing"] == 1 and r2["p@1"] == 0 and r2["mrr"] == 0
    re = reverse_dictionary(Q[:2], ["a", "c"], ["a", "b", "c", "d"], C, metric="euclidean")
    np.testing.assert_array_equal(re["ranks"], [1, 2])
    with pytest.raises(ValueError, match="duplicates"):
        reverse_dictionary(Q, ["a", "b", "c"], ["a", "a", "c", "d"], C)
    with pytest.raises(ValueError, match="gold"):
        reverse_dictionary(Q, ["a"], ["a", "b", "c", "d"], C)


def _wikt3l_slice(n_pairs=1500, n_heldout=150, seed=0):
    """A small real slice of Wikt3l: the rows of ``n_pairs`` training translation pairs (e, f)
    defined in both directions; per direction ``n_heldout`` targets held out with all their rows
    (one definition each is the query), as the test split was made."""
    from linxling.datasets import Wikt3l, load_wikt3l, wikt3l_validation_split
    tr = {d: load_wikt3l(d, "train") for d in ("fr-en", "en-fr")}
    fe = {(t, h) for t, _, h in tr["fr-en"].rows}
    ef = {(h, t) for t, _, h in tr["en-fr"].rows}
    both = sorted(fe & ef)
    rng = np.random.default_rng(seed)
    pick = {both[i] for i in rng.choice(len(both), n_pairs, replace=False)}
    train, held = {}, {}
    for d, key in (("fr-en", lambda t, h: (t, h)), ("en-fr", lambda t, h: (h, t))):
        rows = [r for r in tr[d].rows if key(r[0], r[2]) in pick]
        q, t = d.split("-")
        cut = Wikt3l(d, q, t, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                     sorted({r[0] for r in rows}))
        train[d], held[d] = wikt3l_validation_split(cut, n_heldout, random_state=seed)
    return train, held


def _slice_space(train, n_components=64):
    """GlossSpace of the slice without the gloss packages: concepts = the training pairs (each
    side: the word + its training definitions), descriptions = the training definitions whose
    headword is the word (a held-out target is described only by the other direction's rows)."""
    from linxling.models.gloss_space import GlossSpace
    pairs, desc = {}, {"en": {}, "fr": {}}
    for split in train.values():
        q = split.definition_language
        for t, x, h in split.rows:
            key = (h, t) if q == "en" else (t, h)
            pairs.setdefault(key, {"en": [], "fr": []})[q].append(x)
            desc[q].setdefault(h, []).append(x)
    texts, langs, concepts = [], [], []
    for (e, f), docs in pairs.items():
        if docs["en"] and docs["fr"]:
            texts += [" ".join([e, *docs["en"]]), " ".join([f, *docs["fr"]])]
            langs += ["en", "fr"]
            concepts += [f"{e}|{f}"] * 2
    vocab = {s.target_language: s.candidates for s in train.values()}
    return GlossSpace(n_components=n_components, random_state=0).fit(texts, langs, concepts, desc, vocab)


@pytest.mark.data
@pytest.mark.slow
def test_default_bildrl_learns_held_out_wikt3l_targets(shared_data):
    """Default BilDRL (multi-task ATT; 2 epochs instead of the default's, to keep the test short)
    on a real Wikt3l slice retrieves held-out targets (none of their definitions seen in
    training) far above chance, in both directions."""
    train, held = _wikt3l_slice()
    space = _slice_space(train)
    rows = [r for s in train.values() for r in s.dictionary()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m = BilDRL(n_epochs=2, random_state=0, show_progress=False).fit(rows, space)
    for d, h in held.items():
        q, t = h.definition_language, h.target_language
        vocab = set(m.word_vectors(t)[0])
        words, vecs = m.candidate_space(t, [c for c in h.candidates if c in vocab])
        r = reverse_dictionary(m.transform(h.definitions, language=q), h.targets, words, vecs)
        chance = 10 / len(words)
        assert r["p@10"] >= 0.06 and r["p@10"] > 10 * chance, (d, r["p@10"], r["p@1"], len(words))


def test_from_paper_settings():
    m = BilDRL.from_paper()
    assert (m.encoder, m.multitask, m.n_layers, m.hidden_size, m.learning_rate, m.batch_size, m.max_length,
            m.n_epochs, m.normalize, m.skipgram_weight, m.alignment_weight) == (
        "att", True, 5, 200, 5e-4, 64, 15, 1000, False, 0.1, 0.1)
    small = BilDRL.from_paper(n_epochs=1, hidden_size=8, n_layers=2, random_state=0, show_progress=False)
    small.fit(_dictionary(), FakeSpace())
    assert len(small.loss_curve_) == 1 and small.n_layers == 2


def test_targets_in_another_unicode_form_or_case_find_their_vectors():
    """Issue #29: a target written in NFD, or capitalised, is the space's word (the tokenizer's
    NFC, case-folded form), not a row left out as out of vocabulary."""
    import unicodedata

    class Accents(FakeSpace):
        def __init__(self):
            super().__init__()
            self.words["fr"] = [f"é{i}" for i in range(40)]

    rows = [(t.replace("f", "é") if tl == "fr" else t, tl, d.replace("f", "é"), dl)
            for t, tl, d, dl in _dictionary()]
    ref = BilDRL(encoder="ridge", random_state=0).fit(rows, Accents())
    odd = [(unicodedata.normalize("NFD", t).upper() if tl == "fr" else t, tl, d, dl) for t, tl, d, dl in rows]
    assert any(t != unicodedata.normalize("NFC", t) for t, *_ in odd)
    with warnings.catch_warnings():
        warnings.simplefilter("error")               # no row left out
        got = BilDRL(encoder="ridge", random_state=0).fit(odd, Accents())
    assert got.n_excluded_ == ref.n_excluded_ == {"target_oov": 0, "no_known_word": 0}
    Z = got.transform(["é3 é5"], language="fr", target_language="en")
    np.testing.assert_allclose(Z, ref.transform(["é3 é5"], language="fr", target_language="en"))


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"block_size": -1}, ValueError, "block_size"),    # was: every rank inf, P@k = MRR = 0, silently
    ({"block_size": 0}, ValueError, "block_size"),     # was: "range() arg 3 must not be zero"
    ({"ks": (1.7,)}, TypeError, "ks"),                 # was: truncated to P@1 without a word
    ({"queries": np.zeros((0, 4)), "gold": []}, ValueError, "queries is empty"),   # was: NaN metrics
    ({"candidate_words": [], "candidate_vectors": np.zeros((0, 4))}, ValueError, "candidate_vectors is empty"),
    ({"queries": np.zeros((3, 0)), "candidate_vectors": np.zeros((4, 0))}, ValueError, "queries is empty"),
    ({"candidate_vectors": np.full((4, 4), np.nan)}, ValueError, "candidate_vectors contains"),
    # a single string was read as its characters: gold "abc" scored the words a, b, c
    ({"gold": "abc"}, TypeError, "gold must be a sequence of words"),
    ({"candidate_words": "abcd"}, TypeError, "candidate_words must be a sequence of words"),
    # a word that is not a str matched no candidate: counted as missing, every metric lowered in silence
    ({"gold": ["a", 2, "c"]}, TypeError, r"^gold\[1\] is a int \(2\), not a str"),
    ({"candidate_words": ["a", "b", b"c", "d"]}, TypeError, r"^candidate_words\[2\] is a bytes"),
])
def test_reverse_dictionary_bad_input_is_refused_naming_the_argument(kwargs, exc, match):
    args = {"queries": np.eye(4)[:3], "gold": ["a", "b", "c"], "candidate_words": ["a", "b", "c", "d"],
            "candidate_vectors": np.eye(4)} | kwargs
    with pytest.raises(exc, match=match):
        reverse_dictionary(args.pop("queries"), args.pop("gold"), args.pop("candidate_words"),
                           args.pop("candidate_vectors"), **args)


@pytest.mark.parametrize("multitask", [True, False])
def test_callback_sees_the_encoder_as_trained_so_far(multitask):
    """The callback's model transforms with the encoder of the epoch just trained (as BiCVM's
    and CompressTree's), not a KeyError for a unit not yet stored, nor the previous fit's."""
    seen = []

    def cb(model, it, loss):
        seen.append(model.transform(["f1 f2", "f3"], language="fr", target_language="en"))

    kw = dict(encoder="bow", multitask=multitask, n_epochs=2, random_state=0, show_progress=False)
    m = BilDRL(**kw, callback=cb).fit([r for r in _dictionary() if r[3] == "fr"], FakeSpace())
    assert len(seen) == 2 and not np.array_equal(seen[0], seen[1])
    np.testing.assert_array_equal(seen[-1], m.transform(["f1 f2", "f3"], language="fr", target_language="en"))
    plain = BilDRL(**kw).fit([r for r in _dictionary() if r[3] == "fr"], FakeSpace())
    np.testing.assert_array_equal(plain.transform(["f1 f2"], language="fr"), m.transform(["f1 f2"], language="fr"))


@pytest.mark.parametrize("encoder", ["bow", "ridge"])
def test_a_space_with_non_finite_vectors_is_refused_naming_it(encoder):
    """A NaN in the word space: the neural encoders trained to a NaN loss and NaN definition
    vectors in silence, and the ridge encoder failed with block CG's 'B contains NaN or infinite
    values'; now every encoder refuses the space, naming the language, row and word."""
    bad = FakeSpace()
    bad.vecs["fr"][3, 0] = np.nan
    with pytest.raises(ValueError, match=r"embeddings.word_vectors\('fr'\) has non-finite .* row 3 \('f3'\)"):
        BilDRL(encoder=encoder, n_epochs=1, min_df=1, show_progress=False).fit(_dictionary(), bad)


def test_a_non_finite_loss_is_an_error_and_the_model_is_left_as_it_was(monkeypatch):
    from linxling.kernels import encoders as K
    m = BilDRL(encoder="bow", hidden_size=8, n_epochs=1, random_state=0, show_progress=False)
    m.fit(_dictionary(), FakeSpace())
    before = m.transform(["f1 f2"], language="fr")
    forward = K.forward
    monkeypatch.setattr(K, "forward", lambda *a, **k: (np.full_like(forward(*a, **k)[0], np.nan),
                                                       forward(*a, **k)[1]))
    with pytest.raises(FloatingPointError, match=r"diverged in epoch 1 .*learning_rate"):
        m.fit(_dictionary(), FakeSpace())
    monkeypatch.undo()
    np.testing.assert_array_equal(m.transform(["f1 f2"], language="fr"), before)


@pytest.mark.parametrize("encoder", ["bow", "ridge"])
def test_transform_of_no_texts_has_the_requested_dtype(encoder):
    m = BilDRL(encoder=encoder, hidden_size=8, n_epochs=1, min_df=1, random_state=0, show_progress=False)
    m.fit(_dictionary(), FakeSpace())
    Z = m.transform([], language="fr", dtype=np.float32)
    assert Z.shape == (0, 8) and Z.dtype == np.float32 and Z.flags.c_contiguous


@pytest.mark.parametrize("encoder", ["bow", "att"])
def test_no_definition_with_a_known_word_is_said(encoder):
    """Rows whose targets have vectors but whose definitions have no word of the space: the
    neural fit failed with NumPy's 'need at least one array to stack'."""
    rows = [("e1", "en", "zzz qqq", "fr"), ("e2", "en", "yyy", "fr")]
    with pytest.raises(ValueError, match="no dictionary row has a definition with a word with a vector"):
        BilDRL(encoder=encoder, hidden_size=8, n_epochs=1, show_progress=False).fit(rows, FakeSpace())


def test_a_direction_without_a_known_definition_word_gets_no_encoder():
    """multitask=False: one direction whose definitions have no word of the space failed the
    whole fit ('need at least one array to stack'); the other directions are trained, and the
    untrained one is said (and refused by transform)."""
    class WithGerman(FakeSpace):
        def word_vectors(self, language):
            return (["zzz"], np.ones((1, 8))) if language == "de" else super().word_vectors(language)
    rows = _dictionary() + [("e1", "en", "qqq", "de")]
    with pytest.warns(UserWarning) as record:
        m = BilDRL(encoder="bow", multitask=False, hidden_size=8, n_epochs=1, random_state=0,
                   show_progress=False).fit(rows, WithGerman())
    said = [str(w.message) for w in record]
    assert any("trained no encoder for ['de-en']" in x for x in said)
    assert any("left out 0 of 161 rows" in x and "1 whose definition has no known word" in x for x in said)
    assert sorted(m.units_) == ["en-fr", "fr-en"] and m.n_excluded_["no_known_word"] == 1
    with pytest.raises(ValueError, match="no encoder was trained for definitions in 'de'"):
        m.transform(["zzz"], language="de")


def test_ridge_vocabulary_errors_name_the_definition_language():
    rows = _dictionary() + [("e1", "en", "zzz qqq", "de"), ("e2", "en", "yyy", "de")]
    class WithGerman(FakeSpace):
        def word_vectors(self, language):
            return (["zzz"], np.ones((1, 8))) if language == "de" else super().word_vectors(language)
    with pytest.raises(ValueError, match=r"tf-idf vocabulary of the 2 'de' definitions: .*min_df=2"):
        BilDRL(encoder="ridge", multitask=False, min_df=2).fit(rows, WithGerman())


def test_a_dictionary_as_a_dataframe_or_2d_array_is_its_rows():
    """A DataFrame (pandas.read_csv of the TSV) iterates over its column names: BilDRL said
    "dictionary[0] must be a 4-tuple ..., got 0"; a 2-D str array gave its rows as arrays. Both
    are now read as their rows (the same model as the list of tuples); a DataFrame of other than
    four columns is refused naming its columns."""
    pd = pytest.importorskip("pandas")
    rows, space = _dictionary(n=40), FakeSpace()
    kw = dict(encoder="ridge", random_state=0, show_progress=False)
    ref = BilDRL(**kw).fit(rows, space).transform(["f1 f2"], language="fr")
    for given in (pd.DataFrame(rows, columns=["target", "tl", "definition", "dl"]), np.array(rows)):
        np.testing.assert_array_equal(BilDRL(**kw).fit(given, space).transform(["f1 f2"], language="fr"), ref)
    with pytest.raises(ValueError, match=r"dictionary is a DataFrame of 3 columns \['a', 'b', 'c'\]; it needs 4"):
        BilDRL(**kw).fit(pd.DataFrame([r[:3] for r in rows], columns=list("abc")), space)


def _gloss_space():
    """A small GlossSpace: word i of 'en' and 'fr' share concepts, so e_i ~ f_i."""
    from linxling.models.gloss_space import GlossSpace
    rng = np.random.default_rng(3)
    en, fr = [], []
    for _ in range(80):
        ids = rng.choice(40, size=4, replace=False)
        en.append(" ".join(f"e{i}" for i in ids))
        fr.append(" ".join(f"f{i}" for i in ids))
    desc = {"en": {f"e{i}": [f"e{i} e{(i + 1) % 40}"] for i in range(40)},
            "fr": {f"f{i}": [f"f{i} f{(i + 1) % 40}"] for i in range(40)}}
    return GlossSpace(n_components=6, random_state=0).fit(en + fr, ["en"] * 80 + ["fr"] * 80,
                                                          list(range(80)) * 2, desc)


def test_direct_weight_averages_the_encoder_with_the_definitions_own_embedding(tmp_path):
    """direct_weight (default "auto": 2 with a GlossSpace): transform is the encoder's vector
    averaged with the definition's own embedding in the space, scaled to the encoder vector's
    length, weighted 1 : w; 0 is the encoder alone. Saved and loaded with the model."""
    space = _gloss_space()
    rows = _dictionary(seed=4)
    kw = dict(encoder="ridge", alpha=0.5, min_df=1)
    auto = BilDRL(**kw).fit(rows, space)
    alone = BilDRL(direct_weight=0, **kw).fit(rows, space)
    assert auto.direct_weight_ == 2.0 and auto.document_model_ is space.document_model_
    assert alone.direct_weight_ == 0.0 and alone.document_model_ is None
    defs = ["f3 f4 f9", "e7 e8", "f11"]
    for lang, batch in (("fr", [defs[0], defs[2]]), ("en", [defs[1]])):
        E = alone.transform(batch, language=lang, dtype=np.float64)
        D = space.transform(batch, lang)
        want = (E + 2.0 * np.linalg.norm(E, axis=1, keepdims=True) * D) / 3.0
        np.testing.assert_allclose(auto.transform(batch, language=lang, dtype=np.float64), want, rtol=1e-12)
    # where the encoder knows no word the direct query alone speaks (at the space's mean length)
    from collections import Counter
    df = Counter(w for _, _, d, dl in rows if dl == "fr" for w in set(d.split()))
    rare = sorted(w for w in space.word_vectors("fr")[0] if df[w] < 8)
    assert rare                                      # words of the space the encoder drops
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # rows whose definition keeps no tf-idf word
        nd = BilDRL(direct_weight=1.0, encoder="ridge", alpha=0.5, min_df=8).fit(rows, space)
    unit = nd._unit_for("fr", None)
    assert nd._ridge_features(rare[:1], ["fr"], unit["vectorizers"]).nnz == 0
    got = nd.transform(rare[:1], language="fr", dtype=np.float64)
    np.testing.assert_allclose(got, nd.scale_ * space.transform(rare[:1], "fr") / 2.0, rtol=1e-12)
    auto.save(tmp_path / "b.h5")
    back = linxling.load(tmp_path / "b.h5")
    assert back.direct_weight == "auto" and back.direct_weight_ == 2.0
    np.testing.assert_allclose(back.transform(defs, language="fr"), auto.transform(defs, language="fr"), rtol=1e-12)
    assert back.predict(defs[:1], "fr", "en", k=3) == auto.predict(defs[:1], "fr", "en", k=3)
    alone.save(tmp_path / "a.h5")
    assert linxling.load(tmp_path / "a.h5").document_model_ is None


def test_direct_weight_needs_a_space_that_embeds_text():
    """A word space of vectors only (BilBOWA, a table) has no embedding of a definition: "auto"
    is 0 there, and a weight above 0 is refused naming the argument; joint learning, which
    trains the vectors away from the space's own embedding, is refused likewise."""
    m = BilDRL(encoder="ridge", min_df=1).fit(_dictionary(), FakeSpace())
    assert m.direct_weight_ == 0.0 and m.document_model_ is None
    with pytest.raises(ValueError, match=r"direct_weight=1.5 needs a word space that embeds a definition itself "
                                         r"\(a linxling GlossSpace.*embeddings is a FakeSpace"):
        BilDRL(encoder="ridge", min_df=1, direct_weight=1.5).fit(_dictionary(), FakeSpace())
    with pytest.raises(ValueError, match="direct_weight"):
        BilDRL(direct_weight=-1).fit(_dictionary(), FakeSpace())
    with pytest.raises(ValueError, match=r"direct_weight=2 with joint=True"):
        BilDRL(direct_weight=2, joint=True)._resolve_direct(_gloss_space())
    joint = BilDRL(joint=True)
    joint._resolve_direct(_gloss_space())
    assert joint.direct_weight_ == 0.0
    assert BilDRL.from_paper().direct_weight == 0.0


def test_a_model_pickled_before_direct_weight_ranks_by_its_encoder_alone():
    from _pickles import unpickled_without
    space = _gloss_space()
    rows = _dictionary(seed=4)
    alone = BilDRL(encoder="ridge", min_df=1, direct_weight=0).fit(rows, space)
    old = unpickled_without(BilDRL(encoder="ridge", min_df=1).fit(rows, space),
                            "direct_weight", "direct_weight_", "document_model_")
    assert old.direct_weight == 0.0 and old.get_params()["direct_weight"] == 0.0
    np.testing.assert_array_equal(old.transform(["f3 f4"], language="fr"), alone.transform(["f3 f4"], language="fr"))


def test_bench_direct_weight_grid_scores_each_weight_and_restores_the_fitted_one():
    """``bench_bildrl --direct-weights``: one fitted encoder scored at several weights; the
    model keeps its own weight afterwards, and a model without the space's document model
    (weight 0) is refused by name."""
    from types import SimpleNamespace

    from benchmarks.bench_bildrl import direct_weight_grid, evaluate
    space = _gloss_space()
    rows = _dictionary(seed=4)
    m = BilDRL(encoder="ridge", alpha=0.5, min_df=1).fit(rows, space)
    held = {"fr-en": SimpleNamespace(definition_language="fr", target_language="en",
                                     definitions=["f1 f2", "f5 f6 f7", "f30"], targets=["e1", "e5", "e30"],
                                     candidates=[f"e{i}" for i in range(40)])}
    grid = direct_weight_grid(m, held, [0, 2, 5])
    assert list(grid) == ["0", "2", "5"] and m.direct_weight_ == 2.0
    assert grid["2"] == evaluate(m, held)
    alone = BilDRL(encoder="ridge", alpha=0.5, min_df=1, direct_weight=0).fit(rows, space)
    assert grid["0"] == evaluate(alone, held)
    with pytest.raises(ValueError, match="--direct-weights needs a model fitted on the gloss space"):
        direct_weight_grid(alone, held, [1])
