"""What WMF, b-WMF and x-WMF share: hyper-parameters and their checks, text input, the ALS fit
over the driver of :mod:`linxling.models._als`, and the exact row solve of ``transform``.
The models and their objective: :mod:`linxling.models.wmf`.
"""
from __future__ import annotations

import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping
from numbers import Real
from typing import Any, Self

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from linxling._progress import progress
from linxling._threads import blas_single_thread, numba_one_thread
from linxling._validation import (
    check_float_dtype,
    check_language,
    check_language_keys,
    check_random_state,
    corpus_file_hint,
    is_text_column,
    unknown_language,
)
from linxling._warnings import find_stack_level
from linxling.models import _als
from linxling.models._als import check_matrix as _check_matrix
from linxling.models._base import (
    check_vectorizer_width,
    stored_float,
    vectorizers_from_state,
    vectorizers_state,
)
from linxling.models._estimator import (
    DEVICE,
    FLOAT_DTYPE,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    LinxlingEstimator,
    NotFittedError,
    as_output,
    jsonable,
    warn_few_examples,
    warn_no_known_words,
    warn_repeated_texts,
)

#: ``alpha="auto"``: λ = min(AUTO_ALPHA_MAX, n_sentences / AUTO_ALPHA_SENTENCES), the paper's 20
#: from 6,000 sentences on. Chosen on b-WMF, Bible en-es, held-out verse P@1 on 1,000 validation
#: verses carved from the training chapters, alpha in {0.3, 1, 3, 10, 20, 60} at 300 / 1,000 /
#: 3,000 / 10,000 / 28,000 training verses (benchmarks/README.md, "alpha and the corpus
#: size"): the best alpha grows with the corpus (0.3 / 0.3-1 / 20 / 20 / 20) and 20 collapses
#: the factors on 300 verses (P@1 0.12 against 0.52). The rule is within 0.04 of the best at
#: every size.
AUTO_ALPHA_MAX = 20.0
AUTO_ALPHA_SENTENCES = 300.0
#: The monolingual :class:`~linxling.WMF`'s ``alpha="auto"``: λ = min(WMF_AUTO_ALPHA_MAX,
#: n_sentences / WMF_AUTO_ALPHA_SENTENCES) = min(1, n_sentences / 3,000). Chosen on the paraphrase
#: task of the training verses (``python -m benchmarks.paraphrase``: the KJV text of the verses of
#: 150 validation chapters retrieving their Bible in Basic English text, P@1 of centred cosine;
#: benchmarks/README.md "The monolingual WMF's defaults on a paraphrase task of the training
#: verses"): the best λ there stays at 0.1-2 whatever the corpus (0.1 / 0.3 / 1 / 0.3-1 / 0.5-2 at
#: 300 / 1,000 / 3,000 / 10,000 / 23,329 verses fitted), and this rule is within 0.001 of the best
#: at every size, where the crosslingual min(20, n / 300) lost 0.010-0.024 (23,329 verses: 0.838
#: against 0.828, seed range 0.003-0.006). The crosslingual models, validated on verse retrieval
#: where λ 2 and 20 are level, keep theirs (x-WMF's own pivot WMF too).
WMF_AUTO_ALPHA_MAX = 1.0
WMF_AUTO_ALPHA_SENTENCES = 3000.0
#: mean cosine between training sentence vectors above which a fit warns of a collapse
COLLAPSE_COSINE = 0.75


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def _kernels():
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
                        f"{type(X).__name__}{corpus_file_hint(X) or '; wrap it in a list'}")
    if sp.issparse(X):
        return None
    if isinstance(X, Mapping):        # would be read as its keys: one "sentence" per language
        raise TypeError(f"{name} must be one language's texts (a sequence of str) or a matrix, got a "
                        f"{type(X).__name__} (a mapping, whose iteration gives its keys)")
    if isinstance(X, np.ndarray):
        if X.ndim == 1 and X.dtype.kind in "OUST":
            X = X.tolist()
        else:
            return None
    elif is_text_column(X):                                 # e.g. a pandas Series of str
        X = list(X)
    elif (hasattr(X, "shape") and hasattr(X, "dtype")) or hasattr(X, "__array__"):
        return None                                         # other array types: the matrix path
    try:
        items = list(X)
    except TypeError:
        raise TypeError(f"{name} must be a sparse matrix or an iterable of str, got {type(X).__name__}") from None
    if not items:
        raise ValueError(f"{name} is empty: no sentences to fit or transform")
    first = items[0]
    if isinstance(first, (list, tuple)) and first and all(isinstance(w, str) for w in first):
        raise TypeError(f"{name}[0] is a list of tokens; give each sentence as one str "
                        "(' '.join(tokens)), or a tokenizer to split str sentences")
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
              sublinear_tf=bool(est.sublinear_tf),
              dtype=np.float64 if est.dtype is None else check_float_dtype(est.dtype),
              show_progress=est.show_progress)
    if est.tokenizer is not None:
        kw["tokenizer"] = est.tokenizer
    return TfidfVectorizer(**kw)


def _mean_cosine(E: np.ndarray) -> float | None:
    """The mean cosine between two rows of ``E`` (pairs drawn with replacement), ``‖mean of the
    unit rows‖²`` over the nonzero rows; None with fewer than two of them or one column.

    One pass for the norms and one product for the mean, no copy of E: 0.41 -> 0.04 s in a fit
    at 200,000 x 100 float32 (cProfile, 2-core AMD EPYC, 2026-11-29), where the norms, the unit
    rows' copy and their mean had taken 7 % of a six-iteration fit."""
    sq = np.einsum("ij,ij->i", E, E, dtype=np.float64)
    keep = sq > 0
    n_keep = int(np.count_nonzero(keep))
    if E.shape[1] < 2 or n_keep < 2:
        return None
    inv = np.zeros(E.shape[0])
    inv[keep] = 1.0 / np.sqrt(sq[keep])
    mean_unit = (inv.astype(E.dtype) @ E).astype(np.float64) / n_keep   # a GEMV in E's dtype
    return float(mean_unit @ mean_unit)


class _WMFParams(LinxlingEstimator):
    """Hyper-parameters and checks shared by the three estimators (scikit-learn estimators)."""

    def _init_params(self, n_components, alpha, missing_weight, max_iter, solver, cg_steps,
                     dtype, random_state, tokenizer, min_df, max_features, show_progress,
                     callback, device=None, sublinear_tf=False):
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
        self.device = device
        self.sublinear_tf = sublinear_tf

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True          # sparse tf-idf matrices (or texts)
        tags.input_tags.positive_only = True   # the factorised matrix is non-negative
        return tags

    #: ``alpha="auto"`` = min(_auto_alpha_max, n_sentences / _auto_alpha_sentences)
    #: (:meth:`_effective_alpha`); the monolingual WMF's are its own (:data:`WMF_AUTO_ALPHA_MAX`)
    _auto_alpha_max: float = AUTO_ALPHA_MAX
    _auto_alpha_sentences: float = AUTO_ALPHA_SENTENCES

    #: checked at the start of every fit (:meth:`LinxlingEstimator._validate_declared_params`)
    #: added 2026-12-01: models saved or pickled before were fitted on raw counts
    _added_params: dict[str, Any] = {"sublinear_tf": False}

    _parameter_constraints: dict[str, list[Any]] = {
        "n_components": [POSITIVE_INT],
        "alpha": [POSITIVE_REAL, StrOptions({"auto"})],
        # w_m, the weight of the zeros relative to the nonzeros
        "missing_weight": [Interval(Real, 0, 1, closed="right")],
        "max_iter": [POSITIVE_INT],              # 0 would return random factors
        "solver": [StrOptions({"cg", "cholesky", "auto"})],
        "cg_steps": [POSITIVE_INT],
        "dtype": [FLOAT_DTYPE, None],
        "random_state": RANDOM_STATE,
        "tokenizer": [callable, None],
        "min_df": [POSITIVE_INT],
        "max_features": [POSITIVE_INT, None],
        "sublinear_tf": ["boolean"],
        "show_progress": ["boolean", None],
        "callback": [callable, None],
        "device": DEVICE,
    }

    # the record of a fit, as Cr5's: ``fit_info_`` (a dict); the names before it stay as aliases
    @property
    def memory_plan_(self) -> dict:
        """``fit_info_["memory_plan"]``, under its name before ``fit_info_`` (a streamed fit only)."""
        return self._fit_info_entry("memory_plan", "memory_plan_")

    @property
    def dask_info_(self) -> dict:
        """``fit_info_["dask"]``, under its name before ``fit_info_`` (a Dask fit only)."""
        return self._fit_info_entry("dask", "dask_info_")

    def _fit_info_entry(self, key: str, alias: str) -> dict:
        info = self.__dict__.get("fit_info_", {})
        if key not in info:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {alias!r} (fit_info_ has no "
                                 f"{key!r} entry: the model was not fitted "
                                 f"{'streamed from disk' if key == 'memory_plan' else 'on a Dask cluster'})")
        return info[key]

    def _effective_alpha(self, n_sentences: int) -> float:
        """λ for a fit on ``n_sentences``: ``alpha`` itself, or for ``alpha="auto"``
        ``min(_auto_alpha_max, n_sentences / _auto_alpha_sentences)``: ``min(20, n / 300)`` for
        the crosslingual models (:data:`AUTO_ALPHA_MAX`), ``min(1, n / 3000)`` for the
        monolingual WMF (:data:`WMF_AUTO_ALPHA_MAX`)."""
        if isinstance(self.alpha, str):
            return float(min(self._auto_alpha_max, n_sentences / self._auto_alpha_sentences))
        return float(self.alpha)

    def _check_collapse(self, E: np.ndarray, n: int) -> None:
        """Warn (naming alpha and the remedy) when the sentence vectors collapsed toward one
        direction: the mean cosine between two training sentences, ``‖mean of the unit rows‖²``,
        is above :data:`COLLAPSE_COSINE`. Measured on b-WMF, 300 Bible verse pairs: alpha 20
        gave 0.79 (held-out P@1 0.12), alpha 60 1.00; alpha 1 gave 0.11 (P@1 0.48); on 3,000
        pairs alpha 20 gave 0.14 and alpha 60 0.85 (P@1 0.22)."""
        cosine = _mean_cosine(E)
        if cosine is None:
            return
        if cosine > COLLAPSE_COSINE:
            import warnings
            auto = min(self._auto_alpha_max, n / self._auto_alpha_sentences)
            remedy = (f"lower alpha (alpha='auto' would use {auto:g})" if self.alpha_ > auto else
                      "lower alpha further, or give more (and more varied) sentences")
            warnings.warn(f"the sentence vectors collapsed toward one direction (mean cosine between two "
                          f"training sentences {cosine:.2f}): alpha={self.alpha_:g} is large for {n} "
                          f"sentences; {remedy}", UserWarning, stacklevel=find_stack_level())

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

    def _check_k(self, n_words: int, name: str, k: int | None = None) -> None:
        k = self.n_components if k is None else k
        if k > n_words:
            raise ValueError(f"n_components={k} is larger than the vocabulary of "
                             f"{name} ({n_words} words); use n_components <= {n_words}")

    def _check_fitted(self, attr: str = "components_"):
        if not hasattr(self, attr):
            raise NotFittedError(f"this {type(self).__name__} instance is not fitted yet: call fit first")

    def _transform_language(self, X, language, dtype: Any = None) -> np.ndarray:
        """One non-pivot language's sentence vectors: eq. (2)/(6) with its word factor fixed."""
        self._check_fitted()
        check_language(language, known=self.components_)
        if language not in self.components_:
            raise unknown_language(language, self.languages_)
        X = self._language_matrix(X, language, fit=False, name="X")
        return as_output(_solve_rows(X, np.ascontiguousarray(self.components_[language].T),
                                     self.missing_weight, self.alpha_, self._gram_cache()), dtype)

    def _gram_cache(self) -> dict:
        """This model's Grams for :func:`_solve_rows`, held outside the model (a transform leaves
        its ``__dict__`` as it was, as scikit-learn asks; nothing is saved or cloned with it)."""
        with _GRAM_LOCK:
            cache = _GRAM_CACHES.get(self)
            if cache is None:
                cache = _GRAM_CACHES[self] = {}
            return cache

    def word_vectors(self, language: str) -> tuple[list[str] | None, np.ndarray]:
        """Word vectors of ``language``: the columns of its word factor, ``(words, vectors)``.

        ``words`` is the language's vectoriser vocabulary when it was given as texts, else ``None``.
        """
        return self._word_vectors(language)

    def _word_vectors(self, language: str | None) -> tuple[list[str] | None, np.ndarray]:
        """(words, vectors) of one language: columns of its word factor, words from its vectoriser."""
        self._check_fitted()
        comps = self.components_ if isinstance(self.components_, np.ndarray) else None
        if comps is None:
            check_language(language, known=self.components_)
            if language not in self.components_:
                raise unknown_language(language, self.languages_)
            comps = self.components_[language]
            vec = self.vectorizers_.get(language)
            if vec is None and language == getattr(self, "pivot_language", None):
                vec = getattr(self.pivot_model_, "vectorizer_", None)
        else:
            vec = getattr(self, "vectorizer_", None)
        words = None if vec is None else list(vec.vocabulary_)
        return words, np.ascontiguousarray(comps.T)

    def _wmf_state(self) -> tuple[dict, dict]:
        """The state the three models save alike: the parameters, the λ used (``alpha_``), the
        loss curve and iteration count and, for b-WMF and x-WMF, the vectorisers of the languages
        fitted from texts. Each model adds its factors."""
        self._check_fitted()
        from linxling.text import Tokenizer
        vecs = [getattr(self, "vectorizer_", None), *getattr(self, "vectorizers_", {}).values()]
        if any(v is not None and type(v.tokenizer) is not Tokenizer for v in vecs):
            # the file would hold a vocabulary no loader can tokenise for (it refused to load)
            raise ValueError(f"this {type(self).__name__} was fitted from texts with a custom tokenizer, "
                             "which cannot be stored in a model file (the file could not be loaded); "
                             "keep the model with pickle or joblib (which store the tokenizer by name: a "
                             "function defined at a module's top level, not a lambda or a nested function), "
                             "or fit with tokenizer=None")
        if self.tokenizer is not None:
            warnings.warn("a callable tokenizer cannot be saved; the loaded model uses the "
                          "default tokenizer unless you set it again", UserWarning, stacklevel=find_stack_level())
        params = self._params_state()
        params.update(alpha_=float(self.alpha_), loss_curve=[float(v) for v in self.loss_curve_],
                      n_iter=int(self.n_iter_), fit_info=jsonable(getattr(self, "fit_info_", {})))
        arrays: dict[str, Any] = {}
        if self._multilingual_fit:                 # b-WMF, x-WMF: a vectoriser per language
            params["vectorizers"], vec_arrays = vectorizers_state(self.vectorizers_)
            if vec_arrays:
                arrays["vectorizers"] = vec_arrays
        return params, arrays

    @classmethod
    def _from_wmf_state(cls, params: Mapping, arrays: Mapping) -> Self:
        """A model with what :meth:`_wmf_state` saved (the factors are the model's own to
        restore)."""
        model = cls._from_params_state(params)
        if "alpha_" in params or not isinstance(model.alpha, str):   # files before "auto": alpha itself
            model.alpha_ = float(params.get("alpha_", model.alpha))
            if not (np.isfinite(model.alpha_) and model.alpha_ >= 0):
                raise ValueError(f"the file's regularisation alpha_ is {model.alpha_!r}, not a finite number >= 0")
        model.loss_curve_ = list(params.get("loss_curve", []))
        model.n_iter_ = int(params.get("n_iter", len(model.loss_curve_)))
        info = params.get("fit_info", {})           # files before fit_info_: none recorded
        if not isinstance(info, dict):
            raise ValueError(f"the file's fit_info is a {type(info).__name__}, not a dict")
        model.fit_info_ = dict(info)
        if cls._multilingual_fit:
            model.vectorizers_ = vectorizers_from_state(params.get("vectorizers"), arrays.get("vectorizers"))
        return model

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
                try:
                    X = vec.fit_transform(texts)
                except ValueError as exc:      # "empty vocabulary" / min_df: say which language
                    raise ValueError(f"{name} ({len(texts)} texts): {exc}") from None
                self.vectorizers_[language] = vec
            else:
                if language not in self.vectorizers_:
                    raise TypeError(f"{name} is a list of texts but language {language!r} was "
                                    "fitted from a matrix")
                X = self.vectorizers_[language].transform(texts)
                warn_no_known_words(self, X.shape[0], X.nnz, language)
        n_cols = None if fit else self.components_[language].shape[1]
        return _check_matrix(X, name, dtype, n_cols, type(self).__name__)

    def _fit_als(self, kind: str, X: Mapping, names: Mapping, init_components, init_names,
                 init_embedding, memory_budget, client, publish: Callable, desc: str) -> None:
        """ALS on the row-aligned languages of ``X`` (in order) wherever they are (``kind``, see
        :func:`linxling.models._als.data_kind`): one driver, :func:`linxling.models._als.run_als`.
        ``publish(V, offsets)`` sets the word factors from the row-stacked V before the first
        iteration (views: a callback sees them updated); ``embedding_`` is E."""
        dtype = self._fit_dtype(*X.values())
        k = int(self.n_components)
        on_device = self.device_ != "cpu"
        if on_device and kind != "memory":
            raise ValueError(f"device={self.device_!r} fits data in memory; {kind} data runs on the CPU "
                             "(device='cpu')")
        if on_device:
            from linxling.xp import device as make_device
            from linxling.xp.als import DeviceALS
            for name, M in zip(names.values(), X.values(), strict=True):
                self._check_k(M.shape[1], name)
            dev = make_device(self.device_)
            data = DeviceALS(dev, list(X.values()), dtype)
        else:
            data = _als.executor(kind, X, names, dtype, k, memory_budget, client, self._check_k)
        warn_few_examples(self, int(data.shape[0]), "sentences")
        repeated = False                  # one text repeated: said, not blamed on alpha by _check_collapse
        if data.shape[0] >= k:
            for key, M in X.items():
                repeated |= warn_repeated_texts(self, k, M, names[key], "sentences")
        t0 = time.perf_counter()
        # the record of this fit (nothing kept from an earlier one); a streamed fit adds its
        # memory plan, a Dask fit its traffic (updated by each iteration)
        source = {"chunked": "hdf5"}.get(kind, kind)          # Cr5's fit_info_["sources"] words
        self.fit_info_ = {"n_sentences": int(data.shape[0]), "device": str(self.device_),
                          "sources": {str(key): source for key in X}}
        rng = check_random_state(self.random_state)
        V, E = _als.init_factors(rng, data.widths, data.shape[0], k, dtype, init_components,
                                 init_embedding, init_names)
        self.alpha_ = self._effective_alpha(data.shape[0])
        if on_device:
            # the factors live on the device for the whole fit; the model's arrays are set from
            # them at the end (a callback sees the loss, not the factors, during a device fit)
            Vd, Ed = dev.put(V), dev.put(E)
            _als.run_als(self, data, Vd, Ed, desc)
            V[...], E[...] = dev.get(Vd), dev.get(Ed)
            self.embedding_ = E
            publish(V, data.offsets)
        else:
            self.embedding_ = E
            publish(V, data.offsets)
            host: Any = data                     # the chunked or Dask executor
            if kind == "chunked":
                self.fit_info_["memory_plan"] = host.memory_plan
            if kind == "dask":
                self.fit_info_["dask"] = host.info
            _als.run_als(self, data, V, E, desc)
        self.fit_info_["time_als"] = time.perf_counter() - t0
        if self.max_iter > 0 and not repeated:
            self._check_collapse(E, data.shape[0])

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
                bar.set_postfix(loss=f"{loss:.6g}", refresh=False)   # shown with its count, below
                if self.callback is not None:
                    self.callback(self, it, loss)
        bar.close()


#: Grams a model keeps for its transforms (one per word factor, so b-WMF's languages each have one)
_GRAM_CACHE_SIZE = 8
#: transforms of fewer rows than this run their kernels on the calling thread (numba_one_thread)
_FEW_ROWS = 16
_GRAM_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()    # model -> {key: Gram}
_GRAM_LOCK = threading.Lock()


def _solve_rows(X: sp.csr_matrix, V: np.ndarray, w_m: float, lam: float,
                cache: dict | None = None) -> np.ndarray:
    """Eq. (2) exactly for every row of X with word factors V (n_words, k).

    ``cache``: a model's dict of Grams ``w_m VᵀV + λI``, keyed on V's content
    (:func:`linxling.kernels.als.factor_sketch`, about 1 ms) and the two weights, so that a
    transform of a few sentences does not form the n_words x k Gram again (28 ms of a 35 ms
    one-sentence transform at 50,000 x 100 float64 before), and an edited V gets a new one."""
    als = _kernels()
    G = None
    # BLAS one thread, as in a fit: BLAS threads still spinning after a product or the Gram's
    # eigendecomposition held the cores from the numba kernel that follows (8-10 ms a call)
    # a few rows (a transform of a few sentences) are solved on the calling thread: a parallel
    # launch's barrier cost more than their solves (each row is solved alone: the same result)
    with blas_single_thread(), numba_one_thread(X.shape[0] < _FEW_ROWS):
        if cache is not None:
            key = (als.factor_sketch(V), float(w_m), float(lam))
            G = cache.get(key)
            if G is None:
                G = als.gram(V, w_m, lam)
                with _GRAM_LOCK:           # transforms from several threads (a search server)
                    while len(cache) >= _GRAM_CACHE_SIZE:
                        cache.pop(next(iter(cache)))
                    cache[key] = G
        out = np.zeros((X.shape[0], V.shape[1]), dtype=V.dtype)
        return als.als_half_step(X, V, out, missing_weight=w_m, regularization=lam,
                                 solver="cholesky", gram_matrix=G)


def _factor_layout(array: Any, dtype: Any) -> np.ndarray:
    """A stored (k, p) word factor in ``dtype``, as the transpose of a C-contiguous (p, k) array:
    the layout a fit leaves (``V.T``) and the one :func:`_solve_rows` takes (``components_.T``
    is then C-contiguous, not copied on every transform). One copy at load time."""
    return np.ascontiguousarray(np.asarray(array, dtype=dtype).T).T


def _stored_factor(value: Any, name: str, k: int | None = None, what: str = "") -> np.ndarray:
    """A stored (k, p) word factor at ``arrays/<name>``, checked: a finite 2-D float array, with
    ``k`` rows when given (``what`` says what fixes k), else a ValueError naming the dataset."""
    arr = stored_float(value, name, 2)
    if k is not None and arr.shape[0] != k:
        raise ValueError(f"arrays/{name} has shape {arr.shape}: {arr.shape[0]} components, but {what} has {k}")
    return arr


def _check_vectorizers(model: Any) -> None:
    """b-WMF's and x-WMF's vectorisers: each of a language with a word factor, with as many words
    as the factor has columns."""
    for lang, vec in model.vectorizers_.items():
        if lang not in model.components_ or lang == getattr(model, "pivot_language", None):
            raise ValueError(f"arrays/vectorizers/{lang} is the vectoriser of a language without a word "
                             f"factor in arrays/components (the model's languages are {model.languages_})")
        check_vectorizer_width(vec, model.components_[lang].shape[1], f"vectorizers/{lang}",
                               f"arrays/components/{lang}")


def _stored_dtype(dtype, array) -> np.dtype:
    """dtype of a loaded model's factors: the parameter when set, else the stored array's."""
    return check_float_dtype(dtype if dtype is not None else np.asarray(array).dtype)


def _check_languages(mapping, name: str) -> list:
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{name} must be a mapping language -> texts or matrix, got {type(mapping).__name__}")
    return check_language_keys(mapping, name)
