"""BilDRL joint learning (Sec. 3.3): the joint objective's gradient w.r.t. the word vectors
against central finite differences, the fit's word step against that gradient, the equivalence
with the fixed-space model when the word vectors get no step, reproducibility, save/load and
bad input."""

import numpy as np
import pytest
from test_bildrl import FakeSpace, _dictionary

import linxling
from linxling.kernels import encoders as K
from linxling.kernels.skipgram_reference import align_loss_grad, skipgram_loss_grad
from linxling.models.bildrl import BilDRL, dictionary_word_grad


def _corpora(seed=0):
    rng = np.random.default_rng(seed)
    mono = {l: [" ".join(f"{l[0]}{int(j)}" for j in rng.integers(40, size=8)) for _ in range(60)]
            for l in ("en", "fr")}
    par = {"en": [" ".join(f"e{int(j)}" for j in rng.integers(40, size=4)) for _ in range(30)]}
    par["fr"] = [s.replace("e", "f") for s in par["en"]]
    return mono, par


def _joint_objective(encoder, params, V, C, idx, L, tgt, sg_units, al_pairs, w_sg, w_al):
    """J(V) and its gradient: dictionary (``dictionary_word_grad``) + skip-gram + alignment."""
    loss, _, rows, G = dictionary_word_grad(encoder, params, V, idx, L, tgt)
    grad = np.zeros_like(V)
    np.add.at(grad, rows, G)
    for c, o, negs in sg_units:
        lsg, gw, _ = skipgram_loss_grad(V[c], C, o, negs)
        loss += w_sg * lsg
        grad[c] += w_sg * gw
    for a, b in al_pairs:
        la, ga = align_loss_grad(V, a, b, w_al)
        loss += la
        grad += ga
    return loss, grad


@pytest.mark.parametrize("encoder", ["bow", "cnn", "gru", "att"])
def test_joint_objective_gradient_finite_differences(encoder):
    rng = np.random.default_rng(1)
    n, d, T, B = 12, 4, 5, 3
    V = rng.standard_normal((n, d))
    C = 0.5 * rng.standard_normal((n, d))
    params = K.init_params(encoder, d, d, hidden=5, n_layers=2 if encoder != "cnn" else 1,
                           rng=rng, dtype=np.float64)
    idx = rng.integers(n, size=(B, T))
    idx[0, 1] = idx[0, 3]                              # a word repeated in one definition
    L = np.array([5, 3, 1])
    tgt = np.array([idx[1, 0], 7, 7])                  # a target that is also a definition word
    sg_units = [(2, 5, [1, 9]), (5, 2, [3]), (2, 8, [0, 11])]
    al_pairs = [(np.array([0, 1, 1]), np.array([6, 10])), (np.array([3]), np.array([4, 11]))]
    def f(W):
        return _joint_objective(encoder, params, W, C, idx, L, tgt, sg_units, al_pairs, 0.7, 1.3)

    _, g = f(V)
    h = 1e-6
    fd = np.zeros_like(V)
    for i in range(n):
        for j in range(d):
            Vp, Vm = V.copy(), V.copy()
            Vp[i, j] += h
            Vm[i, j] -= h
            fd[i, j] = (f(Vp)[0] - f(Vm)[0]) / (2 * h)
    assert np.linalg.norm(fd) > 0
    assert np.linalg.norm(g - fd) / np.linalg.norm(fd) < 1e-6
    # padded positions carry no gradient: row 10's only use is the alignment pair
    untouched = sorted(set(range(n)) - set(idx[0, :5]) - set(idx[1, :3]) - set(idx[2, :1]) - {7}
                       - {2, 5, 8, 1, 9, 3, 0, 11} - {0, 1, 6, 10, 3, 4, 11})
    np.testing.assert_array_equal(g[untouched], 0.0)


def test_fit_word_step_is_the_gradient_step():
    """One epoch, one batch, no skip-gram / alignment: V1 = V0 - lr * grad of the summed loss at
    the initial encoder (the same draws as ``init_params`` with the fit's seed)."""
    mono, par = _corpora()
    rows = _dictionary(n=40)
    lr = 0.05
    m = BilDRL(encoder="gru", hidden_size=6, n_epochs=1, batch_size=64, n_blocks=1, joint=True,
               skipgram_weight=0.0, alignment_weight=0.0, word_learning_rate=lr, dtype="float64",
               random_state=5, show_progress=False).fit(rows, FakeSpace(), mono, par)
    ref = BilDRL(encoder="gru", hidden_size=6, n_epochs=1, dtype="float64", random_state=5,
                 show_progress=False).fit(rows, FakeSpace())         # the fixed space V0
    V0, off, _ = ref._stacked_space(np.float64)
    params = K.init_params("gru", 8, 8, hidden=6, n_layers=1, rng=np.random.default_rng(5), dtype=np.float64)
    ids = [ref._token_ids(r[2], r[3]) for r in rows]
    idx, L = ref._pad(ids)
    idx = idx + np.array([off[r[3]] for r in rows])[:, None]
    tgt = np.array([off[r[1]] + ref._index[r[1]][r[0]] for r in rows])
    _, _, rws, G = dictionary_word_grad("gru", params, V0, idx, L, tgt)
    V1 = V0.copy()
    np.add.at(V1, rws, -lr * G)
    got, _, _ = m._stacked_space(np.float64)
    np.testing.assert_allclose(got, V1, rtol=1e-10, atol=1e-12)
    assert not np.allclose(got, V0)


def test_no_word_step_equals_the_fixed_space_model():
    """word_learning_rate=0 (and zero skip-gram / alignment weights): the word vectors never
    move and the dictionary side draws the same batches, so the model equals joint=False."""
    mono, par = _corpora()
    kw = dict(encoder="att", hidden_size=8, n_epochs=2, batch_size=16, random_state=3, show_progress=False)
    a = BilDRL(joint=True, skipgram_weight=0.0, alignment_weight=0.0, word_learning_rate=0.0, **kw)
    a.fit(_dictionary(), FakeSpace(), monolingual=mono, parallel=par)
    b = BilDRL(**kw).fit(_dictionary(), FakeSpace())
    defs = ["f1 f3 f9", "f2"]
    np.testing.assert_array_equal(a.transform(defs, language="fr"), b.transform(defs, language="fr"))
    assert a.loss_curve_ == b.loss_curve_
    for lang in ("en", "fr"):
        np.testing.assert_array_equal(a.word_vectors(lang)[1], b.word_vectors(lang)[1])


def test_zero_text_weights_ignore_the_text():
    """skipgram_weight = alignment_weight = 0: the monolingual / parallel text has no effect."""
    kw = dict(encoder="bow", n_epochs=2, joint=True, skipgram_weight=0.0, alignment_weight=0.0,
              random_state=0, show_progress=False)
    a = BilDRL(**kw).fit(_dictionary(), FakeSpace(), *_corpora(0))
    b = BilDRL(**kw).fit(_dictionary(), FakeSpace(), *_corpora(1))
    np.testing.assert_array_equal(a.word_vectors("en")[1], b.word_vectors("en")[1])


def test_joint_reproducible_learns_and_round_trips(tmp_path):
    mono, par = _corpora()
    kw = dict(encoder="gru", hidden_size=8, n_epochs=6, batch_size=16, joint=True, learning_rate=0.01,
              random_state=7, show_progress=False)
    a = BilDRL(**kw).fit(_dictionary(), FakeSpace(), mono, par)
    b = BilDRL(**kw).fit(_dictionary(), FakeSpace(), mono, par)
    for lang in ("en", "fr"):
        np.testing.assert_array_equal(a.word_vectors(lang)[1], b.word_vectors(lang)[1])
    fixed = BilDRL(**{**kw, "joint": False}).fit(_dictionary(), FakeSpace())
    assert not np.allclose(a.word_vectors("en")[1], fixed.word_vectors("en")[1])
    assert a.loss_curve_[-1] < 0.75 * a.loss_curve_[0]
    h = a.joint_history_
    assert len(h) == 6 and set(h[0]["skipgram"]) == {"en", "fr"} and h[0]["alignment"] is not None
    path = tmp_path / "joint.h5"
    a.save(path)
    loaded = linxling.load(path)
    np.testing.assert_array_equal(loaded.transform(["f1 f2"], language="fr"), a.transform(["f1 f2"], language="fr"))
    np.testing.assert_array_equal(loaded.word_vectors("fr")[1], a.word_vectors("fr")[1])
    assert loaded.get_params() == a.get_params() and loaded.joint_history_ == a.joint_history_


def test_joint_bad_input():
    mono, par = _corpora()
    space = FakeSpace()
    with pytest.raises(ValueError, match="joint=True needs both monolingual"):
        BilDRL(encoder="bow", joint=True).fit(_dictionary(), space, monolingual=mono)
    with pytest.raises(ValueError, match="used only by joint learning"):
        BilDRL(encoder="bow").fit(_dictionary(), space, monolingual=mono, parallel=par)
    with pytest.raises(ValueError, match="neural encoder"):
        BilDRL(encoder="ridge", joint=True).fit(_dictionary(), space, mono, par)
    with pytest.raises(ValueError, match="multitask=True"):
        BilDRL(encoder="bow", joint=True, multitask=False).fit(_dictionary(), space, mono, par)
    with pytest.raises(ValueError, match="no word vectors for language 'de'"):
        BilDRL(encoder="bow", joint=True).fit(_dictionary(), space, {**mono, "de": ["a b"]}, par)
    with pytest.raises(ValueError, match="parallel texts must be row-aligned"):
        BilDRL(encoder="bow", joint=True).fit(_dictionary(), space, mono, {"en": ["e1"], "fr": []})
    with pytest.raises(ValueError, match="word_learning_rate"):
        BilDRL(encoder="bow", joint=True, word_learning_rate=-1.0).fit(_dictionary(), space, mono, par)
    bad = FakeSpace()
    bad.vecs["fr"][3, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        BilDRL(encoder="bow", joint=True).fit(_dictionary(), bad, mono, par)
    with pytest.raises(ValueError, match="no sentence with two words"):
        BilDRL(encoder="bow", joint=True).fit(_dictionary(), space, {**mono, "fr": ["zzz yyy"]}, par)


def test_callback_sees_the_jointly_trained_word_vectors():
    """joint=True: the callback's model has the word vectors of the epoch just trained (the
    space its encoder maps into), not the space the fit started from."""
    mono, par = _corpora()
    seen = []
    kw = dict(encoder="bow", hidden_size=8, n_epochs=2, batch_size=16, joint=True, n_blocks=2,
              random_state=0, show_progress=False)
    m = BilDRL(**kw, callback=lambda model, it, loss: seen.append(model.word_vectors("fr")[1])).fit(
        _dictionary(), FakeSpace(), mono, par)
    assert len(seen) == 2 and not np.array_equal(seen[0], seen[1])
    np.testing.assert_array_equal(seen[-1], m.word_vectors("fr")[1])
    plain = BilDRL(**kw).fit(_dictionary(), FakeSpace(), mono, par)
    np.testing.assert_array_equal(plain.word_vectors("fr")[1], m.word_vectors("fr")[1])


def test_parallel_text_without_a_known_word_warns():
    """Joint learning on parallel text with no word of the space on both sides of any row: the
    alignment term read 0.0 and did nothing, in silence (as in BilBOWA)."""
    mono, _ = _corpora()
    par = {"en": ["zz yy", "qq ww"], "fr": ["aa bb", "cc dd"]}
    with pytest.warns(UserWarning, match=r"BilDRL: no row of parallel 'en'-'fr' has a word of both"):
        m = BilDRL(encoder="bow", joint=True, hidden_size=8, n_epochs=1, n_blocks=2, random_state=0,
                   show_progress=False).fit(_dictionary(), FakeSpace(), mono, par)
    assert m.joint_history_[0]["alignment"] == 0.0
