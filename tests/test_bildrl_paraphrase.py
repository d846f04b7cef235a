"""Bilingual paraphrase identification (BilDRL Sec. 4.2): pair construction with known
neighbours, the MLP's hand-written gradient against finite differences, known accuracies."""

import numpy as np
import pytest

from linxling.datasets.wikt3l import Wikt3l
from linxling.evaluate import ParaphraseMLP, paraphrase_identification, paraphrase_pairs


def _toy():
    """English words w0..w29 on an arc (angle 0.02 i): the k-th neighbour of w0 is w_k, of w29
    is w_{29-k}. French definitions of every w_i; English definitions only for the pairs
    (w0, f0) and (w29, f29)."""
    words = [f"w{i}" for i in range(30)]
    ang = 0.02 * np.arange(30)
    vectors = np.stack([np.cos(ang), np.sin(ang)], axis=1) * (1 + np.arange(30))[:, None]  # norms vary
    fr_en = Wikt3l("fr-en", "fr", "en", targets=words, definitions=[f"dfr {w}" for w in words],
                   headwords=[f"f{i}" for i in range(30)], candidates=words)
    en_fr = Wikt3l("en-fr", "en", "fr", targets=["f0", "f29", "f5"],
                   definitions=["den w0", "den w29", "den w5 other"], headwords=["w0", "w29", "x5"],
                   candidates=["f0", "f29", "f5"])
    return fr_en, en_fr, words, vectors


def test_pairs_follow_the_paper():
    fr_en, en_fr, words, vectors = _toy()
    p = paraphrase_pairs(fr_en, en_fr, words, vectors, random_state=0)
    # (w5, f5) has no French definition of that pair (headword of f5's English def is x5)
    assert p["word"] == ["w0", "w0", "w29", "w29"]
    np.testing.assert_array_equal(p["label"], [1, 0, 1, 0])
    assert p["en"] == ["den w0", "den w0", "den w29", "den w29"]
    assert p["fr"][0] == "dfr w0" and p["fr"][2] == "dfr w29"
    assert int(p["other"][1][1:]) in range(6, 16)            # 6th-15th neighbour of w0
    assert 29 - int(p["other"][3][1:]) in range(6, 16)       # of w29
    assert p["fr"][1] == f"dfr {p['other'][1]}"
    seen = {paraphrase_pairs(fr_en, en_fr, words, vectors, random_state=s)["other"][1] for s in range(60)}
    assert seen == {f"w{k}" for k in range(6, 16)}           # uniform over exactly those ranks
    q = paraphrase_pairs(fr_en, en_fr, words, vectors, neighbour_ranks=(1, 1), random_state=0)
    assert q["other"][1] == "w1" and q["other"][3] == "w28"
    assert len(paraphrase_pairs(fr_en, en_fr, words, vectors, max_pairs=1, random_state=0)["en"]) == 2


def test_pairs_bad_input():
    fr_en, en_fr, words, vectors = _toy()
    with pytest.raises(ValueError, match="fr_en must hold definitions in 'fr'"):
        paraphrase_pairs(en_fr, fr_en, words, vectors)
    with pytest.raises(ValueError, match="neighbour_ranks"):
        paraphrase_pairs(fr_en, en_fr, words, vectors, neighbour_ranks=(0, 3))
    with pytest.raises(ValueError, match="need more than 40"):
        paraphrase_pairs(fr_en, en_fr, words, vectors, neighbour_ranks=(6, 40))
    with pytest.raises(ValueError, match="shape"):
        paraphrase_pairs(fr_en, en_fr, words, vectors[:5])


def test_mlp_gradient_finite_differences():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9, 5))
    y = rng.integers(0, 2, size=9)
    p = ParaphraseMLP.init_params(5, 7, rng)
    p["b1"] = rng.standard_normal(7) * 0.1
    p["b2"] = rng.standard_normal(2) * 0.1
    _, g = ParaphraseMLP.loss_grad(p, X, y, l2=0.3)
    h = 1e-6
    for k, v in p.items():
        fd = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            old = v[i]
            v[i] = old + h
            lp = ParaphraseMLP.loss_grad(p, X, y, l2=0.3)[0]
            v[i] = old - h
            lm = ParaphraseMLP.loss_grad(p, X, y, l2=0.3)[0]
            v[i] = old
            fd[i] = (lp - lm) / (2 * h)
        assert np.linalg.norm(g[k] - fd) / np.linalg.norm(fd) < 1e-6, k


def test_separable_pairs_are_identified_and_early_stopping_keeps_the_best():
    rng = np.random.default_rng(1)
    n, d = 400, 6
    A = rng.standard_normal((n, d))
    y = np.tile([1, 0], n // 2)
    # paraphrases: B close to A; non-paraphrases: B displaced by 3 along one direction (the
    # classes of A - B are separated by a margin of ~2.5 along it)
    u = np.eye(d)[0]
    B = A + 0.1 * rng.standard_normal((n, d)) + np.where(y[:, None] == 1, 0.0, 3.0 * u)
    r = paraphrase_identification(A, B, y, random_state=0, hidden=16, learning_rate=1e-2, n_epochs=100)
    assert r["accuracy"] >= 0.97 and r["n_train"] == 300 and r["n_validation"] == 20 and r["n_test"] == 80
    # labels independent of the vectors: test accuracy cannot be far from chance (80 test pairs,
    # 4 standard deviations of a fair coin: 0.5 +- 0.23)
    yr = rng.integers(0, 2, size=n)
    rr = paraphrase_identification(A, B, yr, random_state=0, hidden=16, n_epochs=30, patience=5)
    assert abs(rr["accuracy"] - 0.5) < 0.23
    mlp = ParaphraseMLP(hidden=8, n_epochs=40, patience=3, random_state=0)
    mlp.fit(A[:300], B[:300], y[:300], A[300:320], B[300:320], y[300:320])
    assert mlp.validation_accuracy_ == max(mlp.history_)
    assert mlp.best_epoch_ == int(np.argmax(mlp.history_))
    assert len(mlp.history_) <= mlp.best_epoch_ + 1 + 3
    assert float((mlp.predict(A[300:320], B[300:320]) == y[300:320]).mean()) == mlp.validation_accuracy_


def test_paraphrase_bad_input():
    A = np.zeros((10, 3))
    with pytest.raises(ValueError, match="same shape"):
        paraphrase_identification(A, np.zeros((10, 4)), np.zeros(10))
    with pytest.raises(ValueError, match="0/1"):
        paraphrase_identification(A, A, np.full(10, 2))
    with pytest.raises(ValueError, match="fractions"):
        paraphrase_identification(A, A, np.zeros(10), fractions=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="too few"):
        paraphrase_identification(A[:3], A[:3], np.zeros(3))
    with pytest.raises(ValueError, match="non-finite"):
        paraphrase_identification(A + np.nan, A, np.zeros(10))
    with pytest.raises(ValueError, match="not fitted"):
        ParaphraseMLP().predict(A, A)
    with pytest.raises(ValueError, match="hidden"):
        ParaphraseMLP(hidden=0)


@pytest.mark.parametrize("kwargs, match", [
    ({"learning_rate": "fast"}, r"^learning_rate must be a number, got str 'fast'"),   # was NumPy's isfinite error
    ({"l2": None}, r"^l2 must be a number, got NoneType"),
    ({"normalize": "no"}, r"^normalize must be a bool, got str 'no'"),               # was read as True
])
def test_mlp_parameters_of_the_wrong_type_are_named(kwargs, match):
    with pytest.raises(TypeError, match=match):
        ParaphraseMLP(**kwargs)


def test_feature_options():
    A = np.array([[3.0, 4.0], [0.0, 0.0]])
    B = np.array([[1.0, 0.0], [0.0, 2.0]])
    m = ParaphraseMLP(features="abs_difference", normalize=True)
    np.testing.assert_allclose(m._features(A, B, "A", "B"), [[0.4, 0.8], [0.0, 1.0]])
    np.testing.assert_allclose(ParaphraseMLP()._features(A, B, "A", "B"), A - B)
    with pytest.raises(ValueError, match="features"):
        ParaphraseMLP(features="concat")


def test_old_epochs_name_warns_and_is_used():
    with pytest.warns(FutureWarning, match="n_epochs"):
        m = ParaphraseMLP(epochs=7)
    assert m.n_epochs == 7
    with pytest.raises(TypeError, match="not both"):
        ParaphraseMLP(n_epochs=5, epochs=7)
    with pytest.raises(ValueError, match="n_epochs"):
        ParaphraseMLP(n_epochs=0)


def test_parameters_set_after_construction_are_checked_at_fit():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    y = np.arange(20) % 2
    m = ParaphraseMLP()
    m.hidden = -1                                   # was NumPy's "negative dimensions are not allowed"
    with pytest.raises(ValueError, match="hidden must be a positive int, got -1"):
        m.fit(A, B, y, A, B, y)
