"""Cross-lingual document classification (CLDC) with the averaged perceptron.

The setting of Klementiev et al. (2012), used by Hermann & Blunsom (2014, Sec. 5.2): a document
is the average of its sentence vectors; a multi-class averaged perceptron (Collins 2002) is
trained on the documents of one language and tested on documents of another, in the shared
crosslingual space.

:class:`AveragedPerceptron` -- multi-class averaged perceptron (seeded shuffling per epoch).
:func:`document_vectors` -- average sentence vectors into document vectors.
:func:`cldc` -- train on one language, test on another: accuracy and the majority baseline.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError

from linxling._validation import check_int, check_random_state, refuse_sparse

__all__ = ["AveragedPerceptron", "cldc", "document_vectors"]


def _check_X(X: Any, name: str = "X") -> np.ndarray:
    """``X`` as a finite 2-D float64 NumPy array (the retrieval functions' check)."""
    from linxling._backend import get_namespace
    from linxling.evaluate._retrieval import _check_embeddings
    refuse_sparse(X, name)
    X = np.asarray(X)
    return np.asarray(_check_embeddings(X, name, get_namespace(X)), dtype=np.float64)


def _check_y(y: Any, n: int, name: str = "y") -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {y.shape}")
    if len(y) != n:
        raise ValueError(f"{name} has {len(y)} labels but there are {n} documents")
    if y.dtype == object:                 # None would fail later in a sort, without a name
        for i, label in enumerate(y.tolist()):
            if label is None:
                raise TypeError(f"{name}[{i}] is None: every document needs a label")
    return y


class AveragedPerceptron(ClassifierMixin, BaseEstimator):
    """Multi-class averaged perceptron (Collins 2002).

    Weights ``W`` (n_classes, d [+1 bias]). For each training document in a seeded random order
    per epoch: predict ``argmax_c W[c] . x`` (ties -> lowest class index); on a mistake
    ``W[y] += x`` and ``W[pred] -= x``. The returned weights are the average of ``W`` over all
    ``n_epochs * n`` steps, computed with the usual lazy-update trick (exact, not approximate).
    """

    def __init__(self, n_epochs: int = 10, fit_intercept: bool = True, random_state: Any = None):
        self.n_epochs = n_epochs
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def _augment(self, X: np.ndarray) -> np.ndarray:
        if self.fit_intercept:
            return np.hstack([X, np.ones((X.shape[0], 1))])
        return X

    def fit(self, X: Any, y: Any) -> AveragedPerceptron:
        X = _check_X(X)
        y = _check_y(y, X.shape[0])
        if isinstance(self.n_epochs, bool) or not isinstance(self.n_epochs, (int, np.integer)) \
                or self.n_epochs < 1:
            raise ValueError(f"n_epochs must be a positive integer, got {self.n_epochs!r}")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):    # "no" was read as True
            raise TypeError(f"fit_intercept must be a bool, got {type(self.fit_intercept).__name__} "
                            f"{self.fit_intercept!r}")
        rng = check_random_state(self.random_state)   # NumPy's own errors named no argument
        self.classes_, yi = np.unique(y, return_inverse=True)
        Xa = self._augment(X)
        n, p = Xa.shape
        C = len(self.classes_)
        W = np.zeros((C, p))
        U = np.zeros((C, p))       # sum of step * update; average = W - U / T
        step = 1
        n_mistakes = []
        for _ in range(int(self.n_epochs)):
            mistakes = 0
            for i in rng.permutation(n):
                x = Xa[i]
                pred = int(np.argmax(W @ x))
                t = int(yi[i])
                if pred != t:
                    W[t] += x
                    W[pred] -= x
                    U[t] += step * x
                    U[pred] -= step * x
                    mistakes += 1
                step += 1
            n_mistakes.append(mistakes)
        T = step - 1
        # After T steps the average of W_1..W_T (W_k = weights after step k) is W - (U - W) / T
        # with U as accumulated above (updates at step s counted T - s + 1 times).
        avg = W - (U - W) / T
        self.coef_ = avg[:, :X.shape[1]]
        self.intercept_ = avg[:, X.shape[1]] if self.fit_intercept else np.zeros(C)
        self.n_mistakes_ = n_mistakes
        self.n_features_in_ = X.shape[1]
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise NotFittedError("AveragedPerceptron is not fitted yet; call fit first")
        X = _check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features but the perceptron was fitted on "
                             f"{self.n_features_in_}")
        return X @ self.coef_.T + self.intercept_

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]


def document_vectors(sentence_vectors: Any, doc_index: Any, n_documents: int | None = None
                     ) -> np.ndarray:
    """Average sentence vectors into document vectors.

    ``doc_index[k]`` is the document (0..n_documents-1) of row ``k`` of ``sentence_vectors``.
    Every document must have at least one sentence (an empty document is an error, not zeros).
    """
    S = _check_X(sentence_vectors, "sentence_vectors")
    idx = np.asarray(doc_index)
    if idx.ndim != 1 or len(idx) != S.shape[0]:
        raise ValueError(f"doc_index must be 1-D with one entry per sentence ({S.shape[0]}), "
                         f"got shape {idx.shape}")
    if idx.dtype.kind not in "iu":
        raise TypeError(f"doc_index must hold integers, got dtype {idx.dtype}")
    if len(idx) and idx.min() < 0:
        raise ValueError("doc_index has negative entries")
    n = int(idx.max()) + 1 if n_documents is None else check_int(n_documents, "n_documents")
    if len(idx) and idx.max() >= n:
        raise ValueError(f"doc_index has entry {int(idx.max())} >= n_documents={n}")
    counts = np.bincount(idx, minlength=n)
    if np.any(counts == 0):
        raise ValueError(f"documents without sentences: {np.flatnonzero(counts == 0)[:10].tolist()}")
    out = np.zeros((n, S.shape[1]))
    np.add.at(out, idx, S)
    return out / counts[:, None]


def cldc(train_X: Any, train_y: Sequence, test_X: Any, test_y: Sequence, *, n_epochs: int = 10,
         random_state: Any = None) -> dict[str, Any]:
    """Train an :class:`AveragedPerceptron` on ``train_X`` (one language), test on ``test_X``.

    Returns ``{"accuracy", "majority_accuracy", "majority_class", "n_train", "n_test",
    "classifier"}``; the majority baseline predicts the most frequent training label (of labels
    tied in frequency, the smallest). ``test_y`` without any label of ``train_y`` (e.g. integer
    codes on one side, names on the other) is a ``ValueError``.
    """
    Xtr = _check_X(train_X, "train_X")
    Xte = _check_X(test_X, "test_X")
    ytr = _check_y(train_y, Xtr.shape[0], "train_y")
    yte = _check_y(test_y, Xte.shape[0], "test_y")
    if Xtr.shape[1] != Xte.shape[1]:
        raise ValueError(f"test_X has dimension {Xte.shape[1]} but train_X has {Xtr.shape[1]}")
    train_labels = set(ytr.tolist())
    if not any(label in train_labels for label in set(yte.tolist())):
        # e.g. integer codes on one side and label names on the other: accuracy 0, in silence
        raise ValueError(f"test_y shares no label with train_y (train_y: {sorted(map(repr, train_labels))[:10]}, "
                         f"test_y: {sorted(map(repr, set(yte.tolist())))[:10]}): encode both the same way")
    clf = AveragedPerceptron(n_epochs=n_epochs, random_state=random_state).fit(Xtr, ytr)
    pred = clf.predict(Xte)
    labels, counts = np.unique(ytr, return_counts=True)
    majority = labels[np.argmax(counts)]
    return {"accuracy": float(np.mean(pred == yte)),
            "majority_accuracy": float(np.mean(yte == majority)),
            "majority_class": majority.item() if hasattr(majority, "item") else majority,
            "n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]), "classifier": clf}
