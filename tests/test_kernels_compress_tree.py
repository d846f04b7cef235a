"""CompressTree kernels: finite-difference gradient checks, kernel vs NumPy reference."""
from __future__ import annotations

import numpy as np
import pytest

from linxling.kernels import compress_tree as K
from linxling.kernels import compress_tree_reference as R

D, H, V, L = 4, 6, 9, 5


def _params(nonlinear, rng, scale=0.4):
    m = H if nonlinear else D
    p = {"A1": rng.standard_normal((m, 2 * D)) * scale, "b1": rng.standard_normal(m) * 0.1,
         "A2": rng.standard_normal((D, H)) * scale if nonlinear else np.zeros((0, 0)),
         "b2": rng.standard_normal(D) * 0.1 if nonlinear else np.zeros(0),
         "w": rng.standard_normal(D), "w0": np.float64(0.3)}
    return p


def _trees(kind, E, tok_p, tok_n, p, nonlinear, rng):
    if kind == "left":
        pp = pn = R.left_to_right_positions(L)
    elif kind == "random":
        pp = pn = R.random_positions(L, rng)
    else:
        pp = R.greedy_positions(E, tok_p, p, nonlinear)
        pn = R.greedy_positions(E, tok_n, p, nonlinear)
    return R.positions_to_steps(pp, L), R.positions_to_steps(pn, L)


def _setup(kind, nonlinear, seed):
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((V, D)) * 0.5
    p = _params(nonlinear, rng)
    tok_p = rng.integers(0, V, L)
    tok_n = tok_p.copy()
    tok_n[2] = (tok_p[2] + 1) % V
    sp, sn = _trees(kind, E, tok_p, tok_n, p, nonlinear, rng)
    # make the pair violate the margin so the gradient is non-zero
    return E, p, tok_p, tok_n, sp, sn


@pytest.mark.parametrize("kind", ["left", "random", "greedy"])
@pytest.mark.parametrize("nonlinear", [False, True])
def test_gradient_finite_differences(kind, nonlinear):
    for seed in range(20):
        E, p, tp, tn, sp, sn = _setup(kind, nonlinear, seed)
        loss, grads = R.pair_loss_grad(E, tp, tn, sp, sn, p, nonlinear)
        if loss <= 1e-3:
            continue
        # stay away from hardTanh kinks: every pre-activation at least 1e-3 from +-1
        us = R.encode_sentence(E, tp, sp, p, nonlinear)[1] + R.encode_sentence(E, tn, sn, p, nonlinear)[1]
        if nonlinear and min(np.abs(np.abs(np.concatenate(us)) - 1).min(), 1) < 1e-3:
            continue
        break
    else:
        pytest.fail("no admissible random case found")
    eps = 1e-6
    names = ["A1", "b1", "w"] + (["A2", "b2"] if nonlinear else [])

    def f(E_, p_):
        return R.pair_loss(E_, tp, tn, sp, sn, p_, nonlinear)   # tree held fixed

    for name in names + ["E"]:
        target = E if name == "E" else p[name]
        num = np.zeros_like(target)
        for idx in np.ndindex(target.shape):
            old = target[idx]
            target[idx] = old + eps
            fp = f(E, p)
            target[idx] = old - eps
            fm = f(E, p)
            target[idx] = old
            num[idx] = (fp - fm) / (2 * eps)
        ana = grads[name]
        if np.linalg.norm(ana) < 1e-12:
            # zero up to round-off analytically (e.g. b1 of a linear h: the same bias path in
            # pos and neg cancels); the central difference is then round-off only, ~ 1e-16 / eps
            assert np.abs(num).max() < 1e-8, name
            continue
        err = np.linalg.norm(ana - num) / max(np.linalg.norm(ana) + np.linalg.norm(num), 1e-12)
        assert err < 1e-6, (name, err)


@pytest.mark.parametrize("kind", ["left", "random", "greedy"])
@pytest.mark.parametrize("nonlinear", [False, True])
def test_kernel_matches_reference(kind, nonlinear):
    E, p, tp, tn, sp, sn = _setup(kind, nonlinear, 3)
    if kind == "greedy":
        for tok, st in ((tp, sp), (tn, sn)):
            pos = K.greedy_positions(E, tok, p["A1"], p["b1"], p["A2"], p["b2"], p["w"], nonlinear)
            np.testing.assert_array_equal(K.positions_to_steps(pos, L), st)
    else:
        np.testing.assert_array_equal(K.positions_to_steps(R.random_positions(L, np.random.default_rng(1)), L),
                                      R.positions_to_steps(R.random_positions(L, np.random.default_rng(1)), L))
    loss_r, g = R.pair_loss_grad(E, tp, tn, sp, sn, p, nonlinear)
    gA1, gb1 = np.zeros_like(p["A1"]), np.zeros_like(p["b1"])
    gA2, gb2, gw = np.zeros_like(p["A2"]), np.zeros_like(p["b2"]), np.zeros_like(p["w"])
    Gp, Gn = np.empty((2 * L - 1, D)), np.empty((2 * L - 1, D))
    loss_k = K.pair_loss_grad(E, tp, tn, sp, sn, p["A1"], p["b1"], p["A2"], p["b2"], p["w"],
                              float(p["w0"]), nonlinear, gA1, gb1, gA2, gb2, gw, Gp, Gn)
    assert loss_k == pytest.approx(loss_r, rel=1e-12, abs=1e-12)
    tol = {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(gA1, g["A1"], **tol)
    np.testing.assert_allclose(gb1, g["b1"], **tol)
    np.testing.assert_allclose(gw, g["w"], **tol)
    if nonlinear:
        np.testing.assert_allclose(gA2, g["A2"], **tol)
        np.testing.assert_allclose(gb2, g["b2"], **tol)
    gE = np.zeros_like(E)
    np.add.at(gE, tp, Gp[:L])
    np.add.at(gE, tn, Gn[:L])
    np.testing.assert_allclose(gE, g["E"], **tol)
    # encode: the root of each sentence equals the reference's
    indices = np.concatenate([tp, tn])
    indptr = np.array([0, L, 2 * L])
    tree_pos = np.concatenate([R.left_to_right_positions(L)] * 2)
    out = np.empty((2, D))
    K.encode(E, indices, indptr, 2 if kind == "greedy" else 0, tree_pos, p["A1"], p["b1"], p["A2"],
             p["b2"], p["w"], nonlinear, out)
    st = (sp, sn) if kind == "greedy" else (R.positions_to_steps(tree_pos[:L - 1], L),) * 2
    for i, tok in enumerate((tp, tn)):
        np.testing.assert_allclose(out[i], R.encode_sentence(E, tok, st[i], p, nonlinear)[0][-1], **tol)


def test_greedy_tree_picks_best_scoring_pair():
    """Linear h = x + y except a bonus direction: the pair containing word 0 scores best first."""
    E = np.zeros((4, 2))
    E[0] = [1.0, 0]
    E[1] = [0, 1.0]
    E[2] = [0, 0.5]
    E[3] = [0, 0.2]
    p = {"A1": np.hstack([np.eye(2), np.eye(2)]), "b1": np.zeros(2), "A2": np.zeros((0, 0)),
         "b2": np.zeros(0), "w": np.array([0.0, 1.0]), "w0": 0.0}
    tok = np.array([3, 1, 2, 0])
    pos = K.greedy_positions(E, tok, p["A1"], p["b1"], p["A2"], p["b2"], p["w"], False)
    # pairs (3,1): 1.2, (1,2): 1.5, (2,0): 0.5 -> merge position 1 first
    assert pos[0] == 1
    np.testing.assert_array_equal(pos, R.greedy_positions(E, tok, p, False))


@pytest.mark.parametrize("nonlinear", [False, True])
def test_greedy_steps_equal_the_scan_of_algorithm_4(nonlinear):
    """The heap-based greedy tree merges the same pairs as scanning every pair at every step
    (ties included: a zero score vector makes every pair tie, leftmost first)."""
    rng = np.random.default_rng(3)
    d, V, H = 6, 30, 5
    E = rng.standard_normal((V, d))
    A1 = rng.standard_normal((H if nonlinear else d, 2 * d)) * 0.4
    b1 = rng.standard_normal(A1.shape[0]) * 0.1
    A2 = rng.standard_normal((d, H)) * 0.4 if nonlinear else np.zeros((0, 0))
    b2 = rng.standard_normal(d) * 0.1 if nonlinear else np.zeros(0)
    for w in (rng.standard_normal(d), np.zeros(d)):
        for L in (1, 2, 3, 7, 40):
            tok = rng.integers(0, V, L)
            tok[L // 2:] = tok[0] if L > 3 else tok[L // 2:]       # repeated words: equal pairs
            ref = K.positions_to_steps(K.greedy_positions(E, tok, A1, b1, A2, b2, w, nonlinear), L)
            np.testing.assert_array_equal(K.greedy_steps(E, tok, A1, b1, A2, b2, w, nonlinear), ref)


def test_positions_to_steps_matches_the_list_reference_for_random_trees():
    for L in (1, 2, 5, 33, 200):
        pos = R.random_positions(L, np.random.default_rng(L))
        np.testing.assert_array_equal(K.positions_to_steps(pos, L), R.positions_to_steps(pos, L))


def test_very_long_sentences_encode_in_about_linear_time():
    """Issue #29: fit and transform were quadratic in sentence length (300k tokens: 95 s with the
    left tree); every tree now builds in O(l log l) with O(l) compositions. 200,000 tokens, each
    tree, in well under the time a quadratic build would need."""
    import time

    from linxling import CompressTree
    words = [f"w{i % 50}" for i in range(300)]
    m = CompressTree(n_components=8, n_epochs=1, random_state=0, show_progress=False).fit(
        [" ".join(words[i:i + 12]) for i in range(0, 288, 3)])
    long_text = " ".join(f"w{i % 50}" for i in range(200_000))
    for tree in ("left", "random", "greedy"):
        m.set_params(tree=tree)
        t = time.perf_counter()
        z = m.transform([long_text])
        assert z.shape == (1, 8) and np.all(np.isfinite(z))
        assert time.perf_counter() - t < 30, tree


def test_very_long_sentences_train_in_about_linear_time():
    """Issue #29, the fit side: an epoch over one 100,000-token sentence (whole, window=None)
    builds both trees of the pair and back-propagates through them in O(l log l), every tree;
    a quadratic build took ~10 s at 40,000 tokens and would need minutes here."""
    import time

    from linxling import CompressTree
    long_text = " ".join(f"w{i % 50}" for i in range(100_000))
    short = [" ".join(f"w{(i + j) % 50}" for j in range(6)) for i in range(20)]
    for tree in ("left", "random", "greedy"):
        t = time.perf_counter()
        m = CompressTree(n_components=8, n_epochs=1, window=None, tree=tree, random_state=0,
                         show_progress=False).fit(short + [long_text])
        assert time.perf_counter() - t < 30, tree
        assert np.all(np.isfinite(m.embeddings_)) and len(m.loss_curve_) == 1
