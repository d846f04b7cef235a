"""The single-block form of the concept models: one feature matrix ``X``, concept labels ``y``.

Cr5 and CL-LSI are fitted on several languages at once (one block of documents and features per
language). With one language they are classical estimators of scikit-learn's shape,
``fit(X, y)`` / ``transform(X)``:

- ``SingleBlock(Cr5(...))`` is reduced-rank ridge regression of the concept indicator matrix
  ``Y`` (one column per distinct label of ``y``) on the centred ``X`` (the paper's eq. 8 with
  one language), and ``transform(X) = X Φᵀ`` embeds rows with the rank-r map;
- ``SingleBlock(CLLSI(...))`` is latent semantic indexing of the concept-by-feature matrix
  ``YᵀX`` (truncated SVD), ``transform`` folds rows in.

It is the form :func:`sklearn.utils.estimator_checks.check_estimator` runs on (see
``docs/api.md``), and the one to use inside a scikit-learn ``Pipeline`` or grid search.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.validation import validate_data

from linxling._validation import check_language, unknown_language
from linxling.io import register_model, registered_models
from linxling.models._base import nested_state
from linxling.models._estimator import LinxlingEstimator

__all__ = ["SingleBlock"]


def _refuse_mixed_labels(y: Any) -> None:
    """Refuse labels ``y`` that mix text with numbers: scikit-learn's conversion to one array made
    them all text, so ``1`` and ``"1"`` became one concept without a word (Cr5.fit refuses such
    concept ids too)."""
    if y is None or (isinstance(y, np.ndarray) and y.dtype != object):
        return
    try:
        items = np.ravel(np.asarray(y, dtype=object)).tolist()
    except (TypeError, ValueError):
        return                                     # validate_data says what is wrong with y
    first: dict[bool, int] = {}
    for i, label in enumerate(items):
        j = first.setdefault(isinstance(label, (str, bytes)), i)
        if len(first) == 2:
            a, b = sorted((j, first[not isinstance(label, (str, bytes))]))
            raise TypeError(f"y mixes text and non-text labels: y[{a}] = {items[a]!r} and y[{b}] = {items[b]!r} "
                            "(converted to one array they would all be text, so 1 and '1' would be one "
                            "concept); give labels of one type")


@register_model("SingleBlock")
class SingleBlock(LinxlingEstimator):
    """A concept model (Cr5, CL-LSI) on one feature matrix, with scikit-learn's ``fit(X, y)``.

    Parameters
    ----------
    estimator : Cr5 or CLLSI (unfitted)
        The model and its parameters; it is cloned in :meth:`fit` (``estimator_`` is the fitted
        clone), so the same instance can be reused.
    language : str, default "x"
        The name of the one block inside ``estimator_`` (it appears in ``word_vectors`` and the
        store; :meth:`transform` accepts ``language=`` and checks it).

    Attributes
    ----------
    estimator_ : the fitted clone of ``estimator``
    classes_ : list
        The distinct concept labels seen in ``y``.
    n_features_in_ : int
    components_ : ndarray (n_components, n_features_in_)
        The embedding map of the block (Φ for Cr5, Vᵀ for CL-LSI).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from linxling.models import Cr5, SingleBlock
    >>> X = sp.random(60, 40, density=0.3, random_state=0, format="csr")
    >>> y = np.arange(60) % 12                       # 12 concepts, 5 documents each
    >>> rrr = SingleBlock(Cr5(n_components=4, random_state=0)).fit(X, y)
    >>> rrr.transform(X).shape
    (60, 4)
    """

    _compiles = False      # the wrapped model's fit compiles (and says so), not this wrapper's
    _multilingual_fit = False    # fit and transform take the same input

    _fitted_attr = "estimator_"

    def __init__(self, estimator: Any, language: str = "x") -> None:
        self.estimator = estimator
        self.language = language

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True          # y: the concept of each row
        return tags

    #: checked at the start of every fit (:meth:`LinxlingEstimator._validate_declared_params`)
    _parameter_constraints: dict[str, list[Any]] = {
        "estimator": [HasMethods(["fit_matrices", "transform_matrix"])],   # a concept model: Cr5, CLLSI
        "language": [str],
    }

    def _check_params(self) -> None:
        if not self.language:
            raise TypeError("language must be a non-empty str, got ''")

    def fit(self, X: Any, y: Any) -> SingleBlock:
        """Fit on a feature matrix ``X`` (n, p), sparse or dense, and concept labels ``y`` (n,)."""
        _refuse_mixed_labels(y)
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=(np.float64, np.float32),
                             ensure_min_samples=2)
        est = clone(self.estimator)
        est.fit_matrices({self.language: X}, {self.language: np.asarray(y).tolist()})
        self.estimator_ = est
        self.classes_ = list(est.classes_)
        return self

    @property
    def components_(self) -> np.ndarray:
        self._check_fitted()
        return self.estimator_.components_[self.language]

    def transform(self, X: Any, language: str | None = None, dtype: Any = None) -> np.ndarray:
        """Embed the rows of ``X``: a C-contiguous (n, n_components) array, in ``dtype`` when
        given. ``language``, when given, must be the model's ``language``."""
        self._check_fitted()
        check_language(language, known=(self.language,))
        if language is not None and language != self.language:
            raise unknown_language(language, [self.language])   # the words every model uses
        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32), reset=False)
        return self.estimator_.transform_matrix(X, self.language, dtype=dtype)

    def word_vectors(self, language: str | None = None) -> tuple[list[str], np.ndarray]:
        """``(None, vectors)``: one row per feature (column of ``X``), ``n_components`` columns."""
        return self.estimator_.word_vectors(self.language if language is None else language)

    # ------------------------------------------------------------------ store
    def _get_state(self):
        self._check_fitted()
        inner_params, inner_arrays = self.estimator_._get_state()
        name = next(n for n, cls in registered_models().items() if cls is type(self.estimator_))
        params = self._params_state()          # the estimator itself: from estimator_model and its state
        params.update(estimator_model=name, estimator_params=inner_params, n_features_in=int(self.n_features_in_))
        return params, {"estimator": inner_arrays}

    @classmethod
    def _from_state(cls, params, arrays):
        inner_cls = registered_models()[params["estimator_model"]]
        with nested_state("estimator"):      # its errors name arrays/estimator/...
            inner = inner_cls._from_state(params["estimator_params"], arrays["estimator"])
        model = cls._from_params_state(params, estimator=clone(inner))
        model.estimator_ = inner
        model.classes_ = list(inner.classes_)
        model.n_features_in_ = int(params["n_features_in"])
        return model
