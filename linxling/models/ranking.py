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
    ``python -m benchmarks.etter_defaults``). At d = 50 and 3 epochs the defaults reach validation
    P@1 0.643 (seed 0); in the grid at the thesis' margin sqrt(d) and 3 epochs the dot score
    reached 0.071 (P(w) 0.866) one pair per step at learning rate 0.05 and at most 0.434 at any
    rate and batch. On the held-out test verses after 10 epochs the defaults reach P@1 0.769 and
    Etter's performance P(w) (M = 1) 0.996 (0.715 / 0.993 without the L2 term, the default
    before 2026-12-01), against 0.318 / 0.973 for :meth:`from_paper` (the
    thesis' settings) and 0.055 / 0.818 for the defaults before (dot, margin sqrt(d), learning
    rate 0.01, batch 1).

    Parameters
    ----------
    n_components : int, default 50
        Dimension d of the word and sentence vectors (the thesis' 50). On the validation verses
        (en-fr, 10 epochs, without the L2 term, seeds 0 and 1) d = 100 and 200 were no better:
        P@1 0.712 / 0.702 and 0.692 / 0.712 against 0.711 / 0.718 at 50 (``--grid width``).
    score : {"dot", "l1"}, default "l1"
        s(a, b) = a.b, or -||a - b||_1. L1 is the thesis' final choice (Sec. 4.2.5: error 0.03 %
        against 5.5 % with the dot product); on validation it learned 1.3-20x faster than dot at
        every learning rate and batch size tried.
    margin : float or None, default None
        Ranking margin; None is ``n_components / 32``: the L1 distance is a sum over the d
        dimensions, so the best margin grows with d (validation: 0.5-1 at d = 50 after 5 epochs,
        2 at d = 64 and 4 at d = 128 after 3); the thesis' sqrt(d) (7.1 at d = 50) was 0.25 P@1
        worse at d = 50 (0.345 against 0.596 for margin 1, learning rate 0.5, batch 10, 3 epochs).
    word_pairs : bool, default False
        Also average the vectors of consecutive word pairs (own lookup-table rows, Sec. 4.3).
        Off by default: on the validation verses (en-fr, d = 50, 10 epochs, 3 seeds) word pairs
        reached P@1 0.681-0.700 against 0.697-0.718 without, at 2.6x the fit time (``--grid
        pairs``).
    learning_rate : float, default 1.0
        SGD step size; the gradient is averaged over the minibatch, so the step of one sample is
        ``learning_rate / batch_size`` (0.1 here). The best of 0.05, 0.2, 0.5 and 1.0 with batch 10
        (validation, 3 epochs, margin sqrt(d): 0.455), and about as good as batch 1 at its best
        rate, 0.05 (5 epochs, margin 1: 0.640 against 0.656), on the kernel's faster batched path.
    alpha : float, default 1e-4
        L2 weight on the updated rows, added as ``alpha * W[row]`` to the minibatch-mean gradient
        (as :class:`linxling.BiCVM`'s). Chosen on the validation verses (10 epochs, d = 50,
        ``python -m benchmarks.etter_defaults --grid alpha_fine``; benchmarks/README.md "Etter's
        ranking network: an L2 weight"): P@1 en-fr 0.746-0.755 over three seeds against
        0.697-0.718 with none (the default before 2026-12-01; 3e-5 0.729-0.742, 3e-4
        0.741-0.745, 1e-3 0.634), en-ru 0.725 against 0.674, en-zh 0.644 against 0.549; in the
        leaderboard's setting (six languages, d = 128, 3 epochs) 0.788 against 0.742. The thesis
        used none (:meth:`from_paper` gives 0).
    n_epochs, batch_size : int, default 10, 10
        Validation P@1 at d = 50 (seed 0): 0.643 after three epochs, 0.755 after ten; held-out
        test P@1 at the defaults by epoch 1 / 3 / 5 / 10: 0.504 / 0.655 / 0.717 / 0.769 (P(w)
        0.981-0.996); each epoch costs about as much as the first.
        Batch 10 against 1 and 100: see ``learning_rate``.
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
    init_scale : float, default 0.1
        Standard deviation of the Gaussian initialisation. Validation P@1 at 3 epochs: 0.600
        against 0.486 at 0.03, 0.579 at 0.3 and 0.210 at 1.0.
    min_df : int, default 1
        Words in fewer sentences are dropped from the vocabulary (every word kept). On the
        validation verses (d = 50, 10 epochs, seeds 0-2, ``python -m benchmarks.etter_defaults
        --grid min_df --keep-at 3 --epochs 10 --lang L``: every value trained on the pairs that
        keep a word at 3), mean P@1 at min_df 1 / 2 / 3: en-fr 0.757 / 0.760 / 0.763, en-ru
        0.726 / 0.728 / 0.726, en-zh 0.644 / 0.643 / 0.655, every range overlapping 1's (P(w)
        0.983-0.996 throughout), so 1 stays; as with :class:`linxling.BiCVM`, 2 and 3 make
        ``fit`` refuse the Bible pairs as given (a few verses keep no word on one side).
    random_state, n_threads, callback, show_progress
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
                 word_pairs: bool = False, learning_rate: float = 1.0, alpha: float = 1e-4,
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
        time, no regularisation; the learning rate is not given there (0.01 here). Keyword
        arguments override."""
        params: dict[str, Any] = dict(n_components=n_components, score="l1", margin=math.sqrt(n_components),
                      learning_rate=0.01, batch_size=1, n_epochs=10, center=False, alpha=0.0)
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
