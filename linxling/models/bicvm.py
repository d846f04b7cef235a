"""BiCVM and BiCVM+ (Hermann & Blunsom 2014): compositional sentence vectors from parallel text.

Each language has its own word table W_L (one row per word). A sentence is composed from its
words, ADD (sum of word vectors, eq. 3) or BI (sum over consecutive words of tanh(x_{i-1}+x_i)),
and aligned sentences are pulled together by the noise-contrastive hinge loss (eqs. 6-7)::

    J = sum_(a,b) sum_{i=1..k} [m + E(a, b) - E(a, n_i)]_+  (+ the same with a and b swapped)
        + lambda/2 ||theta||^2,          E(a, b) = ||f(a) - g(b)||^2

with k noise sentences n_i drawn at random from the other language's corpus, individually
for each sample and epoch. Training is AdaGrad on minibatches with sparse-row updates (a step
touches only the rows of words in the batch); the kernels are :mod:`linxling.kernels.sgd`.

BiCVM+ (Sec. 4.1): ``fit`` takes a list of aligned pairs that share a pivot language (e.g.
en-de and en-fr); each language keeps one vocabulary over all the pairs it appears in.
"""
from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils._param_validation import StrOptions

from linxling._validation import check_language, check_language_keys, check_texts, unknown_language
from linxling._warnings import find_stack_level
from linxling.io import register_model
from linxling.models._base import stored_float
from linxling.models._estimator import (
    DEPRECATED,
    FLOAT_DTYPE,
    NONNEG_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    LinxlingEstimator,
    as_output,
    warn_few_examples,
    warn_no_known_words,
)

__all__ = ["BiCVM"]

#: minibatches of one language pair trained before the next pair takes its turn, when a fit
#: trains several pairs (the base class's value; BiCVM+ sets its own ``_interleave``)
INTERLEAVE = 8


def _decode(words) -> list[str]:
    return [w.decode("utf-8") if isinstance(w, bytes) else str(w) for w in np.asarray(words).tolist()]


class _SentencePairSGD(LinxlingEstimator, TransformerMixin):
    """Shared fit/transform/store of the sentence-pair SGD models (BiCVM, RankingEmbedding)."""

    _fitted_attr = "vectors_"
    _renamed_params = {"min_count": "min_df"}

    # ---- hooks the subclasses define
    _composition = "add"
    _distance = "sqeuclidean"
    _optimizer = "adagrad"
    _word_pairs = False
    _max_languages = 0   # 2: exactly two languages per aligned dict; 0: two or more
    _interleave = INTERLEAVE   # minibatches of one pair per turn when several pairs train

    @property
    def _centered(self) -> bool:
        """Whether transform subtracts each language's mean training sentence vector (``means_``)."""
        return bool(getattr(self, "center", False))

    def _n_noise(self) -> int:
        raise NotImplementedError

    def _margin(self) -> float:
        raise NotImplementedError

    # ------------------------------------------------------------------ input
    def _tokens(self, text: str) -> list[str]:
        from linxling.text import tokenize
        toks = tokenize(text)
        if self._word_pairs:
            toks = toks + [f"{x} {y}" for x, y in itertools.pairwise(toks)]
        return toks

    def _check_pairs(self, X) -> list[dict[str, list[str]]]:
        pairs = [X] if isinstance(X, dict) else X
        if not isinstance(pairs, (list, tuple)) or not pairs:
            raise TypeError("X must be a dict {language: list of str} of aligned texts or a "
                            f"non-empty list of such dicts, got {type(X).__name__}")
        if not any(isinstance(pair, dict) for pair in pairs):   # texts without languages, e.g. fit(en_texts)
            what = "texts" if isinstance(pairs[0], str) else f"{type(pairs[0]).__name__}s"
            raise TypeError(f"X is a {type(X).__name__} of {what}, not a dict {{language: texts}}: "
                            f"{type(self).__name__} fits row-aligned texts of several languages, e.g. "
                            "fit({'en': en_texts, 'de': de_texts}) (or a list of such dicts)")
        out = []
        for p, pair in enumerate(pairs):
            where = "X" if isinstance(X, dict) else f"X[{p}]"
            if not isinstance(pair, dict):
                raise TypeError(f"{where} must be a dict {{language: texts}}, got {type(pair).__name__}")
            if len(pair) < 2 or (self._max_languages and len(pair) != 2):
                need = "exactly 2" if self._max_languages else "at least 2"
                more = (": more languages train as BiCVM+, a list of pairs that share a pivot, e.g. "
                        "[{'en': ..., 'de': ...}, {'en': ..., 'fr': ...}]"
                        if self._max_languages and len(pair) > 2 else "")
                raise ValueError(f"{where} must hold {need} languages, got {sorted(pair)}{more}")
            check_language_keys(pair, where)
            n = None
            clean = {}
            for lang, texts in pair.items():
                texts = check_texts(texts, f"{where}[{lang!r}]")
                if n is None:
                    n = len(texts)
                elif len(texts) != n:
                    raise ValueError(f"{where}: the languages are row-aligned and must have the "
                                     f"same length, got " + ", ".join(f"{k}: {len(v)}" for k, v in pair.items()))
                clean[lang] = texts
            if n == 0:
                raise ValueError(f"{where} holds no sentences")
            out.append(clean)
        if len(out) > 1:
            shared = set(out[0])
            for pair in out[1:]:
                shared &= set(pair)
            linked = all(set(a) & set(b) for a in out for b in out)
            if not linked:
                raise ValueError("the pairs of X must share a pivot language (BiCVM+): languages "
                                 f"per pair are {[sorted(p) for p in out]}")
        return out

    def _encode(self, texts, lang):
        """The CSR (tokens, ptr, counts) of new sentences (transform): unknown words are left out,
        and a sentence without a known word is an empty row."""
        index = self.vocabulary_[lang]
        idx, ptr = [], [0]
        for t in texts:
            idx.extend(index[w] for w in self._tokens(t) if w in index)
            ptr.append(len(idx))
        tokens = np.asarray(idx, dtype=np.int64)
        return tokens, np.asarray(ptr, dtype=np.int64), np.ones(len(tokens), dtype=np.float64)

    @staticmethod
    def _kept_words(ids: np.ndarray, ptr: np.ndarray, lang: str, where: str):
        """The CSR (tokens, ptr, counts) of training sentences whose tokens' column ids (``-1``: a
        word not in the vocabulary) are ``ids[ptr[i]:ptr[i + 1]]``, laid out as :meth:`_encode`'s;
        a sentence left without a word is an error."""
        part = ids[ptr[0]:ptr[-1]]
        keep = part >= 0
        kept = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])[ptr - ptr[0]]
        empty = np.flatnonzero(np.diff(kept) == 0)
        if empty.size == 1:
            i = int(empty[0])
            what = "is empty (no tokens)" if ptr[i + 1] == ptr[i] else "has no word in the vocabulary"
            raise ValueError(f"{where}[{lang!r}][{i}] {what}: every training sentence needs "
                             "at least one word (remove the pair or lower min_df)")
        if empty.size:
            # all of them at once, so that one call tells which pairs to remove
            no_tokens = int(np.count_nonzero(np.diff(ptr)[empty] == 0))
            shown = ", ".join(str(int(i)) for i in empty[:20]) + (", ..." if empty.size > 20 else "")
            raise ValueError(f"{where}[{lang!r}]: {empty.size} training sentences have no word in the vocabulary "
                             f"({no_tokens} of them empty, no tokens), at indices {shown}: every training "
                             "sentence needs at least one word (remove those pairs or lower min_df)")
        tokens = part[keep]
        return tokens, kept, np.ones(len(tokens), dtype=np.float64)

    def _warn_one_sentence(self, enc, where: str) -> None:
        """Warn when every aligned sentence of a pair is the same in each language: the noise
        sentences are then the sentence itself and the contrastive loss has no gradient (the word
        vectors only shrink by ``alpha``; with ``center`` each training sentence embeds as zero).
        One language's sentences all the same (the other's varied) warn too: that language's
        words are those of its one sentence, which every sentence of the other is pulled to, so
        its texts embed alike and held-out retrieval is at chance."""
        n = len(next(iter(enc.values()))[1]) - 1
        if n < 2:
            return      # one sentence: warn_few_examples speaks for it
        same = []
        for lang, (tokens, ptr, _) in enc.items():
            lengths = np.diff(ptr)
            if not (lengths != lengths[0]).any() and not (tokens.reshape(n, -1) != tokens[:lengths[0]]).any():
                same.append(lang)
        if len(same) == len(enc):
            warnings.warn(f"{type(self).__name__}: all {n} aligned sentences of {where} are one and the same "
                          f"text in each language ({', '.join(map(repr, enc))}): each is its own noise sample, so "
                          "the contrastive loss has no gradient and the model learns nothing; give different "
                          "aligned sentences", UserWarning, stacklevel=find_stack_level())
        elif same:
            warnings.warn(f"{type(self).__name__}: all {n} aligned sentences of {where}[{same[0]!r}] are one and "
                          f"the same text (the other language's differ): every sentence of the other language is "
                          f"aligned to it, so the model cannot tell {same[0]!r} texts apart; give the aligned "
                          f"translations, not one text repeated", UserWarning, stacklevel=find_stack_level())

    # ------------------------------------------------------------------ fit
    _parameter_constraints: dict[str, list[Any]] = {
        "n_components": [POSITIVE_INT],
        "n_epochs": [POSITIVE_INT],
        "batch_size": [POSITIVE_INT],
        "min_df": [POSITIVE_INT],
        "learning_rate": [POSITIVE_REAL],
        "init_scale": [POSITIVE_REAL],
        "alpha": [NONNEG_REAL],
        "margin": [NONNEG_REAL, None],
        "random_state": RANDOM_STATE,
        "callback": [callable, None],
        "n_threads": [POSITIVE_INT, None],
        "show_progress": ["boolean", None],
    }

    def fit(self, X: Mapping[str, Sequence[str]] | Sequence[Mapping[str, Sequence[str]]],
            y: Any = None) -> Self:
        """Fit on row-aligned texts: ``{"en": [...], "de": [...]}`` or a list of such dicts."""
        import numba

        from linxling._progress import progress
        from linxling.kernels import sgd
        from linxling.kernels.sgd_reference import sample_noise
        from linxling.text._vectorize import vocabulary_and_sequences

        pairs = self._check_pairs(X)
        languages = sorted({lang for p in pairs for lang in p})
        warn_few_examples(self, sum(len(next(iter(p.values()))) for p in pairs), "aligned sentences")
        self.vocabulary_ = {}
        words = {}
        seqs = {}
        for lang in languages:
            texts = [t for p in pairs if lang in p for t in p[lang]]
            # each sentence tokenized once: its word ids come with the vocabulary
            try:
                vocab, ids, ptr = vocabulary_and_sequences(texts, tokenizer=self._tokens,
                                                           min_df=self._param("min_df"),
                                                           max_features=None, show_progress=False)
            except ValueError as exc:          # "empty vocabulary" / min_df: say which language
                raise ValueError(f"X[{lang!r}] ({len(texts)} texts): {exc}") from None
            words[lang] = list(vocab.words)
            self.vocabulary_[lang] = {w: i for i, w in enumerate(words[lang])}
            seqs[lang] = (ids, ptr, 0)
        self.words_ = words
        encoded = []
        for p, pair in enumerate(pairs):
            where = "X" if isinstance(X, dict) else f"X[{p}]"
            enc = {}
            for lang, texts in pair.items():
                ids, ptr, first = seqs[lang]
                seqs[lang] = (ids, ptr, first + len(texts))       # the next pair's sentences follow
                enc[lang] = self._kept_words(ids, ptr[first:first + len(texts) + 1], lang, where)
            encoded.append(enc)
            self._warn_one_sentence(enc, where)
        rng = np.random.default_rng(self.random_state)
        d = int(self.n_components)
        dtype = np.dtype(getattr(self, "dtype", "float64"))
        self.vectors_ = {lang: rng.normal(0.0, self.init_scale, (len(words[lang]), d)).astype(dtype)
                         for lang in languages}
        acc = {lang: np.zeros_like(W) for lang, W in self.vectors_.items()}
        k, margin = self._n_noise(), self._margin()
        pool = getattr(self, "noise_pool", None)
        attraction = float(getattr(self, "attraction", 0.0))
        jobs = [(p, a, b) for p, pair in enumerate(pairs) for i, a in enumerate(sorted(pair))
                for b in sorted(pair)[i + 1:]]
        self.loss_curve_ = []
        self.means_ = None
        # set before training: a callback reads them (a failed fit puts the old ones back)
        self.languages_ = languages
        self.n_features_in_ = {lang: len(words[lang]) for lang in languages}
        old_threads = numba.get_num_threads()
        if self.n_threads is not None:
            numba.set_num_threads(min(int(self.n_threads), numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
        try:
            bar = progress(range(int(self.n_epochs)), show=self.show_progress,
                           desc=type(self).__name__, unit="epoch")
            bs = int(self.batch_size)
            # the kernel's buffers, made once for every pair (the pairs take turns: one call per turn)
            space = sgd.PairWorkspace([(self.vectors_[a], encoded[p][a], self.vectors_[b], encoded[p][b])
                                       for p, a, b in jobs], k, bs)
            for epoch in bar:
                total, n_batches = 0.0, 0
                plans = []
                for p, a, b in jobs:
                    n = len(pairs[p][a])
                    order = rng.permutation(n)
                    noiseA = sample_noise(rng, n, k, order, bs, pool)
                    noiseB = sample_noise(rng, n, k, order, bs, pool)
                    plans.append((p, a, b, order, noiseA, noiseB))
                    n_batches += -(-n // bs)
                # several pairs (BiCVM+, or more than two languages): their minibatches take turns,
                # _interleave batches of one pair, then of the next, so that the shared (pivot)
                # language is not pulled to one pair for a whole pass and then to the next
                step = int(self._interleave) * bs if len(plans) > 1 else max(len(pl[3]) for pl in plans)
                for start in range(0, max(len(pl[3]) for pl in plans), step):
                    for p, a, b, order, noiseA, noiseB in plans:
                        part = order[start:start + step]
                        if len(part):
                            total += sgd.train_pair_epoch(
                                self.vectors_[a], acc[a], encoded[p][a], self.vectors_[b], acc[b],
                                encoded[p][b], part, noiseA, noiseB, bs, self._composition,
                                self._distance, margin, float(self.learning_rate), float(self.alpha),
                                self._optimizer, attraction=attraction, workspace=space)
                self.loss_curve_.append(total / n_batches)
                self._check_finite(epoch)
                bar.set_postfix(loss=f"{self.loss_curve_[-1]:.4g}", refresh=False)   # drawn with its epoch count
                if self.callback is not None:     # transform in the callback: this epoch's means
                    self.means_ = self._training_means(encoded) if self._centered else None
                    self.callback(self, epoch, self.loss_curve_[-1])
        finally:
            numba.set_num_threads(old_threads)
        self.means_ = self._training_means(encoded) if self._centered else None
        return self

    def _check_finite(self, epoch: int) -> None:
        """After an epoch: a FloatingPointError when its loss or a word vector is not finite (a
        learning rate too large for the data), rather than NaN embeddings. One pass over the
        tables per epoch, against an epoch's kernel calls over every minibatch."""
        loss = self.loss_curve_[-1]
        bad = [lang for lang, W in self.vectors_.items() if not np.isfinite(W).all()]
        if np.isfinite(loss) and not bad:
            return
        what = [f"loss {loss:.4g}"] if not np.isfinite(loss) else []
        if bad:
            what.append("non-finite word vectors in " + ", ".join(map(repr, bad)))
        raise FloatingPointError(f"{type(self).__name__} diverged in epoch {epoch + 1} of {int(self.n_epochs)} "
                                 f"({'; '.join(what)}): lower learning_rate (now {self.learning_rate!r})")

    def _training_means(self, encoded) -> dict[str, np.ndarray]:
        """Each language's mean sentence vector over its training sentences (of every pair)."""
        from linxling.kernels import sgd
        comp = sgd.COMPOSITIONS[self._composition]
        sums: dict[str, np.ndarray] = {}
        counts: dict[str, int] = {}
        for enc in encoded:
            for lang, (idx, ptr, cnt) in enc.items():
                Z = sgd.compose(self.vectors_[lang], idx, ptr, cnt, np.arange(len(ptr) - 1, dtype=np.int64), comp)
                sums[lang] = sums.get(lang, 0.0) + Z.sum(axis=0, dtype=np.float64)
                counts[lang] = counts.get(lang, 0) + Z.shape[0]
        return {lang: (sums[lang] / counts[lang]).astype(self.vectors_[lang].dtype) for lang in sums}

    # ------------------------------------------------------------------ vectors out
    def _check_language(self, language) -> str:
        self._check_fitted()
        check_language(language, known=self.vectors_)
        if language not in self.vectors_:
            raise unknown_language(language, self.languages_)
        return language

    def transform(self, X: Sequence[str], language: str | None = None, dtype: Any = None) -> np.ndarray:
        """Sentence vectors (n_texts, n_components) of texts in ``language``, C-contiguous, in
        ``dtype`` when given (e.g. ``np.float32`` for a vector index).

        Words not in the language's vocabulary are skipped; a text with none gives a zero row.
        With ``center=True`` (the default) the language's mean training sentence vector
        (``means_``) is subtracted from every other row.
        """
        from linxling.kernels import sgd
        lang = self._check_language(language)
        X = check_texts(X, "X")
        idx, ptr, cnt = self._encode(X, lang)
        warn_no_known_words(self, len(X), len(idx), lang)
        Z = sgd.compose(self.vectors_[lang], idx, ptr, cnt, np.arange(len(X), dtype=np.int64),
                        sgd.COMPOSITIONS[self._composition])
        means = getattr(self, "means_", None)
        if means is not None:
            Z -= means[lang]
            Z[np.diff(ptr) == 0] = 0.0
        return as_output(Z, dtype)

    def word_vectors(self, language: str | None = None) -> tuple[list[str], np.ndarray]:
        """``(words, vectors)`` of ``language``: its words and a copy of their rows of the lookup
        table. With ``RankingEmbedding(word_pairs=True)`` the rows of word pairs (``"a b"``) are
        left out, so ``export`` writes the words only."""
        lang = self._check_language(language)
        keep = [i for i, w in enumerate(self.words_[lang]) if " " not in w]
        return [self.words_[lang][i] for i in keep], self.vectors_[lang][keep].copy()

    # ------------------------------------------------------------------ store
    def _get_state(self):
        self._check_fitted()
        params = self._params_state()
        params["languages"] = list(self.languages_)
        params["loss_curve"] = [float(x) for x in self.loss_curve_]
        arrays = {"vectors": {lang: self.vectors_[lang] for lang in self.languages_},
                  "words": {lang: np.array(self.words_[lang], dtype=str) for lang in self.languages_}}
        if getattr(self, "means_", None) is not None:
            arrays["means"] = {lang: self.means_[lang] for lang in self.languages_}
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        model = cls._from_params_state(params)
        model.languages_ = list(params["languages"])
        model.loss_curve_ = list(params.get("loss_curve", []))
        model.words_ = {lang: _decode(arrays["words"][lang]) for lang in model.languages_}
        if "dtype" not in params and hasattr(model, "dtype"):
            model.dtype = "float64"       # stored before the model had the parameter: trained in float64
        dtype = np.dtype(getattr(model, "dtype", "float64"))
        model.vectors_ = {lang: np.asarray(stored_float(arrays["vectors"][lang], f"vectors/{lang}", 2), dtype=dtype)
                          for lang in model.languages_}
        for lang in model.languages_:     # the kernels index the table by word: sizes must agree
            V = model.vectors_[lang]
            if V.ndim != 2 or V.shape[0] != len(model.words_[lang]) or V.shape[1] != int(model.n_components):
                raise ValueError(f"arrays/vectors/{lang} has shape {V.shape} but arrays/words/{lang} lists "
                                 f"{len(model.words_[lang])} words of dimension n_components="
                                 f"{model.n_components}")
        if "center" not in params and hasattr(model, "center"):
            model.center = False          # stored before the model had the parameter: not centred
        model.means_ = None
        if model._centered:
            if "means" not in arrays:
                raise ValueError("the file's model has center=True but no arrays/means")
            model.means_ = {lang: np.asarray(stored_float(arrays["means"][lang], f"means/{lang}", 1), dtype=dtype)
                            for lang in model.languages_}
            for lang, mu in model.means_.items():
                if mu.shape != (int(model.n_components),):
                    raise ValueError(f"arrays/means/{lang} has shape {mu.shape}, expected "
                                     f"({int(model.n_components)},)")
        model.vocabulary_ = {lang: {w: i for i, w in enumerate(ws)} for lang, ws in model.words_.items()}
        model.n_features_in_ = {lang: len(model.words_[lang]) for lang in model.languages_}
        return model


@register_model("BiCVM")
class BiCVM(_SentencePairSGD):
    """Bilingual compositional vector model (Hermann & Blunsom 2014), BiCVM and BiCVM+.

    The defaults are not the paper's: they were chosen on validation verses carved from the
    Bible *training* pairs (1,000 of the 30,102 en-de training pairs, fit on the other 29,102;
    the benchmark's 1,000 test verses never used), ``python -m benchmarks.bicvm_defaults``, and
    checked on en-ru, en-ar and en-zh the same way (benchmarks/README.md, "BiCVM: how the
    defaults were chosen"). Validation P@1 on en-de (mean of both directions) at d = 64 and 1
    epoch / d = 128 and 3 epochs / d = 128 and 10 epochs: these defaults 0.814 / 0.918 / 0.943;
    :meth:`from_paper` at the same d and epochs 0.717 / 0.785 / 0.811; the defaults before
    (margin 1, no attraction, per-sample noise, batch 50) 0.606 / 0.681 / 0.715.

    en-ru / en-ar / en-zh at d = 128, 10 epochs: 0.936 / 0.914 / 0.848 (the old defaults 0.683 /
    0.679 / 0.623). These figures score the raw sums; ``center=True`` (the default since
    2026-11-28) adds 0.005-0.023 on validation. On the benchmark's held-out en-de verses (10
    epochs, 2 threads) the defaults reach P@1 0.961 / 0.965 (0.947 / 0.955 raw) against the
    authors' C++'s 0.90, at about 4x its pairs per second.
    :meth:`from_paper` gives the paper's settings.

    Parameters
    ----------
    n_components : int, default 128
        Dimension d of word and sentence vectors. In the validation grid (batch 500) d = 128 beat
        d = 64 in every cell at the same epochs (at these defaults 0.855 against 0.814 after one epoch,
        0.917 against 0.899 after three). Larger d retrieves better at a proportional cost
        (2026-12-01, 10 epochs, the validation verses, seeds 0 / 1, ``python -m
        benchmarks.bicvm_defaults --dims 256 128 --grid shipped``): d = 256 against 128 en-zh
        0.892 / 0.897 against 0.876 / 0.871, en-ar 0.944 / 0.940 against 0.929 / 0.932, en-de
        0.958 / 0.962 against 0.956 / 0.958, at 1.4-1.8x the fit's time; d = 512 en-zh 0.911 at
        2.3x. The default stays the cheaper 128 (the project's rule where quality costs time:
        docs/choosing.md); ``n_components=256`` is the option.
    composition : {"add", "bi"}, default "add"
        ADD: sum of word vectors (eq. 3). BI: sum_i tanh(x_{i-1} + x_i) over consecutive words.
        ADD is what the authors' README example trains (``--type additive``); the two were not
        compared on validation data.
    noise : int, default 10
        k, noise sentences per pair and direction (eq. 7). On validation 5 and 20 gave +0.003
        and -0.008 at d = 64, 1 epoch, -0.005 and -0.010 at d = 128, 3 epochs.
    margin : float or None, default None
        m in the hinge [m + E(a,b) - E(a,n)]_+ (eq. 6). None: ``n_components / 2`` (E is a
        squared distance summed over the d dimensions, so the margin scales with d; d/2 was the
        best of d/4, d/2 and d on validation at d = 64 and 128, 1 and 3 epochs, by 0.002-0.016).
    noise_pool : int or None, default 250
        P: each minibatch draws P sentences per language from the whole corpus (fresh for
        every batch and epoch) and each sample draws its k noise sentences from them; every
        distinct noise sentence is composed and back-propagated once per batch, so a pair costs
        about 2 + 2P/batch_size compositions instead of 2 + 2k (about 2x the pairs per second;
        validation P@1 0.006-0.016 below per-sample noise). None: every sample's k noise sentences are
        drawn from the whole other-language corpus (the paper).
    attraction : float, default 5.0
        Weight w of an extra unconditional term w * E(a, b) on every pair (not in the paper's
        loss; the authors' C++ optimises, up to a constant factor, ``attraction=20`` with
        ``margin`` = 2 x its ``--hinge_loss_margin``, see docs/bicvm.md). It is what closes the
        gap to the C++: validation P@1 +0.095 at 3 epochs (0 -> 5; 2: +0.08, 10: no better).
        0 is the paper's loss.
    alpha : float, default 1e-4
        lambda of the L2 term, added as ``alpha * W[row]`` to the minibatch-mean gradient of the
        rows each step updates (0 did as well on validation: en-zh / en-ar P@1 0.8745 / 0.9295
        at 0, 0.8755 / 0.929 at 1e-4, 0.876 / 0.930 at 3e-4; d = 128, 10 epochs, seed 0,
        ``python -m benchmarks.bicvm_defaults --grid others``).
    learning_rate : float, default 0.05
        AdaGrad step size (best of 0.025, 0.05, 0.1, 0.2 on validation at batch 500).
    n_epochs : int, default 10
        Passes over the aligned pairs (validation P@1 after 1, 3 and 10 epochs: above).
    batch_size : int, default 500
        500 beat 1,000 by 0.02 validation P@1 at 3 epochs at about the same pairs per second.
        Smaller batches learn more per epoch but cost more per pair (more rows stepped per
        pair): ``batch_size=100, noise_pool=50, learning_rate=0.1`` reached validation P@1
        0.866 / 0.940 / 0.951 at the three budgets of the table above, at about half the pairs
        per second (2.1x the C++'s instead of 4x), so it is the setting for a few epochs and
        not the default.
    min_df : int, default 1
        Words in fewer sentences are dropped from the vocabulary (every word kept). On validation
        verses (d = 128, 10 epochs, seeds 0-2, ``python -m benchmarks.bicvm_defaults --pairs zh
        ar de ru --grid min_df --keep-at 3``: every value trained on the pairs that keep a word
        at 3), mean P@1 at min_df 1 / 2 / 3: en-zh 0.876 / 0.894 / 0.898 (98,231 / 49,038 /
        33,647 Chinese character bigrams; one-thread fits 21-22 s against 11-15 s), en-ru 0.938
        / 0.942 / 0.947, en-de 0.957 / 0.958 / 0.957, en-ar 0.930 / 0.930 / 0.928 (3 behind 1
        on two seeds). 1 stays the default: 2 and 3 are ahead on two pairs of four only, and
        either makes ``fit`` refuse the Bible pairs as given (5-38 of 29,102 verses keep no
        word on one side, and no pair is dropped in silence). ``min_df=3`` is the option for languages
        with many rare tokens (Chinese, Russian) where every sentence keeps a word
        (benchmarks/README.md, "BiCVM and RankingEmbedding: min_df"). (``min_count``, its name
        before 0.2, is accepted with a FutureWarning.)
    init_scale : float, default 0.1
        Standard deviation of the Gaussian initialisation (the authors' C++ draws N(0, 0.1²)).
        On validation verses (d = 128, 10 epochs, seeds 0-2, ``--grid init``) 0.03 tied with it
        (mean P@1 over en-zh and en-ar 0.903 against 0.904: en-zh a little better, en-ar a
        little worse), 0.01 was behind (en-ar 0.911-0.918 against 0.929-0.932) and 0.3 far
        behind (en-zh 0.648, en-ar 0.790, seed 0).
    dtype : {"float32", "float64"}, default "float32"
        Precision of the word tables and AdaGrad accumulators during training (float32 halves
        the memory traffic of the kernels; the gradient checks run the same kernels in float64).
        Every validation figure here was trained in float32; float64 was not compared for BiCVM
        (for :class:`RankingEmbedding` it was no better).
    center : bool, default True
        Subtract each language's mean training sentence vector in :meth:`transform` (stored as
        ``means_``; a text without a known word stays a zero row; word vectors are never
        centred). Neither loss fixes a language-wide offset, which cosine retrieval then pays
        for: validation P@1 (cosine, both directions; 1,000 verses held out of the training
        pairs, d = 128, 10 epochs, seeds 0 and 1) rose on every pair and seed, en-de 0.945 ->
        0.958, en-fr 0.950 -> 0.964 (4 seeds), en-ru 0.935 -> 0.940, en-ar 0.913 -> 0.927, en-zh
        0.850 -> 0.873, and BiCVM+ over en-{es, ru, ar, zh} 0.917 -> 0.929/0.930
        (benchmarks/README.md "Sentence vectors centred per language"). False gives the paper's
        sums (and is :meth:`from_paper`'s).
    random_state : int or None
        With a fixed value the model is identical between runs (for any thread count).
    n_threads : int or None
        numba threads during fit (None: numba's current setting). On a machine shared with
        other jobs, numba's OpenMP layer spins at its barriers (the learning test's fit: 13 s on
        2 spinning threads, 1.2-1.5 s on one); linxling runs numba on TBB where the ``tbb`` wheel
        is installed (Linux x86-64), whose threads yield (2.1 s on 2 threads at load 6, against
        4-10 s on OpenMP). Under OpenMP set ``OMP_WAIT_POLICY=PASSIVE`` or use one thread.
    callback : callable(model, epoch, loss) or None
        Called after every epoch.
    show_progress : bool or None
        Progress bar (None follows :func:`linxling.set_show_progress`).

    Attributes
    ----------
    vectors_ : dict language -> ndarray (n_words, d)
    words_ : dict language -> list of str
    loss_curve_ : list of float, mean minibatch loss per epoch
    languages_ : list of str
        Sorted (Cr5, CL-LSI and b-WMF keep the order of their input, x-WMF puts its pivot first).

    Notes
    -----
    BiCVM+ (``fit`` on a list of pairs sharing a pivot language): the pairs' minibatches
    alternate, one batch of each pair in turn. Training one pair's whole pass after the other
    pulled the pivot's vectors to the last pair (d = 64, 1 epoch, validation en-es P@1 0.43
    sequential against 0.87 for the en-es model alone); turns of 8 batches fixed most of it,
    turns of one batch are better again (mean over en-{es,ru,ar,zh}: +0.005 to +0.012 at
    d = 64, 1 epoch, three seeds; +0.006 and +0.010 at d = 128, 3 epochs, two seeds). BiCVM+
    then nearly matches one model per pair: d = 128, mean validation P@1 0.874 against 0.880
    at 3 epochs, 0.916 against 0.919 at 10 (en-es and en-ru level with their pair models or
    above, en-ar and en-zh 0.003-0.02 below), and gives one space for all its languages
    (de->fr through the English pivot, never paired in training). The paper's gain of BiCVM+
    over BiCVM came from pivot-language text the pair alone did not have
    (different English sentences in Europarl en-de and en-fr); on the Bible every pair has the
    same English verses, and even when each pair gets its own half of the verses (the paper's
    setting) the en-de model gains nothing on verse retrieval from the en-fr half
    (benchmarks/README.md, "BiCVM+ against BiCVM").
    """

    _max_languages = 2
    _distance = "sqeuclidean"
    _optimizer = "adagrad"
    _interleave = 1      # BiCVM+: the pairs' minibatches alternate one by one (see Notes)

    def __init__(self, n_components: int = 128, composition: str = "add", noise: int = 10,
                 margin: float | None = None, noise_pool: int | None = 250, attraction: float = 5.0,
                 alpha: float = 1e-4, learning_rate: float = 0.05, n_epochs: int = 10,
                 batch_size: int = 500, min_df: int = 1, init_scale: float = 0.1,
                 dtype: str = "float32", center: bool = True, random_state: Any = None,
                 n_threads: int | None = None,
                 callback: Any = None, show_progress: bool | None = None,
                 min_count: int | str = DEPRECATED) -> None:
        self.n_components = n_components
        self.composition = composition
        self.noise = noise
        self.margin = margin
        self.noise_pool = noise_pool
        self.attraction = attraction
        self.alpha = alpha
        self.learning_rate = learning_rate
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
    def from_paper(cls, **overrides: Any) -> BiCVM:
        """The settings of Hermann & Blunsom (2014), Sec. 5: d = 40, step size 0.1 (AdaGrad),
        50 noise sentences drawn for each sample and epoch from the whole corpus, margin 50, 50
        epochs, the paper's loss (no attraction); the batch size is not given there (50 here).
        Keyword arguments override any of them.

        The paper's L2 weight lambda = 1 multiplies ||theta||^2 against the hinge loss *summed*
        over its 500,000 sentence pairs; here ``alpha`` is added to the gradient of a minibatch
        *mean*, so the same weight per pair is lambda / N = 2e-6 (on N pairs of your own: 1 / N).
        Taken literally (``alpha=1``) it drowns the loss: validation P@1 0.60 against 0.79 with
        alpha 3.4e-5 = 1 / 29,102 (Bible en-de, d = 128, 3 epochs)."""
        params: dict[str, Any] = dict(n_components=40, alpha=2e-6, learning_rate=0.1, noise=50, margin=50.0,
                      n_epochs=50, noise_pool=None, attraction=0.0, batch_size=50, center=False)
        params.update(overrides)
        return cls(**params)

    @property
    def _composition(self):
        return self.composition

    def _n_noise(self):
        return int(self.noise)

    def _margin(self):
        return 0.5 * float(self.n_components) if self.margin is None else float(self.margin)

    _parameter_constraints: dict[str, list[Any]] = {
        **_SentencePairSGD._parameter_constraints,
        "composition": [StrOptions({"add", "bi"})],
        "noise": [POSITIVE_INT],
        "noise_pool": [POSITIVE_INT, None],
        "attraction": [NONNEG_REAL],
        "dtype": [FLOAT_DTYPE],
        "center": ["boolean"],
    }
