"""Bilingual paraphrase identification (Chen et al. 2019, Sec. 4.2).

:func:`paraphrase_pairs` builds the sentence pairs from Wikt3l as the paper describes: a
**positive** pairs the English and the French definition of the same translation pair
``(e, f)``; a **negative** pairs that English definition with a French definition of another
English word ``e'`` among the 6th-15th nearest neighbours of ``e`` in a word space (so the two
meanings are related, which makes the decision harder).

:class:`ParaphraseMLP` is the paper's downstream classifier: a multi-layer perceptron on the
*difference* of the two sentence vectors, ``a - b``, with a binary softmax (cross-entropy) loss,
numpy forward and hand-written backward (:meth:`ParaphraseMLP.loss_grad`, checked against finite
differences in the tests), trained by Adam on mini-batches with early stopping on a validation
split (the parameters of the best validation epoch are kept).

:func:`paraphrase_identification` runs the protocol: 75 % train / 5 % validation / 20 % test
(the paper's split), returns the test accuracy.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from linxling._validation import check_random_state

__all__ = ["ParaphraseMLP", "paraphrase_identification", "paraphrase_pairs"]


def paraphrase_pairs(fr_en: Any, en_fr: Any, words: Any, vectors: Any, neighbour_ranks: tuple[int, int] = (6, 15),
                     max_pairs: int | None = None, random_state: Any = None) -> dict:
    """English-French definition pairs with paraphrase labels, from Wikt3l.

    Parameters
    ----------
    fr_en, en_fr : linxling.datasets.Wikt3l
        The two directions of one split: ``fr_en`` rows are French definitions of English words
        (``target`` e, ``headword`` f), ``en_fr`` English definitions of French words
        (``target`` f, ``headword`` e).
    words, vectors : list of str, array (n, d)
        The English word space in which neighbours are found (cosine).
    neighbour_ranks : (int, int), default (6, 15)
        Ranks (1 = the nearest *other* word; the word itself is not counted) among the English
        words that have a French definition, from which the negative's word is drawn uniformly.
    max_pairs : int, optional
        Keep at most this many translation pairs (drawn at random), i.e. ``2 * max_pairs`` rows.
    random_state : int, Generator or None

    Returns
    -------
    dict
        ``"en"``, ``"fr"``: the definitions (lists of str), ``"label"``: int array (1 =
        paraphrase), ``"word"``: the English word of the English definition, ``"other"``: the
        English word the French definition defines. One positive and one negative per
        translation pair whose English word has a vector and enough neighbours.
    """
    lo, hi = neighbour_ranks
    if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer)) and 1 <= lo <= hi):
        raise ValueError(f"neighbour_ranks must be (lo, hi) with 1 <= lo <= hi, got {neighbour_ranks!r}")
    for name, ds, q in (("fr_en", fr_en, "fr"), ("en_fr", en_fr, "en")):
        if getattr(ds, "definition_language", None) != q:
            raise ValueError(f"{name} must hold definitions in {q!r} (a Wikt3l of direction "
                             f"{q}-{'en' if q == 'fr' else 'fr'}), got "
                             f"{getattr(ds, 'direction', type(ds).__name__)!r}")
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise ValueError(f"vectors must have shape (len(words), d) = ({len(words)}, d), got {vectors.shape}")
    rng = check_random_state(random_state)
    fr_defs: dict[str, list[str]] = {}         # English word -> French definitions of it
    fr_of_pair: dict[tuple[str, str], list[str]] = {}
    for e, d, f in fr_en.rows:
        fr_defs.setdefault(e, []).append(d)
        fr_of_pair.setdefault((e, f), []).append(d)
    en_of_pair: dict[tuple[str, str], list[str]] = {}
    for f, d, e in en_fr.rows:
        en_of_pair.setdefault((e, f), []).append(d)
    index = {w: i for i, w in enumerate(words)}
    pool = sorted(e for e in fr_defs if e in index and np.any(vectors[index[e]] != 0))
    pairs = sorted(p for p in en_of_pair if p in fr_of_pair and p[0] in index)
    in_pool = set(pool)
    pairs = [p for p in pairs if p[0] in in_pool]      # one set, not one per pair (was quadratic)
    if len(pool) <= hi:
        raise ValueError(f"only {len(pool)} English words have a French definition and a vector: "
                         f"need more than {hi} for the {lo}th-{hi}th neighbours")
    if not pairs:
        raise ValueError("no translation pair has both an English and a French definition")
    if max_pairs is not None and len(pairs) > max_pairs:
        pairs = [pairs[i] for i in np.sort(rng.choice(len(pairs), size=max_pairs, replace=False))]
    P = vectors[[index[e] for e in pool]]
    P = P / np.linalg.norm(P, axis=1, keepdims=True)
    prow = {e: i for i, e in enumerate(pool)}
    en, fr, label, word, other = [], [], [], [], []
    for e, f in pairs:
        s = P @ P[prow[e]]
        s[prow[e]] = -np.inf                     # the word itself is not a neighbour
        top = np.argpartition(-s, hi)[:hi + 1] if len(s) > hi + 1 else np.arange(len(s))
        order = top[np.lexsort((top, -s[top]))]  # by decreasing similarity, ties by index
        e2 = pool[order[int(rng.integers(lo, hi + 1)) - 1]]
        d_en = en_of_pair[(e, f)][int(rng.integers(len(en_of_pair[(e, f)])))]
        d_fr = fr_of_pair[(e, f)][int(rng.integers(len(fr_of_pair[(e, f)])))]
        d_neg = fr_defs[e2][int(rng.integers(len(fr_defs[e2])))]
        en += [d_en, d_en]
        fr += [d_fr, d_neg]
        label += [1, 0]
        word += [e, e]
        other += [e, e2]
    return {"en": en, "fr": fr, "label": np.array(label, dtype=np.int64), "word": word, "other": other}


class ParaphraseMLP:
    """MLP on ``a - b`` with a two-class softmax: ``h = tanh(x W1 + b1)``, ``s = h W2 + b2``
    (two logits), loss = mean cross-entropy.

    Parameters
    ----------
    hidden : int, default 64
    learning_rate : float, default 1e-3
        Adam step.
    n_epochs : int, default 200
        Maximum epochs; training stops after ``patience`` epochs without a better validation
        accuracy and keeps the best epoch's parameters.
    patience : int, default 20
    batch_size : int, default 32
    l2 : float, default 1e-4
        Weight decay on ``W1`` and ``W2`` (added to the loss as ``l2/2 * ||W||^2``).
    features : {"difference", "abs_difference"}, default "difference"
        The input: ``a - b`` (the paper's subtraction) or ``|a - b|`` element-wise (symmetric in
        the two sentences, so the MLP need not learn the symmetry from the data).
    normalize : bool, default False
        Scale ``a`` and ``b`` to unit length first (zero vectors stay zero).
    random_state : int, Generator or None
    epochs : int, optional
        ``n_epochs``'s name before 0.2 (every estimator says ``n_epochs``): accepted with a
        FutureWarning; giving it with an n_epochs other than 200 is an error.
    """

    def __init__(self, hidden: int = 64, learning_rate: float = 1e-3, n_epochs: int = 200,
                 patience: int = 20, batch_size: int = 32, l2: float = 1e-4, features: str = "difference",
                 normalize: bool = False, random_state: Any = None, epochs: int | None = None) -> None:
        if epochs is not None:
            if n_epochs != 200:
                raise TypeError("ParaphraseMLP: give n_epochs or its old name epochs, not both")
            warnings.warn("ParaphraseMLP's epochs is renamed n_epochs (as every estimator's); "
                          "epochs will be removed", FutureWarning, stacklevel=2)
            n_epochs = epochs
        self.features = features
        self.normalize = normalize
        self.hidden = hidden
        self.learning_rate = learning_rate
        self.n_epochs = n_epochs
        self.patience = patience
        self.batch_size = batch_size
        self.l2 = l2
        self.random_state = random_state
        self._check_params()

    def _check_params(self) -> None:
        """Refuse a parameter out of its range, naming it (at construction and again at
        :meth:`fit`, for a parameter set on the instance since)."""
        for name, v in (("hidden", self.hidden), ("n_epochs", self.n_epochs),
                        ("patience", self.patience), ("batch_size", self.batch_size)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        for name, x in (("learning_rate", self.learning_rate), ("l2", self.l2)):
            if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")   # was NumPy's isfinite error
            if not np.isfinite(x) or x < 0 or (name == "learning_rate" and x == 0):
                raise ValueError(f"{name} must be a {'positive' if name == 'learning_rate' else 'non-negative'} "
                                 f"float, got {x!r}")
        if self.features not in ("difference", "abs_difference"):
            raise ValueError(f"features must be 'difference' or 'abs_difference', got {self.features!r}")
        if not isinstance(self.normalize, (bool, np.bool_)):      # "no" was read as True
            raise TypeError(f"normalize must be a bool, got {type(self.normalize).__name__} {self.normalize!r}")

    @staticmethod
    def init_params(d: int, hidden: int, rng) -> dict:
        lim1 = np.sqrt(6.0 / (d + hidden))
        lim2 = np.sqrt(6.0 / (hidden + 2))
        return {"W1": rng.uniform(-lim1, lim1, (d, hidden)), "b1": np.zeros(hidden),
                "W2": rng.uniform(-lim2, lim2, (hidden, 2)), "b2": np.zeros(2)}

    @staticmethod
    def _logits(params: dict, X: np.ndarray):
        H = np.tanh(X @ params["W1"] + params["b1"])
        return H, H @ params["W2"] + params["b2"]

    @staticmethod
    def loss_grad(params: dict, X: np.ndarray, y: np.ndarray, l2: float = 0.0):
        """Mean cross-entropy (+ ``l2/2 ||W1||^2 + l2/2 ||W2||^2``) and its gradients (dict)."""
        n = X.shape[0]
        H, S = ParaphraseMLP._logits(params, X)
        S = S - S.max(axis=1, keepdims=True)
        logZ = np.log(np.exp(S).sum(axis=1))
        loss = float((logZ - S[np.arange(n), y]).mean())
        loss += 0.5 * l2 * float((params["W1"] ** 2).sum() + (params["W2"] ** 2).sum())
        dS = np.exp(S - logZ[:, None])                 # softmax
        dS[np.arange(n), y] -= 1.0
        dS /= n
        dH = (dS @ params["W2"].T) * (1.0 - H * H)
        grads = {"W2": H.T @ dS + l2 * params["W2"], "b2": dS.sum(axis=0),
                 "W1": X.T @ dH + l2 * params["W1"], "b1": dH.sum(axis=0)}
        return loss, grads

    def fit(self, A: np.ndarray, B: np.ndarray, y: np.ndarray, A_val: np.ndarray, B_val: np.ndarray,
            y_val: np.ndarray) -> ParaphraseMLP:
        """Train on ``A - B`` with labels ``y`` (0/1); early stopping on the validation set."""
        self._check_params()
        X = self._features(A, B, "A", "B")
        Xv = self._features(A_val, B_val, "A_val", "B_val")
        y = _labels(y, len(X), "y")
        y_val = _labels(y_val, len(Xv), "y_val")
        if len(Xv) == 0:
            raise ValueError("the validation set is empty: early stopping needs one")
        rng = check_random_state(self.random_state)
        p = self.init_params(X.shape[1], int(self.hidden), rng)
        m = {k: np.zeros_like(v) for k, v in p.items()}
        v2 = {k: np.zeros_like(v) for k, v in p.items()}
        b1, b2, eps, t = 0.9, 0.999, 1e-8, 0
        best, best_p, since = -1.0, {k: v.copy() for k, v in p.items()}, 0
        self.history_ = []
        for epoch in range(int(self.n_epochs)):
            perm = rng.permutation(len(X))
            for s in range(0, len(X), int(self.batch_size)):
                bi = perm[s:s + int(self.batch_size)]
                _, g = self.loss_grad(p, X[bi], y[bi], float(self.l2))
                t += 1
                for k in p:
                    m[k] = b1 * m[k] + (1 - b1) * g[k]
                    v2[k] = b2 * v2[k] + (1 - b2) * g[k] ** 2
                    p[k] -= self.learning_rate * (m[k] / (1 - b1 ** t)) / (np.sqrt(v2[k] / (1 - b2 ** t)) + eps)
            acc = float((self._predict(p, Xv) == y_val).mean())
            self.history_.append(acc)
            if acc > best:
                best, best_p, since, self.best_epoch_ = acc, {k: v.copy() for k, v in p.items()}, 0, epoch
            else:
                since += 1
                if since >= int(self.patience):
                    break
        self.params_ = best_p
        self.validation_accuracy_ = best
        return self

    @staticmethod
    def _predict(params, X):
        return np.argmax(ParaphraseMLP._logits(params, X)[1], axis=1)

    def predict(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """1 (paraphrase) or 0 per pair."""
        if not hasattr(self, "params_"):
            raise ValueError("ParaphraseMLP is not fitted: call fit first")
        return self._predict(self.params_, self._features(A, B, "A", "B"))

    def _features(self, A, B, na, nb) -> np.ndarray:
        A = np.asarray(A, dtype=np.float64)
        B = np.asarray(B, dtype=np.float64)
        _diff(A, B, na, nb)
        if self.normalize:
            A = A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-300)
            B = B / np.maximum(np.linalg.norm(B, axis=1, keepdims=True), 1e-300)
        return np.abs(A - B) if self.features == "abs_difference" else A - B


def _diff(A, B, na, nb) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.ndim != 2 or A.shape != B.shape:
        raise ValueError(f"{na} and {nb} must be 2-D arrays of the same shape, got {A.shape} and {B.shape}")
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
        raise ValueError(f"{na} / {nb} contain non-finite values")
    return A - B


def _labels(y, n, name) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {y.shape}")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError(f"{name} must hold 0/1 labels")
    return y.astype(np.int64)


def paraphrase_identification(A: np.ndarray, B: np.ndarray, labels: Any,
                              fractions: tuple[float, float, float] = (0.75, 0.05, 0.20),
                              random_state: Any = None, **mlp_params: Any) -> dict:
    """Paraphrase accuracy of sentence vectors: the paper's protocol (Sec. 4.2).

    Parameters
    ----------
    A, B : array (n, d)
        Vectors of the two sentences of each pair (e.g. ``BilDRL.transform`` of the English and
        of the French definitions of :func:`paraphrase_pairs`).
    labels : array (n,) of 0/1
    fractions : (train, validation, test), default (0.75, 0.05, 0.20)
        A random split (the paper's); the validation part drives early stopping.
    random_state : int, Generator or None
    **mlp_params
        Passed to :class:`ParaphraseMLP`.

    Returns
    -------
    dict
        ``"accuracy"`` (test), ``"validation_accuracy"``, ``"majority"`` (test accuracy of the
        majority class of the training labels), ``"n_train"``, ``"n_validation"``, ``"n_test"``,
        ``"best_epoch"``.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    _diff(A, B, "A", "B")
    y = _labels(labels, len(A), "labels")
    f = np.asarray(fractions, dtype=np.float64)
    if f.shape != (3,) or np.any(f <= 0) or abs(f.sum() - 1.0) > 1e-9:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions!r}")
    rng = check_random_state(random_state)
    n = len(A)
    perm = rng.permutation(n)
    n_tr, n_va = int(round(f[0] * n)), int(round(f[1] * n))
    tr, va, te = perm[:n_tr], perm[n_tr:n_tr + n_va], perm[n_tr + n_va:]
    if min(len(tr), len(va), len(te)) == 0:
        raise ValueError(f"{n} pairs are too few for the split {tuple(fractions)}")
    mlp = ParaphraseMLP(random_state=rng, **mlp_params).fit(A[tr], B[tr], y[tr], A[va], B[va], y[va])
    acc = float((mlp.predict(A[te], B[te]) == y[te]).mean())
    maj = int(np.bincount(y[tr], minlength=2).argmax())
    return {"accuracy": acc, "validation_accuracy": mlp.validation_accuracy_,
            "majority": float((y[te] == maj).mean()), "n_train": len(tr), "n_validation": len(va),
            "n_test": len(te), "best_epoch": mlp.best_epoch_}
