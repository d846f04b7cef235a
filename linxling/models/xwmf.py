"""x-WMF (Aldarmaki & Diab 2016, Sec. 3.2.2): a pivot WMF, then one exact solve per language.

The objective and orientation are those of :mod:`linxling.models.wmf`.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling._validation import check_sparse_matrix
from linxling._warnings import find_stack_level
from linxling.io import register_model
from linxling.models._base import nested_state, stored_languages
from linxling.models._estimator import warn_repeated_texts
from linxling.models._wmf_base import (
    _check_languages,
    _check_vectorizers,
    _factor_layout,
    _solve_rows,
    _stored_dtype,
    _stored_factor,
    _texts_or_none,
    _WMFParams,
)
from linxling.models.wmf import WMF

__all__ = ["CrossWMF"]


# --------------------------------------------------------------------------------------------
# x-WMF
# --------------------------------------------------------------------------------------------
def _same_side(a: Any, b: Any) -> bool:
    """Whether two pivot sides are the same sentences: the same object, or equal lists of texts."""
    if a is b:
        return True
    return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b)
            and all(isinstance(t, str) for t in a) and list(a) == list(b))


def _n_rows(X: Any) -> int | None:
    """Sentences in a pivot corpus (a matrix or a sequence of texts); None for anything else,
    which the pivot's fit then refuses by name."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and isinstance(shape[0], (int, np.integer)):
        return int(shape[0])
    if isinstance(X, (list, tuple)):
        return len(X)
    return None


@register_model("CrossWMF")
class CrossWMF(_WMFParams):
    """x-WMF (Aldarmaki & Diab 2016, Sec. 3.2.2): a pivot WMF plus one solve per language.

    1. A monolingual WMF for the pivot language is fitted (or a fitted :class:`WMF` is given).
    2. For each other language ``l`` with parallel data (pivot side Xp, language side X_l,
       row-aligned), the pivot sentences' vectors Q_l are computed with eq. (2) (exactly).
    3. With Q_l fixed, the word factor A_l minimises C_2 of eq. (7): one deterministic
       half-step (eq. 5, A-step), solved exactly by Cholesky per word.

    Any number of languages; each is independent of the others.

    Parameters
    ----------
    pivot_language : str, default "en"
        Name of the pivot language (a key accepted by ``transform``).
    pivot_model : WMF or None
        A fitted monolingual WMF to use as the pivot. If None, one is fitted in ``fit`` with
        the hyper-parameters below.
    n_components, alpha, missing_weight, max_iter, solver, cg_steps, dtype, random_state,
    tokenizer, min_df, max_features, sublinear_tf, show_progress, callback, device :
        As in :class:`WMF` (``device`` runs the pivot's ALS; each language's single A-step runs
        on the CPU). ``missing_weight`` is also the w_m of the per-language A-steps (eq. 7,
        C_2) and of their transforms; their λ is the pivot's ``alpha_`` (``alpha`` resolved, or
        a given ``pivot_model``'s, so that every language's sentences are solved as the pivot's
        are; ``alpha_`` holds it). When ``pivot_model`` is given, the fitted word factors have its
        dimension and dtype (``n_components`` and ``dtype`` are left as set: ``fit`` never
        changes a parameter), an ``alpha`` other than ``"auto"`` that differs from its
        ``alpha_`` is not used (a warning says so), and a ``pivot_model`` fitted with a
        ``language`` other than ``pivot_language`` is an error. ``alpha="auto"`` is the
        crosslingual models' ``min(20, n_sentences / 300)`` (:class:`BilingualWMF`'s), for the
        pivot fitted here too, not a WMF's own ``min(1, n_sentences / 3000)`` (a ``pivot_model``
        fitted at its default brings that: λ 1 from 3,000 sentences on, which on the
        validation verses below scored 0.899 against "auto"'s 0.899 on 23,329, 0.745 against
        0.759 on 3,000 and 0.570 against 0.580 on 1,000, ``--grid pivot_alpha``): the pivot
        fitted here is given that λ as its ``alpha``, a number, so ``pivot_model_`` says what
        it was fitted with and a ``clone`` of it refits the same. ``min_df`` is 1 here (every
        word; WMF's is 3): against 3, the Cr5 paper's and the default before 2026-12-01, on the
        validation verses of benchmarks/README.md (CSLS P@1) 0.332 / 0.200 trained on 300
        verses, 0.547 / 0.434 on 1,000, 0.729 / 0.678 on 3,000, 0.879 / 0.874 on all 23,329, at
        8.6 against 5.2 s for the last (``python -m benchmarks.concept_defaults --model
        CrossWMF --grid min_df_sizes [--sizes ...]``). ``sublinear_tf`` (``1 + ln(count)``
        term frequencies, for the pivot WMF fitted here too) is True, as in :class:`WMF`, since
        2026-12-01: on the same verses 0.898 against 0.878 for raw counts on all 23,329
        (seeds 0 / 1: 0.8985 / 0.8984 against 0.8789 / 0.8774), 0.350 / 0.580 / 0.759 against
        0.332 / 0.547 / 0.729 on 300 / 1,000 / 3,000, up in every direction (``python -m
        benchmarks.concept_defaults --model CrossWMF --grid sublinear_tf [--sizes ...]``;
        benchmarks/README.md "Sublinear term frequency"); fitted on the training chapters (long
        documents) 0.677 against 0.661 (``--unit chapter``). ``False`` is the paper's raw
        counts.

    Attributes
    ----------
    pivot_model_ : WMF
    languages_ : list of str
        The pivot first, then the other languages in the order given.
    components_ : dict language -> ndarray (n_components, n_words_l)
        The pivot's P and each language's A.
    loss_curve_ : list of float
        The pivot WMF's eq. (1) per iteration (empty when ``pivot_model`` was given).
    vectorizers_ : dict language -> TfidfVectorizer
        For languages given as texts (the pivot's is ``pivot_model_.vectorizer_``).
    fit_info_ : dict
        The record of the fit (as every ALS and Cr5 model's): ``pivot_fitted`` (False when
        ``pivot_model`` was given) and ``pivot``, the pivot WMF's ``fit_info_``. Saved with the
        model.
    """

    #: checked at the start of every fit (:meth:`LinxlingEstimator._validate_declared_params`)
    _parameter_constraints: dict[str, list[Any]] = {**_WMFParams._parameter_constraints,
                                                     "pivot_language": [str], "pivot_model": [WMF, None]}

    def __init__(self, pivot_language: str = "en", pivot_model: WMF | None = None,
                 n_components: int = 100, alpha: float | str = "auto", missing_weight: float = 0.1,
                 max_iter: int = 20, solver: str = "cg", cg_steps: int = 3,
                 dtype: Any = None, random_state: Any = None, tokenizer: Any = None,
                 min_df: int = 1, max_features: int | None = 200_000,
                 sublinear_tf: bool = True,
                 show_progress: bool | None = None,
                 callback: Callable[[Any, int, float], Any] | None = None, device: Any = None):
        self.pivot_language = pivot_language
        self.pivot_model = pivot_model
        self._init_params(n_components, alpha, missing_weight, max_iter, solver, cg_steps,
                          dtype, random_state, tokenizer, min_df, max_features, show_progress,
                          callback, device, sublinear_tf=sublinear_tf)

    def fit(self, parallel: Mapping, X_pivot: Any = None) -> CrossWMF:
        """Fit the pivot model (unless given) and every other language's word factor.

        Parameters
        ----------
        parallel : mapping language -> (Xp, X_l)
            For each non-pivot language: ``Xp`` sparse (n_l, n_words_pivot) (or texts), the
            pivot side of its parallel corpus, and ``X_l`` sparse (n_l, n_words_l) (or
            texts), the same sentences in language l, row-aligned. A pivot side none of whose
            sentences has a word of the pivot's vocabulary (most likely the pair's sides
            swapped) raises ``ValueError``; more than half of them without one warns.
        X_pivot : sparse (n_sentences, n_words_pivot) or texts, optional
            Monolingual pivot corpus for step 1 (the paper's setting). If None and no
            ``pivot_model`` was given, the pivot is fitted on the pivot sides of all parallel
            corpora stacked (texts or matrices, not mixed). With a ``pivot_model`` there is no
            step 1 and ``X_pivot`` is not used (a warning says so).

        A pivot side shared by several languages (a multi-parallel corpus: the same object, or
        equal lists of texts) is solved by eq. (2) once: the leaderboard's x-WMF fit (five
        languages sharing the English verses) took 8.8-9.6 s instead of 11.9-13.1 s.

        Returns
        -------
        self
        """
        langs = _check_languages(parallel, "parallel")
        if not langs:
            raise ValueError("parallel must contain at least one language")
        if self.pivot_language in langs:
            others = [lang for lang in langs if lang != self.pivot_language]
            example = others[0] if others else "es"
            raise ValueError(f"parallel must not contain the pivot language {self.pivot_language!r}: it maps "
                             "each other language to a pair (pivot side, that language's side), e.g. "
                             f"{{{example!r}: ({self.pivot_language}_texts, {example}_texts)}} "
                             "(row-aligned texts of all languages in one dict are BilingualWMF's input)")
        for lang in langs:
            pair = parallel[lang]
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                pivot = self.pivot_language
                raise TypeError(f"parallel[{lang!r}] must be a pair (X_pivot_side, X_{lang}), got a "
                                f"{type(pair).__name__}: e.g. {{{lang!r}: ({pivot}_texts, {lang}_texts)}}")
            for j, side in enumerate(pair):   # read below as a list of its characters / keys
                if isinstance(side, (str, bytes)) or (isinstance(side, Mapping) and not sp.issparse(side)):
                    raise TypeError(f"parallel[{lang!r}][{j}] must be a sequence of texts (one str per "
                                    f"sentence) or a matrix, got a {type(side).__name__}")
        from linxling.xp import choose_device, to_host
        self.device_ = choose_device(self.device, [x for lang in langs for x in parallel[lang]] + [X_pivot])
        # generators of texts are read twice (the pivot's fit, then each language's solve): keep them
        parallel = {lang: tuple(to_host(x) if hasattr(x, "shape") or isinstance(x, (list, tuple)) else list(x)
                                for x in parallel[lang]) for lang in langs}
        X_pivot = to_host(X_pivot)
        if X_pivot is not None and not (hasattr(X_pivot, "shape") or isinstance(X_pivot, (list, tuple, str))):
            X_pivot = list(X_pivot)
        if self.pivot_model is not None:
            self.pivot_model._check_fitted()
            pivot = self.pivot_model
            self._check_given_pivot(pivot, X_pivot)
            self.loss_curve_ = []
            self.n_iter_ = 0
        else:
            given_pivot = X_pivot is not None
            if X_pivot is None:
                sides = [parallel[lang][0] for lang in langs]
                side_texts = [_texts_or_none(s, f"parallel[{lang!r}][0]") for s, lang in zip(sides, langs, strict=True)]
                if all(t is not None for t in side_texts):
                    X_pivot = [t for s in side_texts if s is not None for t in s]
                else:
                    X_pivot = sp.vstack([check_sparse_matrix(s, f"parallel[{lang!r}][0]")
                                         for s, lang in zip(sides, langs, strict=True)], format="csr")
            # the pivot WMF gets this model's parameters; its callback reports as this model.
            # x-WMF's "auto" λ is the crosslingual models' min(20, n / 300), validated on verse
            # retrieval, not the monolingual WMF's min(1, n / 3000): the pivot is given that λ
            # as a number, so that its alpha says what it was fitted with (and a clone of it
            # refits the same); its collapse warning names the crosslingual rule too
            params = WMF._init_kwargs(self.get_params(deep=False))
            n_pivot = _n_rows(X_pivot)
            if self.alpha == "auto" and n_pivot is not None:
                params["alpha"] = self._effective_alpha(n_pivot)
            pivot = WMF(**{**params, "device": self.device_,
                           "callback": (None if self.callback is None else
                                        lambda _m, it, loss: self.callback(self, it, loss))})
            pivot._auto_alpha_max = self._auto_alpha_max
            pivot._auto_alpha_sentences = self._auto_alpha_sentences
            pivot._progress_desc = f"x-WMF (the pivot {self.pivot_language!r})"
            try:
                pivot.fit(X_pivot)
            except ValueError as exc:
                if not str(exc).startswith(("empty vocabulary", "min_df=")):
                    raise
                where = ("X_pivot" if given_pivot else " and ".join(f"parallel[{lang!r}][0]" for lang in langs)
                         + f" (the pivot language {self.pivot_language!r})")
                raise ValueError(f"{where}: {exc}") from None
            self.loss_curve_ = list(pivot.loss_curve_)
            self.n_iter_ = pivot.n_iter_
        self.pivot_model_ = pivot
        # the record of the fit: the pivot WMF's (its ALS, when this fit ran it)
        self.fit_info_ = {"pivot_fitted": self.pivot_model is None, "pivot": dict(getattr(pivot, "fit_info_", {}))}
        # the λ of the A-steps and of transform: the pivot's (its "auto" value, or a given
        # pivot_model's), so that every language's sentences are solved as the pivot's are
        self.alpha_ = float(pivot.alpha_)
        self.vectorizers_: dict[str, Any] = {}
        self.components_ = {self.pivot_language: pivot.components_}
        done: list[tuple[Any, np.ndarray]] = []     # pivot sides solved, and their sentence vectors
        for lang in langs:
            Xp, Xl = parallel[lang]
            # a multi-parallel corpus gives every language the same pivot side: solve it once
            Q = next((q for x, q in done if _same_side(x, Xp)), None)
            if Q is None:
                with warnings.catch_warnings():     # _check_pivot_side says it, naming the pair
                    warnings.filterwarnings("ignore", message=r".*none of the \d+ texts has a word")
                    Q = pivot.transform(Xp)                                     # eq. (2)
                _check_pivot_side(Q, lang, self.pivot_language)
                done.append((Xp, Q))
            Xl = self._language_matrix(Xl, lang, fit=True, name=f"parallel[{lang!r}][1]")
            if Xl.shape[0] != Q.shape[0]:
                raise ValueError(f"parallel[{lang!r}]: the pivot side has {Q.shape[0]} rows but "
                                 f"the {lang!r} side has {Xl.shape[0]}; they must be row-aligned")
            self._check_k(Xl.shape[1], f"parallel[{lang!r}][1]", pivot.components_.shape[0])
            if Xl.shape[0] >= pivot.components_.shape[0]:
                warn_repeated_texts(self, pivot.components_.shape[0], Xl, f"parallel[{lang!r}][1]", "sentences")
            A = _solve_rows(Xl.T.tocsr(), Q, self.missing_weight, self.alpha_)  # eq. (5) A-step
            self.components_[lang] = A.T
        self.languages_ = [self.pivot_language, *langs]
        return self

    def _check_given_pivot(self, pivot: WMF, X_pivot: Any) -> None:
        """What a given ``pivot_model`` leaves unused, or contradicts, said rather than dropped."""
        if pivot.language is not None and pivot.language != self.pivot_language:
            raise ValueError(f"pivot_model is a WMF for language {pivot.language!r} but pivot_language="
                             f"{self.pivot_language!r}: set pivot_language={pivot.language!r}, or give the "
                             f"{self.pivot_language!r} model")
        unused = []
        if X_pivot is not None:
            unused.append("X_pivot is not used: the pivot_model given is not refitted (give X_pivot or "
                          "pivot_model, not both)")
        if self.alpha != "auto" and float(self.alpha) != float(pivot.alpha_):
            unused.append(f"alpha={self.alpha!r} is not used: every language's solve takes the pivot_model's "
                          f"alpha_={float(pivot.alpha_):g}, as the pivot's sentences are solved with it "
                          "(leave alpha='auto', or fit the pivot with this alpha)")
        # n_components and dtype: as alpha, a value set other than the default that the pivot's
        # factors contradict (the word factors take its dimension and dtype) was dropped in silence
        k = int(pivot.components_.shape[0])
        if self.n_components != self._new_param_default("n_components") and self.n_components != k:
            unused.append(f"n_components={self.n_components!r} is not used: the word factors take the "
                          f"pivot_model's dimension, {k} (leave n_components at its default, or fit the "
                          f"pivot with n_components={self.n_components!r})")
        dt = np.dtype(pivot.components_.dtype)
        if np.dtype(self.dtype) != np.dtype(self._new_param_default("dtype")) and np.dtype(self.dtype) != dt:
            unused.append(f"dtype={np.dtype(self.dtype).name} is not used: the word factors take the "
                          f"pivot_model's dtype, {dt.name} (leave dtype at its default, or fit the pivot "
                          f"with dtype={np.dtype(self.dtype).name!r})")
        for message in unused:
            warnings.warn(f"CrossWMF.fit: {message}", UserWarning, stacklevel=find_stack_level())

    def transform(self, X: Any, language: str, dtype: Any = None) -> np.ndarray:
        """Sentence vectors of ``language`` by eq. (2) with its word factor fixed (exact;
        C-contiguous, in ``dtype`` when given).

        Parameters
        ----------
        X : sparse (n_sentences, n_words_language) or sequence of str
        language : the pivot or one of the fitted languages
        dtype : float32 or float64, optional
            Of the result (default: the model's); C-contiguous either way.

        Returns
        -------
        ndarray (n_sentences, n_components); empty rows give zeros.
        """
        self._check_fitted()
        if language == self.pivot_language:
            return self.pivot_model_.transform(X, dtype=dtype)
        return self._transform_language(X, language, dtype)

    def _get_state(self):
        params, arrays = self._wmf_state()
        pparams, parrays = self.pivot_model_._get_state()
        params.update(languages=list(self.languages_), pivot=pparams)
        arrays.update(pivot=parrays, components={lang: np.ascontiguousarray(self.components_[lang])
                                                 for lang in self.languages_ if lang != self.pivot_language})
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        with nested_state("pivot"):
            pivot = WMF._from_state(params["pivot"], arrays["pivot"])
        model = cls._from_wmf_state(params, arrays)
        dtype = _stored_dtype(model.dtype, pivot.components_)
        model.pivot_model_ = pivot
        if "alpha_" not in params:               # files before "auto": the pivot's λ
            model.alpha_ = float(pivot.alpha_)
        model.languages_ = stored_languages(params["languages"])
        if model.languages_[0] != model.pivot_language:
            raise ValueError(f"the file's languages {model.languages_} do not start with its pivot language "
                             f"{model.pivot_language!r}")
        k = pivot.components_.shape[0]
        model.components_ = {model.pivot_language: pivot.components_}
        for lang in model.languages_[1:]:
            C = _stored_factor(arrays["components"][lang], f"components/{lang}", k,
                               f"the pivot's arrays/pivot/components {pivot.components_.shape}")
            model.components_[lang] = _factor_layout(C, dtype)
        _check_vectorizers(model)
        return model


#: the share of a pivot side's sentences without a word of the pivot's vocabulary above which
#: :class:`CrossWMF` warns (every one of them: an error)
EMPTY_PIVOT_WARN = 0.5


def _check_pivot_side(Q: np.ndarray, lang: Any, pivot_language: str) -> None:
    """Refuse a pivot side none of whose sentences has a word of the pivot's vocabulary (their
    vectors Q are zero, so the language's word factor would be zero: most likely the pair's
    sides swapped), and warn when more than :data:`EMPTY_PIVOT_WARN` of them have none."""
    n = Q.shape[0]
    empty = int(np.count_nonzero(~np.any(Q != 0, axis=1))) if n else 0
    if n and empty == n:
        raise ValueError(f"parallel[{lang!r}][0], the pivot side, has no word of the pivot's vocabulary in any of "
                         f"its {n} sentences, so {lang!r} would get a zero word factor: is it in "
                         f"{pivot_language!r}? Each pair is (pivot side, {lang!r} side).")
    if n and empty > EMPTY_PIVOT_WARN * n:
        warnings.warn(f"parallel[{lang!r}][0], the pivot side: {empty} of its {n} sentences have no word of the "
                      f"pivot's vocabulary and add nothing to {lang!r}'s word factor (is it in "
                      f"{pivot_language!r}, and the pivot fitted on text like it?)", UserWarning,
                      stacklevel=find_stack_level())
