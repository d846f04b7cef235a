"""Streaming vocabulary building, document filtering and TF-IDF vectorisation.

Every function here makes exactly one pass over ``docs``, which may be any iterable of
``str`` (a list, a generator of a million documents, a file object, ...). Each document is
tokenized once into ``(term id, count)`` pairs appended to compact growing CSR buffers
(:class:`array.array`), so memory is ``O(nnz)`` (about 8 bytes per distinct term per
document plus the term dictionary) and no token lists are kept.
"""
from __future__ import annotations

import re
import warnings
from array import array
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, overload

import numpy as np
import scipy.sparse as sp

from linxling._progress import progress
from linxling._validation import check_float_dtype
from linxling._warnings import find_stack_level
from linxling.text._tokenize import Tokenizer, check_tokenizer

__all__ = ["Vocabulary", "build_vocabulary", "filter_documents", "TfidfVectorizer"]

_STATE_FORMAT = "linxling.text.TfidfVectorizer/1"
_INT32_MAX = np.iinfo(np.int32).max
_BLOCK_NNZ = 1 << 17  # stored entries per row block when weighting (bounds temporaries)


# ----------------------------------------------------------------------------- validation
def _check_docs(docs: Any, name: str = "docs") -> tuple[Any, int | None]:
    """Validate ``docs`` and return ``(iterator, len or None)``; calls ``iter`` exactly once."""
    if isinstance(docs, (str, bytes)):
        raise TypeError(f"{name} must be an iterable of str documents, got a single "
                        f"{type(docs).__name__}; wrap it in a list: [{name}]")
    if isinstance(docs, Mapping):       # e.g. {language: texts}: iterating it gave the keys as documents
        raise TypeError(f"{name} must be an iterable of str documents, got a {type(docs).__name__} (a mapping, "
                        "whose iteration gives its keys): pass one language's documents")
    total = None
    try:
        total = len(docs)
    except TypeError:
        pass
    try:
        it = iter(docs)
    except TypeError:
        raise TypeError(f"{name} must be an iterable of str, got {type(docs).__name__}") from None
    return it, total


@overload
def _check_count(value: Any, name: str, *, minimum: int, allow_none: Literal[False]) -> int: ...
@overload
def _check_count(value: Any, name: str, *, minimum: int, allow_none: bool) -> int | None: ...
def _check_count(value: Any, name: str, *, minimum: int, allow_none: bool) -> int | None:
    if value is None:
        if allow_none:
            return None
        raise TypeError(f"{name} must be an int, got None")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        what = "None or an int" if allow_none else "an int"
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} ({value!r})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_unique_bounds(min_unique_words: Any, max_unique_words: Any) -> tuple[int | None, int | None]:
    lo = _check_count(min_unique_words, "min_unique_words", minimum=0, allow_none=True)
    hi = _check_count(max_unique_words, "max_unique_words", minimum=0, allow_none=True)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"min_unique_words={lo} is larger than max_unique_words={hi}: "
                         "every document would be dropped")
    return lo, hi


def _doc_iter(docs: tuple[Any, int | None], show_progress: bool | None, desc: str) -> Any:
    it, total = docs
    # delay: the bar only appears once a pass takes more than 2 s (long iterables)
    return progress(it, show=show_progress, total=total, desc=desc, unit=" docs", delay=2.0)


def _tokens(tokenizer: Callable, doc: str, i: int, name: str = "docs") -> Any:
    """``tokenizer(doc)``, refusing a str (or bytes) returned for the list of tokens: iterated, it
    gave the document's characters as its words, in silence."""
    tokens = tokenizer(doc)
    if isinstance(tokens, (str, bytes)):
        raise TypeError(f"tokenizer returned a {type(tokens).__name__} for {name}[{i}] ({tokens[:40]!r}), "
                        "not a list of tokens: it would be read character by character")
    return tokens


def _not_str(i: int, doc: Any, name: str = "docs") -> TypeError:
    return TypeError(f"{name}[{i}] is {type(doc).__name__}, expected str")


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_unicode(i: int, doc: str, name: str = "docs") -> None:
    """A lone surrogate is not text: it cannot be written as UTF-8 (the model store's encoding)."""
    m = _SURROGATE.search(doc)
    if m is not None:
        raise ValueError(f"{name}[{i}] contains the lone surrogate {m.group()!r} at position {m.start()}, "
                         "which is not valid Unicode text (bytes decoded with errors='surrogateescape'?); "
                         "decode the input with its real encoding or errors='replace'")


# ----------------------------------------------------------------------------- counting
@dataclass
class _Counts:
    """Raw term counts of one pass: CSR buffers over a growing term dictionary."""

    terms: dict  # term -> id, in id order
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    kept: np.ndarray  # bool per input document
    n_input: int

    @property
    def n_kept(self) -> int:
        return int(self.indptr.size - 1)


def _count_pass(docs: tuple[Any, int | None], tokenizer: Callable, min_u: int | None, max_u: int | None,
                show_progress: bool | None, desc: str) -> _Counts:
    """One pass: tokenize each doc once, append its (term id, count) pairs to CSR buffers."""
    terms: dict = {}
    setdefault = terms.setdefault
    indptr = array("q", [0])
    indices = array("i")
    data = array("i")
    kept = array("b")
    nnz = 0
    lo = 0 if min_u is None else min_u
    hi = -1 if max_u is None else max_u
    i = -1
    for i, doc in enumerate(_doc_iter(docs, show_progress, desc)):
        if not isinstance(doc, str):
            raise _not_str(i, doc)
        check_unicode(i, doc)
        counts = Counter(_tokens(tokenizer, doc, i))
        n_unique = len(counts)
        if n_unique < lo or (hi >= 0 and n_unique > hi):
            kept.append(0)
            continue
        kept.append(1)
        indices.extend([setdefault(t, len(terms)) for t in counts])
        data.extend(counts.values())
        nnz += n_unique
        indptr.append(nnz)
        if len(terms) > _INT32_MAX:  # pragma: no cover - 2**31 distinct terms
            raise OverflowError("more than 2**31 distinct terms; use a stricter tokenizer")
    return _Counts(terms=terms,
                   indptr=np.frombuffer(indptr, dtype=np.int64) if len(indptr) else np.zeros(1, np.int64),
                   indices=np.frombuffer(indices, dtype=np.int32) if len(indices) else np.zeros(0, np.int32),
                   data=np.frombuffer(data, dtype=np.int32) if len(data) else np.zeros(0, np.int32),
                   kept=np.frombuffer(kept, dtype=np.int8).astype(bool) if len(kept) else np.zeros(0, bool),
                   n_input=i + 1)


def _select_terms(counts: _Counts, min_df: int, max_features: int | None):
    """Prune to terms with df >= min_df, keep the max_features most frequent (ties by word).

    Returns ``(words, df, old_to_new)``: words sorted by code point (the column order), their
    document frequencies, and an int64 map from term id to column (-1 = dropped).
    """
    n_terms = len(counts.terms)
    df = np.bincount(counts.indices, minlength=n_terms).astype(np.int64)
    cand = np.flatnonzero(df >= min_df)
    term_list = list(counts.terms)
    if cand.size == 0:
        return [], np.zeros(0, np.int64), np.full(n_terms, -1, np.int64)
    for j in cand[:1000]:  # cheap sanity check of user tokenizers
        if not isinstance(term_list[j], str):
            raise TypeError(f"tokenizer returned a token of type {type(term_list[j]).__name__} "
                            f"({term_list[j]!r}); tokens must be str")
    if max_features is not None and cand.size > max_features:
        # the max_features most frequent words; among words with the cut-off df, the
        # smallest words (code-point order) win, so the result never depends on doc order
        dfc = df[cand]
        thr = np.partition(dfc, cand.size - max_features)[cand.size - max_features]
        above = np.flatnonzero(dfc > thr)
        ties = np.flatnonzero(dfc == thr)
        need = max_features - above.size
        ties = np.array(sorted(ties.tolist(), key=lambda k: term_list[cand[k]])[:need], dtype=np.int64)
        cand = cand[np.concatenate([above, ties])]
    words = [term_list[j] for j in cand.tolist()]
    alpha = np.array(sorted(range(len(words)), key=words.__getitem__), dtype=np.int64)
    cand = cand[alpha]
    words = [words[k] for k in alpha.tolist()]
    old_to_new = np.full(n_terms, -1, np.int64)
    old_to_new[cand] = np.arange(cand.size)
    return words, df[cand], old_to_new


def _remap_columns(counts: _Counts, old_to_new: np.ndarray, n_features: int) -> sp.csr_matrix:
    """Counts matrix restricted to the vocabulary, columns renumbered (O(nnz) time and memory).

    ``old_to_new`` maps term ids to columns, ``-1`` = dropped. Temporaries are int32/bool, so
    the peak is about 2.5x the size of the input buffers.
    """
    nnz = counts.indices.size
    idx_dtype = np.int32 if max(n_features, nnz) <= _INT32_MAX else np.int64
    new: np.ndarray = old_to_new.astype(idx_dtype, copy=False)[counts.indices] if nnz else np.zeros(0, idx_dtype)
    mask = new >= 0
    if mask.all():
        indptr, indices, data = counts.indptr.astype(idx_dtype), new, counts.data
    else:
        cs = np.cumsum(mask, dtype=idx_dtype)
        indptr = np.zeros(counts.indptr.size, dtype=idx_dtype)
        ends = counts.indptr[1:]
        nonempty = ends > 0
        indptr[1:][nonempty] = cs[ends[nonempty] - 1]
        del cs
        indices, data = new[mask], counts.data[mask]
    del new, mask
    X = sp.csr_matrix((data, indices, indptr), shape=(counts.n_kept, n_features), copy=False)
    X.sort_indices()
    return X


def _row_blocks(indptr: np.ndarray, block_nnz: int | None = None):
    """Yield row ranges ``(r0, r1)`` holding about ``block_nnz`` stored entries each."""
    block_nnz = _BLOCK_NNZ if block_nnz is None else block_nnz
    n = indptr.size - 1
    r0 = 0
    while r0 < n:
        r1 = int(np.searchsorted(indptr, indptr[r0] + block_nnz, side="right")) - 1
        r1 = min(max(r1, r0 + 1), n)
        yield r0, r1
        r0 = r1


def _warn_dropped(n_dropped: int, n_input: int, min_u: int | None, max_u: int | None,
                  stacklevel: int = 3) -> None:
    if n_dropped:
        warnings.warn(f"{n_dropped} of {n_input} documents were dropped from fitting because "
                      f"their number of unique tokens is outside [min_unique_words={min_u}, "
                      f"max_unique_words={max_u}]", UserWarning, stacklevel=stacklevel)


# ----------------------------------------------------------------------------- vocabulary
@dataclass
class Vocabulary:
    """A per-language vocabulary: words in column order and their document frequencies.

    Attributes
    ----------
    words : list of str, length n_features
        The kept words, sorted by code point (this is the column order).
    df : ndarray of int64, shape (n_features,)
        Number of (kept) documents each word appears in.
    n_docs : int
        Number of documents the frequencies were counted on (after filtering).
    n_dropped : int
        Number of input documents dropped by the unique-word filter.
    """

    words: list
    df: np.ndarray
    n_docs: int
    n_dropped: int = 0
    index: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def __iter__(self):
        return iter(self.words)

    def __repr__(self) -> str:
        return f"Vocabulary({len(self.words)} words, n_docs={self.n_docs}, n_dropped={self.n_dropped})"


def _empty_vocab_error(min_df: int, n_docs: int, n_terms: int, n_input: int | None = None,
                       bounds: tuple[int | None, int | None] = (None, None)) -> ValueError:
    """Why no term reached ``min_df``: no input, every document filtered out, ``min_df`` above
    the number of documents, or too few (non-empty) documents. ``n_input`` counts the documents
    before the unique-word filter ``bounds``."""
    n_input = n_docs if n_input is None else n_input
    none = f"no term appears in at least min_df={min_df} documents"
    if n_input == 0:
        return ValueError(f"docs is empty: there are no documents to fit on; {none}")
    if n_docs == 0:
        return ValueError(f"all {n_input} documents were dropped by the unique-word filter "
                          f"[min_unique_words={bounds[0]}, max_unique_words={bounds[1]}], so there "
                          f"are no documents to fit on; {none}")
    if min_df > n_docs:
        kept = f" kept of {n_input}" if n_input != n_docs else ""
        return ValueError(f"min_df={min_df} is larger than the number of documents ({n_docs}{kept}): "
                          f"{none}; lower min_df")
    return ValueError(f"empty vocabulary: {none} ({n_docs} documents, {n_terms} distinct terms); "
                      "lower min_df or give more (non-empty) documents")


def _vocabulary_args(docs, tokenizer, min_df, max_features) -> tuple:
    """The checked arguments of :func:`build_vocabulary` and :func:`vocabulary_and_sequences`:
    ``(docs, tokenizer, min_df, max_features)``."""
    return (_check_docs(docs), check_tokenizer(tokenizer),
            _check_count(min_df, "min_df", minimum=1, allow_none=False),
            _check_count(max_features, "max_features", minimum=1, allow_none=True))


def build_vocabulary(docs: Iterable[str], *, tokenizer: Callable[[str], list[str]] | None = None,
                     min_df: int = 3, max_features: int | None = 200_000,
                     min_unique_words: int | None = None, max_unique_words: int | None = None,
                     show_progress: bool | None = None) -> Vocabulary:
    """Count document frequencies in one streaming pass and prune (Cr5 defaults).

    Parameters
    ----------
    docs : iterable of str, n_docs items
        Any iterable (a generator works; it is consumed once).
    tokenizer : callable str -> list of str, optional
        Defaults to :class:`Tokenizer` ``()``.
    min_df : int, default 3
        Drop words appearing in fewer than ``min_df`` documents.
    max_features : int or None, default 200_000
        Keep only the ``max_features`` words with the highest document frequency; ties are
        broken by the word (code-point order), so the result does not depend on doc order.
    min_unique_words, max_unique_words : int or None
        Drop documents with fewer / more unique tokens before counting (``None`` = no bound).
        Dropped documents are reported with a :class:`UserWarning`.
    show_progress : bool or None
        ``None`` follows :func:`linxling.set_show_progress`.

    Returns
    -------
    Vocabulary
        ``words`` sorted by code point, ``df`` of shape (n_features,).

    Raises
    ------
    ValueError
        If no word appears in at least ``min_df`` documents.
    """
    checked, tok, min_df, max_features = _vocabulary_args(docs, tokenizer, min_df, max_features)
    lo, hi = _check_unique_bounds(min_unique_words, max_unique_words)
    counts = _count_pass(checked, tok, lo, hi, show_progress, "counting words")
    n_dropped = counts.n_input - counts.n_kept
    _warn_dropped(n_dropped, counts.n_input, lo, hi)
    words, df, _ = _select_terms(counts, min_df, max_features)
    if not words:
        raise _empty_vocab_error(min_df, counts.n_kept, len(counts.terms), counts.n_input, (lo, hi))
    return Vocabulary(words=words, df=df, n_docs=counts.n_kept, n_dropped=n_dropped)


def vocabulary_and_sequences(docs: Iterable[str], *, tokenizer: Callable[[str], list[str]] | None = None,
                             min_df: int = 3, max_features: int | None = 200_000,
                             show_progress: bool | None = None) -> tuple[Vocabulary, np.ndarray, np.ndarray]:
    """:func:`build_vocabulary` (the same words, ``df`` and errors) and every document's tokens
    as column ids, each document tokenized once.

    For the models that train on token sequences (BiCVM, CompressTree), which tokenized each
    sentence twice, to count the words and then to encode it. With one pass the BiCVM
    benchmark's fit (30,102 Bible verse pairs) took 4.25-4.49 s against 4.72-5.08 s
    (benchmarks/README.md, "BiCVM").

    Returns
    -------
    (vocabulary, ids, ptr)
        ``ids`` (int64): document ``i``'s tokens in order are ``ids[ptr[i]:ptr[i + 1]]``, each the
        column of its word in ``vocabulary.words`` or ``-1`` for a word not kept (below
        ``min_df`` or beyond ``max_features``); nothing is dropped, so ``np.diff(ptr)`` counts the
        tokenizer's tokens.
    """
    checked, tok, min_df, max_features = _vocabulary_args(docs, tokenizer, min_df, max_features)
    terms: dict = {}
    setdefault = terms.setdefault
    seq = array("i")
    ptr = array("q", [0])
    unique = array("i")                  # each document's distinct term ids (document frequency)
    for i, doc in enumerate(_doc_iter(checked, show_progress, "counting words")):
        if not isinstance(doc, str):
            raise _not_str(i, doc)
        check_unicode(i, doc)
        ids = [setdefault(t, len(terms)) for t in _tokens(tok, doc, i)]
        seq.extend(ids)
        ptr.append(len(seq))
        unique.extend(set(ids))
        if len(terms) > _INT32_MAX:  # pragma: no cover - 2**31 distinct terms
            raise OverflowError("more than 2**31 distinct terms; use a stricter tokenizer")
    n_docs = len(ptr) - 1
    counts = _Counts(terms=terms, indptr=np.frombuffer(ptr, dtype=np.int64),
                     indices=np.frombuffer(unique, dtype=np.int32) if len(unique) else np.zeros(0, np.int32),
                     data=np.zeros(0, np.int32), kept=np.ones(n_docs, bool), n_input=n_docs)
    words, df, old_to_new = _select_terms(counts, min_df, max_features)
    if not words:
        raise _empty_vocab_error(min_df, n_docs, len(terms))
    ids_all = old_to_new[np.frombuffer(seq, dtype=np.int32)] if len(seq) else np.zeros(0, np.int64)
    return (Vocabulary(words=words, df=df, n_docs=n_docs, n_dropped=0), ids_all,
            np.frombuffer(ptr, dtype=np.int64).copy())


def filter_documents(docs: Iterable[str], min_unique_words: int | None = 50,
                     max_unique_words: int | None = 1000, tokenizer: Callable[[str], list[str]] | None = None,
                     *, show_progress: bool | None = None) -> tuple[np.ndarray, int]:
    """The Cr5 document filter: keep documents with a moderate number of unique tokens.

    Parameters
    ----------
    docs : iterable of str, n_docs items
        Consumed once.
    min_unique_words : int or None, default 50
        Documents with fewer unique tokens are dropped (``None``: no lower bound).
    max_unique_words : int or None, default 1000
        Documents with more unique tokens are dropped (``None``: no upper bound).
    tokenizer : callable str -> list of str, optional
        Defaults to :class:`Tokenizer` ``()``.
    show_progress : bool or None
        ``None`` follows :func:`linxling.set_show_progress`.

    Returns
    -------
    kept_indices : ndarray of int64, shape (n_kept,)
        Positions (in input order) of the documents that pass.
    n_dropped : int
        ``n_docs - n_kept``.
    """
    checked = _check_docs(docs)
    tok = check_tokenizer(tokenizer)
    lo, hi = _check_unique_bounds(min_unique_words, max_unique_words)
    lo_ = 0 if lo is None else lo
    kept = array("q")
    i = -1
    for i, doc in enumerate(_doc_iter(checked, show_progress, "filtering documents")):
        if not isinstance(doc, str):
            raise _not_str(i, doc)
        n = len(set(_tokens(tok, doc, i)))
        if n >= lo_ and (hi is None or n <= hi):
            kept.append(i)
    kept_idx = np.frombuffer(kept, dtype=np.int64).copy() if len(kept) else np.zeros(0, np.int64)
    return kept_idx, (i + 1) - kept_idx.size


# ----------------------------------------------------------------------------- TF-IDF
class TfidfVectorizer:
    """Streaming TF-IDF document-term matrices (Cr5 defaults: min_df=3, 200k features).

    Weighting of term ``t`` in document ``d`` (``n`` = number of fitted documents,
    ``df(t)`` = number of fitted documents containing ``t``)::

        tf(t, d)  = count(t, d)              or 1 + ln(count) if sublinear_tf
        idf(t)    = ln((1 + n) / (1 + df(t))) + 1   if smooth_idf
                  = ln(n / df(t)) + 1                otherwise
        x[d, t]   = tf * idf, then each row scaled to unit L2 norm if norm="l2"

    Parameters
    ----------
    tokenizer : callable str -> list of str, optional
        Defaults to :class:`Tokenizer` ``()``. A :class:`Tokenizer` instance is serialised by
        :meth:`get_state`; any other callable is stored as ``"custom"``.
    min_df : int, default 3
        Drop words appearing in fewer than ``min_df`` fitted documents.
    max_features : int or None, default 200_000
        Keep the ``max_features`` words of highest document frequency (ties: by word).
    norm : {"l2", None}, default "l2"
    sublinear_tf : bool, default False
    smooth_idf : bool, default True
    dtype : float32 or float64, default float64
        dtype of the output matrices.
    min_unique_words, max_unique_words : int or None, default None
        The Cr5 document filter (Cr5 uses 50 / 1000): at fit time, documents with fewer /
        more unique tokens are dropped from fitting. The count is stored in ``n_dropped_``
        and reported with a :class:`UserWarning`. :meth:`transform` never drops documents.
    show_progress : bool or None
        Progress bar during long passes; ``None`` follows :func:`linxling.set_show_progress`.

    Attributes
    ----------
    vocabulary_ : list of str, length n_features
        Words in column order (sorted by code point).
    idf_ : ndarray of float64, shape (n_features,)
        IDF computed from the (kept) training documents only.
    df_ : ndarray of int64, shape (n_features,)
    n_features_ : int
    n_docs_ : int
        Number of documents the IDF was fitted on (after filtering).
    n_dropped_ : int
        Number of training documents dropped by the unique-word filter.
    kept_mask_ : ndarray of bool, shape (n_input_docs,)
        Which training documents were kept (rows of :meth:`fit_transform` output).

    Examples
    --------
    >>> docs = ["the cat sat", "the dog sat", "the cat ran", "a dog ran"]
    >>> vec = TfidfVectorizer(min_df=2)
    >>> X = vec.fit_transform(docs)
    >>> X.shape, vec.vocabulary_
    ((4, 5), ['cat', 'dog', 'ran', 'sat', 'the'])
    """

    def __init__(self, tokenizer: Callable[[str], list[str]] | None = None, min_df: int = 3,
                 max_features: int | None = 200_000, norm: str | None = "l2",
                 sublinear_tf: bool = False, smooth_idf: bool = True, dtype: Any = np.float64,
                 min_unique_words: int | None = None, max_unique_words: int | None = None,
                 show_progress: bool | None = None) -> None:
        self.tokenizer = check_tokenizer(tokenizer)
        self.min_df = _check_count(min_df, "min_df", minimum=1, allow_none=False)
        self.max_features = _check_count(max_features, "max_features", minimum=1, allow_none=True)
        if norm not in ("l2", None):
            raise ValueError(f"norm must be 'l2' or None, got {norm!r}")
        self.norm = norm
        for name, val in (("sublinear_tf", sublinear_tf), ("smooth_idf", smooth_idf)):
            if not isinstance(val, (bool, np.bool_)):
                raise TypeError(f"{name} must be a bool, got {type(val).__name__}")
        self.sublinear_tf = bool(sublinear_tf)
        self.smooth_idf = bool(smooth_idf)
        self.dtype = check_float_dtype(dtype)
        self.min_unique_words, self.max_unique_words = _check_unique_bounds(min_unique_words,
                                                                            max_unique_words)
        if show_progress is not None and not isinstance(show_progress, bool):
            raise TypeError(f"show_progress must be None or a bool, got {type(show_progress).__name__}")
        self.show_progress = show_progress

    # -- fitting ---------------------------------------------------------------------------
    def _fit_counts(self, docs: Iterable[str]) -> sp.csr_matrix:
        checked = _check_docs(docs)
        counts = _count_pass(checked, self.tokenizer, self.min_unique_words, self.max_unique_words,
                             self.show_progress, "fitting TF-IDF")
        words, df, old_to_new = _select_terms(counts, self.min_df, self.max_features)
        if not words:
            raise _empty_vocab_error(self.min_df, counts.n_kept, len(counts.terms), counts.n_input,
                                     (self.min_unique_words, self.max_unique_words))
        n = counts.n_kept
        self.vocabulary_ = words
        self._index = {w: i for i, w in enumerate(words)}
        self.df_ = df
        self.n_docs_ = n
        self.n_features_ = len(words)
        self.n_dropped_ = counts.n_input - n
        self.kept_mask_ = counts.kept
        self.idf_ = self._idf(df, n)
        _warn_dropped(self.n_dropped_, counts.n_input, self.min_unique_words,
                      self.max_unique_words, stacklevel=find_stack_level())
        X = _remap_columns(counts, old_to_new, len(words))
        del counts
        return X

    def _idf(self, df: np.ndarray, n: int) -> np.ndarray:
        df = df.astype(np.float64)
        if self.smooth_idf:
            return np.log((1.0 + n) / (1.0 + df)) + 1.0
        return np.log(n / df) + 1.0

    def fit(self, docs: Iterable[str]) -> "TfidfVectorizer":
        """Learn the vocabulary and IDF from ``docs`` (one pass; a generator works).

        Parameters
        ----------
        docs : iterable of str, n_docs items

        Returns
        -------
        self

        Raises
        ------
        TypeError
            If an item is not a str (the message names its index).
        ValueError
            If no term appears in at least ``min_df`` (kept) documents.
        """
        self._fit_counts(docs)
        return self

    def fit_transform(self, docs: Iterable[str]) -> sp.csr_matrix:
        """Fit and return the TF-IDF matrix of the kept training documents, in ONE pass.

        Parameters
        ----------
        docs : iterable of str, n_docs items

        Returns
        -------
        X : scipy.sparse.csr_matrix, shape (n_kept, n_features), dtype ``self.dtype``
            One row per document kept by the unique-word filter (all documents when the
            filter is off); ``kept_mask_`` maps rows back to input positions. Equal to
            ``fit(docs).transform(docs)[kept_mask_]``.
        """
        return self._weight(self._fit_counts(docs))

    # -- transforming ----------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "vocabulary_"):
            raise RuntimeError("this TfidfVectorizer is not fitted yet; call fit(docs) or "
                               "fit_transform(docs) first (or build it with from_state)")

    def _weight(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """Integer counts -> TF-IDF, processed in row blocks so temporaries stay small."""
        data = X.data.astype(self.dtype)
        X = sp.csr_matrix((data, X.indices, X.indptr), shape=X.shape, copy=False)
        idf = self.idf_.astype(self.dtype, copy=False)
        indptr, indices = X.indptr, X.indices
        for r0, r1 in _row_blocks(indptr):
            a, b = int(indptr[r0]), int(indptr[r1])
            if a == b:
                continue
            seg = data[a:b]  # a view: edits go straight into X.data
            if self.sublinear_tf:
                np.log(seg, out=seg)
                seg += 1
            seg *= idf[indices[a:b]]
            if self.norm == "l2":
                lengths = np.diff(indptr[r0:r1 + 1])
                starts = indptr[r0:r1][lengths > 0] - a
                sums = np.zeros(r1 - r0, dtype=np.float64)
                sums[lengths > 0] = np.add.reduceat(np.square(seg, dtype=np.float64), starts)
                scale = np.zeros(r1 - r0, dtype=np.float64)
                np.divide(1.0, np.sqrt(sums), out=scale, where=sums > 0)
                seg *= np.repeat(scale.astype(self.dtype), lengths)
        return X

    def transform(self, docs: Iterable[str]) -> sp.csr_matrix:
        """TF-IDF matrix of ``docs`` with the fitted vocabulary and IDF (streams, one pass).

        Words outside the vocabulary are ignored; an empty document (or one with no
        vocabulary word) gives an all-zero row. No document is ever dropped.

        Parameters
        ----------
        docs : iterable of str, n_docs items

        Returns
        -------
        X : scipy.sparse.csr_matrix, shape (n_docs, n_features), dtype ``self.dtype``
        """
        return self._transform(docs, "docs")

    def _transform(self, docs: Iterable[str], name: str) -> sp.csr_matrix:
        """:meth:`transform`, its errors naming the input ``name`` (a model passes the name of
        its own argument, e.g. ``texts``, not the vectoriser's ``docs``)."""
        self._check_fitted()
        checked = _check_docs(docs, name)
        get = self._index.get
        tok = self.tokenizer
        indptr = array("q", [0])
        indices = array("i")
        data = array("i")
        nnz = 0
        n = 0
        for i, doc in enumerate(_doc_iter(checked, self.show_progress, "TF-IDF transform")):
            if not isinstance(doc, str):
                raise _not_str(i, doc, name)
            counts = Counter(_tokens(tok, doc, i, name))
            indices.extend([get(t, -1) for t in counts])  # -1: out of vocabulary, removed below
            data.extend(counts.values())
            nnz += len(counts)
            indptr.append(nnz)
            n += 1
        buffers = _Counts(terms={}, indptr=np.frombuffer(indptr, dtype=np.int64),
                         indices=np.frombuffer(indices, dtype=np.int32) if nnz else np.zeros(0, np.int32),
                         data=np.frombuffer(data, dtype=np.int32) if nnz else np.zeros(0, np.int32),
                         kept=np.ones(n, bool), n_input=n)
        identity = np.arange(self.n_features_ + 1, dtype=np.int64)
        identity[-1] = -1  # index -1 (out of vocabulary) maps to -1: dropped
        X = _remap_columns(buffers, identity, self.n_features_)
        del buffers, indptr, indices, data
        return self._weight(X)

    def get_feature_names_out(self) -> np.ndarray:
        """The vocabulary as an object array of str, shape (n_features,)."""
        self._check_fitted()
        return np.array(self.vocabulary_, dtype=object)

    # -- serialisation ---------------------------------------------------------------------
    def get_state(self) -> tuple[dict, dict[str, np.ndarray]]:
        """Everything needed to rebuild the fitted vectorizer.

        Returns
        -------
        params : dict
            JSON-serialisable hyper-parameters and scalars. ``params["tokenizer"]`` is
            ``"default"`` (a :class:`Tokenizer`, whose options are stored as
            ``"lowercase"`` / ``"bigram_scripts"``) or ``"custom"`` (any other callable,
            which cannot be saved: pass it again to :meth:`from_state`).
        arrays : dict of str -> ndarray
            ``"vocabulary"`` (numpy unicode array, shape (n_features,)), ``"idf"`` (float64,
            shape (n_features,)), ``"df"`` (int64, shape (n_features,)).
        """
        self._check_fitted()
        tok = self.tokenizer
        params: dict[str, Any] = {
            "format": _STATE_FORMAT,
            "tokenizer": "default" if type(tok) is Tokenizer else "custom",
            "min_df": self.min_df,
            "max_features": self.max_features,
            "norm": self.norm,
            "sublinear_tf": self.sublinear_tf,
            "smooth_idf": self.smooth_idf,
            "dtype": self.dtype.name,
            "min_unique_words": self.min_unique_words,
            "max_unique_words": self.max_unique_words,
            "n_docs": int(self.n_docs_),
            "n_dropped": int(self.n_dropped_),
        }
        if type(tok) is Tokenizer:
            params.update(tok.get_params())
        arrays = {
            "vocabulary": np.array(self.vocabulary_, dtype=str),
            "idf": np.asarray(self.idf_, dtype=np.float64).copy(),
            "df": np.asarray(self.df_, dtype=np.int64).copy(),
        }
        return params, arrays

    @classmethod
    def from_state(cls, params: dict, arrays: dict, *,
                   tokenizer: Callable[[str], list[str]] | None = None) -> "TfidfVectorizer":
        """Rebuild a fitted vectorizer from :meth:`get_state` output.

        Parameters
        ----------
        params : dict
        arrays : dict of str -> ndarray
            Needs ``"vocabulary"`` and ``"idf"`` (``"df"`` optional). ``vocabulary`` may be a
            unicode, object or bytes (UTF-8) array, e.g. as read back from HDF5.
        tokenizer : callable, optional
            Required when the state was saved with a custom tokenizer; overrides the stored
            default tokenizer otherwise.

        Raises
        ------
        ValueError
            If the state is malformed, or it needs a custom tokenizer and none is given.
        """
        if not isinstance(params, dict):
            raise TypeError(f"params must be a dict, got {type(params).__name__}")
        if not isinstance(arrays, dict):
            raise TypeError(f"arrays must be a dict, got {type(arrays).__name__}")
        fmt = params.get("format", _STATE_FORMAT)
        if fmt != _STATE_FORMAT:
            raise ValueError(f"params['format'] is {fmt!r}; this version reads {_STATE_FORMAT!r}")
        for key in ("vocabulary", "idf"):
            if key not in arrays:
                raise ValueError(f"arrays is missing {key!r} (has {sorted(arrays)})")
        kind = params.get("tokenizer", "default")
        if kind == "custom":
            if tokenizer is None:
                raise ValueError("this vectorizer was fitted with a custom tokenizer, which cannot be "
                                 "saved; pass the same callable: TfidfVectorizer.from_state(params, "
                                 "arrays, tokenizer=my_tokenizer)")
        elif kind != "default":
            raise ValueError(f"params['tokenizer'] must be 'default' or 'custom', got {kind!r}")
        if tokenizer is None:
            tokenizer = Tokenizer(lowercase=bool(params.get("lowercase", True)),
                                  bigram_scripts=bool(params.get("bigram_scripts", True)))
        vec = cls(tokenizer=tokenizer, min_df=params.get("min_df", 3),
                  max_features=params.get("max_features", 200_000), norm=params.get("norm", "l2"),
                  sublinear_tf=params.get("sublinear_tf", False),
                  smooth_idf=params.get("smooth_idf", True), dtype=params.get("dtype", "float64"),
                  min_unique_words=params.get("min_unique_words"),
                  max_unique_words=params.get("max_unique_words"))
        voc = np.asarray(arrays["vocabulary"])
        if voc.ndim != 1:
            raise ValueError(f"arrays['vocabulary'] must be 1-D, got shape {voc.shape}")
        words = [w.decode("utf-8") if isinstance(w, bytes) else str(w) for w in voc.tolist()]
        idf = np.asarray(arrays["idf"], dtype=np.float64)
        if idf.shape != (len(words),):
            raise ValueError(f"arrays['idf'] has shape {idf.shape} but the vocabulary has "
                             f"{len(words)} words")
        if len(set(words)) != len(words):
            raise ValueError("arrays['vocabulary'] contains duplicate words")
        if idf.size and not (np.all(np.isfinite(idf)) and idf.min() > 0):   # transform gave NaN rows
            bad = int(np.sum(~(np.isfinite(idf) & (idf > 0))))
            raise ValueError(f"arrays['idf'] holds {bad} weight(s) that are not finite and positive "
                             "(a fitted idf is at least 1)")
        vec.vocabulary_ = words
        vec._index = {w: i for i, w in enumerate(words)}
        vec.idf_ = idf.copy()
        df = (np.asarray(arrays["df"], dtype=np.int64).copy() if "df" in arrays
              else np.zeros(len(words), np.int64))
        if df.shape != (len(words),):
            raise ValueError(f"arrays['df'] has shape {df.shape} but the vocabulary has "
                             f"{len(words)} words")
        vec.df_ = df
        vec.n_features_ = len(words)
        vec.n_docs_ = int(params.get("n_docs", 0))
        vec.n_dropped_ = int(params.get("n_dropped", 0))
        return vec

    def __repr__(self) -> str:
        fitted = f", n_features_={self.n_features_}" if hasattr(self, "n_features_") else ""
        return (f"TfidfVectorizer(min_df={self.min_df}, max_features={self.max_features}, "
                f"norm={self.norm!r}, sublinear_tf={self.sublinear_tf}, dtype={self.dtype.name}"
                f"{fitted})")
