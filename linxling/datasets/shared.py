"""Loaders for the evaluation data in the shared data folder (SIB-200, Tatoeba, STS-17).

The folder is ``path`` if given, else ``$LINXLING_SHARED_DATA``, else ``<repo>/../shared/data``
(its layout is described in that folder's ``README.md``). Files are read in place, never
copied. A missing file raises :class:`FileNotFoundError` naming the expected path.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from linxling._validation import tsv_fields

__all__ = ["shared_data_dir", "load_sib200", "load_tatoeba", "load_sts17", "read_sts",
           "SIB200_LANGUAGES", "TATOEBA_LANGUAGES", "STS17_TRACKS"]

#: SIB-200 folder names, keyed by ISO 639-1 code (the folder name itself is accepted too).
SIB200_LANGUAGES = {
    "en": "eng_Latn", "de": "deu_Latn", "fr": "fra_Latn", "es": "spa_Latn", "it": "ita_Latn",
    "da": "dan_Latn", "vi": "vie_Latn", "ru": "rus_Cyrl", "zh": "zho_Hans", "ar": "arb_Arab",
    "sw": "swh_Latn", "tr": "tur_Latn",
}
#: Tatoeba ISO 639-3 codes keyed by ISO 639-1 (the 3-letter code is accepted too).
TATOEBA_LANGUAGES = {
    "de": "deu", "fr": "fra", "es": "spa", "it": "ita", "da": "dan", "vi": "vie", "ru": "rus",
    "zh": "cmn", "ar": "ara", "sw": "swh", "tr": "tur",
}
#: STS-17 track -> file name.
STS17_TRACKS = {
    "2": "track2.ar-en.tsv", "3": "track3.es-es.tsv", "4a": "track4a.es-en.tsv",
    "4b": "track4b.es-en.tsv", "5": "track5.en-en.tsv",
}
_STS17_ALIASES = {"ar-en": "2", "en-ar": "2", "es-es": "3", "en-en": "5"}


def shared_data_dir(path: str | os.PathLike | None = None) -> Path:
    """The shared data folder: ``path``, ``$LINXLING_SHARED_DATA`` or ``<repo>/../shared/data``."""
    if path is not None:
        return Path(path)
    env = os.environ.get("LINXLING_SHARED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _require(file: Path, what: str) -> Path:
    if not file.is_file():
        raise FileNotFoundError(
            f"{what} not found: expected the file {file}. Point LINXLING_SHARED_DATA (or the "
            f"path argument) at the shared data folder that holds sib200/, tatoeba/, sts17/, wikt3l/, muse/.")
    return file


def _read_lines(file: Path) -> list[str]:
    with open(file, encoding="utf-8", newline="") as fh, _utf8(file):
        return [line.rstrip("\r\n") for line in fh]


def _code(code: Any, table: dict[str, str]) -> Any:
    """A dataset's own code for ``code``: a key of ``table`` (ISO 639-1) or one of its values,
    matched in any case and without surrounding spaces (``"EN"``, ``"ENG_LATN"``), as
    :func:`linxling.datasets.load_bible` does; anything else is returned as given."""
    if not isinstance(code, str):
        return code
    folded = code.strip().casefold()
    for key, value in table.items():
        if folded in (key.casefold(), value.casefold()):
            return value
    return code


@contextmanager
def _utf8(path: str | os.PathLike):
    """Turn a UnicodeDecodeError while reading ``path`` into a ValueError naming the file."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise ValueError(f"{os.fspath(path)}: not valid UTF-8 ({exc})") from exc


def load_sib200(lang: str, split: str = "train", path: str | os.PathLike | None = None
                ) -> tuple[np.ndarray, list[str], list[str]]:
    """SIB-200 topic classification: ``(index_ids, categories, texts)``.

    ``lang`` is an ISO 639-1 code (``"en"``) or a FLORES code (``"eng_Latn"``); ``split`` is
    ``"train"`` (701 rows), ``"dev"`` (99) or ``"test"`` (204). ``index_ids`` (int64) align
    rows across languages.
    """
    if split not in ("train", "dev", "test"):
        raise ValueError(f"split must be 'train', 'dev' or 'test', got {split!r}")
    folder = _code(lang, SIB200_LANGUAGES)
    if folder not in SIB200_LANGUAGES.values():
        raise ValueError(f"unknown SIB-200 language {lang!r}; known: "
                         + ", ".join(f"{k} ({v})" for k, v in SIB200_LANGUAGES.items()))
    file = _require(shared_data_dir(path) / "sib200" / folder / f"{split}.tsv", f"SIB-200 {folder} {split}")
    lines = _read_lines(file)
    if not lines or lines[0].split("\t")[:3] != ["index_id", "category", "text"]:
        raise ValueError(f"{file}: expected the header 'index_id<TAB>category<TAB>text'")
    ids, cats, texts = [], [], []
    for n, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        parts = tsv_fields(line, 3, f"{file}:{n}", "index_id, category, text", maxsplit=2)
        try:
            ids.append(int(parts[0]))
        except ValueError:
            raise ValueError(f"{file}:{n}: index_id {parts[0]!r} is not an integer") from None
        cats.append(parts[1])
        texts.append(parts[2])
    return np.asarray(ids, dtype=np.int64), cats, texts


def load_tatoeba(xxx: str, path: str | os.PathLike | None = None) -> tuple[list[str], list[str]]:
    """Tatoeba xxx-eng test set: ``(xxx_sentences, eng_sentences)``, line-aligned pairs: 1,000 for
    every language but Swahili (``swh``: 390, the size of the LASER test set).

    ``xxx`` is the ISO 639-3 code used in the file names (``"deu"``, ``"cmn"``, ...) or an
    ISO 639-1 code (``"de"``, ``"zh"``, ...).
    """
    code = _code(xxx, TATOEBA_LANGUAGES)
    if code not in TATOEBA_LANGUAGES.values():
        raise ValueError(f"unknown Tatoeba language {xxx!r}; known: "
                         + ", ".join(f"{k} ({v})" for k, v in TATOEBA_LANGUAGES.items()))
    base = shared_data_dir(path) / "tatoeba"
    src = _read_lines(_require(base / f"tatoeba.{code}-eng.{code}", f"Tatoeba {code}-eng ({code} side)"))
    eng = _read_lines(_require(base / f"tatoeba.{code}-eng.eng", f"Tatoeba {code}-eng (eng side)"))
    if len(src) != len(eng):
        raise ValueError(f"Tatoeba {code}-eng: {len(src)} {code} lines but {len(eng)} eng lines")
    return src, eng


def load_sts17(track: str, path: str | os.PathLike | None = None
               ) -> tuple[np.ndarray, list[str], list[str]]:
    """SemEval-2017 STS track: ``(gold, sentences1, sentences2)``, gold (float64) in [0, 5].

    ``track`` is ``"2"`` (ar-en), ``"3"`` (es-es), ``"4a"`` (es-en, SNLI), ``"4b"`` (es-en,
    WMT), ``"5"`` (en-en); ``"track2"`` or ``"ar-en"`` style names are accepted too.
    """
    key = str(track).lower()
    key = key[len("track"):] if key.startswith("track") else key
    key = _STS17_ALIASES.get(key, key)
    if key not in STS17_TRACKS:
        raise ValueError(f"unknown STS-17 track {track!r}; known: "
                         + ", ".join(f"{k} ({v})" for k, v in STS17_TRACKS.items()))
    file = _require(shared_data_dir(path) / "sts17" / STS17_TRACKS[key], f"STS-17 track {key}")
    return read_sts(file)


def read_sts(path: str | os.PathLike) -> tuple[np.ndarray, list[str], list[str]]:
    """Read an STS file with lines ``gold<TAB>sentence1<TAB>sentence2`` (e.g. SemEval-2017).

    ``path`` is taken as given (relative paths from the working directory). For the shared data
    folder use :func:`linxling.datasets.shared_data_dir`, which honours ``LINXLING_SHARED_DATA``
    from any working directory: ``read_sts(shared_data_dir() / "sts17" / "track4a.es-en.tsv")``
    (or :func:`linxling.datasets.load_sts17`).

    The columns' languages are per file, not in the order of the file name: in SemEval-2017's
    crosslingual tracks ``track2.ar-en`` and ``track4b.es-en`` have the **English** sentence
    first, ``track4a.es-en`` the Spanish one. Embed each column in its own language (reading
    track 2 as Arabic-then-English gives every pair a zero vector on one side).

    Returns
    -------
    gold : ndarray of float64, shape (n,)
    s1, s2 : list of str, length n

    Raises
    ------
    ValueError
        On a line without exactly 3 tab-separated fields, a non-numeric or non-finite gold
        score, a file without a pair, or a file that is not UTF-8.
    FileNotFoundError
        If ``path`` does not exist (the message names the shared data folder).
    IsADirectoryError
        If ``path`` is a directory.
    """
    gold, s1, s2 = [], [], []
    if os.path.isdir(path):                 # was reported as "not found"
        raise IsADirectoryError(f"STS file path {os.fspath(path)} is a directory: give the file")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"STS file not found: {os.fspath(path)} (relative to {os.getcwd()}); for the "
                                f"shared data use linxling.datasets.shared_data_dir() / 'sts17' / ..., "
                                f"currently {shared_data_dir()} (set LINXLING_SHARED_DATA)")
    with open(path, encoding="utf-8") as fh, _utf8(path):
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = tsv_fields(line, 3, f"{os.fspath(path)}:{lineno}", "gold, sentence1, sentence2")
            try:
                score = float(fields[0])
            except ValueError as exc:
                raise ValueError(f"{os.fspath(path)}:{lineno}: gold score {fields[0]!r} is not a number") from exc
            if not np.isfinite(score):
                raise ValueError(f"{os.fspath(path)}:{lineno}: gold score {fields[0]!r} is not finite")
            gold.append(score)
            s1.append(fields[1])
            s2.append(fields[2])
    if not gold:               # was three empty results, which sts then refused naming no file
        raise ValueError(f"{os.fspath(path)}: no sentence pair (the file is empty or blank)")
    return np.asarray(gold, dtype=np.float64), s1, s2
