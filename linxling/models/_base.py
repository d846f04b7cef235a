"""What the concept-aligned estimators (Cr5, CL-LSI) share: checks, text input, the store."""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from linxling._validation import check_same_length

__all__ = ["ConceptEmbeddingMixin", "as_concept_list", "group_by_language", "vectorizers_state",
           "vectorizers_from_state", "vectorizer_from_state", "vectorizer_state"]


def as_concept_list(ids: Any, name: str) -> list:
    """Concept ids as a list of hashables (rows of a 2-D array become tuples)."""
    if isinstance(ids, str):
        raise TypeError(f"{name} must be a sequence of concept ids, not a single str")
    if isinstance(ids, np.ndarray):
        if ids.ndim == 2:
            return [tuple(row) for row in ids.tolist()]
        if ids.ndim != 1:
            raise ValueError(f"{name} must be 1-D (one concept id per document), got shape {ids.shape}")
        return ids.tolist()
    out = list(ids)
    for i, c in enumerate(out):
        if not isinstance(c, Hashable):
            raise TypeError(f"{name}[{i}] = {c!r} is not hashable; concept ids must be hashable")
    return out


def group_by_language(texts: Any, languages: Any, concepts: Any):
    """Validate three parallel sequences and group document indices by language.

    Returns
    -------
    texts : list of str
    concepts : list of hashable
    by_lang : dict language -> list of int (indices into texts), in first-seen language order
    """
    for name, seq in (("texts", texts), ("languages", languages), ("concepts", concepts)):
        if isinstance(seq, str):
            raise TypeError(f"{name} must be a sequence, not a single str")
    texts, languages = list(texts), list(languages)
    concepts = as_concept_list(concepts, "concepts")
    check_same_length(texts, languages, "texts", "languages")
    check_same_length(texts, concepts, "texts", "concepts")
    if not texts:
        raise ValueError("texts is empty: nothing to fit")
    by_lang: dict[str, list[int]] = {}
    for i, lang in enumerate(languages):
        if not isinstance(lang, str):
            raise TypeError(f"languages[{i}] must be a str language code, got {type(lang).__name__}")
        by_lang.setdefault(lang, []).append(i)
    return texts, concepts, by_lang


def vectorizer_state(vec) -> tuple[Any, Any]:
    """Store state (params, arrays) of one vectoriser; ``(None, None)`` when there is none."""
    return (None, None) if vec is None else vec.get_state()


def vectorizers_state(vectorizers: dict) -> tuple[dict, dict]:
    """Store state of per-language vectorisers: (params language -> dict, arrays language -> dict)."""
    params, arrays = {}, {}
    for lang, vec in vectorizers.items():
        params[lang], arrays[lang] = vectorizer_state(vec)
    return params, arrays


def vectorizer_from_state(params: dict | None, arrays: dict | None):
    """One vectoriser from its store state (``None`` when there was none)."""
    if params is None:
        return None
    from linxling.text import TfidfVectorizer
    return TfidfVectorizer.from_state(params, arrays)


def vectorizers_from_state(params: dict | None, arrays: dict | None) -> dict:
    """Inverse of :func:`vectorizers_state`."""
    return {lang: vectorizer_from_state(vp, arrays[lang]) for lang, vp in (params or {}).items()}


class ConceptEmbeddingMixin:
    """Shared behaviour of estimators with per-language maps ``components_[lang]`` (r, p_l).

    Subclasses define ``transform_matrix(X, language)`` and ``_get_state``/``_from_state``, and
    may set ``vectorizers_`` (language -> TfidfVectorizer) when fitted from texts.
    """

    def _check_fitted(self) -> None:
        if not hasattr(self, "components_"):
            raise RuntimeError(f"this {type(self).__name__} instance is not fitted yet: "
                               "call fit or fit_matrices first")

    def _check_language(self, language: str) -> None:
        self._check_fitted()
        if language not in self.components_:
            raise ValueError(f"unknown language {language!r}: the model was trained on "
                             f"{sorted(self.components_)}")

    def transform(self, texts: Sequence[str] | Iterable[str], language: str) -> np.ndarray:
        """Embed raw documents of ``language``: shape (n_docs, n_components)."""
        self._check_language(language)
        if not hasattr(self, "vectorizers_") or language not in self.vectorizers_:
            raise RuntimeError("this model was fitted with fit_matrices: use transform_matrix on "
                               "features, or fit from texts to get a vectoriser per language")
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of documents, not a single str")
        return self.transform_matrix(self.vectorizers_[language].transform(texts), language)

    def save(self, path) -> None:
        """Save the fitted model to HDF5 (atomic: a failed save leaves an existing file intact)."""
        from linxling import io
        self._check_fitted()
        io.save(self, path)

    # -------------------------------------------------------------- store helpers
    def _shared_state(self, params: dict) -> dict:
        """Add languages/classes/vectorisers to ``params``; return the shared arrays."""
        params["languages"] = list(self.languages_)
        try:
            classes = np.asarray(self.classes_)
            if classes.dtype.kind not in "iufU" or classes.ndim != 1:
                raise TypeError
        except (TypeError, ValueError):
            classes = np.asarray([repr(c) for c in self.classes_])
            params["classes_repr"] = True
        arrays: dict[str, Any] = {
            "components": {lang: self.components_[lang] for lang in self.languages_},
            "singular_values": self.singular_values_,
            "classes": classes,
        }
        if getattr(self, "vectorizers_", None):
            params["vectorizer_params"], arrays["vectorizers"] = vectorizers_state(self.vectorizers_)
        return arrays

    def _restore_shared(self, params: dict, arrays: dict) -> None:
        self.languages_ = list(params["languages"])
        self.components_ = {lang: np.asarray(arrays["components"][lang]) for lang in self.languages_}
        self.n_features_ = {lang: self.components_[lang].shape[1] for lang in self.languages_}
        self.singular_values_ = np.asarray(arrays["singular_values"])
        self.classes_ = np.asarray(arrays["classes"]).tolist()
        if "vectorizers" in arrays:
            self.vectorizers_ = vectorizers_from_state(params["vectorizer_params"], arrays["vectorizers"])
