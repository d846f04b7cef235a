"""Etter's exact / estimated rank and CLDC with the averaged perceptron."""
from __future__ import annotations

import numpy as np
import pytest

from linxling.evaluate import (
    AveragedPerceptron,
    cldc,
    document_vectors,
    estimated_rank,
    exact_rank,
)


# --------------------------------------------------------------------------- rank
def _brute_rank(Q, T, score):
    """Algorithm 1 literally: score every target, sort (best first), find the position of i."""
    n = len(Q)
    ranks = []
    for i in range(n):
        if score == "dot":
            s = np.array([Q[i] @ T[j] for j in range(n)])
        elif score == "cosine":
            s = np.array([Q[i] @ T[j] / np.linalg.norm(Q[i]) / np.linalg.norm(T[j]) for j in range(n)])
        else:
            s = -np.array([np.abs(Q[i] - T[j]).sum() for j in range(n)])
        order = np.argsort(-s, kind="stable")
        ranks.append(int(np.flatnonzero(order == i)[0]) + 1)
    return np.array(ranks)


@pytest.mark.parametrize("score", ["dot", "l1", "cosine"])
@pytest.mark.parametrize("block_size", [None, 1, 7])
def test_exact_rank_matches_brute_force(score, block_size):
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((40, 5))
    T = Q + 0.8 * rng.standard_normal((40, 5))   # continuous data: no ties (a.s.)
    got = exact_rank(Q, T, score, block_size=block_size)
    np.testing.assert_array_equal(got, _brute_rank(Q, T, score))
    assert got.min() >= 1 and got.max() <= 40 and got.dtype == np.int64


def test_exact_rank_perfect_and_reversed():
    Q = np.eye(6)
    assert np.all(exact_rank(Q, Q, "dot") == 1)
    assert np.all(exact_rank(Q, Q, "l1") == 1)
    # targets reversed: with dot product the true target (row 5-i) scores 0, the matching row 1
    T = Q[::-1]
    r = exact_rank(Q, T, "dot")
    assert np.all(r == 2)   # exactly one candidate (score 1) is strictly better, the rest tie at 0


def test_estimated_rank_unbiased_on_known_case():
    rng = np.random.default_rng(1)
    Q = rng.standard_normal((30, 4))
    T = Q + 1.5 * rng.standard_normal((30, 4))
    true_mean = exact_rank(Q, T, "l1").mean()
    # average of many independent estimates converges to the exact mean rank
    ests = [estimated_rank(Q, T, "l1", n_candidates=5, random_state=s).mean_rank for s in range(400)]
    se = np.std(ests) / np.sqrt(len(ests))
    assert abs(np.mean(ests) - true_mean) < 4 * se + 1e-12
    # Algorithm 2's accuracy with M = 1 estimates mean over i of P(draw not better) = 1 - (r-1)/N
    ranks = exact_rank(Q, T, "l1")
    expected_acc = np.mean(1 - (ranks - 1) / len(Q))
    accs = [estimated_rank(Q, T, "l1", n_candidates=1, random_state=s).accuracy for s in range(400)]
    assert abs(np.mean(accs) - expected_acc) < 4 * np.std(accs) / np.sqrt(400) + 1e-12


def test_estimated_rank_seeded_and_block_independent():
    rng = np.random.default_rng(2)
    Q = rng.standard_normal((50, 3))
    T = rng.standard_normal((50, 3))
    a = estimated_rank(Q, T, "dot", n_candidates=3, random_state=7)
    b = estimated_rank(Q, T, "dot", n_candidates=3, random_state=7, block_size=4)
    assert a == b
    assert a.n_pairs == 50 and a.n_candidates == 3
    perfect = estimated_rank(np.eye(5), np.eye(5), "cosine", n_candidates=4, random_state=0)
    assert perfect.accuracy == 1.0 and perfect.mean_rank == 1.0


def test_rank_bad_input():
    Q = np.ones((3, 2))
    with pytest.raises(ValueError, match="score"):
        exact_rank(Q, Q, "l2")
    with pytest.raises(ValueError, match="same shape"):
        exact_rank(Q, np.ones((4, 2)))
    with pytest.raises(ValueError, match="NaN"):
        exact_rank(Q, np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match="n_candidates"):
        estimated_rank(Q, Q, n_candidates=0)
    with pytest.raises(ValueError, match=r"queries has 3 all-zero row\(s\) \(row 0, 1, 2\)"):
        exact_rank(np.zeros((3, 2)), Q, "cosine")
    # the message said "an embedding row", naming neither the argument nor the row
    T = Q.copy()
    T[1] = 0
    with pytest.raises(ValueError, match=r"targets has 1 all-zero row\(s\) \(row 1\)"):
        estimated_rank(Q, T, "cosine")
    with pytest.raises(TypeError, match="queries"):
        exact_rank([["a", "b"]], Q)


# --------------------------------------------------------------------------- perceptron
def _reference_averaged_perceptron(X, y, n_epochs, seed):
    """Plain perceptron storing every weight vector and averaging them at the end."""
    classes, yi = np.unique(y, return_inverse=True)
    Xa = np.hstack([X, np.ones((len(X), 1))])
    W = np.zeros((len(classes), Xa.shape[1]))
    history = []
    rng = np.random.default_rng(seed)
    for _ in range(n_epochs):
        for i in rng.permutation(len(X)):
            pred = int(np.argmax(W @ Xa[i]))
            if pred != yi[i]:
                W = W.copy()
                W[yi[i]] += Xa[i]
                W[pred] -= Xa[i]
            history.append(W.copy())
    return np.mean(history, axis=0)


def test_averaged_perceptron_matches_reference():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 4))
    y = rng.integers(0, 3, 60)                   # noisy labels: many mistakes, many updates
    clf = AveragedPerceptron(n_epochs=4, random_state=5).fit(X, y)
    ref = _reference_averaged_perceptron(X, y, 4, 5)
    np.testing.assert_allclose(clf.coef_, ref[:, :4], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(clf.intercept_, ref[:, 4], rtol=1e-12, atol=1e-12)


def test_averaged_perceptron_separable_and_deterministic():
    rng = np.random.default_rng(4)
    centres = np.array([[5.0, 0, 0], [0, 5.0, 0], [0, 0, 5.0], [-5.0, -5.0, 0]])
    y = rng.integers(0, 4, 200)
    X = centres[y] + 0.5 * rng.standard_normal((200, 3))
    labels = np.array(["law", "history", "wisdom", "gospels"])[y]
    clf = AveragedPerceptron(n_epochs=10, random_state=0).fit(X, labels)
    assert np.all(clf.predict(X) == labels)
    assert clf.n_mistakes_[-1] == 0              # separable: the perceptron converged
    clf2 = AveragedPerceptron(n_epochs=10, random_state=0).fit(X, labels)
    np.testing.assert_array_equal(clf.coef_, clf2.coef_)


def test_document_vectors_and_cldc():
    S = np.array([[1.0, 0], [3, 0], [0, 2], [0, 4]])
    D = document_vectors(S, [0, 0, 1, 1])
    np.testing.assert_allclose(D, [[2, 0], [0, 3]])
    with pytest.raises(ValueError, match="without sentences"):
        document_vectors(S, [0, 0, 2, 2])
    with pytest.raises(ValueError, match="one entry per sentence"):
        document_vectors(S, [0, 1])
    with pytest.raises(TypeError, match="n_documents must be an integer"):      # 2.5 was read as 2
        document_vectors(S, [0, 0, 1, 1], n_documents=2.5)
    np.testing.assert_allclose(document_vectors(S, [0, 0, 1, 1], n_documents=np.int64(2)), D)
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((3, 8)) * 4
    ytr = rng.integers(0, 3, 90)
    yte = rng.integers(0, 3, 50)
    # "another language": the same space with a small shift
    res = cldc(centres[ytr] + rng.standard_normal((90, 8)) * 0.3, ytr,
               centres[yte] + 0.1 + rng.standard_normal((50, 8)) * 0.3, yte, random_state=0)
    assert res["accuracy"] == 1.0
    maj = np.bincount(ytr).argmax()
    assert res["majority_accuracy"] == pytest.approx(np.mean(yte == maj))
    with pytest.raises(ValueError, match="dimension"):
        cldc(np.ones((3, 2)), [0, 1, 0], np.ones((2, 3)), [0, 1])
    with pytest.raises(ValueError, match="labels"):
        cldc(np.ones((3, 2)), [0, 1], np.ones((2, 2)), [0, 1])


def test_cldc_refuses_test_labels_that_share_none_with_train():
    """Integer codes for training and names for testing scored accuracy 0 (and majority 0) in
    silence: no prediction can ever equal a label of the other encoding."""
    X = np.array([[1.0, 0], [0, 1], [1, 0.1], [0.1, 1]])
    with pytest.raises(ValueError, match="test_y shares no label with train_y"):
        cldc(X, [0, 1, 0, 1], X, ["a", "b", "a", "b"], random_state=0)
    # one label in common is enough (a test label unseen in training is only a miss)
    res = cldc(X, [0, 1, 0, 1], X, [0, 2, 0, 2], random_state=0)
    assert res["accuracy"] == 0.5
    assert cldc(X, [0, 1, 0, 1], X, [0.0, 1.0, 0.0, 1.0], random_state=0)["accuracy"] == 1.0


@pytest.mark.parametrize("seed, exc", [(-1, ValueError), (1.5, TypeError), ("a", TypeError), (True, TypeError)])
def test_a_bad_random_state_is_named(seed, exc):
    """estimated_rank and the perceptron handed random_state to NumPy, whose errors ("expected
    non-negative integer", "SeedSequence expects int ...") named no argument; True was the seed 1."""
    Q = np.eye(4)
    with pytest.raises(exc, match="^random_state must be"):
        estimated_rank(Q, Q, random_state=seed)
    with pytest.raises(exc, match="^random_state must be"):
        AveragedPerceptron(random_state=seed).fit(Q, [0, 1, 0, 1])
    with pytest.raises(exc, match="^random_state must be"):
        cldc(Q, [0, 1, 0, 1], Q, [0, 1, 0, 1], random_state=seed)


def test_a_perceptron_fit_intercept_that_is_not_a_bool_is_named():
    """fit_intercept="no" was truthy: the perceptron fitted an intercept without a word."""
    with pytest.raises(TypeError, match="^fit_intercept must be a bool, got str 'no'"):
        AveragedPerceptron(fit_intercept="no").fit(np.eye(4), [0, 1, 0, 1])
