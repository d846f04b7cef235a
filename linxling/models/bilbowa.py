"""BilBOWA: bilingual bag-of-words embeddings without word alignments (Gouws et al. 2015).

The word space BilDRL (Chen et al. 2019) starts from. Per language, skip-gram with negative
sampling on monolingual text (word2vec: dynamic window, subsampling of frequent words,
negatives from unigram^0.75, linearly decaying learning rate); across languages, the
sentence-mean alignment loss ``alignment_weight * ||mean W_a[S] - mean W_b[T]||^2`` on
row-aligned parallel sentences ``(S, T)``.

Schedule (interleaved, stated): every epoch the monolingual corpora are cut into ``n_blocks``
blocks; after the skip-gram block of every language (languages in parallel, numba threads,
disjoint rows: no races) comes the alignment block of the same fraction of the parallel pairs
(serial), on the parallel sentences subsampled like the monolingual text (frequent words
dropped at random each epoch, so function words do not dominate the sentence means).
Bitwise reproducible for a given ``random_state``, whatever the number of threads.

Mapping (``mapping="procrustes"``, not part of BilBOWA as published): after training, every
language's vectors are scaled to unit length and each language ``s`` of the seed lexicon
``{(s, t): [(word_s, word_t), ...]}`` is rotated onto ``t`` by the orthogonal Procrustes map
``W = U V^T`` of the SVD ``X^T Y = U S V^T`` (``X``, ``Y`` the unit vectors of the lexicon pairs
in vocabulary), the solution of ``min_{W^T W = I} ||X W - Y||_F`` (:func:`procrustes`). With
``alignment_weight=0`` (or no parallel text) this is the offline mapping family: monolingual
skip-gram per language, then a rotation learnt from a seed dictionary (Mikolov et al. 2013;
Xing et al. 2015).
Kernels: :mod:`linxling.kernels.skipgram` (reference :mod:`linxling.kernels.skipgram_reference`).
"""
from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.utils._param_validation import StrOptions

from linxling._validation import check_language, check_texts, unknown_language
from linxling._warnings import find_stack_level
from linxling.io import register_model
from linxling.models._base import stored_float, stored_languages, stored_word_table
from linxling.models._estimator import (
    DEPRECATED,
    FLOAT_DTYPE,
    NONNEG_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    LinxlingEstimator,
    as_output,
    warn_no_known_words,
)

__all__ = ["BilBOWA", "procrustes"]


def procrustes(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Orthogonal Procrustes: the ``W`` (d, d), ``W^T W = I``, minimising ``||X W - Y||_F``.

    ``W = U V^T`` with ``X^T Y = U S V^T`` (Schönemann 1966). ``X``, ``Y``: (n, d), row-aligned.
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if X.ndim != 2 or X.shape != Y.shape:
        raise ValueError(f"X and Y must be 2-D of the same shape, got {X.shape} and {Y.shape}")
    if X.shape[0] == 0:
        raise ValueError("X and Y have no rows")
    U, _, Vt = np.linalg.svd(X.T @ Y)
    return U @ Vt


@register_model("BilBOWA")
class BilBOWA(LinxlingEstimator):
    """Bilingual word embeddings: skip-gram per language + sentence-mean alignment.

    Parameters
    ----------
    n_components : int, default 100
        Chosen with ``alignment_weight`` on a validation split of the Wikt3l *training* rows
        (500 targets per direction held out; text: Bible + denckring glosses + training
        definitions, parallel: Bible verses; benchmarks/README.md "BilDRL"): the held-out rows'
        headword vectors as queries for their targets ("headword oracle"), P@10 fr-en / en-fr:
        50 dims, weight 1 (the earlier defaults): 1.6 / 0.2 %; 100 dims, weight 10: 2.4 / 1.0 %
        (P@1 1.2 / 0.8 against 0.0 / 0.2). Both are near chance: with the Bible as the only
        parallel text BilBOWA does not align the words a reverse dictionary needs (on the MUSE
        en-fr test split, weight 10 gave P@1 0.9 % and weight 1 0.0 %). Those runs took word2vec's
        5 epochs at step 0.025, the defaults then (``n_epochs``). With today's defaults, d = 50
        / 100 / 200 scored 0.874 / 0.889 / 0.902 validation verse P@1 and 0.130 / 0.135 / 0.139
        MUSE P@1 (as ``n_epochs``; fits 23 / 30 / 44 s): 100 kept for the time. The paper's
        setting: :meth:`from_paper`.
    window : int, default 5
        Maximum context distance (the effective window is drawn in ``1..window`` per word).
        ``window``, ``negative`` and ``sample`` are word2vec's usual values (:meth:`from_paper`'s
        too), kept after the validation below.
    negative : int, default 5
        Negative samples per (word, context) pair.
    sample : float, default 1e-4
        Subsampling threshold of frequent words (0 keeps every token). Validation (as
        ``n_epochs``; 20 epochs, step 0.025) en-de at 0 / 1e-4 / 1e-3: retrieval P@1 0.838 /
        0.861 / 0.873, MUSE P@1 0.093 / 0.124 / 0.116, fits 83 / 35 / 51 s.
    alignment_weight : float, default 10.0
        Weight of the alignment loss (first chosen with ``n_components``; then on the validation
        of ``n_epochs``, validation P@1 / MUSE P@1 en-de, at 20 epochs and step 0.025, weight 1 /
        3 / 10 / 30: 0.576 / 0.074, 0.792 / 0.110, 0.861 / 0.124, 0.845 / 0.124; at step 0.05,
        the default: 10 0.889 / 0.135, 30 0.198 / 0.071, 100 diverged).
    min_count : int, default 3
        Words seen fewer times in a language's monolingual text are dropped (a token count, as
        word2vec's ``min_count``, not the number of documents that the other models' ``min_df``
        counts). Validation (as ``n_epochs``; 20 epochs, step 0.025) en-de at 1 / 2 / 3 / 5:
        retrieval P@1 0.854 / 0.859 / 0.861 / 0.851, MUSE P@1 0.124 / 0.125 / 0.124 / 0.124 (a
        lower count adds rare words, each poorly trained): a tie, 3 kept (a smaller vocabulary
        than 1 or 2).
    max_vocab : int or None, default 200_000
        Keep the most frequent words per language.
    n_epochs : int, default 20
        Passes over the monolingual and parallel text (each pass in ``n_blocks`` interleaved blocks).
        Chosen with ``learning_rate`` on a validation split of Bible verse pairs (all training
        verses but the 1,000 held-out pairs of the BiCVM benchmark, 1,000 more held out for
        validation; ``python -m benchmarks.bilbowa_defaults``, benchmarks/README.md "BilBOWA's
        defaults"): validation verse retrieval P@1 (both directions, mean) / MUSE en-de *training*
        dictionary P@1 (CSLS, out-of-vocabulary words as misses), en-de: 5 epochs at step 0.025
        (the earlier defaults, word2vec's) 0.189 / 0.033: the model barely learned; 20 at 0.025
        0.861 / 0.124; **20 at 0.05 0.889 / 0.135** (en-fr 0.912 / 0.142); 40 at 0.05 0.903 /
        0.140 for twice the time. On a smaller corpus the gap is wider: held-out New Testament
        en->de P@1 0.005 (old defaults) against 0.766.
    learning_rate : float, default 0.05
        Initial SGD step, decayed linearly to ``learning_rate * 1e-4``. 0.025, word2vec's and
        :meth:`from_paper`'s, learns too slowly on a corpus of Bible size (``n_epochs``); a
        larger step makes the alignment unstable: 0.1 with 40 epochs fell to 0.454 validation
        P@1, and ``alignment_weight`` 30 at 0.05 to 0.198 (100 diverged), since the alignment's
        step is ``alignment_weight`` times this one (unless ``alignment_learning_rate`` is set;
        0.025 there with 0.05 or 0.1 here: 0.870 / 0.825, no gain).
    alignment_learning_rate : float or None, default None
        Step of the alignment loss (None: ``learning_rate``), decayed alike.
    n_blocks : int, default 20
        Blocks per epoch of the interleaved schedule. Validation (as ``n_epochs``, at the
        defaults) en-de at 5 / 20 / 80: retrieval P@1 0.892 / 0.889 / 0.886, MUSE P@1 0.135 /
        0.135 / 0.136: a tie, 20 kept.
    mapping : {None, "procrustes"}, default None
        ``"procrustes"``: after training, unit-normalise the vectors and rotate each source
        language of ``fit(..., seed_lexicon=...)`` onto its target language (module docstring).
    dtype : {"float32", "float64"}, default "float32"
        Floating type of the word vectors, during training and in ``vectors_``, and of every
        output: ``transform`` (unless its own ``dtype`` is given), ``word_vectors``, ``mapping_``.
    random_state : int or None
        Seeds the initial vectors, the subsampling, the negative samples and the window sizes
        (a fit is bitwise reproducible for a given seed, whatever the number of threads).
    show_progress : bool or None
        A progress bar over the epochs (None follows :func:`linxling.set_show_progress`).
    callback : callable(model, iteration, loss) or None
        Called after each epoch (as every linxling model's callback) with the model as trained
        so far (its ``transform`` and ``word_vectors`` work inside the callback; with
        ``mapping="procrustes"``, before the mapping): ``iteration`` counts the epochs from 0;
        ``loss`` is the epoch's mean loss, the mean over languages of the mean skip-gram loss
        plus the mean alignment loss (when there is parallel text); the parts are in
        ``loss_curve_[-1]``. Not saved.

    Attributes
    ----------
    languages_ : list of str
        Sorted (Cr5, CL-LSI and b-WMF keep the order of their input, x-WMF puts its pivot first).
    words_ : dict language -> list of str, by decreasing frequency
    vectors_ : dict language -> array (n_words, n_components), the input ("W") vectors
    loss_curve_ : list of dict, per epoch ``{"skipgram": {lang: mean loss}, "alignment": mean}``
        (``loss_history_``, its name before 0.2, still reads with a FutureWarning)
    mapping_ : dict "src-tgt" -> array (d, d)
        ``mapping="procrustes"``: the rotations applied (``vectors_`` are already mapped), in
        ``dtype``.
    n_seed_pairs_ : dict "src-tgt" -> int
        Seed-lexicon pairs with both words in vocabulary (the ones the rotation is learnt from).
    """

    _fitted_attr = "vectors_"
    _renamed_params = {"epochs": "n_epochs"}
    _renamed_attrs = {"loss_history_": "loss_curve_"}

    def __init__(self, n_components: int = 100, window: int = 5, negative: int = 5, sample: float = 1e-4,
                 alignment_weight: float = 10.0, min_count: int = 3, max_vocab: int | None = 200_000,
                 n_epochs: int = 20, learning_rate: float = 0.05, alignment_learning_rate: float | None = None,
                 n_blocks: int = 20, mapping: str | None = None, dtype: str = "float32", random_state: Any = None,
                 show_progress: bool | None = None, callback: Callable[[Any, int, float], Any] | None = None,
                 epochs: int | str = DEPRECATED) -> None:
        self.n_components = n_components
        self.window = window
        self.negative = negative
        self.sample = sample
        self.alignment_weight = alignment_weight
        self.min_count = min_count
        self.max_vocab = max_vocab
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.alignment_learning_rate = alignment_learning_rate
        self.n_blocks = n_blocks
        self.mapping = mapping
        self.dtype = dtype
        self.random_state = random_state
        self.show_progress = show_progress
        self.callback = callback
        self.epochs = epochs

    @classmethod
    def from_paper(cls, **overrides: Any) -> BilBOWA:
        """BilBOWA as BilDRL's paper used it: Chen et al. (2019) pre-trained "50-dimensional"
        BilBOWA "based on the original configuration in (Gouws et al., 2015)". Gouws et al.'s
        paper is not in this workspace, so only the dimension is the paper's; the other values
        are word2vec's usual ones (window 5, 5 negatives, subsampling 1e-4, step 0.025, 5 epochs) with
        alignment weight 1, this class's defaults before they were measured (``n_components``).
        ``overrides`` replace any of these."""
        params: dict[str, Any] = dict(n_components=50, window=5, negative=5, sample=1e-4, alignment_weight=1.0,
                                      learning_rate=0.025, n_epochs=5)
        params.update(overrides)
        return cls(**params)

    # ------------------------------------------------------------------ validation
    #: checked at the start of every fit (:meth:`LinxlingEstimator._validate_declared_params`)
    _parameter_constraints: dict[str, list[Any]] = {
        "n_components": [POSITIVE_INT],
        "window": [POSITIVE_INT],
        "negative": [POSITIVE_INT],
        "min_count": [POSITIVE_INT],
        "n_epochs": [POSITIVE_INT],
        "n_blocks": [POSITIVE_INT],
        "max_vocab": [POSITIVE_INT, None],
        "learning_rate": [POSITIVE_REAL],
        "alignment_learning_rate": [POSITIVE_REAL, None],
        "sample": [NONNEG_REAL],
        "alignment_weight": [NONNEG_REAL],
        "dtype": [FLOAT_DTYPE],
        "mapping": [StrOptions({"procrustes"}), None],
        "random_state": RANDOM_STATE,
        "show_progress": ["boolean", None],
        "callback": [callable, None],
    }

    @staticmethod
    def _check_corpora(monolingual, parallel):
        if not isinstance(monolingual, dict):
            raise TypeError("monolingual must be a non-empty dict language -> list of str, got "
                            f"{type(monolingual).__name__}")
        if not monolingual:
            raise ValueError("monolingual is empty: give a dict language -> list of str with at least one language")
        mono = {}
        for lang, texts in monolingual.items():
            if not isinstance(lang, str) or not lang:
                raise ValueError(f"monolingual: language keys must be non-empty str, got {lang!r}")
            mono[lang] = check_texts(texts, f"monolingual[{lang!r}]")
            if not mono[lang]:
                raise ValueError(f"monolingual[{lang!r}] is empty")
        par: dict[str, list[str]] = {}
        if parallel is not None:
            if not isinstance(parallel, dict):
                raise TypeError(f"parallel must be a dict language -> row-aligned list of str, got "
                                f"{type(parallel).__name__}")
            for lang, texts in parallel.items():
                if lang not in mono:
                    raise ValueError(f"parallel language {lang!r} has no monolingual text (languages: "
                                     f"{sorted(mono)}): its vocabulary comes from monolingual")
                par[lang] = check_texts(texts, f"parallel[{lang!r}]")
            if len(par) == 1:
                raise ValueError("parallel needs at least two languages")
            sizes = {lang: len(t) for lang, t in par.items()}
            if len(set(sizes.values())) > 1:
                raise ValueError(f"parallel texts must be row-aligned (same length), got {sizes}")
            if par and not next(iter(sizes.values())):
                raise ValueError("parallel texts are empty")
        return mono, par

    # ------------------------------------------------------------------ fit
    def fit(self, monolingual: Mapping[str, Sequence[str]], parallel: Any = None,
            seed_lexicon: Any = None) -> BilBOWA:
        """Learn the word vectors.

        Parameters
        ----------
        monolingual : dict language -> list of str
            Text per language (any sentences; e.g. glosses and Bible verses). Defines each
            language's vocabulary.
        parallel : dict language -> list of str, optional
            Row-aligned translations (e.g. Bible verses); every pair of languages in it is
            aligned. Without it the languages are trained independently (no shared space).
        seed_lexicon : dict (source, target) -> list of (source word, target word), optional
            Required by ``mapping="procrustes"`` (and only used then): the translation pairs the
            rotation of ``source`` onto ``target`` is learnt from (pairs with a word out of
            vocabulary are skipped; the count kept is ``n_seed_pairs_``).
        """
        from linxling._progress import progress
        from linxling.kernels import skipgram as K
        from linxling.text import tokenize

        mono, par = self._check_corpora(monolingual, parallel)
        lexicon = self._check_lexicon(seed_lexicon, mono)
        if len(mono) > 1 and not par and self.mapping is None:
            # fit({'en': ..., 'fr': ...}) as the other models are fitted: nothing ties the languages
            warnings.warn(f"BilBOWA: no parallel text, so the languages {sorted(mono)} are trained "
                          "independently and their vectors are not in one space (crosslingual similarities "
                          "are meaningless); give row-aligned translations as parallel= (e.g. fit(texts, "
                          "texts) for aligned texts) or mapping='procrustes' with a seed_lexicon",
                          UserWarning, stacklevel=find_stack_level())
        languages = sorted(mono)
        rng = np.random.default_rng(self.random_state)
        dt = np.dtype(self.dtype)
        d = int(self.n_components)
        if par:
            _warn_little_parallel(par, d)

        words, index, counts = {}, {}, {}
        tok_lists = {}
        for lang in languages:
            toks = [tokenize(t) for t in mono[lang]]
            c = Counter(w for s in toks for w in s)
            items = sorted(((w, n) for w, n in c.items() if n >= self.min_count), key=lambda x: (-x[1], x[0]))
            if self.max_vocab is not None:
                items = items[: int(self.max_vocab)]
            if not items:
                raise ValueError(f"monolingual[{lang!r}] has no word seen min_count={self.min_count} times")
            words[lang] = [w for w, _ in items]
            if len(items) < d:                 # as Cr5 warns of a vocabulary smaller than n_components
                warnings.warn(f"BilBOWA: monolingual[{lang!r}] has {len(items)} words seen min_count="
                              f"{self.min_count} times, fewer than n_components={d}: its vectors cannot span "
                              "their dimensions and are mostly their random initialisation; give more text "
                              "or lower n_components", UserWarning, stacklevel=find_stack_level())
            counts[lang] = np.array([n for _, n in items], dtype=np.float64)
            index[lang] = {w: i for i, w in enumerate(words[lang])}
            tok_lists[lang] = toks

        # stacked layout: language l owns rows offsets[l]:offsets[l+1]
        sizes = np.array([len(words[lang]) for lang in languages], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        W = ((rng.random((int(offsets[-1]), d)) - 0.5) / d).astype(dt)
        C = np.zeros_like(W)

        keep_parts, cdf_parts = [], []
        for lang in languages:
            f = counts[lang] / counts[lang].sum()
            if self.sample > 0:
                t = float(self.sample)
                keep_parts.append(np.minimum(1.0, (np.sqrt(f / t) + 1.0) * t / f))
            else:
                keep_parts.append(np.ones_like(f))
            p = counts[lang] ** 0.75
            cdf = np.cumsum(p / p.sum())
            cdf[-1] = 1.0
            cdf_parts.append(cdf)
        keep = np.concatenate(keep_parts)
        cdf_all = np.concatenate(cdf_parts)
        cdf_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

        # encoded monolingual sentences, languages one after the other
        tok_arr, sent_ptr, lang_sent = [], [0], []
        for lang in languages:
            idx = index[lang]
            first = len(sent_ptr) - 1
            for s in tok_lists[lang]:
                ids = [idx[w] for w in s if w in idx]
                if len(ids) < 2:
                    continue
                tok_arr.extend(ids)
                sent_ptr.append(len(tok_arr))
            lang_sent.append((first, len(sent_ptr) - 1))
        tokens = np.asarray(tok_arr, dtype=np.int64)
        sent_ptr_a = np.asarray(sent_ptr, dtype=np.int64)
        max_len = int(np.diff(sent_ptr_a).max()) if len(sent_ptr_a) > 1 else 1
        del tok_lists

        # encoded parallel pairs, per pair of languages
        pairs = []
        pl = sorted(par)
        enc = {}
        for lang in pl:
            idx = index[lang]
            t_: list[int] = []
            p_ = [0]
            for text in par[lang]:
                t_.extend(idx[w] for w in tokenize(text) if w in idx)
                p_.append(len(t_))
            enc[lang] = (np.asarray(t_, dtype=np.int64), np.asarray(p_, dtype=np.int64))
        for i, a in enumerate(pl):
            for b in pl[i + 1:]:
                pairs.append((a, b))
        n_par = len(next(iter(par.values()))) if par else 0
        if self.alignment_weight > 0:
            _warn_unaligned("BilBOWA", enc, pairs, f"words seen min_count={self.min_count} times in monolingual",
                            "give parallel text in the languages of monolingual or lower min_count")

        states = K.seed_states(rng, len(languages))
        n_blocks = int(self.n_blocks)
        total_steps = int(self._param("n_epochs")) * n_blocks
        lr0 = float(self.learning_rate)
        alr0 = float(self.alignment_learning_rate) if self.alignment_learning_rate is not None else lr0
        li = {lang: k for k, lang in enumerate(languages)}
        self.loss_curve_ = []
        # the fitted attributes before training, vectors_ as views of W: a callback's model
        # embeds with the vectors trained so far (a failed fit puts the old attributes back)
        self.languages_ = languages
        self.words_ = words
        self.vectors_ = {lang: W[offsets[k]:offsets[k + 1]] for k, lang in enumerate(languages)}
        self.n_features_in_ = {lang: len(words[lang]) for lang in languages}
        step = 0
        pairs_seen = np.zeros(len(languages), dtype=np.int64)
        bar = progress(range(int(self._param("n_epochs"))), show=self.show_progress, desc="BilBOWA", unit="epoch")
        for epoch in bar:
            sg_loss = np.zeros(len(languages))
            sg_n = np.zeros(len(languages), dtype=np.int64)
            al_loss, al_n = 0.0, 0
            order = rng.permutation(n_par) if n_par else None
            # the alignment sees the parallel sentences subsampled like the skip-gram text
            enc_ep = {lang: _subsample(*enc[lang], keep[offsets[li[lang]]:offsets[li[lang] + 1]], rng)
                      for lang in pl}
            for blk in range(n_blocks):
                frac = max(1.0 - step / total_steps, 1e-4)
                ranges = np.array([[s0 + (s1 - s0) * blk // n_blocks, s0 + (s1 - s0) * (blk + 1) // n_blocks]
                                   for s0, s1 in lang_sent], dtype=np.int64)
                loss, n = K.skipgram_block(W, C, tokens, sent_ptr_a, ranges, offsets[:-1], cdf_all,
                                           cdf_ptr, keep, states, int(self.window), int(self.negative),
                                           lr0 * frac, max_len)
                sg_loss += loss
                sg_n += n
                if n_par and self.alignment_weight > 0:
                    assert order is not None
                    rows = order[n_par * blk // n_blocks: n_par * (blk + 1) // n_blocks]
                    blk_par = {lang: _take(*enc_ep[lang], rows) for lang in pl}
                    for a, b in pairs:
                        (at, ap), (bt, bp) = blk_par[a], blk_par[b]
                        al_loss += K.align_block(W, at, ap, int(offsets[li[a]]), bt, bp, int(offsets[li[b]]),
                                                 0, len(rows), float(self.alignment_weight), alr0 * frac)
                        al_n += len(rows)
                step += 1
            pairs_seen += sg_n
            rec = {"skipgram": {lang: float(sg_loss[k] / max(sg_n[k], 1)) for k, lang in enumerate(languages)},
                   "alignment": float(al_loss / al_n) if al_n else None}
            self.loss_curve_.append(rec)
            if not np.all(np.isfinite(W)):
                raise FloatingPointError("BilBOWA diverged (non-finite vectors): lower learning_rate "
                                         "or alignment_learning_rate")
            if self.callback is not None:
                self.callback(self, epoch, _epoch_loss(rec))
        idle = [lang for k, lang in enumerate(languages) if pairs_seen[k] == 0]
        if idle:                               # e.g. a tiny corpus: subsampling keeps no context pair
            warnings.warn(f"BilBOWA: no skip-gram pair was trained in {idle} (sample={self.sample:g} drops "
                          "most tokens of a small corpus, or its sentences have one word): their vectors "
                          "did not move from their random start except through the alignment; lower "
                          "sample (0 keeps every token) or give more text", UserWarning,
                          stacklevel=find_stack_level())
        self.mapping_: dict[str, np.ndarray] = {}
        self.n_seed_pairs_: dict[str, int] = {}
        if self.mapping == "procrustes":
            self._map(lexicon, index)
        return self

    def _check_lexicon(self, seed_lexicon, mono):
        if self.mapping is None:
            if seed_lexicon is not None:
                raise ValueError("seed_lexicon is used only by mapping='procrustes'")
            return {}
        if not isinstance(seed_lexicon, dict) or not seed_lexicon:
            raise ValueError("mapping='procrustes' needs seed_lexicon={(source, target): [(source word, "
                             "target word), ...]}")
        out = {}
        for key, pairs in seed_lexicon.items():
            if not (isinstance(key, tuple) and len(key) == 2 and all(k in mono for k in key) and key[0] != key[1]):
                raise ValueError(f"seed_lexicon keys must be (source, target) pairs of two different "
                                 f"monolingual languages {sorted(mono)}, got {key!r}")
            pl = list(pairs)
            for i, p in enumerate(pl):
                if not (isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(w, str) for w in p)):
                    raise ValueError(f"seed_lexicon[{key!r}][{i}] must be a (source word, target word) "
                                     f"pair of str, got {p!r}")
            out[key] = pl
        sources = [k[0] for k in out]
        if len(set(sources)) != len(sources) or set(sources) & {k[1] for k in out}:
            raise ValueError("seed_lexicon: each language is mapped at most once, onto a language that "
                             f"is not itself mapped; got {sorted(out)}")
        return out

    def _map(self, lexicon, index) -> None:
        for lang in self.languages_:
            V = np.asarray(self.vectors_[lang], dtype=np.float64)
            n = np.linalg.norm(V, axis=1, keepdims=True)
            self.vectors_[lang] = V / np.where(n > 0, n, 1.0)
        for (src, tgt), pairs in sorted(lexicon.items()):
            ok = [(index[src][a], index[tgt][b]) for a, b in pairs if a in index[src] and b in index[tgt]]
            if not ok:
                raise ValueError(f"seed_lexicon[{(src, tgt)!r}]: no pair has both words in the vocabularies")
            R = procrustes(self.vectors_[src][[a for a, _ in ok]], self.vectors_[tgt][[b for _, b in ok]])
            self.vectors_[src] = self.vectors_[src] @ R
            self.mapping_[f"{src}-{tgt}"] = R
            self.n_seed_pairs_[f"{src}-{tgt}"] = len(ok)
        dt = np.dtype(self.dtype)                # the rotations are learnt and applied in float64
        self.vectors_ = {lang: np.ascontiguousarray(v, dtype=dt) for lang, v in self.vectors_.items()}
        self.mapping_ = {key: np.ascontiguousarray(R, dtype=dt) for key, R in self.mapping_.items()}

    # ------------------------------------------------------------------ vectors out
    def transform(self, X: Sequence[str], language: str | None = None, dtype: Any = None) -> np.ndarray:
        """Sentence vectors: the mean of the known words' vectors (BilBOWA's sentence
        representation), shape (n_texts, n_components), C-contiguous, in ``dtype`` when given,
        else in the model's ``dtype`` (the means are taken in float64).
        A text with no known word gives the zero vector."""
        from linxling.text import tokenize
        self._check_fitted()
        check_language(language, known=self.vectors_)
        if language not in self.vectors_:
            raise unknown_language(language, self.languages_)
        texts = check_texts(X, "X")
        index = {w: i for i, w in enumerate(self.words_[language])}
        V = np.asarray(self.vectors_[language], dtype=np.float64)
        out = np.zeros((len(texts), V.shape[1]))
        known = 0
        for i, t in enumerate(texts):
            ids = [index[w] for w in tokenize(t) if w in index]
            if ids:
                out[i] = V[ids].mean(axis=0)
                known += len(ids)
        warn_no_known_words(self, len(texts), known, language)
        return as_output(out, np.dtype(self.dtype) if dtype is None else dtype)

    def word_vectors(self, language: str | None = None) -> tuple[list[str], np.ndarray]:
        """``(words, vectors)`` of ``language`` (vectors a copy, in the model's ``dtype``)."""
        self._check_fitted()
        check_language(language, known=self.vectors_)
        if language not in self.vectors_:
            raise unknown_language(language, self.languages_)
        return list(self.words_[language]), np.array(self.vectors_[language], dtype=np.dtype(self.dtype))

    # ------------------------------------------------------------------ store
    def _get_state(self):
        self._check_fitted()
        params = self._params_state()
        params["languages"] = list(self.languages_)
        params["loss_curve"] = [{"skipgram": dict(r["skipgram"]), "alignment": r["alignment"]}
                                  for r in self.loss_curve_]
        params["n_seed_pairs"] = dict(getattr(self, "n_seed_pairs_", {}))
        arrays: dict[str, Any] = {"vectors": {lang: self.vectors_[lang] for lang in self.languages_},
                  "words": {lang: np.array(self.words_[lang], dtype=str) for lang in self.languages_}}
        if getattr(self, "mapping_", None):
            arrays["mapping"] = dict(self.mapping_)
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        model = cls._from_params_state(params)
        model.languages_ = stored_languages(params["languages"])
        model.loss_curve_ = list(params.get("loss_curve", params.get("loss_history", [])))
        # checked before use: a crafted or mis-assembled file is a ValueError naming its dataset
        # (the store names the file), not word lists and vector tables of different lengths
        d = int(model.n_components)
        model.vectors_, model.words_ = {}, {}
        for lang in model.languages_:
            model.vectors_[lang], model.words_[lang] = stored_word_table(arrays, lang, d,
                                                                         f"the model has n_components={d}")
        model.n_features_in_ = {lang: len(model.words_[lang]) for lang in model.languages_}
        model.n_seed_pairs_ = dict(params.get("n_seed_pairs", {}))
        model.mapping_ = {}
        for key, R in arrays.get("mapping", {}).items():
            R = stored_float(R, f"mapping/{key}", 2)
            if R.shape != (d, d):
                raise ValueError(f"arrays/mapping/{key} has shape {R.shape}; a mapping is ({d}, {d})")
            model.mapping_[key] = np.ascontiguousarray(R, dtype=np.dtype(model.dtype))   # older files: float64
        return model


def _epoch_loss(rec: dict[str, Any]) -> float:
    """One epoch's loss as the callback sees it: the mean over languages of the skip-gram
    loss, plus the alignment loss when there is one."""
    sg = rec["skipgram"]
    loss = float(np.mean(list(sg.values()))) if sg else 0.0
    return loss + (rec["alignment"] if rec["alignment"] is not None else 0.0)


def _warn_little_parallel(par: Mapping[str, Sequence[str]], d: int) -> None:
    """Warn when the parallel text cannot align the languages: fewer rows than ``n_components``
    (the alignment of sentence means constrains at most that many of the ``d`` directions), or
    a language whose rows are all one text (every row of the others is pulled to one point)."""
    n = len(next(iter(par.values())))
    if n < d:
        one = "sentence" if n == 1 else "sentences"
        warnings.warn(f"BilBOWA: only {n} parallel {one} for n_components={d}: the alignment constrains at "
                      f"most {n} of the {d} dimensions, so the languages are left mostly unaligned "
                      "(crosslingual similarities near chance); give more parallel sentences or lower "
                      "n_components", UserWarning, stacklevel=find_stack_level())
        return
    for lang, rows in par.items():
        if all(t == rows[0] for t in rows):
            warnings.warn(f"BilBOWA: all {n} rows of parallel[{lang!r}] are one and the same text: every "
                          "row of the other languages is aligned to it, so the languages are not aligned; "
                          "give the row-aligned translations, not one text repeated", UserWarning,
                          stacklevel=find_stack_level())
            return


def _warn_unaligned(model: str, enc: dict, pairs: list, vocabulary: str, remedy: str) -> None:
    """Warn for each pair of languages ``(a, b)`` of which no parallel row has a known word on
    both sides (``enc[lang]``: the CSR ``(tokens, ptr)`` of the rows' known words): the alignment
    loss is then zero and the languages are not aligned, which the fit would not show."""
    for a, b in pairs:
        if not ((np.diff(enc[a][1]) > 0) & (np.diff(enc[b][1]) > 0)).any():
            warnings.warn(f"{model}: no row of parallel {a!r}-{b!r} has a word of both vocabularies ({vocabulary}): "
                          f"the alignment loss is zero and the two languages are not aligned; {remedy}",
                          UserWarning, stacklevel=find_stack_level())


def _subsample(tok: np.ndarray, ptr: np.ndarray, keep: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """Drop each token with probability ``1 - keep[token]`` (word2vec subsampling)."""
    mask = rng.random(len(tok)) < keep[tok]
    kept = np.concatenate([[0], np.cumsum(mask)]).astype(np.int64)
    return tok[mask], kept[ptr]


def _take(tok: np.ndarray, ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sub-CSR of the rows ``rows`` (in that order)."""
    lens = ptr[rows + 1] - ptr[rows]
    new_ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    # token k of the result is token ptr[row] + (k - new_ptr[row's place]) of tok
    idx = np.arange(new_ptr[-1], dtype=np.int64) + np.repeat(ptr[rows] - new_ptr[:-1], lens)
    return tok[idx], new_ptr
