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


def test_chapters_and_blocks_join_consecutive_verses_of_one_chapter():
    """``--unit chapter`` / ``--unit N`` (benchmarks.concept_defaults._Chapters): the verses of a
    chapter joined in order, or blocks of N of them; a block never spans two chapters."""
    import argparse
    from types import SimpleNamespace

    import pytest

    from benchmarks.concept_defaults import _Chapters, parse_unit

    keys = [(1, 1, 1), (1, 1, 2), (1, 1, 3), (1, 2, 1), (1, 2, 2), (2, 1, 1)]
    corpus = SimpleNamespace(languages=["en", "es"], keys=keys,
                             texts={"en": [f"e{k}" for k in range(6)], "es": [f"s{k}" for k in range(6)]})
    ch = _Chapters(corpus)
    assert ch.keys == [(1, 1), (1, 2), (2, 1)]
    assert ch.texts["en"] == ["e0 e1 e2", "e3 e4", "e5"] and ch.texts["es"] == ["s0 s1 s2", "s3 s4", "s5"]
    texts, langs, concepts = ch.concept_documents()
    assert texts[:3] == ch.texts["en"] and langs == ["en"] * 3 + ["es"] * 3 and concepts == [0, 1, 2] * 2
    two = _Chapters(corpus, 2)
    assert two.texts["en"] == ["e0 e1", "e2", "e3 e4", "e5"]
    assert parse_unit("chapter") == "chapter" and parse_unit("1") == "verse" and parse_unit("4") == 4
    for bad in ("0", "-2", "verses", "2.5"):
        with pytest.raises(argparse.ArgumentTypeError, match="must be 'verse', 'chapter' or a positive number"):
            parse_unit(bad)
