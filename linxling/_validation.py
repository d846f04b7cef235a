"""Input checks shared by every public entry point. Errors name the argument and the problem."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from linxling._backend import get_namespace

FLOAT_DTYPES = (np.float32, np.float64)


def check_float_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """Return ``np.dtype(dtype)`` if it is float32/float64, else raise TypeError."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"{name} must be float32 or float64, got {dtype!r}") from exc
    if dt not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float32 or float64, got {dt}")
    return dt


def check_sparse_matrix(X: Any, name: str = "X", *, dtype: Any = None, nonnegative: bool = False,
                        allow_empty: bool = False) -> sp.csr_matrix:
    """Validate a 2-D matrix and return it as CSR with a float dtype (CuPy sparse kept on device).

    Dense 2-D arrays are accepted and converted. Integer/bool data is converted to float64
    (float32 stays float32, never upcast). Raises on NaN/inf, negative values when
    ``nonnegative``, wrong number of dimensions, or zero rows/columns unless ``allow_empty``.
    """
    return check_sparse_matrix_max(X, name, dtype=dtype, nonnegative=nonnegative, allow_empty=allow_empty)[0]


def check_sparse_matrix_max(X: Any, name: str = "X", *, dtype: Any = None, nonnegative: bool = False,
                            allow_empty: bool = False, canonical: bool = False) -> tuple[Any, float | None]:
    """:func:`check_sparse_matrix`, and the largest absolute stored value of the result when the
    input's values were floats (``None`` otherwise), for :func:`check_value_range`'s ``max_abs``.

    A host matrix's values are checked in one pass without temporaries
    (:func:`linxling.kernels.spmm.value_stats`). With ``canonical=True`` the result is also in
    canonical format (column indices sorted within each row, duplicates summed: SciPy's
    ``sum_duplicates``, which works in place on the input when no copy was made); a canonical
    host matrix converted to ``dtype`` then shares the input's index arrays (only its values are
    copied), which is safe because nothing reorders the indices of a canonical matrix."""
    if type(X).__name__ == "ChunkedCSR" and type(X).__module__.startswith("linxling.io"):
        raise TypeError(f"{name} is a ChunkedCSR (a corpus on disk), which only WMF.fit, BilingualWMF.fit "
                        "and Cr5.fit_matrices stream; for this one read it into memory with .to_csr()")
    if type(X).__module__.startswith("dask.array") and sp.issparse(getattr(X, "_meta", None)):
        # np.asarray of its chunks made an object array: "does not convert to numbers"
        raise TypeError(f"{name} is a dask array of scipy.sparse chunks, which only the fits on a Dask "
                        "cluster take (WMF.fit, BilingualWMF.fit, Cr5.fit_matrices); here give it in "
                        f"memory ({name}.compute()), or one row chunk at a time")
    ns = get_namespace(X)
    in_dtype = getattr(X, "dtype", None)
    if in_dtype is not None and np.dtype(in_dtype) == np.float16:
        raise TypeError(f"{name} has dtype float16, which linxling does not support: give float32 or "
                        "float64 (integer and bool input is converted to float64)")
    if ns.name == "cupy":  # pragma: no cover - GPU only
        X = ns.sparse.csr_matrix(X)
    elif sp.issparse(X):
        check_sparse_structure(X, name)     # before SciPy or a kernel follows its indices
        X = sp.csr_matrix(X)
    else:
        arr = np.asarray(X)
        if arr.dtype == object:             # numbers held as Python objects are converted
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{name} must be a numeric sparse or dense 2-D matrix, got an object "
                                f"array that does not convert to numbers ({exc})") from None
        if arr.dtype.kind not in "fiubc":  # str, bytes, dates: SciPy's error named no argument
            what = " (texts? a matrix is expected here)" if arr.dtype.kind in "USOT" else ""
            raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}{what}")
        if arr.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_rows, n_cols), got {arr.ndim}-D with shape {arr.shape}: "
                             "Reshape your data, e.g. X[None, :] for one row")
        if arr.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: {name} has dtype {arr.dtype}")
        X = sp.csr_matrix(arr)
    if X.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} has dtype {X.dtype}")
    if X.dtype.kind not in "fiub":
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
    xp = ns.xp
    on_host = ns.name != "cupy"
    big = None
    n_neg = None
    if X.data.size and X.dtype.kind == "f":
        if not on_host:  # pragma: no cover - GPU only
            bad = 0 if bool(xp.all(xp.isfinite(X.data))) else int(xp.sum(~xp.isfinite(X.data)))
        else:
            from linxling.kernels.spmm import value_stats
            big, bad, n_neg = value_stats(X.data)
        if bad:
            raise ValueError(f"{name} contains {bad} non-finite value(s) (NaN or inf)")
    is_canonical = False
    if canonical and on_host:
        from linxling.kernels.spmm import csr_has_canonical_format
        is_canonical = csr_has_canonical_format(X)
    if dtype is not None:
        target = check_float_dtype(dtype)
        if X.data.size and X.dtype != target and X.dtype.kind == "f":
            if big is None:
                big = float(xp.max(xp.abs(X.data)))
            if big > float(np.finfo(target).max):
                raise ValueError(f"{name} has values up to {big:.3g}, which do not fit in {target} "
                                 f"(largest {np.finfo(target).max:.3g}); use dtype=float64 or rescale it")
        if is_canonical and X.dtype != target:
            X = sp.csr_matrix((X.data.astype(target), X.indices, X.indptr), shape=X.shape, copy=False)
            X.has_canonical_format = True
        else:
            X = X.astype(target, copy=False)
    elif X.dtype not in FLOAT_DTYPES:
        X = X.astype(np.float64)
    if canonical and not is_canonical:
        X.sum_duplicates()                 # duplicates summed: the largest value may change
        big = None
        n_neg = None
    if big is not None:
        big = float(X.data.dtype.type(big))          # the value as stored in the result
    if not allow_empty and X.shape[0] == 0:
        raise ValueError(f"{name} is empty: 0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
    if not allow_empty and X.shape[1] == 0:
        raise ValueError(f"{name} is empty: 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    data = X.data
    if nonnegative and data.size:
        if n_neg is None:
            n_neg = int(xp.sum(data < 0))
        if n_neg:
            raise ValueError(f"Negative values in data passed to {name}: {n_neg} negative "
                             "value(s); it must be non-negative")
    return X, big


def check_sparse_structure(X: Any, name: str = "X") -> None:
    """Refuse a SciPy sparse matrix whose index arrays do not describe its shape: a row pointer
    that is not ``n_rows + 1`` long, does not start at 0 or decreases, or a row or column index
    outside the shape. SciPy checks them when a matrix is built from arrays, not when they are
    edited afterwards (``X.indices[0] = 100``) or the arrays are shared; such a matrix made
    SciPy's conversions and linxling's kernels read and write out of bounds (a segfault, or
    glibc's "corrupted size vs. prev_size"). O(nnz), no temporary of that size."""
    def bad(problem: str) -> ValueError:
        return ValueError(f"{name} is not a valid {X.format.upper()} matrix of shape {X.shape}: {problem} "
                          "(were its index arrays edited after it was built?)")

    def in_range(idx: np.ndarray, n: int, what: str) -> None:
        if idx.size:
            lo, hi = int(idx.min()), int(idx.max())
            if lo < 0 or hi >= n:
                raise bad(f"{what} index {lo if lo < 0 else hi} outside [0, {n})")

    fmt = getattr(X, "format", None)
    if fmt in ("csr", "csc", "bsr"):
        major, minor = X.shape if fmt != "csc" else X.shape[::-1]
        if fmt == "bsr":
            r, c = X.blocksize
            major, minor = major // r, minor // c
        indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
        if indptr.ndim != 1 or indptr.size != major + 1:
            raise bad(f"indptr has {indptr.size} entries, expected {major + 1}")
        if indptr[0] != 0:
            raise bad(f"indptr starts at {int(indptr[0])}, not 0")
        if indices.ndim != 1 or indices.size != X.data.shape[0]:
            raise bad(f"indices has {indices.size} entries but data {X.data.shape[0]}")
        if int(indptr[-1]) > indices.size:
            raise bad(f"indptr ends at {int(indptr[-1])}, beyond the {indices.size} stored entries")
        if major and np.any(indptr[1:] < indptr[:-1]):
            raise bad("indptr decreases")
        in_range(indices[:int(indptr[-1])], minor, "row" if fmt == "csc" else "column")
    elif fmt == "coo":
        row, col = np.asarray(X.coords[0]), np.asarray(X.coords[1])
        if row.size != X.data.size or col.size != X.data.size:
            raise bad(f"row, col and data have {row.size}, {col.size} and {X.data.size} entries")
        in_range(row, X.shape[0], "row")
        in_range(col, X.shape[1], "column")


def check_value_range(X: Any, name: str, what: str, *, allow_zero: bool = False,
                      max_abs: float | None = None) -> None:
    """Refuse a matrix whose products (Gram entries, squared residuals) would overflow or underflow.

    ``X`` is a validated CSR matrix. ``what`` says what is computed from it, for the message.
    Sums of ``n`` products of entries of size ``m`` reach ``n m²``: that must stay within the
    dtype's range, and ``m²`` must not underflow to zero. An all-zero matrix has nothing to fit
    (allowed with ``allow_zero``, e.g. for documents to transform). ``max_abs``: ``X``'s largest
    absolute value when already known (:func:`check_sparse_matrix_max`), else computed here.
    """
    data = X.data
    if max_abs is not None:
        big = float(max_abs) if data.size else 0.0
    else:
        xp = get_namespace(X).xp
        big = float(xp.max(xp.abs(data))) if data.size else 0.0
    if big == 0.0:
        if allow_zero:
            return
        raise ValueError(f"{name} is all zero: there is nothing to fit")
    fi = np.finfo(X.dtype)
    n = max(X.shape)
    if 2 * np.log10(big) + np.log10(n) > np.log10(fi.max) - 1:
        raise ValueError(f"{name} has values up to {big:.3g}: {what} from values this large overflow "
                         f"{X.dtype} (sums of {n} squares reach {n}·{big:.1e}²); rescale the input, e.g. "
                         "divide it by its largest value or L2-normalise its rows")
    if 2 * np.log10(big) < np.log10(fi.tiny) + 1:
        raise ValueError(f"{name} has values no larger than {big:.3g}: {what} from values this small "
                         f"underflow to zero in {X.dtype}; rescale the input, e.g. divide it by its "
                         "largest value")


def check_positive(value: Any, name: str, *, strict: bool = True, integer: bool = False) -> Any:
    """Check a scalar hyper-parameter is finite and > 0 (>= 0 when ``strict=False``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if integer and int(value) != value:
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if (strict and value <= 0) or (not strict and value < 0):
        raise ValueError(f"{name} must be {'>' if strict else '>='} 0, got {value!r}")
    return int(value) if integer else value


def check_int(value: Any, name: str, *, low: int = 1, high: int | None = None, what: str = "") -> int:
    """Check an integer argument in ``[low, high]``: ``TypeError`` when it is not an integer
    (bools are not), ``ValueError`` when it is out of range (``what`` explains ``high``)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}{what}, got {value}")
    return value


def is_text_column(X: Any) -> bool:
    """True for a 1-D array-like of str (a NumPy str/object array, a pandas Series of str or
    object dtype): texts, although it has a ``shape`` and a ``dtype`` like a matrix."""
    if getattr(X, "ndim", None) != 1:
        return False
    kind = getattr(getattr(X, "dtype", None), "kind", None)    # pandas' StringDtype has kind "O"
    return isinstance(kind, str) and kind in ("O", "U", "S", "T")


def corpus_file_hint(text: Any) -> str:
    """For a single str given where texts or a matrix go: when it names an HDF5 file (by its
    suffix, or an existing file), the hint to open it as a corpus; else ``""``."""
    import os
    if not isinstance(text, str) or "\n" in text or len(text) > 4096:
        return ""
    if text.lower().endswith((".h5", ".hdf5")) or os.path.isfile(text):
        return (f"; {text!r} looks like a file: a corpus written by linxling.io.write_chunks is opened with "
                "linxling.io.ChunkedCSR(path), a text file read into a list of lines")
    return ""


def refuse_non_texts(texts: Any, name: str = "texts") -> None:
    """Refuse, naming ``name``, what would otherwise be iterated as texts by mistake: a single
    str or bytes (its characters), a mapping such as ``{language: texts}`` (its keys), a sparse
    or numeric matrix (its rows)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a list of str, not a single string{corpus_file_hint(texts)}")
    if isinstance(texts, Mapping) and not sp.issparse(texts):
        raise TypeError(f"{name} must be a list of str, got a {type(texts).__name__} (a mapping, whose "
                        "iteration gives its keys): pass one language's texts and name that language")
    if sp.issparse(texts) or (hasattr(texts, "shape") and hasattr(texts, "dtype")
                              and not is_text_column(texts) and getattr(texts, "size", 1) != 0):
        raise TypeError(f"{name} must be a list of str, got a {type(texts).__name__} of shape "
                        f"{getattr(texts, 'shape', '?')} and dtype {texts.dtype} (numbers, not texts)")


def check_texts(texts: Any, name: str = "texts", *, allow_empty: bool = True) -> list[str]:
    """``texts`` as a list of str: a single string, bytes, a mapping, a matrix or a non-iterable
    is refused (naming ``name``), as is any item that is not a str (naming its index); with
    ``allow_empty=False`` an empty list too."""
    refuse_non_texts(texts, name)
    if not hasattr(texts, "__iter__"):
        raise TypeError(f"{name} must be a list of str, got {type(texts).__name__}")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] is a {type(t).__name__}, not a str")
    if not out and not allow_empty:
        raise ValueError(f"{name} is empty")
    return out


def check_language_keys(mapping: Any, name: str) -> list[str]:
    """The keys of a mapping ``language -> data`` (a fit's input), each a non-empty str (a
    language code such as ``'en'``), in order; a TypeError naming ``name`` and the key otherwise.
    Every model stores its languages by name (``save`` writes them as such, ``transform`` looks
    them up), so a key such as ``1`` or ``('en', 'fr')`` is refused before the fit, not after it."""
    keys = list(mapping)
    for lang in keys:
        if not isinstance(lang, str) or not lang.strip():
            raise TypeError(f"{name} has a language key {lang!r} ({type(lang).__name__}): language keys "
                            "must be non-empty str, language codes such as 'en'")
    return keys


def check_language(language: Any, name: str = "language", *, known: Any = ()) -> None:
    """Refuse a ``language`` that is not a str (a language code) with a TypeError naming
    ``name``, before a model looks it up (a list gave ``unhashable type: 'list'``).

    ``None`` passes (each model says whether it needs a language, naming its languages), as does
    a key in ``known`` (a model's own languages, whatever they are).
    A sequence or a matrix most likely means that the texts and the language were swapped."""
    if language is None or isinstance(language, str):
        return
    try:
        if language in known:
            return
    except TypeError:                                # unhashable: not a key of anything
        pass
    hint = ""
    if isinstance(language, bytes):
        hint = " (decode it, e.g. language.decode())"
    elif isinstance(language, (list, tuple)) and len(language) == 1 and isinstance(language[0], str):
        hint = f" (one language: pass the str itself, {language[0]!r})"
    elif sp.issparse(language) or hasattr(language, "__iter__") or hasattr(language, "shape"):
        hint = (": it looks like texts or a matrix; were the texts and the language swapped? "
                "(texts first, e.g. transform(texts, language))")
    raise TypeError(f"{name} must be a str (a language code), got {type(language).__name__}{hint}")


def unknown_language(language: Any, known: Any, name: str = "language") -> ValueError:
    """The one error every model raises for a language it was not fitted on, or for none where a
    multilingual model needs one (``known``: its languages); the caller raises it."""
    langs = sorted(known)
    if language is None:
        return ValueError(f"{name} is required: the language of the texts, one of {langs}")
    near = [k for k in langs if isinstance(k, str) and isinstance(language, str) and k != language
            and k.strip().casefold() == language.strip().casefold()]
    hint = f" ({near[0]!r} differs from it in case or spaces only)" if near else ""
    return ValueError(f"unknown {name} {language!r}: the model was trained on {langs}{hint}")


def refuse_sparse(X: Any, name: str) -> None:
    """Refuse a SciPy/CuPy sparse matrix where dense vectors are expected (NumPy reads one as a
    0-d object array, which failed later with a message about shape ``()`` or a conversion)."""
    if sp.issparse(X) or type(X).__module__.startswith("cupyx.scipy.sparse"):
        raise TypeError(f"{name} must be a dense array (n, d), got a sparse {type(X).__name__}: "
                        "convert it with .toarray()")


def refuse_texts_as_vectors(X: Any, name: str, hint: str = "") -> None:
    """Refuse texts where embedding vectors go (a str, a list of str, an array of str), saying to
    embed them first; before, NumPy read them as an array of dtype ``<U233`` and the message was
    about that dtype."""
    first = X[0] if isinstance(X, (list, tuple)) and len(X) else None
    kind = getattr(getattr(X, "dtype", None), "kind", None)
    if isinstance(X, str) or isinstance(first, str) or kind in ("U", "S", "T"):
        raise TypeError(f"{name} holds texts, but embedding vectors (n, d) go here: embed them first, "
                        f"e.g. model.transform(texts, language){hint}")


def check_same_length(a: Any, b: Any, name_a: str, name_b: str) -> None:
    if len(a) != len(b):
        raise ValueError(f"{name_a} has {len(a)} entries but {name_b} has {len(b)}")


def check_random_state(seed: Any) -> np.random.Generator:
    """``None``/int (0 or more)/Generator -> ``np.random.Generator``."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (bool, np.bool_)):     # True was the seed 1 (the models' tables refuse it too)
        raise TypeError(f"random_state must be None, an int or a numpy Generator, got bool {seed!r}")
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(f"random_state must be None, an int of 0 or more or a numpy Generator, got {seed}")
    if seed is None or isinstance(seed, (int, np.integer)):
        return np.random.default_rng(seed)
    raise TypeError(f"random_state must be None, an int or a numpy Generator, got {type(seed).__name__}")


def tsv_fields(line: str, n_fields: int, where: str, columns: str, *, maxsplit: int = -1) -> list[str]:
    """``line`` split on tabs into exactly ``n_fields`` fields, or a ValueError naming ``where``.

    ``where`` locates the line for the message (``"file.tsv:12"``); ``columns`` names the expected
    fields (``"gold, sentence1, sentence2"``). With ``maxsplit`` the last field keeps its tabs.
    """
    fields = line.split("\t", maxsplit)
    if len(fields) != n_fields:
        raise ValueError(f"{where}: expected {n_fields} tab-separated fields ({columns}), got {len(fields)}")
    return fields


def n_distinct_rows(X: Any, at_most: int) -> int | None:
    """The number of distinct rows of ``X`` (sparse or dense, in memory) when it is below
    ``at_most``, else ``at_most`` (a first sample of ``4 * at_most`` rows decides most cases at
    once); None for a block not in memory (ChunkedCSR, dask, a device array). Rows are compared
    through two random projections, exact for rows stored alike (identical texts vectorised alike)."""
    if not (sp.issparse(X) or isinstance(X, np.ndarray)) or X.ndim != 2 or at_most < 1:
        return None
    v = np.random.default_rng(0).standard_normal((X.shape[1], 2))

    def count(rows: Any) -> int:
        return int(np.unique(np.asarray(rows @ v), axis=0).shape[0]) if rows.shape[0] else 0

    n = X.shape[0]
    sample = min(n, 4 * at_most)
    if count(X[:sample]) >= at_most:
        return at_most
    return min(count(X) if sample < n else count(X[:sample]), at_most)
