"""Etter's translation network (Etter 2009, chapter 4): aligned sentences ranked above random ones.

A sentence vector is the mean of its word vectors (Sec. 4.2), optionally with the vectors of
its consecutive word pairs, which have their own rows in the lookup table and are averaged
together with the words (Sec. 4.3). The score of two sentences is their dot product or minus
their L1 distance (Sec. 4.2.5); training is plain SGD on the margin ranking loss with one random
negative::

    [m - s(a, b) + s(a, n)]_+  (and the same with a and b swapped)

over every pair of languages of the aligned sentences (the defaults use the L1 score and a
margin d / 32, chosen on validation verses; see the class). Kernels: :mod:`linxling.kernels.sgd`.
"""
from __future__ import annotations

import math
from typing import Any

from sklearn.utils._param_validation import StrOptions

from linxling.io import register_model
from linxling.models._estimator import DEPRECATED, FLOAT_DTYPE
from linxling.models.bicvm import _SentencePairSGD

__all__ = ["RankingEmbedding"]


@register_model("RankingEmbedding")
class RankingEmbedding(_SentencePairSGD):
    """Etter's crosslingual translation network: mean of word vectors, margin ranking, SGD.

    The defaults are not the thesis' Chapter 4 starting point (dot product, margin sqrt(d)): they
    were chosen on validation verses carved from the Bible en-fr training pairs (never the test
    verses; benchmarks/README.md "Etter's ranking network: how the defaults were chosen",
    ``python -m benchmarks.etter_defaults``). At d = 50 and 3 epochs the validation P@1 is 0.60
    and Etter's performance P(w) (M = 1) 0.988, against 0.07 / 0.87 with the dot score, margin
    sqrt(d), learning rate 0.01 and batch 1. :meth:`from_paper` gives the thesis' settings.

    Parameters
    ----------
    n_components : int, default 50
        Dimension d of the word and sentence vectors (the thesis' 50).
    score : {"dot", "l1"}, default "l1"
        s(a, b) = a.b, or -||a - b||_1. L1 is the thesis' final choice (Sec. 4.2.5: error 0.03 %
        against 5.5 % with the dot product); on validation it learned 3-20x faster than dot at
        every learning rate and batch size tried.
    margin : float or None, default None
        Ranking margin; None is ``n_components / 32``: the L1 distance is a sum over the d
        dimensions, so the best margin grows with d (validation, 3 epochs: 1-2 at d = 50 and 64,
        4 at d = 128); the thesis' sqrt(d) (7.1 at d = 50) was 0.25 P@1 worse at d = 50.
    word_pairs : bool, default False
        Also average the vectors of consecutive word pairs (own lookup-table rows, Sec. 4.3).
    learning_rate : float, default 1.0
        SGD step size; the gradient is averaged over the minibatch, so the step of one sample is
        ``learning_rate / batch_size`` (0.1 here; best of 0.05-2 with batch 10, and the same as
        batch 1 with 0.1).
    alpha : float, default 0.0
        L2 weight on the updated rows.
    n_epochs, batch_size : int, default 10, 10
        Validation P@1 at d = 50: 0.48 after one epoch, 0.60 after three, 0.66 after five, 0.72
        after ten (P(w) 0.98-0.99 throughout); each epoch costs about as much as the first.
    dtype : {"float32", "float64"}, default "float32"
        Precision of the word tables during training. float32 halves the kernels' memory
        traffic: the leaderboard's fit (six languages, d = 128, 3 epochs) took 22.0-27.8 s
        against 34.9-43.6 s in float64, and validation P@1 was no worse (mean of 3 seeds 0.725
        against 0.706 there; 0.647 against 0.650 on en-fr at d = 50 and 10 epochs, where
        seeds alone span 0.53-0.72; benchmarks/README.md "Etter's ranking network: how the
        defaults were chosen", ``python -m benchmarks.etter_defaults --grid dtype``). Models
        saved before this parameter existed load as float64, as they were trained.
    center : bool, default True
        Subtract each language's mean training sentence vector in :meth:`transform` (stored as
        ``means_``; a text without a known word stays a zero row). The L1 ranking loss leaves a
        language-wide offset free, and frequent words put one into a few dimensions ("the" at
        2.5 in one dimension while French's function words pull it to -0.9), which spoils
        cosine retrieval in about half the seeds: validation P@1 (en-fr, d = 50, 10 epochs, 8
        seeds) 0.689-0.732, mean 0.707, centred against 0.497-0.712, mean 0.617, raw (a lower
        learning rate, 0.3, is stable raw but reaches 0.676); en-ru 0.675 against 0.657, en-zh
        0.544 against 0.501 (4 seeds); the leaderboard's setting higher in every seed. False
        gives the thesis' raw means (and is :meth:`from_paper`'s); word vectors are never
        centred.
    min_df, init_scale, random_state, n_threads, callback, show_progress
        As in :class:`linxling.BiCVM`.

    Notes
    -----
    ``fit({"en": [...], "de": [...], "fr": [...]})``: any number (>= 2) of languages whose
    sentences are row-aligned; every pair of languages is trained each epoch, their minibatches
    taking turns.
    """

    _max_languages = 0
    _composition = "mean"
    _optimizer = "sgd"

    def __init__(self, n_components: int = 50, score: str = "l1", margin: float | None = None,
                 word_pairs: bool = False, learning_rate: float = 1.0, alpha: float = 0.0,
                 n_epochs: int = 10, batch_size: int = 10, min_df: int = 1, init_scale: float = 0.1,
                 dtype: str = "float32", center: bool = True, random_state: Any = None,
                 n_threads: int | None = None, callback: Any = None, show_progress: bool | None = None,
                 min_count: int | str = DEPRECATED) -> None:
        self.n_components = n_components
        self.score = score
        self.margin = margin
        self.word_pairs = word_pairs
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.min_df = min_df
        self.init_scale = init_scale
        self.dtype = dtype
        self.center = center
        self.random_state = random_state
        self.n_threads = n_threads
        self.callback = callback
        self.show_progress = show_progress
        self.min_count = min_count

    @classmethod
    def from_paper(cls, n_components: int = 50, **overrides: Any) -> RankingEmbedding:
        """Etter (2009), Sec. 4.2: d = 50, the L1 score, margin sqrt(d), plain SGD one pair at a
        time; the learning rate is not given there (0.01 here). Keyword arguments override."""
        params: dict[str, Any] = dict(n_components=n_components, score="l1", margin=math.sqrt(n_components),
                      learning_rate=0.01, batch_size=1, n_epochs=10, center=False)
        params.update(overrides)
        return cls(**params)

    @property
    def _distance(self):
        return "dot" if self.score == "dot" else "l1"

    @property
    def _word_pairs(self):
        return bool(self.word_pairs)

    def _n_noise(self):
        return 1

    def _margin(self):
        return self.n_components / 32.0 if self.margin is None else float(self.margin)

    _parameter_constraints: dict[str, list[Any]] = {
        **_SentencePairSGD._parameter_constraints,
        "score": [StrOptions({"dot", "l1"})],
        "word_pairs": ["boolean"],
        "dtype": [FLOAT_DTYPE],
        "center": ["boolean"],
    }
