"""benchmarks.paraphrase: the score a default is chosen by, on vectors with known answers."""
from __future__ import annotations

import numpy as np

from benchmarks.paraphrase import paraphrase_score


def test_identical_sides_score_one_and_shuffled_sides_score_near_chance():
    rng = np.random.default_rng(0)
    texts = [f"t{i}" for i in range(300)]
    V = rng.standard_normal((300, 20))
    table = dict(zip(texts, V, strict=True))
    para = [f"p{i}" for i in range(300)]
    table.update(zip(para, V + 0.01 * rng.standard_normal((300, 20)), strict=True))

    def embed(batch):
        return np.stack([table[t] for t in batch])

    s = paraphrase_score(embed, texts, para)
    assert s["P@1"] == 1.0 and s["MRR"] == 1.0
    assert s["kjv->para"]["P@1"] == 1.0 and s["para->kjv"]["P@1"] == 1.0
    shuffled = [para[i] for i in rng.permutation(300)]
    s = paraphrase_score(embed, texts, shuffled)
    assert s["P@1"] < 0.05                      # chance 1/300; a few fixed points of the permutation


def test_centring_removes_a_shared_offset():
    """Each side is centred before the cosine: a large common offset on one side (what a
    model's mean vector adds to every text) does not change the ranking."""
    rng = np.random.default_rng(1)
    V = rng.standard_normal((200, 10))
    a = [f"a{i}" for i in range(200)]
    b = [f"b{i}" for i in range(200)]
    table = dict(zip(a, V, strict=True))
    table.update(zip(b, V + 100.0, strict=True))
    s = paraphrase_score(lambda batch: np.stack([table[t] for t in batch]), a, b)
    assert s["P@1"] == 1.0


def test_sizes_sample_the_fitted_verses_in_corpus_order():
    """``--sizes N``: N of the fitted verses drawn by ``default_rng(0)``, kept in corpus order,
    the same draw every run (the README's size rows rest on it); all of them for None or N >=
    their number."""
    from benchmarks.paraphrase import sample_fit
    fit = [f"v{i}" for i in range(1000)]
    s = sample_fit(fit, 300)
    assert len(s) == len(set(s)) == 300 and s == sorted(s, key=lambda t: int(t[1:]))
    assert s == sample_fit(fit, 300) and sample_fit(fit, None) == fit and sample_fit(fit, 5000) == fit
