"""Evaluation: blocked retrieval vs a dense reference, STS, MUSE dictionaries and word translation."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from linxling.evaluate import (muse_split, read_muse_dictionary, read_sts, retrieval, sts,
                               word_translation)


# --------------------------------------------------------------------------- dense reference
def _cos_matrix(Q, C):
    Q = np.asarray(Q, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    qn = np.linalg.norm(Q, axis=1)
    cn = np.linalg.norm(C, axis=1)
    S = np.zeros((len(Q), len(C)))
    for i in range(len(Q)):
        for j in range(len(C)):
            if qn[i] > 0 and cn[j] > 0:
                S[i, j] = Q[i] @ C[j] / (qn[i] * cn[j])
    return S


def reference_retrieval(Q, C, gold=None, ks=(1, 5, 10), similarity="cosine", knn=10):
    """Obviously-correct dense retrieval: full score matrix, per-query loop over candidates."""
    S = _cos_matrix(Q, C)
    if similarity == "csls":
        r_q = np.array([np.mean(sorted(row)[::-1][:knn]) for row in S])
        r_c = np.array([np.mean(sorted(col)[::-1][:knn]) for col in S.T])
        S = 2 * S - r_q[:, None] - r_c[None, :]
    gold = np.arange(len(Q)) if gold is None else np.asarray(gold)
    n_c = len(C)
    zero_q, zero_c = ~np.any(Q != 0, axis=1), ~np.any(C != 0, axis=1)
    ranks = np.array([n_c + 1 if zero_q[i] or zero_c[gold[i]] else   # no direction: never a hit
                      1 + sum(S[i, j] > S[i, gold[i]] for j in range(n_c)) for i in range(len(Q))])
    out = {f"P@{k}": float(np.mean(ranks <= min(k, n_c))) for k in ks}
    out["MRR"] = float(np.mean(np.where(ranks <= n_c, 1.0 / ranks, 0.0)))
    out["n_zero_queries"], out["n_zero_candidates"] = int(zero_q.sum()), int(zero_c.sum())
    return out, ranks


def _tied_vectors(rng, n, d=8):
    """Unit vectors with entries in {0, +-1/2} (4 non-zeros): every dot product and CSLS sum is
    exact in floating point, and many scores tie exactly."""
    X = np.zeros((n, d))
    for i in range(n):
        idx = rng.choice(d, 4, replace=False)
        X[i, idx] = rng.choice([-0.5, 0.5], 4)
    return X


def _check_equal(Q, C, gold=None, similarity="cosine", knn=3, block_size=7, ks=(1, 2, 5, 10)):
    ref, ref_ranks = reference_retrieval(Q, C, gold, ks, similarity, knn)
    got = retrieval(Q, C, gold, ks, similarity, knn, block_size, return_ranks=True)
    np.testing.assert_array_equal(got.pop("ranks"), ref_ranks)
    assert got == pytest.approx(ref)
    assert list(got) == [f"P@{k}" for k in ks] + ["MRR", "n_zero_queries", "n_zero_candidates"]


@pytest.mark.parametrize("similarity", ["cosine", "csls"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blocked_equals_reference_random(rng, similarity, dtype):
    Q = rng.standard_normal((41, 6))
    C = rng.standard_normal((53, 6))
    C[:41] += 0.8 * Q  # make gold candidates related to their queries
    gold = rng.integers(0, 53, 41)
    for g in (None, gold):
        _check_equal(Q.astype(dtype), C.astype(dtype), g, similarity, knn=4, block_size=5)
        _check_equal(Q.astype(dtype), C.astype(dtype), g, similarity, knn=4, block_size=4096)


@pytest.mark.parametrize("similarity", ["cosine", "csls"])
@pytest.mark.parametrize("block_size", [1, 3, 16, 1000])
def test_blocked_equals_reference_ties(similarity, block_size):
    rng = np.random.default_rng(1)
    Q = _tied_vectors(rng, 30)
    C = np.vstack([Q[:10], _tied_vectors(rng, 25)])  # exact duplicates + random tied scores
    C[20] = C[21]
    gold = rng.integers(0, len(C), len(Q))
    for g in (None, gold):
        for dtype in (np.float64, np.float32):
            _check_equal(Q.astype(dtype), C.astype(dtype), g, similarity, knn=3, block_size=block_size)


def test_zero_vectors_give_zero_cosine(rng):
    Q = rng.standard_normal((6, 4))
    C = rng.standard_normal((8, 4))
    Q[2] = 0
    C[5] = 0
    for sim in ("cosine", "csls"):
        _check_equal(Q, C, rng.integers(0, 8, 6), sim, knn=2, block_size=4)
    res = retrieval(np.zeros((3, 4)), np.zeros((3, 4)), return_ranks=True)
    np.testing.assert_array_equal(res["ranks"], [4, 4, 4])  # no direction: never a hit
    assert res["P@1"] == res["P@10"] == res["MRR"] == 0.0
    assert res["n_zero_queries"] == 3 and res["n_zero_candidates"] == 3


def test_directionless_queries_are_misses_and_counted(rng):
    """100 all-zero queries (empty or out-of-vocabulary texts) used to score P@1 = 1.0."""
    C = rng.standard_normal((100, 16))
    for sim in ("cosine", "csls"):
        res = retrieval(np.zeros((100, 16)), C, similarity=sim)
        assert res["P@1"] == res["P@10"] == res["MRR"] == 0.0
        assert res["n_zero_queries"] == 100 and res["n_zero_candidates"] == 0
    Q = C + 0.01 * rng.standard_normal(C.shape)
    Q[:10] = 0
    C2 = C.copy()
    C2[10:15] = 0                           # the gold candidates of queries 10..14 have no direction
    res = retrieval(Q, C2, ks=(1,), return_ranks=True)
    assert res["P@1"] == pytest.approx(0.85)
    assert (res["ranks"][:15] == 101).all() and res["n_zero_candidates"] == 5


def test_perfect_and_known_ranks():
    C = np.eye(4)
    Q = np.array([[1.0, 0, 0, 0], [1.0, 0.9, 0, 0], [0, 0, 0, 1.0]])
    res = retrieval(Q, C, gold=[0, 1, 2], ks=(1, 2), return_ranks=True)
    np.testing.assert_array_equal(res["ranks"], [1, 2, 2])
    assert res["P@1"] == pytest.approx(1 / 3)
    assert res["P@2"] == 1.0
    assert res["MRR"] == pytest.approx((1 + 0.5 + 0.5) / 3)


def test_csls_never_builds_full_matrix(rng, monkeypatch):
    """No array the top-k passes read is larger than one block of scores (block_size × n_c)."""
    import linxling.evaluate._retrieval as mod

    Q = rng.standard_normal((100, 5))
    C = rng.standard_normal((120, 5))
    seen = []
    real_argmax = np.argmax

    class XP:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def argmax(a, *args, **kw):        # the top-k passes over each score block
            seen.append(a.shape)
            return real_argmax(a, *args, **kw)

    real_get = mod.get_namespace

    def fake_get(*arrays):
        ns = real_get(*arrays)
        return type(ns)(ns.name, XP(), ns.sparse, ns.linalg)

    monkeypatch.setattr(mod, "get_namespace", fake_get)
    got = retrieval(Q, C, similarity="csls", knn=5, block_size=16)
    monkeypatch.undo()
    assert got == pytest.approx(reference_retrieval(Q, C, similarity="csls", knn=5)[0])
    assert seen and max(s[0] * s[1] for s in seen) <= 16 * 120        # one block of scores at most


@pytest.mark.parametrize("kwargs, match", [
    ({"queries": np.full((3, 2), np.nan)}, "queries"),
    ({"candidates": np.array([[np.inf, 0.0]] * 3)}, "candidates"),
    ({"candidates": np.ones((3, 5))}, "dimension"),
    ({"gold": [0, 1, 3]}, "gold"),
    ({"gold": [0, 1, -1]}, "gold"),
    ({"gold": [0, 1]}, "gold"),
    ({"ks": (0, 1)}, "ks"),
    ({"similarity": "csls", "knn": 0}, "knn"),
    ({"similarity": "csls", "knn": 4}, "knn"),
    ({"block_size": 0}, "block_size"),
    ({"similarity": "dot"}, "similarity"),
    ({"candidates": np.ones((2, 2))}, "candidates"),
    ({"queries": np.ones(3)}, "queries"),
])
def test_retrieval_validation(kwargs, match):
    args = {"queries": np.ones((3, 2)), "candidates": np.ones((3, 2))} | kwargs
    with pytest.raises(ValueError, match=match):
        retrieval(**args)


def test_sparse_embeddings_and_none_labels_are_named():
    """A sparse matrix gave ``must be a real numeric array, got dtype object``; a None label in
    cldc ``'<' not supported between instances of 'NoneType'``."""
    import scipy.sparse as sp

    from linxling.evaluate import cldc
    X = np.eye(4)
    with pytest.raises(TypeError, match="queries must be a dense array .*got a sparse csr_matrix"):
        retrieval(sp.csr_matrix(X), X)
    with pytest.raises(TypeError, match="train_X must be a dense array .*got a sparse"):
        cldc(sp.csr_matrix(X), [0, 1, 0, 1], X, [0, 1, 0, 1])
    with pytest.raises(TypeError, match=r"train_y\[1\] is None: every document needs a label"):
        cldc(X, ["a", None, "a", "b"], X, ["a", "b", "a", "b"])



def test_texts_given_for_embeddings_say_to_embed_them():
    """retrieval(en_texts, es_texts) said "queries must be a real numeric array, got dtype <U8"."""
    from linxling.evaluate import sts
    with pytest.raises(TypeError, match=r"queries holds texts, but embedding vectors \(n, d\) go here: "
                                        r"embed them first, e\.g\. model\.transform\(texts, language\)$"):
        retrieval(["a house", "a dog"], np.eye(2))
    with pytest.raises(TypeError, match="candidates holds texts"):
        retrieval(np.eye(2), np.array(["una casa", "un perro"]))
    with pytest.raises(TypeError, match="emb1 holds texts"):
        sts(["a", "b", "c"], np.eye(3), [1.0, 2.0, 3.0])


def test_knn_unchecked_for_cosine():
    assert retrieval(np.eye(3), np.eye(3), knn=100)["P@1"] == 1.0


# --------------------------------------------------------------------------- STS
def test_sts_known_example():
    e1 = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 2.0], [3.0, 1.0]])
    e2 = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [2.0, 1.0], [0.0, 0.0]])
    gold = np.array([5.0, 3.0, 0.5, 4.0, 1.0])
    cos = np.array([1.0, 1 / np.sqrt(2), 0.0, 4 / 5, 0.0])
    res = sts(e1, e2, gold)
    assert res["pearson"] == pytest.approx(scipy.stats.pearsonr(cos, gold)[0])
    assert res["spearman"] == pytest.approx(scipy.stats.spearmanr(cos, gold)[0])
    assert res["n"] == 5 and res["n_zero"] == 1
    res32 = sts(e1.astype(np.float32), e2.astype(np.float32), gold)
    assert res32["pearson"] == pytest.approx(res["pearson"], rel=1e-6)


def test_sts_centre_is_the_plain_protocol_on_mean_free_rows():
    rng = np.random.default_rng(0)
    e1, e2 = rng.normal(size=(30, 4)), rng.normal(size=(30, 4))
    gold = rng.normal(size=30)
    e1[3] = 0.0                                         # no vector: stays out of the mean, cosine 0
    keep = np.linalg.norm(e1, axis=1) > 0
    c1 = e1.copy()
    c1[keep] -= e1[keep].mean(0)
    c2 = e2 - e2.mean(0)
    # the reference: the plain protocol on rows centred by hand
    assert sts(e1, e2, gold, centre=True)["pearson"] == pytest.approx(sts(c1, c2, gold)["pearson"], rel=1e-12)
    # a language offset added to one side changes the plain cosines, not the centred ones
    shifted = np.where(keep[:, None], e1 + 5.0, 0.0)
    assert sts(shifted, e2, gold, centre=True)["pearson"] == pytest.approx(
        sts(e1, e2, gold, centre=True)["pearson"], rel=1e-9)
    assert sts(shifted, e2, gold)["pearson"] != pytest.approx(sts(e1, e2, gold)["pearson"], rel=1e-3)
    assert sts(e1, e2, gold, centre=True)["n_zero"] == 1


def test_sts_validation():
    with pytest.raises(ValueError, match="emb2"):
        sts(np.ones((3, 2)), np.ones((4, 2)), [1, 2, 3])
    with pytest.raises(ValueError, match="gold"):
        sts(np.ones((3, 2)), np.ones((3, 2)), [1, 2])
    with pytest.raises(ValueError, match="emb1"):
        sts(np.full((3, 2), np.nan), np.ones((3, 2)), [1, 2, 3])
    with pytest.raises(TypeError, match="centre must be a bool, got str 'no'"):   # was: truthy, so centred
        sts(np.ones((3, 2)), np.ones((3, 2)), [1, 2, 3], centre="no")
    with pytest.raises(ValueError, match="gold is constant"):          # was: NaN, SciPy's warning only
        sts(np.eye(3), np.eye(3)[::-1], np.ones(3))


def test_read_sts(shared_data, tmp_path):
    gold, s1, s2 = read_sts(shared_data / "sts17" / "track5.en-en.tsv")
    assert gold.shape == (250,) and len(s1) == len(s2) == 250
    assert gold.min() >= 0 and gold.max() <= 5
    assert s1[0] == "A person is on a baseball team."
    bad = tmp_path / "bad.tsv"
    bad.write_text("1.0\tonly two\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.tsv:1"):
        read_sts(bad)
    with pytest.raises(IsADirectoryError, match="is a directory: give the file"):   # was "not found"
        read_sts(tmp_path)
    with pytest.raises(IsADirectoryError, match="MUSE dictionary path .* is a directory"):
        read_muse_dictionary(tmp_path)


# --------------------------------------------------------------------------- MUSE
def test_muse_split_en_de(shared_data):
    pairs = read_muse_dictionary(shared_data / "muse" / "en-de.txt")
    assert pairs[0] == ("the", "die")
    train, test = muse_split(pairs)
    train_src = list(dict.fromkeys(s for s, _ in train))
    test_src = list(dict.fromkeys(s for s, _ in test))
    assert len(train_src) == 5000
    assert len(test_src) == 1500
    assert not set(train_src) & set(test_src)
    all_src = list(dict.fromkeys(s for s, _ in pairs))
    assert train_src == all_src[:5000] and test_src == all_src[5000:6500]
    first = set(all_src[:6500])
    assert len(train) + len(test) == sum(p[0] in first for p in pairs)


def test_muse_split_small():
    pairs = [("a", "1"), ("b", "2"), ("a", "3"), ("c", "4"), ("d", "5"), ("b", "6")]
    assert muse_split(pairs, n_train=2, n_test=1) == ([("a", "1"), ("b", "2"), ("a", "3"), ("b", "6")],
                                                       [("c", "4")])


@pytest.mark.parametrize("pairs, exc, match", [
    (["ab", "cd"], ValueError, r"^pairs\[0\] must be a \(source, target\) pair, got 'ab'"),
    ([("a", "1"), ("b", "2", "3")], ValueError, r"^pairs\[1\] must be a \(source, target\) pair"),
    ("en-de.txt", TypeError, r"^pairs must be an iterable of \(source, target\) pairs, got a str"),
])
def test_muse_split_names_what_is_not_a_pair(pairs, exc, match):
    """A two-character string unpacked as a pair ("ab" -> ("a", "b")) in silence, and a
    pair of three failed with Python's "too many values to unpack", naming nothing."""
    with pytest.raises(exc, match=match):
        muse_split(pairs)



def test_a_file_without_a_pair_is_named(tmp_path):
    """An empty or blank dictionary or STS file read as no pairs: muse_split then returned two
    empty lists and sts said "needs at least 2 pairs", neither naming the file."""
    p = tmp_path / "blank.txt"
    p.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"blank.txt: no 'src tgt' pair \(the file is empty or blank\)"):
        read_muse_dictionary(p)
    with pytest.raises(ValueError, match=r"blank.txt: no sentence pair \(the file is empty or blank\)"):
        read_sts(p)


def test_read_muse_malformed(tmp_path):
    p = tmp_path / "d.txt"
    p.write_text("a b\n\nc d e\n", encoding="utf-8")
    with pytest.raises(ValueError, match="d.txt:3"):
        read_muse_dictionary(p)


def test_word_translation_toy():
    src_words = ["cat", "dog", "house", "tree", "unknown"]
    tgt_words = ["Katze", "Hund", "Haus", "Baum", "Mieze"]
    S = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    T = np.array([[0.9, 0.1, 0, 0],   # Katze: nearest to cat
                  [0, 0.5, 1.0, 0],   # Hund: closer to house than to dog
                  [0, 1.0, 0.6, 0],   # Haus: closer to dog than to house
                  [0, 0, 0.2, 1.0],   # Baum: nearest to tree
                  [0.8, 0.3, 0, 0]])  # Mieze: second nearest to cat
    pairs = [("cat", "Mieze"), ("cat", "Katze"), ("dog", "Hund"), ("house", "Haus"), ("tree", "Baum"),
             ("tree", "Wald"), ("fish", "Fisch")]
    res = word_translation(src_words, S, tgt_words, T, pairs, ks=(1, 2))
    # cat: Katze top-1 (correct); dog: Hund ranks 2nd (Haus first); house: Haus 2nd; tree: Baum 1st
    assert res["P@1"] == pytest.approx(0.5)
    assert res["P@2"] == pytest.approx(1.0)
    assert res["MRR"] == pytest.approx((1 + 0.5 + 0.5 + 1) / 4)
    assert res["n_queries"] == 4 and res["n_missing"] == 1
    assert res["n_pairs"] == 5 and res["n_pairs_missing"] == 2


def test_word_translation_csls_matches_reference(rng):
    n_s, n_t, d = 40, 35, 6
    S = rng.standard_normal((n_s, d))
    T = rng.standard_normal((n_t, d))
    src = [f"s{i}" for i in range(n_s)]
    tgt = [f"t{j}" for j in range(n_t)]
    pairs = [(f"s{i}", f"t{j}") for i in range(0, n_s, 3) for j in rng.choice(n_t, 2, replace=False)]
    knn = 5
    cos = _cos_matrix(S, T)
    r_s = np.sort(cos, axis=1)[:, ::-1][:, :knn].mean(axis=1)
    r_t = np.sort(cos, axis=0)[::-1][:knn].mean(axis=0)   # over the whole source vocabulary
    scores = 2 * cos - r_s[:, None] - r_t[None, :]
    ranks = []
    for i in range(0, n_s, 3):
        golds = [int(t[1:]) for s, t in pairs if s == f"s{i}"]
        best = max(scores[i, golds])
        ranks.append(1 + np.sum(scores[i] > best))
    ranks = np.array(ranks)
    res = word_translation(src, S, tgt, T, pairs, ks=(1, 5), similarity="csls", knn=knn, block_size=7)
    assert res["P@1"] == pytest.approx(np.mean(ranks <= 1))
    assert res["P@5"] == pytest.approx(np.mean(ranks <= 5))
    assert res["MRR"] == pytest.approx(np.mean(1 / ranks))
    assert res["n_queries"] == len(range(0, n_s, 3)) and res["n_missing"] == 0


def test_word_translation_errors():
    with pytest.raises(ValueError, match="src_words"):
        word_translation(["a"], np.ones((2, 2)), ["b"], np.ones((1, 2)), [("a", "b")])
    with pytest.raises(ValueError, match="none of the"):
        word_translation(["a"], np.ones((1, 2)), ["b"], np.ones((1, 2)), [("x", "y")])


@pytest.mark.parametrize("similarity", ["cosine", "csls"])
def test_default_blocking_honours_memory_budget(monkeypatch, similarity):
    """With the default block size, peak extra memory stays within the score-block budget."""
    import tracemalloc

    from linxling.evaluate import _retrieval
    budget = 4 * 2 ** 20
    monkeypatch.setattr(_retrieval, "BLOCK_MEMORY", budget)
    rng = np.random.default_rng(0)
    n, d = 6000, 8
    Q = rng.standard_normal((n, d))
    C = Q + 0.1 * rng.standard_normal((n, d))
    full_matrix = n * n * 8                       # what a dense similarity matrix would take: 288 MB
    tracemalloc.start()
    res = retrieval(Q, C, similarity=similarity)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert res["P@1"] > 0.9
    inputs = 4 * n * d * 8                        # normalised copies of Q and C and their likes
    assert peak < 2 * budget + inputs + 8 * n * 16, peak
    assert peak < full_matrix / 20


def test_default_block_on_a_gpu_follows_free_device_memory():
    """On a GPU the score block is sized from DEVICE_BLOCK_MEMORY, capped by a quarter of the
    free device memory and never below the CPU's budget (an array module stand-in: no GPU needed)."""
    from types import SimpleNamespace

    from linxling.evaluate._retrieval import BLOCK_MEMORY, DEVICE_BLOCK_MEMORY, _auto_block_size

    def fake_xp(free):
        return SimpleNamespace(cuda=SimpleNamespace(Device=lambda: SimpleNamespace(mem_info=(free, 2 * free))))

    n, item = 200_000, 4
    assert _auto_block_size(None, n, item) == BLOCK_MEMORY // (3 * n * item) == 223
    assert _auto_block_size(None, n, item, fake_xp(100 * 2 ** 30)) == DEVICE_BLOCK_MEMORY // (3 * n * item) == 2684
    assert _auto_block_size(None, n, item, fake_xp(8 * 2 ** 30)) == 2 * 2 ** 30 // (3 * n * item)
    assert _auto_block_size(None, n, item, fake_xp(2 ** 20)) == 223          # nearly full device
    assert _auto_block_size(None, 10, item, fake_xp(100 * 2 ** 30)) == 4096  # row cap
    assert _auto_block_size(7, n, item, fake_xp(100 * 2 ** 30)) == 7


def test_word_translation_directionless_words_are_misses(rng):
    from linxling.evaluate import word_translation
    words = [f"w{i}" for i in range(20)]
    S = rng.standard_normal((20, 8))
    T = S.copy()
    S[:4] = 0                               # four source words without a direction
    T[4:6] = 0                              # two gold target words without one
    pairs = [(w, w) for w in words]
    res = word_translation(words, S, words, T, pairs, ks=(1,))
    assert res["P@1"] == pytest.approx(14 / 20)
    assert res["n_zero_queries"] == 4 and res["n_queries"] == 20


@pytest.mark.parametrize("dtype, scale", [(np.float32, 1e20), (np.float64, 1e200), (np.float32, 1e-22)])
def test_huge_or_tiny_finite_vectors_keep_their_direction(rng, dtype, scale):
    """Finite rows whose squared norm overflows (or underflows) used to be normalised to zero:
    every candidate counted as 'without a direction' and every query a miss, in silence."""
    C = rng.standard_normal((12, 5))
    Q = C + 0.05 * rng.standard_normal((12, 5))
    ref, ref_ranks = reference_retrieval(Q, C, ks=(1, 5), knn=3)
    for sim in ("cosine", "csls"):
        got = retrieval(Q.astype(dtype), (C * scale).astype(dtype), ks=(1, 5), similarity=sim, knn=3,
                        return_ranks=True)
        assert got["n_zero_candidates"] == 0
        if sim == "cosine":
            np.testing.assert_array_equal(got.pop("ranks"), ref_ranks)
            assert got == pytest.approx(ref)
    A, B, gold = rng.standard_normal((30, 5)), rng.standard_normal((30, 5)), rng.standard_normal(30)
    plain = sts(A.astype(dtype), B.astype(dtype), gold)
    big = sts(A.astype(dtype), (B * scale).astype(dtype), gold)
    assert big["pearson"] == pytest.approx(plain["pearson"], rel=1e-5)
    assert big["n_zero"] == 0


def test_dataset_readers_name_the_file_and_the_problem(tmp_path, monkeypatch):
    monkeypatch.setenv("LINXLING_SHARED_DATA", str(tmp_path))
    # a missing MUSE dictionary said only "[Errno 2] No such file or directory", as read_sts no longer does
    with pytest.raises(FileNotFoundError, match="(?s)en-xx.txt.*LINXLING_SHARED_DATA"):
        read_muse_dictionary(tmp_path / "muse" / "en-xx.txt")
    # a gold score "nan" or "inf" was read as a number, to fail later in sts() without a line number
    nan = tmp_path / "nan.tsv"
    nan.write_text("1.5\ta\tb\nnan\tc\td\n", encoding="utf-8")
    with pytest.raises(ValueError, match="nan.tsv:2: gold score 'nan'"):
        read_sts(nan)
    # a file that is not UTF-8 raised a UnicodeDecodeError that named no file
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("1\tcaf\xe9\tcafe\n".encode("latin-1"))
    with pytest.raises(ValueError, match="latin1.txt.*UTF-8"):
        read_sts(latin1)
    with pytest.raises(ValueError, match="latin1.txt.*UTF-8"):
        read_muse_dictionary(latin1)


def test_word_translation_refuses_strings_for_lists_and_bad_pairs():
    V = np.eye(2)
    # a single string was read as its characters: "ab" gave the vocabulary ["a", "b"]
    with pytest.raises(TypeError, match="src_words"):
        word_translation("ab", V, ["a", "b"], V, [("a", "b")])
    # a pair given as the string "ab" was unpacked into ("a", "b") and scored
    with pytest.raises(ValueError, match=r"pairs\[0\]"):
        word_translation(["a", "b"], V, ["a", "b"], V, ["ab"])
    # a triple gave "too many values to unpack (expected 2)"
    with pytest.raises(ValueError, match=r"pairs\[1\]"):
        word_translation(["a", "b"], V, ["a", "b"], V, [("a", "b"), ("a", "b", "c")])


def test_sts_gold_that_is_not_numbers_is_named():
    # was: "could not convert string to float: 'a'", naming no argument
    with pytest.raises(ValueError, match="gold must hold numbers"):
        sts(np.eye(3), np.eye(3), ["a", "b", "c"])


def test_word_translation_refuses_a_word_given_twice():
    """A target word listed twice had two rows: the gold was the first, and the second (the same
    word, ranked first) counted as a better candidate, so the right translation was a miss."""
    V = np.eye(3)
    pairs = [("c", "x")]
    with pytest.raises(ValueError, match=r"tgt_words has the word 'x' twice \(positions 0 and 2\)"):
        word_translation(["a", "b", "c"], V, ["x", "y", "x"], V, pairs, ks=(1,))
    with pytest.raises(ValueError, match=r"src_words has the word 'a' twice"):
        word_translation(["a", "b", "a"], V, ["x", "y", "z"], V, pairs, ks=(1,))
    # distinct words: the same data scores as expected
    assert word_translation(["a", "b", "c"], V, ["z", "y", "x"], V, pairs, ks=(1,))["P@1"] == 1.0


def test_word_translation_refuses_a_word_that_is_not_a_str():
    """Words were stored as str(w) but the pairs looked up as given: src_words [1, 2, 3] with
    the pair (3, "x") skipped that pair as out of vocabulary, without a word."""
    V = np.eye(3)
    with pytest.raises(TypeError, match=r"^src_words\[0\] is a int \(1\), not a str"):
        word_translation([1, 2, 3], V, ["z", "y", "x"], V, [(3, "x"), ("a", "y")], ks=(1,))
    with pytest.raises(TypeError, match=r"^tgt_words\[2\] is a bytes"):
        word_translation(["a", "b", "c"], V, ["z", "y", b"x"], V, [("c", "z")], ks=(1,))


def test_collapsed_candidates_warn_that_ties_favour_the_gold(rng):
    """Ties count in the gold's favour, so vectors collapsed to one direction scored P@1 1.0 in
    silence (CL-LSI on identical training sentences: held-out Bible P@1 0.83, 0.0 with ties
    counted against the gold). Now a warning naming the cause; varied candidates, a few
    duplicates among them and zero rows (already misses) say nothing."""
    import warnings
    Q = rng.standard_normal((40, 5))
    with pytest.warns(UserWarning, match=r"^retrieval: the 40 candidates have only 1 distinct direction \(vectors "
                                         r"collapsed, or one text repeated\); a gold candidate tied with others "
                                         r"ranks first, so P@k and the MRR overstate such a model"):
        assert retrieval(Q, np.ones((40, 5)), ks=(1,))["P@1"] == 1.0
    with pytest.warns(UserWarning, match=r"only 3 distinct directions"):
        retrieval(Q, rng.standard_normal((3, 5))[np.arange(40) % 3], ks=(1,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        C = rng.standard_normal((40, 5))
        C[1] = C[0]
        C[2:30] = 0.0
        retrieval(Q, C, ks=(1,))
        retrieval(Q, rng.standard_normal((40, 5)), ks=(1,))


def test_word_translation_of_collapsed_vectors_warns():
    """word_translation scored 200 identical target vectors P@1 1.0 in silence (ties favour the
    gold word), as retrieval did; the same warning now, naming word_translation."""
    from linxling.evaluate import word_translation
    words = [f"w{i}" for i in range(200)]
    V = np.ones((200, 8))
    with pytest.warns(UserWarning, match=r"^word_translation: the 200 target word vectors have only 1 distinct "
                                         r"direction .*overstate such a model"):
        assert word_translation(words, V, words, V, [(w, w) for w in words])["P@1"] == 1.0
