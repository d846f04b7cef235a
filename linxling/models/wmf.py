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

import warnings
from collections.abc import Mapping

from sklearn.base import TransformerMixin
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from linxling._memory import parse_budget
from linxling._progress import progress
from linxling.io import register_model
from linxling._threads import blas_single_thread
from linxling.models._estimator import LinxlingEstimator, NotFittedError, as_output
from linxling.models._base import (vectorizer_from_state, vectorizer_state, vectorizers_from_state,
                                   vectorizers_state)
from linxling._validation import (check_float_dtype, check_positive, check_random_state, check_value_range,
                                  check_sparse_matrix)

__all__ = ["WMF", "BilingualWMF", "CrossWMF"]


_PARAM_NAMES = ("n_components", "alpha", "missing_weight", "max_iter", "solver", "cg_steps",
                "dtype", "random_state", "tokenizer", "min_df", "max_features", "show_progress")


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def _als():
    from linxling.kernels import als  # numba kernels are compiled/loaded on first use
    return als


def _texts_or_none(X: Any, name: str) -> list[str] | None:
    """``X`` as a list of texts, or ``None`` when it is a matrix (sparse, NumPy, or rows of numbers).

    Texts are any iterable of ``str`` (list, tuple, generator, 1-D str array): one sentence each.
    """
    if X is None:
        raise TypeError(f"{name} is None: give a sparse matrix (n_sentences, n_words) or a sequence of "
                        "texts (one str per sentence)")
    if isinstance(X, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of texts (one str per sentence), got a single "
                        f"{type(X).__name__}; wrap it in a list")
    if sp.issparse(X):
        return None
    if isinstance(X, np.ndarray):
        if X.ndim == 1 and X.dtype.kind in "OUS":
            X = X.tolist()
        else:
            return None
    elif (hasattr(X, "shape") and hasattr(X, "dtype")) or hasattr(X, "__array__"):
        return None                                         # other array types: the matrix path
    try:
        items = list(X)
    except TypeError:
        raise TypeError(f"{name} must be a sparse matrix or an iterable of str, got {type(X).__name__}") from None
    if not items:
        raise ValueError(f"{name} is empty: no sentences to fit or transform")
    if not any(isinstance(t, (str, bytes)) or t is None for t in items):
        return None                                         # rows of numbers: a dense matrix
    for i, t in enumerate(items):
        if not isinstance(t, str):
            hint = " (decode bytes first, e.g. b.decode('utf-8'))" if isinstance(t, bytes) else ""
            raise TypeError(f"{name}[{i}] is {type(t).__name__}, expected str{hint}")
    return items


def _make_vectorizer(est):
    from linxling.text import TfidfVectorizer
    kw = dict(min_df=est.min_df, max_features=est.max_features, norm=None,
              dtype=np.float64 if est.dtype is None else check_float_dtype(est.dtype))
    if est.tokenizer is not None:
        kw["tokenizer"] = est.tokenizer
    return TfidfVectorizer(**kw)


def _check_matrix(X, name, dtype, n_cols=None, model: str = "the model") -> sp.csr_matrix:
    X = check_sparse_matrix(X, name, dtype=dtype, nonnegative=True)
    check_value_range(X, name, "the confidence-weighted squares of ALS", allow_zero=n_cols is not None)
    if n_cols is not None and X.shape[1] != n_cols:
        raise ValueError(f"{name} has {X.shape[1]} features, but {model} is expecting {n_cols} features "
                         "as input (its training vocabulary)")
    X.sum_duplicates()
    X.sort_indices()
    return X


def _check_init(arr, name, shape, dtype) -> np.ndarray:
    arr = np.array(arr, dtype=dtype, order="C", copy=True)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr


def _init_factor(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """N(0, 1/k) entries: rows of unit expected norm (ALS rescales them in the first step)."""
    k = shape[1]
    return (rng.standard_normal(shape) / np.sqrt(k)).astype(dtype)


def _init_multi(rng, widths: Mapping, n: int, k: int, dtype, init_components, init_embedding):
    """Starting factors of b-WMF: one word factor per language (given or random, in the order of
    ``widths``), then the shared sentence factor."""
    Vs = {}
    for lang, m in widths.items():
        if init_components is not None and lang in init_components:
            Vs[lang] = _check_init(np.asarray(init_components[lang]).T, f"init_components[{lang!r}].T", (m, k), dtype)
        else:
            Vs[lang] = _init_factor(rng, (m, k), dtype)
    E = (_init_factor(rng, (n, k), dtype) if init_embedding is None else
         _check_init(init_embedding, "init_embedding", (n, k), dtype))
    return Vs, E


def _sqnorm(A) -> float:
    flat = A.reshape(-1)
    return float(np.dot(flat, flat))


class _WMFParams(TransformerMixin, LinxlingEstimator):
    """Hyper-parameters and checks shared by the three estimators (scikit-learn estimators)."""

    def _init_params(self, n_components, alpha, missing_weight, max_iter, solver, cg_steps,
                     dtype, random_state, tokenizer, min_df, max_features, show_progress,
                     callback):
        self.n_components = n_components
        self.alpha = alpha
        self.missing_weight = missing_weight
        self.max_iter = max_iter
        self.solver = solver
        self.cg_steps = cg_steps
        self.dtype = dtype
        self.random_state = random_state
        self.tokenizer = tokenizer
        self.min_df = min_df
        self.max_features = max_features
        self.show_progress = show_progress
        self.callback = callback

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True          # sparse tf-idf matrices (or texts)
        tags.input_tags.positive_only = True   # the factorised matrix is non-negative
        return tags

    def _validate_params(self) -> np.dtype:
        check_positive(self.n_components, "n_components", integer=True)
        check_positive(self.alpha, "alpha")
        check_positive(self.missing_weight, "missing_weight")
        if self.missing_weight > 1:
            raise ValueError(f"missing_weight must be in (0, 1] (the weight of the zeros "
                             f"relative to the nonzeros), got {self.missing_weight!r}")
        check_positive(self.max_iter, "max_iter", integer=True, strict=False)
        check_positive(self.cg_steps, "cg_steps", integer=True)
        if self.solver not in ("cg", "cholesky", "auto"):
            raise ValueError(f"solver must be 'cg', 'cholesky' or 'auto', got {self.solver!r}")
        if self.callback is not None and not callable(self.callback):
            raise TypeError("callback must be callable(model, iteration, loss) or None")
        return None if self.dtype is None else check_float_dtype(self.dtype)

    def _fit_dtype(self, *mats) -> np.dtype:
        """The factors' dtype: ``dtype`` when given, else the data's (float32 only when every
        matrix is float32; float64 otherwise, also for texts and integer input)."""
        if self.dtype is not None:
            return check_float_dtype(self.dtype)
        if mats and all(getattr(M, "dtype", None) == np.float32 for M in mats):
            return np.dtype(np.float32)
        return np.dtype(np.float64)

    def _model_dtype(self) -> np.dtype:
        """The fitted factors' dtype (the ``dtype`` parameter may be None: follow the data)."""
        comps = self.components_
        if not isinstance(comps, np.ndarray):
            comps = next(iter(comps.values()))
        return np.dtype(comps.dtype)

    def _solver(self) -> str:
        """'auto' = CG (monotone, cheaper) unless cg_steps ≥ n_components (Cholesky is cheaper)."""
        if self.solver == "auto":
            return "cholesky" if self.cg_steps >= self.n_components else "cg"
        return self.solver

    def _check_k(self, n_words: int, name: str) -> None:
        if self.n_components > n_words:
            raise ValueError(f"n_components={self.n_components} is larger than the vocabulary of "
                             f"{name} ({n_words} words); use n_components <= {n_words}")

    def _check_fitted(self, attr: str = "components_"):
        if not hasattr(self, attr):
            raise NotFittedError(f"this {type(self).__name__} instance is not fitted yet: call fit first")

    def _word_vectors(self, language: str) -> tuple[list[str] | None, np.ndarray]:
        """(words, vectors) of one language: columns of its word factor, words from its vectoriser."""
        self._check_fitted()
        comps = self.components_ if isinstance(self.components_, np.ndarray) else None
        if comps is None:
            if language not in self.components_:
                raise ValueError(f"unknown language {language!r}; the model has {self.languages_}")
            comps = self.components_[language]
            vec = self.vectorizers_.get(language)
            if vec is None and language == getattr(self, "pivot_language", None):
                vec = getattr(self.pivot_model_, "vectorizer_", None)
        else:
            vec = getattr(self, "vectorizer_", None)
        words = None if vec is None else list(vec.vocabulary_)
        return words, np.ascontiguousarray(comps.T)

    def _base_params_state(self) -> dict:
        params = {name: getattr(self, name) for name in _PARAM_NAMES}
        params["dtype"] = None if self.dtype is None else np.dtype(self.dtype).name
        if not (params["random_state"] is None or isinstance(params["random_state"], int)):
            params["random_state"] = None
        if not (params["tokenizer"] is None or isinstance(params["tokenizer"], str)):
            warnings.warn("a callable tokenizer cannot be saved; the loaded model uses the "
                          "default tokenizer unless you set it again", UserWarning, stacklevel=3)
            params["tokenizer"] = None
        return params

    def _language_matrix(self, X, language, *, fit: bool, name: str | None = None) -> sp.csr_matrix:
        """One language's input as a checked CSR matrix; texts go through that language's
        vectoriser (created and fitted when ``fit``). Used by b-WMF and x-WMF. The matrix keeps
        its float dtype when ``dtype`` is None at fit; at transform it gets the model's."""
        dtype = (self._model_dtype() if not fit else
                 None if self.dtype is None else check_float_dtype(self.dtype))
        name = f"X[{language!r}]" if name is None else name
        texts = _texts_or_none(X, name)
        if texts is not None:
            if fit:
                vec = _make_vectorizer(self)
                X = vec.fit_transform(texts)
                self.vectorizers_[language] = vec
            else:
                if language not in self.vectorizers_:
                    raise TypeError(f"{name} is a list of texts but language {language!r} was "
                                    "fitted from a matrix")
                X = self.vectorizers_[language].transform(texts)
        n_cols = None if fit else self.components_[language].shape[1]
        return _check_matrix(X, name, dtype, n_cols, type(self).__name__)

    def _run_loop(self, n_iter, step: Callable[[], float], desc: str):
        """Run ``step`` (one ALS iteration returning the loss) with progress and callback."""
        self.loss_curve_ = []
        self.n_iter_ = 0
        bar = progress(range(n_iter), show=self.show_progress, desc=desc, unit="it")
        with blas_single_thread():            # numba uses the cores; BLAS one thread (as Cr5)
            for it in bar:
                loss = step()
                self.loss_curve_.append(loss)
                self.n_iter_ = it + 1
                bar.set_postfix(loss=f"{loss:.6g}")
                if self.callback is not None:
                    self.callback(self, it, loss)
        bar.close()


# --------------------------------------------------------------------------------------------
# WMF
# --------------------------------------------------------------------------------------------
@register_model("WMF")
class WMF(_WMFParams):
    """Weighted matrix factorisation of a sentence × word tf-idf matrix (Guo & Diab 2012).

    Parameters
    ----------
    n_components : int, default 100
        k, the dimension of word and sentence vectors.
    alpha : float, default 20.0
        λ, the L2 regularisation of both factors (eq. 1).
    missing_weight : float in (0, 1], default 0.01
        w_m, the weight of zero entries (nonzeros have weight 1).
    max_iter : int, default 20
        ALS iterations (the paper uses 20). No early stopping: ``loss_curve_`` shows progress.
    solver : {"cg", "cholesky", "auto"}, default "cg"
        Per-row solver of the training half-steps. "cholesky" solves each row exactly (the
        loss never increases). "cg" runs ``cg_steps`` conjugate-gradient steps warm-started
        from the previous iterate (Takács et al. 2011, as in ``implicit``): each step can only
        lower the row's quadratic, so the loss is non-increasing too (up to rounding), at a
        fraction of the cost. "auto" is "cg" unless ``cg_steps >= n_components``.
        ``transform`` always solves exactly.
    cg_steps : int, default 3
    dtype : None, float32 or float64, default None
        Dtype of the factors and of the kernel arithmetic (the loss is accumulated in float64).
        None follows the data: a float32 matrix gives float32 factors, float64 (and integer
        or boolean input, and texts) float64.
    random_state : None, int or numpy Generator
        Seeds the N(0, 1/k) initial factors.
    tokenizer, min_df, max_features :
        Options of the :class:`linxling.text.TfidfVectorizer` used when ``fit`` receives texts
        (raw tf-idf, ``norm=None``, as in the paper).
    show_progress : bool or None
        tqdm bar over iterations (None follows :func:`linxling.set_show_progress`).
    callback : callable(model, iteration, loss) or None
        Called after every iteration with the model, the 0-based iteration and eq. (1).

    Attributes
    ----------
    components_ : ndarray (n_components, n_words)
        P, the word vectors (columns).
    embedding_ : ndarray (n_sentences, n_components)
        Qᵀ, the training sentences' vectors after fit.
    loss_curve_ : list of float
        Eq. (1) after each iteration.
    n_iter_ : int
    vectorizer_ : TfidfVectorizer or None
        Set when ``fit`` was given texts; ``transform`` then accepts texts too.
    dask_info_ : dict
        Only after a fit on a Dask cluster: ``n_workers``, ``row_blocks`` and ``col_blocks``
        (blocks of X and Xᵀ on the workers), ``nnz``, and ``payload_bytes_per_iteration``: the
        bytes of the arrays the client scattered (times the workers receiving each) and
        gathered in each iteration (the first also sends the initial sentence factor).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from linxling import WMF
    >>> X = sp.random(200, 80, density=0.05, random_state=0, format="csr")
    >>> model = WMF(n_components=10, alpha=0.1, max_iter=5, random_state=0).fit(X)
    >>> model.transform(X[:3]).shape
    (3, 10)
    """

    def __init__(self, n_components: int = 100, alpha: float = 20.0, missing_weight: float = 0.01,
                 max_iter: int = 20, solver: str = "cg", cg_steps: int = 3,
                 dtype: Any = None, random_state: Any = None, tokenizer: Any = None,
                 min_df: int = 3, max_features: int | None = 200_000,
                 show_progress: bool | None = None,
                 callback: Callable[[Any, int, float], Any] | None = None, language: str | None = None):
        self._init_params(n_components, alpha, missing_weight, max_iter, solver, cg_steps,
                          dtype, random_state, tokenizer, min_df, max_features, show_progress,
                          callback)
        self.language = language

    # ---------------------------------------------------------------- input
    def _input_matrix(self, X, *, fit: bool, name: str = "X") -> sp.csr_matrix:
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
        elif fit:
            self.vectorizer_ = None
        n_cols = None if fit else self.components_.shape[1]
        return _check_matrix(X, name, dtype, n_cols, type(self).__name__)

    # ---------------------------------------------------------------- fit
    def fit(self, X, y=None, *, init_components=None, init_embedding=None,
            memory_budget=None, client=None) -> "WMF":
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
            workers once; each iteration the client sends each factor to every worker once and
            gathers the solved blocks (``dask_info_``). A worker lost during the fit is
            replaced: its blocks are recomputed from their tasks and the half-step is run again,
            with the same result. The result equals the in-memory fit up to rounding.

        Returns
        -------
        self
        """
        self._validate_params()
        from linxling._dask import is_dask_array
        from linxling.io._chunks import ChunkedCSR
        if is_dask_array(X) or (client is not None and isinstance(X, ChunkedCSR)):
            if memory_budget is not None:
                raise ValueError("memory_budget applies to a ChunkedCSR streamed on this machine; on a "
                                 "Dask cluster the data is held by the workers")
            return self._fit_dask(X, client, init_components, init_embedding)
        if client is not None:
            raise ValueError("client is for row-partitioned data (a dask array with scipy.sparse chunks, "
                             "or a ChunkedCSR); X is in memory: wrap it, e.g. dask.array.from_array(X, "
                             "chunks=(10_000, -1), asarray=False), to fit it on the cluster")
        if isinstance(X, ChunkedCSR):
            return self._fit_chunked(X, init_components, init_embedding, memory_budget)
        if memory_budget is not None:
            raise ValueError("memory_budget applies to a ChunkedCSR corpus (linxling.io.write_chunks); "
                             "an in-memory X is already in memory")
        X = self._input_matrix(X, fit=True)
        dtype = self._fit_dtype(X)
        n, m = X.shape
        k = int(self.n_components)
        self._check_k(m, "X")
        als = _als()
        rng = check_random_state(self.random_state)
        V = (_init_factor(rng, (m, k), dtype) if init_components is None else
             _check_init(np.asarray(init_components).T, "init_components.T", (m, k), dtype))
        E = (_init_factor(rng, (n, k), dtype) if init_embedding is None else
             _check_init(init_embedding, "init_embedding", (n, k), dtype))
        XT = X.T.tocsr()
        parts, parts_t = als._csr_parts(X, dtype), als._csr_parts(XT, dtype)  # rows, words
        lam, w = float(self.alpha), float(self.missing_weight)
        solver, steps = self._solver(), int(self.cg_steps)
        self.components_ = V.T
        self.n_features_in_ = int(V.shape[0])
        self.embedding_ = E

        def step():
            als.als_half_step(None, V, E, missing_weight=w, regularization=lam, solver=solver,
                              cg_steps=steps, parts=parts)                      # eq. (2)
            _, obj = als.als_half_step(None, E, V, missing_weight=w, regularization=lam,
                                       solver=solver, cg_steps=steps, parts=parts_t,
                                       return_objective=True)                  # eq. (3)
            # eq. (1) from the solver's own residuals (no extra pass): Σ_words f_i + λ‖Q‖²
            return obj + lam * _sqnorm(E)

        self._run_loop(int(self.max_iter), step, "WMF")
        return self

    def _fit_chunked(self, X, init_components, init_embedding, memory_budget) -> "WMF":
        """ALS streaming the row chunks of X (sentence half-step) and of Xᵀ (word half-step)."""
        XT = X.T
        dtype = self._fit_dtype(X)
        n, m = X.shape
        k = int(self.n_components)
        self._check_k(m, "X")
        budget = parse_budget(memory_budget)
        fixed = (n + m) * k * dtype.itemsize + 8 * (n + m + 2) + 2 * k * k * dtype.itemsize
        reads = (_read_ranges(X, budget, fixed, dtype), _read_ranges(XT, budget, fixed, dtype))
        als = _als()
        rng = check_random_state(self.random_state)
        V = (_init_factor(rng, (m, k), dtype) if init_components is None else
             _check_init(np.asarray(init_components).T, "init_components.T", (m, k), dtype))
        E = (_init_factor(rng, (n, k), dtype) if init_embedding is None else
             _check_init(init_embedding, "init_embedding", (n, k), dtype))
        lam, w = float(self.alpha), float(self.missing_weight)
        solver, steps = self._solver(), int(self.cg_steps)
        self.vectorizer_ = None
        self.components_ = V.T
        self.n_features_in_ = int(m)
        self.embedding_ = E
        self.memory_plan_ = {"budget": budget, "factor_bytes": fixed,
                             "reads_per_pass": (len(reads[0]), len(reads[1]))}

        def half_step(src, ranges, Y, out):
            G = als.gram(Y, w, lam)
            obj = 0.0
            for r0, r1, chunk in src.read_ranges(ranges):
                chunk = _check_matrix(chunk, f"{src.group} rows {r0}:{r1}", dtype, chunk.shape[1])
                _, o = als.als_half_step(chunk, Y, out[r0:r1], missing_weight=w, regularization=lam,
                                         solver=solver, cg_steps=steps, gram_matrix=G,
                                         return_objective=True)
                obj += o
            return obj

        def step():
            half_step(X, reads[0], V, E)                                        # eq. (2)
            return half_step(XT, reads[1], E, V) + lam * _sqnorm(E)            # eq. (3), eq. (1)

        self._run_loop(int(self.max_iter), step, "WMF")
        return self

    def _fit_dask(self, X, client, init_components, init_embedding) -> "WMF":
        """ALS on a dask.distributed cluster (row blocks of X and Xᵀ persisted on the workers)."""
        dtype = self._fit_dtype(X)
        k = int(self.n_components)
        rng = check_random_state(self.random_state)

        def make_init(n, widths):
            m = widths[0]
            V = (_init_factor(rng, (m, k), dtype) if init_components is None else
                 _check_init(np.asarray(init_components).T, "init_components.T", (m, k), dtype))
            E = (_init_factor(rng, (n, k), dtype) if init_embedding is None else
                 _check_init(init_embedding, "init_embedding", (n, k), dtype))
            return V, E

        def publish(V, offsets):
            self.components_ = V.T
            self.n_features_in_ = int(V.shape[0])

        self.vectorizer_ = None
        _fit_dask(self, client, {"X": X}, ["X"], {"X": "X"}, dtype, make_init, publish, "WMF")
        return self

    def fit_transform(self, X, y=None, **fit_params) -> np.ndarray:
        """Fit and return ``embedding_`` (n_sentences, n_components)."""
        return self.fit(X, **fit_params).embedding_

    # ---------------------------------------------------------------- transform
    def transform(self, X, language: str | None = None, dtype: Any = None) -> np.ndarray:
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
                                     self.alpha), dtype)

    def _check_language(self, language: str | None) -> None:
        if language is not None and self.language is not None and language != self.language:
            raise ValueError(f"this WMF model is for language {self.language!r}, not {language!r}")

    def word_vectors(self, language: str | None = None) -> tuple[list[str] | None, np.ndarray]:
        """Word vectors: the columns of P, ``(words, vectors (n_words, n_components))``.

        ``words`` is the vectoriser's vocabulary when fitted from texts, else ``None``.
        """
        self._check_fitted()
        self._check_language(language)
        return self._word_vectors(language)

    def score(self, X, y=None) -> float:
        """Minus eq. (1) of X (its sentences' exact vectors, eq. 2): higher is better, as in scikit-learn.

        ``y`` is ignored. :meth:`loss` gives eq. (1) itself, for any sentence vectors.
        """
        return -self.loss(X)

    def loss(self, X, embedding=None) -> float:
        """Eq. (1) for X with the model's P and ``embedding`` (default: ``transform(X)``)."""
        self._check_fitted()
        X = self._input_matrix(X, fit=False)
        E = self.transform(X) if embedding is None else np.asarray(embedding, dtype=self.components_.dtype)
        return _als().wmf_loss(X, E, np.ascontiguousarray(self.components_.T),
                               missing_weight=self.missing_weight, regularization=self.alpha)

    # ---------------------------------------------------------------- store
    def _get_state(self):
        self._check_fitted()
        params = self._base_params_state()
        params.update(loss_curve=[float(v) for v in self.loss_curve_], n_iter=int(self.n_iter_),
                      language=self.language)
        arrays: dict[str, Any] = {"components": np.ascontiguousarray(self.components_),
                                  "embedding": np.ascontiguousarray(self.embedding_)}
        vp, va = vectorizer_state(getattr(self, "vectorizer_", None))
        params["vectorizer"] = vp
        if va is not None:
            arrays["vectorizer"] = va
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        params = dict(params)
        loss_curve = params.pop("loss_curve", [])
        n_iter = params.pop("n_iter", len(loss_curve))
        vp = params.pop("vectorizer", None)
        model = cls(**{k: v for k, v in params.items() if k in _PARAM_NAMES}, language=params.get("language"))
        dtype = _stored_dtype(model.dtype, arrays["components"])
        model.components_ = np.ascontiguousarray(np.asarray(arrays["components"], dtype=dtype).T).T
        model.embedding_ = np.asarray(arrays["embedding"], dtype=dtype)
        model.loss_curve_ = list(loss_curve)
        model.n_iter_ = int(n_iter)
        model.vectorizer_ = vectorizer_from_state(vp, arrays.get("vectorizer"))
        return model


def _solve_rows(X: sp.csr_matrix, V: np.ndarray, w_m: float, lam: float) -> np.ndarray:
    """Eq. (2) exactly for every row of X with word factors V (n_words, k)."""
    als = _als()
    out = np.zeros((X.shape[0], V.shape[1]), dtype=V.dtype)
    return als.als_half_step(X, V, out, missing_weight=w_m, regularization=lam,
                             solver="cholesky")


def _read_ranges(src, budget: int | None, fixed: int, dtype) -> list[tuple[int, int]]:
    """Row ranges of ``src`` (a ChunkedCSR) to read at a time: its stored chunks without a
    budget; else ranges whose CSR (read, converted for the kernel: ~3 copies of
    indices + data, plus int64 row pointers) fits what the factors leave of the budget."""
    if budget is None:
        return [(int(a), int(b)) for a, b in zip(src.bounds[:-1], src.bounds[1:], strict=True)]
    avail = budget - fixed
    per_nz = 3 * (4 + max(np.dtype(dtype).itemsize, src.dtype.itemsize))
    if avail <= per_nz * 64:
        raise MemoryError(f"memory_budget={budget} bytes does not hold the factors and row pointers "
                          f"({fixed} bytes) plus a chunk; give at least {fixed + per_nz * 2 ** 20} bytes")
    max_nnz = avail // per_nz
    indptr = src.indptr
    ranges, start, n = [], 0, src.shape[0]
    while start < n:
        stop = int(np.searchsorted(indptr, indptr[start] + max_nnz, side="right")) - 1
        stop = min(n, max(stop, start + 1))
        ranges.append((start, stop))
        start = stop
    return ranges


class _SummedRows:
    """Several row-aligned ChunkedCSR read together: row pointers summed (for read sizing)."""

    def __init__(self, srcs, langs):
        self.srcs = [srcs[lang] for lang in langs]
        self.shape = (self.srcs[0].shape[0], sum(s.shape[1] for s in self.srcs))
        self.indptr = sum(s.indptr for s in self.srcs)
        self.bounds = self.srcs[0].bounds
        self.dtype = np.result_type(*[s.dtype for s in self.srcs])

    def read_ranges(self, ranges):
        its = [s.read_ranges(ranges) for s in self.srcs]
        for parts in zip(*its, strict=True):
            yield parts[0][0], parts[0][1], [p[2] for p in parts]


def _stored_dtype(dtype, array) -> np.dtype:
    """dtype of a loaded model's factors: the parameter when set, else the stored array's."""
    return check_float_dtype(dtype if dtype is not None else np.asarray(array).dtype)


def _check_languages(mapping, name: str) -> list:
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{name} must be a mapping language -> matrix, got {type(mapping).__name__}")
    return list(mapping)



# --------------------------------------------------------------------------------------------
# Dask: ALS on a dask.distributed cluster (row blocks of X and of Xᵀ persisted on the workers)
# --------------------------------------------------------------------------------------------
# Both models run the same driver: b-WMF is WMF of the column-stacked [X_1 | X_2 | ...] whose
# word factor is the row-stacked [A_1; A_2; ...] (equal λ and w_m), so a row block holds the
# languages' rows side by side and every column block (rows of one language's Xᵀ) lies in one
# language. Per iteration the client broadcasts each factor once (it is the fixed factor of one
# half-step and the warm start of the next) and gathers the solved blocks; the data stays put.

def _dask_check_chunk(B, name: str, shape: tuple[int, int], dtype) -> sp.csr_matrix:
    if not sp.issparse(B):
        raise TypeError(f"{name} is a {type(B).__module__}.{type(B).__name__}, not a scipy.sparse "
                        "matrix; give a dask array with scipy.sparse chunks (e.g. "
                        "X.map_blocks(scipy.sparse.csr_matrix))")
    if B.ndim != 2 or tuple(B.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(B.shape)}, but its dask array's chunks say {shape}")
    return _check_matrix(B, name, dtype, shape[1])


def _h5_rows(path: str, group: str, r0: int, r1: int) -> sp.csr_matrix:
    """Rows r0:r1 of one group of a write_chunks file (reads only their slice of indptr)."""
    import h5py
    with h5py.File(path, "r") as fh:
        g = fh[group]
        indptr = np.asarray(g["indptr"][r0:r1 + 1], dtype=np.int64)
        a, b = int(indptr[0]), int(indptr[-1])
        return sp.csr_matrix((g["data"][a:b], g["indices"][a:b], indptr - a),
                             shape=(r1 - r0, int(g.attrs["shape"][1])))


def _dask_row_block(blocks, r0: int, r1: int, widths, dtype, names, h5: bool):
    """One row block of the (column-stacked) matrix as kernel parts."""
    mats = []
    for B, m, name in zip(blocks, widths, names, strict=True):
        if h5:
            B = _h5_rows(B, "X", r0, r1)
        mats.append(_dask_check_chunk(B, name, (r1 - r0, m), dtype))
    M = mats[0] if len(mats) == 1 else sp.hstack(mats, format="csr")
    return _als()._csr_parts(M, dtype)


def _dask_col_counts(parts, n_cols: int) -> np.ndarray:
    return np.bincount(parts[1], minlength=n_cols).astype(np.int64)


def _dask_sum(*arrays):
    out = arrays[0].copy()
    for a in arrays[1:]:
        out += a
    return out


def _dask_split(parts, n_rows: int, n_cols: int, col_ranges) -> tuple:
    """The row block's transpose cut into the column blocks (each (c1 − c0) × n_rows CSR)."""
    X = sp.csr_matrix((parts[2], parts[1], parts[0]), shape=(n_rows, n_cols))
    XT = X.T.tocsr()
    return tuple(XT[c0:c1] for c0, c1 in col_ranges)


def _dask_assemble(dtype, *pieces):
    """Rows c0:c1 of Xᵀ from the row blocks' pieces (in row-block order)."""
    M = sp.hstack(pieces, format="csr") if len(pieces) > 1 else sp.csr_matrix(pieces[0])
    M.sort_indices()
    return _als()._csr_parts(M, dtype)


def _dask_h5_col_block(path: str, c0: int, c1: int, n: int, dtype, name: str):
    B = _dask_check_chunk(_h5_rows(path, "XT", c0, c1), name, (c1 - c0, n), dtype)
    return _als()._csr_parts(B, dtype)


def _dask_solve(parts, Y, G, warm, r0: int, r1: int, w: float, lam: float, solver: str, steps: int):
    """One block of a half-step: rows r0:r1 solved with Y fixed, warm-started from ``warm``:
    the whole factor (rows r0:r1 are used) or this block's previous ``(rows, objective)``."""
    from linxling._dask import kernel_threads
    start = warm[0] if isinstance(warm, tuple) else warm[r0:r1]
    out = np.array(start, dtype=Y.dtype, order="C", copy=True)
    with kernel_threads():
        _, obj = _als().als_half_step(None, Y, out, missing_weight=w, regularization=lam,
                                      solver=solver, cg_steps=steps, parts=parts, gram_matrix=G,
                                      return_objective=True)
    return out, obj


def _tree(parts: list, func, split_every: int = 8):
    import dask
    f = dask.delayed(func, pure=True)
    while len(parts) > 1:
        parts = [f(*parts[i:i + split_every]) if len(parts[i:i + split_every]) > 1 else parts[i]
                 for i in range(0, len(parts), split_every)]
    return parts[0]


def _balanced_ranges(counts: np.ndarray, n_blocks: int) -> list[tuple[int, int]]:
    """Split range(len(counts)) into at most n_blocks contiguous ranges of similar sum."""
    m = len(counts)
    n_blocks = max(1, min(n_blocks, m))
    cum = np.concatenate([[0], np.cumsum(counts + 1)])   # +1: empty columns still cost a row
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_blocks) / n_blocks, side="left")
    bounds = np.unique(np.concatenate([[0], np.clip(cuts, 1, m - 1) if m > 1 else [], [m]]).astype(np.int64))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _dask_sources(X: Mapping, langs: list, names: dict, n: int | None = None):
    """Validate the languages' dask arrays / ChunkedCSR and return
    (kind, per-language row-block inputs, row ranges, widths)."""
    from linxling._dask import is_dask_array, sparse_row_blocks
    from linxling.io._chunks import ChunkedCSR
    kinds = {lang: "h5" if isinstance(X[lang], ChunkedCSR) else "dask" for lang in langs}
    if len(set(kinds.values())) > 1:
        raise TypeError("X mixes ChunkedCSR corpora and dask arrays; give every language the same way")
    kind = kinds[langs[0]]
    widths = [int(X[lang].shape[1]) for lang in langs]
    rows = {lang: int(X[lang].shape[0]) for lang in langs}
    for lang in langs[1:]:
        if rows[lang] != rows[langs[0]]:
            raise ValueError(f"{names[lang]} has {rows[lang]} rows but {names[langs[0]]} has "
                             f"{rows[langs[0]]}; the languages must be row-aligned (parallel sentences)")
    if kind == "h5":
        for lang in langs:
            try:
                _ = X[lang].T
            except ValueError as e:   # written without the transpose
                raise ValueError(f"{names[lang]}: {e}") from None
        bounds = X[langs[0]].bounds
        ranges = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
        return kind, {lang: [str(X[lang].path)] * len(ranges) for lang in langs}, ranges, widths
    blocks, ranges = {}, None
    for lang in langs:
        if not is_dask_array(X[lang]):
            raise TypeError(f"{names[lang]} is a {type(X[lang]).__name__}; with a dask array in X every "
                            "language must be a dask array")
        blocks[lang], r = sparse_row_blocks(X[lang], names[lang])
        if ranges is None:
            ranges = r
        elif r != ranges:
            raise ValueError(f"{names[lang]} has row chunks {X[lang].chunks[0]} but {names[langs[0]]} "
                             f"has {X[langs[0]].chunks[0]}; give the languages the same row chunks, e.g. "
                             f"X[{lang!r}].rechunk({{0: X[{langs[0]!r}].chunks[0]}})")
    return kind, blocks, ranges, widths


class _DaskALS:
    """Data persisted on the cluster and the per-iteration ALS half-steps (client-driven)."""

    def __init__(self, client, X: Mapping, langs: list, names: dict, dtype, sources):
        import dask
        from linxling._dask import n_workers, on_worker, persist, worker_list
        self.client = client
        self.dtype = dtype
        # factors go straight between the client and the workers (not through the scheduler),
        # unless the client was made with direct_to_workers=False
        self.direct = client.direct_to_workers is not False
        kind, blocks, ranges, widths = sources
        self.row_ranges = ranges
        self.widths = widths
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        n, M = ranges[-1][1], int(self.offsets[-1])
        self.shape = (n, M)
        workers = worker_list(client)
        row_tasks = []
        for b, (r0, r1) in enumerate(ranges):
            bl = [blocks[lang][b] for lang in langs]
            nm = [f"{names[lang]} chunk {b} (rows {r0}:{r1})" for lang in langs]
            with on_worker(workers, b):              # blocks spread evenly over the workers
                row_tasks.append(dask.delayed(_dask_row_block, pure=False)(bl, r0, r1, widths, dtype,
                                                                         nm, kind == "h5"))
        self.rows = persist(client, row_tasks)
        counts = client.compute(_tree([dask.delayed(_dask_col_counts, pure=True)(f, M)
                                       for f in self.rows], _dask_sum)).result()
        for lang, o0, o1 in zip(langs, self.offsets[:-1], self.offsets[1:], strict=True):
            if not counts[o0:o1].any():
                raise ValueError(f"{names[lang]} is all zero: there is nothing to fit")
        self.col_counts = counts
        col_ranges = []
        if kind == "h5":
            col_tasks = []
            for lang, o0 in zip(langs, self.offsets[:-1], strict=True):
                b = X[lang].T.bounds
                for c0, c1 in zip(b[:-1], b[1:], strict=True):
                    if c1 > c0:
                        col_ranges.append((int(o0 + c0), int(o0 + c1)))
                        with on_worker(workers, len(col_tasks)):
                            col_tasks.append(dask.delayed(_dask_h5_col_block, pure=False)(
                                str(X[lang].path), int(c0), int(c1), n, dtype,
                                f"{names[lang]}ᵀ rows {int(c0)}:{int(c1)}"))
            cols = persist(client, col_tasks)
        else:
            per_lang = max(1, len(ranges))
            for o0, o1 in zip(self.offsets[:-1], self.offsets[1:], strict=True):
                col_ranges += [(int(o0 + a), int(o0 + b))
                               for a, b in _balanced_ranges(counts[o0:o1], per_lang)]
            # each row block's transpose is cut where the block is; only the pieces travel to
            # the worker that assembles a column block (spread evenly)
            import operator
            splits = [client.submit(_dask_split, f, r1 - r0, M, col_ranges, pure=False)
                      for f, (r0, r1) in zip(self.rows, ranges, strict=True)]
            pieces = [[client.submit(operator.getitem, sf, j, pure=False) for sf in splits]
                      for j in range(len(col_ranges))]
            cols = [client.submit(_dask_assemble, dtype, *pieces[j], pure=False,
                                  workers=[workers[j % len(workers)]] if workers else None,
                                  allow_other_workers=True)
                    for j in range(len(col_ranges))]
            for f in cols:
                if f.exception() is not None:
                    f.result()
            del splits, pieces
        self.col_ranges = col_ranges
        self.cols = cols
        self.n_workers = n_workers(client)
        self.nnz = int(counts.sum())
        self.bytes_sent = {"scattered": 0, "gathered": 0}
        self.prev: dict = {}

    def scatter(self, array, n_receivers: int):
        """One array to one worker; the ``n_receivers`` workers whose tasks use it fetch it
        from there (counted as that many copies). Not broadcast: a replica that the scheduler's
        active memory manager drops between two uses would be sent again."""
        fut = self.client.scatter(array, hash=False, direct=self.direct)
        self.bytes_sent["scattered"] += array.nbytes * n_receivers
        return fut

    def half_step(self, side: str, Y, G, out, w, lam, solver, steps) -> float:
        """Solve the rows of one side's blocks into ``out`` (in place) with ``Y`` fixed; return
        the solved rows' objective.

        Each block is warm-started from its own result of this side's previous half-step, still
        on the worker that computed it (no transfer); the first time, or when a worker was
        lost, from ``out`` as the client holds it (the same values)."""
        from linxling._dask import gather_watching, holders, retry_lost
        blocks, ranges = (self.rows, self.row_ranges) if side == "rows" else (self.cols, self.col_ranges)
        state = {"warm": self.prev.get(side)}

        def attempt():
            for b in blocks:     # blocks lost with a worker: wait until recomputed from their tasks
                b.exception()
            where = holders(self.client, blocks)   # each task where its block is
            receivers = len({a for at in where for a in (at or ())}) or self.n_workers
            fY = self.scatter(Y, receivers)
            fG = self.scatter(G, receivers)
            warm = state["warm"]
            if warm is None or any(f.status != "finished" for f in warm):
                warm = [self.scatter(out, receivers)] * len(blocks)
            # pinned (strictly: a loosely restricted task may be stolen by another worker, which
            # then fetches the block); a block being recomputed after a loss runs anywhere
            futs = [self.client.submit(_dask_solve, blk, fY, fG, fw, r0, r1, w, lam, solver, steps,
                                       pure=False, workers=at)
                    for blk, (r0, r1), at, fw in zip(blocks, ranges, where, warm, strict=True)]
            try:
                watch = [*blocks, fY, fG, *{f.key: f for f in warm}.values()]
                return futs, gather_watching(self.client, futs, watch, direct=self.direct)
            except BaseException:
                state["warm"] = None               # a retry starts from the client's copy
                raise

        futs, results = retry_lost(attempt)
        self.prev[side] = futs
        obj = 0.0
        for (r0, r1), (blk, o) in zip(ranges, results, strict=True):
            out[r0:r1] = blk
            obj += o
            self.bytes_sent["gathered"] += blk.nbytes + 8
        return obj

    def release(self) -> None:
        self.rows = self.cols = []
        self.prev = {}


def _fit_dask(est, client, X: Mapping, langs: list, names: dict, dtype, make_init, publish,
              desc: str) -> None:
    """ALS of the column-stacked languages on a cluster.

    ``make_init(n, widths)`` returns the initial (V (M, k), E (n, k)) made as the in-memory fit
    makes them; ``publish(V, offsets)`` sets the model's word factors (views of V) before the
    first iteration; V and E are then updated in place after every half-step.
    """
    from linxling._dask import get_client
    client = get_client(client)
    sources = _dask_sources(X, langs, names)
    for lang, m in zip(langs, sources[3], strict=True):
        est._check_k(m, names[lang])
    data = _DaskALS(client, X, langs, names, dtype, sources)
    n, _ = data.shape
    V, E = make_init(n, data.widths)
    als = _als()
    lam, w = float(est.alpha), float(est.missing_weight)
    solver, steps = est._solver(), int(est.cg_steps)
    est.embedding_ = E
    publish(V, data.offsets)
    per_iter: list[int] = []
    est.dask_info_ = {"n_workers": data.n_workers, "row_blocks": len(data.rows),
                      "col_blocks": len(data.cols), "nnz": data.nnz,
                      "payload_bytes_per_iteration": per_iter}

    def step():
        before = data.bytes_sent["scattered"] + data.bytes_sent["gathered"]
        Gv = sum(als.gram(V[o0:o1], w) for o0, o1 in zip(data.offsets[:-1], data.offsets[1:], strict=True))
        Gv[np.diag_indices_from(Gv)] += dtype.type(lam)
        data.half_step("rows", V, np.ascontiguousarray(Gv), E, w, lam, solver, steps)  # eq. (2) / (5)
        obj = data.half_step("cols", E, als.gram(E, w, lam), V, w, lam, solver, steps)  # eq. (3) / (5)
        per_iter.append(data.bytes_sent["scattered"] + data.bytes_sent["gathered"] - before)
        return obj + lam * _sqnorm(E)

    try:
        est._run_loop(int(est.max_iter), step, desc)
    finally:
        data.release()


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
    Same as :class:`WMF`.

    Attributes
    ----------
    languages_ : list of str
    components_ : dict language -> ndarray (n_components, n_words_l)
        Each language's word factor (P, A, ...).
    embedding_ : ndarray (n_sentences, n_components)
        The shared Qᵀ of the training sentences.
    loss_curve_ : list of float
        Eq. (4) after each iteration.
    vectorizers_ : dict language -> TfidfVectorizer
        For the languages given as texts.
    dask_info_ : dict
        Only after a fit on a Dask cluster: as in :class:`WMF`.
    """

    def __init__(self, n_components: int = 100, alpha: float = 20.0, missing_weight: float = 0.01,
                 max_iter: int = 20, solver: str = "cg", cg_steps: int = 3,
                 dtype: Any = None, random_state: Any = None, tokenizer: Any = None,
                 min_df: int = 3, max_features: int | None = 200_000,
                 show_progress: bool | None = None,
                 callback: Callable[[Any, int, float], Any] | None = None):
        self._init_params(n_components, alpha, missing_weight, max_iter, solver, cg_steps,
                          dtype, random_state, tokenizer, min_df, max_features, show_progress,
                          callback)

    def fit(self, X: Mapping, y=None, *, init_components: Mapping | None = None,
            init_embedding=None, memory_budget=None, client=None) -> "BilingualWMF":
        """Fit on row-aligned matrices (or texts) of two or more languages.

        Parameters
        ----------
        X : mapping language -> sparse (n_sentences, n_words_l), sequence of str, ChunkedCSR, or dask array
            Row u of every language is the same sentence (a parallel corpus). ChunkedCSR
            corpora (every language, each written with ``transpose=True``) are streamed; the
            result equals the in-memory fit. Dask arrays with scipy.sparse row chunks (every
            language, with the same row chunks) are fitted on a cluster, as in :meth:`WMF.fit`.
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
        self._validate_params()
        langs = _check_languages(X, "X")
        if len(langs) < 2:
            raise ValueError(f"BilingualWMF needs at least two languages, got {langs}")
        from linxling._dask import is_dask_array
        from linxling.io._chunks import ChunkedCSR
        chunked = [isinstance(X[lang], ChunkedCSR) for lang in langs]
        if any(is_dask_array(X[lang]) for lang in langs) or (client is not None and all(chunked)):
            if memory_budget is not None:
                raise ValueError("memory_budget applies to ChunkedCSR corpora streamed on this machine; "
                                 "on a Dask cluster the data is held by the workers")
            return self._fit_dask(X, langs, client, init_components, init_embedding)
        if client is not None:
            raise ValueError("client is for row-partitioned data (dask arrays with scipy.sparse chunks, "
                             "or ChunkedCSR corpora, for every language); wrap in-memory matrices with "
                             "dask.array.from_array(X_l, chunks=(10_000, -1), asarray=False)")
        if any(chunked):
            if not all(chunked):
                raise TypeError("X mixes ChunkedCSR corpora and in-memory data; give every "
                                "language as a ChunkedCSR (linxling.io.write_chunks) or none")
            return self._fit_chunked(X, langs, init_components, init_embedding, memory_budget)
        if memory_budget is not None:
            raise ValueError("memory_budget applies to ChunkedCSR corpora (linxling.io.write_chunks); "
                             "in-memory X is already in memory")
        self.vectorizers_ = {}
        mats = {lang: self._language_matrix(X[lang], lang, fit=True) for lang in langs}
        n = mats[langs[0]].shape[0]
        for lang in langs[1:]:
            if mats[lang].shape[0] != n:
                raise ValueError(f"X[{lang!r}] has {mats[lang].shape[0]} rows but X[{langs[0]!r}] "
                                 f"has {n}; the languages must be row-aligned (parallel sentences)")
        dtype = self._fit_dtype(*mats.values())
        mats = {lang: M if M.dtype == dtype else M.astype(dtype) for lang, M in mats.items()}
        k = int(self.n_components)
        for lang in langs:
            self._check_k(mats[lang].shape[1], f"X[{lang!r}]")
        als = _als()
        rng = check_random_state(self.random_state)
        Vs, E = _init_multi(rng, {lang: mats[lang].shape[1] for lang in langs}, n, k, dtype,
                            init_components, init_embedding)
        stacked = als._csr_parts(sp.hstack([mats[lang] for lang in langs], format="csr"), dtype)
        parts_t = {lang: als._csr_parts(mats[lang].T.tocsr(), dtype) for lang in langs}
        lam, w = float(self.alpha), float(self.missing_weight)
        solver, steps = self._solver(), int(self.cg_steps)
        self.languages_ = langs
        self.embedding_ = E
        self.components_ = {lang: Vs[lang].T for lang in langs}

        def step():
            Ys = [Vs[lang] for lang in langs]
            als.als_half_step_multi(None, Ys, E, missing_weights=w, regularization=lam,
                                    solver=solver, cg_steps=steps, stacked=stacked)  # eq. (5) Q
            loss = lam * _sqnorm(E)
            for lang in langs:                                                       # eq. (5) P, A
                _, obj = als.als_half_step(None, E, Vs[lang], missing_weight=w,
                                           regularization=lam, solver=solver, cg_steps=steps,
                                           parts=parts_t[lang], return_objective=True)
                loss += obj  # this language's weighted error + λ‖A‖² (eq. 4)
            return loss

        self._run_loop(int(self.max_iter), step, "b-WMF")
        return self

    def _fit_dask(self, X, langs, client, init_components, init_embedding) -> "BilingualWMF":
        """b-WMF on a dask.distributed cluster (WMF of the column-stacked languages)."""
        dtype = self._fit_dtype(*[X[lang] for lang in langs])
        k = int(self.n_components)
        rng = check_random_state(self.random_state)

        def make_init(n, widths):
            Vs, E = _init_multi(rng, dict(zip(langs, widths, strict=True)), n, k, dtype,
                                init_components, init_embedding)
            return np.ascontiguousarray(np.concatenate([Vs[lang] for lang in langs], axis=0)), E

        def publish(V, offsets):
            self.components_ = {lang: V[o0:o1].T
                                for lang, o0, o1 in zip(langs, offsets[:-1], offsets[1:], strict=True)}

        self.vectorizers_ = {}
        self.languages_ = langs
        _fit_dask(self, client, X, langs, {lang: f"X[{lang!r}]" for lang in langs}, dtype,
                  make_init, publish, "b-WMF")
        return self

    def _fit_chunked(self, X, langs, init_components, init_embedding, memory_budget):
        """b-WMF streaming each language's row chunks (shared Q) and transposed chunks (A_l)."""
        srcs = {lang: X[lang] for lang in langs}
        n = srcs[langs[0]].shape[0]
        for lang in langs[1:]:
            if srcs[lang].shape[0] != n:
                raise ValueError(f"X[{lang!r}] has {srcs[lang].shape[0]} rows but X[{langs[0]!r}] "
                                 f"has {n}; the languages must be row-aligned (parallel sentences)")
        dtype = self._fit_dtype(*srcs.values())
        k = int(self.n_components)
        for lang in langs:
            self._check_k(srcs[lang].shape[1], f"X[{lang!r}]")
        tsrcs = {lang: srcs[lang].T for lang in langs}
        budget = parse_budget(memory_budget)
        m_total = sum(srcs[lang].shape[1] for lang in langs)
        fixed = (n + m_total) * k * dtype.itemsize + 8 * (n + m_total + 2 * len(langs)) * 2
        # sentence reads: the row ranges of the language with the most nonzeros, all languages
        # read together (a merged source whose row pointers are the sum of the languages')
        summed = _SummedRows(srcs, langs)
        row_ranges = _read_ranges(summed, budget, fixed, dtype)
        word_ranges = {lang: _read_ranges(tsrcs[lang], budget, fixed, dtype) for lang in langs}
        als = _als()
        rng = check_random_state(self.random_state)
        Vs, E = _init_multi(rng, {lang: srcs[lang].shape[1] for lang in langs}, n, k, dtype,
                            init_components, init_embedding)
        lam, w = float(self.alpha), float(self.missing_weight)
        solver, steps = self._solver(), int(self.cg_steps)
        self.vectorizers_ = {}
        self.languages_ = langs
        self.embedding_ = E
        self.components_ = {lang: Vs[lang].T for lang in langs}
        self.memory_plan_ = {"budget": budget, "factor_bytes": fixed,
                             "reads_per_pass": (len(row_ranges),
                                                {lang: len(r) for lang, r in word_ranges.items()})}

        def step():
            Ys = [Vs[lang] for lang in langs]
            G = sum(als.gram(Yl, w) for Yl in Ys)
            G[np.diag_indices_from(G)] += dtype.type(lam)
            for r0, r1, blocks in summed.read_ranges(row_ranges):                # eq. (5) Q
                mats = [_check_matrix(B, f"X[{lang!r}] rows {r0}:{r1}", dtype, B.shape[1])
                        for lang, B in zip(langs, blocks, strict=True)]
                stacked = als._csr_parts(sp.hstack(mats, format="csr"), dtype)
                als.als_half_step_multi(None, Ys, E[r0:r1], missing_weights=w, regularization=lam,
                                        solver=solver, cg_steps=steps, stacked=stacked,
                                        gram_matrix=np.ascontiguousarray(G))
            loss = lam * _sqnorm(E)
            GE = als.gram(E, w, lam)
            for lang in langs:                                                       # eq. (5) P, A
                for r0, r1, B in tsrcs[lang].read_ranges(word_ranges[lang]):
                    B = _check_matrix(B, f"X[{lang!r}]ᵀ rows {r0}:{r1}", dtype, B.shape[1])
                    _, obj = als.als_half_step(B, E, Vs[lang][r0:r1], missing_weight=w,
                                               regularization=lam, solver=solver, cg_steps=steps,
                                               gram_matrix=GE, return_objective=True)
                    loss += obj
            return loss

        self._run_loop(int(self.max_iter), step, "b-WMF")
        return self

    def transform(self, X, language, dtype: Any = None) -> np.ndarray:
        """Sentence vectors of one language by eq. (2)/(6) with its word factor fixed (C-contiguous,
        in ``dtype`` when given).

        Parameters
        ----------
        X : sparse (n_sentences, n_words_language) or sequence of str
        language : a key of ``components_``

        Returns
        -------
        ndarray (n_sentences, n_components); empty rows give zeros.
        """
        self._check_fitted()
        if language not in self.components_:
            raise ValueError(f"unknown language {language!r}; the model has {self.languages_}")
        X = self._language_matrix(X, language, fit=False)
        return as_output(_solve_rows(X, np.ascontiguousarray(self.components_[language].T),
                                     self.missing_weight, self.alpha), dtype)

    def word_vectors(self, language: str) -> tuple[list[str] | None, np.ndarray]:
        """Word vectors of ``language``: the columns of its word factor, ``(words, vectors)``.

        ``words`` is the language's vectoriser vocabulary when it was given as texts, else ``None``.
        """
        return self._word_vectors(language)

    def _get_state(self):
        self._check_fitted()
        params = self._base_params_state()
        params.update(loss_curve=[float(v) for v in self.loss_curve_], n_iter=int(self.n_iter_),
                      languages=list(self.languages_), vectorizers={})
        arrays: dict[str, Any] = {
            "components": {lang: np.ascontiguousarray(self.components_[lang])
                           for lang in self.languages_},
            "embedding": np.ascontiguousarray(self.embedding_)}
        params["vectorizers"], vec_arrays = vectorizers_state(self.vectorizers_)
        if vec_arrays:
            arrays["vectorizers"] = vec_arrays
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        params = dict(params)
        model = cls(**{k: v for k, v in params.items() if k in _PARAM_NAMES})
        dtype = _stored_dtype(model.dtype, arrays["embedding"])
        model.languages_ = list(params["languages"])
        model.components_ = {lang: np.asarray(arrays["components"][lang], dtype=dtype)
                             for lang in model.languages_}
        model.embedding_ = np.asarray(arrays["embedding"], dtype=dtype)
        model.loss_curve_ = list(params.get("loss_curve", []))
        model.n_iter_ = int(params.get("n_iter", len(model.loss_curve_)))
        model.vectorizers_ = vectorizers_from_state(params.get("vectorizers"), arrays.get("vectorizers"))
        return model


# --------------------------------------------------------------------------------------------
# x-WMF
# --------------------------------------------------------------------------------------------
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
    tokenizer, min_df, max_features, show_progress, callback :
        As in :class:`WMF`. ``alpha`` and ``missing_weight`` are also the λ and w_m of the
        per-language A-steps (eq. 7, C_2). When ``pivot_model`` is given, ``n_components``
        and ``dtype`` are taken from it.

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
    """

    def __init__(self, pivot_language: str = "en", pivot_model: WMF | None = None,
                 n_components: int = 100, alpha: float = 20.0, missing_weight: float = 0.01,
                 max_iter: int = 20, solver: str = "cg", cg_steps: int = 3,
                 dtype: Any = None, random_state: Any = None, tokenizer: Any = None,
                 min_df: int = 3, max_features: int | None = 200_000,
                 show_progress: bool | None = None,
                 callback: Callable[[Any, int, float], Any] | None = None):
        self.pivot_language = pivot_language
        self.pivot_model = pivot_model
        self._init_params(n_components, alpha, missing_weight, max_iter, solver, cg_steps,
                          dtype, random_state, tokenizer, min_df, max_features, show_progress,
                          callback)

    def fit(self, parallel: Mapping, X_pivot=None) -> "CrossWMF":
        """Fit the pivot model (unless given) and every other language's word factor.

        Parameters
        ----------
        parallel : mapping language -> (Xp, X_l)
            For each non-pivot language: ``Xp`` sparse (n_l, n_words_pivot) (or texts), the
            pivot side of its parallel corpus, and ``X_l`` sparse (n_l, n_words_l) (or
            texts), the same sentences in language l, row-aligned.
        X_pivot : sparse (n_sentences, n_words_pivot) or texts, optional
            Monolingual pivot corpus for step 1 (the paper's setting). If None and no
            ``pivot_model`` was given, the pivot is fitted on the pivot sides of all parallel
            corpora stacked (texts or matrices, not mixed).

        Returns
        -------
        self
        """
        langs = _check_languages(parallel, "parallel")
        if not langs:
            raise ValueError("parallel must contain at least one language")
        if self.pivot_language in langs:
            raise ValueError(f"parallel must not contain the pivot language {self.pivot_language!r}")
        for lang in langs:
            pair = parallel[lang]
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"parallel[{lang!r}] must be a pair (X_pivot_side, X_{lang})")
        if self.pivot_model is not None:
            if not isinstance(self.pivot_model, WMF):
                raise TypeError(f"pivot_model must be a fitted WMF, got {type(self.pivot_model).__name__}")
            self.pivot_model._check_fitted()
            pivot = self.pivot_model
            self.n_components = pivot.n_components
            self.dtype = np.dtype(pivot.components_.dtype)
            self._validate_params()
            self.loss_curve_ = []
            self.n_iter_ = 0
        else:
            self._validate_params()
            pivot = WMF(**{name: getattr(self, name) for name in _PARAM_NAMES},
                        callback=(None if self.callback is None else
                                  lambda _m, it, loss: self.callback(self, it, loss)))
            if X_pivot is None:
                sides = [parallel[lang][0] for lang in langs]
                side_texts = [_texts_or_none(s, f"parallel[{lang!r}][0]") for s, lang in zip(sides, langs)]
                if all(t is not None for t in side_texts):
                    X_pivot = [t for s in side_texts for t in s]
                else:
                    X_pivot = sp.vstack([check_sparse_matrix(s, f"parallel[{lang!r}][0]")
                                         for s, lang in zip(sides, langs)], format="csr")
            pivot.fit(X_pivot)
            self.loss_curve_ = list(pivot.loss_curve_)
            self.n_iter_ = pivot.n_iter_
        self.pivot_model_ = pivot
        self.vectorizers_ = {}
        self.components_ = {self.pivot_language: pivot.components_}
        for lang in langs:
            Xp, Xl = parallel[lang]
            Q = pivot.transform(Xp)                                             # eq. (2)
            Xl = self._language_matrix(Xl, lang, fit=True, name=f"parallel[{lang!r}][1]")
            if Xl.shape[0] != Q.shape[0]:
                raise ValueError(f"parallel[{lang!r}]: the pivot side has {Q.shape[0]} rows but "
                                 f"the {lang!r} side has {Xl.shape[0]}; they must be row-aligned")
            self._check_k(Xl.shape[1], f"parallel[{lang!r}][1]")
            A = _solve_rows(Xl.T.tocsr(), Q, self.missing_weight, self.alpha)  # eq. (5) A-step
            self.components_[lang] = A.T
        self.languages_ = [self.pivot_language, *langs]
        return self

    def transform(self, X, language, dtype: Any = None) -> np.ndarray:
        """Sentence vectors of ``language`` by eq. (2) with its word factor fixed (exact;
        C-contiguous, in ``dtype`` when given).

        Parameters
        ----------
        X : sparse (n_sentences, n_words_language) or sequence of str
        language : the pivot or one of the fitted languages

        Returns
        -------
        ndarray (n_sentences, n_components); empty rows give zeros.
        """
        self._check_fitted()
        if language == self.pivot_language:
            return self.pivot_model_.transform(X, dtype=dtype)
        if language not in self.components_:
            raise ValueError(f"unknown language {language!r}; the model has {self.languages_}")
        X = self._language_matrix(X, language, fit=False, name="X")
        return as_output(_solve_rows(X, np.ascontiguousarray(self.components_[language].T),
                                     self.missing_weight, self.alpha), dtype)

    def word_vectors(self, language: str) -> tuple[list[str] | None, np.ndarray]:
        """Word vectors of ``language``: the columns of its word factor, ``(words, vectors)``.

        ``words`` is the language's vectoriser vocabulary when it was given as texts, else ``None``.
        """
        return self._word_vectors(language)

    def _get_state(self):
        self._check_fitted()
        params = self._base_params_state()
        pparams, parrays = self.pivot_model_._get_state()
        others = [lang for lang in self.languages_ if lang != self.pivot_language]
        params.update(pivot_language=self.pivot_language, languages=list(self.languages_),
                      loss_curve=[float(v) for v in self.loss_curve_], n_iter=int(self.n_iter_),
                      pivot=pparams, vectorizers={})
        arrays: dict[str, Any] = {
            "pivot": parrays,
            "components": {lang: np.ascontiguousarray(self.components_[lang]) for lang in others}}
        params["vectorizers"], vec_arrays = vectorizers_state(self.vectorizers_)
        if vec_arrays:
            arrays["vectorizers"] = vec_arrays
        return params, arrays

    @classmethod
    def _from_state(cls, params, arrays):
        params = dict(params)
        pivot = WMF._from_state(params["pivot"], arrays["pivot"])
        model = cls(pivot_language=params["pivot_language"],
                    **{k: v for k, v in params.items() if k in _PARAM_NAMES})
        dtype = _stored_dtype(model.dtype, pivot.components_)
        model.pivot_model_ = pivot
        model.languages_ = list(params["languages"])
        model.components_ = {model.pivot_language: pivot.components_}
        for lang in model.languages_[1:]:
            model.components_[lang] = np.asarray(arrays["components"][lang], dtype=dtype)
        model.loss_curve_ = list(params.get("loss_curve", []))
        model.n_iter_ = int(params.get("n_iter", len(model.loss_curve_)))
        model.vectorizers_ = vectorizers_from_state(params.get("vectorizers"), arrays.get("vectorizers"))
        return model
