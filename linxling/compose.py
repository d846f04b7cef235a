"""Multilingual models inside scikit-learn's machinery: Pipelines and grid searches.

A linxling model is fitted on several languages at once and embeds one language at a time, so it
does not have scikit-learn's ``fit(X, y)`` / ``transform(X)`` shape. Two adapters give it that:

- :class:`LanguageView` (``model.for_language("es")``): a *fitted* model seen as a transformer of
  one language's texts, to put in a ``Pipeline`` (a classifier trained on its embeddings, ...).
- :class:`MultilingualFit`: ``X`` is a list of ``(text, language)`` pairs and ``y`` the concept
  of each (documents with the same concept are translations), so that ``fit``, ``transform`` and
  ``score`` take one input and a grid search can tune the model's parameters: ``score`` is the
  crosslingual retrieval P@1 of the held-out documents (each document's nearest neighbour in every
  other language should share its concept).

>>> from sklearn.model_selection import GridSearchCV, GroupKFold
>>> from linxling import Cr5
>>> from linxling.compose import MultilingualFit
>>> search = GridSearchCV(MultilingualFit(Cr5(n_components=2, show_progress=False)),
...                       {"estimator__alpha": [0.1, 1.0]}, cv=GroupKFold(3))
>>> # search.fit(pairs, concepts, groups=concepts)   # folds never split a concept

``groups=concepts`` with ``GroupKFold`` keeps every concept's documents in one fold, so the score
is measured on concepts the fold's model never saw (docs/api.md, "Pipelines and grid search").
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from linxling._validation import check_int, unknown_language

__all__ = ["LanguageView", "MultilingualFit"]


class LanguageView(TransformerMixin, BaseEstimator):
    """A fitted multilingual model as a transformer of texts in one language.

    Parameters
    ----------
    model : a fitted linxling model
    language : str
        The language whose texts ``transform`` embeds.

    Notes
    -----
    ``fit`` only checks that the model is fitted and knows ``language`` (the model is not refitted:
    fit it on all its languages first); ``transform(texts)`` is ``model.transform(texts,
    language)``. ``set_output(transform="pandas")`` gives data frames with the model's column names.
    ``clone`` gives a view of the same fitted model, so a Pipeline holding a view can be
    cross-validated or grid-searched (its other steps are refitted).
    """

    def __init__(self, model: Any, language: str) -> None:
        self.model = model
        self.language = language

    def fit(self, X: Any = None, y: Any = None) -> LanguageView:
        self.model._check_fitted()
        langs = getattr(self.model, "languages_", None)
        if langs is not None and self.language not in langs:
            raise unknown_language(self.language, langs)
        self.n_features_in_ = 1                      # one column of texts
        return self

    def transform(self, X: Sequence[str]) -> np.ndarray:
        from linxling.cli import embed_texts
        return np.asarray(embed_texts(self.model, list(_texts(X, "X")), self.language))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        return self.model.get_feature_names_out()

    def __sklearn_clone__(self) -> LanguageView:
        """A view of the same fitted model: ``clone`` (``cross_val_score``, ``GridSearchCV`` of a
        Pipeline) cloned the model too, unfitted, and the clone's ``fit`` raised NotFittedError.
        The model is never refitted through a view, so the clones share it (as scikit-learn's
        ``FrozenEstimator``)."""
        twin = type(self)(model=self.model, language=self.language)
        if hasattr(self, "_sklearn_output_config"):   # set_output, as scikit-learn's clone keeps it
            twin._sklearn_output_config = dict(self._sklearn_output_config)
        return twin

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = False
        return tags


def _texts(X: Any, name: str) -> list[str]:
    if isinstance(X, str):
        raise TypeError(f"{name} must be a sequence of texts, not a single str")
    if hasattr(X, "iloc"):                       # a one-column DataFrame or a Series
        X = X.iloc[:, 0] if getattr(X, "ndim", 1) == 2 else X
    out = list(X)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] is a {type(t).__name__}, not a str")
    return out


def _pairs(X: Any) -> tuple[list[str], list[str]]:
    texts, langs = [], []
    for i, item in enumerate(X):
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], str)):
            raise TypeError(f"X[{i}] must be a (text, language) pair of str, got {item!r}")
        texts.append(item[0])
        langs.append(item[1])
    if not texts:
        raise ValueError("X is empty")
    return texts, langs


class MultilingualFit(BaseEstimator):
    """A multilingual model with scikit-learn's one-input ``fit(X, y)`` / ``transform(X)`` / ``score``.

    Parameters
    ----------
    estimator : an unfitted linxling model
        Cloned in ``fit`` (``estimator_``). Concept models (Cr5, CL-LSI) are fitted on the
        documents with their concepts; models of row-aligned sentences (b-WMF, BiCVM, ...) on the
        concepts that have a document in every language, one row per concept (x-WMF: each other
        language's rows paired with its ``pivot_language``'s).
    k : int, default 1
        ``score`` is P@k.

    Notes
    -----
    ``X`` is a sequence of ``(text, language)`` pairs, ``y`` the concept of each document
    (hashable). ``transform(X)`` embeds every document in its own language (rows in ``X``'s
    order). ``score(X, y)`` is the mean, over ordered language pairs (a, b), of the share of the
    documents of ``a`` whose concept has a document in ``b`` and whose ``k`` nearest documents of
    ``b`` (cosine) include one of that concept.
    """

    def __init__(self, estimator: Any, k: int = 1) -> None:
        self.estimator = estimator
        self.k = k

    def fit(self, X: Sequence[tuple[str, str]], y: Sequence[Hashable]) -> MultilingualFit:
        check_int(self.k, "k")
        texts, langs = _pairs(X)
        y = list(y)
        if len(y) != len(texts):
            raise ValueError(f"y has {len(y)} concepts for {len(texts)} documents")
        from linxling import _registry
        est = clone(self.estimator)
        kind = _registry.entry(type(est).__name__).input
        if kind == "concepts":
            est.fit(texts, langs, y)
        elif kind in ("aligned", "words"):
            aligned = _aligned(texts, langs, y)
            est.fit(aligned) if kind == "aligned" else est.fit(aligned, aligned)
        elif kind == "pivot":             # x-WMF: every other language paired with the pivot's rows
            pivot = est.pivot_language
            if pivot not in langs:
                raise ValueError(f"{type(est).__name__}: X has no document in the pivot language {pivot!r} "
                                 f"(languages: {sorted(set(langs))}); set estimator's pivot_language")
            aligned = _aligned(texts, langs, y)
            est.fit({lang: (aligned[pivot], lines) for lang, lines in aligned.items() if lang != pivot})
        else:
            raise TypeError(f"{type(est).__name__} is not fitted on multilingual documents "
                            f"({_registry.INPUT_KINDS[kind]})")
        self.estimator_ = est
        self.languages_ = sorted(set(langs))
        return self

    def transform(self, X: Sequence[tuple[str, str]]) -> np.ndarray:
        from linxling.cli import embed_texts
        check_is_fitted(self, "estimator_")
        texts, langs = _pairs(X)
        out: Any = None
        for lang in sorted(set(langs)):
            rows = [i for i, g in enumerate(langs) if g == lang]
            Z = np.asarray(embed_texts(self.estimator_, [texts[i] for i in rows], lang))
            if out is None:
                out = np.zeros((len(texts), Z.shape[1]), dtype=Z.dtype)
            out[rows] = Z
        return out

    def score(self, X: Sequence[tuple[str, str]], y: Sequence[Hashable]) -> float:
        check_is_fitted(self, "estimator_")
        k = check_int(self.k, "k")
        texts, langs = _pairs(X)
        ids: dict = {}
        codes = np.asarray([ids.setdefault(c, len(ids)) for c in y])
        if len(codes) != len(texts):
            raise ValueError(f"y has {len(codes)} concepts for {len(texts)} documents")
        Z = self.transform(X)
        Z = Z / np.maximum(np.linalg.norm(Z, axis=1, keepdims=True), 1e-300)
        langs_arr = np.asarray(langs)
        hits, total = 0.0, 0
        for a in sorted(set(langs)):
            for b in sorted(set(langs)):
                if a == b:
                    continue
                qa, cb = np.flatnonzero(langs_arr == a), np.flatnonzero(langs_arr == b)
                qa = qa[np.isin(codes[qa], codes[cb])]
                if not len(qa):
                    continue
                S = Z[qa] @ Z[cb].T
                kk = min(k, len(cb))
                top = np.argpartition(-S, kk - 1, axis=1)[:, :kk]
                hits += float(np.mean(np.any(codes[cb][top] == codes[qa][:, None], axis=1)))
                total += 1
        if not total:
            raise ValueError("no concept of X has documents in two languages: nothing to score")
        return hits / total


def _aligned(texts: list[str], langs: list[str], y: list) -> dict[str, list[str]]:
    """One row per concept with a document in every language (the first document of each)."""
    languages = sorted(set(langs))
    first: dict[str, dict] = {lang: {} for lang in languages}
    for t, g, c in zip(texts, langs, y, strict=True):
        first[g].setdefault(c, t)
    common = [c for c in first[languages[0]] if all(c in first[g] for g in languages[1:])]
    if not common:
        raise ValueError("no concept has a document in every language: a model of aligned sentences "
                         "has nothing to fit")
    n_left = len(texts) - len(common) * len(languages)
    if n_left:                 # left out in silence before: a concept missing a language, a second document
        import warnings

        from linxling._warnings import find_stack_level
        n_partial = sum(len(first[g]) for g in languages) - len(common) * len(languages)
        warnings.warn(f"MultilingualFit: {n_left} of {len(texts)} documents are left out of the fit of this "
                      f"model of aligned sentences, which takes one row per concept with a document in every "
                      f"language ({len(common)} concepts): {n_partial} of a concept without a document in every "
                      f"language, {n_left - n_partial} repeating a concept in its language (the first is used)",
                      UserWarning, stacklevel=find_stack_level())
    return {g: [first[g][c] for c in common] for g in languages}
