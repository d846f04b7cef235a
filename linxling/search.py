"""Crosslingual search: the top-k documents of a collection for queries in another language.

:class:`Index` holds one language's document vectors (rows normalised, float32 by default) and
answers :meth:`Index.search` exactly ("flat", as FAISS's ``IndexFlatIP`` on unit vectors), in
blocks of queries and of candidates, so that no n_queries x n_candidates matrix is formed and
collections of millions of documents fit: memory is the index itself plus one score block.

Similarities:

- ``"cosine"``: the inner product of unit vectors.
- ``"csls"`` (Conneau et al. 2018): ``2 cos(x, y) − r_q(x) − r_c(y)``, where ``r_q(x)`` is the
  mean cosine of query x to its ``knn`` nearest documents and ``r_c(y)`` the mean cosine of
  document y to its ``knn`` nearest vectors of the *query language* (a reference set: the
  queries themselves, or a sample of the query language given once with
  :meth:`Index.set_reference`). It penalises "hubs", documents near everything, which matters
  across languages.

>>> import numpy as np
>>> from linxling.search import Index
>>> rng = np.random.default_rng(0)
>>> docs = rng.standard_normal((1000, 16))
>>> index = Index(docs)
>>> scores, ids = index.search(docs[:3] + 0.01 * rng.standard_normal((3, 16)), k=2)
>>> ids[:, 0].tolist()
[0, 1, 2]

The command line builds an index file from a text collection and queries it
(``linxling index``, ``linxling search``; docs/cli.md).
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from linxling._progress import progress
from linxling._threads import numba_serialised
from linxling._validation import check_int, check_language, check_texts, refuse_sparse, refuse_texts_as_vectors
from linxling._warnings import find_stack_level
from linxling.io import register_model

__all__ = ["Index", "search"]

#: bytes of one score block (queries x candidates) the search may hold
BLOCK_BYTES = 256 * 2 ** 20


def _unit_rows(X: Any, name: str, dtype) -> np.ndarray:
    refuse_sparse(X, name)
    refuse_texts_as_vectors(X, name, " (Index.from_texts and add_texts take texts and a model)")
    try:
        A = np.asarray(X)
    except ValueError as exc:                       # ragged rows
        raise ValueError(f"{name} must be a 2-D array of numbers (n, d): {exc}") from None
    if A.dtype.kind not in "fiubO":
        raise TypeError(f"{name} must hold real numbers, got dtype {A.dtype}")
    with np.errstate(over="ignore"):                 # said below: values beyond float32
        try:
            X = np.array(A, dtype=dtype, order="C", copy=True)
        except (TypeError, ValueError) as exc:        # objects that are not numbers
            raise TypeError(f"{name} must be a 2-D array of numbers (n, d), got {type(X).__name__} "
                            f"({exc})") from None
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (n, d), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        if A.dtype.kind == "f" and np.all(np.isfinite(A)):     # finite, beyond the dtype's range
            raise ValueError(f"{name} has values too large for {X.dtype}: give dtype=float64 or "
                             "scale the vectors (only their direction counts)")
        raise ValueError(f"{name} contains NaN or infinite values")
    from linxling.evaluate._retrieval import _normalize_rows
    # unit rows, a zero row stays zero (cosine 0 to everything); safe where the sum of squares
    # over- or underflows
    return _normalize_rows(X, np)


def _merge_topk(best_s: np.ndarray, best_i: np.ndarray, S: np.ndarray, offset: int, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """The running top-k (b, <= k) of each row merged with the score block S (b, n) of
    candidates ``offset .. offset + n``: score descending, ties to the lower candidate index."""
    kk = min(k, S.shape[1])
    if kk < S.shape[1]:
        part = np.argpartition(-S, kk - 1, axis=1)[:, :kk]
        # argpartition picks any of the scores that tie with the kk-th: take the lowest rows
        kth = np.take_along_axis(S, part, axis=1).min(axis=1, keepdims=True)
        above = S > kth
        need = kk - np.count_nonzero(above, axis=1)
        at = S == kth
        rows = np.flatnonzero(np.count_nonzero(at, axis=1) > need)   # rows with more ties than room
        if rows.size:
            keep = above[rows] | (at[rows] & (np.cumsum(at[rows], axis=1, dtype=np.int32)
                                              <= need[rows, None]))
            part[rows] = np.nonzero(keep)[1].reshape(rows.size, kk)
    else:
        part = np.broadcast_to(np.arange(S.shape[1]), S.shape)
    cand_s = np.concatenate([best_s, np.take_along_axis(S, part, axis=1)], axis=1)
    cand_i = np.concatenate([best_i, part + offset], axis=1)
    order = np.lexsort((cand_i, -cand_s), axis=1)[:, :k]
    return np.take_along_axis(cand_s, order, axis=1), np.take_along_axis(cand_i, order, axis=1)


@register_model("SearchIndex")
class Index:
    """An exact (flat) index of one language's document vectors.

    Parameters
    ----------
    vectors : array (n_documents, d)
        Document embeddings, e.g. ``model.transform(texts, language)``. Rows are normalised
        (a zero row, a document without any known word, stays zero and scores 0).
    ids : sequence, optional
        One label per document, returned by :meth:`search_ids` (default: the row numbers). A
        saved index gives int labels back as ints when all of them fit in int64, and str labels
        as strs; labels of any other type, ints and strs mixed, and ints beyond int64 (a UUID's
        ``.int``) are saved as their ``str()``.
    texts : sequence of str, optional
        The documents themselves, kept for display (the command line prints them).
    language : str, optional
        The documents' language (recorded; queries are embedded in their own language).
    dtype : float32 or float64, default float32
        Of the stored vectors and the scores (float32 halves memory and the GEMMs' time).

    Attributes
    ----------
    vectors_ : ndarray (n_documents, d), unit rows
    reference_radii_ : ndarray (n_documents,) or None
        ``r_c`` of CSLS from :meth:`set_reference`; None until then.
    reference_ : ndarray (n_reference, d), unit rows, or None
        The reference vectors of :meth:`set_reference` (saved with the index), against which
        :meth:`add` takes the new documents' radii.

    Documents are added with :meth:`add` / :meth:`add_texts` and removed with :meth:`remove`.
    """

    def __init__(self, vectors: Any, ids: Sequence | None = None, *, texts: Sequence[str] | None = None,
                 language: str | None = None, dtype: Any = np.float32) -> None:
        if dtype is None:                           # np.dtype(None) is float64: not a silent choice
            raise ValueError("dtype must be float32 or float64, got None")
        try:
            dtype = np.dtype(dtype)
        except (TypeError, ValueError):             # NumPy's "data type 'x' not understood" named nothing
            raise ValueError(f"dtype must be float32 or float64, got {dtype!r}") from None
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64, got {dtype}")
        self.vectors_ = _unit_rows(vectors, "vectors", dtype)
        check_language(language)
        n = self.vectors_.shape[0]
        if texts is not None:
            texts = check_texts(texts, "texts")       # None or a single string: refused, not str()'d
        if ids is not None:
            ids = _check_ids(ids)
        for name, seq in (("ids", ids), ("texts", texts)):
            if seq is not None and len(seq) != n:
                raise ValueError(f"{name} has {len(seq)} items but vectors has {n} rows")
        self.ids = ids
        self.texts = texts
        self.language = language
        self.reference_radii_: np.ndarray | None = None
        self.reference_knn_: int | None = None
        self.reference_: np.ndarray | None = None
        self.model_path: str | None = None
        self._spare: np.ndarray | None = None      # see add: vectors_ is its first rows
        self._spare_radii: np.ndarray | None = None   # and reference_radii_ this one's

    # ------------------------------------------------------------------ building
    @classmethod
    def from_texts(cls, model: Any, texts: Sequence[str], language: str, *, ids: Sequence | None = None,
                   keep_texts: bool = True, batch_size: int = 10_000, dtype: Any = np.float32,
                   show_progress: bool | None = None) -> Index:
        """Embed ``texts`` of ``language`` with a fitted linxling model, ``batch_size`` at a time."""
        from linxling.cli import embed_texts
        if not callable(getattr(model, "transform", None)):
            raise TypeError(f"model must be a fitted linxling model (with a transform method), got "
                            f"{type(model).__name__}: from_texts(model, texts, language)")
        check_language(language, known=getattr(model, "languages_", None) or ())   # first: says "swapped?"
        texts = check_texts(texts, "texts")        # a single str is refused, not split into characters
        if not texts:
            raise ValueError("texts is empty: there is nothing to index")
        batch_size = check_int(batch_size, "batch_size")
        starts = range(0, len(texts), batch_size)
        parts = [np.asarray(embed_texts(model, texts[s:s + batch_size], language), dtype=dtype)
                 for s in progress(starts, show=show_progress, desc="embedding", unit="batch")]
        V = np.concatenate(parts)
        n_zero = int(np.count_nonzero(~np.any(V != 0, axis=1)))
        if n_zero:
            warnings.warn(f"Index.from_texts: {n_zero} of {len(texts)} texts have no word the model knows "
                          "(empty or out of its vocabulary): their rows are zero and score 0 against every "
                          "query", UserWarning, stacklevel=find_stack_level())
        return cls(V, ids=ids, texts=texts if keep_texts else None, language=language, dtype=dtype)

    def __len__(self) -> int:
        return int(self.vectors_.shape[0])

    def __repr__(self) -> str:
        parts = [f"n_documents={len(self)}", f"dim={self.dim}", f"dtype={self.vectors_.dtype.name}"]
        if self.language is not None:
            parts.append(f"language={self.language!r}")
        if self.reference_radii_ is not None:
            parts.append(f"csls_reference=knn {self.reference_knn_}")
        if self.model_path is not None:
            parts.append(f"model_path={self.model_path!r}")
        return f"Index({', '.join(parts)})"

    def __getstate__(self) -> dict[str, Any]:
        # add's spare room is a cache: pickled (joblib, copy.deepcopy) it was written out beside
        # the rows, which pickle copies apart from it, so a grown index took 2.5 times its size.
        # copy.copy takes this state too: without the spare block and with lists of its own, the
        # copy's add no longer writes into the original's rows, ids and texts
        state = self.__dict__.copy()
        state["_spare"] = state["_spare_radii"] = None
        for name in ("ids", "texts"):
            if state.get(name) is not None:
                state[name] = list(state[name])
        return state

    # ------------------------------------------------------------------ adding and removing
    @numba_serialised
    def add(self, vectors: Any, ids: Sequence | None = None, *, texts: Sequence[str] | None = None
            ) -> Index:
        """Append documents (their rows normalised as at construction); returns the index.

        An index built with ``ids`` needs ``ids`` for the new documents, none already in it; one
        built without takes none (its new documents are the next row numbers). The same holds
        for ``texts``. With a CSLS reference (:meth:`set_reference`), the new documents' radii
        are taken against the same reference vectors, so searches give what an index built from
        all the documents at once gives. Every check runs before anything changes: a refused
        call leaves the index as it was.

        The rows (and the CSLS radii) are kept with spare room (half the index again), so that
        adding documents a few at a time does not copy the whole index per call; the new labels
        are checked against the index's in one pass over its ids. Not safe while another thread
        searches the same index.
        """
        V = _unit_rows(vectors, "vectors", self.vectors_.dtype)
        self._check_dim(V, "vectors")
        m = V.shape[0]
        if (ids is None) != (self.ids is None):
            raise ValueError("ids: the index has ids, so the new documents need theirs (one label each)"
                             if ids is None else
                             "ids: the index was built without ids (its documents are row numbers), so "
                             "new documents cannot have labels; build it with ids to label documents")
        if ids is not None:
            ids = _check_ids(ids, existing=self.ids)
        if texts is not None:
            texts = check_texts(texts, "texts")
        if (texts is None) != (self.texts is None):
            raise ValueError("texts: the index keeps its documents' texts, so the new documents need theirs"
                             if texts is None else
                             "texts: the index was built without texts, so it cannot keep the new ones")
        for name, seq in (("ids", ids), ("texts", texts)):
            if seq is not None and len(seq) != m:
                raise ValueError(f"{name} has {len(seq)} items but vectors has {m} rows")
        radii = None
        if self.reference_radii_ is not None:
            if self.reference_ is None:
                raise ValueError("this index has CSLS reference radii but not the reference vectors they "
                                 "were taken from (a file saved by a linxling without Index.add), so the "
                                 "new documents' radii cannot be taken: call set_reference again, "
                                 "then add")
            from linxling.evaluate._retrieval import _csls_radii_numpy
            radii = _csls_radii_numpy(V, self.reference_, int(self.reference_knn_ or 10),
                                      min(m, self._radii_block(self.reference_.shape[0])))[0]
        # every check passed: now change the index (the lists are the index's own copies)
        self._spare, self.vectors_ = _appended(self._spare, self.vectors_, V)
        if radii is not None and self.reference_radii_ is not None:
            self._spare_radii, self.reference_radii_ = _appended(
                self._spare_radii, self.reference_radii_, np.asarray(radii, dtype=self.vectors_.dtype))
        if ids is not None and self.ids is not None:
            self.ids.extend(ids)
        if texts is not None and self.texts is not None:
            self.texts.extend(texts)
        return self

    def add_texts(self, model: Any, texts: Sequence[str], *, ids: Sequence | None = None,
                  batch_size: int = 10_000, show_progress: bool | None = None) -> Index:
        """Embed ``texts`` of the index's language with a fitted linxling model (the one the index
        was built with) and :meth:`add` them, with the texts when the index keeps texts."""
        if self.language is None:
            raise ValueError("the index has no language: embed the texts yourself and call add(vectors)")
        new = Index.from_texts(model, texts, self.language, ids=ids, keep_texts=self.texts is not None,
                               batch_size=batch_size, dtype=self.vectors_.dtype,
                               show_progress=show_progress)
        if new.dim != self.dim:
            raise ValueError(f"model embeds in dimension {new.dim}, the index holds dimension {self.dim}: "
                             "add texts with the model the index was built with")
        # from_texts normalised the rows already; add normalises unit rows to themselves
        return self.add(new.vectors_, ids=new.ids, texts=new.texts)

    def remove(self, ids: Sequence) -> Index:
        """Remove documents: by their labels when the index has ``ids``, else by row number (the
        rows after a removed one then move up). An unknown label or row, or one given twice, is
        an error and nothing is removed; so is removing every document. Returns the index."""
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise TypeError(f"ids must be a sequence of {'labels' if self.ids is not None else 'row numbers'}, "
                            f"got {type(ids).__name__}")
        wanted = list(ids)
        n = len(self)
        if self.ids is not None:
            row_of = {str(label): j for j, label in enumerate(self.ids)}
            rows = []
            for i, label in enumerate(wanted):
                if str(label) not in row_of:
                    raise ValueError(f"ids[{i}] = {label!r} is not in the index")
                rows.append(row_of[str(label)])
        else:
            rows = []
            for i, r in enumerate(wanted):
                if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)) or not 0 <= r < n:
                    raise ValueError(f"ids[{i}] = {r!r} is not a row of the index (0 .. {n - 1}); an index "
                                     "without ids removes documents by row number")
                rows.append(int(r))
        seen: dict[int, int] = {}
        for i, r in enumerate(rows):
            at = seen.setdefault(r, i)
            if at != i:
                raise ValueError(f"ids[{i}] = {wanted[i]!r} repeats ids[{at}]")
        if len(seen) == n:
            raise ValueError("remove would leave the index empty; build a new index instead")
        keep = np.ones(n, dtype=bool)
        keep[rows] = False
        self.vectors_ = np.ascontiguousarray(self.vectors_[keep])
        self._spare = self._spare_radii = None
        if self.reference_radii_ is not None:
            self.reference_radii_ = self.reference_radii_[keep]
        if self.ids is not None:
            self.ids = [label for label, k in zip(self.ids, keep, strict=True) if k]
        if self.texts is not None:
            self.texts = [t for t, k in zip(self.texts, keep, strict=True) if k]
        return self

    @property
    def dim(self) -> int:
        return int(self.vectors_.shape[1])

    @numba_serialised
    def set_reference(self, vectors: Any, knn: int = 10, block_size: int | None = None) -> Index:
        """Compute CSLS's ``r_c`` of every document against ``vectors`` of the query language (a
        representative sample, e.g. a few thousand of its documents); searches with
        ``similarity="csls"`` then use it instead of the queries. One blocked pass over the index."""
        from linxling.evaluate._retrieval import _csls_radii_numpy
        R = _unit_rows(vectors, "vectors", self.vectors_.dtype)
        self._check_dim(R, "reference vectors")
        knn = check_int(knn, "knn")
        if knn > R.shape[0]:               # the index may hold fewer documents yet (add)
            raise ValueError(f"knn={knn} exceeds the number of reference vectors ({R.shape[0]})")
        bs = check_int(block_size, "block_size") if block_size is not None else self._radii_block(R.shape[0])
        r_docs, _ = _csls_radii_numpy(self.vectors_, R, knn, bs)
        self.reference_radii_ = np.asarray(r_docs, dtype=self.vectors_.dtype)
        self.reference_knn_ = knn
        self.reference_ = R                  # kept: add takes new documents' radii against it
        return self

    # ------------------------------------------------------------------ search
    def _check_dim(self, Q: np.ndarray, name: str) -> None:
        if Q.shape[1] != self.dim:
            raise ValueError(f"{name} have dimension {Q.shape[1]}, the index {self.dim}")

    def _check_knn(self, knn: int, n_other: int, hint: str = "") -> int:
        knn = check_int(knn, "knn")
        if knn > min(n_other, len(self)):
            raise ValueError(f"knn={knn} exceeds the number of vectors on one side ({min(n_other, len(self))})"
                             + hint)
        return knn

    def _radii_block(self, n_other: int) -> int:
        """Documents per score block of the CSLS radii of the documents against ``n_other``
        vectors of the query language (:func:`_csls_radii_numpy` blocks the rows of its first
        argument, here the index): up to 4,096 documents, ``BLOCK_BYTES`` of scores and their
        copy. The blocks were once sized for the other side, so 100 queries took the
        documents 100 at a time: 200 blocks of 100 x 100 scores, each with its own kernel launch
        and sort, for 20,000 documents (10 s against a 30 ms GEMM; 2-core AMD EPYC, load 5)."""
        per_row = 2 * n_other * self.vectors_.dtype.itemsize
        return int(max(1, min(len(self), 4096, BLOCK_BYTES // max(per_row, 1))))

    @numba_serialised
    def search(self, queries: Any, k: int = 10, *, similarity: str = "cosine", knn: int | None = None,
               block_size: int | None = None, show_progress: bool | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best documents of each query.

        Parameters
        ----------
        queries : array (n_queries, d)
            Query embeddings (in the query language, same model and dimension as the index).
        k : int
            Documents per query (at most the index size).
        similarity : {"cosine", "csls"}
        knn : int, optional
            CSLS neighbourhood (ignored for cosine). ``r_c`` comes from :meth:`set_reference` when
            it was called, else from the queries themselves (as in :func:`linxling.evaluate.retrieval`).
            Default: the reference's ``knn`` (``reference_knn_``) when there is one, else 10; a
            ``knn`` other than the reference's is an error (the two radii of a CSLS score are
            taken over the same neighbourhood size).
        block_size : int, optional
            Queries per block (default up to 4,096). Candidates are taken in blocks too, so that
            one score block holds at most about ``BLOCK_BYTES`` (256 MiB) whatever the index size.
        show_progress : bool, optional
            Progress bar over blocks; ``None`` follows :func:`linxling.set_show_progress`.

        Returns
        -------
        scores : ndarray (n_queries, k), best first
        indices : ndarray of int64 (n_queries, k), rows of the index (ties: lower row first)
        """
        if similarity not in ("cosine", "csls"):
            raise ValueError(f"similarity must be 'cosine' or 'csls', got {similarity!r}")
        Q = _unit_rows(queries, "queries", self.vectors_.dtype)
        self._check_dim(Q, "queries")
        k = check_int(k, "k")
        if k > len(self):
            raise ValueError(f"k={k} exceeds the number of indexed documents ({len(self)})")
        C, n_q, n_c = self.vectors_, Q.shape[0], len(self)
        dt = C.dtype.type
        r_c = None
        if knn is None:
            knn = self.reference_knn_ if self.reference_radii_ is not None and self.reference_knn_ else 10
        if similarity == "csls":
            if self.reference_radii_ is not None:
                if self.reference_knn_ is not None and knn != self.reference_knn_:
                    raise ValueError(f"knn={knn}, but the index's CSLS reference radii were taken over "
                                     f"knn={self.reference_knn_} neighbours: search with "
                                     f"knn={self.reference_knn_} (the default), or set_reference again")
                knn = self._check_knn(knn, n_c)
                r_c = self.reference_radii_
            else:
                from linxling.evaluate._retrieval import _csls_radii_numpy
                knn = self._check_knn(knn, n_q, (
                    ": without a reference (set_reference; `linxling index --reference`) CSLS takes each "
                    "document's hubness radius from the queries, so search with at least knn queries, "
                    "a smaller knn, or an index that has a reference") if n_q < knn else "")
                r_c = _csls_radii_numpy(C, Q, knn, self._radii_block(n_q))[0]
        qb = check_int(block_size, "block_size") if block_size is not None else min(n_q, 4096)
        cb = int(min(n_c, max(k, knn, BLOCK_BYTES // (2 * qb * C.dtype.itemsize))))
        scores = np.empty((n_q, k), dtype=C.dtype)
        indices = np.empty((n_q, k), dtype=np.int64)
        blocks = [(q0, c0) for q0 in range(0, n_q, qb) for c0 in range(0, n_c, cb)]
        best_s: Any = None
        best_i: Any = None
        near: Any = None
        for q0, c0 in progress(blocks, show=show_progress, desc="search", unit="block", delay=1.0):
            Qb = Q[q0:q0 + qb]
            if c0 == 0:
                best_s = np.full((Qb.shape[0], 0), -np.inf, dtype=C.dtype)
                best_i = np.zeros((Qb.shape[0], 0), dtype=np.int64)
                near = np.full((Qb.shape[0], 0), -np.inf, dtype=C.dtype)   # CSLS: knn largest cosines
            S = Qb @ C[c0:c0 + cb].T
            if r_c is not None:
                part = np.partition(S, S.shape[1] - min(knn, S.shape[1]), axis=1)[:, S.shape[1] - min(knn, S.shape[1]):]
                near = np.concatenate([near, part], axis=1)
                if near.shape[1] > knn:
                    near = np.partition(near, near.shape[1] - knn, axis=1)[:, near.shape[1] - knn:]
                S *= dt(2)
                S -= r_c[None, c0:c0 + cb]
            best_s, best_i = _merge_topk(best_s, best_i, S, c0, k)
            if c0 + cb >= n_c:                                           # the query block is done
                if r_c is not None:
                    best_s = best_s - np.mean(np.sort(near, axis=1)[:, ::-1], axis=1)[:, None]
                scores[q0:q0 + qb] = best_s
                indices[q0:q0 + qb] = best_i
        return scores, indices

    def search_ids(self, queries: Any, k: int = 10, **kwargs: Any) -> tuple[np.ndarray, list[list[Any]]]:
        """:meth:`search` with the documents' ``ids`` (row numbers when the index has none)."""
        scores, idx = self.search(queries, k, **kwargs)
        ids = self.ids if self.ids is not None else None
        return scores, [[ids[j] if ids is not None else int(j) for j in row] for row in idx]

    # ------------------------------------------------------------------ store
    def save(self, path: str | os.PathLike) -> None:
        """Write the index (atomically, checksummed) with :func:`linxling.io.save`."""
        from linxling.io import save
        save(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Index:
        """Load an index saved with :meth:`save`.

        Raises
        ------
        linxling.io.ModelFormatError
            If the file is not a model file, is corrupt, or holds a model rather than an index
            (checked from its header, before any of its data is read).
        """
        from linxling.io import ModelFormatError, load, read_info, registered_models
        info = read_info(path)
        registered = registered_models().get(info["model"])
        if registered is None or not issubclass(registered, cls):
            raise ModelFormatError(f"{os.fspath(path)} holds a {info['model']} model, not a search index: "
                                   "load it with linxling.load(path); linxling index builds an index file")
        return load(path)

    def _get_state(self) -> tuple[dict, dict]:
        params: dict[str, Any] = {"language": self.language, "model_path": self.model_path,
                                  "dtype": self.vectors_.dtype.name, "reference_knn": self.reference_knn_,
                                  "has_ids": self.ids is not None, "has_texts": self.texts is not None}
        arrays: dict[str, Any] = {"vectors": self.vectors_}
        # object arrays of str: NumPy's fixed-width str dtype drops trailing NULs, the store refuses them
        if self.ids is not None:
            int_ids = _int_labels(self.ids)
            if int_ids is not None:          # ints come back as ints (a database key, a line number)
                params["ids_kind"] = "int"
                arrays["ids"] = int_ids
            else:
                arrays["ids"] = np.array([str(i) for i in self.ids], dtype=object)
        if self.texts is not None:
            arrays["texts"] = np.array(self.texts, dtype=object)
        if self.reference_radii_ is not None:
            arrays["reference_radii"] = self.reference_radii_
            if self.reference_ is not None:
                arrays["reference"] = self.reference_
        return params, arrays

    @classmethod
    def _from_state(cls, params: dict, arrays: dict) -> Index:
        def strings(a):
            return [x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in np.asarray(a).tolist()]
        obj = cls.__new__(cls)
        # a crafted or inconsistent file is a ValueError here (the store names the file), not an
        # index that fails at its first search or answers NaN scores and rows it does not have
        V = np.asarray(arrays["vectors"])
        dtype = np.dtype(params.get("dtype", "float32"))
        if dtype not in (np.float32, np.float64) or V.dtype.kind != "f":
            raise ValueError(f"arrays/vectors has dtype {V.dtype} (params dtype {dtype}); an index holds "
                             "float32 or float64 vectors")
        if V.ndim != 2 or V.shape[0] == 0 or V.shape[1] == 0:
            raise ValueError(f"arrays/vectors has shape {V.shape}; an index holds a non-empty 2-D array")
        if not np.all(np.isfinite(V)):
            raise ValueError("arrays/vectors holds NaN or infinite values")
        obj.vectors_ = np.ascontiguousarray(V, dtype=dtype)
        n = V.shape[0]
        if params.get("has_ids"):
            kind = params.get("ids_kind", "str")
            if kind not in ("int", "str"):
                raise ValueError(f"unknown ids_kind {kind!r}")
            ids = arrays["ids"]
            if kind == "int" and np.asarray(ids).dtype.kind not in "iu":
                raise ValueError(f"arrays/ids has dtype {np.asarray(ids).dtype}, but the index saved int ids")
            obj.ids = np.asarray(ids).tolist() if kind == "int" else strings(ids)
        else:
            obj.ids = None
        obj.texts = strings(arrays["texts"]) if params.get("has_texts") else None
        for name, seq in (("ids", obj.ids), ("texts", obj.texts)):
            if seq is not None and (np.ndim(arrays[name]) != 1 or len(seq) != n):
                raise ValueError(f"arrays/{name} has shape {np.shape(arrays[name])}, but arrays/vectors "
                                 f"has {n} rows")
        obj.language = params.get("language")
        obj.model_path = params.get("model_path")
        if obj.language is not None and not isinstance(obj.language, str):
            raise ValueError(f"the index's language is {obj.language!r}, not a str")
        if obj.model_path is not None and not isinstance(obj.model_path, str):
            raise ValueError(f"the index's model_path is {obj.model_path!r}, not a str")
        obj.reference_knn_ = params.get("reference_knn")
        obj.reference_radii_ = None
        obj.reference_ = None
        obj._spare = obj._spare_radii = None
        if "reference_radii" in arrays:
            r = np.asarray(arrays["reference_radii"])
            if r.shape != (n,) or r.dtype.kind != "f" or not np.all(np.isfinite(r)):
                raise ValueError(f"arrays/reference_radii has shape {r.shape} and dtype {r.dtype}; the "
                                 f"index needs {n} finite radii, one per row of arrays/vectors")
            knn = obj.reference_knn_
            if isinstance(knn, bool) or not isinstance(knn, int) or knn < 1:
                raise ValueError(f"the index's reference_knn is {knn!r}, not a positive int")
            obj.reference_radii_ = np.asarray(r, dtype=obj.vectors_.dtype)
            if "reference" in arrays:              # files before Index.add kept the radii only
                R = np.asarray(arrays["reference"])
                if (R.ndim != 2 or R.shape[1] != V.shape[1] or R.shape[0] < knn or R.dtype.kind != "f"
                        or not np.all(np.isfinite(R))):
                    raise ValueError(f"arrays/reference has shape {R.shape} and dtype {R.dtype}; the index "
                                     f"needs at least reference_knn = {knn} finite rows of dimension "
                                     f"{V.shape[1]}")
                obj.reference_ = np.ascontiguousarray(R, dtype=obj.vectors_.dtype)
        return obj


def _appended(spare: np.ndarray | None, current: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(spare, view)``: ``current`` with the rows of ``new`` after it, as the first rows of
    ``spare`` (a block with room for more, reused while ``current`` is its own first rows, else
    made half as large again as the result)."""
    n, m = current.shape[0], new.shape[0]
    if spare is None or spare.shape[0] < n + m or not np.shares_memory(spare, current):
        spare = np.empty((n + m + (n + m) // 2, *current.shape[1:]), dtype=current.dtype)
        spare[:n] = current
    spare[n:n + m] = new
    return spare, spare[:n + m]


def _check_ids(ids: Any, existing: Sequence | None = None) -> list:
    """``ids`` as a list of labels, none repeated (labels are stored as their ``str``, so compared
    so) and none among ``existing``; a TypeError / ValueError naming ``ids`` otherwise."""
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"ids must be a sequence of labels, one per document, got {type(ids).__name__}")
    ids = list(ids)
    first: dict[str, int] = {}
    for j, label in enumerate(ids):
        at = first.setdefault(str(label), j)
        if at != j:
            raise ValueError(f"ids[{j}] = {label!r} repeats ids[{at}]: each document needs its own "
                             "label (search_ids could not tell them apart)")
    if existing is not None:
        for j, label in enumerate(existing):
            if str(label) in first:
                at = first[str(label)]
                raise ValueError(f"ids[{at}] = {ids[at]!r} is already in the index (row {j}): each "
                                 "document needs its own label; remove the old one first to replace it")
    return ids


def _int_labels(ids: Sequence) -> np.ndarray | None:
    """``ids`` as an int64 array when every label is an int (not a bool) within int64, else None."""
    if not all(isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) for i in ids):
        return None
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    if not all(lo <= int(i) <= hi for i in ids):
        return None
    return np.array([int(i) for i in ids], dtype=np.int64)


def search(queries: Any, candidates: Any, k: int = 10, *, similarity: str = "cosine", knn: int = 10,
           block_size: int | None = None, dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows of ``candidates`` for each row of ``queries``: ``(scores, indices)``,
    best first (cosine or CSLS; see :class:`Index`, which this builds once)."""
    if not hasattr(candidates, "tocsr") and np.ndim(candidates) != 2:
        hint = ("; were candidates and k swapped? search(queries, candidates, k)" if np.ndim(k) == 2 else
                "; a count where the candidates go? search(queries, candidates, k)"
                if isinstance(candidates, int | np.integer) and not isinstance(candidates, bool) else "")
        raise ValueError(f"candidates must be a 2-D array (n, d), got {type(candidates).__name__} of "
                         f"{np.ndim(candidates)} dimension(s){hint}")
    return Index(candidates, dtype=dtype).search(queries, k, similarity=similarity, knn=knn,
                                                 block_size=block_size)
