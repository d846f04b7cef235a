"""BilBOWA: gradient checks, kernel vs reference, reproducibility, store round trip, bad input."""
from __future__ import annotations

import numpy as np
import pytest

from linxling.kernels import skipgram as K
from linxling.kernels import skipgram_reference as R


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        fp = f()
        x[i] = old - eps
        fm = f()
        x[i] = old
        g[i] = (fp - fm) / (2 * eps)
    return g


def _rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(a) + np.linalg.norm(b), 1e-300)


def test_skipgram_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    w = rng.standard_normal(6)
    C = rng.standard_normal((7, 6))
    negs = [2, 5, 5, 1]
    _, gw, gC = R.skipgram_loss_grad(w, C, 3, negs)
    assert _rel(gw, _fd(lambda: R.skipgram_loss_grad(w, C, 3, negs)[0], w)) < 1e-6
    assert _rel(gC, _fd(lambda: R.skipgram_loss_grad(w, C, 3, negs)[0], C)) < 1e-6


def test_alignment_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    W = rng.standard_normal((9, 5))
    a, b = [0, 2, 2, 3], [6, 8]
    _, G = R.align_loss_grad(W, a, b, 0.7)
    assert _rel(G, _fd(lambda: R.align_loss_grad(W, a, b, 0.7)[0], W)) < 1e-6


def test_kernel_unit_update_is_a_gradient_step():
    """One (center, context) unit with distinct negatives: the kernel's update equals
    ``-lr * gradient`` of the finite-difference-checked loss."""
    rng = np.random.default_rng(2)
    V, d, lr = 50, 4, 0.05
    W = rng.standard_normal((V, d))
    C = rng.standard_normal((V, d))
    tokens = np.array([3, 7], dtype=np.int64)
    ptr = np.array([0, 2], dtype=np.int64)
    cdf = np.cumsum(np.full(V, 1.0 / V))
    cdf[-1] = 1.0
    states = np.array([12345], dtype=np.uint64)
    # find the negatives the kernel will draw: replay the stream
    sm = R.SplitMix64(12345)
    sm.uniform(), sm.uniform()          # subsampling draws (keep = 1)
    sm.uniform()                        # window of position 0
    import bisect
    negs = [min(bisect.bisect_right(list(cdf), sm.uniform()), V - 1) for _ in range(2)]
    negs = [n for n in negs if n != 7]
    if len(set(negs)) != len(negs):
        pytest.skip("repeated negative with this seed")
    W0, C0 = W.copy(), C.copy()
    _, gw, gC = R.skipgram_loss_grad(W0[3], C0, 7, negs)
    # window=1, sentence of 2: units (3 -> 7) then (7 -> 3); compare after the first only
    K.skipgram_block(W, C, tokens, ptr, np.array([[0, 1]]),
                     np.array([0], dtype=np.int64), cdf, np.array([0, V], dtype=np.int64),
                     np.ones(V), states, 1, 2, lr, 2)
    # the second unit changes W[7] and C rows via W[7]; the first unit's W[3] update is final
    np.testing.assert_allclose(W[3], W0[3] - lr * gw, rtol=1e-12, atol=1e-12)


def _toy(seed=0, n_sent=40, V=30, L=2, grow=0):
    rng = np.random.default_rng(seed)
    sizes = [V + 5 * lang for lang in range(L)]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    toks, ptr, ranges = [], [0], []
    for lang in range(L):
        first = len(ptr) - 1
        for _ in range(n_sent + grow * lang):
            n = rng.integers(2, 9)
            toks.extend(rng.integers(0, sizes[lang], n).tolist())
            ptr.append(len(toks))
        ranges.append([first, len(ptr) - 1])
    cdfs, keep = [], []
    for s in sizes:
        p = rng.random(s) + 0.1
        c = np.cumsum(p / p.sum())
        c[-1] = 1.0
        cdfs.append(c)
        keep.append(rng.random(s) * 0.5 + 0.6)
    return (np.asarray(toks, dtype=np.int64), np.asarray(ptr, dtype=np.int64), np.asarray(ranges, dtype=np.int64),
            offsets, np.concatenate(cdfs), np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            np.concatenate(keep), int(offsets[-1]))


def test_skipgram_kernel_matches_reference():
    toks, ptr, ranges, offsets, cdf, cdf_ptr, keep, n = _toy()
    rng = np.random.default_rng(3)
    W = rng.standard_normal((n, 6)) * 0.1
    C = rng.standard_normal((n, 6)) * 0.1
    s = np.array([11, 99], dtype=np.uint64)
    Wr, Cr, sr = W.copy(), C.copy(), s.copy()
    loss, cnt = K.skipgram_block(W, C, toks, ptr, ranges, offsets[:-1], cdf, cdf_ptr, keep, s, 3, 4, 0.05,
                                 int(np.diff(ptr).max()))
    loss_r, cnt_r = R.skipgram_block(Wr, Cr, toks, ptr, ranges, offsets[:-1], cdf, cdf_ptr, keep, sr, 3, 4, 0.05)
    np.testing.assert_array_equal(cnt, cnt_r)
    assert cnt.sum() > 100
    np.testing.assert_allclose(loss, loss_r, rtol=1e-10)
    np.testing.assert_allclose(W, Wr, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(C, Cr, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(s, sr)


def _balance_reference(work, n_threads):
    # plain longest-processing-time dealing: each language, most work first (ties: lower index),
    # to the thread with the least work so far (ties: lower thread)
    T = min(max(n_threads, 1), max(len(work), 1))
    loads, owned = [0.0] * T, [[] for _ in range(T)]
    for lang in sorted(range(len(work)), key=lambda i: (-work[i], i)):
        t = min(range(T), key=lambda u: (loads[u], u))
        owned[t].append(lang)
        loads[t] += work[lang]
    return [lang for t in owned for lang in t], np.cumsum([0] + [len(t) for t in owned])


@pytest.mark.parametrize("n_threads", [1, 2, 3, 7])
def test_balance_deals_languages_like_the_plain_rule(n_threads):
    rng = np.random.default_rng(n_threads)
    for L in (1, 2, 5, 6):
        for work in (rng.random(L) * 10, np.ones(L), np.array([3.0, 1.0, 3.0, 0.0, 2.0, 2.0])[:L]):
            order, ptr = K.balance(work, n_threads)
            order_r, ptr_r = _balance_reference(list(work), n_threads)
            np.testing.assert_array_equal(order, order_r)
            np.testing.assert_array_equal(ptr, ptr_r)
            assert sorted(order) == list(range(L))


def test_skipgram_kernel_same_for_any_thread_count_with_more_languages_than_threads():
    """Five languages of unequal work: dealt to 1, 2, 3 or 8 threads, bitwise the same vectors,
    losses and streams, and those of the serial NumPy reference (to rounding)."""
    toks, ptr, ranges, offsets, cdf, cdf_ptr, keep, n = _toy(seed=5, n_sent=10, L=5, grow=12)
    rng = np.random.default_rng(6)
    W0 = rng.standard_normal((n, 6)) * 0.1
    C0 = rng.standard_normal((n, 6)) * 0.1
    s0 = np.arange(1, 6, dtype=np.uint64) * np.uint64(7919)
    out = []
    for T in (1, 2, 3, 8):
        W, C, s = W0.copy(), C0.copy(), s0.copy()
        loss, cnt = K._skipgram_block(W, C, toks, ptr, ranges, offsets[:-1], cdf, cdf_ptr, keep, s, 3, 4,
                                      0.05, int(np.diff(ptr).max()), T)
        out.append((W, C, s, loss, cnt))
    for W, C, s, loss, cnt in out[1:]:
        for a, b in zip((W, C, s, loss, cnt), out[0], strict=True):
            np.testing.assert_array_equal(a, b)
    W, C, s = W0.copy(), C0.copy(), s0.copy()
    loss_r, cnt_r = R.skipgram_block(W, C, toks, ptr, ranges, offsets[:-1], cdf, cdf_ptr, keep, s, 3, 4, 0.05)
    np.testing.assert_array_equal(out[0][4], cnt_r)
    assert np.all(cnt_r > 50)
    np.testing.assert_allclose(out[0][3], loss_r, rtol=1e-10)
    np.testing.assert_allclose(out[0][0], W, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out[0][1], C, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(out[0][2], s)


def _take_reference(tok, ptr, rows):
    parts = [tok[ptr[r]:ptr[r + 1]] for r in rows]
    return (np.concatenate(parts) if parts else tok[:0],
            np.concatenate([[0], np.cumsum([len(p) for p in parts])]))


def test_take_gathers_the_rows_in_order():
    from linxling.models.bilbowa import _take
    tok = np.arange(100, 120, dtype=np.int64)
    ptr = np.array([0, 3, 3, 8, 9, 20], dtype=np.int64)          # row 1 is empty
    for rows in ([4, 0, 2], [1], [1, 1], [], [3, 3, 0, 1, 4, 2]):
        rows = np.asarray(rows, dtype=np.int64)
        t, p = _take(tok, ptr, rows)
        t_r, p_r = _take_reference(tok, ptr, rows)
        np.testing.assert_array_equal(t, t_r)
        np.testing.assert_array_equal(p, p_r)
        assert t.dtype == np.int64 and p.dtype == np.int64


def test_align_kernel_matches_reference():
    rng = np.random.default_rng(4)
    W = rng.standard_normal((20, 5))
    a_tok = rng.integers(0, 8, 30).astype(np.int64)
    b_tok = rng.integers(0, 12, 25).astype(np.int64)
    a_ptr = np.array([0, 5, 5, 12, 20, 30], dtype=np.int64)    # pair 1 has an empty side
    b_ptr = np.array([0, 4, 9, 9, 18, 25], dtype=np.int64)
    Wr = W.copy()
    lk = K.align_block(W, a_tok, a_ptr, 0, b_tok, b_ptr, 8, 0, 5, 0.5, 0.1)
    lr_ = R.align_block(Wr, a_tok, a_ptr, 0, b_tok, b_ptr, 8, 0, 5, 0.5, 0.1)
    np.testing.assert_allclose(lk, lr_, rtol=1e-12)
    np.testing.assert_allclose(W, Wr, rtol=1e-12, atol=1e-14)


def _corpus():
    en = ["the cat eats the fish", "the dog eats meat", "a cat and a dog", "the fish swims",
          "the dog runs", "a cat sleeps"] * 5
    fr = ["le chat mange le poisson", "le chien mange la viande", "un chat et un chien",
          "le poisson nage", "le chien court", "un chat dort"] * 5
    return {"en": en, "fr": fr}, {"en": en, "fr": fr}


def test_fit_reproducible_any_thread_count_and_round_trip(tmp_path):
    import numba

    from linxling import BilBOWA, load
    mono, par = _corpus()
    kw = dict(n_components=8, n_epochs=3, min_count=1, n_blocks=3, dtype="float64", random_state=0,
              show_progress=False)
    m1 = BilBOWA(**kw).fit(mono, par)
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        m2 = BilBOWA(**kw).fit(mono, par)
    finally:
        numba.set_num_threads(old)
    for lang in ("en", "fr"):
        w1, v1 = m1.word_vectors(lang)
        w2, v2 = m2.word_vectors(lang)
        assert w1 == w2
        np.testing.assert_array_equal(v1, v2)
    assert set(m1.loss_curve_[0]["skipgram"]) == {"en", "fr"}
    assert m1.loss_curve_[0]["alignment"] is not None
    path = tmp_path / "b.h5"
    m1.save(path)
    m3 = load(path)
    assert isinstance(m3, BilBOWA)
    w, v = m3.word_vectors("fr")
    assert w == m1.word_vectors("fr")[0]
    np.testing.assert_array_equal(v, m1.word_vectors("fr")[1])


def test_alignment_pulls_translations_together():
    """With only the alignment loss acting (weight high, skip-gram learning rate tiny), the sentence
    means of the parallel pairs get closer than at the start."""
    from linxling import BilBOWA
    mono, par = _corpus()
    kw = dict(n_components=8, n_epochs=5, min_count=1, n_blocks=2, dtype="float64", random_state=0,
              learning_rate=1e-6, alignment_learning_rate=0.5, alignment_weight=1.0, sample=0.0,
              show_progress=False)
    m = BilBOWA(**kw).fit(mono, par)
    hist = [r["alignment"] for r in m.loss_curve_]
    assert hist[-1] < 0.1 * hist[0]


@pytest.mark.parametrize("kwargs, mono, par, err, match", [
    ({"n_components": 0}, None, None, ValueError, "n_components"),
    ({"sample": -1.0}, None, None, ValueError, "sample"),
    ({"dtype": "int8"}, None, None, ValueError, "dtype"),
    ({}, {"en": "a b"}, None, TypeError, r"monolingual\['en'\]"),
    ({}, {"en": []}, None, ValueError, r"monolingual\['en'\] is empty"),
    ({}, {}, None, ValueError, "monolingual is empty"),          # was a TypeError saying "got dict"
    ({}, [["a b"]], None, TypeError, "monolingual must be a non-empty dict language -> list of str, got list"),
    ({}, {"en": ["a a"], "fr": ["b b"]}, {"en": ["a"], "fr": ["b", "b"]}, ValueError, "row-aligned"),
    ({}, {"en": ["a a"]}, {"en": ["a"], "de": ["b"]}, ValueError, "'de' has no monolingual"),
    ({}, {"en": ["a a", 3]}, None, TypeError, r"monolingual\['en'\]\[1\]"),
    ({"min_count": 5}, {"en": ["a b"]}, None, ValueError, "min_count"),
])
def test_bad_input(kwargs, mono, par, err, match):
    from linxling import BilBOWA
    with pytest.raises(err, match=match):
        BilBOWA(**kwargs, show_progress=False).fit(mono if mono is not None else {"en": ["a b a b"]}, par)


def test_word_vectors_unknown_language():
    from linxling import BilBOWA
    m = BilBOWA(n_components=4, n_epochs=1, min_count=1, show_progress=False).fit({"en": ["a b a b"]})
    with pytest.raises(ValueError, match=r"unknown language 'xx': the model was trained on \['en'\]"):
        m.word_vectors("xx")
    with pytest.raises(ValueError, match=r"\['en'\] \('en' differs from it in case or spaces only\)"):
        m.word_vectors(" EN")


def test_a_vocabulary_smaller_than_n_components_warns():
    """60 sentences into 500 dimensions fitted in silence; now as Cr5: the language is named."""
    import warnings

    from linxling import BilBOWA
    mono = {"en": ["a b c a b", "c a b"], "fr": ["x y z w v u t s r q"]}
    with pytest.warns(UserWarning, match=r"monolingual\['en'\] has 3 words seen min_count=1 times, fewer "
                                         r"than n_components=8") as rec:
        BilBOWA(n_components=8, n_epochs=1, min_count=1, show_progress=False).fit(mono)
    assert not any("monolingual['fr']" in str(w.message) for w in rec)      # 10 words: enough
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*fewer than n_components")
        BilBOWA(n_components=3, n_epochs=1, min_count=1, show_progress=False).fit(mono)


def test_a_fit_that_trains_no_skipgram_pair_warns():
    """On a tiny corpus the default subsampling keeps almost no token: every epoch's skip-gram
    loss read 0.0 and the vectors stayed at their random start, in silence."""
    import warnings

    from linxling import BilBOWA
    mono = {"en": ["a b c d a b", "c d e"], "fr": ["x y z", "y z w x"]}
    with pytest.warns(UserWarning, match=r"no skip-gram pair was trained in \['en', 'fr'\] \(sample=0.0001"):
        m = BilBOWA(n_components=4, n_epochs=2, min_count=1, random_state=0, show_progress=False).fit(mono)
    assert all(rec["skipgram"] == {"en": 0.0, "fr": 0.0} for rec in m.loss_curve_)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no skip-gram pair")
        m = BilBOWA(n_components=4, n_epochs=2, min_count=1, sample=0, random_state=0, show_progress=False).fit(mono)
    assert all(v > 0 for rec in m.loss_curve_ for v in rec["skipgram"].values())


def test_transform_is_mean_of_word_vectors_and_unfitted_errors():
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    from linxling import BilBOWA
    m = BilBOWA(n_components=4, n_epochs=1, min_count=1, random_state=0, show_progress=False)
    with pytest.raises(NotFittedError):
        m.word_vectors("en")
    with pytest.raises(NotFittedError):
        m.transform(["a"], language="en")
    assert clone(m).get_params() == m.get_params()
    m.fit({"en": ["a b a b c"]})
    words, V = m.word_vectors("en")
    Z = m.transform(["a c zzz", "zzz", "b"], language="en")
    np.testing.assert_allclose(Z[0], (V[words.index("a")] + V[words.index("c")]) / 2)
    np.testing.assert_array_equal(Z[1], 0.0)
    assert m.transform(["b"], language="en", dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        m.transform(["a"], language="fr")


def test_bildrl_accepts_a_bilbowa_space():
    from linxling import BilBOWA, BilDRL
    mono, par = _corpus()
    space = BilBOWA(n_components=6, n_epochs=2, min_count=1, sample=0.0, random_state=0,
                    show_progress=False).fit(mono, par)
    rows = [("cat", "en", "le chat", "fr"), ("dog", "en", "le chien", "fr"), ("fish", "en", "le poisson", "fr")]
    m = BilDRL(encoder="ridge", min_df=1, random_state=0, show_progress=False).fit(rows, space)
    assert m.n_components_ == 6
    top = m.predict(["le chat"], "fr", "en", k=2)
    assert len(top) == 1 and len(top[0]) == 2


def test_procrustes_matches_the_dense_closed_form():
    from linxling.models.bilbowa import procrustes
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 5))
    Q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    np.testing.assert_allclose(procrustes(X, X @ Q), Q, atol=1e-10)     # exact rotation recovered
    Y = rng.standard_normal((30, 5))
    W = procrustes(X, Y)
    U, _, Vt = np.linalg.svd(X.T @ Y)
    np.testing.assert_allclose(W, U @ Vt, atol=1e-12)
    np.testing.assert_allclose(W.T @ W, np.eye(5), atol=1e-12)
    best = np.linalg.norm(X @ W - Y)
    for _ in range(200):                                                 # no rotation does better
        R, _ = np.linalg.qr(rng.standard_normal((5, 5)))
        assert best <= np.linalg.norm(X @ R - Y) + 1e-12
    with pytest.raises(ValueError, match="same shape"):
        procrustes(X, Y[:3])


def test_procrustes_mapping_option(tmp_path):
    from linxling import BilBOWA, load
    from linxling.models.bilbowa import procrustes
    mono, _ = _corpus()
    kw = dict(n_components=8, n_epochs=2, min_count=1, n_blocks=2, dtype="float64", random_state=0,
              show_progress=False)
    plain = BilBOWA(**kw).fit(mono)
    ew, fw = plain.word_vectors("en")[0], plain.word_vectors("fr")[0]
    lex = list(zip(ew[:6], fw[:6], strict=False)) + [("nope", fw[0])]
    m = BilBOWA(**kw, mapping="procrustes").fit(mono, seed_lexicon={("en", "fr"): lex})
    assert m.n_seed_pairs_ == {"en-fr": 6}
    E = plain.word_vectors("en")[1]
    F = plain.word_vectors("fr")[1]
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    F /= np.linalg.norm(F, axis=1, keepdims=True)
    W = procrustes(E[:6], F[:6])
    np.testing.assert_allclose(m.word_vectors("en")[1], E @ W, atol=1e-10)
    np.testing.assert_allclose(m.word_vectors("fr")[1], F, atol=1e-12)
    path = tmp_path / "m.h5"
    m.save(path)
    m2 = load(path)
    np.testing.assert_array_equal(m2.word_vectors("en")[1], m.word_vectors("en")[1])
    np.testing.assert_array_equal(m2.mapping_["en-fr"], m.mapping_["en-fr"])
    m32 = BilBOWA(**{**kw, "dtype": "float32"}, mapping="procrustes").fit(mono, seed_lexicon={("en", "fr"): lex})
    assert m32.mapping_["en-fr"].dtype == np.float32 and m32.word_vectors("en")[1].dtype == np.float32
    R = m32.mapping_["en-fr"]                          # learnt in float64, kept in float32
    np.testing.assert_allclose(R.T @ R, np.eye(8), atol=1e-6)
    with pytest.raises(ValueError, match="needs seed_lexicon"):
        BilBOWA(**kw, mapping="procrustes").fit(mono)
    with pytest.raises(ValueError, match="only by mapping"):
        BilBOWA(**kw).fit(mono, seed_lexicon={("en", "fr"): lex})
    with pytest.raises(ValueError, match="'mapping' parameter of BilBOWA must be a str among {'procrustes'} or None"):
        BilBOWA(**kw, mapping="cca").fit(mono)
    with pytest.raises(ValueError, match="two different monolingual"):
        BilBOWA(**kw, mapping="procrustes").fit(mono, seed_lexicon={("en", "de"): lex})
    with pytest.raises(ValueError, match="no pair has both"):
        BilBOWA(**kw, mapping="procrustes").fit(mono, seed_lexicon={("en", "fr"): [("x", "y")]})


def test_from_paper_keeps_the_paper_dimension_reachable():
    from linxling import BilBOWA
    m = BilBOWA.from_paper()
    assert m.n_components == 50 and m.alignment_weight == 1.0
    assert (m.n_epochs, m.learning_rate) == (5, 0.025)                              # word2vec's
    d = BilBOWA()                                                                   # measured defaults
    assert (d.n_components, d.alignment_weight, d.n_epochs, d.learning_rate) == (100, 10.0, 20, 0.05)
    assert BilBOWA.from_paper(n_epochs=2).n_epochs == 2


def test_callback_sees_the_model_as_trained_so_far():
    """The callback's model embeds with the vectors of the epoch just trained (as BiCVM's and
    CompressTree's): on a first fit it is not NotFittedError, and on a refit it is not the
    previous fit's vectors."""
    from linxling import BilBOWA
    mono, par = _corpus()
    seen = []
    kw = dict(n_components=8, n_epochs=2, min_count=1, n_blocks=2, sample=0.0, random_state=0,
              show_progress=False)     # sample=0: the tiny corpus's words are all frequent
    m = BilBOWA(**kw, callback=lambda model, it, loss: seen.append(
        (model.languages_, model.transform(mono["fr"][:4], "fr")))).fit(mono, par)
    assert len(seen) == 2 and seen[0][0] == ["en", "fr"]
    assert not np.array_equal(seen[0][1], seen[1][1])              # the vectors train between epochs
    np.testing.assert_array_equal(seen[-1][1], m.transform(mono["fr"][:4], "fr"))
    before = m.transform(mono["fr"][:4], "fr")
    seen.clear()
    m.set_params(random_state=1).fit(mono, par)
    assert not np.array_equal(seen[0][1], before)                  # not the previous fit's vectors
    np.testing.assert_array_equal(seen[-1][1], m.transform(mono["fr"][:4], "fr"))
    plain = BilBOWA(**{**kw, "random_state": 1}).fit(mono, par)   # the callback changes nothing
    np.testing.assert_array_equal(plain.vectors_["fr"], m.vectors_["fr"])


def test_parallel_text_without_a_known_word_warns():
    """Parallel text none of whose rows has a word of both vocabularies (another language, or
    min_count too high): the alignment loss read 0.0 every epoch and the languages were left
    unaligned, in silence."""
    import warnings

    from linxling import BilBOWA
    mono = {"en": ["a b c d a b", "c d e a"] * 5, "fr": ["x y z", "y z w x"] * 5}
    par = {"en": ["qq rr", "a b"], "fr": ["x y", "ss tt"]}       # never a known word on both sides
    with pytest.warns(UserWarning, match=r"no row of parallel 'en'-'fr' has a word of both vocabularies"):
        m = BilBOWA(n_components=2, n_epochs=1, min_count=1, sample=0, random_state=0,
                    show_progress=False).fit(mono, par)
    assert m.loss_curve_[0]["alignment"] == 0.0
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no row of parallel")
        BilBOWA(n_components=2, n_epochs=1, min_count=1, sample=0, show_progress=False).fit(
            mono, {"en": ["qq rr", "a b"], "fr": ["x y", "z w"]})
        BilBOWA(n_components=2, n_epochs=1, min_count=1, sample=0, alignment_weight=0,
                show_progress=False).fit(mono, par)


def test_parallel_text_too_small_or_one_text_repeated_warns():
    """Fewer parallel rows than n_components (one long verse pair: held-out P@1 at chance on the
    Bible en-de, 0.002) or a language whose parallel rows are all one text (P@1 0.0) fitted in
    silence: the alignment of sentence means cannot tie the languages. Now a warning naming the
    cause; enough varied rows fit in silence."""
    import warnings

    from linxling import BilBOWA
    rng = np.random.default_rng(0)
    en = [" ".join(f"e{w}" for w in rng.integers(0, 20, 6)) for _ in range(30)]
    fr = [s.replace("e", "f") for s in en]
    kw = dict(n_components=8, n_epochs=1, min_count=1, sample=0, random_state=0, show_progress=False)
    with pytest.warns(UserWarning, match=r"^BilBOWA: only 5 parallel sentences for n_components=8: the alignment "
                                         r"constrains at most 5 of the 8 dimensions"):
        BilBOWA(**kw).fit({"en": en, "fr": fr}, {"en": en[:5], "fr": fr[:5]})
    with pytest.warns(UserWarning, match=r"^BilBOWA: all 30 rows of parallel\['fr'\] are one and the same text"):
        BilBOWA(**kw).fit({"en": en, "fr": fr}, {"en": en, "fr": [fr[0]] * 30})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BilBOWA(**kw).fit({"en": en, "fr": fr}, {"en": en, "fr": fr})


def test_languages_without_parallel_text_or_mapping_warn():
    """fit({'en': ..., 'fr': ...}), the other models' form, trained each language alone in silence:
    vectors of unrelated spaces, whose crosslingual retrieval was at chance. With parallel text, a
    Procrustes mapping or one language there is nothing to say."""
    import warnings

    from linxling import BilBOWA
    mono, par = _corpus()
    kw = dict(n_components=4, n_epochs=1, min_count=1, random_state=0, show_progress=False)
    with pytest.warns(UserWarning, match=r"^BilBOWA: no parallel text, so the languages \['en', 'fr'\] are "
                                         r"trained independently .* parallel= "):
        BilBOWA(**kw).fit(mono)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no parallel text")
        aligned = BilBOWA(**kw).fit(mono, par)
        BilBOWA(**kw).fit({"en": mono["en"]})
        lex = list(zip(aligned.word_vectors("en")[0][:6], aligned.word_vectors("fr")[0][:6], strict=True))
        BilBOWA(**kw, mapping="procrustes").fit(mono, seed_lexicon={("en", "fr"): lex})
