"""Etter's CompressTree (Etter 2009, chapter 5): sentences compressed along a binary tree.

Words are looked up in a table ``E`` (V x d); a compression function ``h: R^d x R^d -> R^d``
(linear, or one hidden layer of ``hidden_size`` hardTanh units) is applied ``l - 1`` times along a
binary tree (left-to-right, random, or the greedy tree of Algorithm 4) until one vector is left:
the sentence vector. A linear layer scores it; training is SGD on the ranking criterion
``max(0, 1 - f(s) + f(s'))`` where ``s'`` is ``s`` with one word (a random position, or the
last one) replaced by a random vocabulary word (Sec. 5.4). Monolingual, as in the thesis.
Kernels: :mod:`linxling.kernels.compress_tree` (backpropagation by hand; NumPy reference in
:mod:`linxling.kernels.compress_tree_reference`).
"""
from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from linxling._progress import progress
from linxling._validation import check_language, check_language_keys, check_random_state, check_texts, unknown_language
from linxling._warnings import find_stack_level
from linxling.io import register_model
from linxling.models._estimator import (
    DEPRECATED,
    NO_KNOWN_WORDS_MIN_TEXTS,
    NONNEG_INT,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    LinxlingEstimator,
    as_output,
    warn_few_examples,
)

__all__ = ["CompressTree"]

_TREES = {"left": 0, "random": 1, "greedy": 2}
UNK = "<unk>"


def _tree_seed_generator(random_state: Any) -> np.random.Generator:
    """The generator of ``tree_seed_``, apart from the training stream: for an int or None its
    own ``default_rng(random_state)``; for a Generator a child spawned from it (no draws taken
    from its stream, and the same child from generators in the same state), or, for a generator
    that cannot spawn (no SeedSequence, or NumPy < 1.25), fresh entropy."""
    if isinstance(random_state, np.random.Generator):
        try:
            return random_state.spawn(1)[0]
        except (AttributeError, TypeError):          # NumPy < 1.25 has no Generator.spawn
            return np.random.default_rng()
    return np.random.default_rng(random_state)


@register_model("CompressTree")
class CompressTree(LinxlingEstimator):
    """Etter's compression-tree sentence encoder trained with a ranking criterion.

    The defaults were chosen on a similarity task of the training data (2026-12-01,
    benchmarks/README.md, "CompressTree: defaults chosen on paraphrase retrieval"; 3 seeds, mean
    +- standard deviation): ``benchmarks.paraphrase``, fitted on 23,329 KJV training verses, the
    3,929 validation verses' KJV text retrieving its Bible in Basic English paraphrase (centred
    cosine, P@1 of both directions; tf-idf 0.849). The earlier defaults (chosen by the mean
    corrupted rank of the training criterion) scored 0.030 +- 0.039 (0.009 with the leaderboard's
    5,000 words): trained on 5-token windows with the corrupted word at any position, the linear
    map applied to the left subtree grows expansive (spectral radius 1.35 after 5 epochs, seed 0)
    to see a corruption four merges deep, and a whole verse (26 tokens on average) runs through
    it 25 times, so every long verse's root points along its top eigenvector (one component held
    100% of the centred variance; median norms 108 for verses of <= 15 tokens, 1.3e6 for >= 40).
    ``corrupt="last"`` leaves that map at its contractive initialisation (the corrupted word enters
    at the last merge only; spectral radius 0.42) and scores 0.215 +- 0.001; then all words
    (``max_features=20000``; the training verses have 11,312) 0.246 +- 0.004 against 0.230 for
    5,000 and 0.215 for 1,000, ``init_scale=0.3`` and ``learning_rate=0.003`` 0.272 +- 0.003
    (0.1: 0.259, 1.0: 0.270; lr 0.01: 0.261, 0.03 with init 1.0: 0.256). No setting beats the
    untrained network (learning_rate 1e-9: 0.268 +- 0.003): the ranking criterion does not teach
    similarity here, and the defaults are those where training costs it least; the root is
    dominated by a verse's last few words. ``tree="random"`` (0.007) and ``"greedy"`` draw
    different trees for two wordings of a sentence, so their roots are not comparable; hidden
    layers (0.045 with 50 units, random corruptions) lose it too. The thesis' network is
    ``CompressTree.from_paper()``; the corrupted-rank criterion that chose the earlier defaults
    is in benchmarks/README.md, "CompressTree: how the defaults were chosen".

    Parameters
    ----------
    n_components : int, default 50
        Dimension ``d`` of word and sentence vectors (the thesis' 50; paraphrase P@1 with 100:
        0.250 +- 0.005 against 0.246 +- 0.004 at 3.5x the time, ``corrupt="last"``, lr 0.01).
    hidden_size : int, default 0
        ``0``: linear ``h(x, y) = A [x; y] + b``; ``> 0``: ``h = A2 hardTanh(A1 [x; y] + b1) + b2``
        with ``hidden_size`` (nHU) units (the thesis used 250). Named ``n_hidden`` before 0.2
        (accepted with a FutureWarning; BilDRL's width has this name).
    tree : {"left", "random", "greedy"}, default "left"
        Grouping order, for training and for :meth:`transform`. Only the left tree gives two
        wordings of a sentence comparable roots (paraphrase P@1, 3 seeds, the earlier defaults:
        random 0.007 +- 0.001; untrained, random 0.019 against left 0.26). ``"left"``: left to right;
        ``"random"``: a new random tree for each sentence at each training step (seeded by
        ``random_state``), and in :meth:`transform` each sentence's tree drawn from its words
        and ``tree_seed_``, so a sentence's vector does not depend on its batch; ``"greedy"``:
        Algorithm 4 under the current parameters (about 3x the training time).
    corrupt : {"random", "last"}, default "last"
        Which word the negative sentence replaces (Sec. 5.4.2; ``"random"`` is the thesis' setting
        of Fig. 5.13 and was the default before 2026-12-01). With ``"last"`` and the left tree the
        corruption enters at the last merge only: the map applied to the left subtree and its
        bias get no gradient (for the linear ``h`` the loss depends on the last and the corrupting
        word's vectors, the right block of ``A1`` and ``w`` only) and stay as initialised, which
        keeps the deep left tree of a whole sentence contractive. Paraphrase P@1 (3 seeds, 5,000
        words, 5 epochs, lr 0.01, init 0.1): 0.230 +- 0.007 against 0.009 +- 0.008 for
        ``"random"``, whose windows train that map to expand (spectral radius 1.35) so that long
        sentences collapse onto one direction. At the defaults (seed 0) ``corrupted_rank`` of 200
        5-token validation windows is 7.8% of the vocabulary at the last position, 35% at a
        random one (chance 50%).
    max_features : int, default 20000
        Vocabulary size (most frequent words, ``min_df`` documents at least); other words map to
        the ``"<unk>"`` entry. Paraphrase P@1 (3 seeds, ``corrupt="last"``, lr 0.01, init 0.1):
        1,000 words (the thesis' dictionary, the default before 2026-12-01) 0.215 +- 0.001, 5,000
        0.230 +- 0.007, 20,000 (every one of the training data's 11,312 words) 0.246 +- 0.004, in
        the same time (3.3 s).
    min_df : int, default 1
        A word must occur in at least this many training sentences to enter the vocabulary.
        Paraphrase P@1 (3 seeds, the other defaults; benchmarks/README.md, "CompressTree:
        ``min_df`` and ``word_learning_rate`` on paraphrase retrieval"): 1 / 2 / 3 / 5: 0.272 /
        0.264 / 0.259 / 0.257 (+- 0.003; 11,312 / 7,562 / 5,986 / 4,498 words), every value
        above 1 behind on every seed.
    n_epochs, learning_rate, word_learning_rate, init_scale : default 5, 0.003, None, 0.3
        Plain SGD, one (sentence, corrupted sentence) pair per step; ``word_learning_rate`` is
        the step of the word vectors (None: ``learning_rate``), ``init_scale`` the half-width of
        the uniform initial word vectors. Paraphrase P@1 (3 seeds, ``corrupt="last"``, 20,000
        words, 5 epochs): init 0.1 / 0.3 / 1.0 at lr 0.003: 0.259 / 0.272 / 0.270 (+- 0.003);
        at lr 0.01: 0.246 / 0.261 / 0.255; lr 0.03 (init 1.0): 0.256. 1 epoch ties 5 (0.272 +-
        0.004, init 0.3, lr 0.003) and 10 epochs score 0.266 (init 1.0); 5 are kept because they
        halve the last-position corrupted rank of validation windows (15.6% of the vocabulary
        after 1 epoch, 7.8% after 5; seed 0) in 4.3 s rather than 1.1 s. Before 2026-12-01:
        lr 0.01 and init 0.1, chosen by corrupted ranks (3 epochs: lr 0.003 and 0.03 reached
        the same loss). ``word_learning_rate`` (at lr 0.003, the other defaults; the same
        benchmarks/README.md section): None / 0.001 / 0.01 / 0.03: 0.272 / 0.272 / 0.271 / 0.267
        (+- 0.003-0.005); 0.001 and 0.01 tie the shared step, 0.03 is behind on every seed.
    window : int or None, default 5
        Train on one random window of ``window`` consecutive tokens of each sentence per epoch
        (the thesis trained on n-grams from a sliding window, length 5 working best, Sec. 5.4);
        ``transform`` still compresses whole sentences (paraphrase P@1, 3 seeds, ``corrupt="last"``,
        20,000 words, init 1.0, lr 0.01: windows of 5 0.255, whole sentences 0.253 in 5x the time).
        None trains on whole sentences, where the
        ranking signal of all but the last few words vanishes through the deep tree: on the
        validation verses (5,000 words, d = 50, lr 0.01, 3 epochs) whole sentences diverged
        (non-finite loss), windows of 10 reached mean corrupted ranks of 1,182 (windows) and
        1,291 (whole verses) against 414 and 299 for windows of 5 (chance 2,500).
    language : str or None
        The model's language; :meth:`transform` checks it. ``None``: whatever ``fit`` was given.
    random_state : int or None
        Seeds the initialisation, the sentence order, the corruptions and the random trees.
    callback : callable(model, epoch, loss) or None
        Called after every epoch with the model as trained so far (its ``transform``,
        ``score`` and ``corrupted_rank`` work inside the callback), e.g. to record a learning
        curve.
    show_progress : bool or None
        Progress bar (None follows :func:`linxling.set_show_progress`).
    """

    _multilingual_fit = False    # fit and transform take the same input

    _fitted_attr = "embeddings_"

    _renamed_params = {"n_hidden": "hidden_size"}
    _renamed_attrs = {"n_hidden_": "hidden_size_"}

    def __init__(self, n_components: int = 50, hidden_size: int = 0, tree: str = "left",
                 corrupt: str = "last", max_features: int = 20000, min_df: int = 1,
                 n_epochs: int = 5, learning_rate: float = 0.003, word_learning_rate: float | None = None,
                 init_scale: float = 0.3, language: str | None = None, random_state: Any = None,
                 callback: Any = None, show_progress: bool | None = None, window: int | None = 5,
                 n_hidden: int | str = DEPRECATED):
        self.n_components = n_components
        self.hidden_size = hidden_size
        self.tree = tree
        self.corrupt = corrupt
        self.max_features = max_features
        self.min_df = min_df
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.word_learning_rate = word_learning_rate
        self.init_scale = init_scale
        self.language = language
        self.random_state = random_state
        self.callback = callback
        self.show_progress = show_progress
        self.window = window
        self.n_hidden = n_hidden

    @classmethod
    def from_paper(cls, **overrides: Any) -> CompressTree:
        """The thesis' Fig. 5.13 setting (Etter 2009, Sec. 5.4.4, its best: mean rank 25.45 on
        Wikipedia 5-grams): d = 50, a 1,000-word dictionary, n-grams of 5 words (here one random
        5-token window of each sentence per epoch), the non-linear ``h`` with 250 hidden units,
        random trees, the corrupted word at a random position, plain SGD one pair per step;
        the thesis does not give its learning rate, initialisation or epochs (0.01, 0.1 and 5
        here, the defaults before 2026-12-01). Keyword arguments override."""
        params: dict[str, Any] = dict(n_components=50, hidden_size=250, tree="random", corrupt="random",
                                      max_features=1000, window=5, learning_rate=0.01, init_scale=0.1,
                                      n_epochs=5)
        params.update(overrides)
        return cls(**params)

    # ------------------------------------------------------------------ helpers
    #: checked at the start of every fit (:meth:`LinxlingEstimator._validate_declared_params`)
    _parameter_constraints: dict[str, list[Any]] = {
        "n_components": [POSITIVE_INT],
        "hidden_size": [NONNEG_INT],
        "tree": [StrOptions(set(_TREES))],
        "corrupt": [StrOptions({"random", "last"})],
        "max_features": [Interval(numbers.Integral, 2, None, closed="left")],
        "min_df": [POSITIVE_INT],
        "n_epochs": [POSITIVE_INT],
        "learning_rate": [POSITIVE_REAL],
        "word_learning_rate": [POSITIVE_REAL, None],
        "init_scale": [POSITIVE_REAL],
        "callback": [callable, None],
        "language": [str, None],
        "window": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "random_state": RANDOM_STATE,
        "show_progress": ["boolean", None],
    }

    def _check_language(self, language: Any) -> None:
        # a model fitted on a plain list without ``language`` has no language to check against
        check_language(language)
        if language is not None and self.language_ is not None and language != self.language_:
            raise unknown_language(language, [self.language_])   # the words every model uses

    def _encode_ids(self, texts: list[str], name: str, allow_empty: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
        from linxling.text import tokenize
        unk = self.vocabulary_index_[UNK]
        idx: list[int] = []
        indptr = [0]
        for i, t in enumerate(texts):
            toks = tokenize(t)
            if not toks and not allow_empty:
                raise ValueError(f"{name}[{i}] has no tokens (empty sentence): {t!r}")
            idx.extend(self.vocabulary_index_.get(w, unk) for w in toks)
            indptr.append(len(idx))
        return np.asarray(idx, dtype=np.int64), np.asarray(indptr, dtype=np.int64)

    def _tree_positions(self, indptr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        lengths = np.diff(indptr)
        n_pos = int((lengths - 1).sum())
        if self.tree != "random":
            return np.zeros(max(n_pos, 1), dtype=np.int64)
        # step k of a sentence of length l merges at a uniform position in 0 .. l-2-k
        out = np.zeros(max(n_pos, 1), dtype=np.int64)
        o = 0
        for l in lengths:
            if l > 1:
                ks = np.arange(l - 1)
                out[o:o + l - 1] = np.floor(rng.random(l - 1) * (l - 1 - ks)).astype(np.int64)
                o += l - 1
        return out

    def _content_tree_positions(self, indices: np.ndarray, indptr: np.ndarray) -> np.ndarray:
        """The random tree ``transform`` uses for each sentence: drawn from the sentence's own
        words and the model's ``tree_seed_`` (a hash, not a generator's stream), so a sentence
        gets the same tree, and vector, in any batch and any call."""
        lengths = np.diff(indptr)
        n_pos = int(np.maximum(lengths - 1, 0).sum())
        if self.tree != "random" or n_pos == 0:
            return np.zeros(max(n_pos, 1), dtype=np.int64)
        mask = np.uint64(2**64 - 1)
        with np.errstate(over="ignore"):
            # a polynomial hash of each sentence's word ids (uint64 arithmetic wraps)
            pos_in = np.arange(len(indices)) - np.repeat(indptr[:-1], lengths)
            powers = np.power(np.uint64(0x100000001B3), pos_in.astype(np.uint64))
            terms = (indices.astype(np.uint64) + np.uint64(1)) * powers
            h = np.zeros(len(lengths), dtype=np.uint64)
            full = lengths > 0
            h[full] = np.add.reduceat(terms, indptr[:-1][full])
            h ^= np.uint64(int(getattr(self, "tree_seed_", 0)) & int(mask))
            # step k of sentence s: splitmix64 of (h_s + (k + 1) * golden) -> uniform in [0, 1)
            steps = np.maximum(lengths - 1, 0)
            sent = np.repeat(np.arange(len(lengths)), steps)
            k = np.arange(n_pos) - np.repeat(np.cumsum(steps) - steps, steps)
            z = h[sent] + (k.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z ^= z >> np.uint64(31)
        u = (z >> np.uint64(11)).astype(np.float64) / float(2**53)
        # step k of a sentence of length l merges at a uniform position in 0 .. l-2-k
        return np.floor(u * (lengths[sent] - 1 - k)).astype(np.int64)

    def _windows(self, indices: np.ndarray, indptr: np.ndarray, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
        """This epoch's training sequences: one random window of ``window`` consecutive tokens
        of each sentence (the whole sentence when shorter, or when ``window`` is None)."""
        if self.window is None:
            return indices, indptr
        lengths = np.diff(indptr)
        w = np.minimum(lengths, int(self.window))
        start = indptr[:-1] + np.floor(rng.random(len(lengths)) * (lengths - w + 1)).astype(np.int64)
        sub_indptr = np.concatenate([[0], np.cumsum(w)]).astype(np.int64)
        offsets = np.arange(sub_indptr[-1]) - np.repeat(sub_indptr[:-1], w)
        return indices[np.repeat(start, w) + offsets], sub_indptr

    def _params(self):
        return (self.A1_, self.b1_, self.A2_, self.b2_, self.w_, float(self.w0_), self.hidden_size_ > 0)

    # ------------------------------------------------------------------ fit
    def fit(self, X: Sequence[str] | dict, y: Any = None) -> CompressTree:
        """Train on sentences ``X`` (a list of str, or ``{language: texts}`` with one language)."""
        from linxling.kernels import compress_tree as K
        from linxling.text import tokenize
        from linxling.text._vectorize import vocabulary_and_sequences

        language = self.language
        if isinstance(X, dict):
            if len(X) != 1:
                raise ValueError(f"CompressTree is monolingual: give one language, got {list(X)}")
            check_language_keys(X, "X")
            (lang, texts), = X.items()
            if language is not None and lang != language:
                raise ValueError(f"X is in {lang!r} but language={language!r}")
            language = lang
        else:
            texts = X
        texts = check_texts(texts, "X", allow_empty=False)
        warn_few_examples(self, len(texts), "training sentences")
        d = int(self.n_components)
        if len(texts) >= d:               # fewer: warn_few_examples spoke
            seen: set[str] = set()
            for t in texts:               # stops at n_components distinct texts
                seen.add(t)
                if len(seen) >= d:
                    break
            if len(seen) < d:
                same = "are all one and the same text" if len(seen) == 1 else f"are only {len(seen)} distinct texts"
                warnings.warn(f"CompressTree: the {len(texts)} training sentences {same}, fewer than "
                              f"n_components={d}: the model learns those few sentences' words alone; give "
                              "varied sentences or lower n_components", UserWarning, stacklevel=find_stack_level())
        # each sentence tokenized once: its word ids come with the vocabulary
        vocab, ids, indptr = vocabulary_and_sequences(texts, tokenizer=tokenize, min_df=int(self.min_df),
                                                      max_features=int(self.max_features) - 1,
                                                      show_progress=False)
        words = list(vocab.words) + [UNK]
        self.vocabulary_ = words
        self.vocabulary_index_ = {w: i for i, w in enumerate(words)}
        self.language_ = language
        empty = np.flatnonzero(np.diff(indptr) == 0)
        if empty.size:
            i = int(empty[0])
            raise ValueError(f"X[{i}] has no tokens (empty sentence): {texts[i]!r}")
        indices = np.where(ids >= 0, ids, len(words) - 1)          # a word not kept: UNK, the last
        lengths = np.diff(indptr)
        keep = np.flatnonzero(lengths >= 2)
        if len(keep) < len(texts):
            warnings.warn(f"CompressTree: {len(texts) - len(keep)} of {len(texts)} sentences have "
                          "a single token and cannot be compressed or corrupted; they are not "
                          "used for training", UserWarning, stacklevel=find_stack_level())
        if len(keep) == 0:
            raise ValueError("X has no sentence of at least two tokens to train on")
        rng = np.random.default_rng(self.random_state)
        # the seed of transform's random trees, from its own generator (the training stream
        # stays as it was); a Generator random_state gives a child of it (spawning takes no
        # draws from its stream), so that generators in the same state give the same trees
        self.tree_seed_ = int(_tree_seed_generator(self.random_state).integers(0, 2**62))
        d = int(self.n_components)
        H = int(self._param("hidden_size"))
        V = len(words)
        sc = float(self.init_scale)
        E = rng.uniform(-sc, sc, (V, d))
        m = H if H > 0 else d
        A1 = rng.uniform(-1, 1, (m, 2 * d)) / np.sqrt(2 * d)
        b1 = np.zeros(m)
        A2 = rng.uniform(-1, 1, (d, H)) / np.sqrt(max(H, 1)) if H > 0 else np.zeros((0, 0))
        b2 = np.zeros(d) if H > 0 else np.zeros(0)
        w = rng.uniform(-1, 1, d) / np.sqrt(d)
        lr = float(self.learning_rate)
        lr_w = float(self.word_learning_rate) if self.word_learning_rate is not None else lr
        kind = _TREES[self.tree]
        # sentences with >= 2 tokens, re-packed
        full_indptr = np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64)
        full_indices = np.concatenate([indices[indptr[s]:indptr[s + 1]] for s in keep])
        n = len(keep)
        self.loss_curve_ = []
        for epoch in progress(range(int(self.n_epochs)), desc="CompressTree epochs",
                              show=self.show_progress):
            sub_indices, sub_indptr = self._windows(full_indices, full_indptr, rng)
            sub_len = np.diff(sub_indptr)
            order = rng.permutation(n).astype(np.int64)
            if self.corrupt == "last":
                neg_pos = sub_len - 1
            else:
                neg_pos = np.floor(rng.random(n) * sub_len).astype(np.int64)
            orig = sub_indices[sub_indptr[:-1] + neg_pos]
            neg_word = rng.integers(0, V - 1, n)
            neg_word = neg_word + (neg_word >= orig)          # never the original word
            tree_pos = self._tree_positions(sub_indptr, rng)
            total = K.train_epoch(E, A1, b1, A2, b2, w, 0.0, H > 0, sub_indices, sub_indptr, order,
                                  neg_pos.astype(np.int64), neg_word.astype(np.int64), kind,
                                  tree_pos, lr, lr_w)
            if not np.isfinite(total) or not np.all(np.isfinite(E)):
                raise FloatingPointError("CompressTree diverged (non-finite loss); lower "
                                         "learning_rate")
            self.loss_curve_.append(float(total) / n)
            if self.callback is not None:
                self._set_fitted(E, A1, b1, A2, b2, w, H)     # the arrays train in place
                self.callback(self, epoch, self.loss_curve_[-1])
        self._set_fitted(E, A1, b1, A2, b2, w, H)
        return self

    def _set_fitted(self, E, A1, b1, A2, b2, w, H):
        self.A1_, self.b1_, self.A2_, self.b2_, self.w_ = A1, b1, A2, b2, w
        self.w0_ = 0.0    # the ranking loss does not depend on the score's bias
        self.hidden_size_ = H
        self.embeddings_ = E

    # ------------------------------------------------------------------ use
    def transform(self, X: Sequence[str], language: str | None = None, dtype: Any = None) -> np.ndarray:
        """Sentence vectors (root of the tree), (n, n_components), C-contiguous, in ``dtype`` when
        given; a text without tokens gives a zero row (as in every other model). A random tree is
        drawn from the sentence's words and the model's ``tree_seed_``: a sentence gets the same
        vector in any batch."""
        from linxling.kernels import compress_tree as K
        self._check_fitted()
        self._check_language(language)
        texts = check_texts(X, "X", allow_empty=False)
        indices, indptr = self._encode_ids(texts, "X", allow_empty=True)
        if len(texts) >= NO_KNOWN_WORDS_MIN_TEXTS and not np.any(indices != self.vocabulary_index_[UNK]):
            # as warn_no_known_words, but here unknown words are <unk>, not zero vectors
            warnings.warn(f"CompressTree.transform: none of the {len(texts)} texts has a word of the model's "
                          "vocabulary (every word reads as <unk>, an empty text embeds as zero), so the vectors "
                          "say nothing of the texts; are the texts in the language the model was fitted on?",
                          UserWarning, stacklevel=find_stack_level())
        lengths = np.diff(indptr)
        out = np.zeros((len(texts), self.embeddings_.shape[1]))      # an empty text: a zero vector
        full = np.flatnonzero(lengths > 0)
        if len(full):
            sub_indptr = np.concatenate([[0], np.cumsum(lengths[full])]).astype(np.int64)
            sub_indices = np.concatenate([indices[indptr[s]:indptr[s + 1]] for s in full])
            tree_pos = self._content_tree_positions(sub_indices, sub_indptr)
            A1, b1, A2, b2, w, _, nl = self._params()
            enc = np.empty((len(full), self.embeddings_.shape[1]))
            K.encode(self.embeddings_, sub_indices, sub_indptr, _TREES[self.tree], tree_pos, A1, b1, A2, b2,
                     w, nl, enc)
            out[full] = enc
        return as_output(out, dtype)

    def score(self, X: Sequence[str], y: Any = None, language: str | None = None) -> np.ndarray:
        """Ranking score ``f(s)`` of each sentence (not an sklearn accuracy)."""
        Z = self.transform(X, language=language)
        return Z @ self.w_ + self.w0_

    def corrupted_rank(self, X: Sequence[str], language: str | None = None, *,
                       position: str = "random", random_state: Any = None) -> np.ndarray:
        """Sec. 5.4.2 rank of each sentence against its corruptions: the word at one position
        (``"random"`` or ``"last"``) replaced by every other vocabulary word; rank 1 = the true
        sentence scores strictly higher than all of them. Sentences need >= 2 tokens."""
        from linxling.kernels import compress_tree as K
        self._check_fitted()
        self._check_language(language)
        if position not in ("random", "last"):
            raise ValueError(f"position must be 'random' or 'last', got {position!r}")
        texts = check_texts(X, "X", allow_empty=False)
        indices, indptr = self._encode_ids(texts, "X")
        lengths = np.diff(indptr)
        if np.any(lengths < 2):
            raise ValueError(f"X[{int(np.flatnonzero(lengths < 2)[0])}] has fewer than two tokens")
        rng = check_random_state(random_state)     # NumPy's own errors named no argument
        pos = lengths - 1 if position == "last" else np.floor(rng.random(len(texts)) * lengths)
        tree_pos = self._content_tree_positions(indices, indptr)
        A1, b1, A2, b2, w, w0, nl = self._params()
        return K.corrupted_ranks(self.embeddings_, indices, indptr, pos.astype(np.int64),
                                 _TREES[self.tree], tree_pos, A1, b1, A2, b2, w, w0, nl)

    def word_vectors(self, language: str | None = None) -> tuple[list[str], np.ndarray]:
        """``(words, vectors)``: the vocabulary (``"<unk>"`` last) and a copy of the lookup table
        ``E`` (changing it leaves the model alone)."""
        self._check_fitted()
        self._check_language(language)
        return list(self.vocabulary_), self.embeddings_.copy()

    # ------------------------------------------------------------------ store
    def _get_state(self):
        self._check_fitted()
        params = self._params_state()
        params["language_"] = self.language_
        params["vocabulary"] = list(self.vocabulary_)
        params["loss_curve"] = list(self.loss_curve_)
        params["tree_seed"] = int(self.tree_seed_)
        arrays = {"E": self.embeddings_, "A1": self.A1_, "b1": self.b1_, "A2": self.A2_,
                  "b2": self.b2_, "w": self.w_, "w0": np.array([self.w0_])}
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        model = cls._from_params_state(params)
        if "window" not in params:         # files before windows: trained on whole sentences
            model.window = None
        model.language_ = params["language_"]
        model.vocabulary_ = list(params["vocabulary"])
        model.vocabulary_index_ = {w: i for i, w in enumerate(model.vocabulary_)}
        model.loss_curve_ = list(params.get("loss_curve", []))
        model.tree_seed_ = int(params.get("tree_seed", 0))          # files before 0.2: 0
        model.embeddings_ = np.asarray(arrays["E"])
        model.A1_, model.b1_ = np.asarray(arrays["A1"]), np.asarray(arrays["b1"])
        model.A2_, model.b2_ = np.asarray(arrays["A2"]), np.asarray(arrays["b2"])
        model.w_ = np.asarray(arrays["w"])
        model.w0_ = float(np.asarray(arrays["w0"])[0])
        model.hidden_size_ = int(model.hidden_size)                 # files before 0.2: n_hidden
        V, d = len(model.vocabulary_), int(model.n_components)
        m = model.hidden_size_ if model.hidden_size_ > 0 else d       # the kernels index E by word id
        shapes = {"E": (V, d), "A1": (m, 2 * d), "b1": (m,), "w": (d,)}
        if model.hidden_size_ > 0:
            shapes.update(A2=(d, m), b2=(d,))
        got = {"E": model.embeddings_, "A1": model.A1_, "b1": model.b1_, "w": model.w_, "A2": model.A2_,
               "b2": model.b2_}
        for name, shape in shapes.items():
            if got[name].shape != shape:
                raise ValueError(f"arrays/{name} has shape {got[name].shape}, expected {shape} for "
                                 f"{V} words, n_components={d}, hidden_size={model.hidden_size_}")
        return model
