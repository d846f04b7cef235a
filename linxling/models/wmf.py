"""Weighted matrix factorisation for (crosslingual) sentence embeddings.

WMF (Guo & Diab 2012) and its crosslingual extensions b-WMF and x-WMF (Aldarmaki & Diab 2016,
"GWU_NLP at SemEval-2016 Shared Task 1", eqs. 1–7), fitted by alternating least squares with
the numba kernels of :mod:`linxling.kernels.als`.

Orientation
-----------
scikit-learn's: rows are sentences, columns are words. For a tf-idf matrix X (n_sentences,
n_words) the paper's m × n matrix is Xᵀ, its word factor P (k × m) is ``components_`` and its
sentence factor Q (k × n) is ``embedding_.T``. The objective (eq. 1) is

    C = Σ_{u,i} W_ui (q_u·p_i − X_ui)² + λ(‖P‖² + ‖Q‖²),   W_ui = 1 if X_ui ≠ 0 else w_m,

with λ = ``alpha`` and w_m = ``missing_weight``. One ALS iteration solves eq. (2) for every
sentence (P fixed), then eq. (3) for every word (Q fixed); ``loss_curve_`` records C after each
iteration. ``transform`` solves eq. (2) exactly (Cholesky) for new sentences.

Relation to ``implicit`` (Hu, Koren & Volinsky 2008)
---------------------------------------------------
``implicit`` 0.7.3's ``AlternatingLeastSquares`` minimises, for a user × item matrix R,

    Σ_{u,i} c_ui (p_ui − x_uᵀy_i)² + reg (‖X‖² + ‖Y‖²),   c_ui = alpha·r_ui on nonzeros, 1 on
    zeros, p_ui = 1 on nonzeros, 0 on zeros

(its code forms YᵀY + reg·I and adds (c_ui − 1) y_i y_iᵀ per nonzero: the confidence is
``alpha·r``, *not* Hu et al.'s ``1 + alpha·r``). For a binary X, dividing the WMF objective by
w_m gives Σ_nz (1/w_m)(1 − q·p)² + Σ_zeros (q·p)² + (λ/w_m)(‖P‖² + ‖Q‖²), which is
implicit's objective with ``alpha = 1/w_m`` and ``regularization = λ/w_m``; no offset is
needed (with the ``1 + alpha·r`` convention of older releases one would need
``alpha = 1/w_m − 1``). Both minimise the same function, the per-row normal equations are
identical up to the factor w_m, so from the same initial factors (implicit's
``user_factors`` = our ``embedding_``, ``item_factors`` = ``components_.T``) the two ALS
iterations produce the same factors; ``tests/test_wmf.py`` checks this. For non-binary X the
models differ (implicit's target is always 1, WMF's is X_ui).

Empty rows
----------
A sentence without any (known) word has a zero right-hand side: its vector is exactly zero,
both in ``embedding_`` and from ``transform``. Likewise a word that occurs in no training
sentence gets a zero factor.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling._validation import (
    check_float_dtype,
    check_language,
    refuse_sparse,
    refuse_texts_as_vectors,
    unknown_language,
)
from linxling.io import register_model
from linxling.models import _als
from linxling.models._als import check_matrix as _check_matrix
from linxling.models._base import (
    check_vectorizer_width,
    stored_float,
    stored_languages,
    vectorizer_from_state,
    vectorizer_state,
)
from linxling.models._estimator import as_output, warn_no_known_words
from linxling.models._wmf_base import (
    WMF_AUTO_ALPHA_MAX,
    WMF_AUTO_ALPHA_SENTENCES,
    _check_languages,
    _check_vectorizers,
    _factor_layout,
    _kernels,
    _make_vectorizer,
    _solve_rows,
    _stored_dtype,
    _stored_factor,
    _texts_or_none,
    _WMFParams,
)

__all__ = ["WMF", "BilingualWMF", "CrossWMF"]  # noqa: F822 (CrossWMF: module __getattr__)


# --------------------------------------------------------------------------------------------
# WMF
# --------------------------------------------------------------------------------------------
@register_model("WMF")
class WMF(_WMFParams):
    """Weighted matrix factorisation of a sentence × word tf-idf matrix (Guo & Diab 2012).

    Parameters
    ----------
    n_components : int, default 100
        k, the dimension of word and sentence vectors (the paper's k = 100, Aldarmaki & Diab
        2016, Sec. 4). A larger k scores better on both validation tasks: x-WMF verse retrieval,
        k = 100 / 200 / 300: 0.875 / 0.907 / 0.917 (benchmarks/README.md "The linear models'
        defaults on validation verses"), and this model's own, the paraphrase task of the
        training verses (P@1, below), k = 50 / 100 / 200 / 300: 0.754 / 0.838 / 0.865 / 0.867,
        fit 2.2 / 4.2 / 9.4 / 17.3 s. It costs 2x the fit's time at 200 and 4.8x per iteration
        on the 200,000 x 50,000 benchmark at 300, and the factors' memory: the paper's 100 stays
        the default; raise k when quality matters more than time.
    alpha : float or "auto", default "auto"
        λ, the L2 regularisation of both factors (eq. 1). "auto" is ``min(1, n_sentences / 3000)``
        (the value used is ``alpha_``), chosen on the paraphrase task of the training verses
        (``python -m benchmarks.paraphrase``: WMF fitted on 23,329 KJV verses, or a sample of
        them, and the KJV text of 3,929 verses of 150 other training chapters retrieving their
        Bible in Basic English paraphrase, P@1 of centred cosine, the mean of both directions;
        benchmarks/README.md "The monolingual WMF's defaults on a paraphrase task of the training
        verses"). Fitted on all 23,329: λ = 0.3 / 0.5 / 1 / 2 / 3 / 5 / 10 / 20 / 40 / 80: 0.836 /
        0.838 / 0.838 / 0.838 / 0.837 / 0.833 / 0.829 / 0.828 / 0.823 / 0.775 (3-6 seeds, ranges
        0.001-0.006); the best λ stays at 0.1-2 at every size (300 / 1,000 / 3,000 / 10,000
        verses: 0.1 / 0.3 / 1 / 0.3-1), and this rule is within 0.001 of the best at each. The
        crosslingual models' ``min(20, n_sentences / 300)`` (:class:`BilingualWMF`,
        :class:`CrossWMF`, and WMF's before 2026-12-01) lost 0.010-0.024 here (0.828 on all
        23,329); they keep it, chosen on verse retrieval, where λ 2 and 20 are level. A fit whose
        sentence vectors collapse toward one direction warns, naming alpha.
    missing_weight : float in (0, 1], default 0.1
        w_m, the weight of zero entries (nonzeros have weight 1). On the paraphrase task above
        (λ "auto" = 1): w_m = 0.01 / 0.03 / 0.05 / 0.1 / 0.15 / 0.2 / 0.3: 0.689 / 0.779 / 0.810 /
        0.838 / 0.843 / 0.837 / 0.812; 0.15 is 0.005 ahead over six seeds, within their range
        (0.839-0.845 against 0.835-0.840) and a lone point between 0.1 and 0.2, so 0.1 stays, the
        crosslingual models' value. Those were measured on a validation split of the
        leaderboard's training verses (six languages; 23,329 verses fitted, 3,933 verses of 150
        other training chapters scored by verse retrieval, CSLS P@1, the mean of en->X and X->en;
        ``python -m benchmarks.concept_defaults``, benchmarks/README.md "WMF: missing_weight on
        validation verses"): w_m = 0.1 beat the papers' 0.01 for x-WMF (0.003 / 0.01 / 0.03 / 0.1 /
        0.2 / 0.3 / 1: 0.725 / 0.818 / 0.865 / 0.875 / 0.849 / 0.819 / 0.609) and b-WMF (0.01 /
        0.03 / 0.1 / 0.3: 0.851 / 0.884 / 0.892 / 0.837), and on 300-3,000 en-es pairs by
        0.08-0.13 with ``alpha="auto"``. ``missing_weight=0.01`` is the papers' setting (Guo and
        Diab 2012; Aldarmaki and Diab 2016), an option: it scored higher on the graded STS 2017
        en-en test (0.617-0.638 against 0.573-0.576 with 0.1 at λ 20; docs/wmf.md), a test set,
        not a criterion, and 0.689 against 0.838 on the paraphrase task.
    max_iter : int, default 20
        ALS iterations (the paper uses 20). On the paraphrase task above 5 / 10 / 20 / 40
        iterations: 0.820 / 0.833 / 0.838 / 0.840 P@1 (fit 1.3 / 2.2 / 4.2 / 11.4 s); x-WMF on
        validation verses 0.875 at 20, 0.878 at 40, for twice the time. No early stopping:
        ``loss_curve_`` shows progress.
    solver : {"cg", "cholesky", "auto"}, default "cg"
        Per-row solver of the training half-steps. "cholesky" solves each row exactly (the
        loss never increases). "cg" runs ``cg_steps`` conjugate-gradient steps warm-started
        from the previous iterate (Takács et al. 2011, as in ``implicit``): each step can only
        lower the row's quadratic, so the loss is non-increasing too (up to rounding), at a
        fraction of the cost. "auto" is "cg" unless ``cg_steps >= n_components``.
        ``transform`` always solves exactly.
    cg_steps : int, default 3
        Conjugate-gradient steps per row solve (``solver="cg"``): implicit's default. The speed
        benchmark reaches implicit's loss with it (benchmarks/README.md, "WMF"); on the
        paraphrase task above 1 / 3 / 6 steps and exact solves scored 0.812 / 0.838 / 0.839 /
        0.839 (fit 2.6 / 4.2 / 6.0 / 10.1 s), and x-WMF on validation verses the same with 3
        steps, 6 and exact solves (0.8745 / 0.8748 / 0.8748; benchmarks/README.md "The linear
        models' defaults on validation verses").
    dtype : None, float32 or float64, default None
        Dtype of the factors and of the kernel arithmetic (the loss is accumulated in float64).
        None follows the data: a float32 matrix gives float32 factors, float64 (and integer
        or boolean input, and texts) float64.
    random_state : None, int or numpy Generator
        Seeds the N(0, 1/k) initial factors.
    tokenizer, min_df, max_features : default None, 3, 200,000
        Options of the :class:`linxling.text.TfidfVectorizer` used when ``fit`` receives texts
        (tf-idf with ``norm=None``, as in the paper, term frequencies by ``sublinear_tf``;
        ``min_df`` 3 and ``max_features`` are the Cr5 paper's vectoriser settings). On the
        paraphrase task above ``min_df`` 1 / 2 / 3 / 5 scored 0.834 / 0.837 / 0.838 / 0.839
        (seed ranges up to 0.010 at 1, with raw counts): level, so 3 stays;
        the crosslingual models keep every word (``min_df=1``: :class:`BilingualWMF`,
        :class:`CrossWMF`, whose pivot WMF takes it too), ahead on their verse retrieval.
    sublinear_tf : bool, default True
        Term frequencies of that vectoriser: ``1 + ln(count)`` (True, the default since
        2026-12-01) or the raw counts of the paper (False). On the paraphrase task above,
        P@1 (mean of 3 seeds; ranges 0.835-0.840 and 0.859-0.862) 0.860 against 0.838 for raw
        counts on all 23,329 verses, and ahead at every corpus size (2 seeds each): 0.671 /
        0.743 / 0.792 / 0.834 against 0.657 / 0.722 / 0.774 / 0.818 on 300 / 1,000 / 3,000 /
        10,000 verses, at no extra cost (``python -m benchmarks.paraphrase --model WMF --spec
        '{"sublinear_tf": false}' '{"sublinear_tf": true}' --seeds 0 1 2``; benchmarks/README.md
        "Sublinear term frequency"). L2-normalised rows lost there (0.822; with sublinear tf
        0.848), so ``norm=None`` stays. A matrix given to ``fit`` is used as it is. **For
        paragraphs and longer texts** ``sublinear_tf=False`` is better: fitted on blocks of 4 /
        8 verses (about 100 / 200 words) and on whole chapters, P@1 0.812 / 0.798 / 0.767 with
        raw counts against 0.804 / 0.766 / 0.667 (2 verses: 0.824 against 0.836; ``python -m
        benchmarks.paraphrase --model WMF --spec '{"sublinear_tf": false}' '{}' --unit
        chapter``; benchmarks/README.md "Long documents"). True stays the default, as WMF is a
        model of sentences.
    show_progress : bool or None
        tqdm bar over iterations (None follows :func:`linxling.set_show_progress`).
    callback : callable(model, iteration, loss) or None
        Called after every iteration with the model, the 0-based iteration and eq. (1).
    language : str or None, default None
        The language of the training texts, a label (the fit is the same whatever it is).
        When given, ``transform(X, language)`` and ``word_vectors(language)`` with another
        language are an error, so that a WMF called like the multilingual models is not given
        the wrong language's texts in silence; ``linxling info`` shows it. None: any language
        is accepted.
    device : {None, "cpu", "cuda"}, default None
        "cuda" runs the ALS on a GPU with CuPy (:mod:`linxling.xp.als`; ``solver="cg"`` as one
        fused CUDA kernel per half-step, 5x faster than implicit's GPU ALS on the WMF
        benchmark; Cholesky as batched solves; in-memory data only); the fitted arrays come
        back as NumPy, so save, load and export are unchanged. "cpu" runs the numba kernels.
        None: "cuda" when the data are CuPy arrays (``cupyx.scipy.sparse``), else "cpu";
        ``device_`` is the one used.

    Attributes
    ----------
    alpha_ : float
        The λ the fit used (``alpha``, or its "auto" value).
    components_ : ndarray (n_components, n_words)
        P, the word vectors (columns).
    embedding_ : ndarray (n_sentences, n_components)
        Qᵀ, the training sentences' vectors after fit.
    loss_curve_ : list of float
        Eq. (1) after each iteration.
    n_iter_ : int
    vectorizer_ : TfidfVectorizer or None
        Set when ``fit`` was given texts; ``transform`` then accepts texts too.
    fit_info_ : dict
        The record of the fit, as Cr5's (saved with the model): ``n_sentences``, ``device``,
        ``sources`` (``{"X": "memory" | "hdf5" | "dask"}``, Cr5's words), ``time_als`` (seconds
        of the ALS: initialisation and iterations), and

        - ``"memory_plan"``, only after a fit streamed from a ChunkedCSR: ``budget``,
          ``factor_bytes`` (the fixed factor) and ``reads_per_pass`` (docs/scale.md);
        - ``"dask"``, only after a fit on a Dask cluster: ``n_workers``, ``row_blocks`` and
          ``col_blocks`` (blocks of X and Xᵀ on the workers), ``nnz``, and
          ``payload_bytes_per_iteration``: the bytes that moved in each iteration: the arrays
          the client scattered (times the workers receiving each), the solved blocks each
          worker fetched from the others to assemble a fixed factor, and the solved blocks
          gathered (the first iteration also sends the initial factors from the client).
    memory_plan_, dask_info_ : dict
        ``fit_info_["memory_plan"]`` and ``fit_info_["dask"]`` under their names before
        ``fit_info_`` (aliases, kept; an AttributeError when the entry is absent).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from linxling import WMF
    >>> X = sp.random(200, 80, density=0.05, random_state=0, format="csr")
    >>> model = WMF(n_components=10, alpha=0.1, max_iter=5, random_state=0).fit(X)
    >>> model.transform(X[:3]).shape
    (3, 10)
    """

    _multilingual_fit = False    # fit and transform take the same input
    # alpha="auto": min(1, n / 3000), not the crosslingual min(20, n / 300) (WMF_AUTO_ALPHA_MAX)
    _auto_alpha_max = WMF_AUTO_ALPHA_MAX
    _auto_alpha_sentences = WMF_AUTO_ALPHA_SENTENCES
    _progress_desc = "WMF"       # the fit's progress bar (x-WMF's pivot names its model)

    _parameter_constraints: dict[str, list[Any]] = {**_WMFParams._parameter_constraints, "language": [str, None]}

    def __init__(self, n_components: int = 100, alpha: float | str = "auto", missing_weight: float = 0.1,
                 max_iter: int = 20, solver: str = "cg", cg_steps: int = 3,
                 dtype: Any = None, random_state: Any = None, tokenizer: Any = None,
                 min_df: int = 3, max_features: int | None = 200_000,
                 sublinear_tf: bool = True,
                 show_progress: bool | None = None,
                 callback: Callable[[Any, int, float], Any] | None = None, language: str | None = None,
                 device: Any = None):
        self._init_params(n_components, alpha, missing_weight, max_iter, solver, cg_steps,
                          dtype, random_state, tokenizer, min_df, max_features, show_progress,
                          callback, device, sublinear_tf=sublinear_tf)
        self.language = language

    # ---------------------------------------------------------------- input
    @staticmethod
    def _refuse_mapping(X: Any, where: str) -> None:
        """A mapping ``{language: texts}`` would be read as a sequence of its keys (one document
        per language): refuse it, naming the models that take one. (A sparse DOK matrix is a
        dict too: it is a matrix.)"""
        if not isinstance(X, Mapping) or sp.issparse(X):
            return
        keys = list(X)
        call = f"WMF(language={keys[0]!r}).fit" if where == "fit" else where
        one = f"; for one language pass its texts: {call}(X[{keys[0]!r}])" if len(keys) == 1 else ""
        raise TypeError(f"WMF.{where} takes one language's texts (a sequence of str) or a sentence x word "
                        f"matrix, not a {type(X).__name__} {{language: texts}}{one}. For row-aligned texts of "
                        "two or more languages use BilingualWMF().fit({language: texts}); for corpora "
                        "parallel to a pivot language, CrossWMF(pivot_language=...).fit({language: "
                        "(pivot_texts, texts)})")

    def _input_matrix(self, X, *, fit: bool, name: str = "X") -> sp.csr_matrix:
        if not fit:                        # fit refuses a mapping first thing, before any path
            self._refuse_mapping(X, "transform")
        dtype = (self._model_dtype() if not fit else
                 None if self.dtype is None else check_float_dtype(self.dtype))
        texts = _texts_or_none(X, name)
        if texts is not None:
            if fit:
                self.vectorizer_ = _make_vectorizer(self)
                X = self.vectorizer_.fit_transform(texts)
            else:
                if getattr(self, "vectorizer_", None) is None:
                    raise TypeError(f"{name} is a list of texts but this model was fitted on a "
                                    "matrix; pass a tf-idf matrix with the training vocabulary")
                X = self.vectorizer_.transform(texts)
                warn_no_known_words(self, X.shape[0], X.nnz, getattr(self, "language", None))
        elif fit:
            self.vectorizer_ = None
        n_cols = None if fit else self.components_.shape[1]
        return _check_matrix(X, name, dtype, n_cols, type(self).__name__)

    # ---------------------------------------------------------------- fit
    def fit(self, X: Any, y: Any = None, *, init_components: Any = None, init_embedding: Any = None,
            memory_budget: int | str | None = None, client: Any = None) -> WMF:
        """Factorise X by ALS.

        Parameters
        ----------
        X : sparse (n_sentences, n_words) non-negative, sequence of n_sentences str, ChunkedCSR, or dask array
            The tf-idf matrix (raw tf-idf as in the paper) or texts for the text pipeline. A
            :class:`linxling.io.ChunkedCSR` (a corpus on disk, :func:`linxling.io.write_chunks`
            with ``transpose=True``) is streamed: each half-step reads the row chunks of X (or
            of Xᵀ) one read at a time; the result equals the in-memory fit. A dask array whose
            chunks are scipy.sparse row blocks (one chunk along the columns) is fitted on a
            ``dask.distributed`` cluster (see ``client``); so is a ChunkedCSR when ``client`` is
            given (the workers read the file, which they must see at the same path).
        y : ignored
        init_components : ndarray (n_components, n_words), optional
            Initial P (default random). The first half-step computes the sentence vectors from it.
        init_embedding : ndarray (n_sentences, n_components), optional
            Initial sentence vectors: only the CG solver's warm start of the first half-step
            depends on them (default random).
        memory_budget : int or str, optional
            Only for a ChunkedCSR ``X``: bytes (or "512M", "2G") that the fit's arrays may take
            (factors, row pointers and the chunk being read); reads are sized to fit it.
            MemoryError when the factors alone do not fit.
        client : dask.distributed.Client, optional
            The cluster for a dask array ``X`` (default: the current default client; an error
            when there is none) or for a ChunkedCSR ``X`` (without it a ChunkedCSR is streamed
            on this machine). The row blocks of X and of Xᵀ are computed and kept on the
            workers once; each iteration every worker assembles the fixed factor from the solved
            blocks (fetching those it lacks from the other workers) and the client gathers the
            solved blocks (``dask_info_``). A worker lost during the fit is
            replaced: its blocks are recomputed from their tasks and the half-step is run again,
            with the same result. The result equals the in-memory fit up to rounding.

        Returns
        -------
        self
        """
        self._refuse_mapping(X, "fit")
        from linxling.xp import choose_device, to_host
        self.device_ = choose_device(self.device, [X])
        X = to_host(X)
        kind = _als.data_kind({"X": X}, {"X": "X"}, client, memory_budget)
        if kind == "memory":
            X = self._input_matrix(X, fit=True)
        else:
            self.vectorizer_ = None

        def publish(V, offsets):
            self.components_ = V.T
            self.n_features_in_ = int(V.shape[0])

        self._fit_als(kind, {"X": X}, {"X": "X"}, [init_components], ["init_components"],
                      init_embedding, memory_budget, client, publish, self._progress_desc)
        return self

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Fit and return ``embedding_`` (n_sentences, n_components)."""
        return self.fit(X, **fit_params).embedding_

    # ---------------------------------------------------------------- transform
    def transform(self, X: Any, language: str | None = None, dtype: Any = None) -> np.ndarray:
        """Sentence vectors by eq. (2), solved exactly (Cholesky) with P fixed.

        Parameters
        ----------
        X : sparse (n_sentences, n_words) or sequence of str (if fitted on texts)
        language : str, optional
            WMF is monolingual: when the model was given a ``language``, a different one here is
            an error (the same call works for every linxling model).
        dtype : float32 or float64, optional
            Of the result (default: the model's); C-contiguous either way.

        Returns
        -------
        ndarray (n_sentences, n_components). Empty rows give zeros.
        """
        self._check_fitted()
        self._check_language(language)
        X = self._input_matrix(X, fit=False)
        return as_output(_solve_rows(X, np.ascontiguousarray(self.components_.T), self.missing_weight,
                                     self.alpha_, self._gram_cache()), dtype)

    def _check_language(self, language: str | None) -> None:
        check_language(language)
        if language is not None and self.language is not None and language != self.language:
            raise unknown_language(language, [self.language])   # the words every model uses

    def word_vectors(self, language: str | None = None) -> tuple[list[str] | None, np.ndarray]:
        """Word vectors: the columns of P, ``(words, vectors (n_words, n_components))``.

        ``words`` is the vectoriser's vocabulary when fitted from texts, else ``None``.
        """
        self._check_fitted()
        self._check_language(language)
        return self._word_vectors(language)

    def score(self, X: Any, y: Any = None) -> float:
        """Minus eq. (1) of X (its sentences' exact vectors, eq. 2): higher is better, as in scikit-learn.

        ``y`` is ignored. :meth:`loss` gives eq. (1) itself, for any sentence vectors.
        """
        return -self.loss(X)

    def loss(self, X, embedding=None) -> float:
        """Eq. (1) for X with the model's P and ``embedding`` (default: ``transform(X)``)."""
        self._check_fitted()
        X = self._input_matrix(X, fit=False)
        E = self.transform(X) if embedding is None else self._check_embedding(embedding, X.shape[0])
        return _kernels().wmf_loss(X, E, np.ascontiguousarray(self.components_.T),
                               missing_weight=self.missing_weight, regularization=self.alpha_)

    def _check_embedding(self, embedding: Any, n_rows: int) -> np.ndarray:
        """:meth:`loss`'s ``embedding``: one finite row of ``n_components`` numbers per sentence of
        X, in the model's dtype. Unchecked, a shorter array made the loss kernel read past its end
        and return a number, and a NaN gave a NaN loss, without a word."""
        refuse_sparse(embedding, "embedding")
        refuse_texts_as_vectors(embedding, "embedding")
        E = np.asarray(embedding)
        if E.dtype.kind not in "fiub":
            raise TypeError(f"embedding must hold real numbers (sentence vectors), got dtype {E.dtype}")
        want = (n_rows, self.components_.shape[0])
        if E.shape != want:
            raise ValueError(f"embedding has shape {E.shape}, expected {want}: one vector of n_components="
                             f"{want[1]} values per sentence of X")
        with np.errstate(over="ignore"):
            E = np.ascontiguousarray(E, dtype=self.components_.dtype)
        if not np.all(np.isfinite(E)):
            raise ValueError(f"embedding contains {int(np.sum(~np.isfinite(E)))} non-finite value(s) (NaN or "
                             f"inf, or beyond the range of {E.dtype})")
        return E

    # ---------------------------------------------------------------- store
    def _get_state(self):
        params, arrays = self._wmf_state()
        arrays.update(components=np.ascontiguousarray(self.components_),
                      embedding=np.ascontiguousarray(self.embedding_))
        params["vectorizer"], va = vectorizer_state(getattr(self, "vectorizer_", None))
        if va is not None:
            arrays["vectorizer"] = va
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        model = cls._from_wmf_state(params, arrays)
        # checked before use: a crafted or mis-assembled file is a ValueError naming its dataset
        # (the store names the file), not a model whose transform fails or reads the wrong words
        C = _stored_factor(arrays["components"], "components")
        E = stored_float(arrays["embedding"], "embedding", 2)
        if E.shape[1] != C.shape[0]:
            raise ValueError(f"arrays/embedding has shape {E.shape} but arrays/components has shape {C.shape}: "
                             "they must hold the same number of components")
        dtype = _stored_dtype(model.dtype, C)
        model.components_ = _factor_layout(C, dtype)
        model.embedding_ = np.asarray(E, dtype=dtype)
        model.vectorizer_ = vectorizer_from_state(params.get("vectorizer"), arrays.get("vectorizer"))
        check_vectorizer_width(model.vectorizer_, C.shape[1], "vectorizer", "arrays/components")
        return model


# --------------------------------------------------------------------------------------------
# b-WMF
# --------------------------------------------------------------------------------------------
@register_model("BilingualWMF")
class BilingualWMF(_WMFParams):
    """b-WMF (Aldarmaki & Diab 2016, Sec. 3.2.1): languages share the sentence factor Q.

    Minimises eq. (4) generalised to L ≥ 2 languages,

        C = Σ_l Σ_{u,i} W^l_ui (q_u·a^l_i − X^l_ui)² + λ(‖Q‖² + Σ_l ‖A^l‖²),

    by ALS over eq. (5): the shared sentence vectors from all languages' systems summed, then
    each language's word vectors. With equal λ and w_m this is WMF of the column-stacked matrix
    [X^1 | X^2 | ...]; the kernels use that identity (:func:`linxling.kernels.als.als_half_step_multi`).

    Parameters
    ----------
    n_components : int, default 100
        k, the dimension of the shared sentence vectors and of every language's word vectors
        (the paper's k = 100). On validation verses a larger k retrieved better (x-WMF, k = 100 / 200 / 300:
        0.875 / 0.907 / 0.917; benchmarks/README.md "The linear models' defaults on validation
        verses), at 2x the fit's time there and 4.8x per iteration on the 200,000 x 50,000
        benchmark for 300: the paper's 100 stays the default; raise k when quality matters more
        than time.
    alpha : float or "auto", default "auto"
        λ, the L2 regularisation of all factors (eq. 4). "auto" is ``min(20, n_sentences / 300)``
        (n_sentences: the aligned sentences; chosen on b-WMF itself: benchmarks/README.md,
        "alpha and the corpus size"; the monolingual :class:`WMF`'s is ``min(1, n_sentences /
        3000)`` since 2026-12-01, chosen on its own task); the value used is ``alpha_``.
        A fit whose sentence vectors collapse toward one direction warns, naming alpha.
    missing_weight : float in (0, 1], default 0.1
        w_m, the weight of zero entries in every language (nonzeros have weight 1). On a validation
        split of the leaderboard's training verses (six languages; 23,329 verses fitted, 3,933
        verses of 150 other training chapters scored by verse retrieval, CSLS P@1, the mean of en->X
        and X->en; ``python -m benchmarks.concept_defaults``, benchmarks/README.md "WMF:
        missing_weight on validation verses") w_m = 0.1 beat the papers' 0.01 for x-WMF (0.003 /
        0.01 / 0.03 / 0.1 / 0.2 / 0.3 / 1: 0.725 / 0.818 / 0.865 / 0.875 / 0.849 / 0.819 / 0.609)
        and b-WMF (0.01 / 0.03 / 0.1 / 0.3: 0.851 / 0.884 / 0.892 / 0.837), and on 300-3,000 en-es
        pairs by 0.08-0.13 with ``alpha="auto"``. ``missing_weight=0.01`` is the papers' setting
        (Guo and Diab 2012; Aldarmaki and Diab 2016), an option: the
        better one for graded similarity (STS 2017 en-en test 0.617-0.638 against 0.573-0.576 with
        0.1; docs/wmf.md).
    max_iter : int, default 20
        ALS iterations (the paper uses 20; 40 scored 0.878 against 0.875 on the validation
        verses above, for twice the time). No early
        stopping: ``loss_curve_`` shows progress.
    solver : {"cg", "cholesky", "auto"}, default "cg"
        Per-row solver of the training half-steps, as in :class:`WMF` ("cholesky": exact; "cg":
        ``cg_steps`` warm-started conjugate-gradient steps; "auto": "cg" unless
        ``cg_steps >= n_components``). ``transform`` always solves exactly.
    cg_steps : int, default 3
        Conjugate-gradient steps per row solve (``solver="cg"``), as in :class:`WMF` (implicit's
        default; on validation verses the same as exact solves).
    dtype : None, float32 or float64, default None
        Dtype of the factors and of the kernel arithmetic (the loss is accumulated in float64).
        None follows the data: float32 matrices give float32 factors, float64 (and integer or
        boolean input, and texts) float64.
    random_state : None, int or numpy Generator
        Seeds the N(0, 1/k) initial factors.
    tokenizer, min_df, max_features : default None, 1, 200,000
        Options of the :class:`linxling.text.TfidfVectorizer` made for each language that
        ``fit`` receives as texts (tf-idf with ``norm=None``, as in the paper). ``min_df`` 1
        against 3 (the Cr5 paper's, the default before 2026-12-01) on the validation verses of
        benchmarks/README.md, one model per en-X pair (CSLS P@1): 0.333 / 0.225 trained on 300
        verses, 0.569 / 0.461 on 1,000, 0.741 / 0.703 on 3,000, 0.895 / 0.892 on all 23,329
        (``python -m benchmarks.concept_defaults --model BilingualWMF --grid min_df
        [--sizes ...]``).
    sublinear_tf : bool, default True
        Term frequencies of those vectorisers: ``1 + ln(count)`` (True, the default since
        2026-12-01) or the paper's raw counts (False). On the validation verses above (CSLS
        P@1, one model per en-X pair) 0.913 against 0.893 for raw counts on all 23,329 (seeds
        0 / 1: 0.9150 / 0.9112 against 0.8945 / 0.8923), 0.350 / 0.597 / 0.772 against 0.333 /
        0.569 / 0.741 on 300 / 1,000 / 3,000 (``python -m benchmarks.concept_defaults --model
        BilingualWMF --grid sublinear_tf [--sizes ...]``; benchmarks/README.md "Sublinear term
        frequency"); fitted on the training chapters (long documents) 0.669 against 0.661
        (``--unit chapter``).
    show_progress : bool or None
        tqdm bar over iterations (None follows :func:`linxling.set_show_progress`).
    callback : callable(model, iteration, loss) or None
        Called after every iteration with the model, the 0-based iteration and eq. (4).
    device : {None, "cpu", "cuda"}, default None
        As in :class:`WMF`: "cuda" runs the ALS on a GPU with CuPy (in-memory data only; the
        fitted arrays come back as NumPy), "cpu" runs the numba kernels, None is "cuda" when
        the data are CuPy arrays, else "cpu"; ``device_`` is the one used.

    Attributes
    ----------
    alpha_ : float
        The λ the fit used (``alpha``, or its "auto" value).
    languages_ : list of str
        In the order of ``X``.
    components_ : dict language -> ndarray (n_components, n_words_l)
        Each language's word factor (P, A, ...).
    embedding_ : ndarray (n_sentences, n_components)
        The shared Qᵀ of the training sentences.
    loss_curve_ : list of float
        Eq. (4) after each iteration.
    vectorizers_ : dict language -> TfidfVectorizer
        For the languages given as texts.
    n_iter_ : int
    fit_info_ : dict
        The record of the fit, as :class:`WMF`'s (``sources`` per language; ``"memory_plan"``
        after a fit streamed from ChunkedCSR corpora, ``"dask"`` after a fit on a Dask cluster).
    memory_plan_, dask_info_ : dict
        Aliases of ``fit_info_["memory_plan"]`` and ``fit_info_["dask"]``, as in :class:`WMF`.
    """

    def __init__(self, n_components: int = 100, alpha: float | str = "auto", missing_weight: float = 0.1,
                 max_iter: int = 20, solver: str = "cg", cg_steps: int = 3,
                 dtype: Any = None, random_state: Any = None, tokenizer: Any = None,
                 min_df: int = 1, max_features: int | None = 200_000,
                 sublinear_tf: bool = True,
                 show_progress: bool | None = None,
                 callback: Callable[[Any, int, float], Any] | None = None, device: Any = None):
        self._init_params(n_components, alpha, missing_weight, max_iter, solver, cg_steps,
                          dtype, random_state, tokenizer, min_df, max_features, show_progress,
                          callback, device, sublinear_tf=sublinear_tf)

    def fit(self, X: Mapping, y: Any = None, *, init_components: Mapping | None = None,
            init_embedding: Any = None, memory_budget: int | str | None = None,
            client: Any = None) -> BilingualWMF:
        """Fit on row-aligned matrices (or texts) of two or more languages.

        Parameters
        ----------
        X : mapping language -> sparse (n_sentences, n_words_l), sequence of str, ChunkedCSR, or dask array
            Row u of every language is the same sentence (a parallel corpus). ChunkedCSR
            corpora (every language, each written with ``transpose=True``) are streamed; the
            result equals the in-memory fit. Dask arrays with scipy.sparse row chunks (every
            language, with the same row chunks) are fitted on a cluster, as in :meth:`WMF.fit`.
        y : ignored
        init_components : mapping language -> ndarray (n_components, n_words_l), optional
        init_embedding : ndarray (n_sentences, n_components), optional
        memory_budget : int or str, optional
            Only for ChunkedCSR corpora streamed on this machine: as in :meth:`WMF.fit`.
        client : dask.distributed.Client, optional
            As in :meth:`WMF.fit`: the cluster for dask arrays (default: the current default
            client) or for ChunkedCSR corpora (only when given).

        Returns
        -------
        self
        """
        langs = _check_languages(X, "X")
        if len(langs) < 2:
            raise ValueError(f"BilingualWMF needs at least two languages, got {langs}")
        names = {lang: f"X[{lang!r}]" for lang in langs}
        from linxling.xp import choose_device, to_host
        self.device_ = choose_device(self.device, [X[lang] for lang in langs])
        X = {lang: to_host(X[lang]) for lang in langs}
        kind = _als.data_kind(X, names, client, memory_budget)
        self.vectorizers_: dict[str, Any] = {}
        if kind == "memory":
            X = {lang: self._language_matrix(X[lang], lang, fit=True) for lang in langs}
            n = X[langs[0]].shape[0]
            for lang in langs[1:]:
                if X[lang].shape[0] != n:
                    raise ValueError(f"X[{lang!r}] has {X[lang].shape[0]} rows but X[{langs[0]!r}] "
                                     f"has {n}; the languages must be row-aligned (parallel sentences)")
        else:
            X = {lang: X[lang] for lang in langs}
        init = None if init_components is None else [init_components.get(lang) for lang in langs]

        def publish(V, offsets):
            self.languages_ = langs
            self.components_ = {lang: V[o0:o1].T
                                for lang, o0, o1 in zip(langs, offsets[:-1], offsets[1:], strict=True)}

        self._fit_als(kind, X, names, init, [f"init_components[{lang!r}]" for lang in langs],
                      init_embedding, memory_budget, client, publish, "b-WMF")
        return self

    def transform(self, X: Any, language: str, dtype: Any = None) -> np.ndarray:
        """Sentence vectors of one language by eq. (2)/(6) with its word factor fixed (C-contiguous,
        in ``dtype`` when given).

        Parameters
        ----------
        X : sparse (n_sentences, n_words_language) or sequence of str
        language : a key of ``components_``
        dtype : float32 or float64, optional
            Of the result (default: the model's); C-contiguous either way.

        Returns
        -------
        ndarray (n_sentences, n_components); empty rows give zeros.
        """
        return self._transform_language(X, language, dtype)

    def _get_state(self):
        params, arrays = self._wmf_state()
        params["languages"] = list(self.languages_)
        arrays.update(components={lang: np.ascontiguousarray(self.components_[lang]) for lang in self.languages_},
                      embedding=np.ascontiguousarray(self.embedding_))
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        model = cls._from_wmf_state(params, arrays)
        E = stored_float(arrays["embedding"], "embedding", 2)
        dtype = _stored_dtype(model.dtype, E)
        model.languages_ = stored_languages(params["languages"])
        # each language's (k, p_l) map laid out as a fit leaves it, the transpose of a C-contiguous
        # (p_l, k) factor, which every transform reads: a C-contiguous map was copied whole to
        # that layout on every call (3.5 ms for one sentence at p_l = 10,000, k = 100, float64)
        model.components_ = {
            lang: _factor_layout(_stored_factor(arrays["components"][lang], f"components/{lang}", E.shape[1],
                                                f"arrays/embedding {E.shape}"), dtype)
            for lang in model.languages_}
        model.embedding_ = np.asarray(E, dtype=dtype)
        _check_vectorizers(model)
        return model


def __getattr__(name: str):
    """``linxling.models.wmf.CrossWMF``: x-WMF lives in :mod:`linxling.models.xwmf` (it builds on
    WMF), imported on first access."""
    if name == "CrossWMF":
        from linxling.models.xwmf import CrossWMF
        return CrossWMF
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
