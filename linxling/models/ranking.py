"""Etter's translation network (Etter 2009, chapter 4): aligned sentences ranked above random ones.

A sentence vector is the mean of its word vectors (Sec. 4.2), optionally with the vectors of
its consecutive word pairs, which have their own rows in the lookup table and are averaged
together with the words (Sec. 4.3). The score of two sentences is their dot product or minus
their L1 distance (Sec. 4.2.5); training is plain SGD on the margin ranking loss with one random
negative::

    [m - s(a, b) + s(a, n)]_+  (and the same with a and b swapped),   m = sqrt(d) by default

over every pair of languages of the aligned sentences. Kernels: :mod:`linxling.kernels.sgd`.
"""
from __future__ import annotations

import math
import numbers

from linxling.io import register_model
from linxling.models.bicvm import _SentencePairSGD

__all__ = ["RankingEmbedding"]


@register_model("RankingEmbedding")
class RankingEmbedding(_SentencePairSGD):
    """Etter's crosslingual translation network: mean of word vectors, margin ranking, SGD.

    Parameters
    ----------
    n_components : int, default 50
    score : {"dot", "l1"}, default "dot"
        s(a, b) = a.b, or -||a - b||_1.
    margin : float or None, default None
        Ranking margin; None means sqrt(n_components) (Etter's choice).
    word_pairs : bool, default False
        Also average the vectors of consecutive word pairs (own lookup-table rows, Sec. 4.3).
    learning_rate : float, default 0.01
        SGD step size.
    alpha : float, default 0.0
        L2 weight on the updated rows.
    n_epochs, batch_size, min_count, init_scale, random_state, n_threads, callback, show_progress
        As in :class:`linxling.BiCVM`.

    ``fit({"en": [...], "de": [...], "fr": [...]})``: any number (>= 2) of languages whose
    sentences are row-aligned; every pair of languages is trained each epoch.
    """

    _PARAMS = ("n_components", "score", "margin", "word_pairs", "learning_rate", "alpha",
               "n_epochs", "batch_size", "min_count", "init_scale", "random_state", "n_threads",
               "callback", "show_progress")
    _max_languages = 0
    _composition = "mean"
    _optimizer = "sgd"

    def __init__(self, n_components=50, score="dot", margin=None, word_pairs=False,
                 learning_rate=0.01, alpha=0.0, n_epochs=10, batch_size=1, min_count=1,
                 init_scale=0.1, random_state=None, n_threads=None, callback=None,
                 show_progress=None):
        self.n_components = n_components
        self.score = score
        self.margin = margin
        self.word_pairs = word_pairs
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.min_count = min_count
        self.init_scale = init_scale
        self.random_state = random_state
        self.n_threads = n_threads
        self.callback = callback
        self.show_progress = show_progress

    @property
    def _distance(self):
        return "dot" if self.score == "dot" else "l1"

    @property
    def _word_pairs(self):
        return bool(self.word_pairs)

    def _n_noise(self):
        return 1

    def _margin(self):
        return math.sqrt(self.n_components) if self.margin is None else float(self.margin)

    def _check_params(self):
        if self.score not in ("dot", "l1"):
            raise ValueError(f"score must be 'dot' or 'l1', got {self.score!r}")
        if self.margin is not None and (not isinstance(self.margin, numbers.Real) or not self.margin >= 0):
            raise ValueError(f"margin must be a non-negative number or None, got {self.margin!r}")
        if not isinstance(self.word_pairs, bool):
            raise TypeError(f"word_pairs must be a bool, got {type(self.word_pairs).__name__}")
        super()._check_params()
