"""The estimator contract every linxling model follows (scikit-learn's, plus the store).

Every model derives from :class:`LinxlingEstimator` (and ``sklearn.base.TransformerMixin`` when it
transforms):

- ``__init__`` only stores its parameters, under the same names (``get_params``/``set_params``/
  ``clone``/``repr`` come from :class:`sklearn.base.BaseEstimator`); validation happens once, in
  ``fit``;
- fitted attributes end in ``_``; before ``fit`` every method that needs them raises
  :class:`sklearn.exceptions.NotFittedError` (:meth:`_check_fitted`);
- ``transform(X, language=..., dtype=None)`` embeds documents (texts or features) of one
  language as a C-contiguous array (``dtype=np.float32`` for vector indexes, see
  :func:`as_output`); monolingual models accept and check ``language`` too;
- ``word_vectors(language) -> (words, vectors)``: ``words`` a list of str (or ``None`` when the
  model was fitted from matrices and columns are feature indices), ``vectors`` an
  ``(n_words, n_components)`` array;
- ``save(path)``, ``Class.load(path)`` (checks the file holds this class) and
  ``linxling.load(path)`` (any model); the store calls ``_get_state() -> (params, arrays)`` and
  the classmethod ``_from_state(params, arrays)`` of a class registered with
  :func:`linxling.io.register_model`;
- ``export(path, language, format=...)`` writes word vectors for other tools
  (:func:`linxling.io.export_vectors`).
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
import warnings
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any, Self

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import Interval, Options, StrOptions

from linxling._validation import n_distinct_rows
from linxling._warnings import find_stack_level
from linxling.xp import DEVICES, Device

__all__ = ["DEPRECATED", "DEVICE", "FLOAT_DTYPE", "LinxlingEstimator", "NONNEG_INT", "NONNEG_REAL", "NotFittedError",
           "POSITIVE_INT", "POSITIVE_REAL", "RANDOM_STATE", "as_output", "jsonable", "n_distinct_rows",
           "warn_few_examples", "warn_repeated_texts"]


def warn_few_examples(model: Any, n: int, what: str) -> None:
    """Warn when a model is about to train ``n_components`` dimensions on fewer than that many
    examples (``what``: "aligned sentences", "training sentences"): such vectors are mostly their
    random initialisation, and the fit would otherwise look fine."""
    d = int(model.n_components)
    if n < d:
        one = what[:-1] if n == 1 and what.endswith("s") else what      # "only 1 aligned sentence"
        warnings.warn(f"{type(model).__name__}: only {n} {one} for n_components={d}: more dimensions than "
                      "training examples give vectors that are mostly their random initialisation; give "
                      f"more {what} or lower n_components", UserWarning, stacklevel=find_stack_level())


def warn_repeated_texts(model: Any, r: int, X: Any, where: str, what: str) -> bool:
    """Warn when the rows of ``X`` (``what``, "documents" or "sentences", of ``where``) are fewer
    distinct texts than ``r`` components and than its columns (a smaller vocabulary is said
    elsewhere): one text repeated, whose rows all embed alike. True when it warned."""
    bound = min(int(r), int(X.shape[1]))
    k = n_distinct_rows(X, bound)
    if k is None or k >= bound:
        return False
    same = "are all one and the same text" if k == 1 else f"are only {k} distinct texts"
    name = model if isinstance(model, str) else type(model).__name__
    warnings.warn(f"{name}: the {X.shape[0]} {what} of {where} {same}, fewer than n_components={r}: its "
                  f"{what} embed in at most {k} direction{'' if k == 1 else 's'} and cannot be told apart; "
                  f"give varied {what} or lower n_components", UserWarning, stacklevel=find_stack_level())
    return True


#: :func:`warn_no_known_words`: the fewest texts of a transform, none with a word of the
#: language's vocabulary, that are taken for texts in another language (one or two texts without
#: a known word, e.g. short queries of rare words, are not)
NO_KNOWN_WORDS_MIN_TEXTS = 5


def warn_no_known_words(model: Any, n_texts: int, n_known: int, language: Any) -> None:
    """Warn when none of ``n_texts`` (at least :data:`NO_KNOWN_WORDS_MIN_TEXTS`) texts given to
    ``transform`` has a word of ``language``'s vocabulary (``n_known``: the known tokens over
    all texts): every vector is zero, most likely texts in another language than ``language``."""
    if n_known == 0 and n_texts >= NO_KNOWN_WORDS_MIN_TEXTS:
        vocab, lang = ((f"the {language!r} vocabulary", repr(language)) if language is not None else
                       ("the model's vocabulary", "the language the model was fitted on"))
        warnings.warn(f"{type(model).__name__}.transform: none of the {n_texts} texts has a word of {vocab}, "
                      f"so every vector is zero; are the texts in {lang}?", UserWarning,
                      stacklevel=find_stack_level())


#: the default of a renamed parameter's old name in ``__init__``: "not given" (scikit-learn's
#: convention for a parameter kept one release under its old name)
DEPRECATED = "deprecated"


# ---------------------------------------------------------------- entries of the parameter tables
#: a count: an int >= 1 (a bool is refused, see LinxlingEstimator._validate_declared_params)
POSITIVE_INT = Interval(Integral, 1, None, closed="left")
#: an int >= 0
NONNEG_INT = Interval(Integral, 0, None, closed="left")
#: a finite number > 0 (a rate, a ridge term)
POSITIVE_REAL = Interval(Real, 0, np.inf, closed="neither")
#: a finite number >= 0 (a weight, a tolerance)
NONNEG_REAL = Interval(Real, 0, np.inf, closed="left")


class _FloatDtype(Options):
    """float32 or float64 in any spelling NumPy reads as one: ``"float32"``, ``np.float32``,
    ``np.dtype("float64")``, ``"f4"``, ``float`` (``None`` is not one: a table that takes it says so)."""

    def __init__(self) -> None:
        super().__init__(object, {np.float32, np.float64})

    def is_satisfied_by(self, val: Any) -> bool:
        if val is None or isinstance(val, (bool, np.bool_)):
            return False
        try:
            return np.dtype(val) in (np.dtype(np.float32), np.dtype(np.float64))
        except (TypeError, ValueError):
            return False

    def __str__(self) -> str:
        return "float32 or float64 (a str, a NumPy type or dtype)"


#: a float dtype parameter: float32 or float64, as a str, NumPy type or dtype
FLOAT_DTYPE = _FloatDtype()
#: ``random_state``: an int seed (0 or more: NumPy's ``default_rng`` takes no negative one), a
#: NumPy Generator or None (fresh entropy); a legacy ``RandomState`` is refused
RANDOM_STATE: list[Any] = [Interval(Integral, 0, None, closed="left"), np.random.Generator, None]
#: ``device``: None (follow the data), "cpu", "cuda" or a :class:`linxling.xp.Device`
DEVICE: list[Any] = [StrOptions(set(DEVICES)), Device, None]


def as_output(Z: Any, dtype: Any = None) -> np.ndarray:
    """An embedding as ``transform`` returns it: a NumPy array, C-contiguous; in ``dtype`` when
    given (``np.float32`` for FAISS and most vector indexes: then no copy is needed there).

    ``dtype`` must be a float dtype (float32 or float64); ``None`` keeps the model's dtype.
    """
    Z = np.asarray(Z)
    if dtype is None:
        return np.ascontiguousarray(Z)
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):                 # NumPy's "data type 'x' not understood" named nothing
        raise ValueError(f"dtype must be float32 or float64 (or None for the model's dtype), got "
                         f"{dtype!r}") from None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64 (or None for the model's dtype), got {dt}")
    return np.ascontiguousarray(Z, dtype=dt)


def jsonable(obj: Any) -> Any:
    """A record of a fit (``fit_info_``, ``convergence_``) as JSON keeps it in a model file:
    NumPy scalars and arrays as Python numbers and lists, mapping keys as str (recursively)."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _encode_param(value: Any) -> Any:
    """A parameter value as JSON that :func:`_decode_param` turns back into an equal value;
    TypeError for what cannot be (objects, callables, random generators)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, np.bool_):
        return value.item() if isinstance(value, np.generic) else value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return {"__numpy_type__": np.dtype(value).name}
    if isinstance(value, np.dtype):
        return {"__numpy_dtype__": value.name}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode_param(v) for v in value]}
    if isinstance(value, list):
        return [_encode_param(v) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: _encode_param(v) for k, v in value.items()}}
    raise TypeError(f"cannot store a {type(value).__name__} parameter")


def _decode_param(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode_param(v) for v in value]
    if isinstance(value, dict):
        if "__numpy_type__" in value:
            return np.dtype(value["__numpy_type__"]).type
        if "__numpy_dtype__" in value:
            return np.dtype(value["__numpy_dtype__"])
        if "__tuple__" in value:
            return tuple(_decode_param(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {k: _decode_param(v) for k, v in value["__dict__"].items()}
    return value


def _atomic_fit(fit: Any) -> Any:
    """``fit`` made atomic: if it raises (bad input, a failed solve, Ctrl-C) the model is left
    exactly as it was before the call, fitted or not, instead of half-refitted (new vocabulary,
    old factors). The attributes are snapshotted (a shallow copy: a fit assigns new arrays, it
    does not write into the old ones) and put back. It also says, once per model class and
    machine, that the first fit compiles numba kernels (:func:`_note_compiling`)."""
    @functools.wraps(fit)
    def atomic(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.__dict__.get("_in_fit"):                     # a fit calling another (Cr5.fit -> fit_matrices)
            return fit(self, *args, **kwargs)
        self._check_renamed_params()
        self._validate_declared_params()
        before = dict(self.__dict__)
        self._in_fit = True
        # the compile notice: once per model class and machine, for the outermost fit that
        # compiles (CrossWMF's inner WMF is part of CrossWMF's; SingleBlock's is its model's)
        own = getattr(type(self), "_compiles", True)
        if own and not _FITTING:
            _note_compiling(type(self))
        if own:
            _FITTING.append(type(self))
        try:
            out = fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise
        finally:
            if own:
                _FITTING.pop()
        self.__dict__.pop("_in_fit", None)
        if own:
            _mark_compiled(type(self))
        return out
    atomic._linxling_atomic = True   # type: ignore[attr-defined]
    return atomic


def _compile_marker(cls: type) -> str | None:
    """A file beside numba's cache of linxling's kernels that says this model's kernels were
    compiled here (numba keeps them across processes); None when that folder is unknown."""
    try:
        import numba
    except ImportError:                                    # pragma: no cover - numba is a dependency
        return None
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels", "__pycache__")
    return os.path.join(base, f"linxling-compiled-{cls.__name__}-numba{numba.__version__}")


_NOTED: set = set()
#: the model classes whose fit is running in this thread of control, outermost first
_FITTING: list = []


def _note_compiling(cls: type) -> None:
    """Before the first fit of ``cls`` on this machine, say once on stderr that numba compiles
    its kernels now and not again; ``linxling warmup`` does it ahead for every model. The global
    switch of the progress bars (:func:`linxling.set_show_progress`, ``LINXLING_NO_PROGRESS``)
    silences it; a model's own ``show_progress=False`` does not (it concerns that fit's bars,
    and the note comes once per machine)."""
    from linxling._progress import _STATE
    marker = _compile_marker(cls)
    if cls in _NOTED or marker is None or os.path.exists(marker) or not _STATE["show"]:
        return
    _NOTED.add(cls)
    print(f"linxling: first {cls.__name__} fit on this machine: compiling its numba kernels (once, "
          "cached for later runs; `linxling warmup` compiles every model's ahead)", file=sys.stderr)


def _mark_compiled(cls: type) -> None:
    marker = _compile_marker(cls)
    if marker is None or os.path.exists(marker):
        return
    try:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        with open(marker, "w", encoding="utf-8") as fh:
            fh.write("numba kernels compiled and cached\n")
    except OSError:
        pass                                               # a read-only install: nothing to remember


class LinxlingEstimator(TransformerMixin, BaseEstimator):
    """Base class of linxling's models: scikit-learn's ``BaseEstimator`` and ``TransformerMixin``
    plus the model store.

    ``get_feature_names_out`` names the embedding's columns (``cr50``, ``cr51``, ...), so
    ``set_output(transform="pandas")`` returns data frames, as any scikit-learn transformer.
    Subclasses name the attribute that marks a fitted model in ``_fitted_attr`` (default
    ``"components_"``).
    """

    _fitted_attr = "components_"

    #: renamed parameters, old name -> new name (one vocabulary across the models: ``n_epochs``,
    #: ``min_df``). The old name stays in ``__init__`` with the default :data:`DEPRECATED` for one
    #: release: ``fit`` warns (FutureWarning) and uses its value, giving both is an error, and a
    #: model saved under the old name loads under the new one.
    _renamed_params: dict[str, str] = {}
    #: renamed fitted attributes, old name -> new name (e.g. ``loss_history_`` -> ``loss_curve_``):
    #: the old name still reads, with a FutureWarning
    _renamed_attrs: dict[str, str] = {}
    #: parameters added after models of this class were saved or pickled, name -> the value that
    #: gives those models' behaviour (``sublinear_tf``: False, the raw counts they were fitted
    #: with). A model unpickled from before has no such attribute and reads this value (so that
    #: ``get_params``, ``repr`` and ``clone`` work on it); a file from before loads with it
    #: (:meth:`_from_params_state`)
    _added_params: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        added = type(self)._added_params
        if name in added:
            return added[name]
        new = type(self)._renamed_attrs.get(name)
        if new is not None and new in self.__dict__:
            warnings.warn(f"{type(self).__name__}.{name} is renamed {new}; the old name goes in the next "
                          "release", FutureWarning, stacklevel=find_stack_level())
            return self.__dict__[new]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    #: the declarative parameter table (scikit-learn's ``_parameter_constraints`` style, with
    #: ``sklearn.utils._param_validation``'s Interval, StrOptions, Options, "boolean", callable,
    #: None, types); :meth:`_validate_declared_params` checks it at the start of every ``fit``.
    #: Checks that involve two parameters stay in the model's own code.
    _parameter_constraints: dict[str, list[Any]] = {}

    def _validate_declared_params(self) -> None:
        """Check the parameters against :attr:`_parameter_constraints` (the value ``fit`` uses:
        a renamed parameter's old name counts). Raises scikit-learn's ``InvalidParameterError``
        (a ValueError and a TypeError) naming the parameter, the allowed values and the value."""
        table = type(self)._parameter_constraints
        if not table:
            return
        from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints
        values = {k: self._param(k) for k in table}
        validate_parameter_constraints(table, values, caller_name=type(self).__name__)
        # scikit-learn lets a bool through an Interval of integers or reals (bool is an int);
        # linxling's models never took True for a count or a rate: only where "boolean" is declared
        for k, v in values.items():
            if isinstance(v, (bool, np.bool_)) and not any(c == "boolean" or c is bool for c in table[k]):
                raise InvalidParameterError(f"The {k!r} parameter of {type(self).__name__} must be a number, "
                                            f"not a bool. Got {v!r} instead.")
        self._check_params()

    def _check_params(self) -> None:
        """The checks a declarative table cannot express (two parameters together, a rule of
        one model), run by :meth:`_validate_declared_params` after the table; none by default."""

    @classmethod
    def _new_param_default(cls, new: str) -> Any:
        return inspect.signature(cls.__init__).parameters[new].default

    def _check_renamed_params(self) -> None:
        """Warn for each renamed parameter given under its old name; an error when both names
        are given (the new one differs from its default)."""
        for old, new in type(self)._renamed_params.items():
            value = getattr(self, old, DEPRECATED)
            if isinstance(value, str) and value == DEPRECATED:
                continue
            if getattr(self, new) != self._new_param_default(new):
                raise ValueError(f"{type(self).__name__}: give {new} only ({old} is its old name), got "
                                 f"{old}={value!r} and {new}={getattr(self, new)!r}")
            warnings.warn(f"{type(self).__name__}({old}=...) is renamed {new}; {old} goes in the next "
                          f"release: pass {new}={value!r}", FutureWarning, stacklevel=find_stack_level())

    def _param(self, name: str) -> Any:
        """The value ``fit`` uses for parameter ``name``: its old name's, when that was given
        (:meth:`_check_renamed_params` has warned), else its own. The parameters themselves are
        never changed by ``fit``."""
        for old, new in type(self)._renamed_params.items():
            if new == name:
                value = getattr(self, old, DEPRECATED)
                if not (isinstance(value, str) and value == DEPRECATED):
                    return value
        return getattr(self, name)

    def _saved_params(self) -> dict[str, Any]:
        """The parameters a model file keeps: ``get_params(deep=False)`` under the current names
        (a value given under an old name is saved under the new one)."""
        params = self.get_params(deep=False)
        out = {k: v for k, v in params.items() if k not in type(self)._renamed_params}
        for new in type(self)._renamed_params.values():
            if new in out:
                out[new] = self._param(new)
        return out

    @classmethod
    def _init_kwargs(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """Constructor keyword arguments from saved parameters: the names ``__init__`` takes, a
        parameter saved under its old name (before the rename) passed under its new one."""
        names = set(inspect.signature(cls.__init__).parameters) - {"self"}
        out: dict[str, Any] = {}
        for k, v in params.items():
            if k in cls._renamed_params:
                if not (isinstance(v, str) and v == DEPRECATED) and cls._renamed_params[k] not in params:
                    out[cls._renamed_params[k]] = v
            elif k in names:
                out[k] = v
        return out

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        from linxling._threads import numba_serialised
        for name in ("fit", "fit_matrices"):
            if name in cls.__dict__ and not getattr(cls.__dict__[name], "_linxling_atomic", False):
                setattr(cls, name, _atomic_fit(cls.__dict__[name]))
        # the entry points that run numba kernels: one thread at a time where numba's threading
        # layer is not thread-safe (linxling._threads.numba_serial; a no-op under TBB or OpenMP)
        for name in ("fit", "fit_matrices", "transform", "transform_matrix", "word_vectors", "predict"):
            fn = cls.__dict__.get(name)
            if callable(fn) and not getattr(fn, "_linxling_serial", False):
                setattr(cls, name, numba_serialised(fn))

    def fit_transform(self, X: Any, y: Any = None, *args: Any, **fit_params: Any) -> Any:
        """``fit`` then ``transform`` of the same input, for models whose ``transform`` takes
        what ``fit`` takes (one language). A multilingual model embeds one language at a time:
        ``fit(...)``, then ``transform(texts, language)`` (or :meth:`for_language`).

        ``*args`` is there so that a call with ``fit``'s arguments (``Cr5().fit_transform(texts,
        languages, concepts)``) gets this explanation rather than Python's count of positional
        arguments."""
        name = type(self).__name__
        if self._multilingual_fit:
            raise TypeError(f"{name}.fit takes several languages and transform one: call "
                            f"fit(...), then transform(texts, language) or for_language(language)")
        if args:
            raise TypeError(f"{name}.fit_transform takes X and y (ignored), got {2 + len(args)} "
                            "positional arguments")
        return super().fit_transform(X, y, **fit_params)

    #: True where ``fit`` takes several languages (then ``fit_transform`` makes no sense)
    _multilingual_fit = True

    # ------------------------------------------------------------------ scikit-learn output
    @property
    def _n_features_out(self) -> int:
        """Columns of ``transform``'s output (for ``get_feature_names_out``)."""
        n = getattr(self, "n_components_", None)
        if isinstance(n, (int, np.integer)):
            return int(n)
        comps = getattr(self, "components_", None)
        if isinstance(comps, dict) and comps:
            comps = next(iter(comps.values()))
        if isinstance(comps, np.ndarray):
            return int(comps.shape[0])
        return int(self.n_components)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the embedding's columns: the class name in lower case and the column number
        (``cr50`` ... ``cr5{r-1}``), as scikit-learn names a decomposition's outputs."""
        self._check_fitted()
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self._n_features_out)], dtype=object)

    def for_language(self, language: str) -> Any:
        """A view of this fitted model that embeds texts of ``language`` only: a scikit-learn
        transformer (``fit`` does nothing, ``transform(texts)``), for a ``Pipeline`` after a
        multilingual fit. See :class:`linxling.compose.LanguageView`."""
        from linxling.compose import LanguageView
        self._check_fitted()
        return LanguageView(self, language)

    # ------------------------------------------------------------------ fitted state
    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, self._fitted_attr)

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"this {type(self).__name__} instance is not fitted yet: call fit "
                                 "before using it")

    # ------------------------------------------------------------------ store
    def save(self, path: str | os.PathLike, **kwargs: Any) -> None:
        """Save the fitted model to HDF5 (atomic: a failed save leaves an existing file intact).

        Keyword arguments go to :func:`linxling.io.save` (e.g. ``compression``).
        """
        from linxling import io
        self._check_fitted()
        io.save(self, path, **kwargs)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Self:
        """Load a model saved with :meth:`save`; the file must hold a ``cls`` (or a subclass).

        Raises
        ------
        linxling.io.ModelFormatError
            If the file is not a model file, is corrupt, or holds another kind of model.
        """
        from linxling import io
        info = io.read_info(path)
        registered = io.registered_models().get(info["model"])
        if registered is None:        # a class not imported yet (a search index): register them all
            import importlib
            importlib.import_module("linxling.search")
            registered = io.registered_models().get(info["model"])
        if registered is None or not issubclass(registered, cls):
            if registered is not None and not issubclass(registered, LinxlingEstimator):
                # not an estimator (a search index): its registry name is no class a user can call
                public = f"{registered.__module__}.{registered.__qualname__}"
                raise io.ModelFormatError(f"{os.fspath(path)} holds a {public}, not a {cls.__name__} model: "
                                          f"load it with linxling.load(path) or {public}.load(path)")
            raise io.ModelFormatError(f"{os.fspath(path)} holds a {info['model']} model, not a "
                                      f"{cls.__name__}: load it with linxling.load(path) or "
                                      f"{info['model']}.load(path)")
        return io.load(path)

    # ------------------------------------------------------------------ parameters in the store
    def _params_state(self) -> dict[str, Any]:
        """The constructor's parameters as every model's ``_get_state`` saves them:
        ``get_params(deep=False)`` under the current names (:meth:`_saved_params`) as JSON, each
        value tagged so that it comes back as it was given (a NumPy dtype or scalar type, a tuple).
        What JSON cannot hold is left out and gets its default on load (a callable; an estimator
        parameter, which the model's ``_from_state`` restores from its fitted state); a NumPy
        random generator is saved as None, with a warning, since the loaded model could not
        repeat the fit. :meth:`_from_params_state` reads it back."""
        out: dict[str, Any] = {}
        for name, value in self._saved_params().items():
            try:
                out[name] = _encode_param(value)
            except TypeError:
                if isinstance(value, (np.random.Generator, np.random.RandomState)):
                    warnings.warn(f"{name} is a {type(value).__name__}, which a saved model cannot "
                                  f"keep: the loaded model has {name}=None (pass an int to save a "
                                  "reproducible model)", UserWarning, stacklevel=find_stack_level())
                    out[name] = None
        return out

    @classmethod
    def _from_params_state(cls, params: Mapping[str, Any], **given: Any) -> Self:
        """An unfitted model with the parameters a file saved: those of :meth:`_params_state`, or
        the plain values (and old parameter names) of older files; the other keys of ``params``
        (the fitted state) are ignored, and a parameter the file lacks gets its default.
        ``given``: parameters a file cannot hold (an estimator), rebuilt by the caller."""
        saved = {k: _decode_param(v) for k, v in cls._init_kwargs(params).items()}
        # a parameter added since the file was written: the value of the model it holds
        saved.update({k: v for k, v in cls._added_params.items() if k not in params and k not in given})
        return cls(**{**saved, **given})

    def _restore_init_params(self, state: dict) -> None:
        """Set the parameters that earlier files kept beside the model's state (the store's
        ``init_params``, in :meth:`_params_state`'s encoding, before each model saved them
        itself); unknown names are ignored."""
        decoded = {k: _decode_param(v) for k, v in state.items()}
        self.set_params(**type(self)._init_kwargs(decoded))

    # ------------------------------------------------------------------ vectors out
    def export(self, path: str | os.PathLike, language: str | None = None, format: str = "word2vec",
               **kwargs: Any) -> list[str]:
        """Write the word vectors of ``language`` for other tools.

        ``format`` is one of :data:`linxling.io.EXPORT_FORMATS` (word2vec text and binary, which
        gensim's ``KeyedVectors.load_word2vec_format`` reads; ``.npy`` + vocabulary; a FAISS-ready
        float32, C-contiguous, L2-normalised matrix). See :func:`linxling.io.export_vectors`.
        """
        from linxling.io import export_vectors
        words, vectors = self.word_vectors(language)
        return export_vectors(path, vectors, words, format=format, **kwargs)
